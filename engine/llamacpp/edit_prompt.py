"""An edit's prompt in a local model's own tokens (engine/edit_prompt.py has the layout).

Each piece is tokenized on its own, without parsing special tokens (a file's `<|im_end|>` stays
text). So the tokens before the instruction do not depend on it (a prewarm reads them ahead, then
the instruction's words as they are typed), and
the region's tokens, with the fence that closes them, are where the edit drafter copies from.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..edit_prompt import (
    INSTRUCTION_ROOM,
    OVERHEAD_TOKENS,
    EditPrompt,
    build_edit_prompt,
    default_max_tokens,
    fit_context,
)
from ..model import Model
from ..requests import EditRequest


@dataclass
class EditTokens:
    tokens: list[int]
    prompt: EditPrompt
    warm: int  # tokens before the answer's header: what a prewarm reads (the instruction as given)
    region: tuple[int, int]  # the region's tokens in `tokens`, its closing fence included
    max_tokens: int


def build_edit_tokens(model: Model, req: EditRequest) -> EditTokens:
    """The prompt's tokens for `req`, its context cut to fit the model's context."""
    region_tokens = len(model.tokenize(req.region))
    max_tokens = req.max_tokens or default_max_tokens(region_tokens)
    instruction = max(INSTRUCTION_ROOM, len(model.tokenize(req.instruction)))
    room = model.n_ctx - max_tokens - region_tokens - instruction - OVERHEAD_TOKENS
    before, after = fit_context(req, room, lambda t: len(model.tokenize(t)))
    prompt = build_edit_prompt(req, before, after)
    tokens = [model.bos] if model.add_bos and model.bos >= 0 else []
    warm, region_at, region_end = 0, 0, 0
    for piece in prompt.pieces:
        if piece.kind == "region":
            region_at = len(tokens)
        tokens += model.tokenize(piece.text)
        if piece.kind == "region":
            region_end = len(tokens) + len(model.tokenize(prompt.fence))
    warm = len(tokens)
    tokens += model.tokenize(prompt.answer_start)
    return EditTokens(tokens, prompt, warm, (region_at, region_end), max_tokens)
