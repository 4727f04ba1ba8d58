"""The README stays true to the code: the two set-up commands, the flags and commands it lists, and
its example config (every key must be one the loader accepts)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from specterm.tui.config import _flatten_file, parse_layer

from cli_sandbox import Sandbox

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def section(title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert m, f"README has no '## {title}' section"
    return m.group(1)


def code_blocks(text: str, lang: str) -> list[str]:
    return [b.strip("\n") for b in re.findall(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)]


def test_set_up_has_exactly_two_one_line_commands():
    blocks = code_blocks(section("Set up"), "sh")
    assert len(blocks) == 2 and all("\n" not in b for b in blocks)
    run, test = blocks
    assert run.endswith("bin/specterm") and "pip install ." in run
    assert test.endswith("bin/pytest") and "[test]" in test


def test_ci_runs_the_readme_test_command(tmp_path):
    """.ci/run's extraction yields the README's second set-up command, verbatim."""
    script = (REPO / ".ci" / "run").read_text()
    awk = re.search(r"cmd=\$\(awk '(.*?)' README.md\)", script, re.S)
    assert awk, ".ci/run no longer extracts the command with awk"
    out = subprocess.run(["awk", awk.group(1), str(REPO / "README.md")], capture_output=True, text=True)
    assert out.stdout.strip() == code_blocks(section("Set up"), "sh")[1]


def test_readme_config_examples_are_valid_config():
    blocks = code_blocks(README, "toml")
    assert blocks
    for block in blocks:
        parse_layer(_flatten_file(tomllib.loads(block), "README"), "README", Path.home())


def test_every_flag_and_command_in_the_readme_exists(sandbox: Sandbox):
    help_text = sandbox.run("--help").out
    flags = set(re.findall(r"`(--[a-z][a-z-]+)", section("Commands")))
    flags |= {"--no-adaptive"}
    for flag in sorted(flags):
        if flag in ("--stdin", "--json", "--prompt", "--prompt-file", "--stop", "--write"):
            continue  # command flags, checked below
        assert flag in help_text, flag
    assert "--stdin" in sandbox.run("complete", "--help").out
    generate = sandbox.run("generate", "--help").out
    for flag in ("--prompt", "--prompt-file", "--stop", "--json"):
        assert flag in generate
    edit = sandbox.run("edit", "--help").out
    for flag in ("--instruction", "--write", "--stdin", "--json"):
        assert flag in edit
