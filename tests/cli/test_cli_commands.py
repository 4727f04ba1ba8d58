"""The headless commands on the real demo model, through the installed `specterm` script.

No configuration exists in the sandbox (HOME and XDG_CONFIG_HOME point at an empty folder), so
these runs are also the "works out of the box on the demo pair" check. Token counts stay small.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from cli_sandbox import SPECTERM, Sandbox, assert_clean_error

STATS_KEYS = {
    "tokens", "drafted", "accepted", "acceptance", "target_passes", "tokens_per_pass",
    "tokens_per_second", "draft_max",
}
# Completion runs must not be cut short by the inline time budget on a busy 2-core CI machine.
NO_TIME_BUDGET = "[completion]\ntime_budget_ms = 0\npredict_ms = 0\n"


def check_result_json(out: str, *, draft: str, draft_max: int, max_tokens: int) -> dict:
    """One JSON object with text, target, draft and stats that are consistent with each other."""
    obj = json.loads(out)
    assert {"text", "target", "draft", "stats"} <= set(obj)
    assert isinstance(obj["text"], str)
    assert obj["target"].endswith(".gguf")
    assert obj["draft"] == draft
    s = obj["stats"]
    assert STATS_KEYS <= set(s)
    assert 0 < s["tokens"] <= max_tokens
    assert s["draft_max"] == draft_max
    assert 0 <= s["accepted"] <= s["drafted"]
    if s["drafted"] == 0:
        assert s["acceptance"] is None  # never a made-up figure
    else:
        assert s["acceptance"] == pytest.approx(s["accepted"] / s["drafted"])
        assert 0.0 <= s["acceptance"] <= 1.0
    assert s["target_passes"] > 0
    assert s["tokens_per_pass"] == pytest.approx(s["tokens"] / s["target_passes"])
    assert s["tokens_per_second"] is None or s["tokens_per_second"] > 0
    return obj


def test_doctor_on_the_demo_with_no_config_at_all(sandbox: Sandbox):
    r = sandbox.run("doctor")
    assert r.rc == 0, r.err
    assert "DEMO" in r.out and "SmolLM2-135M-Instruct" in r.out
    assert str(sandbox.user_config) in r.out  # where to put a real pair
    assert "[not found]" in r.out  # the user file was looked for
    for label in ("Target", "Draft", "Vocabularies", "Speculation", "GPU offload", "Memory", "FIM"):
        assert label in r.out
    assert "session memory" in r.out  # the default drafter without a draft model
    assert "32 MB cap, kept in memory only" in r.out  # nothing is saved unless asked


def test_doctor_says_where_a_saved_session_memory_lives(sandbox: Sandbox):
    (sandbox.cwd / ".specterm.toml").write_text('[draft]\nsession_store = "state/memory.npz"\n')
    r = sandbox.run("doctor")
    assert r.rc == 0, r.err
    assert f"kept between runs in {sandbox.cwd / 'state' / 'memory.npz'}" in r.out
    assert r.err == ""  # llama.cpp's log stays quiet without --verbose


def test_doctor_json_and_layering(sandbox: Sandbox, demo_path: str):
    user = sandbox.write_user_config("[model]\nctx = 1024\n")
    (sandbox.cwd / ".specterm.toml").write_text("[model]\nkv_type = \"q8_0\"\n")
    extra = sandbox.cwd / "extra.toml"
    extra.write_text("[model]\nctx = 2048\n")
    r = sandbox.run("doctor", "--json", "--config", str(extra), "--ctx", "512", "--draft", demo_path)
    assert r.rc == 0, r.err
    obj = json.loads(r.out)
    kinds = [(c["kind"], c["path"], c["read"]) for c in obj["config_files"]]
    assert kinds[1:] == [
        ("user", str(user), True),
        ("project", str(sandbox.cwd / ".specterm.toml"), True),
        ("--config", str(extra), True),
    ]
    rep = obj["report"]
    assert rep["ctx"] == 512 and rep["kv_type"] == "q8_0"  # flag beats --config beats user file
    assert rep["vocab_compatible"] is True and rep["draft_kind"] == "model"
    assert rep["draft"]["path"] == demo_path
    assert rep["target"]["fim"] is False and rep["target"]["chat_template"] is True
    assert rep["memory"]["kv_cache_bytes"] == 2 * rep["target"]["kv_cache_bytes"]
    assert rep["memory"]["weights_bytes"] == 2 * os.path.getsize(demo_path)
    assert obj["ok"] is True and obj["demo"] is True


def test_doctor_names_a_derived_draft(sandbox: Sandbox, models, demo_path: str):
    """A requantized copy of the target is known as such (text and --json); a different file
    with the same vocabulary is only 'compatible'."""
    r = sandbox.run("doctor", "--draft", models.draft_q4)
    assert r.rc == 0, r.err
    assert "derived copy of the target" in r.out
    assert "none (plain decoding" not in r.out
    assert "hybrid: the session memory" in r.out  # its session memory beside it, on a line of its own
    assert "Session       memory beside the draft model: 32 MB cap" in r.out
    alone = sandbox.run("doctor", "--draft", models.draft_q4, "--no-hybrid")
    assert alone.rc == 0 and "derived copy of the target" in alone.out
    assert "hybrid" not in alone.out and "MB cap" not in alone.out  # the model alone: no memory
    obj = json.loads(sandbox.run("doctor", "--json", "--draft", models.draft_q4).out)
    assert obj["report"]["derived_draft"] is True
    obj = json.loads(sandbox.run("doctor", "--json", "--draft", demo_path).out)
    assert obj["report"]["derived_draft"] is False and obj["report"]["vocab_compatible"] is True


def test_doctor_fails_on_an_incompatible_pair(sandbox: Sandbox, models):
    r = sandbox.run("doctor", "--draft", models.vocab_mismatch)
    assert r.rc == 2
    assert "INCOMPATIBLE" in r.out and "cannot work" in r.out and "Traceback" not in r.err


def test_doctor_reports_a_missing_model_with_the_config_files(sandbox: Sandbox):
    cfg = sandbox.write_user_config('[model]\ntarget = "~/models/big.gguf"\n')
    r = sandbox.run("doctor")
    assert r.rc == 2
    assert str(cfg) in r.out and "'model.target'" in r.out and str(sandbox.home / "models" / "big.gguf") in r.out


def test_doctor_non_gguf_target(sandbox: Sandbox):
    notes = sandbox.cwd / "notes.txt"
    notes.write_text("plain text\n" * 20)
    r = sandbox.run("doctor", "--target", str(notes))
    assert r.rc == 2 and "not a GGUF file" in r.out


def test_generate_json_on_the_demo(sandbox: Sandbox):
    r = sandbox.run("generate", "--json", "--prompt", "def add(a, b):\n", "--max-tokens", "12",
                    "--ctx", "512", "--draft-max", "5")
    assert r.rc == 0, r.err
    obj = check_result_json(r.out, draft="session", draft_max=5, max_tokens=12)
    assert obj["demo"] is True and "SmolLM2" in obj["target"]
    assert r.err == ""


def test_generate_streams_plain_text_from_stdin_and_file(sandbox: Sandbox):
    prompt = "1, 2, 3, 4, 5, 6,"
    piped = sandbox.run("generate", "--max-tokens", "8", "--draft", "none", "--ctx", "256", stdin=prompt)
    assert piped.rc == 0, piped.err
    assert piped.out.strip() and not piped.out.startswith("{")
    (sandbox.cwd / "p.txt").write_text(prompt)
    from_file = sandbox.run("generate", "--max-tokens", "8", "--draft", "none", "--ctx", "256",
                            "--prompt-file", "p.txt")
    assert from_file.rc == 0 and from_file.out == piped.out  # greedy: the same prompt, the same text


def test_complete_file_and_stdin_buffer(sandbox: Sandbox):
    (sandbox.cwd / ".specterm.toml").write_text(NO_TIME_BUDGET)
    src = sandbox.cwd / "calc.py"
    src.write_text("def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    \n")
    r = sandbox.run("complete", f"{src}:6:5", "--json", "--max-tokens", "8", "--ctx", "512")
    assert r.rc == 0, r.err
    check_result_json(r.out, draft="session", draft_max=16, max_tokens=8)

    # --stdin: the buffer comes from standard input; the named file need not exist.
    unsaved = "def square(x):\n    return x * x\n\n\ndef cube(x):\n    \n"
    r = sandbox.run("complete", "unsaved.py:6:5", "--stdin", "--max-tokens", "8", "--ctx", "512",
                    stdin=unsaved)
    assert r.rc == 0, r.err
    assert not r.out.endswith("\n\n")  # exactly the completion: nothing appended when piped


def test_complete_reads_a_latin1_file_as_the_app_does(sandbox: Sandbox):
    """The app opens, edits and saves a Latin-1 file; `complete` reads it the same way (issue #33),
    with the cursor column counted in characters of the decoded text."""
    from specterm.tui.commands.complete import Location, read_buffer
    from specterm.tui.textfile import TextFile

    (sandbox.cwd / ".specterm.toml").write_text(NO_TIME_BUDGET)
    src = sandbox.cwd / "latin1.py"
    src.write_bytes("# Menü\r\ndef price(name):\r\n    prices = {'café': 2, 'thé': 3}\r\n    return \r\n"
                    .encode("latin-1"))
    r = sandbox.run("complete", "latin1.py:4:12", "--json", "--max-tokens", "8", "--ctx", "512")
    assert r.rc == 0, r.err
    check_result_json(r.out, draft="session", draft_max=16, max_tokens=8)
    # one reader for both: the buffer the CLI completes is the text the editor shows
    assert read_buffer(Location(src, 4, 12), False) == TextFile.load(src).text
    past = sandbox.run("complete", "latin1.py:3:36", "--max-tokens", "1", "--ctx", "512")
    assert_clean_error(past, "column 36 is past the end of line 3 (34 characters")


def test_verbose_lets_llama_cpp_log_through(sandbox: Sandbox):
    r = sandbox.run("generate", "--verbose", "--prompt", "a", "--max-tokens", "1", "--draft", "none",
                    "--ctx", "256")
    assert r.rc == 0
    assert "llama" in r.err  # llama.cpp's loader log


def test_ctrl_c_exits_130_without_traceback(sandbox: Sandbox):
    proc = subprocess.Popen(
        [str(SPECTERM), "generate", "--prompt", "1, 2, 3, 4, 5, 6, 7, 8,", "--max-tokens", "2000",
         "--draft", "none", "--ctx", "4096"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        cwd=sandbox.cwd, env=sandbox.env(),
        # as from a terminal: a suite started in the background (`cmd &`) inherits SIGINT ignored,
        # and Python keeps it ignored, which is right for specterm but not what this test is about
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.read(1)  # generation has started
        assert first, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and b"interrupted" in err


def test_generate_reports_an_unusable_model(sandbox: Sandbox, models):
    r = sandbox.run("generate", "--target", models.truncated, "--prompt", "x")
    assert_clean_error(r, models.truncated)


def test_progress_and_stats_only_on_a_terminal(sandbox: Sandbox):
    """stderr a terminal: model-loading progress and a stats line appear there (piped runs above
    assert an empty stderr); stdout stays the plain generated text."""
    import pty

    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [str(SPECTERM), "generate", "--prompt", "1, 2, 3,", "--max-tokens", "4", "--ctx", "256"],
            stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
            cwd=sandbox.cwd, env=sandbox.env(),
        )
        os.close(slave)
        out, _ = proc.communicate(timeout=240)
        chunks = []
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the pty is closed once the child has exited
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    err = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0, err
    assert "loading target" in err and "tokens" in err and "stop: length" in err
    assert out and b"\x1b" not in out


def test_the_app_opens_on_the_demo_and_quits(sandbox: Sandbox):
    """The README's run command ends in `.venv/bin/specterm`: on a terminal, with no configuration,
    the app draws, says it runs the demo, and ctrl+q quits with status 0."""
    import pty
    import re
    import select

    (sandbox.cwd / "hello.py").write_text("print('hello')\n")
    pid, fd = pty.fork()
    if pid == 0:  # the child: become `specterm` in the sandbox
        os.chdir(sandbox.cwd)
        env = sandbox.env()
        env.update(TERM="xterm-256color", COLUMNS="120", LINES="40")
        os.execve(str(SPECTERM), [str(SPECTERM)], env)
    screen = b""
    status = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and b"demo" not in screen.lower():
            if select.select([fd], [], [], 0.5)[0]:
                try:
                    screen += os.read(fd, 65536)
                except OSError:
                    break
        plain = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", screen).decode(errors="replace")
        assert "demo" in plain.lower(), plain[-2000:]
        os.write(fd, b"\x11")  # ctrl+q
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(raw)
                break
            try:
                if select.select([fd], [], [], 0.2)[0]:
                    os.read(fd, 65536)
            except OSError:
                pass
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    assert status == 0
