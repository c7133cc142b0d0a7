"""The model and backend options are one group, declared once: every command that takes a
model gets them from :class:`tmas.cli.model_options.ModelOptions`, parsed into one object, and
a bad value is a one-line error."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import fields
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_helpers import PROBLEM, RUN_ID, invoke, make_home
from typer.testing import CliRunner

from tmas.cli.app import TmasCommands
from tmas.cli.model_options import ModelOptions, model_options
from tmas.cli.option_group import GROUPS
from tmas.cli.run_options import AutoPlanOptions, RunOptions
from tmas.config import ConfigError

FIELDS = tuple(f.name for f in fields(ModelOptions))
TAKE_A_MODEL = {"solve", "eval", "serve", "resume", "train grpo", "train sft", "train filter",
                "train latent", "orchrm train", "orchrm score"}  # fmt: skip


def commands() -> dict[str, Callable[..., Any]]:
    """Every command of ``tmas`` by its name, as its module defines it."""
    found = {}
    for entry in TmasCommands.ENTRIES:
        target = getattr(import_module(entry.module), entry.attr)
        if isinstance(target, typer.Typer):
            for command in target.registered_commands:
                found[f"{entry.name} {command.name}"] = command.callback
        else:
            found[entry.name] = target
    return found


def model_option_names(names: set[str]) -> set[str]:
    """The names among ``names`` that are model options (``judge_model``: the judge's)."""
    return {name for name in names if name.removeprefix("judge_") in FIELDS}


def test_every_command_that_takes_a_model_takes_the_one_group() -> None:
    taking = set()
    for name, command in commands().items():
        groups = getattr(command, GROUPS, {}).values()
        grouped = {p for group, names in groups if group is ModelOptions for p in names}
        parameters = set(inspect.signature(command).parameters)
        assert model_option_names(parameters) <= grouped <= parameters, name
        declared_here = set(inspect.signature(inspect.unwrap(command)).parameters)
        assert not model_option_names(declared_here), name  # none declared by the command
        if grouped:
            taking.add(name)
    assert taking == TAKE_A_MODEL


def test_solve_and_eval_take_the_run_and_auto_options_from_one_declaration() -> None:
    found = commands()
    for group in (RunOptions, AutoPlanOptions):
        taken = {
            name: names
            for name, command in found.items()
            for kind, names in getattr(command, GROUPS, {}).values()
            if kind is group
        }
        assert set(taken) == {"solve", "eval"}, group.__name__
        assert taken["solve"] == taken["eval"]
        for name in ("solve", "eval"):  # no option of the group declared by the command itself
            declared_here = set(inspect.signature(inspect.unwrap(found[name])).parameters)
            assert not declared_here & set(taken[name]), name


def declared(parameter: inspect.Parameter) -> tuple[Any, ...]:
    """What the command line shows of an option: default, help, env var, bounds."""
    info = parameter.annotation.__metadata__[0]
    return parameter.default, info.help, info.envvar, info.min, info.max


def test_the_options_differ_only_where_a_command_says_so() -> None:
    found = {name: inspect.signature(command).parameters for name, command in commands().items()}
    for command in ("eval", "serve"):
        assert [declared(found["solve"][n]) for n in FIELDS] == [
            declared(found[command][n]) for n in FIELDS
        ]
    assert declared(found["solve"]["model"])[1:3] == (
        "qwen, smollm2 or a GGUF path; a served model name; vLLM, hf: a checkpoint or hub id",
        "TMAS_MODEL",
    )
    assert declared(found["resume"]["n_ctx"])[0] is None
    assert declared(found["resume"]["model"])[2] is None  # a resume keeps the saved model
    assert declared(found["resume"]["engine_arg"]) == declared(found["solve"]["engine_arg"])
    grpo = found["train grpo"]
    assert (grpo["model"].default, grpo["judge_backend"].default) == ("smollm2", "hf")
    assert declared(grpo["model"])[2] is None and declared(grpo["judge_model"])[2] is None
    assert declared(found["orchrm score"]["device"]) == declared(grpo["device"])


def test_the_command_line_is_parsed_into_one_object() -> None:
    seen: list[ModelOptions] = []
    app = typer.Typer()

    @app.command()
    @model_options()
    def run(*, models: ModelOptions) -> None:
        seen.append(models)

    args = (
        "--backend vllm --role-model verifier=judge --role-base-url verifier=http://judge/v1 "
        "--n-ctx 2048 --engine-arg enforce_eager=true --engine-arg max-num-seqs=4 "
        "--gpu-memory-utilization 0.5 --dtype half"
    ).split()
    result = CliRunner().invoke(app, args, env={"TMAS_MODEL": "from-env"})
    assert result.exit_code == 0, result.output
    assert seen == [
        ModelOptions(
            backend="vllm", model="from-env", role_model=("verifier=judge",),
            role_base_url=("verifier=http://judge/v1",), n_ctx=2048,
            engine_arg=("enforce_eager=true", "max-num-seqs=4"), gpu_memory_utilization=0.5,
            dtype="half",
        )
    ]  # fmt: skip
    spec = seen[0].backend_spec()
    assert (spec.kind, spec.model, spec.n_ctx) == ("vllm", "from-env", 2048)
    assert spec.engine_args == {
        "enforce_eager": True, "max_num_seqs": 4, "gpu_memory_utilization": 0.5, "dtype": "half"
    }  # fmt: skip
    judge = seen[0].role_settings()["verifier"]
    assert judge == {"model": "judge", "base_url": "http://judge/v1"}
    refused = CliRunner().invoke(app, ["--max-sequences", "0"])
    assert refused.exit_code == 2 and "--max-sequences" in refused.output


@pytest.mark.parametrize(
    "command",
    [["solve", PROBLEM], ["eval", "--out", "{tmp}/out", "--limit", "1"], ["serve"]],
)
def test_each_command_hands_its_options_to_the_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    seen: list[ModelOptions] = []

    def stop(self: ModelOptions) -> None:
        seen.append(self)
        raise ConfigError("stopped here")

    monkeypatch.setattr(ModelOptions, "backend_spec", stop)
    args = [word.format(tmp=tmp_path) for word in command]
    result = invoke(tmp_path, *args, "--backend", "openai", "--model", "m", "--base-url",
                    "http://h/v1", "--role-model", "verifier=judge")  # fmt: skip
    assert result.exit_code == 2 and "stopped here" in result.output, result.output
    assert seen == [
        ModelOptions(backend="openai", model="m", base_url="http://h/v1",
                     role_model=("verifier=judge",))
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["solve", PROBLEM, "--role-model", "verifier"], "expected ROLE=MODEL, got 'verifier'"),
        (["solve", PROBLEM, "--backend", "vllm", "--engine-arg", "dtype"],
         "expected --engine-arg KEY=VALUE, got 'dtype'"),
        (["serve", "--role-base-url", "judge"], "expected ROLE=URL, got 'judge'"),
        (["eval", "--out", "out", "--backend", "vllm", "--engine-arg", "=1"],
         "expected --engine-arg KEY=VALUE, got '=1'"),
        (["resume", RUN_ID, "--engine-arg", "dtype"],
         "expected --engine-arg KEY=VALUE, got 'dtype'"),
        (["resume", RUN_ID, "--role-model", "verifier"], "expected ROLE=MODEL, got 'verifier'"),
    ],
)  # fmt: skip
def test_a_bad_model_option_is_a_one_line_error(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = invoke(make_home(tmp_path), *args, env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [f"error: {message}"]


def test_a_group_refuses_options_it_does_not_have() -> None:
    with pytest.raises(TypeError, match="has no option"):
        model_options("model", "temperature")
    with pytest.raises(TypeError, match="does not take"):
        model_options("model", device={"help": "x"})
    with pytest.raises(TypeError, match="has no parameter 'models'"):
        model_options()(lambda: None)
