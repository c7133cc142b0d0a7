"""The training commands show the defaults their settings models use: an option's default is
the field's default, so the command line and the Python API train the same thing."""

from __future__ import annotations

import pytest
import typer

from tmas.cli import app
from tmas.orchrm.rm_settings import RewardModelSettings
from tmas.training.grpo_settings import GRPOSettings
from tmas.training.latent_settings import LatentSFTSettings

RENAMED = {"generations": "num_generations"}  # option name -> settings field


def command(*path: str):
    found = typer.main.get_command(app)
    for name in path:
        found = found.load(name) if hasattr(found, "load") else found.commands[name]
    return found


@pytest.mark.parametrize(
    ("path", "settings"),
    [
        (("train", "latent"), LatentSFTSettings),
        (("train", "grpo"), GRPOSettings),
        (("orchrm", "train"), RewardModelSettings),
    ],
)
def test_option_defaults_are_the_settings_defaults(path: tuple[str, ...], settings) -> None:
    fields = settings.model_fields
    compared = 0
    for param in command(*path).params:
        field = RENAMED.get(param.name, param.name)
        known = field in fields and fields[field].default_factory is None  # nested: not here
        if known and not fields[field].is_required() and param.default is not None:
            assert param.default == fields[field].default, (path, param.name)
            compared += 1
    assert compared >= 8, path
