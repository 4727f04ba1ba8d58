"""What the CLI says, word for word where it matters (issue #33): messages joined into one line keep
their sentence breaks, a value nobody set is not said to come from anywhere, and doctor names a draft
file it could not use instead of calling the drafter "none". Real runs of the installed `specterm`."""

from __future__ import annotations

import re
import socket

from cli_sandbox import Sandbox, assert_clean_error

REMOTE = ["--backend", "openai"]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sentence_run_ons(line: str) -> list[str]:
    """Places where a new sentence starts right after a word or figure with no full stop between:
    "in 1.6 s Start the server"."""
    return re.findall(r"[a-z0-9)\]'\"`] [A-Z][a-z]+ the\b", line)


def test_an_unreachable_server_message_keeps_its_sentence_breaks(sandbox: Sandbox):
    r = sandbox.run("generate", "--prompt", "x", *REMOTE, "--url", f"http://127.0.0.1:{closed_port()}",
                    timeout=120)
    assert_clean_error(r, "cannot reach the remote backend", "attempts in", "Start the server")
    line = r.err.strip()
    assert re.search(r"attempts in [\d.]+ s\. Start the server", line), line
    assert sentence_run_ons(line) == [], line


def test_a_url_nobody_set_names_no_source(sandbox: Sandbox):
    r = sandbox.run("generate", "--prompt", "x", *REMOTE)
    assert_clean_error(r, "no URL for the remote backend", "--url")
    assert "built-in defaults" not in r.err and "set in" not in r.err, r.err
    assert sentence_run_ons(r.err) == [], r.err


def test_a_url_someone_set_names_where(sandbox: Sandbox):
    cfg = sandbox.write_user_config('[engine]\nbackend = "openai"\nurl = "http://127.0.0.1:70000"\n')
    r = sandbox.run("generate", "--prompt", "x")
    assert_clean_error(r, "invalid port", f"(set in {cfg})")
    flag = sandbox.run("generate", "--prompt", "x", *REMOTE, "--url", "http://127.0.0.1:70000")
    assert_clean_error(flag, "invalid port", "(set on the command line)")


def test_doctor_on_the_demo_names_no_source_for_defaults(sandbox: Sandbox):
    r = sandbox.run("doctor")
    assert r.rc == 0, r.err
    assert "Target (demo)" in r.out
    assert "from built-in defaults" not in r.out and "set in built-in defaults" not in r.out, r.out


def test_doctor_names_a_draft_that_is_not_a_gguf(sandbox: Sandbox):
    module = sandbox.cwd / "some_module.py"
    module.write_text("def f():\n    return 1\n" * 20)
    r = sandbox.run("doctor", "--draft", "some_module.py")
    assert r.rc == 2 and "Traceback" not in r.err
    draft_lines = [ln for ln in r.out.splitlines() if ln.startswith("Draft")]
    assert draft_lines == ["Draft         some_module.py"], r.out
    block = r.out.split("Draft         some_module.py\n", 1)[1].split("\n\n")[0]
    assert f"{module}  (from the command line)" in block, block
    assert "is not a GGUF file" in block, block
    assert "none" not in r.out.split("Vocabularies")[0].split("Draft", 1)[1], r.out
    assert "not a GGUF file" in r.out.split("Problems", 1)[1]  # the problem itself, with its hint
