"""`specterm edit` through the installed script on the demo model: the diff is what `diff -u`
prints, --json/--write/--stdin agree with it, a no-change answer prints nothing, bad input exits 2.

Greedy decoding makes each answer reproducible; the runs are few because every one loads the model.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cli_sandbox import Sandbox, assert_clean_error
from test_cli_commands import STATS_KEYS

CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
RENAME = "Rename the function mul to multiply."
SMALL = ("--ctx", "1024")


def gnu_diff_hunks(old: Path, new: Path) -> str:
    """`diff -u old new` without its two header lines (they name the files and their times)."""
    out = subprocess.run(["diff", "-u", str(old), str(new)], capture_output=True, text=True).stdout
    return out.split("\n", 2)[2] if out else ""


@pytest.mark.skipif(shutil.which("diff") is None, reason="needs GNU diff to compare with")
def test_edit_diff_is_diff_u_and_json_write_stdin_agree(sandbox: Sandbox, tmp_path: Path):
    src = sandbox.cwd / "calc.py"
    src.write_text(CALC)
    r = sandbox.run("edit", "calc.py:5-6", "--instruction", RENAME, "--json", *SMALL)
    assert r.rc == 0, r.err
    obj = json.loads(r.out)
    assert {"text", "diff", "changed", "file", "start", "end", "finish_reason", "stats"} <= set(obj)
    assert STATS_KEYS <= set(obj["stats"]) and obj["stats"]["tokens"] > 0
    assert (obj["file"], obj["start"], obj["end"], obj["changed"]) == ("calc.py", 5, 6, True)
    lines = CALC.splitlines(keepends=True)
    new_text = "".join(lines[:4]) + obj["text"]  # the region was the file's end
    assert obj["text"].endswith("\n") and obj["text"] != "".join(lines[4:])
    assert src.read_text() == CALC  # nothing written without --write

    new = tmp_path / "new.py"
    new.write_text(new_text)
    head, hunks = obj["diff"].split("\n", 2)[:2], obj["diff"].split("\n", 2)[2]
    assert head == ["--- a/calc.py", "+++ b/calc.py"]
    assert hunks == gnu_diff_hunks(src, new)

    w = sandbox.run("edit", "calc.py:5-6", "--instruction", RENAME, "--write", *SMALL)
    assert w.rc == 0, w.err
    assert w.out == obj["diff"]  # the same answer, printed as the diff
    assert src.read_text() == new_text  # and saved

    s = sandbox.run("edit", "buffer.py:5-6", "-i", RENAME, "--stdin", *SMALL, stdin=CALC)
    assert s.rc == 0, s.err
    assert s.out == obj["diff"].replace("calc.py", "buffer.py")
    assert not (sandbox.cwd / "buffer.py").exists()


def test_edit_that_changes_nothing_prints_nothing(sandbox: Sandbox):
    src = sandbox.cwd / "hello.py"
    src.write_text("print('hello')\n")
    r = sandbox.run("edit", "hello.py", "--instruction", "Keep the code exactly as it is.", *SMALL)
    assert r.rc == 0, r.err
    assert r.out == ""
    assert "no change" in r.err and len(r.err.strip().splitlines()) == 1
    assert src.read_text() == "print('hello')\n"


@pytest.mark.parametrize("args, needle", [
    (("calc.py:7-9", "-i", RENAME), "the file has 6 line(s)"),
    (("calc.py:0-2", "-i", RENAME), "1-based"),
    (("calc.py:4-2", "-i", RENAME), "START <= END"),
    (("missing.py", "-i", RENAME), "no such file"),
    (("calc.py", "-i", "   "), "--instruction is empty"),
    (("blob.bin", "-i", RENAME), "binary"),
    (("calc.py", "-i", RENAME, "--stdin", "--write"), "use one"),
    (("calc.py",), "--instruction"),
])
def test_edit_bad_input_exits_2_with_one_line(sandbox: Sandbox, args, needle):
    (sandbox.cwd / "calc.py").write_text(CALC)
    (sandbox.cwd / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    r = sandbox.run("edit", *args)
    assert_clean_error(r, needle)
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert r.out == ""
    assert (sandbox.cwd / "calc.py").read_text() == CALC
