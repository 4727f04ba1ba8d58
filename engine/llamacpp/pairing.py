"""Can this draft speak for this target? The checks llama.cpp's common_speculative_are_compatible
makes: a draft token id must mean the same text to both models, or every accepted draft would be a
different word."""

from __future__ import annotations

from ..errors import PairingError
from .model import LlamaModel

MAX_VOCAB_SIZE_DIFF = 128  # Qwen2.5 sizes differ by exactly this much padding
FIRST_CHECKED_TOKEN = 5  # low ids are often differently assigned control tokens


def check_pair(target: LlamaModel, draft: LlamaModel) -> None:
    """Raise PairingError naming both models and the first disagreement."""
    names = f"target {target.name} and draft {draft.name}"
    hint = ("Use a draft from the same model family (same tokenizer), e.g. Qwen2.5-Coder-0.5B for "
            "Qwen2.5-Coder-7B; or use `--draft lookup`, which needs no draft model.")
    if target.vocab_type != draft.vocab_type:
        raise PairingError(
            f"The {names} use different tokenizer types ({target.vocab_type} vs {draft.vocab_type}).",
            hint=hint)
    if target.add_bos != draft.add_bos or (target.add_bos and target.bos != draft.bos):
        raise PairingError(
            f"The {names} handle the BOS token differently (add_bos {target.add_bos}/{draft.add_bos}, "
            f"bos id {target.bos}/{draft.bos}).", hint=hint)
    if target.add_eos != draft.add_eos or target.eos != draft.eos:
        raise PairingError(
            f"The {names} handle the EOS token differently (add_eos {target.add_eos}/{draft.add_eos}, "
            f"eos id {target.eos}/{draft.eos}).", hint=hint)
    diff = abs(target.vocab_size - draft.vocab_size)
    if diff > MAX_VOCAB_SIZE_DIFF:
        raise PairingError(
            f"The {names} have vocabularies of {target.vocab_size} and {draft.vocab_size} tokens "
            f"(more than {MAX_VOCAB_SIZE_DIFF} apart).", hint=hint)
    for tid in range(FIRST_CHECKED_TOKEN, min(target.vocab_size, draft.vocab_size)):
        a, b = target.token_text(tid), draft.token_text(tid)
        if a != b:
            raise PairingError(
                f"The {names} disagree on token {tid}: {a!r} in the target, {b!r} in the draft.",
                hint=hint)
