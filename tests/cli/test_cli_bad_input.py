"""Bad input to every headless command and to the config keys, through the installed `specterm`:
exit 2, exactly one line on stderr, no traceback — invalid URLs and ports, paths that are folders,
missing or unreadable files, binary files, huge files, bad values and bad usage. Every case fails
before any model loads or any server is contacted."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from cli_sandbox import SPECTERM, Sandbox

HUGE = 17 * 1024 * 1024  # over the 16 MiB text limit


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make(kind: str) -> Callable[[Path], str]:
    """A file (or folder) of one kind in the working folder; returns its path."""

    def build(cwd: Path) -> str:
        path = cwd / kind
        if kind == "folder":
            path.mkdir()
        elif kind == "latin1.py":
            path.write_bytes("caf\xe9 = 1\n".encode("latin-1"))
        elif kind == "binary.py":
            path.write_bytes(bytes(range(256)) * 4)
        elif kind == "huge.py":
            with open(path, "wb") as fh:
                fh.truncate(HUGE)
        elif kind == "unreadable.py":
            path.write_text("x = 1\n")
            path.chmod(0)
        elif kind.endswith(".toml"):
            path.write_text(kind_toml[kind])
        elif kind == "ok.py":
            path.write_text("x = 1\n")
        return str(path)

    return build


kind_toml = {
    "bad-port.toml": '[engine]\nbackend = "openai"\nurl = "http://127.0.0.1:70000"\n',
    "no-url.toml": '[engine]\nbackend = "openai"\n',
    "ctx-word.toml": '[model]\nctx = "big"\n',
    "ctx-zero.toml": "[model]\nctx = 0\n",
    "backend.toml": '[engine]\nbackend = "cloud"\n',
    "max-lines.toml": "[completion]\nmax_lines = 0\n",
    "unknown-key.toml": "[completion]\nmax_line = 3\n",
}

REMOTE = ["--backend", "openai"]
# A remote backend where nothing listens (the discard port): these cases fail before any request.
NO_SERVER = [*REMOTE, "--url", "http://127.0.0.1:9"]

# id -> (argv with {f} for the made path, what to make, needle in the one line)
CASES: dict[str, tuple[list[str], str | None, str]] = {
    "url port too big": (["complete", "{f}:1:1", *REMOTE, "--url", "http://127.0.0.1:999999"], "ok.py", "invalid port"),
    "url port 65536": (["generate", "--prompt", "x", *REMOTE, "--url", "http://127.0.0.1:65536"], None, "invalid port"),
    "url port word": (["generate", "--prompt", "x", *REMOTE, "--url", "http://127.0.0.1:http"], None, "invalid port"),
    "url port 0": (["doctor", *REMOTE, "--url", "http://127.0.0.1:0"], None, "port 0"),
    "url not http": (["complete", "{f}:1:1", *REMOTE, "--url", "ftp://127.0.0.1/x"], "ok.py", "not an http(s) address"),
    "url with a blank": (["generate", "--prompt", "x", *REMOTE, "--url", "http://my host:80"], None, "blank"),
    "url empty": (["generate", "--prompt", "x", *REMOTE, "--url", ""], None, "no URL"),
    "url in the app": (["open", ".", *REMOTE, "--url", "http://127.0.0.1:999999"], None, "invalid port"),
    "config url port": (["generate", "--prompt", "x", "--config", "{f}"], "bad-port.toml", "invalid port"),
    "config no url": (["generate", "--prompt", "x", "--config", "{f}"], "no-url.toml", "no URL"),
    "config ctx type": (["generate", "--prompt", "x", "--config", "{f}"], "ctx-word.toml", "model.ctx"),
    "config ctx range": (["complete", "a.py:1:1", "--config", "{f}"], "ctx-zero.toml", "model.ctx"),
    "config backend": (["doctor", "--config", "{f}"], "backend.toml", "engine.backend"),
    "config max_lines": (["complete", "a.py:1:1", "--config", "{f}"], "max-lines.toml", "completion.max_lines"),
    "config unknown key": (["generate", "--prompt", "x", "--config", "{f}"], "unknown-key.toml", "max_lines"),
    "config is a folder": (["generate", "--prompt", "x", "--config", "{f}"], "folder", "is a directory"),
    "config missing": (["generate", "--prompt", "x", "--config", "{f}"], None, "not found"),
    "config not utf-8": (["generate", "--prompt", "x", "--config", "{f}"], "latin1.py", "not a UTF-8"),
    "config unreadable": (["generate", "--prompt", "x", "--config", "{f}"], "unreadable.py", "cannot read"),
    "complete a folder": (["complete", "{f}:1:1", *NO_SERVER], "folder", "is a folder"),
    "complete missing file": (["complete", "{f}:1:1", *NO_SERVER], None, "no such file"),
    "complete binary": (["complete", "{f}:1:1", *NO_SERVER], "binary.py", "binary file"),
    "complete huge": (["complete", "{f}:1:1", *NO_SERVER], "huge.py", "too large"),
    "complete unreadable": (["complete", "{f}:1:1", *NO_SERVER], "unreadable.py", "cannot read"),
    "complete line past end": (["complete", "{f}:9:1", *NO_SERVER], "ok.py", "past the end"),
    "complete column past end": (["complete", "{f}:1:99", *NO_SERVER], "ok.py", "past the end"),
    "complete bad location": (["complete", "{f}:x:1"], "ok.py", "whole numbers"),
    "complete zero line": (["complete", "{f}:0:1"], "ok.py", "1-based"),
    "complete no location": (["complete"], None, "required"),
    "prompt-file a folder": (["generate", "--prompt-file", "{f}", *NO_SERVER], "folder", "is a folder"),
    "prompt-file missing": (["generate", "--prompt-file", "{f}", *NO_SERVER], None, "no such file"),
    "prompt-file binary": (["generate", "--prompt-file", "{f}", *NO_SERVER], "binary.py", "binary file"),
    "prompt-file huge": (["generate", "--prompt-file", "{f}", *NO_SERVER], "huge.py", "too large"),
    "prompt-file unreadable": (["generate", "--prompt-file", "{f}", *NO_SERVER], "unreadable.py", "cannot read"),
    "empty prompt": (["generate", "--prompt", "", *NO_SERVER], None, "empty"),
    "target is a folder": (["generate", "--prompt", "x", "--target", "{f}"], "folder", "names a folder"),
    "target missing": (["generate", "--prompt", "x", "--target", "{f}"], None, "does not exist"),
    "draft missing": (["generate", "--prompt", "x", "--draft", "{f}"], None, "does not exist"),
    "ctx not a number": (["generate", "--ctx", "big", "--prompt", "x"], None, "invalid int value"),
    "negative max tokens": (["generate", "--max-tokens", "-1", "--prompt", "x"], None, "max_tokens"),
    "negative temperature": (["generate", "--temperature", "-1", "--prompt", "x"], None, "temperature"),
    "unknown backend": (["generate", "--backend", "cloud", "--prompt", "x"], None, "invalid choice"),
    "unknown flag": (["complete", "a.py:1:1", "--frobnicate"], None, "unrecognized arguments"),
    "unknown command word": (["generate", "--prompt", "x", "extra"], None, "unrecognized arguments"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_exit_2_and_one_line(sandbox: Sandbox, case: str):
    argv, kind, needle = CASES[case]
    if kind == "unreadable.py" and os.geteuid() == 0:
        pytest.skip("root reads any file: an unreadable file cannot be made here")
    path = make(kind)(sandbox.cwd) if kind else str(sandbox.cwd / "missing-file")
    r = sandbox.run(*[a.replace("{f}", path) for a in argv], timeout=60)
    assert r.rc == 2, (case, r.rc, r.out, r.err)
    assert "Traceback" not in r.err, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, (case, r.err)
    assert lines[0].startswith("specterm") and needle in lines[0], (case, needle, lines[0])
    assert r.out == ""


@pytest.mark.parametrize("command", [["complete", "a.py:1:1", "--stdin"], ["generate"]], ids=["complete", "generate"])
def test_binary_on_stdin_is_exit_2_and_one_line(sandbox: Sandbox, command: list[str]):
    proc = subprocess.run([str(SPECTERM), *command, *REMOTE, "--url", f"http://127.0.0.1:{closed_port()}"],
                          input=bytes(range(256)), capture_output=True, cwd=sandbox.cwd, env=sandbox.env(),
                          timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [
        "specterm: standard input: looks like a binary file; specterm reads text files only."]


@pytest.mark.parametrize("command", [["complete", "a.py:1:1", "--stdin"], ["generate"]], ids=["complete", "generate"])
def test_latin1_on_stdin_is_read_like_a_file(sandbox: Sandbox, command: list[str]):
    """An editor pipes a Latin-1 buffer as it is: read like the same file on disk, so the run gets
    as far as the (absent) server."""
    proc = subprocess.run([str(SPECTERM), *command, *REMOTE, "--url", f"http://127.0.0.1:{closed_port()}"],
                          input="caf\xe9 = 1\n".encode("latin-1"), capture_output=True, cwd=sandbox.cwd,
                          env=sandbox.env(), timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err
    assert "cannot reach the remote backend" in err and "standard input" not in err, err
