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

from .controller import FREE, PROBE_WINDOW, CostModel, DraftController, UnsentGuesses, evidence_source
from .drafters import Draft, Drafter, common_prefix
from .errors import ContextOverflowError
from .model import Model
from .sampling import Verdict, distribution, is_greedy, sample, verify_greedy, verify_sampled
from .settings import SamplingSettings, SpeculativeSettings
from .stats import Stats


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


@dataclass
class GenerationResult:
    text: str
    reason: str
    stats: Stats
    tokens: list[int] = field(default_factory=list)


class SpeculativeDecoder:
    """Owns the target's KV cache across requests (prefix reuse) and runs the loop."""

    def __init__(self, target: Model, drafter: Drafter, spec: SpeculativeSettings) -> None:
        self.target = target
        self.spec = spec
        self.cached: list[int] = []  # tokens whose KV entries the target holds
        self._heal_index: HealIndex | None = None
        self.set_drafter(drafter)
        # Rows of every verify pass while drafting (0: each pass has its draft's length + 1).
        self.pad_rows = self._constant_shape(spec)
        self._last_rows = 0  # rows of the last target pass (a change of shape is no cost sample)
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
            self.controller.costs.seed_verify(n, statistics.median(times[2:]))
        t.clear()
        self.cached = []
        self.controller.costs.shape = rows

    def set_drafter(self, drafter: Drafter) -> None:
        """Use `drafter` from the next request on. What verifying costs is the target's and
        carries over; what drafting costs and earns is the new drafter's to learn."""
        old = getattr(self, "controller", None)
        # A hybrid drafter weighs its sources with the controller's own cost model: one object.
        costs = getattr(drafter, "costs", None) or CostModel()
        if old is not None:
            for n, t in sorted(old.costs.verify.items()):  # t1 first: the rest are its multiples
                costs.seed_verify(n, t)
            costs.shape = old.costs.shape
            costs.prompt_token = old.costs.prompt_token
        self.drafter = drafter
        self.controller = DraftController(self.spec, draft_is_free=drafter.kind not in ("model", "hybrid"),
                                          costs=costs, prior=getattr(drafter, "prior", (0.0, 0.0)),
                                          free_part=drafter.kind == "hybrid")
        if drafter.kind == "hybrid":  # one judge of free guesses, as one cost model
            # the decoder writes the hybrid's attributes (issue 34 item 1 ends this)
            drafter.free_acceptance = self.controller.acceptance_for  # type: ignore[attr-defined]
            drafter.guess_evidence = self.controller.observe_guess  # type: ignore[attr-defined]

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
        self.controller.observe_prompt(len(prompt) - keep, stats.prompt_time_s)
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

    def _heal_mask(self, heal: bytes, no_blank_after: bool = False) -> np.ndarray:
        if self._heal_index is None:
            self._heal_index = HealIndex(self.target.pieces())
        return self._heal_index.mask(heal, no_blank_after=no_blank_after)

    # -- the loop --------------------------------------------------------------------------------
    def generate(self, job: GenerationJob) -> GenerationResult:
        t_request = time.perf_counter()
        stats = Stats(draft_max=self.spec.draft_max, requests=1)
        rng = np.random.default_rng(job.sampling.seed)
        draft_rng = np.random.default_rng([job.sampling.seed, 1])
        stream = TextStream(job.stop)
        emitted: list[int] = []
        why = self._prefill(job.prompt, stats, job.prefill_piece, job.stop_prefill)
        if why:
            return GenerationResult("", why, stats)
        if job.max_tokens <= 0:
            return GenerationResult("", "length", stats)
        t_start = time.perf_counter()  # tokens/s measures generation; prompt time is separate
        history = list(job.prompt)
        try:
            why = self._loop(job, stats, history, emitted, stream, rng, draft_rng, t_start, t_request)
        except BaseException:
            self.forget()  # the KV caches' state is unknown now: rebuild them next time
            raise
        self.cached = history[:-1]  # the newest token was never decoded
        tail = stream.flush()
        if tail and job.on_text:
            job.on_text(tail)
        stats.generation_time_s = time.perf_counter() - t_start
        return GenerationResult(stream.text, why, stats, emitted)

    def _loop(self, job, stats, history, emitted, stream, rng, draft_rng, t_start, t_request) -> str:
        target = self.target
        heal_left = job.heal
        guard = job.keep_indent  # until the first byte past the healed text is emitted

        def emit(tokens: list[int]) -> str | None:
            """Emit tokens in order; return a finish reason when one of them ends generation."""
            nonlocal heal_left, guard
            for tok in tokens:
                if target.is_eog(tok) or tok in job.stop_tokens:
                    return "eos"
                data = target.piece(tok)
                if heal_left:  # this token re-creates (part of) the healed text: emit only the rest
                    cut = min(len(data), len(heal_left))
                    data, heal_left = data[cut:], heal_left[cut:]
                if data:
                    guard = False  # text beyond the healed bytes exists: constraints are over
                emitted.append(tok)
                stats.tokens += 1
                text = stream.feed(data)
                if text and job.on_text:
                    job.on_text(text)
                if stream.stopped:
                    return "stop"
                if job.check_text:
                    why = job.check_text(stream.text)
                    if why:
                        return why
                if stats.tokens >= job.max_tokens:
                    return "length"
            return None

        # The prompt pass yields the first token. While healed text remains, each token must agree
        # with it (start with it, or be a prefix of it) and is chosen by a plain one-token pass.
        mask = self._heal_mask(heal_left, guard) if (heal_left or guard) else None
        if job.first_rank:
            first = ranked_choice(target.logits(), job.first_rank, mask)
        else:
            first = self._choose(target.logits(), job.sampling, rng, mask)
        stats.target_passes = 1
        now = time.perf_counter()
        stats.generation_time_s = now - t_start
        stats.first_token_time_s = now - t_request
        history.append(first)
        pending = first
        why = emit([first])
        greedy = is_greedy(job.sampling)
        drafter = self.drafter
        if job.fixed_draft is not None:
            # A fixed length (bench): acceptance evidence stays untouched, but what the passes
            # cost is the pair's and the machine's, so the adaptive controller learns it too.
            controller = DraftController(
                SpeculativeSettings(draft_max=job.fixed_draft, adaptive=False, p_min=self.spec.p_min),
                draft_is_free=self.controller.draft_is_free, costs=self.controller.costs,
            )
        else:
            controller = self.controller
            controller.new_request(job.max_tokens)
        # A free guess not sent, judged by what the target writes there (an edit's copy of its
        # original: Drafter.judge_unsent).
        guesses = UnsentGuesses()
        controller.judge_unsent = getattr(drafter, "judge_unsent", False)

        while why is None:
            if job.should_stop:
                why = job.should_stop()
                if why:
                    break
            n_past = len(history) - 1  # KV holds history[:-1]; `pending` is history[-1]
            room = min(
                job.max_tokens - stats.tokens - 1,  # the pass emits one token beyond the draft
                target.n_batch - 1,
                target.n_ctx - n_past - 2,
            )
            if target.n_ctx - n_past < 1:
                why = "length"
                break
            k = 0
            if not (heal_left or guard):
                lag = probe_lag = 0
                if controller.adaptive and not controller.draft_is_free:
                    lag = drafter.lag(history)
                    probe_lag = drafter.lag(history, PROBE_WINDOW)
                k = min(controller.next_length(lag, probe_lag), max(room, 0))
            draft, source = Draft(), FREE
            if controller.free_part:
                drafter.free_max = min(self.spec.draft_max, max(room, 0))  # type: ignore[attr-defined]
            if k > 0:
                window = PROBE_WINDOW if controller.probing else None
                if controller.free_only:  # paying does not pay: the drafter's free part alone
                    draft = drafter.free_guess(history, k, job.sampling, draft_rng)
                else:
                    draft = drafter.draft(history, k, job.sampling, draft_rng, window)
                source = evidence_source(draft.sources)
                if controller.draft_is_free or controller.free_only:  # what pays at its match length
                    keep = controller.fit_draft(len(draft.tokens), draft.match, source)
                    if keep < len(draft.tokens):
                        drafter.truncate(keep)
                        if keep == 0 and controller.judge_unsent:
                            guesses.offer(draft.tokens, draft.match, source, len(history))
                        draft = draft.cut(keep)
                if len(draft.tokens) < max(self.spec.draft_min, 1):
                    drafter.truncate(0)
                    draft = draft.cut(0)
                if controller.probing:
                    stats.probes += 1
            stats.draft_time_s += draft.time_s
            stats.draft_catchup_time_s += draft.catchup_s
            stats.draft_catchup_tokens += draft.catchup_tokens
            stats.draft_reads += int(draft.catchup_tokens > 0)
            stats.draft_decodes += draft.decodes
            stats.draft_adopted_tokens += draft.adopted_tokens
            stats.draft_length = k
            stats.drafting = not controller.off

            batch = [pending] + draft.tokens
            # While drafting (or probing) with a constant shape, every pass has pad_rows rows,
            # an empty draft's too: the shape then stays the same from pass to pass.
            pad = self.pad_rows if self.pad_rows and (k > 0 or not controller.off) else 0
            shape = min(max(pad, len(batch)), target.n_ctx - n_past) if pad else len(batch)
            t0, device0 = time.perf_counter(), target.device_s
            target.decode(batch, n_past, logits_from=0, pad_to=shape)
            rows = target.logits_rows(len(batch))
            if heal_left or guard:
                mask = self._heal_mask(heal_left, guard)
                verdict: Verdict = Verdict(0, self._choose(rows[0], job.sampling, rng, mask))
            elif greedy:
                verdict = verify_greedy(rows, draft.tokens)
            else:
                verdict = verify_sampled(rows, draft.tokens, draft.q, job.sampling, rng)
            t_verify = time.perf_counter() - t0
            stats.verify_time_s += t_verify
            stats.device_time_s += target.device_s - device0

            m = verdict.accepted
            if m < len(draft.tokens) or shape > len(batch):
                target.trim(n_past + 1 + m)  # drop the rejected drafts' (and padding's) KV entries
            if k > 0:
                drafter.accept(m)
            new = draft.tokens[:m] + [verdict.token]
            history.extend(new)
            pending = verdict.token
            stats.record_pass(len(draft.tokens), m, draft.sources or [drafter.kind] * len(draft.tokens))
            same_shape = not self.pad_rows or shape == self._last_rows
            self._last_rows = shape
            controller.observe(len(draft.tokens), m, draft.time_s - draft.catchup_s, t_verify,
                               draft.catchup_s, draft.catchup_tokens, asked=k, match=draft.match,
                               free=draft.free_tokens, rows=shape if pad else 0, same_shape=same_shape,
                               source=source)
            guesses.judge(history, controller.observe_guess)
            why = emit(new)
            stats.generation_time_s = time.perf_counter() - t_start
            if job.on_stats:
                job.on_stats(stats)
        return why

