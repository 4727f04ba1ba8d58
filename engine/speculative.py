"""The speculative loop: draft, verify in one batched target pass, keep what the target would have
produced, repeat. With no draft it is plain decoding, token by token, through the same code.

Invariants (tests check them):
- the target's KV cache holds every emitted token except the newest ("pending") one;
- tokens == accepted + target_passes (the prompt pass counts: it yields the first token), unless a
  stop cut the last pass short;
- no draft token is emitted past a stop (end-of-generation token, stop string, token limit).
"""

from __future__ import annotations

import bisect
import codecs
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .costs import CostModel
from .draft_pair import DraftPair
from .drafters import Draft, Drafter, ModelDrafter, PassRecord, TreeOutcome, common_prefix
from .edit_drafter import EditDrafter, OriginalFollower, Prediction
from .errors import ContextOverflowError
from .model import Model
from .policy import FREE, PROBE_WINDOW, DraftPolicy, evidence_source
from .sampling import Verdict, distribution, is_greedy, sample, verify_greedy, verify_sampled
from .settings import SamplingSettings, SpeculativeSettings
from .stats import Stats
from .token_tree import TokenTree


class HealIndex:
    """Which tokens agree with text still to be healed: those that start with it, and those that
    are a prefix of it (the healed text then continues into the next token). A sorted piece list
    makes both range lookups instead of scans of the whole vocabulary (and it holds no
    per-token Python objects beyond the model's own pieces: a dict of pieces to id lists was ~8 MB
    for a 49k vocabulary)."""

    def __init__(self, pieces: list[bytes]) -> None:
        order = sorted(range(len(pieces)), key=pieces.__getitem__)
        self._sorted = [pieces[i] for i in order]
        self._ids = np.asarray(order, dtype=np.int32)
        self._n = len(pieces)
        self._pieces = pieces
        self._starts_blank = np.fromiter((p[:1] in (b" ", b"\t") for p in pieces), dtype=bool,
                                         count=len(pieces))

    def mask(self, heal: bytes, *, no_blank_after: bool = False) -> np.ndarray:
        """Tokens allowed while `heal` remains. With `no_blank_after`, the text after the healed
        bytes may not start with a space or tab (with an empty `heal`: the next token may not)."""
        if not heal:
            return ~self._starts_blank if no_blank_after else np.ones(self._n, dtype=bool)
        m = np.zeros(self._n, dtype=bool)
        lo = bisect.bisect_left(self._sorted, heal)
        upper = heal.rstrip(b"\xff")
        hi = (bisect.bisect_left(self._sorted, upper[:-1] + bytes([upper[-1] + 1]))
              if upper else len(self._sorted))
        ids: np.ndarray | list[int]
        ids = self._ids[lo:hi]
        if no_blank_after:
            n = len(heal)
            ids = [t for t in ids.tolist() if self._pieces[t][n : n + 1] not in (b" ", b"\t")]
        m[ids] = True
        for i in range(1, len(heal)):  # tokens that are exactly a proper prefix of `heal`
            piece = heal[:i]
            lo = bisect.bisect_left(self._sorted, piece)
            hi = bisect.bisect_right(self._sorted, piece, lo)
            if hi > lo:
                m[self._ids[lo:hi]] = True
        return m


def ranked_choice(logits: np.ndarray, rank: int, mask: np.ndarray | None = None) -> int:
    """The `rank`-th most likely token (0: the argmax) among those `mask` allows; the least likely
    allowed one when fewer are allowed."""
    scores = logits if mask is None else np.where(mask, logits, -np.inf)
    allowed = int(np.count_nonzero(np.isfinite(scores))) if mask is not None else len(scores)
    k = min(rank, max(allowed - 1, 0))
    top = np.argpartition(-scores, k)[: k + 1]
    return int(top[np.argsort(-scores[top], kind="stable")][k])


