"""Agent roles: who makes a model call, with what answer budget and which model.

A role is a name that model calls carry as metadata (``tmas_role``; over HTTP the
``X-TMAS-Role`` header), so per-role models, budgets, temperatures and usage accounting work
for any role. A node's role (its spec's ``role:``, else its node type's own) is the one name
that gives it its model, its answer budget, its usage row and its prompt namespace.

The five roles of TMAS (and the proof judge) are built in; a plugin declares more with
:func:`register_role` (in the registry, :func:`tmas.registration.registry`), a topology spec
with its ``roles:`` block (for the runs of that spec only)::

    roles:
      critic: {max_tokens: 200, model_of: verifier, description: reviews a candidate}

``model_of`` names the role whose model serves this one unless ``--role-model critic=...``
gives it its own (default: the main model); ``model:`` is its older spelling. The model id a
role's calls use is a different thing, set with ``--role-model`` (``roles.<role>.model``).
The roles a run knows are a :class:`RoleBook`: the registry's plus its spec's, kept with the
run's plan; a role's budget, model and temperature in a run are its binding
(:mod:`tmas.llm.bindings`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from tmas.registration import declare, owner_of, registry

Role = str

BUILTIN_ROLES: tuple[str, ...] = ("solver", "verifier", "summary", "experience", "guideline")
ROLES = BUILTIN_ROLES  # the roles of the TMAS loop itself


@dataclass(frozen=True)
class RoleSpec:
    """One declared role: its default answer budget, the role whose model it borrows
    (``model_of``; None: the main model) and what it does."""

    name: str
    max_tokens: int
    model_of: str | None = None
    description: str = ""
    builtin: bool = False


def register_role(
    name: str,
    *,
    max_tokens: int,
    model_of: str | None = None,
    description: str = "",
    model: str | None = None,
) -> RoleSpec:
    """Declare role ``name`` (in :func:`tmas.registration.registry`), which borrows the model of
    role ``model_of`` (``model`` is its older spelling); the module that declared it may
    declare it again, no other may, and a built-in role cannot be redeclared.

    Example:
        >>> register_role("doc_critic", max_tokens=128, model_of="verifier").model_of
        'verifier'
        >>> register_role("solver", max_tokens=8)
        Traceback (most recent call last):
        ...
        ValueError: 'solver' is a built-in role; set its budget with solver_max_tokens
    """
    model_of = model_of or model
    roles = registry().roles
    checked_declaration(name, max_tokens, model_of, roles)
    spec = RoleSpec(name, max_tokens, model_of, description)
    return declare("roles", name, spec, owner_of(spec))


def checked_declaration(
    name: str, max_tokens: int, model_of: str | None, known: Iterable[str]
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
    if name in BUILTIN_ROLE_NAMES:
        raise ValueError(f"{name!r} is a built-in role; set its budget with {name}_max_tokens")
    if not 1 <= max_tokens <= 262_144:
        raise ValueError(f"role {name!r}: max_tokens must be 1..262144, not {max_tokens}")
    if model_of is not None and model_of != name and model_of not in set(known):
        raise ValueError(f"role {name!r} borrows the model of unknown role {model_of!r}")


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
        ...                                          "model_of": "verifier"}})
        >>> book["doc_scout"].max_tokens, book.model_key("doc_scout")
        (40, 'verifier')
        >>> "doc_scout" in registry().roles
        False
    """

    def __init__(self, specs: Mapping[str, RoleSpec]) -> None:
        self._specs = dict(specs)

    @classmethod
    def builtin(cls) -> RoleBook:
        """The roles the package declares (:data:`BUILTIN_ROLE_SPECS`), no plugin's.

        Example:
            >>> list(RoleBook.builtin())[-1]
            'proof_judge'
        """
        return cls({spec.name: spec for spec in BUILTIN_ROLE_SPECS})

    @classmethod
    def registered(cls) -> RoleBook:
        """The roles registered in this process now (built-in ones first)."""
        return cls(dict(registry().roles.items()))

    def declaring(self, declarations: Mapping[str, Mapping[str, object]]) -> RoleBook:
        """This book with a spec's ``roles:`` block added (name -> max_tokens, model_of or its
        older spelling model, description); ValueError for a declaration that cannot work."""
        specs = dict(self._specs)
        for name, settings in declarations.items():
            max_tokens = int(settings["max_tokens"])  # type: ignore[call-overload]
            model_of = _model_of(settings)
            checked_declaration(name, max_tokens, model_of, [*specs, *declarations])
            specs[name] = RoleSpec(
                name,
                max_tokens,
                model_of,
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
        return spec.model_of if spec is not None and spec.model_of else role

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
            name: {"max_tokens": s.max_tokens, "model_of": s.model_of,
                   "description": s.description}
            for name, s in self._specs.items()
        }  # fmt: skip

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
                    _model_of(d),
                    str(d.get("description") or ""),
                    builtin=name in BUILTIN_ROLES,
                )
                for name, d in data.items()
            }
        )


def _model_of(declaration: Mapping[str, object]) -> str | None:
    """The role whose model a declaration borrows: ``model_of``, or ``model`` (its older
    spelling, in specs and plans saved before)."""
    found = declaration.get("model_of") or declaration.get("model")
    return str(found) if found else None


BUILTIN_ROLE_SPECS: tuple[RoleSpec, ...] = (
    RoleSpec("solver", 512, None, "writes a candidate solution", builtin=True),
    RoleSpec("verifier", 256, None, "checks one candidate", builtin=True),
    RoleSpec("summary", 128, None, "condenses a candidate's checks", builtin=True),
    RoleSpec("experience", 160, None, "extracts reliable facts and pitfalls", builtin=True),
    RoleSpec("guideline", 64, None, "names the strategy a candidate used", builtin=True),
    # not a role of the loop: grades a finished proof run against a reference (proof mode)
    RoleSpec("proof_judge", 512, "verifier", "grades a proof against a reference proof with a "
             "rubric"),
)  # fmt: skip
"""The roles the package itself declares, with their default answer budgets."""

BUILTIN_ROLE_NAMES = frozenset(spec.name for spec in BUILTIN_ROLE_SPECS)
for _spec in BUILTIN_ROLE_SPECS:
    declare("roles", _spec.name, _spec, __name__)
