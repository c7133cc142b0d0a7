"""Agent roles: who makes a model call, with what answer budget and which model.

A role is a name that model calls carry as metadata (``tmas_role``; over HTTP the
``X-TMAS-Role`` header), so per-role models, budgets, temperatures and usage accounting work
for any role. The five roles of TMAS are built in; a plugin declares more with
:func:`register_role`, a topology spec with its ``roles:`` block::

    roles:
      critic: {max_tokens: 200, model: verifier, description: reviews a candidate}

``model`` names the role whose model serves this one unless ``--role-model critic=...``
gives it its own (default: the main model).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"a role name is letters, digits, '_' or '-', not {name!r}")
    if name in _ROLES and _ROLES[name].builtin:
        raise ValueError(f"{name!r} is a built-in role; set its budget with {name}_max_tokens")
    if not 1 <= max_tokens <= 262_144:
        raise ValueError(f"role {name!r}: max_tokens must be 1..262144, not {max_tokens}")
    if model is not None and model != name and model not in _ROLES:
        raise ValueError(f"role {name!r} borrows the model of unknown role {model!r}")
    spec = RoleSpec(name, max_tokens, model, description)
    _ROLES[name] = spec
    return spec


def declare_roles(declarations: Mapping[str, Mapping[str, object]]) -> None:
    """Declare each role of a spec's ``roles:`` block (name -> settings).

    Example:
        >>> declare_roles({"doc_judge": {"max_tokens": 64}})
        >>> role_spec("doc_judge").max_tokens
        64
    """
    for name, settings in declarations.items():
        register_role(name, **settings)  # type: ignore[arg-type]


def role_spec(name: str) -> RoleSpec:
    """The declaration of role ``name``; ValueError naming the known roles otherwise.

    Example:
        >>> role_spec("verifier").max_tokens
        256
    """
    if name not in _ROLES:
        raise ValueError(f"unknown role {name!r}; known: {', '.join(declared_roles())}")
    return _ROLES[name]


def declared_roles() -> list[str]:
    """Every role known now: the built-in ones first, then those declared since.

    Example:
        >>> declared_roles()[:2]
        ['solver', 'verifier']
    """
    return list(_ROLES)


def model_key(role: str) -> str:
    """The role whose model serves ``role`` (itself unless it borrows one).

    Example:
        >>> _ = register_role("doc_reviewer", max_tokens=64, model="verifier")
        >>> model_key("verifier"), model_key("doc_reviewer")
        ('verifier', 'verifier')
    """
    spec = _ROLES.get(role)
    return spec.model if spec is not None and spec.model else role


def unknown_roles(names: Iterable[str]) -> list[str]:
    """The names among ``names`` that no role declares.

    Example:
        >>> unknown_roles(["verifier", "judge_of_nothing"])
        ['judge_of_nothing']
    """
    return [name for name in names if name not in _ROLES]


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
