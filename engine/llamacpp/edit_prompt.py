"""An edit's prompt in a local model's own tokens (engine/edit_prompt.py has the layout).

Each piece is tokenized on its own: the chat template's text with its special tokens parsed, the
user's text (file, region, instruction) as plain text. So the tokens before the instruction do not
depend on it (a prewarm reads them ahead), and the region's tokens, with the fence that closes
them, are where the edit drafter copies from.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..edit_prompt import (INSTRUCTION_ROOM, OVERHEAD_TOKENS, EditPrompt, build_edit_prompt,
                           default_max_tokens, fit_context)
from ..model import Model
from ..requests import EditRequest

_MARK = "\ue000{}\ue001"  # stands for piece i inside the rendered template (private-use characters)


@dataclass
class EditTokens:
    tokens: list[int]
    prompt: EditPrompt
    warm: int  # tokens before the instruction: what a prewarm reads
    region: tuple[int, int]  # the region's tokens in `tokens`, its closing fence included
    max_tokens: int


def _render(model: Model, prompt: EditPrompt) -> tuple[str, str]:
    """The template's text before the first piece and after the last one (the answer's start
    included), with the user message's pieces taken out."""
    marks = "".join(_MARK.format(i) for i in range(len(prompt.user)))
    if model.chat_template:
        text = model.apply_chat_template([("system", prompt.system), ("user", marks)])
    else:
        text = f"{prompt.system}\n\n{marks}\n\n"
    head, _, rest = text.partition(_MARK.format(0))
    tail = rest.rpartition(_MARK.format(len(prompt.user) - 1))[2]
    return head, tail + prompt.answer_start


def build_edit_tokens(model: Model, req: EditRequest) -> EditTokens:
    """The prompt's tokens for `req`, its context cut to fit the model's context."""
    region_tokens = len(model.tokenize(req.region))
    max_tokens = req.max_tokens or default_max_tokens(region_tokens)
    instruction = max(INSTRUCTION_ROOM, len(model.tokenize(req.instruction)))
    room = model.n_ctx - max_tokens - region_tokens - instruction - OVERHEAD_TOKENS
    before, after = fit_context(req, room, lambda t: len(model.tokenize(t)))
    prompt = build_edit_prompt(req, before, after)
    head, tail = _render(model, prompt)
    bos_text = model.token_text(model.bos) if model.bos >= 0 else ""
    add_special = model.add_bos and not (bos_text and head.startswith(bos_text))
    tokens = model.tokenize(head, add_special=add_special, parse_special=True)
    warm, region_at, region_end = 0, 0, 0
    for piece in prompt.user:
        if piece.kind == "instruction":
            warm = len(tokens)
        if piece.kind == "region":
            region_at = len(tokens)
        tokens += model.tokenize(piece.text, parse_special=piece.kind == "template")
        if piece.kind == "region":
            region_end = len(tokens) + len(model.tokenize(prompt.fence))
    tokens += model.tokenize(tail, parse_special=True)
    return EditTokens(tokens, prompt, warm, (region_at, region_end), max_tokens)
