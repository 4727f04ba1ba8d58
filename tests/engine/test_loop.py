"""The speculative loop's bookkeeping on a real model: KV reuse, prefix reuse, stops, invariants."""

from __future__ import annotations

import pytest

from specterm.engine import ChatMessage, ChatRequest, GenerateRequest, SamplingSettings
from specterm.engine.drafters import LookupDrafter

PROMPT = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n"


def draft_decodes(stats) -> int:
    """Positions the draft model filled: its catch-ups and the positions it copied from the
    target (a derived draft), plus every draft token but the last of each draft (the last needs
    no logits). p_min = 0 never stops a draft short."""
    return (stats.draft_catchup_tokens + stats.draft_adopted_tokens + stats.num_draft_tokens
            - stats.num_drafts)


def test_draft_model_never_decodes_an_accepted_token_twice(models, engine_factory):
    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=6, adaptive=False, p_min=0.0)
    stats = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=40)).stats
    n_prompt = stats.prompt_tokens
    rejected = stats.drafted - stats.accepted
    assert stats.drafted > 0 and stats.accepted > 0
    # Every position of prompt + output is decoded once; only rejected drafts add to that.
    assert n_prompt + stats.tokens - 1 <= draft_decodes(stats) <= n_prompt + stats.tokens + rejected
    # the counts the bench prices the draft model's work by: one read a draft, then a decode for
    # every draft token but the last
    assert stats.draft_reads == stats.num_drafts
    assert stats.draft_decodes == stats.num_draft_tokens - stats.num_drafts


def test_a_draft_that_stops_at_p_min_counts_the_decode_that_stopped_it(models, engine_factory):
    """A confident-only draft (p_min 0.9) stops short, having decoded its last token to see the
    next one's probability: that decode is work too, and a read that drafted nothing still read."""
    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=6, adaptive=False, p_min=0.9)
    stats = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=40)).stats
    assert stats.draft_reads >= stats.num_drafts > 0
    assert stats.num_draft_tokens - stats.num_drafts <= stats.draft_decodes <= stats.num_draft_tokens
    assert stats.draft_catchup_tokens >= stats.draft_reads


def reading_for_itself(eng) -> None:
    """Make the draft read text itself, as a draft of another model (not a derived copy of the
    target, so it cannot use the target's cache) does."""
    eng.decoder.drafter.source = None


def test_prefix_reuse_decodes_only_the_new_suffix(models, engine_factory):
    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=4, adaptive=False, p_min=0.0)
    reading_for_itself(eng)
    first = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=8)).stats
    assert first.prompt_tokens_decoded == first.prompt_tokens
    assert first.draft_catchup_tokens >= first.prompt_tokens  # the draft read the prompt once
    assert first.draft_adopted_tokens == 0
    extended = PROMPT + "    return a * b\n\n\ndef div(a, b):\n"
    second = eng.run(GenerateRequest(prompt=extended, max_tokens=8)).stats
    n_common = len(eng.target.tokenize(PROMPT, add_special=True)) - 2  # the last tokens may merge
    assert second.prompt_tokens_decoded <= second.prompt_tokens - n_common
    assert second.prompt_tokens_decoded < second.prompt_tokens // 2
    # the draft model also resumes from its cache instead of re-reading the whole prompt
    assert 0 < second.draft_catchup_tokens < second.prompt_tokens - n_common + 8


def test_same_prompt_twice_reuses_everything_but_the_last_token(models, engine_factory):
    eng = engine_factory(models.demo, "none")
    eng.run(GenerateRequest(prompt=PROMPT, max_tokens=4))
    result = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=4))
    text_b, b = result.text, result.stats
    assert b.prompt_tokens_decoded == 1
    text_c = engine_factory(models.demo, "none").run(GenerateRequest(prompt=PROMPT, max_tokens=4)).text
    assert text_b == text_c  # reuse did not change the output


def test_token_limit_is_exact_and_invariant_holds(models, engine_factory):
    eng = engine_factory(models.demo, "lookup", draft_max=8, adaptive=False)
    for n in (1, 2, 7, 33):
        result = eng.run(GenerateRequest(prompt=PROMPT * 3, max_tokens=n))
        reason, stats = result.reason, result.stats
        if reason == "length":
            assert stats.tokens == n
            assert stats.tokens == stats.accepted + stats.target_passes
        assert stats.tokens <= n


def test_stop_string_ends_generation_and_is_not_emitted(models, engine_factory):
    eng = engine_factory(models.demo, "lookup", draft_max=8, adaptive=False)
    full = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=40)).text
    assert "\n" in full.strip("\n"), full
    stop = "\n"
    pieces: list[str] = []
    result = eng.run(
        GenerateRequest(prompt=PROMPT, max_tokens=40, stop=(stop,)), on_text=pieces.append)
    text, reason = result.text, result.reason
    assert reason == "stop"
    assert stop not in text
    assert "".join(pieces) == text
    assert full.startswith(text)


