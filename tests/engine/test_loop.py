"""The speculative loop's bookkeeping on a real model: KV reuse, prefix reuse, stops, invariants."""

from __future__ import annotations

import pytest

from specterm.engine import ChatMessage, ChatRequest, GenerateRequest, SamplingSettings
from specterm.engine.drafters import LookupDrafter

PROMPT = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n"


def test_draft_model_never_decodes_an_accepted_token_twice(models, engine_factory):
    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=6, adaptive=False, p_min=0.0)
    drafter = eng.decoder.drafter
    _, _, stats = eng.run_request(GenerateRequest(prompt=PROMPT, max_tokens=40))
    n_prompt = stats.prompt_tokens
    rejected = stats.drafted - stats.accepted
    assert stats.drafted > 0 and stats.accepted > 0
    # Every position of prompt + output is decoded once; only rejected drafts add to that.
    assert n_prompt + stats.tokens - 1 <= drafter.decoded_tokens <= n_prompt + stats.tokens + rejected


def test_prefix_reuse_decodes_only_the_new_suffix(models, engine_factory):
    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=4, adaptive=False, p_min=0.0)
    drafter = eng.decoder.drafter
    _, _, first = eng.run_request(GenerateRequest(prompt=PROMPT, max_tokens=8))
    assert first.prompt_tokens_decoded == first.prompt_tokens
    before = drafter.decoded_tokens
    extended = PROMPT + "    return a * b\n\n\ndef div(a, b):\n"
    _, _, second = eng.run_request(GenerateRequest(prompt=extended, max_tokens=8))
    n_common = len(eng.target.tokenize(PROMPT, add_special=True)) - 2  # the last tokens may merge
    assert second.prompt_tokens_decoded <= second.prompt_tokens - n_common
    assert second.prompt_tokens_decoded < second.prompt_tokens // 2
    # the draft model also resumes from its cache instead of re-reading the whole prompt
    assert drafter.decoded_tokens - before < second.prompt_tokens


def test_same_prompt_twice_reuses_everything_but_the_last_token(models, engine_factory):
    eng = engine_factory(models.demo, "none")
    _, _, a = eng.run_request(GenerateRequest(prompt=PROMPT, max_tokens=4))
    text_b, _, b = eng.run_request(GenerateRequest(prompt=PROMPT, max_tokens=4))
    assert b.prompt_tokens_decoded == 1
    text_c, _, _ = engine_factory(models.demo, "none").run_request(GenerateRequest(prompt=PROMPT, max_tokens=4))
    assert text_b == text_c  # reuse did not change the output


def test_token_limit_is_exact_and_invariant_holds(models, engine_factory):
    eng = engine_factory(models.demo, "lookup", draft_max=8, adaptive=False)
    for n in (1, 2, 7, 33):
        _, reason, stats = eng.run_request(GenerateRequest(prompt=PROMPT * 3, max_tokens=n))
        if reason == "length":
            assert stats.tokens == n
            assert stats.tokens == stats.accepted + stats.target_passes
        assert stats.tokens <= n


def test_stop_string_ends_generation_and_is_not_emitted(models, engine_factory):
    eng = engine_factory(models.demo, "lookup", draft_max=8, adaptive=False)
    full, _, _ = eng.run_request(GenerateRequest(prompt=PROMPT, max_tokens=40))
    assert "\n" in full.strip("\n"), full
    stop = "\n"
    pieces: list[str] = []
    text, reason, stats = eng.run_request(
        GenerateRequest(prompt=PROMPT, max_tokens=40, stop=(stop,)), on_text=pieces.append)
    assert reason == "stop"
    assert stop not in text
    assert "".join(pieces) == text
    assert full.startswith(text)


def test_eos_stops_before_the_token_limit(models, engine_factory):
    eng = engine_factory(models.demo, "none")
    chat = ChatRequest(messages=(ChatMessage("user", "Say yes."),), max_tokens=200)
    text, reason, stats = eng.run_request(chat)
    assert reason == "eos"
    assert stats.tokens < 200
    assert "<|im_end|>" not in text


def test_lookup_drafter_proposes_what_followed_the_last_match():
    d = LookupDrafter(1, 3)
    hist = [1, 2, 3, 4, 5, 9, 9, 1, 2, 3]
    import numpy as np

    draft = d.draft(hist, 3, SamplingSettings(), np.random.default_rng(0))
    assert draft.tokens == [4, 5, 9]
    # the index follows appended tokens and rebuilds when history is rewritten
    draft = d.draft(hist + [4, 5], 2, SamplingSettings(), np.random.default_rng(0))
    assert draft.tokens == [9, 9]
    draft = d.draft([7, 8, 7], 4, SamplingSettings(), np.random.default_rng(0))
    assert draft.tokens == [8, 7]
    assert d.draft([1, 2, 3], 4, SamplingSettings(), np.random.default_rng(0)).tokens == []


def test_stats_json_has_the_contract_fields(models, engine_factory):
    eng = engine_factory(models.demo, "none")
    _, _, stats = eng.run_request(GenerateRequest(prompt=PROMPT, max_tokens=5))
    d = stats.to_dict()
    for key in ("tokens", "drafted", "accepted", "acceptance", "target_passes", "tokens_per_pass",
                "tokens_per_second", "draft_max", "acceptance_by_position"):
        assert key in d
    assert d["acceptance"] is None  # nothing drafted: no made-up figure
    assert d["tokens_per_pass"] == pytest.approx(d["tokens"] / d["target_passes"])


def test_draft_model_reads_the_prompt_with_the_target(models, engine_factory):
    """So a probe after drafting was off never has to catch up on a whole new prompt."""
    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=0, adaptive=False)
    drafter = eng.decoder.drafter
    _, _, stats = eng.run_request(GenerateRequest(prompt=PROMPT, max_tokens=4))
    assert stats.drafted == 0
    assert drafter.decoded_tokens == stats.prompt_tokens
    assert drafter.cached == eng.target.tokenize(PROMPT, add_special=True)
