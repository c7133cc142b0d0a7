"""The package's layout shows its architecture: a small top floor, one folder per layer, names
that say what a module does (no two modules outside the command line share a name), and a
layout page (docs/architecture.md) whose tree matches the package."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tmas"
LAYOUT_PAGE = PACKAGE.parent / "docs" / "architecture.md"
LAYERS = {
    "answers",
    "cli",
    "eval",
    "graphs",
    "lifecycle",
    "llm",
    "memory",
    "nodes",
    "orchrm",
    "serve",
    "storage",
    "testing",
    "training",
    "views",
}


def modules() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]


def test_the_top_floor_is_small_and_each_layer_has_a_folder() -> None:
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert len(top) <= 10, top
    assert not [name for name in top if name.startswith("cli")]
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert folders == LAYERS
    assert {p.name for p in (PACKAGE / "nodes").iterdir() if p.is_dir()} >= {"agents", "control"}


def test_modules_outside_the_command_line_have_names_of_their_own() -> None:
    """``runner.py`` beside ``eval/runner.py`` says nothing; a command's module may share the
    name of what it runs (``cli/fork.py`` runs ``lifecycle/fork.py``)."""
    stems = Counter(
        p.stem
        for p in modules()
        if p.stem not in ("__init__", "__main__") and "cli" not in p.relative_to(PACKAGE).parts
    )
    assert [stem for stem, count in stems.items() if count > 1] == []


def test_every_prompt_template_sits_beside_the_agents() -> None:
    templates = list(PACKAGE.rglob("*.txt"))
    assert templates
    assert all(p.parent.parent == PACKAGE / "nodes" / "agents" / "templates" for p in templates)


def layout_block() -> str:
    """The tree of the layout page: the code block that starts with ``tmas/``."""
    block = re.search(r"```\ntmas/\n(.*?)```", LAYOUT_PAGE.read_text(encoding="utf-8"), re.S)
    assert block, f"{LAYOUT_PAGE.name} has no layout block"
    return block.group(1)


def test_the_layout_page_lists_every_layer_and_top_module() -> None:
    listed = layout_block()
    for layer in LAYERS | {"agents", "control"}:
        assert re.search(rf"^\s+{layer}/", listed, re.M), layer
    for module in PACKAGE.glob("*.py"):
        assert module.name in listed, module.name


def test_the_layout_page_names_every_module_and_no_other() -> None:
    """Every module of the package is in the tree by its file name, and every file name in the
    tree is a module that exists (a moved or renamed module shows up here)."""
    listed = layout_block()
    named = set(re.findall(r"\b(\w+\.py)\b", listed))
    names = {p.name for p in modules()}
    assert sorted(names - named) == [], "modules missing from the layout page"
    assert sorted(named - names) == [], "the layout page names modules that do not exist"
    for folder in {p.parent for p in modules()} - {PACKAGE}:
        assert re.search(rf"\b{folder.name}/", listed), folder.relative_to(PACKAGE)