def test_eos_stops_before_the_token_limit(models, engine_factory):
    eng = engine_factory(models.demo, "none")
    chat = ChatRequest(messages=(ChatMessage("user", "Say yes."),), max_tokens=200)
    result = eng.run(chat)
    text, reason, stats = result.text, result.reason, result.stats
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


def test_lookup_drafter_keeps_following_the_copy_it_drafted_from():
    """Two runs of the input share a 4-gram (3 4 5 6): once the output follows the first run, the
    draft continues that run, not the latest place the 4-gram occurred (the second run)."""
    import numpy as np

    d = LookupDrafter(1, 4)
    s, rng = SamplingSettings(), np.random.default_rng(0)
    prompt = [0, 1, 2, 3, 4, 5, 6, 7, 8, 99, 1, 2, 3, 4, 5, 6, 7, 9, 98]
    assert d.draft(prompt + [0, 1], 8, s, rng).tokens == [2, 3, 4, 5, 6, 7, 8, 99]
    # the target took 4 of them and wrote the 5th itself, as the run has it
    followed = d.draft(prompt + [0, 1, 2, 3, 4, 5, 6], 3, s, rng)
    # credited with the whole agreement behind it (0 1 2 3 4 5 6), not the index's 4-gram cap
    assert followed.tokens == [7, 8, 99] and followed.match == 7
    # a fresh drafter with the same history only has the index: the latest occurrence's text
    assert LookupDrafter(1, 4).draft(prompt + [0, 1, 2, 3, 4, 5, 6], 3, s, rng).tokens == [7, 9, 98]
    # the output left the run (an edit): the index anchors again
    assert d.draft(prompt + [0, 1, 2, 3, 4, 5, 6, 7, 9], 2, s, rng).tokens == [98, 0]


def test_stats_json_has_the_contract_fields(models, engine_factory):
    eng = engine_factory(models.demo, "none")
    stats = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=5)).stats
    d = stats.to_dict()
    for key in ("tokens", "drafted", "accepted", "acceptance", "target_passes", "tokens_per_pass",
                "tokens_per_second", "draft_max", "acceptance_by_position"):
        assert key in d
    assert d["acceptance"] is None  # nothing drafted: no made-up figure
    assert d["tokens_per_pass"] == pytest.approx(d["tokens"] / d["target_passes"])


def test_draft_model_reads_nothing_while_drafting_is_off(models, engine_factory):
    """Catch-up is lazy: a draft model reads the prompt only when a draft is asked for."""
    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=0, adaptive=False)
    reading_for_itself(eng)
    stats = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=4)).stats
    assert stats.drafted == 0 and stats.num_drafts == 0
    assert stats.draft_catchup_tokens == 0 and stats.draft_catchup_time_s == 0.0
    # the same drafter, asked to draft, reads the whole prompt (and the output so far) first
    on = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=4), fixed_draft=2).stats
    assert on.num_drafts > 0
    assert on.draft_catchup_tokens >= on.prompt_tokens
    assert on.draft_catchup_time_s > 0.0


def test_a_derived_draft_copies_the_targets_cache_instead_of_reading(models, engine_factory):
    """The Q4_0 copy of the demo target has the target's tensors and shapes, so its first draft
    takes the target's keys and values for the prompt (a copy of a few milliseconds) and decodes
    only the newest token; nothing is read or copied while drafting is off, and speculative
    output stays the target's own."""
    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=0, adaptive=False)
    off = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=4)).stats
    assert off.draft_adopted_tokens == 0 and off.draft_catchup_tokens == 0
    plain = eng.run(GenerateRequest(prompt=PROMPT * 3, max_tokens=24)).text
    on = eng.run(GenerateRequest(prompt=PROMPT * 3, max_tokens=24), fixed_draft=3)
    s = on.stats
    assert s.num_drafts > 0 and s.accepted > 0
    assert s.draft_adopted_tokens >= s.prompt_tokens - 1  # the prompt came from the target
    assert s.draft_catchup_tokens < s.num_drafts * 3  # it decoded only what each pass emitted
    assert on.text == plain
    # the same drafter reading for itself decodes the whole prompt
    reading_for_itself(eng)
    eng.decoder.drafter.forget()
    again = eng.run(GenerateRequest(prompt=PROMPT * 3 + "\n", max_tokens=8), fixed_draft=3).stats
    assert again.draft_adopted_tokens == 0 and again.draft_catchup_tokens >= again.prompt_tokens


