"""Threads: the app's decoder leaves its UI a core, prompts and drafts are read on every core."""

from __future__ import annotations

import os

import pytest

from specterm.engine import DraftSettings, EngineSettings, ModelSettings
from specterm.engine.llamacpp.local import LocalEngine

# Slow tier (tests/conftest.py): each test loads the model and decodes with a thread layout.
pytestmark = pytest.mark.slow


def load(models, **target) -> LocalEngine:
    t = ModelSettings(path=models.demo, ctx=512, **target)
    eng = LocalEngine(EngineSettings(target=t, draft=DraftSettings(kind="model", model=t)))
    eng.load()
    return eng


def test_spare_cores_come_off_decoding_only(models):
    cores = os.cpu_count() or 2
    eng = load(models, spare_cores=1)
    try:
        assert eng.target.threads == (max(1, cores - 1), cores)
        assert eng.decoder.drafter.model.threads == (max(1, cores - 1), cores)
    finally:
        eng.close_sync()


def test_explicit_threads_win_over_spare_cores(models):
    eng = load(models, threads=3, threads_batch=1, spare_cores=1)
    try:
        assert eng.target.threads == (3, 1)
    finally:
        eng.close_sync()
