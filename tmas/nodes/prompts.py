"""Prompt templates as data: one ``str.format`` template file per prompt, overridable per run.

Each prompt has a key ``group/name``; the built-in ones are the files
``tmas/nodes/agents/templates/<group>/<name>.txt`` (the solver's user prompt is named after the plan
mode: ``solver/initial``, ``solver/exploit``, ...). A plugin ships templates for its own roles
with :func:`register_prompts`; a spec's ``prompts:`` block or ``--prompts FILE`` overrides any
of them for one run (the overrides are saved with the run)::

    prompts:
      solver/system: "You are a careful mathematician. End with \\\\boxed{answer}."
      critic/user: "Problem:\\n{problem}\\n\\nSolution:\\n{solution}\\n\\nCriticise it."
"""

from __future__ import annotations

import functools
import hashlib
import json
import string
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from tmas.registration import declare, owner_of, registry


def _builtin_dir() -> Path:
    return Path(str(resources.files("tmas.nodes.agents") / "templates"))


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8").removesuffix("\n")


@functools.cache
def _template_files() -> dict[str, str]:
    """The package's template files by key, read once per process (a server compiling graphs
    in its event loop then reads no file)."""
    return {
        f"{path.parent.name}/{path.stem}": _read(path)
        for path in sorted(_builtin_dir().glob("*/*.txt"))
    }


def builtin_templates() -> dict[str, str]:
    """Every registered template by key: the package's own and those plugins registered
    (:func:`tmas.registration.registry`'s ``prompts``).

    Example:
        >>> "solver/exploit" in builtin_templates() and "verifier/system" in builtin_templates()
        True
    """
    return dict(registry().prompts.items())


def register_prompts(group: str, templates: Mapping[str, str] | Path | str) -> None:
    """Register ``templates`` (name -> text, or a folder of ``<name>.txt`` files) as the
    prompts ``group/<name>`` (for a plugin's own roles; a template of the package or another
    plugin is overridden per run, in a spec's ``prompts:`` block or with ``--prompts``).

    Example:
        >>> register_prompts("doc_critic", {"system": "You criticise.", "user": "{solution}"})
        >>> PromptSet().render("doc_critic/user", solution="x = 3")
        'x = 3'
    """
    if isinstance(templates, (str, Path)):
        folder = Path(templates)
        if not folder.is_dir():
            raise ValueError(f"no prompt folder {folder}")
        templates = {path.stem: _read(path) for path in sorted(folder.glob("*.txt"))}
    owner = owner_of(None)
    for name, text in templates.items():
        declare("prompts", f"{group}/{name}", str(text), owner)


def template_key(role: str, group: str | None, name: str, templates: Mapping[str, str]) -> str:
    """The template a node of ``role`` (its type's prompts in ``group``) renders as ``name``:
    its role's own where the run has it, else its type's group's.

    Example:
        >>> template_key("critic", "verifier", "user", {"verifier/user": "x"})
        'verifier/user'
        >>> template_key("critic", "verifier", "user", {"critic/user": "y"})
        'critic/user'
    """
    own = f"{role}/{name}"
    return own if group is None or own in templates else f"{group}/{name}"


def template_fields(template: str) -> set[str]:
    """The ``{field}`` names a template uses.

    Example:
        >>> sorted(template_fields("Problem: {problem}, {{literal}} {answer}"))
        ['answer', 'problem']
    """
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"malformed template: {exc}") from None
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in parsed if name}


def override_problems(overrides: Mapping[str, str], known: Mapping[str, str]) -> list[str]:
    """What is wrong with prompt ``overrides``: a malformed key or template, or an override of
    a known prompt that uses a field the prompt is never given.

    Example:
        >>> override_problems({"verifier/user": "{problem} {score}"}, builtin_templates())
        ['prompts.verifier/user uses {score}, which it is not given (it has: problem, solution)']
    """
    problems = []
    for key, text in overrides.items():
        group, _, name = key.partition("/")
        if not group or not name:
            problems.append(f"prompts.{key}: a prompt key is 'group/name', e.g. solver/system")
            continue
        try:
            used = template_fields(str(text))
        except ValueError as exc:
            problems.append(f"prompts.{key}: {exc}")
            continue
        if key in known:
            given = template_fields(known[key])
            if extra := sorted(used - given):
                names = ", ".join(sorted(given)) or "no fields"
                problems.append(
                    f"prompts.{key} uses {{{'}, {'.join(extra)}}}, which it is not given "
                    f"(it has: {names})"
                )
    return problems


