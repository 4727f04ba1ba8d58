"""Engines on the real demo model, shared per module where loading time matters."""

from __future__ import annotations

import pytest

from specterm.engine import DraftSettings, EngineSettings, ModelSettings, SpeculativeSettings
from specterm.engine.llamacpp.local import LocalEngine

CTX = 2048


def make_engine(target: str, draft: str = "none", draft_path: str | None = None, **spec) -> LocalEngine:
    ds = DraftSettings(kind=draft, model=ModelSettings(path=draft_path, ctx=CTX) if draft_path else None)
    eng = LocalEngine(EngineSettings(target=ModelSettings(path=target, ctx=CTX), draft=ds,
                                     speculative=SpeculativeSettings(**spec)))
    eng.load()
    return eng


@pytest.fixture
def engine_factory():
    made: list[LocalEngine] = []

    def factory(*args, **kwargs) -> LocalEngine:
        eng = make_engine(*args, **kwargs)
        made.append(eng)
        return eng

    yield factory
    for eng in made:
        eng.close_sync()
