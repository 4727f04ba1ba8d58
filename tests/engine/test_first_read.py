"""The first read of a completion after the cursor moved: bounded by `first_read_s` against what
the KV cache holds (engine/llamacpp/fim_prompt.py), on the real models."""

from __future__ import annotations

import pytest

from specterm.engine import CompletionRequest, ContextFile, ModelSettings
from specterm.engine.drafters import common_prefix
from specterm.engine.llamacpp.fim_prompt import MIN_READ_PREFIX, FirstRead, build_fim_prompt
from specterm.engine.llamacpp.model import LlamaModel

FILE = "".join(f"def step_{i}(value):\n    total = value * {i} + {i % 7}\n    return total\n\n"
               for i in range(120))
TOKEN_S = 0.004  # what a token costs to read, as the engine would have measured it
BUDGET_S = 0.2  # 50 tokens at TOKEN_S


def _at(text: str, line: int) -> str:
    """The file's text up to the start of `line` (0-based), plus a typed start of a line."""
    return "".join(text.splitlines(keepends=True)[:line]) + "    tot"


@pytest.fixture(scope="module", params=["fim", "demo"])
def model(request, models):
    m = LlamaModel.load(ModelSettings(path=getattr(models, request.param), ctx=2048))
    yield m
    m.close()


def _reads(fp, held) -> int:
    return len(fp.tokens) - common_prefix(held, fp.tokens)


def test_without_a_budget_or_a_measured_rate_the_whole_window_is_read(model):
    req = CompletionRequest(prefix=_at(FILE, 200), suffix="\n    return total\n")
    whole = build_fim_prompt(model, req, 64)
    assert whole.prefix_start == 0
    assert build_fim_prompt(model, req, 64, FirstRead([], TOKEN_S)).tokens == whole.tokens  # no budget
    budgeted = CompletionRequest(prefix=req.prefix, suffix=req.suffix, first_read_s=BUDGET_S)
    assert build_fim_prompt(model, budgeted, 64).tokens == whole.tokens  # no FirstRead
    assert build_fim_prompt(model, budgeted, 64, FirstRead([], 0.0)).tokens == whole.tokens


def test_a_new_place_reads_a_short_window_of_whole_lines_within_the_budget(model):
    req = CompletionRequest(prefix=_at(FILE, 200), suffix="\n    return total\n", first_read_s=BUDGET_S)
    whole = build_fim_prompt(model, CompletionRequest(prefix=req.prefix, suffix=req.suffix), 64)
    fp = build_fim_prompt(model, req, 64, FirstRead([], TOKEN_S))
    assert fp.prefix_start > 0 and req.prefix[fp.prefix_start - 1] == "\n"  # at a line
    assert _reads(fp, []) <= max(BUDGET_S / TOKEN_S, MIN_READ_PREFIX) + 16 < len(whole.tokens)  # (+ a line)
    kept = req.prefix[fp.prefix_start:]
    assert kept.endswith("\n    tot") and kept.count("\n") >= 1  # the cursor's line and lines above it
    text = model.detokenize(fp.tokens)
    assert "def step_49(value)" in text and "def step_0(value)" not in text


def test_typing_on_at_the_new_place_keeps_the_window_the_cache_holds(model):
    first = CompletionRequest(prefix=_at(FILE, 200), suffix="\n", first_read_s=BUDGET_S)
    short = build_fim_prompt(model, first, 64, FirstRead([], TOKEN_S))
    held = short.tokens[:-1]  # what the engine holds after reading it
    typed = CompletionRequest(prefix=first.prefix + "al = value + 1\n    ret", suffix="\n",
                              first_read_s=BUDGET_S)
    again = build_fim_prompt(model, typed, 64, FirstRead(held, TOKEN_S))
    assert again.prefix_start == short.prefix_start  # the same start: the cache is reused
    assert _reads(again, held) < 20
    # A move up inside that window reuses it too.
    lines = first.prefix.splitlines(keepends=True)
    up = CompletionRequest(prefix="".join(lines[:-2]) + "    ret", suffix="\n", first_read_s=BUDGET_S)
    if len(up.prefix) > short.prefix_start:
        assert build_fim_prompt(model, up, 64, FirstRead(held, TOKEN_S)).prefix_start == short.prefix_start


