"""The async API: streaming, cancellation within a pass, who yields to whom."""

from __future__ import annotations

import asyncio
import statistics

import pytest

from specterm.engine import (
    ChatMessage,
    ChatRequest,
    CompletionRequest,
    DraftSettings,
    EngineSettings,
    Finished,
    GenerateRequest,
    ModelSettings,
    SpeculativeSettings,
    StatsUpdate,
    TextDelta,
)
from specterm.engine.llamacpp.local import STREAM_WAKE_S, LocalEngine

LONG = "Write a very long story about a robot who learns to write Python code.\n\nOnce upon a time"


@pytest.fixture
async def engine(models):
    eng = LocalEngine(EngineSettings(target=ModelSettings(path=models.demo, ctx=2048),
                                     draft=DraftSettings(kind="lookup"),
                                     speculative=SpeculativeSettings(draft_max=4)))
    await eng.start()
    yield eng
    await eng.close()


async def collect(eng, req, cancel_after: int | None = None):
    deltas, stats, final = [], [], None
    async for ev in eng.stream(req):
        if isinstance(ev, TextDelta):
            deltas.append(ev.text)
            if cancel_after is not None and len(deltas) == cancel_after:
                await eng.cancel()
        elif isinstance(ev, StatsUpdate):
            stats.append(ev.stats)
        elif isinstance(ev, Finished):
            final = ev
    return deltas, stats, final


async def test_stream_yields_text_stats_and_one_final_event(engine):
    deltas, stats, final = await collect(engine, GenerateRequest(prompt=LONG, max_tokens=20))
    assert final is not None and final.reason == "length"
    assert "".join(deltas) == final.text
    assert stats and stats[-1].tokens <= final.stats.tokens
    assert engine.session_stats().tokens == final.stats.tokens
    assert engine.info.target_name.endswith(".gguf") and engine.info.draft_kind == "lookup"


async def test_cancel_takes_effect_within_a_pass_and_engine_stays_usable(engine):
    # (the first text is sent at once, later text a few times a second: cancel at the first)
    deltas, stats, final = await collect(engine, GenerateRequest(prompt=LONG, max_tokens=400),
                                         cancel_after=1)
    assert final.reason == "cancelled"
    # cancellation is checked before every target pass: at most one more pass ran after it
    assert final.stats.tokens < 3 + 2 * (engine.settings.speculative.draft_max + 1)
    _, _, again = await collect(engine, GenerateRequest(prompt="def f():", max_tokens=5))
    assert again.reason in ("length", "eos") and again.stats.tokens >= 1


async def test_streamed_text_wakes_the_caller_a_few_times_a_second(engine):
    """The engine writes a token every few ms; the caller's loop gets the first text at once and
    then joined text at most every STREAM_WAKE_S, the same text in the same order."""
    start = asyncio.get_running_loop().time()
    arrivals: list[tuple[float, str]] = []
    final = None
    async for ev in engine.stream(GenerateRequest(prompt=LONG, max_tokens=160)):
        if isinstance(ev, TextDelta):
            arrivals.append((asyncio.get_running_loop().time(), ev.text))
        elif isinstance(ev, Finished):
            final = ev
    took = asyncio.get_running_loop().time() - start
    assert final is not None and final.reason == "length" and final.stats.tokens == 160
    assert "".join(text for _, text in arrivals) == final.text
    # one event per pass would be one per target pass; joined: the first, one per wake-up, the
    # tail (how many passes a wake-up joins is the host's: passes took 10-26 ms on the CI hosts)
    assert len(arrivals) <= 3 + took / STREAM_WAKE_S
    assert len(arrivals) < final.stats.target_passes
    # (the tail goes with the end, whenever that comes)
    gaps = [b - a for (a, _), (b, _) in zip(arrivals[1:-1], arrivals[2:-1])]
    assert gaps and statistics.median(gaps) >= STREAM_WAKE_S * 0.8


