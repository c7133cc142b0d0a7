"""Agent roles: who makes a model call, with what answer budget and which model.

A role is a name that model calls carry as metadata (``tmas_role``; over HTTP the
``X-TMAS-Role`` header), so per-role models, budgets, temperatures and usage accounting work
for any role. A node's role (its spec's ``role:``, else its node type's own) is the one name
that gives it its model, its answer budget, its usage row and its prompt namespace.

The five roles of TMAS are built in; a plugin declares more with :func:`register_role` (for
every run of the process), a topology spec with its ``roles:`` block (for the runs of that
spec only)::

    roles:
      critic: {max_tokens: 200, model: verifier, description: reviews a candidate}

``model`` names the role whose model serves this one unless ``--role-model critic=...``
gives it its own (default: the main model). The roles a run knows are a :class:`RoleBook`:
the registered ones plus its spec's, kept with the run's plan, never in a process-wide table.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

Role = str

BUILTIN_ROLES: tuple[str, ...] = ("solver", "verifier", "summary", "experience", "guideline")
ROLES = BUILTIN_ROLES  # the roles of the TMAS loop itself


@dataclass(frozen=True)
class RoleSpec:
    """One declared role: its default answer budget, the role whose model it borrows (None:
    the main model) and what it does."""

    name: str
    max_tokens: int
    model: str | None = None
    description: str = ""
    builtin: bool = False


_ROLES: dict[str, RoleSpec] = {}


def register_role(
    name: str, *, max_tokens: int, model: str | None = None, description: str = ""
) -> RoleSpec:
    """Declare role ``name``; declaring it again replaces the declaration, but a built-in role
    cannot be redeclared.

    Example:
        >>> register_role("doc_critic", max_tokens=128, model="verifier").model
        'verifier'
        >>> register_role("solver", max_tokens=8)
        Traceback (most recent call last):
        ...
        ValueError: 'solver' is a built-in role; set its budget with solver_max_tokens
    """
    checked_declaration(name, max_tokens, model, _ROLES)
    spec = RoleSpec(name, max_tokens, model, description)
    _ROLES[name] = spec
    return spec


def checked_declaration(
    name: str, max_tokens: int, model: str | None, known: Iterable[str]
) -> None:
    """ValueError when a role declaration cannot work: a bad name or budget, a built-in name, or a
    model borrowed from a role not in ``known``.

    Example:
        >>> checked_declaration("critic", 10, "nobody", ["solver"])
        Traceback (most recent call last):
        ...
        ValueError: role 'critic' borrows the model of unknown role 'nobody'
    """
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"a role name is letters, digits, '_' or '-', not {name!r}")
    if name in _ROLES and _ROLES[name].builtin:
        raise ValueError(f"{name!r} is a built-in role; set its budget with {name}_max_tokens")
    if not 1 <= max_tokens <= 262_144:
        raise ValueError(f"role {name!r}: max_tokens must be 1..262144, not {max_tokens}")
    if model is not None and model != name and model not in set(known):
        raise ValueError(f"role {name!r} borrows the model of unknown role {model!r}")


class UnknownRoleError(ValueError, KeyError):
    """A role the run does not know (a ValueError for callers, a KeyError for mappings)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class RoleBook(Mapping[str, RoleSpec]):
    """The roles one run knows, by name: those registered in the process (built-in and plugin
    roles) and those its spec declares. Immutable; two specs declaring the same name
    differently get two books.

    Example:
        >>> book = RoleBook.registered().declaring({"doc_scout": {"max_tokens": 40,
        ...                                          "model": "verifier"}})
        >>> book["doc_scout"].max_tokens, book.model_key("doc_scout"), "doc_scout" in _ROLES
        (40, 'verifier', False)
    """

    def __init__(self, specs: Mapping[str, RoleSpec]) -> None:
        self._specs = dict(specs)

    @classmethod
    def registered(cls) -> RoleBook:
        """The roles registered in this process now (built-in ones first)."""
        return cls(_ROLES)

    def declaring(self, declarations: Mapping[str, Mapping[str, object]]) -> RoleBook:
        """This book with a spec's ``roles:`` block added (name -> max_tokens, model,
        description); ValueError for a declaration that cannot work."""
        specs = dict(self._specs)
        for name, settings in declarations.items():
            max_tokens = int(settings["max_tokens"])  # type: ignore[call-overload]
            model = settings.get("model")
            checked_declaration(name, max_tokens, model, [*specs, *declarations])  # type: ignore[arg-type]
            specs[name] = RoleSpec(
                name,
                max_tokens,
                model,
                str(settings.get("description") or ""),  # type: ignore[arg-type]
            )
        return RoleBook(specs)

    def __getitem__(self, name: str) -> RoleSpec:
        if name not in self._specs:
            raise UnknownRoleError(f"unknown role {name!r}; known: {', '.join(self._specs)}")
        return self._specs[name]

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def model_key(self, role: str) -> str:
        """The role whose model serves ``role`` (itself unless it borrows one).

        Example:
            >>> RoleBook.registered().model_key("proof_judge")
            'verifier'
        """
        spec = self._specs.get(role)
        return spec.model if spec is not None and spec.model else role

    def unknown(self, names: Iterable[str]) -> list[str]:
        """The names among ``names`` that this book does not know.

        Example:
            >>> RoleBook.registered().unknown(["verifier", "judge_of_nothing"])
            ['judge_of_nothing']
        """
        return [name for name in names if name not in self._specs]

    def declarations(self) -> dict[str, dict[str, object]]:
        """Every role as plain data (what a run's plan saves).

        Example:
            >>> RoleBook.registered().declarations()["verifier"]["max_tokens"]
            256
        """
        return {
            name: {"max_tokens": s.max_tokens, "model": s.model, "description": s.description}
            for name, s in self._specs.items()
        }

    @classmethod
    def from_declarations(cls, data: Mapping[str, Mapping[str, object]]) -> RoleBook:
        """A book saved with :meth:`declarations` (built-in names keep their built-in flag).

        Example:
            >>> saved = RoleBook.registered().declarations()
            >>> RoleBook.from_declarations(saved)["solver"].builtin
            True
        """
        return cls(
            {
                name: RoleSpec(
                    name,
                    int(d["max_tokens"]),  # type: ignore[call-overload]
                    d.get("model"),  # type: ignore[arg-type]
                    str(d.get("description") or ""),
                    builtin=name in BUILTIN_ROLES,
                )
                for name, d in data.items()
            }
        )


for _name, _budget, _text in (
    ("solver", 512, "writes a candidate solution"),
    ("verifier", 256, "checks one candidate"),
    ("summary", 128, "condenses a candidate's checks"),
    ("experience", 160, "extracts reliable facts and pitfalls"),
    ("guideline", 64, "names the strategy a candidate used"),
):
    _ROLES[_name] = RoleSpec(_name, _budget, None, _text, builtin=True)

# Not a role of the loop: grades a finished proof run against a reference (proof mode).
register_role(
    "proof_judge",
    max_tokens=512,
    model="verifier",
    description="grades a proof against a reference proof with a rubric",
)