def test_a_window_read_whole_in_the_background_is_used_whole(model):
    req = CompletionRequest(prefix=_at(FILE, 200), suffix="\n", first_read_s=BUDGET_S)
    whole = build_fim_prompt(model, CompletionRequest(prefix=req.prefix, suffix=req.suffix), 64)
    held = whole.tokens[: whole.warm]  # a prewarm without a budget read this much
    fp = build_fim_prompt(model, req, 64, FirstRead(held, TOKEN_S))
    assert fp.prefix_start == 0 and fp.tokens == whole.tokens


def test_other_files_chunks_stay_as_the_whole_window_has_them(models):
    """The chunks come first: a shorter prefix must not change them, or every chunk is read again."""
    m = LlamaModel.load(ModelSettings(path=models.fim, ctx=2048))
    try:
        chunks = (ContextFile("util.py", "def helper(x):\n    return x * 2\n" * 8),)
        base = dict(prefix=_at(FILE, 200), suffix="\n", path="main.py", context_files=chunks)
        whole = build_fim_prompt(m, CompletionRequest(**base), 64)
        lead = whole.tokens[: whole.tokens.index(m.fim.pre) + 1]
        fp = build_fim_prompt(m, CompletionRequest(**base, first_read_s=BUDGET_S), 64, FirstRead(lead, TOKEN_S))
        assert fp.prefix_start > 0 and fp.tokens[: len(lead)] == lead
        assert _reads(fp, lead) <= BUDGET_S / TOKEN_S + 16
    finally:
        m.close()


def test_the_engine_reads_little_after_a_jump_and_the_whole_window_without_a_budget(engine_factory, models):
    eng = engine_factory(models.demo)
    top = CompletionRequest(prefix=_at(FILE, 40), max_tokens=4)
    assert eng.run(top).stats.prompt_tokens_decoded > 100  # a read: the rate is measured
    cost = eng.decoder.policy.costs.read_cost()
    assert cost is not None and cost[0] >= 0 and cost[1] > 0
    budget = cost[0] + 40 * cost[1]  # what reading 40 tokens costs
    jump = CompletionRequest(prefix=_at(FILE, 300), max_tokens=4, first_read_s=budget)
    far = eng.run(jump).stats
    assert far.prompt_tokens_decoded <= 40 + 16  # (the line the window starts in is whole)
    typed = CompletionRequest(prefix=jump.prefix + "al = 1\n    ", max_tokens=4, first_read_s=budget)
    assert eng.run(typed).stats.prompt_tokens_decoded <= 12  # the short window is kept
    full = eng.run(CompletionRequest(prefix=typed.prefix, max_tokens=4)).stats
    assert full.prompt_tokens_decoded > 100  # no budget: the whole window


def test_the_read_cost_is_a_line_through_the_sizes_read():
    """A short read costs more per token (each call has its overhead): priced per token alone,
    windows shrank with every short read."""
    from specterm.engine.costs import CostModel

    costs = CostModel()
    assert costs.read_cost() is None
    costs.observe_prompt(20, 0.02 + 20 * 0.004)
    fixed, per = costs.read_cost()
    assert fixed == 0 and per == pytest.approx(0.005)  # one size: its cost per token
    for _ in range(3):
        costs.observe_prompt(300, 0.02 + 300 * 0.004)
    fixed, per = costs.read_cost()
    assert fixed == pytest.approx(0.02, abs=0.005) and per == pytest.approx(0.004, rel=0.1)


def test_a_bad_budget_reads_the_least_window(model):
    for bad in (0.0, -1.0):
        req = CompletionRequest(prefix=_at(FILE, 200), suffix="\n", first_read_s=bad)
        fp = build_fim_prompt(model, req, 64, FirstRead([], TOKEN_S))
        assert fp.prefix_start > 0  # the least window: the cursor's line and MIN_READ_PREFIX tokens
        assert _reads(fp, []) <= MIN_READ_PREFIX + 32