async def test_new_completion_supersedes_the_running_one(engine):
    first = CompletionRequest(prefix=LONG, max_tokens=300, multiline=True, max_lines=100)
    second = CompletionRequest(prefix="def add(a, b):\n    ", max_tokens=8)
    task = asyncio.create_task(collect(engine, first))
    await asyncio.sleep(0.3)
    _, _, final2 = await collect(engine, second)
    _, _, final1 = await task
    assert final1.reason == "superseded"
    assert final2.reason != "superseded"


async def test_completion_during_chat_is_busy_and_chat_is_not_interrupted(engine):
    chat = ChatRequest(messages=(ChatMessage("user", "Tell me a long story about a cat."),), max_tokens=60)
    task = asyncio.create_task(collect(engine, chat))
    await asyncio.sleep(0.3)
    _, _, busy = await collect(engine, CompletionRequest(prefix="x = ", max_tokens=4))
    _, _, chat_final = await task
    assert busy.reason == "busy"
    assert chat_final.reason in ("length", "eos")


async def test_chat_supersedes_a_running_completion(engine):
    comp = CompletionRequest(prefix=LONG, max_tokens=300, multiline=True, max_lines=100)
    task = asyncio.create_task(collect(engine, comp))
    await asyncio.sleep(0.3)
    _, _, chat_final = await collect(
        engine, ChatRequest(messages=(ChatMessage("user", "Hi"),), max_tokens=8))
    _, _, comp_final = await task
    assert comp_final.reason == "superseded"
    assert chat_final.reason in ("length", "eos")


async def test_switching_the_drafter_at_run_time(engine, models):
    await engine.set_drafter(DraftSettings(kind="none"))
    assert engine.info.draft_kind == "none"
    _, _, final = await collect(engine, GenerateRequest(prompt=LONG, max_tokens=8))
    assert final.stats.drafted == 0
    await engine.set_drafter(DraftSettings(kind="model", model=ModelSettings(path=models.draft_q4, ctx=2048)))
    assert engine.info.draft_kind == "model"
    # a bad drafter is refused and the old one stays
    from specterm.engine import PairingError

    with pytest.raises(PairingError):
        await engine.set_drafter(DraftSettings(kind="model", model=ModelSettings(path=models.vocab_mismatch)))
    assert engine.info.draft_kind == "model"
    _, _, final = await collect(engine, GenerateRequest(prompt=LONG, max_tokens=8))
    assert final.reason == "length"


def test_engine_survives_a_caller_whose_event_loop_closed(models):
    """A caller's loop that closes mid-request must not kill the engine thread for later callers."""
    eng = LocalEngine(EngineSettings(target=ModelSettings(path=models.demo, ctx=2048)))
    first_loop = asyncio.new_event_loop()

    async def start_and_abandon():
        await eng.start()
        agen = eng.stream(GenerateRequest(prompt=LONG, max_tokens=200))
        await agen.__anext__()  # the request is running now

    first_loop.run_until_complete(start_and_abandon())
    first_loop.close()  # events for the abandoned request now have nowhere to go

    async def use_again():
        # a dead worker thread would leave this waiting forever: bound the wait
        _, _, final = await asyncio.wait_for(
            collect(eng, GenerateRequest(prompt="def f():", max_tokens=4)), timeout=60)
        await eng.close()
        return final

    final = asyncio.run(use_again())
    assert final.reason in ("length", "eos")


async def test_a_completion_time_budget_counts_from_the_keystroke(engine):
    import time

    code = "def add(a, b):\n" * 3 + "def mul(a, b):\n"
    base = CompletionRequest(prefix=code, suffix="", max_tokens=8, max_lines=50, time_budget_s=30.0)
    # The keystroke was 60 s ago (the request waited): the budget is spent before the first pass,
    # yet having read its prompt the completion still writes (for GENERATION_FLOOR_S at most).
    _, _, late = await collect(engine, CompletionRequest(**{**base.__dict__, "started_at": time.monotonic() - 60}))
    assert late.stats.tokens > 1 and late.text
    # A keystroke just now: the same budget lets it generate.
    _, _, now = await collect(engine, CompletionRequest(**{**base.__dict__, "started_at": time.monotonic()}))
    assert now.stats.tokens > 1


