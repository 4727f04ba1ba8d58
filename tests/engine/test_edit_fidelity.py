"""Edits drafted from the original say exactly what the target says, and a prewarmed edit reads
only its instruction.

As tests/engine/test_fidelity.py: greedy output with drafting must equal plain greedy decoding of
the same prompt token by token, a divergence tolerated only at the target's own near-tie."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specterm.engine import DraftSettings, EditRequest, EngineSettings, ModelSettings, SpeculativeSettings
from specterm.engine.bench.tasks import _INVENTORY, _SEARCH
from specterm.engine.edit_prompt import build_edit_prompt
from specterm.engine.llamacpp.edit_prompt import build_edit_tokens
from specterm.engine.llamacpp.local import LocalEngine
from specterm.engine.llamacpp.model import LlamaModel

from test_fidelity import greedy_trace

# Slow tier (tests/conftest.py): each test generates whole edits, plain and drafted.
pytestmark = pytest.mark.slow

# The engine fixture's context (tests/engine/conftest.py); `conftest` is not importable by name in a whole-suite run.
CTX = 2048

EDITS = [
    EditRequest(instruction="Rename the variable `values` to `items`.", region=_SEARCH, path="search.py"),
    # a region inside a file: context before and after it
    EditRequest(instruction="Raise KeyError with a clear message when the item is missing.",
                region=_INVENTORY.split("    def remove")[1].split("    def value")[0].join(["    def remove", ""]),
                before=_INVENTORY.split("    def remove")[0],
                after="    def value" + _INVENTORY.split("    def value")[1], path="inventory.py"),
]
N = 96
MAX_TIE_GAP = 1.0


def plain_trace(path: str, req: EditRequest) -> tuple[list[int], list[float]]:
    """Plain greedy decoding of the edit's own prompt tokens (no stop: up to N tokens)."""
    m = LlamaModel.load(ModelSettings(path=path, ctx=CTX))
    try:
        return greedy_trace(m, build_edit_tokens(m, req).tokens, N)
    finally:
        m.close()


@pytest.fixture(scope="module")
def traces(models):
    return [plain_trace(models.demo, req) for req in EDITS]


@pytest.mark.parametrize("draft", ["lookup", "session", "hybrid"])
def test_edits_drafted_from_the_original_equal_plain(models, traces, draft):
    # adaptive off and a long draft: every proposal goes to the target
    spec = SpeculativeSettings(draft_max=8, adaptive=False, p_min=0.0)
    ds = (DraftSettings(kind="model", model=ModelSettings(path=models.draft_q4, ctx=CTX), hybrid=True)
          if draft == "hybrid" else DraftSettings(kind=draft))
    eng = LocalEngine(EngineSettings(target=ModelSettings(path=models.demo, ctx=CTX), draft=ds, speculative=spec))
    eng.load()
    try:
        check_edits(eng, traces, draft)
    finally:
        eng.close_sync()


def check_edits(eng: LocalEngine, traces, draft: str) -> None:
    from_original = 0
    for req, (plain, gaps) in zip(EDITS, traces):
        result = eng.run(replace(req, max_tokens=N))
        spec = result.tokens
        for i, (a, b) in enumerate(zip(plain, spec)):
            if a != b:
                assert gaps[i] <= MAX_TIE_GAP, (
                    f"{draft}: the edit diverged at token {i} ({b} instead of {a}) where the "
                    f"target's own top-2 gap was {gaps[i]:.3f}: a drafting bug, not numerics")
                break
        else:
            # plain ran on past the closing fence; the edit stopped there (or both hit N)
            assert len(spec) <= len(plain)
            assert result.reason in ("stop", "eos", "length")
        from_original += result.stats.drafted_by_drafter.get("original", 0)
        assert result.stats.drafted > 0
    assert from_original > 0, "the follower never drafted: the test proves nothing"


def test_a_prewarmed_edit_reads_only_the_instruction(models, engine_factory):
    eng = engine_factory(models.demo, "session")
    req = EDITS[1]
    read = eng.prewarm_sync(replace(req, instruction=""))
    assert read.prompt_tokens_decoded > 200  # the file and the region
    result = eng.run(replace(req, max_tokens=4))
    header = build_edit_prompt(req, req.before, req.after).answer_start  # "after the change" and the fence
    tail = len(eng.target.tokenize(req.instruction)) + len(eng.target.tokenize(header)) + 4
    assert 0 < result.stats.prompt_tokens_decoded <= tail, result.stats.prompt_tokens_decoded
    assert result.stats.prompt_tokens > read.prompt_tokens_decoded