class TextStream:
    """Bytes in, text out: incremental UTF-8 decoding plus stop strings.

    Text that might be the start of a stop string is held back until it is clear; a stop string
    ends the stream and is not emitted.
    """

    def __init__(self, stop: tuple[str, ...]) -> None:
        self.stop = tuple(s for s in stop if s)
        self._dec = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = ""
        self.text = ""  # everything emitted
        self.stopped = False

    def feed(self, data: bytes) -> str:
        if self.stopped:
            return ""
        pending = self._held + self._dec.decode(data)
        for s in self.stop:
            i = pending.find(s)
            if i >= 0:
                self.stopped = True
                out = pending[:i]
                self._held = ""
                self.text += out
                return out
        hold = 0
        for s in self.stop:  # longest tail of `pending` that is a proper prefix of a stop string
            for k in range(min(len(s) - 1, len(pending)), 0, -1):
                if s.startswith(pending[-k:]):
                    hold = max(hold, k)
                    break
        out, self._held = (pending[:-hold], pending[-hold:]) if hold else (pending, "")
        self.text += out
        return out

    def flush(self) -> str:
        if self.stopped:
            return ""
        out = self._held + self._dec.decode(b"", final=True)
        self._held = ""
        self.text += out
        return out


@dataclass
class GenerationJob:
    """One generation on prepared tokens (the engine builds these from requests)."""

    prompt: list[int]
    max_tokens: int
    sampling: SamplingSettings
    stop: tuple[str, ...] = ()
    stop_tokens: frozenset[int] = frozenset()  # besides the target's end-of-generation tokens
    heal: bytes = b""  # the first token must start with these bytes; they are not emitted
    # The cursor sits at the end of the line's indentation: the text after the healed bytes may not
    # start with more blanks (the user's indentation wins; no " return" after four spaces).
    keep_indent: bool = False
    # Called with the text emitted so far; returns a finish reason to stop early, else None.
    check_text: Callable[[str], str | None] | None = None
    # Called once per pass; returns a finish reason ("cancelled", "time", ...) to stop, else None.
    should_stop: Callable[[], str | None] | None = None
    on_text: Callable[[str], None] | None = None
    on_stats: Callable[[Stats], None] | None = None
    fixed_draft: int | None = None  # bench sweeps: this draft length, adaptive off
    first_rank: int = 0  # the first token is the k-th most likely (an alternative suggestion)
    # Decode the prompt in pieces of this many tokens, asking stop_prefill between them (0: in
    # n_batch pieces, unstoppable): an editor's superseded completion stops within one piece
    # instead of holding every core through a long prompt while the user types. Cancellation
    # only: a time budget is checked from the first token on, as before.
    prefill_piece: int = 0
    stop_prefill: Callable[[], str | None] | None = None
    # An edit's region: the free proposer follows it first (engine/edit_drafter.py).
    prediction: Prediction | None = None


@dataclass
class GenerationResult:
    text: str
    reason: str
    stats: Stats
    tokens: list[int] = field(default_factory=list)


