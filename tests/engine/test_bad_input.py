"""Bad input gets a clear, actionable error and leaves the process usable."""

from __future__ import annotations

import pytest

from specterm.engine import (
    ContextOverflowError,
    DraftSettings,
    EngineError,
    EngineSettings,
    GenerateRequest,
    ModelLoadError,
    ModelSettings,
    PairingError,
)
from specterm.engine.llamacpp.local import LocalEngine
from specterm.engine.llamacpp.model import LlamaModel


def load(target: str, draft_kind: str = "none", draft: str | None = None, ctx: int = 512) -> LocalEngine:
    eng = LocalEngine(EngineSettings(
        target=ModelSettings(path=target, ctx=ctx),
        draft=DraftSettings(kind=draft_kind, model=ModelSettings(path=draft, ctx=ctx) if draft else None)))
    eng.load()
    return eng


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(ModelLoadError, match="does not exist") as err:
        load(str(tmp_path / "nope.gguf"))
    assert "nope.gguf" in str(err.value)


def test_not_a_gguf(models):
    with pytest.raises(ModelLoadError, match="not a GGUF file"):
        load(models.not_gguf)


def test_truncated_gguf(models):
    with pytest.raises(ModelLoadError, match="could not load") as err:
        load(models.truncated)
    assert "truncated.gguf" in str(err.value)


def test_unsupported_architecture(models):
    with pytest.raises(ModelLoadError, match="nosucharch"):
        load(models.unknown_arch)


def test_vocab_mismatch_names_both_models_and_the_token(models):
    with pytest.raises(PairingError) as err:
        load(models.demo, "model", models.vocab_mismatch)
    msg = str(err.value)
    assert "mismatch.gguf" in msg and "SmolLM2" in msg and "token 1000" in msg


def test_draft_model_kind_without_a_path(models):
    with pytest.raises(ModelLoadError, match="no draft model path"):
        load(models.demo, "model", None)


def test_prompt_longer_than_the_context_then_engine_still_works(models):
    eng = load(models.demo, "lookup", ctx=256)
    try:
        with pytest.raises(ContextOverflowError, match="context"):
            eng.run(GenerateRequest(prompt="word " * 400, max_tokens=8))
        stats = eng.run(GenerateRequest(prompt="def f():", max_tokens=4)).stats
        assert stats.tokens >= 1
    finally:
        eng.close_sync()


@pytest.mark.slow
def test_generation_stops_at_the_context_end_instead_of_aborting(models):
    """Drafting right up to the end of the context (fixed lengths: the adaptive controller's choices
    depend on timing, and so, at near-ties, does the text), draft trees included: a tree's every
    node takes a KV cell, so near the end a pass that would not fit goes linear."""
    eng = load(models.demo, "lookup", ctx=128)
    try:
        for draft in (4, 16):
            result = eng.run(GenerateRequest(prompt="x " * 50, max_tokens=1000),
                                                  fixed_draft=draft)
            reason, stats = result.reason, result.stats
            assert reason == "length" and stats.drafted > 0
            assert stats.prompt_tokens + stats.tokens < eng.target.n_ctx  # llama.cpp may round ctx up
            assert stats.tree_passes > 0  # (the repeated text gives lookup branches to send)
    finally:
        eng.close_sync()


def test_model_too_large_for_memory(models):
    with pytest.raises(ModelLoadError, match="memory"):
        LlamaModel.load(ModelSettings(path=models.demo, ctx=50_000_000))


def test_errors_are_engine_errors_with_a_hint(tmp_path):
    try:
        load(str(tmp_path / "missing.gguf"))
    except EngineError as exc:
        assert exc.hint and "\n" in str(exc)


def test_vocab_only_models_answer_hyperparameters_without_aborting(models):
    """llama.cpp asserts (killing the process) on per-layer queries of a vocab-only load."""
    v = LlamaModel.load(ModelSettings(path=models.demo), vocab_only=True)
    f = LlamaModel.load(ModelSettings(path=models.demo, ctx=256))
    try:
        for name in ("n_layer", "n_ctx_train", "n_embd", "n_head", "n_head_kv"):
            assert getattr(v, name) == getattr(f, name) > 0
    finally:
        v.close()
        f.close()
