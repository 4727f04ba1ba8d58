"""The session drafter (issue 13): its index returns what it was fed, stays within its memory cap
however long the session, and speculation with it (alone or in a hybrid with a draft model) says
exactly what the target says: greedy output equals plain output (divergence only at near-ties)
and sampled output keeps the target's distribution."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from specterm.engine import (
    DraftSettings,
    EngineSettings,
    GenerateRequest,
    ModelSettings,
    SamplingSettings,
    SpeculativeSettings,
    Stats,
)
from specterm.engine.llamacpp.local import LocalEngine
from specterm.engine.llamacpp.model import LlamaModel
from specterm.engine.session_drafter import SessionDrafter
from specterm.engine.session_index import NgramIndex, best_continuation
from specterm.engine.settings import SamplingSettings as Sampling

from test_fidelity import PROMPTS, assert_faithful, plain_trace
from test_sampling import PROMPT, SAMPLING, chi2_critical, chi2_gof, exact_second_token

# Slow tier (tests/conftest.py): the tests generate with the demo model, some sample whole distributions.
pytestmark = pytest.mark.slow

GREEDY = Sampling()
CODE = '''\
class Inventory:
    def __init__(self):
        self.items = {}

    def add_item(self, name, quantity):
        self.items[name] = self.items.get(name, 0) + quantity

    def remove_item(self, name, quantity):
        if self.items.get(name, 0) < quantity:
            raise ValueError(f"not enough {name}")
        self.items[name] -= quantity
'''


@pytest.fixture(scope="module")
def vocab(models):
    m = LlamaModel.load(ModelSettings(path=models.demo, ctx=512), vocab_only=True)
    yield m
    m.close()


def engine(models, kind: str, *, hybrid: bool = False, session_mb: int = 32, **spec) -> LocalEngine:
    draft_model = ModelSettings(path=models.draft_q4, ctx=2048) if kind == "model" else None
    eng = LocalEngine(EngineSettings(
        target=ModelSettings(path=models.demo, ctx=2048),
        draft=DraftSettings(kind=kind, model=draft_model, hybrid=hybrid, session_mb=session_mb),
        speculative=SpeculativeSettings(**spec)))
    eng.load()
    return eng


# -- the index -----------------------------------------------------------------------------------
def test_a_remembered_file_is_drafted_back_token_by_token(vocab):
    toks = vocab.tokenize(CODE, add_special=False)
    d = SessionDrafter(memory_mb=8)
    d.remember(toks)
    cut = toks.index(vocab.tokenize(" remove", add_special=False)[0])  # "def remove_item" begins
    history = vocab.tokenize("# the user types it again\n", add_special=False) + toks[:cut + 1]
    out = d.draft(history, 12, GREEDY, np.random.default_rng(0))
    assert out.tokens == toks[cut + 1 : cut + 1 + len(out.tokens)]
    assert len(out.tokens) >= 8, f"a long match should draft far, got {len(out.tokens)} tokens"


def test_no_draft_from_an_empty_memory_and_nothing_crosses_a_document_boundary():
    idx = NgramIndex(1 << 16, ngrams=(2, 3))
    assert idx.lookup([5, 6, 7], 4) == []
    idx.add_document([1, 2, 3, 4])
    idx.add_document([3, 4, 9, 9])
    found = idx.lookup([7, 3, 4], 8)  # "3 4" ends the first document: only the second continues it
    assert [c.continuation for c in found] == [[9, 9]]
    assert idx.lookup([1, 2], 8)[0].continuation == [3, 4]  # stops at the document's end


def test_the_continuation_most_occurrences_agree_on_wins():
    idx = NgramIndex(1 << 16, ngrams=(2,))
    for tail in ([7, 7], [8, 8], [7, 7]):
        idx.add_document([1, 2, *tail])
    cands = idx.lookup([0, 1, 2], 4)
    assert len(cands) >= 2
    tokens, match = best_continuation(cands, 4)
    assert tokens == [7, 7] and match == 2


def test_the_continuations_the_vote_passed_over_are_offered_as_branches():
    d = SessionDrafter(memory_mb=8)
    for tail in ([7, 7, 7], [8, 8, 8], [7, 7, 7]):
        d.remember([1, 2, 3, *tail])
    draft = d.draft([0, 1, 2, 3], 3, Sampling(), np.random.default_rng(0))
    assert draft.tokens and draft.tokens[0] == 7
    assert draft.branches and all(b[0] == 8 for b in draft.branches)  # the other occurrence, once
    assert len(draft.branches) == len(draft.branch_matches) == 1


def test_memory_stays_under_its_cap_through_a_long_session():
    cap = 1 << 18
    idx = NgramIndex(cap)
    size = idx.nbytes
    assert size <= cap
    rng = np.random.default_rng(0)
    first = rng.integers(0, 30000, 800).tolist()
    idx.add_document(first)
    assert idx.lookup(first[:40], 6)[0].continuation == first[40:46]
    for _ in range(120):  # 7x what the ring holds
        idx.add_document(rng.integers(0, 30000, 2000).tolist())
        assert idx.nbytes == size and idx.tokens <= idx.capacity
    assert idx.end > 5 * idx.capacity
    last = rng.integers(0, 30000, 800).tolist()
    idx.add_document(last)
    assert idx.lookup(last[:40], 6)[0].continuation == last[40:46]  # the newest text is there ...
    stale = idx.lookup(first[:40], 6)
    assert all(c.match_len < 8 for c in stale)  # ... the oldest was evicted, never proposed


def test_the_table_grows_with_the_text_and_keeps_what_it_held():
    idx = NgramIndex(32 << 20, ngrams=(2, 3, 4))
    rng = np.random.default_rng(1)
    docs = [rng.integers(0, 5000, 3000).tolist() for _ in range(40)]
    empty = idx.table_bytes
    idx.add_document(docs[0])
    small = idx.table_bytes
    assert small <= 1 << 20  # one file's worth, not the cap's share (8 MB here)
    for doc in docs[1:]:
        idx.add_document(doc)
    assert small < idx.table_bytes <= idx.nbytes  # rebuilt larger on the way
    for doc in docs:  # what was indexed before each rebuild is still found ...
        assert idx.lookup(doc[100:140], 6)[0].continuation == doc[140:146]
    for a, b in zip(docs, docs[1:]):  # ... and still stops at document boundaries
        assert all(c.continuation[:3] != b[:3] for c in idx.lookup(a[-3:], 3))
    idx.clear()
    assert idx.table_bytes == empty < small and not idx.lookup(docs[0][100:140], 6)


def test_a_whole_file_in_one_call_gets_a_table_sized_for_it():
    """A file is indexed in one call (the app remembers it when opened): the table grows for it
    before indexing, so what it holds is found, instead of most of it being overwritten in the
    first small table and the table growing one step per later append."""
    idx = NgramIndex(32 << 20, ngrams=(2, 3, 4))
    rng = np.random.default_rng(2)
    doc = rng.integers(0, 5000, 40_000).tolist()
    idx.add_document(doc)
    assert 40_000 * 3 * 4 <= idx.table_bytes <= 40_000 * 3 * 4 * 4  # load between 1/4 and 1/2
    starts = range(50, 39_000, 400)
    found = sum(bool(idx.lookup(doc[s - 4:s], 4)) and idx.lookup(doc[s - 4:s], 4)[0].continuation
                == doc[s:s + 4] for s in starts)
    assert found >= 0.8 * len(starts), found
    size = idx.table_bytes
    idx.extend(rng.integers(0, 5000, 8).tolist())  # a short append does not rebuild it again
    assert idx.table_bytes == size


def test_bad_memory_caps_are_refused():
    with pytest.raises(ValueError, match="positive memory cap"):
        SessionDrafter(memory_mb=0)
    with pytest.raises(ValueError, match="at least 1 KiB"):
        NgramIndex(100)


# -- fidelity on the real model ------------------------------------------------------------------
@pytest.fixture(scope="module")
def traces(models):
    return {p: plain_trace(models.demo, p, 48) for p in PROMPTS}


@pytest.mark.parametrize("hybrid", [False, True])
def test_greedy_output_equals_plain_output(models, traces, hybrid):
    eng = engine(models, "model" if hybrid else "session", hybrid=hybrid,
                 draft_max=8, adaptive=False, p_min=0.0)
    try:
        by: Counter = Counter()
        total = Stats()
        for _ in range(2):  # the second round drafts from the session's memory of the first
            for prompt in PROMPTS:
                result = eng.run(GenerateRequest(prompt=prompt, max_tokens=48))
                plain, gaps = traces[prompt]
                assert_faithful(plain, gaps, result.tokens, f"session hybrid={hybrid} / {prompt[:30]!r}")
                by.update(result.stats.accepted_by_drafter)
                total.merge(result.stats)
                if result.reason == "length":
                    assert result.stats.tokens == result.stats.accepted + result.stats.target_passes
        assert by["session"] > 20, f"the session's memory was hardly used: {dict(by)}"
        if hybrid:
            assert by["model"] > 0, f"the hybrid never used its draft model: {dict(by)}"
        share = total.drafter_share
        assert share and abs(sum(share.values()) - 1.0) < 1e-9
    finally:
        eng.close_sync()


@pytest.mark.parametrize("hybrid", [False, True])
def test_sampled_output_keeps_the_target_distribution(models, hybrid):
    eng = engine(models, "model" if hybrid else "session", hybrid=hybrid,
                 draft_max=4, adaptive=False, p_min=0.0)
    try:
        seconds: dict[int, Counter] = {}
        drafted = 0
        # A derived draft reads its target's cache, so its full-context drafts are cheap and often
        # chosen over the session's: the hybrid needs more requests to draft enough from memory.
        for seed in range(500 if hybrid else 300):
            s = SamplingSettings(seed=seed, **SAMPLING)
            result = eng.run(GenerateRequest(prompt=PROMPT, max_tokens=3, sampling=s))
            drafted += result.stats.drafted_by_drafter.get("session", 0)
            if len(result.tokens) >= 2:
                seconds.setdefault(result.tokens[0], Counter())[result.tokens[1]] += 1
        assert drafted >= 75, "the session's memory rarely drafted: the test would prove nothing"
        first, counts = max(seconds.items(), key=lambda kv: sum(kv[1].values()))
        n = sum(counts.values())
        assert n >= 60
        stat, df = chi2_gof(counts, exact_second_token(models.demo, first), n)
        assert stat < chi2_critical(df), f"chi2={stat:.1f}, df={df} (hybrid={hybrid})"
    finally:
        eng.close_sync()


def test_remember_feeds_the_index_on_the_worker_and_later_requests_draft_from_it(models):
    import asyncio

    eng = engine(models, "session", draft_max=8, adaptive=False)

    async def go():
        await eng.start()
        await eng.remember(CODE)  # returns at once: indexing is queued on the worker
        prompt = CODE[: CODE.index("def remove_item") + len("def remove_item")]
        async for ev in eng.stream(GenerateRequest(prompt="# again\n" + prompt, max_tokens=24)):
            last = ev
        await eng.close()
        return last

    try:
        last = asyncio.run(go())
        assert last.stats.accepted_by_drafter.get("session", 0) >= 8, last.stats.to_dict()
    finally:
        eng.close_sync()


def test_a_huge_text_is_remembered_up_to_the_engines_cap(models, vocab):
    """A multi-megabyte file opened in the app would keep the worker tokenizing for seconds (a
    completion waits behind it): the engine indexes its start only."""
    import asyncio

    from specterm.engine.llamacpp.local import REMEMBER_MAX_CHARS

    line = "value_{} = compute(value_{}, {})\n"
    text = "".join(line.format(i, i - 1, i * 7) for i in range(REMEMBER_MAX_CHARS // 20))
    assert len(text) > 1.5 * REMEMBER_MAX_CHARS
    eng = engine(models, "session", draft_max=8, adaptive=False)

    async def go():
        await eng.start()
        await eng.remember(text)
        async for _ in eng.stream(GenerateRequest(prompt="x = 1", max_tokens=1)):
            pass  # the worker runs jobs in order: the text is indexed once this request is done
        held = eng.decoder.drafter.memory.tokens
        await eng.close()
        return held

    try:
        held = asyncio.run(go())
        head = len(vocab.tokenize(text[:REMEMBER_MAX_CHARS], add_special=False))
        assert head <= held <= head + 8, (held, head)
    finally:
        eng.close_sync()


def _pair_policy():
    from specterm.engine.policy import DraftPolicy

    policy = DraftPolicy(SpeculativeSettings(draft_max=16), free_part=True)
    for n, t in ((1, 0.010), (2, 0.012), (3, 0.013), (5, 0.015), (9, 0.019), (17, 0.027)) * 2:
        policy.costs.observe_verify(n, t)  # (twice: a size's first pass is a warm-up, not counted)
    return policy


def test_the_hybrid_sends_a_long_free_guess_whole_or_cuts_it_by_its_match_length():
    """The policy's k is what pays for the draft model; a free guess may run past it (up to the
    room the loop allows) when its match length has held, and is cut short when it has not."""
    policy = _pair_policy()
    for g, t in ((1, 0.004), (3, 0.009)):
        policy.costs.observe_draft(g, t)
    for _ in range(40):
        policy.observe_guess(6, 4, 4)  # 6-token matches held
        policy.observe_guess(1, 4, 0)  # 1-token matches failed at once
    assert policy.split(12, 3, lag=0, match=6) == (12, 0)  # a long match that holds: the whole guess
    n_free, n_model = policy.split(12, 3, lag=0, match=1)  # a short match that fails: cut, or the model's
    assert n_free < 4 and n_free + n_model <= 12


def test_a_guess_the_hybrid_did_not_send_is_judged_by_what_the_target_wrote(vocab):
    """A match length starts at acceptance 1/2, and beside a draft model that agrees 99 % of the
    time that never pays: the guess would never be sent, and never learn. So a guess not sent is
    compared with what the target wrote in its place, and the policy learns how it would have
    done (a mismatch only where it is seen)."""

    policy = _pair_policy()
    for g, t in ((1, 0.0001), (3, 0.0003)):  # a nearly free draft model: it is chosen
        policy.costs.observe_draft(g, t)
    text = vocab.tokenize("def area(width, height):\n    return width * height\n\n\n"
                          "def perimeter(width, height):\n    return 2 * (width + height)\n",
                          add_special=False)
    prompt = text + text[:6]  # the text starts again: the session guesses how it went on
    guess = SessionDrafter(memory_mb=8).draft(prompt, 4, Sampling(), np.random.default_rng(0))
    assert guess.tokens == text[6:10] and guess.match >= 6
    for _ in range(4):  # guesses at this match length have failed at once
        policy.observe_guess(guess.match, 1, 0)
    assert policy.split(len(guess.tokens), 4, lag=0, match=guess.match) == (0, 4)  # the model's
    before = policy.acceptance_for(guess.match)
    policy.not_sent(guess, len(prompt), "free")
    policy.judge(prompt + text[6:8])  # two written, both as guessed: not decided yet
    assert policy.acceptance_for(guess.match) == before
    policy.judge(prompt + text[6:10])  # all four as guessed
    held = policy.acceptance_for(guess.match)
    assert held > before
    policy.not_sent(guess, len(prompt), "free")
    other = vocab.tokenize(" # none", add_special=False)
    policy.judge(prompt + other[:1])  # and now something else at once
    assert policy.acceptance_for(guess.match) < held


def test_a_remembered_text_is_tokenized_in_line_pieces_that_join_back_to_it():
    """llama.cpp's tokenizer holds tens of MB for a long text at once; the engine feeds it pieces
    cut after a line break (a line longer than two pieces is cut inside)."""
    from specterm.engine.llamacpp.local import line_pieces

    text = "".join(f"line {i} " + "x" * (i % 50) + "\n" for i in range(3000)) + "y" * 500
    pieces = list(line_pieces(text, 1000))
    assert "".join(pieces) == text
    assert all(p.endswith("\n") for p in pieces[:-1]) and 1000 <= len(pieces[0]) < 2000
    long = "z" * 5000
    assert [len(p) for p in line_pieces(long, 1000)] == [1000] * 5  # no line break: cut at the size
    assert list(line_pieces("", 1000)) == [] and list(line_pieces("a\n", 1000)) == ["a\n"]
