"""A saved session memory (`[draft] session_store`): what one run remembered drafts in the next,
nothing is written unless asked, and a bad or foreign store is ignored with a note, never used."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest

from specterm.engine import DraftSettings, EngineSettings, GenerateRequest, ModelSettings, SpeculativeSettings
from specterm.engine.llamacpp.local import LocalEngine
from specterm.engine.session_index import NgramIndex
from specterm.engine.session_store import SessionStore

from test_session_drafter import CODE

# Slow tier (tests/conftest.py): every test runs the engine to fill or read a stored session.
pytestmark = pytest.mark.slow


def session_engine(models, store: str, **spec) -> LocalEngine:
    eng = LocalEngine(EngineSettings(
        target=ModelSettings(path=models.demo, ctx=2048),
        draft=DraftSettings(kind="session", session_store=store),
        speculative=SpeculativeSettings(draft_max=8, adaptive=False, **spec)))
    eng.load()
    return eng


def run(eng: LocalEngine, *, remember: str = "", prompt: str = "x = 1", max_tokens: int = 1):
    async def go():
        await eng.start()
        if remember:
            await eng.remember(remember)
        async for ev in eng.stream(GenerateRequest(prompt=prompt, max_tokens=max_tokens)):
            last = ev
        await eng.close()
        return last

    return asyncio.run(go())


PROMPT = "import os\n\ndef list_python_files(folder):\n"


def test_what_one_run_remembered_drafts_in_the_next(models, tmp_path):
    store = tmp_path / "memory" / "session.npz"
    first = session_engine(models, str(store))
    assert first.info.notes and "new store" in first.info.notes[0]
    run(first, prompt=PROMPT, max_tokens=32)  # its output is remembered, then saved
    assert store.is_file()

    # The same request in a new process-like engine: the answer comes from the saved memory.
    second = session_engine(models, str(store))
    assert "tokens from" in second.info.notes[0]
    again = run(second, prompt=PROMPT, max_tokens=32)
    recalled = again.stats.accepted_by_drafter.get("session", 0)
    assert recalled >= 24, again.stats.to_dict()

    # An engine that keeps nothing has only the prompt to draft from.
    fresh = session_engine(models, "")
    assert fresh.info.notes == ()
    plain = run(fresh, prompt=PROMPT, max_tokens=32)
    assert plain.stats.accepted_by_drafter.get("session", 0) < recalled - 8


def test_nothing_is_written_unless_asked(models, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run(session_engine(models, ""), remember=CODE)
    assert list(tmp_path.iterdir()) == []


def test_a_corrupt_store_is_ignored_with_a_note_and_replaced_on_exit(models, tmp_path):
    store = tmp_path / "session.npz"
    store.write_bytes(b"PK\x03\x04 this is not a store")
    eng = session_engine(models, str(store))
    assert "is not a specterm session store" in eng.info.notes[0] and "overwritten on exit" in eng.info.notes[0]
    assert eng.decoder.drafter.memory.tokens <= 1  # empty
    run(eng, remember=CODE)
    assert "tokens from" in session_engine(models, str(store)).info.notes[0]  # now a good one


def test_a_store_written_for_another_vocabulary_is_not_used(models, tmp_path):
    store = tmp_path / "session.npz"
    SessionStore(store, vocab="another-model").save(np.arange(100, 400, dtype=np.int32))
    eng = session_engine(models, str(store))
    try:
        assert "another model's vocabulary" in eng.info.notes[0]
        assert eng.decoder.drafter.memory.tokens <= 1
    finally:
        eng.close_sync()


def test_a_store_that_cannot_be_written_is_logged_not_raised(models, tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    eng = session_engine(models, str(blocker / "session.npz"))  # its folder cannot be made
    with caplog.at_level(logging.WARNING, logger="specterm"):
        run(eng, remember=CODE)
    assert any("session memory not saved" in r.getMessage() for r in caplog.records)


def test_held_text_round_trips_into_an_index_of_another_size_with_documents_apart():
    a = NgramIndex(1 << 16, ngrams=(2, 3))
    a.add_document([1, 2, 3, 4])
    a.add_document([3, 4, 9, 9])
    b = NgramIndex(1 << 18, ngrams=(2,))
    b.add_text(a.held_text())
    assert [c.continuation for c in b.lookup([7, 3, 4], 8)] == [[9, 9]]  # "3 4" ends document one
    assert b.lookup([1, 2], 8)[0].continuation == [3, 4]


def test_forget_session_empties_the_memory_and_the_store_on_exit(models, tmp_path):
    store = tmp_path / "session.npz"
    run(session_engine(models, str(store)), prompt=PROMPT, max_tokens=32)
    eng = session_engine(models, str(store))
    assert eng.decoder.drafter.memory.tokens > 32

    async def go():
        await eng.start()
        await eng.forget_session()
        held = eng.decoder.drafter.memory.tokens
        await eng.close()
        return held

    assert asyncio.run(go()) <= 1
    assert "0 tokens from" in session_engine(models, str(store)).info.notes[0]
