"""The hybrid drafter: the session drafter's free guess and a draft model's paid one, the better
of the two each pass (or the free guess extended by the model).

The controller picks k with the acceptance and costs it measures for the pair; this drafter then
chooses what fills those k tokens. It asks the session drafter first (microseconds), and compares
the expected tokens per second of three proposals with the same cost model the controller uses
(shared with it, never copied): the session's guess alone (verifying costs t_v(L+1)), the model's
k tokens (k * t_d + t_v(k+1)), and the session's guess extended by the model up to k. Acceptance
is measured per source, so a session drafter that keeps guessing wrong stops being chosen, and a
free guess that holds saves the draft model's time.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from .controller import FREE, CostModel, evidence_source
from .drafters import Draft, ModelDrafter, common_prefix
from .model import Model
from .session_drafter import SessionDrafter

_DECAY = 0.9  # per-draft decay of each source's acceptance evidence
_PRIOR_DRAFT = 0.5  # a draft token's cost in t1 until measured (as the controller assumes)


class _Acceptance:
    """Decayed per-token acceptance of one source (Laplace prior 1/2)."""

    def __init__(self) -> None:
        self.accepted = 0.0
        self.drafted = 0.0

    @property
    def rate(self) -> float:
        return (self.accepted + 1.0) / (self.drafted + 2.0)

    def observe(self, drafted: int, accepted: int) -> None:
        if drafted:
            self.accepted = self.accepted * _DECAY + accepted
            self.drafted = self.drafted * _DECAY + drafted


def _combine_q(guess: list[int], more: Draft) -> list[np.ndarray] | None:
    """Proposal distributions for a session guess followed by model tokens: the session's are
    point masses (one-hot rows: rejection sampling then accepts x with p(x), as for lookup)."""
    if not more.q:
        return None
    head = []
    for tok in guess:
        row = np.zeros_like(more.q[0])
        row[tok] = 1.0
        head.append(row)
    return head + list(more.q)


def expected_tokens(rates: list[float]) -> float:
    """Tokens a pass yields when draft token i holds with probability rates[i] given the ones
    before it held: 1 (the target's own token) + the expected accepted prefix."""
    total, p = 1.0, 1.0
    for r in rates:
        p *= r
        total += p
    return total


class HybridDrafter:
    kind = "hybrid"

    def __init__(self, session: SessionDrafter, model_drafter: ModelDrafter,
                 costs: CostModel | None = None) -> None:
        self.session = session
        self.model_drafter = model_drafter
        self.name = f"session+{model_drafter.name}"
        self.costs = costs if costs is not None else CostModel()  # the controller shares it
        self._acc = {"session": _Acceptance(), "model": _Acceptance()}
        self._base = 0  # len(history) at the latest draft
        self._split: tuple[int, int] = (0, 0)  # (session tokens, model tokens) of the latest draft
        self._model_read = False  # the model drafted (its cache holds the draft) since the last accept
        # The controller's acceptance of free guesses by n-gram match length (the loop wires it,
        # as it shares `costs`): a guess is cut to what pays at its match length, as lookup's is.
        self.free_acceptance: Callable[[int, str], float] | None = None
        # The most tokens a pass may send (the loop sets it: the request's and the context's
        # room); the controller's k is what pays for the *model*, a free guess may run longer.
        self.free_max: int | None = None
        # Where to report how a guess that was not sent would have done (the loop wires the
        # controller's `observe_guess`): (match, tokens the target wrote there, how many agreed).
        self.guess_evidence: Callable[[int, int, int, str], None] | None = None
        # (guess, match, len(history) then, whose evidence)
        self._unsent: tuple[list[int], int, int, str] | None = None

    # -- choosing --------------------------------------------------------------------------------
    def _rate(self, n_session: int, n_model: int, lag: int = 0, a_session: float | None = None) -> float:
        c = self.costs
        t1 = c.verify.get(1) or 1.0
        draft = c.draft_cost(n_model)
        if draft is None:
            draft = n_model * _PRIOR_DRAFT * t1
        if n_model and lag > 2:  # the model reads what it has not seen first (accepted guesses)
            draft += c.catchup(lag)
        n = n_session + n_model
        tv = c.t_verify(n + 1) or t1 * (1.0 + 0.5 * n)
        a_s = self._acc["session"].rate if a_session is None else a_session
        rates = [a_s] * n_session + [self._acc["model"].rate] * n_model
        return expected_tokens(rates) / (draft + tv)

    def choose(self, n_session: int, k: int, lag: int = 0, match: int = 0,
               source: str = FREE) -> tuple[int, int]:
        """(session tokens, model tokens) to propose, from a session guess of n_session tokens
        that followed a `match`-token n-gram and the controller's length k; `lag`: tokens the
        model must read before drafting. The guess may be cut short, or extended by the model."""
        a_s = self.free_acceptance(match, source) if self.free_acceptance is not None and match > 0 else None
        options = [(0, k)] + [(c, 0) for c in range(1, n_session + 1)]
        if 0 < n_session < k:
            options.append((n_session, k - n_session))
        return max(options, key=lambda o: self._rate(o[0], o[1], lag=lag + o[0] if o[1] else 0, a_session=a_s))

    # -- drafter verbs ---------------------------------------------------------------------------
    def begin(self, prompt: list[int]) -> None:
        self._unsent = None
        self.session.begin(prompt)
        self.model_drafter.begin(prompt)

    def lag(self, history: list[int], window: int | None = None) -> int:
        return self.model_drafter.lag(history, window)

    def draft(self, history, n_max, sampling, rng, window=None) -> Draft:
        return self._propose(history, n_max, sampling, rng, window, free_only=False)

    def free_guess(self, history, n_max, sampling, rng) -> Draft:
        """The session's guess alone: the controller found that paying for the model does not
        pay this pass, but a free guess that follows a long match still may."""
        return self._propose(history, n_max, sampling, rng, None, free_only=True)

    def _propose(self, history, n_max, sampling, rng, window, *, free_only: bool) -> Draft:
        t0 = time.perf_counter()
        self._judge_unsent(history)
        self._base = len(history)
        guess = self.session.draft(history, max(n_max, self.free_max or 0), sampling, rng)
        source = evidence_source(guess.sources)
        n_s, n_m = ((len(guess.tokens), 0) if free_only
                    else self.choose(len(guess.tokens), n_max, self.model_drafter.lag(history, window),
                                     guess.match, source))
        if not n_s:
            self.session.discard()
            if guess.tokens and guess.match > 0:
                self._unsent = (list(guess.tokens), guess.match, len(history), source)
        elif n_s < len(guess.tokens):
            self.session.truncate(n_s)  # cut to what pays: the rest is neither sent nor judged
        out = Draft(tokens=list(guess.tokens[:n_s]), match=guess.match if n_s else 0, free_tokens=n_s)
        if n_m:
            more = self.model_drafter.draft(list(history) + out.tokens, n_m, sampling, rng, window)
            out.tokens += more.tokens
            out.q = _combine_q(out.tokens[:n_s], more)
            out.catchup_s, out.catchup_tokens = more.catchup_s, more.catchup_tokens
            out.decodes = more.decodes
            out.adopted_tokens = more.adopted_tokens
        self._split = (n_s, len(out.tokens) - n_s)
        self._model_read = n_m > 0
        out.sources = (list(guess.sources[:n_s]) if guess.sources else ["session"] * n_s) + ["model"] * self._split[1]
        out.time_s = time.perf_counter() - t0
        return out

    def _judge_unsent(self, history: list[int]) -> None:
        """Compare the last guess that was not sent with what the target wrote in its place."""
        if self._unsent is None:
            return
        guess, match, at, source = self._unsent
        self._unsent = None
        known = min(len(guess), len(history) - at)
        if known <= 0:
            return
        held = common_prefix(guess[:known], history[at:at + known])
        self._acc["session"].observe(known, held)
        if self.guess_evidence is not None:
            self.guess_evidence(match, known, held, source)

    def truncate(self, n: int) -> None:
        n_s, n_m = self._split
        if n < n_s:
            self.session.truncate(n)
        self._split = (min(n_s, n), max(0, min(n_m, n - n_s)))

    def accept(self, n_accepted: int) -> None:
        n_s, n_m = self._split
        if n_s:
            self.session.accept(min(n_accepted, n_s))
        self._acc["session"].observe(n_s, min(n_accepted, n_s))
        self._acc["model"].observe(n_m, max(0, n_accepted - n_s))
        if self._model_read:  # the model's cache holds its whole draft, sent or not
            self.model_drafter.rewind(self._base + n_accepted)
        self._split = (0, 0)
        self._model_read = False

    def rewind(self, n_keep: int) -> None:
        self._unsent = None
        self.session.rewind(n_keep)
        self.model_drafter.rewind(n_keep)

    def forget(self) -> None:
        self._unsent = None
        self.session.forget()
        self.model_drafter.forget()

    def close(self) -> None:
        self.session.close()
        self.model_drafter.close()


def session_drafter(drafter) -> SessionDrafter | None:
    """The session drafter inside `drafter` (itself, or a hybrid's), if any."""
    if isinstance(drafter, SessionDrafter):
        return drafter
    return drafter.session if isinstance(drafter, HybridDrafter) else None


def draft_model(drafter) -> Model | None:
    """The draft model inside `drafter` (a model drafter's, or a hybrid's), if any: what a cost
    meter times t_d on (a hybrid's model costs what it costs alone)."""
    if isinstance(drafter, HybridDrafter):
        drafter = drafter.model_drafter
    return drafter.model if isinstance(drafter, ModelDrafter) else None
