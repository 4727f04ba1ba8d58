"""Argument parsing in-process: which command runs, and every global flag reaching EngineSettings."""

from __future__ import annotations

from pathlib import Path

import pytest

from specterm.tui import cli
from specterm.tui.config import load_settings

NAMES = {"open", "complete", "generate", "doctor"}


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], ["open"]),
        (["src"], ["open", "src"]),
        (["--target", "m.gguf", "src"], ["open", "--target", "m.gguf", "src"]),
        (["--ctx", "512", "doctor"], ["--ctx", "512", "doctor"]),
        (["doctor", "--json"], ["doctor", "--json"]),
        (["--draft", "lookup", "generate", "--prompt", "x"], ["--draft", "lookup", "generate", "--prompt", "x"]),
        (["--help"], ["--help"]),
        (["--version"], ["--version"]),
        (["src", "--help"], ["open", "src", "--help"]),
        (["--no-adaptive"], ["open", "--no-adaptive"]),
    ],
)
def test_default_command_is_the_app(argv, expected):
    assert cli._insert_default_command(argv, NAMES) == expected


def parse(argv: list[str]):
    modules = cli.command_modules()
    parser = cli.build_parser(modules)
    return parser.parse_args(cli._insert_default_command(argv, {"open", *(m.NAME for m in modules)}))


def test_every_global_flag_reaches_the_engine_settings(tmp_path: Path):
    argv = [
        "--draft-max", "3",  # before the command name ...
        "generate", "--prompt", "x",
        "--no-adaptive", "--temperature", "0.7", "--seed", "5", "--max-tokens", "9",  # ... and after
        "--gpu-layers", "0", "--draft-gpu-layers", "2", "--ctx", "128", "--draft", "none",
        "--target", "demo",
    ]
    args = parse(argv)
    overrides = cli.overrides_from_args(args)
    assert overrides == {
        "model.target": "demo", "model.draft": "none", "model.gpu_layers": 0,
        "model.draft_gpu_layers": 2, "model.ctx": 128, "speculative.draft_max": 3,
        "speculative.adaptive": False, "sampling.temperature": 0.7, "sampling.seed": 5,
        "completion.max_tokens": 9, "chat.max_tokens": 9, "generate.max_tokens": 9,
    }
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config")}
    settings = load_settings(overrides=overrides, env=env, verbose=True)
    es = settings.engine_settings()
    assert (es.target.gpu_layers, es.target.ctx) == (0, 128)
    assert es.draft.kind == "none"
    assert (es.speculative.draft_max, es.speculative.adaptive) == (3, False)
    assert (es.sampling.temperature, es.sampling.seed) == (0.7, 5)
    assert settings.generate.max_tokens == 9 and es.verbose is True


def test_absent_flags_leave_the_config_in_charge():
    args = parse(["doctor"])
    assert cli.overrides_from_args(args) == {}
    assert not hasattr(args, "verbose")  # defaults are suppressed, not set to a value


def test_draft_model_flag_gets_its_own_gpu_layers(tmp_path: Path):
    draft = tmp_path / "d.gguf"
    draft.write_bytes(b"GGUF")
    args = parse(["--draft", str(draft), "--draft-gpu-layers", "7", "--gpu-layers", "9", "doctor"])
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config")}
    es = load_settings(overrides=cli.overrides_from_args(args), env=env).engine_settings()
    assert es.draft.kind == "model" and es.draft.model is not None
    assert (es.draft.model.path, es.draft.model.gpu_layers, es.target.gpu_layers) == (str(draft), 7, 9)
