"""Fill-in-the-middle prompts and the rules that make completions fit inline use.

Prompt layout (the target's own FIM tokens, as llama.cpp's server builds /infill prompts):

    [FIM_REP]repo\n [FIM_SEP]path\n<file text> ...           (only with repo/file-separator tokens)
    [FIM_PRE]<prefix>[FIM_SUF]<suffix>[FIM_MID]

Models without FIM tokens fall back to completing the prefix alone.

Trimming policy (keep what is nearest the cursor): the token budget is the context minus the
completion's max_tokens and a small margin. The suffix gets at most a quarter of it, keeping its
*start*; the prefix gets the rest, keeping its *end*; other files get only what is left, nearest
first, each trimmed from its end. So a huge file still completes with full local context.

Token healing: the prefix's last token is removed from the prompt and the first generated tokens are
constrained to re-create its bytes (which are not emitted again). When the cursor sits at the end of
a line's indentation, the text after those bytes may not start with more blanks: the user's
indentation wins, so four spaces continue with `return`, not ` return` or another indent level.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Model
from .requests import CompletionRequest

MARGIN = 8


@dataclass
class FimPrompt:
    tokens: list[int]
    heal: bytes  # the removed last prefix token's bytes
    stop_tokens: frozenset[int]
    fim: bool  # True when the model's FIM tokens were used
    keep_indent: bool = False  # cursor at the end of the line's indentation: add no more blanks


def cursor_in_indentation(prefix: str) -> bool:
    line = prefix.rsplit("\n", 1)[-1]
    return bool(line) and not line.strip()


def _cut_start(tokens: list[int], n: int) -> list[int]:
    return tokens[-n:] if n > 0 else []


def build_fim_prompt(model: Model, req: CompletionRequest, max_tokens: int) -> FimPrompt:
    budget = max(model.n_ctx - max_tokens - MARGIN, 16)
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

    suffix = model.tokenize(req.suffix)[: budget // 4]
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


def line_indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def following_lines(suffix: str, n: int) -> list[str]:
    """The first `n` non-blank lines after the cursor's line: what a model that "completes" by
    re-emitting the code that follows would write next."""
    return [ln for ln in suffix.split("\n")[1:] if ln.strip()][:n]


class InlineStops:
    """Stop rules for editor completions: end of line (single-line mode), a line cap, the end of
    the block the cursor is in (a line indented less than the cursor line), and text that starts
    repeating what already follows the cursor."""

    def __init__(self, req: CompletionRequest) -> None:
        self.multiline = req.multiline
        self.max_lines = max(1, req.max_lines)
        cur = req.prefix.rsplit("\n", 1)[-1]
        self.cursor_line = cur
        self.block_indent = line_indent(cur) if cur.strip() else len(cur)
        self.next_lines = following_lines(req.suffix, 3)

    def __call__(self, text: str) -> str | None:
        if "\n" not in text:
            return None
        lines = text.split("\n")
        done = lines[:-1]  # lines completed so far
        if not self.multiline and (self.cursor_line + done[0]).strip():
            return "stop"
        if len(done) > self.max_lines:
            return "stop"
        for ln in done[1:]:
            if ln.strip() and line_indent(ln) < self.block_indent:
                return "stop"
        if self.next_lines and len(done) >= 2 and done[-1].strip() and \
                done[-1].strip() == self.next_lines[0].strip():
            return "stop"
        return None


_OPENERS = {")": "(", "]": "[", "}": "{"}


def _unmatched_closers(text: str) -> int:
    """How many closing brackets in `text` close something opened before it (outside `text`)."""
    stack: list[str] = []
    unmatched = 0
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif ch in _OPENERS:
            if stack and stack[-1] == _OPENERS[ch]:
                stack.pop()
            else:
                unmatched += 1
    return unmatched


def _repeated_tail_start(lines: list[str], suffix: str) -> int | None:
    """The index of the first of `lines` in the longest tail (never the first line) that equals,
    indentation and blank lines aside, the lines following the cursor's line; None if no tail
    does."""
    ahead = [ln.strip() for ln in following_lines(suffix, len(lines))]
    for start in range(1, len(lines)):
        tail = [ln.strip() for ln in lines[start:] if ln.strip()]
        if tail and lines[start].strip() and tail == ahead[: len(tail)]:
            return start
    return None


def drop_suffix_repeat(text: str, suffix: str) -> str:
    """`text` (a suggestion at the cursor, finished or still streaming) without what merely repeats
    `suffix` (the document after the cursor); "" when nothing new is left.

    Models often "complete" by re-emitting code that is already there. The one place these rules
    live, for the engine's final completion text and the editor's live ghost text alike:

    - trailing lines equal to the lines after the cursor's line are cut (compared without
      indentation, blank lines skipped; the longest such tail; the first line always stays);
    - a one-line suggestion that ends with the rest of the cursor line loses that ending
      (`f(` + `a, b)` before `)`), unless its own brackets need it (`f(` + `g(1)` keeps its `)`);
    - a suggestion the text after the cursor already starts with (leading blanks aside) is "".
    """
    lines = text.split("\n")
    start = _repeated_tail_start(lines, suffix)
    if start is not None:
        lines = lines[:start]
        while len(lines) > 1 and not lines[-1].strip():
            lines.pop()
        text = "\n".join(lines).rstrip(" \t")
    rest = suffix.split("\n", 1)[0].strip()
    if rest and "\n" not in text and text.endswith(rest):
        closers = sum(ch in _OPENERS for ch in rest)
        if _unmatched_closers(text) >= closers:
            text = text[: len(text) - len(rest)]
    if text.strip() and suffix.lstrip().startswith(text.strip()):
        return ""
    return text


def finish_completion(text: str, req: CompletionRequest) -> str:
    """Cut a finished completion to what is worth showing inline: the line mode, the line cap and
    the cursor's block, then `drop_suffix_repeat`."""
    stops = InlineStops(req)
    lines = text.split("\n")
    if not stops.multiline:
        first = lines[0]
        if not (stops.cursor_line + first).strip() and len(lines) > 1:
            lines = lines[:2]  # cursor at an empty line end: allow the next line
        else:
            lines = lines[:1]
    keep = [lines[0]]
    for ln in lines[1 : stops.max_lines + 1]:
        if ln.strip() and line_indent(ln) < stops.block_indent:
            break
        keep.append(ln)
    while len(keep) > 1 and not keep[-1].strip():
        keep.pop()
    out = drop_suffix_repeat("\n".join(keep), req.suffix)
    return out.rstrip() if "\n" in out else out