class SpeculativeDecoder:
    """Owns the target's KV cache across requests (prefix reuse) and runs the loop."""

    def __init__(self, target: Model, drafter: Drafter | DraftPair, spec: SpeculativeSettings) -> None:
        self.target = target
        self.spec = spec
        self.cached: list[int] = []  # tokens whose KV entries the target holds
        self._heal_index: HealIndex | None = None
        self.set_drafter(drafter)
        # Rows of every verify pass while drafting (0: each pass has its draft's length + 1).
        self.pad_rows = self._constant_shape(spec)
        self._last_rows = 0  # rows of the last target pass (a change of shape is no cost sample)
        # Trees need passes of their own shape, so not with constant-shape padding.
        self._trees = spec.tree and not self.pad_rows
        if self.pad_rows:
            self._calibrate_shape()

    def _constant_shape(self, spec: SpeculativeSettings) -> int:
        """draft_max + 1 where verify passes keep one shape (SpeculativeSettings.constant_shape)."""
        on = spec.constant_shape == "on" or (spec.constant_shape == "auto" and self.target.gpu_layers > 0)
        rows = min(spec.draft_max + 1, self.target.n_batch, self.target.n_ctx - 1)
        return rows if on and spec.draft_max > 0 and rows > 1 else 0

    def _calibrate_shape(self) -> None:
        """Seed t1 and t_v(pad_rows) with repeated passes of each shape (the steady state the
        loop is in while drafting stays on: on a GPU the captured graph replays from the third
        same-shaped pass). Without it the only samples of a padded pass would be probes, each
        a change of shape and so never steady."""
        t, rows = self.target, self.pad_rows
        tok = max(t.bos, 0)
        for n in (1, rows):
            times = []
            for _ in range(5):
                t.clear()
                t0 = time.perf_counter()
                t.decode([tok] * n, 0, logits_from=0)
                t.logits_rows(n)
                times.append(time.perf_counter() - t0)
            self.policy.costs.seed_verify(n, statistics.median(times[2:]))
        t.clear()
        self.cached = []
        self.policy.costs.shape = rows

    def set_drafter(self, drafter: Drafter | DraftPair) -> None:
        """Use `drafter` from the next request on. What verifying costs is the target's and
        carries over; what drafting costs and earns is the new drafter's to learn."""
        old = getattr(self, "policy", None)
        costs = CostModel()
        if old is not None:
            for n, t in sorted(old.costs.verify.items()):  # t1 first: the rest are its multiples
                costs.seed_verify(n, t)
            costs.shape = old.costs.shape
            costs.prompt_token = old.costs.prompt_token
        self.drafter = drafter
        free, model = drafter.parts()
        # A derived draft model alone starts from the agreement it is known to have; in a pair
        # its acceptance is learned from nothing, as the pair's split was tuned with.
        self.policy = DraftPolicy(self.spec, draft_is_free=model is None, costs=costs,
                                  prior=drafter.prior if isinstance(drafter, ModelDrafter) else (0.0, 0.0),
                                  free_part=free is not None and model is not None)

    def forget(self) -> None:
        """The models' KV caches were used by someone else (bench cost sampling): the next request
        decodes its prompt from scratch, and the drafter starts over."""
        self.cached = []
        self._last_rows = 0
        self.target.clear()
        self.drafter.forget()

    def rewind(self, n_keep: int) -> None:
        """Keep only the first n_keep tokens of the text in both caches (bench: every measured run
        starts from its prompt, as a new request does)."""
        if n_keep < len(self.cached):
            if self.target.trim(n_keep):
                del self.cached[n_keep:]
            else:
                self.cached = []
                self.target.clear()
        self.drafter.rewind(n_keep)

    # -- prompt ----------------------------------------------------------------------------------
    def prewarm(self, tokens: list[int], stop: Callable[[], bool], piece: int = 0) -> int:
        """Decode what the KV cache lacks of `tokens` (a later prompt's start), `piece` tokens
        (default n_batch) at a time, until `stop()`; returns how many were decoded. The next
        request's prefill reuses them as it reuses any cached prefix."""
        keep = common_prefix(self.cached, tokens)
        if keep < len(self.cached) and keep < len(tokens):
            if not self.target.trim(keep):
                self.target.clear()
                keep = 0
            self.cached = self.cached[:keep]
        elif keep == len(tokens):
            return 0
        done = 0
        self._last_rows = 0
        n = min(piece or self.target.n_batch, self.target.n_batch)
        for i in range(keep, len(tokens), n):
            if stop() or i + 1 >= self.target.n_ctx:
                break
            chunk = tokens[i: min(i + n, self.target.n_ctx - 1)]
            self.target.decode(chunk, i, logits_from=len(chunk))  # no logits wanted
            self.cached.extend(chunk)
            done += len(chunk)
        return done

    def _prefill(self, prompt: list[int], stats: Stats, piece: int = 0,
                 should_stop: Callable[[], str | None] | None = None) -> str | None:
        """Decode only what the KV cache does not already hold, leaving logits after prompt[-1].
        With `piece`, `should_stop` is asked between pieces: its reason when it stopped (the KV
        cache then holds the part decoded, and `cached` says so), else None."""
        if len(prompt) >= self.target.n_ctx:
            raise ContextOverflowError(
                f"The prompt is {len(prompt)} tokens but the context of {self.target.name} holds "
                f"{self.target.n_ctx}.",
                hint="Raise [model] ctx (--ctx) or shorten the prompt.",
            )
        keep = common_prefix(self.cached, prompt)
        if keep == len(prompt):
            keep -= 1
        if keep < len(self.cached) and not self.target.trim(keep):
            self.target.clear()
            keep = 0
        self.cached = self.cached[:keep]
        self._last_rows = 0  # a prompt pass: the next pass has another shape
        t0 = time.perf_counter()
        rest = prompt[keep:]
        step = piece if piece and should_stop is not None else max(len(rest), 1)
        for i in range(0, len(rest), step):
            why = should_stop() if i and should_stop is not None else None
            if why:
                self.cached = list(prompt[: keep + i])
                stats.prompt_time_s = time.perf_counter() - t0
                return why
            self.target.decode_prompt(rest[i: i + step], keep + i)
        stats.prompt_time_s = time.perf_counter() - t0
        self.policy.observe_prompt(len(prompt) - keep, stats.prompt_time_s)
        # A draft model reads the prompt only if and when it drafts (lazily, a window of it).
        self.drafter.begin(prompt)
        self.cached = list(prompt)
        stats.prompt_tokens = len(prompt)
        stats.prompt_tokens_decoded = len(prompt) - keep
        return None

    # -- one token choice from a single logits row ----------------------------------------------
    def _choose(self, logits: np.ndarray, sampling: SamplingSettings, rng, mask=None) -> int:
        if is_greedy(sampling):
            if mask is None:
                return int(logits.argmax())
            return int(np.where(mask, logits, -np.inf).argmax())
        return sample(distribution(logits, sampling, mask), rng)

    def prepare_healing(self) -> None:
        """Build what token healing scans (every token's bytes, sorted) now, where a load can pay
        for it, rather than in the first completion a user waits for."""
        if self._heal_index is None:
            self._heal_index = HealIndex(self.target.pieces())

    def _heal_mask(self, heal: bytes, no_blank_after: bool = False) -> np.ndarray:
        self.prepare_healing()
        assert self._heal_index is not None
        return self._heal_index.mask(heal, no_blank_after=no_blank_after)

    # -- the loop --------------------------------------------------------------------------------
    def generate(self, job: GenerationJob) -> GenerationResult:
        t_request = time.perf_counter()
        stats = Stats(draft_max=self.spec.draft_max, requests=1)
        why = self._prefill(job.prompt, stats, job.prefill_piece, job.stop_prefill)
        if why:
            return GenerationResult("", why, stats)
        if job.max_tokens <= 0:
            return GenerationResult("", "length", stats)
        run = self._start(job, stats)
        try:
            why = self._first_token(run, t_request)
            while why is None and run.healing:
                why = self._stopped(run) or self._step(run, Draft(), 0)
            while why is None:
                why = self._stopped(run) or self._step(run, *self._plan(run))
        except BaseException:
            self.forget()  # the KV caches' state is unknown now: rebuild them next time
            raise
        self.cached = run.history[:-1]  # the newest token was never decoded
        tail = run.stream.flush()
        if tail and job.on_text:
            job.on_text(tail)
        stats.generation_time_s = time.perf_counter() - run.t_start
        return GenerationResult(run.stream.text, why, stats, run.emitted)

    def _start(self, job: GenerationJob, stats: Stats) -> "_Run":
        """One request's state: its policy (the decoder's, or a fixed length's for bench sweeps)
        and its proposers (an edit's free proposer follows the region first)."""
        if job.fixed_draft is not None:
            # A fixed length (bench): acceptance evidence stays untouched, but what the passes
            # cost is the pair's and the machine's, so the adaptive policy learns it too.
            policy = DraftPolicy(
                SpeculativeSettings(draft_max=job.fixed_draft, adaptive=False, p_min=self.spec.p_min),
                draft_is_free=self.policy.draft_is_free, costs=self.policy.costs,
            )
        else:
            policy = self.policy
        free, model = self.drafter.parts()
        if job.prediction is not None and free is not None:
            free = EditDrafter(OriginalFollower(job.prediction, len(job.prompt)), free)
        policy.new_request(job.max_tokens, judge_unsent=free is not None and free.judge_unsent)
        return _Run(job, stats, list(job.prompt), policy, free, model, heal_left=job.heal,
                    guard=job.keep_indent, rng=np.random.default_rng(job.sampling.seed),
                    draft_rng=np.random.default_rng([job.sampling.seed, 1]), t_start=time.perf_counter())

    def _first_token(self, run: "_Run", t_request: float) -> str | None:
        """The prompt pass yields the first token (the k-th most likely for an alternative
        suggestion); while healed text remains it must agree with it."""
        job, target = run.job, self.target
        mask = self._heal_mask(run.heal_left, run.guard) if run.healing else None
        if job.first_rank:
            first = ranked_choice(target.logits(), job.first_rank, mask)
        else:
            first = self._choose(target.logits(), job.sampling, run.rng, mask)
        run.stats.target_passes = 1
        now = time.perf_counter()
        run.stats.generation_time_s = now - run.t_start
        run.stats.first_token_time_s = now - t_request
        run.history.append(first)
        return self._emit(run, [first])

    def _stopped(self, run: "_Run") -> str | None:
        """A reason to stop before the next pass: the caller's (cancelled, out of time), or a full
        context."""
        if run.job.should_stop:
            why = run.job.should_stop()
            if why:
                return why
        return "length" if self.target.n_ctx - (len(run.history) - 1) < 1 else None

    def _room(self, run: "_Run") -> int:
        """Draft tokens the next pass may carry: the request's tokens left (the pass emits one
        beyond its draft), the batch, the context."""
        n_past = len(run.history) - 1
        return max(min(run.job.max_tokens - run.stats.tokens - 1, self.target.n_batch - 1,
                       self.target.n_ctx - n_past - 2), 0)

    # -- step 1: plan ----------------------------------------------------------------------------
    def _plan(self, run: "_Run") -> tuple[Draft, int]:
        """What the next pass drafts, and the length the policy asked for (0: a plain pass). The
        policy says how many tokens pay; the free proposer guesses and the policy cuts the guess
        to what pays at its match length, or in a hybrid splits the pass between the guess and
        the draft model; the model drafts what is left to it."""
        policy, history, free, model = run.policy, run.history, run.free, run.model
        run.free_sent, run.model_from, run.tree, run.source = -1, -1, None, FREE
        room = self._room(run)
        lag = probe_lag = 0
        if policy.adaptive and model is not None:
            lag, probe_lag = model.lag(history), model.lag(history, PROBE_WINDOW)
        k = min(policy.next_length(lag, probe_lag), room)
        if k <= 0 or (free is None and model is None):
            return Draft(), k
        window = PROBE_WINDOW if policy.probing else None
        sampling, rng = run.job.sampling, run.draft_rng
        if free is not None and (model is None or policy.free_only):
            # Free guesses alone: a lookup or session drafter, or a hybrid's free part where
            # paying for the model does not pay this pass (the guess may run past the model's k).
            guess = free.draft(history, k if model is None else max(k, min(self.spec.draft_max, room)),
                               sampling, rng)
            run.source = source = evidence_source(guess.sources)
            draft = self._sent(run, guess, policy.fit_draft(len(guess.tokens), guess.match, source), source)
            if self._trees and model is None and is_greedy(sampling):
                run.tree = self._tree(run, draft, policy.fit_branches(draft, source))
        elif free is not None and model is not None:
            guess = free.draft(history, max(k, min(self.spec.draft_max, room)), sampling, rng)
            run.source = source = evidence_source(guess.sources)
            n_free, n_model = policy.split(len(guess.tokens), k, model.lag(history, window), guess.match, source)
            draft = self._sent(run, guess, n_free, source)
            draft.free_tokens = len(draft.tokens)
            if n_model:
                draft = _then(draft, self._model_draft(run, n_model, window, draft.tokens))
        else:
            assert model is not None
            draft = self._model_draft(run, k, window)
        if len(draft.tokens) < max(self.spec.draft_min, 1):
            if free is not None and run.free_sent > 0:
                free.truncate(0)
            draft = draft.cut(0)
            run.free_sent = min(run.free_sent, 0)
            run.tree = None
        return draft, k

    def _tree(self, run: "_Run", draft: Draft, branches: list[list[int]]) -> TokenTree | None:
        """The pending token, the draft and its branches as one tree; None without branches, or
        where the tree would not fit the context or the batch: each node takes a KV cell of its
        own, so near the context's end a tree needs cells a linear draft of the same depth does not."""
        if not branches:
            return None
        tree = TokenTree.merge(run.history[-1], [draft.tokens] + branches)
        n_past = len(run.history) - 1
        return tree if len(tree) <= self.target.n_batch and n_past + len(tree) < self.target.n_ctx else None

    def _sent(self, run: "_Run", guess: Draft, keep: int, source: str) -> Draft:
        """The first `keep` tokens of a free guess go to the target; a guess not sent at all is
        judged later where the policy asks for that (an edit's copy, a hybrid's guess)."""
        assert run.free is not None
        if guess.sources is None:
            guess.sources = [run.free.kind] * len(guess.tokens)
        run.free_sent = keep = min(keep, len(guess.tokens))
        if keep == len(guess.tokens):
            return guess
        run.free.truncate(keep)
        if keep == 0 and (run.policy.judge_unsent or run.model is not None):
            run.policy.not_sent(guess, len(run.history), source)
        out = guess.cut(keep)
        if keep == 0:
            out.match = 0
        return out

    def _model_draft(self, run: "_Run", n: int, window: int | None, after: list[int] | None = None) -> Draft:
        """The draft model's `n` tokens after the history (and `after`: a free guess it extends)."""
        assert run.model is not None
        run.model_from = len(run.history)
        out = run.model.draft(run.history + after if after else run.history, n, run.job.sampling,
                              run.draft_rng, window)
        if out.sources is None:
            out.sources = [run.model.kind] * len(out.tokens)
        return out

    # -- step 2: verify --------------------------------------------------------------------------
    def _step(self, run: "_Run", draft: Draft, asked: int) -> str | None:
        """Verify `draft` in one target pass, then commit what the target kept."""
        target, policy = self.target, run.policy
        n_past = len(run.history) - 1  # KV holds history[:-1]; history[-1] is pending
        batch = [run.history[-1]] + draft.tokens
        # While drafting (or probing) with a constant shape, every pass has pad_rows rows, an
        # empty draft's too: the shape then stays the same from pass to pass.
        pad = self.pad_rows if self.pad_rows and (asked > 0 or not policy.off) else 0
        shape = min(max(pad, len(batch)), target.n_ctx - n_past) if pad else len(batch)
        t0, device0 = time.perf_counter(), target.device_s
        if run.tree is not None:
            return self._step_tree(run, draft, run.tree, asked, t0)
        target.decode(batch, n_past, logits_from=0, pad_to=shape)
        rows = target.logits_rows(len(batch))
        if run.healing:
            mask = self._heal_mask(run.heal_left, run.guard)
            verdict: Verdict = Verdict(0, self._choose(rows[0], run.job.sampling, run.rng, mask))
        elif is_greedy(run.job.sampling):
            verdict = verify_greedy(rows, draft.tokens)
        else:
            verdict = verify_sampled(rows, draft.tokens, draft.q, run.job.sampling, run.rng)
        verify_s = time.perf_counter() - t0
        same_shape = not self.pad_rows or shape == self._last_rows
        self._last_rows = shape
        record = PassRecord(draft=draft, asked=asked, accepted=verdict.accepted, verify_s=verify_s,
                            device_s=target.device_s - device0, rows=shape, padded=bool(pad),
                            same_shape=same_shape, source=run.source,
                            probing=asked > 0 and policy.probing, drafting=not policy.off, at=n_past + 1)
        return self._commit(run, record, draft.tokens[:verdict.accepted], verdict.token)

    def _step_tree(self, run: "_Run", draft: Draft, tree: TokenTree, asked: int, t0: float) -> str | None:
        """Verify the draft and its branches as one token tree (greedy): the longest path whose
        every token is the target's argmax after its parent is kept, in the KV cache too."""
        target, n_past = self.target, len(run.history) - 1
        device0 = target.device_s
        target.decode_tree(tree, n_past)
        path, token = tree.greedy_path(target.logits_rows(len(tree)))
        target.keep_path(path)
        kept = [tree.tokens[i] for i in path[1:]]
        held = common_prefix(kept, draft.tokens)
        outcome = TreeOutcome(rows=len(tree), main_held=held, branches=len(tree.leaves()) - 1)
        self._last_rows = len(tree)
        record = PassRecord(draft=draft, asked=asked, accepted=len(kept), verify_s=time.perf_counter() - t0,
                            device_s=target.device_s - device0, rows=len(tree), padded=False, same_shape=True,
                            source=run.source, probing=False, drafting=True,
                            tree=outcome, at=n_past + 1)
        return self._commit(run, record, kept, token)

    # -- step 3: commit --------------------------------------------------------------------------
    def _commit(self, run: "_Run", record: PassRecord, kept: list[int], token: int) -> str | None:
        """Keep what the target kept (`kept`, then its own `token`): drop the rest's KV entries,
        tell the proposers, hand the pass's record to the stats and the policy, and emit the new
        tokens."""
        draft, m = record.draft, record.accepted
        n_past = len(run.history) - 1
        if record.tree is None and (m < len(draft.tokens) or record.rows > len(draft.tokens) + 1):
            self.target.trim(n_past + 1 + m)  # drop the rejected drafts' (and padding's) KV entries
        if run.free is not None and run.free_sent >= 0:
            # its own guess held this far (a tree's branch beyond it is no evidence for it)
            run.free.accept(min(m if record.tree is None else record.tree.main_held, run.free_sent))
        if run.model is not None and run.model_from >= 0:
            run.model.rewind(run.model_from + m)  # its cache holds its whole draft, sent or not
        new = kept + [token]
        run.history.extend(new)
        run.stats.record(record)
        run.policy.learn(record)
        run.policy.judge(run.history)
        why = self._emit(run, new)
        run.stats.generation_time_s = time.perf_counter() - run.t_start
        if run.job.on_stats:
            run.job.on_stats(run.stats)
        return why

    def _emit(self, run: "_Run", tokens: list[int]) -> str | None:
        """Emit tokens in order; a finish reason when one of them ends generation (nothing after
        it is emitted)."""
        job, stats, target = run.job, run.stats, self.target
        for tok in tokens:
            if target.is_eog(tok) or tok in job.stop_tokens:
                return "eos"
            data = target.piece(tok)
            if run.heal_left:  # this token re-creates (part of) the healed text: emit only the rest
                cut = min(len(data), len(run.heal_left))
                data, run.heal_left = data[cut:], run.heal_left[cut:]
            if data:
                run.guard = False  # text beyond the healed bytes exists: constraints are over
            run.emitted.append(tok)
            stats.tokens += 1
            text = run.stream.feed(data)
            if text and job.on_text:
                job.on_text(text)
            if run.stream.stopped:
                return "stop"
            if job.check_text:
                why = job.check_text(run.stream.text)
                if why:
                    return why
            if stats.tokens >= job.max_tokens:
                return "length"
        return None


