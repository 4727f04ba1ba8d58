"""Fill-in-the-middle prompts in a local model's own tokens (the backend side of completions).

Layout (the target's own FIM tokens, as llama.cpp's server builds /infill prompts):

    [FIM_REP]repo\n [FIM_SEP]path\n<file text> ...           (only with repo/file-separator tokens)
    [FIM_PRE]<prefix>[FIM_SUF]<suffix>[FIM_MID]

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


def _cut_start(tokens: list[int], n: int) -> list[int]:
    return tokens[-n:] if n > 0 else []


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
        return FimPrompt(tokens, heal, frozenset(), False, cursor_in_indentation(req.prefix))

    suffix = model.tokenize(req.suffix)[: suffix_share(budget)]
    room = budget - len(bos) - 3 - len(suffix)
    prefix = _cut_start(prefix, room)
    room -= len(prefix)

    head: list[int] = []
    stops = {t for t in (fim.pad, fim.rep, fim.sep, fim.pre, fim.suf, fim.mid) if t >= 0}
    if fim.rep >= 0 and fim.sep >= 0 and (req.context_files or req.path):
        repo = model.tokenize("specterm\n")
        parts: list[int] = [fim.rep] + repo
        for cf in req.context_files:
            piece = [fim.sep] + model.tokenize(f"{cf.path}\n{cf.text}")
            if len(parts) + len(piece) + 64 > room:
                piece = piece[: max(room - len(parts) - 64, 0)]
            if len(piece) <= 1:
                break
            parts += piece
        own = [fim.sep] + model.tokenize(f"{req.path or 'untitled'}\n")
        if len(parts) + len(own) <= room:
            head = parts + own
    tokens = bos + head + [fim.pre] + prefix + [fim.suf] + suffix + [fim.mid]
    return FimPrompt(tokens, heal, frozenset(stops), True, cursor_in_indentation(req.prefix))
