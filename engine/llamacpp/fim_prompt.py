"""Fill-in-the-middle prompts in a local model's own tokens (the backend side of completions).

Layout (the target's own FIM tokens, as llama.cpp's server builds /infill prompts):

    [FIM_REP]repo\n [FIM_SEP]path\n<chunk text> ... [FIM_SEP]path\n    (with repo/file-separator tokens)
    \n\n--- snippet ---\n\n<chunk text> ...                           (without them, as llama.cpp)
    [FIM_PRE]<prefix>[FIM_SUF]<suffix>[FIM_MID]

The extra context (chunks of other files, tui/context_ring.py) comes first, so requests with the
same chunks share a prompt start the KV cache keeps; `FimPrompt.warm` says how many leading tokens
are worth decoding ahead of the request (Engine.prewarm): the chunks and the prefix but its end.

Models without FIM tokens fall back to completing the prefix alone. The budget (what is kept of
prefix, suffix and other files) is the backend-neutral rule in engine/completion.py.

Token healing: the prefix's last token is removed from the prompt and the first generated tokens are
constrained to re-create its bytes (which are not emitted again). When the cursor sits at the end of
a line's indentation, the text after those bytes may not start with more blanks: the user's
indentation wins, so four spaces continue with `return`, not ` return` or another indent level.

The first read (`CompletionRequest.first_read_s`, with `FirstRead`: what the KV cache holds and
what a token costs to read): after the cursor moved, the prompt there is mostly new, and reading a
whole prefix window first is seconds on a small CPU. Where the part the cache lacks would take
longer than the request allows, the prefix begins later: where the window the cache holds begins
(its first lines found in this prefix, when what this prompt adds to it fits), else at the line
that leaves a read within the budget. The chunks before the prefix stay as the whole window has them,
so they stay cached; a later read of the whole window (an idle prewarm without a budget) brings
the full prefix back.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..completion import cursor_in_indentation, prompt_budget, suffix_share
from ..drafters import common_prefix
from ..model import Model
from ..requests import CompletionRequest


@dataclass
class FimPrompt:
    tokens: list[int]
    heal: bytes  # the removed last prefix token's bytes
    stop_tokens: frozenset[int]
    fim: bool  # True when the model's FIM tokens were used
    keep_indent: bool = False  # cursor at the end of the line's indentation: add no more blanks
    warm: int = 0  # leading tokens a later request at the same place will most likely share
    prefix_start: int = 0  # characters of the request's prefix left out by the first-read budget


@dataclass(frozen=True)
class FirstRead:
    """What bounds a completion's first read: the tokens the target's KV cache holds and what a
    read costs (`CostModel.read_cost`: seconds a read, and each token's, measured on prompt reads)."""

    held: list[int]
    token_s: float
    fixed_s: float = 0.0


SNIPPET = "\n\n--- snippet ---\n\n"  # between chunks for a model without a file separator token
WARM_TAIL = 16  # prefix tokens near the cursor left out of a prewarm (typing changes them)
WARM_TAIL_AT_LINE_END = 4  # ... at the end of a line, where keys add to it (or Enter opens the next)
CUT_STEP = 256  # a prefix too long for the budget loses its start in steps of this many tokens
ANCHOR_TOKENS = 48  # of the held prefix window: its first whole lines are looked for in the prefix
MIN_READ_PREFIX = 24  # prefix tokens a budget-cut window keeps at least


def _cut_start(tokens: list[int], n: int) -> list[int]:
    """At most the last `n` tokens, cut at a multiple of CUT_STEP from the start: cutting to
    exactly `n` would move the prompt's start with every typed token, and the KV cache (a prefix
    cache) would have to read the whole prompt again at every keystroke."""
    if n <= 0:
        return []
    excess = len(tokens) - n
    if excess <= 0:
        return tokens
    return tokens[-(-excess // CUT_STEP) * CUT_STEP:]


@dataclass
class _Layout:
    """A FIM prompt in three parts: what comes before the prefix (BOS, other files' chunks, the
    prefix token), the prefix and what follows it; built once, the prefix rebuilt per start."""

    model: Model
    req: CompletionRequest
    prefix: list[int]  # the whole prefix's tokens
    lead: list[int]
    tail: list[int]
    room: int  # the most prefix tokens
    stops: frozenset[int]
    fim: bool

    def prompt(self, start: int = 0) -> FimPrompt:
        text = self.req.prefix[start:]
        prefix = self.model.tokenize(text) if start else self.prefix  # (sliced below, never changed)
        heal = b""
        if prefix:
            heal = self.model.piece(prefix[-1])
            prefix = prefix[:-1]
        prefix = _cut_start(prefix, self.room)
        tokens = self.lead + prefix + self.tail
        at_end = self.req.suffix[:1] in ("", "\n", "\r")
        warm = len(self.lead) + max(len(prefix) - (WARM_TAIL_AT_LINE_END if at_end else WARM_TAIL), 0)
        cut = len(self.req.prefix) - len(text) if start else 0
        return FimPrompt(tokens, heal, self.stops, self.fim, cursor_in_indentation(self.req.prefix), warm=warm,
                         prefix_start=cut)

    def held_start(self, held: list[int]) -> int:
        """Where the prefix window the KV cache holds begins in this request's prefix (its first
        whole lines found there), -1 when it holds another start or none."""
        n = len(self.lead)
        if len(held) <= n or held[:n] != self.lead:
            return -1
        text = self.model.detokenize(held[n:n + ANCHOR_TOKENS])
        lines = text[: text.rfind("\n") + 1]
        return self.req.prefix.find(lines) if lines.strip() else -1


def _layout(model: Model, req: CompletionRequest, max_tokens: int) -> _Layout:
    budget = prompt_budget(model.n_ctx, max_tokens)
    whole = model.tokenize(req.prefix)
    bos = [model.bos] if model.add_bos and model.bos >= 0 else []
    fim = model.fim
    if fim is None:
        return _Layout(model, req, whole, bos, [], budget - len(bos), frozenset(), False)

    suffix = model.tokenize(req.suffix)[: suffix_share(budget)]
    room = budget - len(bos) - 3 - len(suffix)
    # The chunks take what the whole prefix leaves, whatever start a first read picks: they come
    # first, so a shorter prefix must not change them (that would read them all again).
    room_left = room - len(_cut_start(whole[:-1], room))
    head: list[int] = []
    stops = {t for t in (fim.pad, fim.rep, fim.sep, fim.pre, fim.suf, fim.mid) if t >= 0}
    files = fim.sep >= 0
    if req.context_files or (files and fim.rep >= 0 and req.path):
        parts: list[int] = [fim.rep] + model.tokenize("specterm\n") if fim.rep >= 0 and files else []
        for cf in req.context_files:
            if files:
                piece = [fim.sep] + model.tokenize(f"{cf.path}\n{cf.text}")
            else:
                piece = model.tokenize(SNIPPET + cf.text)
            if len(parts) + len(piece) + 64 > room_left:
                piece = piece[: max(room_left - len(parts) - 64, 0)]
            if len(piece) <= 1:
                break
            parts += piece
        own = [fim.sep] + model.tokenize(f"{req.path or 'untitled'}\n") if files else model.tokenize(SNIPPET)
        if len(parts) + len(own) <= room_left:
            head = parts + own
    return _Layout(model, req, whole, bos + head + [fim.pre], [fim.suf] + suffix + [fim.mid], room,
                   frozenset(stops), True)


def build_fim_prompt(model: Model, req: CompletionRequest, max_tokens: int,
                     first_read: FirstRead | None = None) -> FimPrompt:
    """The prompt for `req`; with `first_read` and `req.first_read_s`, one whose part the cache
    lacks reads within that budget (see the module's docstring)."""
    layout = _layout(model, req, max_tokens)
    whole = layout.prompt()
    if first_read is None or req.first_read_s is None or first_read.token_s <= 0:
        return whole
    held = first_read.held
    limit = (req.first_read_s - first_read.fixed_s) / first_read.token_s

    def reads(fp: FimPrompt) -> int:
        return len(fp.tokens) - common_prefix(held, fp.tokens)

    if reads(whole) <= limit:
        return whole
    at = layout.held_start(held)
    if at > 0:
        again = layout.prompt(at)
        if reads(again) <= limit:
            return again
    # A window that fits: the prefix tokens the budget leaves after the rest of the prompt.
    lead_reads = len(layout.lead) - common_prefix(held, layout.lead)
    keep = max(int(limit) - lead_reads - len(layout.tail), MIN_READ_PREFIX)
    if len(layout.prefix) <= keep:
        return whole
    chars = len(model.detokenize(layout.prefix[-keep:]))
    start = req.prefix.rfind("\n", 0, max(len(req.prefix) - chars, 0)) + 1  # the line it falls in, whole
    return layout.prompt(start) if start > 0 else whole