@dataclass
class _Run:
    """One request's state, shared by the loop's steps."""

    job: GenerationJob
    stats: Stats
    history: list[int]  # prompt + emitted; the KV cache holds all but the last ("pending")
    policy: DraftPolicy
    free: Drafter | None  # the free proposer (lookup, session, an edit's copy), if any
    model: Drafter | None  # the draft model, if any
    heal_left: bytes  # healed text the next tokens must re-create
    guard: bool  # the text after the healed bytes may not start with blanks
    rng: np.random.Generator
    draft_rng: np.random.Generator
    t_start: float
    emitted: list[int] = field(default_factory=list)
    stream: TextStream = field(init=False)
    free_sent: int = -1  # this pass: free guess tokens sent (-1: the free proposer was not asked)
    model_from: int = -1  # this pass: the history length the model drafted after (-1: it did not)
    tree: TokenTree | None = None  # this pass: the draft and the branches sent beside it
    # This pass: whose match evidence its free guess feeds (decided once, in the plan; a pass
    # without a free guess sent has no match, so its record's source is read by no one).
    source: str = FREE

    def __post_init__(self) -> None:
        self.stream = TextStream(self.job.stop)

    @property
    def healing(self) -> bool:
        """Token healing: plain passes, each token masked to agree with the healed text."""
        return bool(self.heal_left) or self.guard


def _then(draft: Draft, more: Draft) -> Draft:
    """A free guess followed by the draft model's tokens: one draft (the guess's proposals are
    point masses for rejection sampling, as prompt lookup's)."""
    n_free = len(draft.tokens)
    q = None
    if more.q:
        head = []
        for tok in draft.tokens:
            row = np.zeros_like(more.q[0])
            row[tok] = 1.0
            head.append(row)
        q = head + list(more.q)
    return Draft(tokens=draft.tokens + more.tokens, q=q, time_s=draft.time_s + more.time_s,
                 catchup_s=more.catchup_s, catchup_tokens=more.catchup_tokens, decodes=more.decodes,
                 sources=(draft.sources or []) + (more.sources or []),
                 match=draft.match, adopted_tokens=more.adopted_tokens, free_tokens=n_free)
