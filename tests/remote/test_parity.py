"""One set of completion rules for every backend: the same CompletionRequest through the local
engine and through a real `python -m llama_cpp.server` on loopback with the same (demo) model,
and the finished texts obey the same rules (engine/completion.py): line cap, single-line mode,
block end, no suffix repeat, no trailing blanks. The prompt budget works against a server whose
context is far smaller than the file."""

from __future__ import annotations

import pytest

from specterm.engine import (
    CompletionRequest,
    EngineSettings,
    Finished,
    ModelSettings,
    SamplingSettings,
    TextDelta,
)
from specterm.engine.completion import drop_suffix_repeat, lead_in, line_indent
from specterm.engine.llamacpp.local import LocalEngine
from specterm.engine.remote.engine import RemoteEngine, RemoteSettings

from remote_servers import API_KEY

GREEDY = SamplingSettings(temperature=0.0)

CASES = {
    "line cap": CompletionRequest(prefix="def fib(n):\n    ", suffix="\n\nprint(fib(10))\n",
                                  max_tokens=48, max_lines=2),
    "single line": CompletionRequest(prefix="import os\n\n\ndef main():\n    path = ",
                                     suffix="\n    return path\n", max_tokens=48, multiline=False),
    "block end": CompletionRequest(prefix="class Stack:\n    def push(self, x):\n        ",
                                   suffix="\n\n    def pop(self):\n        return self.items.pop()\n",
                                   max_tokens=64, max_lines=8),
    "suffix repeat": CompletionRequest(prefix="def add(a, b):\n    ", suffix="return a + b\n",
                                       max_tokens=32, max_lines=4),
    "after a colon": CompletionRequest(prefix="for i in range(10):", suffix="\n", max_tokens=32, max_lines=3),
}


def assert_obeys_the_rules(text: str, req: CompletionRequest) -> None:
    lines = text.split("\n")
    cap = req.max_lines if req.multiline else 1
    assert len(lines) - lead_in(lines) <= cap, f"line cap {cap}: {text!r}"
    if len(lines) > 1:
        assert lines[-1].strip(), f"trailing blank line: {text!r}"
        assert text == text.rstrip(), f"trailing blanks: {text!r}"
    cursor = req.prefix.rsplit("\n", 1)[-1]
    block = line_indent(cursor) if cursor.strip() else len(cursor)
    assert all(not ln.strip() or line_indent(ln) >= block for ln in lines[1:]), f"past the block: {text!r}"
    assert drop_suffix_repeat(text, req.suffix) == text, f"repeats the suffix: {text!r}"
    if not cursor.strip() and cursor:
        assert not lines[0][:1].isspace(), f"adds to the user's indentation: {text!r}"


async def run(engine, req: CompletionRequest) -> tuple[str, Finished]:
    raw, done = "", None
    async for ev in engine.stream(req):
        if isinstance(ev, TextDelta):
            raw += ev.text
        elif isinstance(ev, Finished):
            done = ev
    assert done is not None and done.reason in ("eos", "length", "stop"), done
    return raw, done


@pytest.fixture
async def local_engine(demo_model):
    eng = LocalEngine(EngineSettings(target=ModelSettings(path=demo_model, ctx=1024), sampling=GREEDY))
    await eng.start()
    yield eng
    await eng.close()


async def test_local_and_remote_finish_completions_by_the_same_rules(local_engine, llama_cpp_server):
    # "{prefix}": the prompt the local engine builds for a model without FIM tokens (the demo)
    remote = RemoteEngine(RemoteSettings(url=llama_cpp_server.url, api_key=API_KEY, sampling=GREEDY,
                                         fim_template="{prefix}", n_ctx=1024))
    cut = {"local": 0, "remote": 0}
    try:
        for name, req in CASES.items():
            for side, engine in (("local", local_engine), ("remote", remote)):
                raw, done = await run(engine, req)
                assert_obeys_the_rules(done.text, req), (name, side)
                cut[side] += done.text != raw
        # the rules did work on both sides (the demo model runs on past every cap)
        assert cut["local"] >= 2 and cut["remote"] >= 2, cut
    finally:
        await remote.close()


def long_file(lines: int) -> str:
    return "".join(f"def function_{i}(value):\n    return value * {i} + {i * 7}\n\n" for i in range(lines))


async def test_a_file_far_larger_than_the_servers_context_still_completes(llama_cpp_server):
    """The server's context is 1024 tokens; the file is about 7,000. The remote prompt gets the same
    budget as a local one (the server's /extras/tokenize/count counts), so the completion works
    and sees the code nearest the cursor."""
    text = long_file(330)
    cursor = text.index("def function_200(")
    req = CompletionRequest(prefix=text[:cursor] + "def function_200(value):\n    return value * 200",
                            suffix=text[cursor:].split("\n", 2)[2], max_tokens=16, max_lines=1)
    remote = RemoteEngine(RemoteSettings(url=llama_cpp_server.url, api_key=API_KEY, sampling=GREEDY, n_ctx=1024))
    try:
        await remote.start()
        assert await remote.count_tokens(text) > 6000  # the file really is far larger
        raw, done = await run(remote, req)
        assert done.reason in ("eos", "length", "stop") and done.stats.tokens > 0
    finally:
        await remote.close()


def test_the_safe_estimate_never_undercounts_code(demo_model):
    """Where a server has no tokenize endpoint the budget counts two UTF-8 bytes a token. Measured
    here with the demo tokenizer over specterm's own source: the estimate stays above the truth."""
    from pathlib import Path

    import specterm.engine as pkg
    from specterm.engine.completion import estimate_tokens
    from specterm.engine.llamacpp.model import LlamaModel

    vocab = LlamaModel.load(ModelSettings(path=demo_model), vocab_only=True, what="demo model")
    try:
        for path in sorted(Path(pkg.__file__).parent.glob("*.py")):
            code = path.read_text()
            real = len(vocab.tokenize(code))
            assert estimate_tokens(code) >= real, (path.name, real, estimate_tokens(code))
    finally:
        vocab.close()