class PromptSet:
    """The templates of one run: the built-in ones with ``overrides`` applied.

    Example:
        >>> prompts = PromptSet({"solver/system": "Be brief."})
        >>> prompts.template("solver/system"), prompts.render("verifier/user", problem="1+1?",
        ...     solution="2").splitlines()[0]
        ('Be brief.', 'Problem:')
    """

    def __init__(
        self, overrides: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None
    ) -> None:
        self.overrides = dict(overrides or {})
        known = builtin_templates() if base is None else dict(base)
        self._templates = {**known, **self.overrides}

    @classmethod
    def exact(cls, templates: Mapping[str, str]) -> PromptSet:
        """The templates given and no others (a run's plan holds every template it renders).

        Example:
            >>> PromptSet.exact({"solver/system": "S"}).has("verifier/user")
            False
        """
        return cls(base=templates)

    def has(self, key: str) -> bool:
        """Whether a template ``key`` exists."""
        return key in self._templates

    def key_for(self, role: str, group: str | None, name: str) -> str:
        """The template a node of ``role`` (prompts of its type in ``group``) renders as
        ``name`` in this set (:func:`template_key`).

        Example:
            >>> PromptSet().key_for("critic", "verifier", "user")
            'verifier/user'
        """
        return template_key(role, group, name, self._templates)

    def template(self, key: str) -> str:
        """The template ``key``; ValueError naming the group's known prompts otherwise."""
        if key not in self._templates:
            group = key.partition("/")[0]
            known = sorted(k for k in self._templates if k.startswith(f"{group}/"))
            hint = f"; {group} has: {', '.join(known)}" if known else ""
            raise ValueError(
                f"no prompt {key!r}{hint} (add it to the spec's prompts: block or register it)"
            )
        return self._templates[key]

    def render(self, key: str, **fields: object) -> str:
        """Template ``key`` filled with ``fields``; ValueError naming a field it lacks."""
        try:
            return self.template(key).format(**fields)
        except KeyError as exc:
            raise ValueError(
                f"prompt {key!r} uses {{{exc.args[0]}}}, which it is not given "
                f"(given: {', '.join(sorted(fields))})"
            ) from None

    def digests(self) -> dict[str, str]:
        """A short digest of every template by key (what an evaluation's identity records).

        Example:
            >>> len(PromptSet().digests()["solver/system"])
            16
        """
        return {
            key: hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
            for key, text in sorted(self._templates.items())
        }


def prompt_value(value: object) -> str:
    """How a task's field reads in a prompt: text as it is, a list as a ``- `` list (of its
    items' ``text`` where they have one), nothing as ``(none)``, anything else as JSON.

    Example:
        >>> prompt_value(["x = 3", {"text": "y = 4"}]), prompt_value(None), prompt_value(2)
        ('- x = 3\\n- y = 4', '(none)', '2')
    """
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [item.get("text", item) if isinstance(item, dict) else item for item in value]
        return bullet_list([t if isinstance(t, str) else json.dumps(t) for t in texts])
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def prompt_fields(task: Mapping[str, object]) -> dict[str, str]:
    """Every field ``task`` carries, as a prompt reads it (:func:`prompt_value`): a built-in
    agent fills its templates with these, so a prompt override can use any field its task
    carries.

    Example:
        >>> prompt_fields({"problem": "1+1?", "critique": "check the sum"})["critique"]
        'check the sum'
    """
    return {str(key): prompt_value(value) for key, value in task.items()}


def bullet_list(items: list[str], empty: str = "(none yet)") -> str:
    """Format items as a '- ' list.

    Example:
        >>> bullet_list(["a", "b"])
        '- a\\n- b'
    """
    return "\n".join(f"- {item}" for item in items) if items else empty


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, keeping its end (where the answer is).

    Example:
        >>> clip("abcdefgh", 6)
        '...fgh'
    """
    return text if len(text) <= limit else "..." + text[-max(limit - 3, 1) :]


for _key, _text in _template_files().items():  # the package's own templates
    declare("prompts", _key, _text, __name__)
