"""The reference page of the built-in pieces, generated from the registry: every built-in node
type with its role, parameters, what it reads and writes and the templates it renders with the
fields each uses; every task builder with the fields its tasks carry; the planners, selection
rules, stop conditions, similarities, roles and channels.

``docs/reference.md`` is this page (a test keeps it so); write it again with::

    python -m tmas.graphs.reference > docs/reference.md
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from tmas.graphs.contract_checks import ANY_PROMPT, rendered_key
from tmas.graphs.spec import NodeSpec
from tmas.nodes.prompts import template_fields
from tmas.registration import Entry, registry

HEADER = """# Reference: the built-in pieces

Generated from the registry (`python -m tmas.graphs.reference > docs/reference.md`; a test
keeps this page equal to what the code declares). A node's templates are shown as its
default role renders them (a spec's `role:` renders `ROLE/<name>` first where the run has it);
"uses" lists the fields a template names, "computes" those the node adds beyond its input.
"""


def _first_sentence(item: Any) -> str:
    """The first sentence of the docstring of ``item`` (a function), of the function a
    registered entry wraps, or of the class a node factory returns.

    Example:
        >>> _first_sentence(_first_sentence)
        'The first sentence of the docstring of ``item`` (a function), of the function a ...'
    """
    if hasattr(item, "factory"):  # a node type: its factory, or the class it makes
        try:
            made = typing.get_type_hints(item.factory).get("return")
        except NameError:  # a return type named for type checkers only (loaded with the engine)
            made = None
        candidates = [item.factory, made if inspect.isclass(made) and made is not Any else None]
    elif hasattr(item, "plan") or hasattr(item, "build"):  # a planner or a task builder
        candidates = [getattr(item, "plan", None) or item.build]
    else:
        candidates = [item]
    for candidate in candidates:
        doc = candidate.__doc__ if candidate is not None else None
        if doc:
            text = " ".join(doc.split())
            return text.split(". ")[0].rstrip(".") + "."
    return ""


def _parameters(factory: Any) -> str:
    """A node factory's spec parameters with their defaults, as ``name=default``."""
    shown = []
    for parameter in list(inspect.signature(factory).parameters.values())[1:]:
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            shown.append(f"**{parameter.name}")
        elif parameter.default is inspect.Parameter.empty:
            shown.append(parameter.name)
        else:
            shown.append(f"{parameter.name}={parameter.default!r}")
    return ", ".join(shown) or "none"


def _node_section(entry: Entry[Any], templates: dict[str, str]) -> list[str]:
    """The lines of one node type: what it is, its parameters, reads, writes and templates."""
    node_type = entry.item
    lines = [f"### `{entry.name}`", ""]
    if description := _first_sentence(node_type):
        lines += [description, ""]
    facts = [
        f"role: `{node_type.role}`" if node_type.role else "role: none (calls no model)",
        f"parameters: {_parameters(node_type.factory)}",
        f"reads: {', '.join(node_type.reads) or 'its task'}",
        f"writes: {', '.join(node_type.writes) or 'nothing'}",
    ]
    lines += [f"- {fact}" for fact in facts]
    node = NodeSpec(id=entry.name, type=entry.name)
    rows = []
    for name, computed in node_type.prompts.items():
        keys = (
            [k for k in templates if k.partition("/")[0] == node_type.prompt_group
             and k.partition("/")[2] not in node_type.prompts]
            if name == ANY_PROMPT
            else [rendered_key(node, node_type, name, templates)]
        )  # fmt: skip
        for key in keys:
            if key in templates:
                used = ", ".join(sorted(template_fields(templates[key]))) or "none"
            else:  # named by a parameter: each value's own template
                prefix = key.partition("{")[0]
                key = key.replace("{", "<").replace("}", ">")
                exact = {n.format_map({}) for n in node_type.prompts if "{" not in n}
                own = sorted(k for k in templates if k.startswith(prefix) and k not in exact)
                used = f"its own (built-in: {', '.join(own)})"
            rows.append(f"| `{key}` | {used} | {', '.join(computed) or 'none'} |")
    if rows:
        lines += ["", "| template | uses | computes |", "|---|---|---|", *rows]
    return [*lines, ""]


def _table(title: str, head: str, rows: list[str]) -> list[str]:
    return [f"## {title}", "", head, "|---|---|", *rows, ""]


def reference_page() -> str:
    """The reference page (markdown) of the built-in pieces, from the registry.

    Example:
        >>> page = reference_page()
        >>> "### `solve`" in page and "| `verifier/user` | problem, solution | none |" in page
        True
    """
    found = registry()
    templates = dict(found.prompts.items())
    lines = [HEADER, "## Node types", ""]
    for entry in sorted(found.nodes.entries(), key=lambda e: e.name):
        if entry.builtin:
            lines += _node_section(entry, templates)
    tasks = [
        f"| `{e.name}` | {', '.join(e.item.fields) if e.item.fields else 'not declared'} |"
        for e in sorted(found.tasks.entries(), key=lambda e: e.name)
        if e.builtin
    ]
    lines += _table("Task builders", "| builder | every task carries |", tasks)
    for title, table in (
        ("Planners", found.planners),
        ("Selection rules", found.selections),
        ("Stop conditions", found.stops),
        ("Similarities", found.similarities),
    ):
        rows = [f"| `{e.name}` | {_first_sentence(e.item)} |" for e in table.entries() if e.builtin]
        lines += _table(title, "| name | what it does |", rows)
    roles = [
        f"| `{e.name}` | {e.item.max_tokens}"
        + (f", model of `{e.item.model_of}`" if e.item.model_of else "")
        + f" | {e.item.description} |"
        for e in found.roles.entries()
        if e.builtin
    ]
    lines += _table("Roles", "| role | budget | what it does |", roles)
    channels = [
        f"| `{e.name}` ({e.item.reducer}) | {e.item.description} |"
        for e in found.channels.entries()
        if e.builtin
    ]
    lines += _table("Channels every run has", "| channel | what it holds |", channels)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    print(reference_page(), end="")