def test_the_deadline_counts_from_the_keystroke_with_a_floor_once_writing():
    import time

    from specterm.engine.completion import GENERATION_FLOOR_S, Deadline

    late = Deadline(CompletionRequest(prefix="x", time_budget_s=1.0, started_at=time.monotonic() - 60))
    assert late.passed() and late.left() == 0.0
    late.writing()
    assert not late.passed() and 0.0 < late.left() <= GENERATION_FLOOR_S
    fresh = Deadline(CompletionRequest(prefix="x", time_budget_s=30.0, started_at=time.monotonic()))
    fresh.writing()  # the budget is later than the floor: it stands
    assert 29.0 < fresh.left() <= 30.0
    none = Deadline(CompletionRequest(prefix="x"))
    none.writing()
    assert none.left() is None and not none.passed()


def test_the_predict_budget_caps_the_writing_once_it_began():
    import time

    from specterm.engine.completion import Deadline

    capped = Deadline(CompletionRequest(prefix="x", time_budget_s=30.0, predict_budget_s=0.2,
                                        started_at=time.monotonic()))
    assert 29.0 < capped.left() <= 30.0  # before the first text only the keystroke budget counts
    capped.writing()
    assert 0.0 < capped.left() <= 0.2
    only = Deadline(CompletionRequest(prefix="x", predict_budget_s=0.2))
    assert only.left() is None  # no budget before writing: a slow prompt is never cut short
    only.writing()
    assert 0.0 < only.left() <= 0.2
    late = Deadline(CompletionRequest(prefix="x", time_budget_s=1.0, predict_budget_s=5.0,
                                      started_at=time.monotonic() - 60))
    late.writing()  # the keystroke budget is spent: the floor, not the larger predict budget
    assert 0.0 < late.left() <= 0.6


async def test_a_predict_budget_ends_a_suggestion_early_with_the_start_of_the_same_text(engine):
    code = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n"
    whole = CompletionRequest(prefix=code, suffix="", max_tokens=64, max_lines=50)
    _, _, full = await collect(engine, whole)
    _, _, cut = await collect(engine, CompletionRequest(**{**whole.__dict__, "predict_budget_s": 0.05}))
    assert full.stats.tokens > 8
    assert cut.reason == "time" and 0 < cut.stats.tokens < full.stats.tokens
    assert cut.text.strip() and full.text.startswith(cut.text.rstrip())


def test_a_completion_cut_by_time_ends_on_a_whole_line():
    """Cut mid-line under whole lines, a suggestion shows the whole lines only (as it streamed):
    never `    if` dangling under them; a first line still being written is kept."""
    from specterm.engine.completion import ended_completion

    req = CompletionRequest(prefix="def f(x):\n", suffix="", max_lines=8)
    text = "    y = x + 1\n    z = y * 2\n    if"
    assert ended_completion(text, req, "time") == "    y = x + 1\n    z = y * 2"
    assert ended_completion(text, req, "length") == text  # cut by its length: as before
    assert ended_completion("    return x +", req, "time") == "    return x +"


async def test_a_prewarm_returns_what_it_read_once_the_read_has_ended(engine):
    """Engine.prewarm reports its read as a request's Stats do (what the app sizes its prefix
    window from before any request ran); the same prompt again has nothing left to read."""
    code = "".join(f"def f{i}(x):\n    return x * {i}\n\n" for i in range(40))
    req = CompletionRequest(prefix=code, suffix="\n", max_tokens=8)
    read = await engine.prewarm(req)
    assert read is not None
    assert 64 < read.prompt_tokens_decoded < read.prompt_tokens  # all but the prompt's end
    assert read.prompt_time_s > 0
    assert await engine.prewarm(req) is None  # nothing left to read
    _, _, done = await collect(engine, req)
    assert done.stats.prompt_tokens == read.prompt_tokens
    assert done.stats.prompt_tokens_decoded == read.prompt_tokens - read.prompt_tokens_decoded