def test_only_a_derived_copy_is_given_the_targets_cache(models, engine_factory):
    """The catalogue's check decides: same tensor names and shapes in another type. A draft that
    is the same file type (here the demo with other metadata) reads for itself."""
    derived = engine_factory(models.demo, "model", models.draft_q4, draft_max=2, adaptive=False)
    assert derived.decoder.drafter.source is derived.target
    other = engine_factory(models.demo, "model", models.fim, draft_max=2, adaptive=False)
    assert other.decoder.drafter.source is None
    stats = other.run(GenerateRequest(prompt=PROMPT, max_tokens=6), fixed_draft=2).stats
    assert stats.num_drafts > 0 and stats.draft_adopted_tokens == 0
    assert stats.draft_catchup_tokens >= stats.prompt_tokens


def test_stats_carry_the_telemetry_names_users_know(models, engine_factory):
    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=3, adaptive=False, p_min=0.0)
    stats = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=24)).stats
    d = stats.to_dict()
    assert d["num_drafts"] == stats.num_drafts > 0
    assert d["num_draft_tokens"] == stats.drafted and d["num_accepted_tokens"] == stats.accepted
    assert d["mean_acceptance_length"] == pytest.approx(1 + stats.accepted / stats.num_drafts)
    assert len(d["acceptance_by_position"]) == 3
    assert 0 < d["time_to_first_token_s"] and d["probes"] == 0  # fixed length: nothing forced
    assert d["draft_catchup_time_s"] <= d["draft_time_s"]
    # a pass verifies one draft at most, and the prompt pass drafts nothing
    assert stats.num_drafts <= stats.target_passes - 1


def test_costs_learned_in_one_request_carry_to_the_next(models, engine_factory):
    """Costs are the pair's and the machine's: a fixed-length run measures t_d and t_v(2) for the
    adaptive controller, and a new request keeps them (only acceptance evidence is discounted)."""
    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=4, p_min=0.0)
    costs = eng.decoder.policy.costs
    assert costs.draft_token is None and not costs.verify
    fixed = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=12), fixed_draft=1).stats
    assert fixed.num_drafts > 0
    assert costs.draft_token is not None and 2 in costs.verify  # every pass drafted
    learned = dict(costs.verify)
    adaptive = eng.run(GenerateRequest(prompt=PROMPT + "    return a * b\n", max_tokens=12)).stats
    assert set(learned) <= set(eng.decoder.policy.costs.verify)
    assert adaptive.probes <= 1  # at most the request's early probe: no first measurement needed


def test_a_probe_reads_only_recent_text_and_drafting_for_real_reads_the_window(models, engine_factory):
    """A probe's draft (window=PROBE_WINDOW) catches up on the first tokens and the last few
    only; the next draft for real rebuilds the view over the whole window, and `lag` says so
    before it happens (the controller prices both from it)."""
    import numpy as np

    from specterm.engine.policy import PROBE_WINDOW

    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=4, adaptive=False, p_min=0.0)
    drafter = eng.decoder.drafter
    history = eng.target.tokenize(PROMPT * 12, add_special=True)
    head = drafter.head
    assert len(history) > head + PROBE_WINDOW + 50
    greedy, rng = SamplingSettings(temperature=0.0), np.random.default_rng(0)
    assert drafter.lag(history, PROBE_WINDOW) == head + PROBE_WINDOW
    probe = drafter.draft(history, 2, greedy, rng, PROBE_WINDOW)
    assert probe.catchup_tokens == head + PROBE_WINDOW and len(probe.tokens) == 2
    drafter.accept(0)
    full = min(len(history), head + drafter.window)
    assert drafter.lag(history) == full and drafter.lag(history, PROBE_WINDOW) <= 2
    real = drafter.draft(history, 2, greedy, rng)
    assert real.catchup_tokens == full
    drafter.accept(0)
    assert drafter.lag(history + real.tokens[:1]) == 1  # now it only reads what is new


def test_lookup_offers_other_occurrences_as_branches_longest_match_first():
    import numpy as np

    from specterm.engine.drafters import distinct_branches

    s, rng = SamplingSettings(), np.random.default_rng(0)
    # "5 6" is followed by 7 8 9 (twice, the latest at the end) and by 1 2 3 once
    text = [5, 6, 1, 2, 3, 40, 4, 5, 6, 7, 8, 9, 41, 42, 5, 6, 7, 8, 9, 43, 5, 6]
    d = LookupDrafter(1, 4).draft(text, 4, s, rng)
    assert d.tokens == [7, 8, 9, 43]
    assert [7, 8, 9, 41] in d.branches and [1, 2, 3, 40] in d.branches
    assert len(d.branches) == len(d.branch_matches) and all(m >= 1 for m in d.branch_matches)
    # the same continuation as the draft, or one it covers, is no branch
    assert distinct_branches([1, 2, 3], [(3, 10, [1, 2, 3]), (2, 9, [1, 2]), (2, 8, [1, 4])]) == ([[1, 4]], [2])
