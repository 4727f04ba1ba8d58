"""Bad input through the installed `specterm`: exit 2, a message naming file/key/model, no traceback.

Each error class of the packaging issue is covered on a real subprocess: malformed TOML, unknown key,
wrong type, missing model, non-GGUF file; plus bad usage and the TUI command's config errors.
"""

from __future__ import annotations

import pytest

from cli_sandbox import Sandbox, assert_clean_error


def test_version_and_help(sandbox: Sandbox):
    r = sandbox.run("--version")
    assert r.rc == 0 and r.out.startswith("specterm ") and "llama-cpp-python 0.3.36" in r.out
    r = sandbox.run("--help")
    assert r.rc == 0
    for command in ("open", "complete", "generate", "doctor"):
        assert command in r.out
    for flag in ("--config", "--target", "--draft", "--gpu-layers", "--draft-gpu-layers", "--draft-max",
                 "--adaptive", "--no-adaptive", "--temperature", "--seed", "--ctx", "--max-tokens",
                 "--verbose", "--version"):
        assert flag in r.out


@pytest.mark.parametrize("command", ["complete", "generate", "doctor", "open"])
def test_every_command_takes_the_global_flags(sandbox: Sandbox, command: str):
    r = sandbox.run(command, "--help")
    assert r.rc == 0
    for flag in ("--config", "--target", "--draft", "--draft-max", "--no-adaptive", "--ctx", "--verbose"):
        assert flag in r.out, (command, flag)


def test_malformed_toml_names_file_and_line(sandbox: Sandbox):
    bad = sandbox.cwd / "bad.toml"
    bad.write_text("[model]\nctx = 2048\ndraft = lookup\n")
    r = sandbox.run("generate", "--config", str(bad), "--prompt", "x")
    assert_clean_error(r, f"{bad}:3", "line 3")


def test_unknown_key_in_user_file_suggests_the_nearest(sandbox: Sandbox):
    path = sandbox.write_user_config('[model]\ntargte = "demo"\n')
    r = sandbox.run("doctor")
    assert_clean_error(r, str(path), "'model.targte'", "Did you mean 'model.target'?")


def test_wrong_type_in_project_file(sandbox: Sandbox):
    project_file = sandbox.cwd / ".specterm.toml"
    project_file.write_text('[model]\nctx = "4k"\n')
    r = sandbox.run("generate", "--prompt", "x")
    assert_clean_error(r, str(project_file), "'model.ctx' must be an integer", '"4k"')


def test_missing_model_from_config_names_key_and_file(sandbox: Sandbox):
    conf_dir = sandbox.cwd / "conf"
    conf_dir.mkdir()
    cfg = conf_dir / "pair.toml"
    cfg.write_text('[model]\ntarget = "models/nope.gguf"\n')
    r = sandbox.run("generate", "--config", str(cfg), "--prompt", "x")
    assert_clean_error(r, "'model.target'", str(conf_dir / "models" / "nope.gguf"), str(cfg))


def test_missing_draft_from_flag(sandbox: Sandbox):
    r = sandbox.run("complete", "f.py:1:1", "--stdin", "--draft", "small.gguf", stdin="x")
    assert_clean_error(r, "'model.draft'", str(sandbox.cwd / "small.gguf"), "command line")


def test_non_gguf_target(sandbox: Sandbox):
    notes = sandbox.cwd / "notes.gguf"
    notes.write_text("these are not weights\n" * 10)
    r = sandbox.run("generate", "--target", str(notes), "--prompt", "x")
    assert_clean_error(r, str(notes), "not a GGUF file")


def test_tui_command_reports_config_errors_before_starting(sandbox: Sandbox):
    r = sandbox.run("--target", "missing.gguf", ".")
    assert_clean_error(r, "'model.target'", "missing.gguf")


@pytest.mark.parametrize(
    "args, needle",
    [
        (["complete", "f.py:2"], "FILE:LINE:COL"),
        (["complete", "f.py:0:1"], "1-based"),
        (["generate", "--ctx", "big"], "--ctx"),
        (["generate", "--prompt", "a", "--prompt-file", "b"], "not allowed with"),
        (["doctor", "--no-such-flag"], "--no-such-flag"),
        (["--ctx", "big", "doctor"], "invalid int value: 'big'"),  # a flag before the command
        (["--ctx", "big"], "specterm open: error"),
    ],
)
def test_bad_usage_exits_2(sandbox: Sandbox, args: list[str], needle: str):
    assert_clean_error(sandbox.run(*args), needle)


def test_cursor_outside_the_file(sandbox: Sandbox):
    src = sandbox.cwd / "a.py"
    src.write_text("one\ntwo\n")
    assert_clean_error(sandbox.run("complete", f"{src}:9:1"), "line 9 is past the end")
    assert_clean_error(sandbox.run("complete", f"{src}:2:5"), "column 5 is past the end of line 2")
    assert_clean_error(sandbox.run("complete", f"{sandbox.cwd}/nope.py:1:1"), "no such file")


def test_generate_needs_a_prompt(sandbox: Sandbox):
    assert_clean_error(sandbox.run("generate", stdin=""), "prompt is empty")
    assert_clean_error(sandbox.run("generate", "--prompt-file", "nope.txt"), "nope.txt")
