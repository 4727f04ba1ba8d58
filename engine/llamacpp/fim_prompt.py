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
"""

from __future__ import annotations

from dataclasses import dataclass

from ..completion import cursor_in_indentation, prompt_budget, suffix_share
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


SNIPPET = "\n\n--- snippet ---\n\n"  # between chunks for a model without a file separator token
WARM_TAIL = 16  # prefix tokens near the cursor left out of a prewarm (typing changes them)
CUT_STEP = 256  # a prefix too long for the budget loses its start in steps of this many tokens


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


def build_fim_prompt(model: Model, req: CompletionRequest, max_tokens: int) -> FimPrompt:
    budget = prompt_budget(model.n_ctx, max_tokens)
    prefix = model.tokenize(req.prefix)
    heal = b""
    if prefix:
        heal = model.piece(prefix[-1])
        prefix = prefix[:-1]
    bos = [model.bos] if model.add_bos and model.bos >= 0 else []
    fim = model.fim
    if fim is None:
        tokens = bos + _cut_start(prefix, budget - len(bos))
        return FimPrompt(tokens, heal, frozenset(), False, cursor_in_indentation(req.prefix),
                         warm=max(len(tokens) - WARM_TAIL, 0))

    suffix = model.tokenize(req.suffix)[: suffix_share(budget)]
    room = budget - len(bos) - 3 - len(suffix)
    prefix = _cut_start(prefix, room)
    room -= len(prefix)

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
            if len(parts) + len(piece) + 64 > room:
                piece = piece[: max(room - len(parts) - 64, 0)]
            if len(piece) <= 1:
                break
            parts += piece
        own = [fim.sep] + model.tokenize(f"{req.path or 'untitled'}\n") if files else model.tokenize(SNIPPET)
        if len(parts) + len(own) <= room:
            head = parts + own
    tokens = bos + head + [fim.pre] + prefix + [fim.suf] + suffix + [fim.mid]
    warm = len(bos) + len(head) + 1 + max(len(prefix) - WARM_TAIL, 0)
    return FimPrompt(tokens, heal, frozenset(stops), True, cursor_in_indentation(req.prefix), warm=warm)
