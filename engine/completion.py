"""Every backend-neutral rule for an inline completion, in one place.

The local llama.cpp engine and the remote (HTTP) engine both apply these rules to the text they
generate, so a suggestion looks the same whichever backend wrote it; the editor's live ghost text
uses `drop_suffix_repeat` from here too. Only rules that need the model itself (token healing,
masking a token that would add indentation) live with the backend (engine/llamacpp/fim_prompt.py
and the decoder).

The prompt budget (keep what is nearest the cursor): a fill-in-the-middle prompt may use the
context minus the completion's max_tokens and a small margin. The suffix gets at most a quarter of
it, keeping its *start*; the prefix gets the rest, keeping its *end*; other files get only what is
left, nearest first, each trimmed from its end. So a huge file still completes with full local
context, against a local model or a server with a small context alike.

The line rule (one rule for every backend): a suggestion shows at most `max_lines` lines, one in
single-line mode. The rest of the cursor's line is the first line, except when the suggestion
writes nothing there (it starts with a line break): that blank lead-in does not count, so a
suggestion after `def f():` may still be the next line. Why this rule: the cap is what the user
sees, and single-line mode is the same rule with a cap of one.

Then: the suggestion ends at the end of the cursor's block (a line indented less than the cursor's
line; at the end of a line that has code, the block of the suggestion's first new line when that
steps out to an enclosing block, never to the top level: after `return v` that ends an `if`, the
code goes on in the function, and Tab on such a suggestion must be followed by the next one), or
at a new definition (`def`, `class`, a decorator, `function`, `fn`, ...) at the block's level or
above after a blank line (the next function is not this block's business), and
at a line that repeats the line after the cursor; text that merely repeats what follows
the cursor is dropped; trailing blank lines go; when the cursor sits at the end of a line's
indentation, the suggestion adds no more blanks there (the user's indentation wins).

The time rule (`Deadline`): a suggestion's budget counts from the keystroke, but one that has read
its prompt and begun writing gets at least GENERATION_FLOOR_S more; and once writing, it writes for
at most its predict budget (as llama.vim's t_max_predict_ms): on a machine that writes 80 tokens a
second a 64-token suggestion would take most of a second after its first character, while its
first lines are what the user reads and takes; the rest follows from the prefetch.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, Literal

from .requests import CompletionRequest, ContextFile

MARGIN = 8
MIN_BUDGET = 16
# A completion whose prompt alone used up its time budget (a cold cache on a loaded machine) still
# writes for this long: having paid for the prompt, showing nothing is the worst outcome (seen in
# tmux under load: three requests, no text at all).
GENERATION_FLOOR_S = 0.5


class Deadline:
    """When a completion must stop writing: `time_budget_s` after its keystroke (`started_at`,
    monotonic; None: now), and never sooner than GENERATION_FLOOR_S after it began writing; and
    never later than `predict_budget_s` after it began writing."""

    def __init__(self, req: CompletionRequest) -> None:
        budget = req.time_budget_s
        self.at = None if not budget else (req.started_at or time.monotonic()) + budget
        self._predict = req.predict_budget_s or None
        self._writing = False

    def writing(self) -> None:
        """The prompt is read and the first text is there (called once; later calls are no-ops)."""
        if self._writing:
            return
        self._writing = True
        now = time.monotonic()
        if self.at is not None:
            self.at = max(self.at, now + GENERATION_FLOOR_S)
        if self._predict is not None:
            cap = now + self._predict
            self.at = cap if self.at is None else min(self.at, cap)

    def left(self) -> float | None:
        """Seconds left (0 when passed), None without a budget."""
        return None if self.at is None else max(self.at - time.monotonic(), 0.0)

    def passed(self) -> bool:
        return self.at is not None and time.monotonic() > self.at


def prompt_budget(n_ctx: int, max_tokens: int) -> int:
    """Tokens a FIM prompt may use in a context of `n_ctx` while leaving room for the reply."""
    return max(n_ctx - max_tokens - MARGIN, MIN_BUDGET)


def suffix_share(budget: int) -> int:
    """The most tokens the text after the cursor may take of a prompt budget."""
    return budget // 4


def cut_text(text: str, fraction: float, keep: Literal["start", "end"]) -> str:
    """About `fraction` of `text` (by characters), keeping its start or its end, cut at a line
    break when one is near. Used to shrink a prompt part towards a token count."""
    n = max(int(len(text) * fraction), 0)
    if n >= len(text):
        return text
    if keep == "end":
        part = text[len(text) - n:]
        nl = part.find("\n")
        return part[nl + 1:] if 0 <= nl < len(part) // 8 else part
    part = text[:n]
    nl = part.rfind("\n")
    return part[: nl + 1] if nl >= 0 and nl > len(part) - len(part) // 8 else part


# Where no tokenizer is at hand (a server without a tokenize endpoint), a prompt part is counted
# as one token per two UTF-8 bytes: code tokenizers average 3-4 bytes a token on source code, so
# this over-counts and the prompt fits; a token is never less than one byte, the exact worst case.
SAFE_BYTES_PER_TOKEN = 2.0

TokenCount = Callable[[str], Awaitable[int]]


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8")) / SAFE_BYTES_PER_TOKEN)


async def fit_to_tokens(text: str, limit: int, keep: Literal["start", "end"],
                        count: TokenCount) -> tuple[str, int]:
    """`text` cut (keeping its start or end) to at most `limit` tokens by `count`; returns the
    text and its token count (an upper bound when it fitted without counting)."""
    if limit <= 0 or not text:
        return "", 0
    size = len(text.encode("utf-8"))
    if size <= limit:  # a token is at least one byte: it fits without asking the tokenizer
        return text, size
    n = await count(text)
    for _ in range(8):
        if n <= limit:
            return text, n
        text = cut_text(text, limit / n * 0.95, keep)
        n = await count(text) if text else 0
    return (text, n) if n <= limit else ("", 0)


@dataclass(frozen=True)
class FimText:
    """What of a completion request's text goes into a prompt, after the budget."""

    prefix: str
    suffix: str
    context_files: tuple[ContextFile, ...]


FILE_HEADER_TOKENS = 16  # a context file's path line and separator


async def fit_fim_text(req: CompletionRequest, budget: int, count: TokenCount) -> FimText:
    """The budget rule above on text: suffix first (a quarter at most, its start), then the
    prefix (the rest, its end), then other files in the order given (nearest first), each from
    its start, while room is left."""
    whole = req.prefix + req.suffix + "".join(f.path + f.text for f in req.context_files)
    if len(whole.encode("utf-8")) + FILE_HEADER_TOKENS * len(req.context_files) <= budget:
        return FimText(req.prefix, req.suffix, req.context_files)
    suffix, n_suffix = await fit_to_tokens(req.suffix, suffix_share(budget), "start", count)
    prefix, n_prefix = await fit_to_tokens(req.prefix, budget - n_suffix, "end", count)
    room = budget - n_suffix - n_prefix
    files: list[ContextFile] = []
    for cf in req.context_files:
        if room <= 2 * FILE_HEADER_TOKENS:
            break
        text, n = await fit_to_tokens(cf.text, room - FILE_HEADER_TOKENS, "start", count)
        if not text:
            break
        files.append(ContextFile(cf.path, text))
        room -= n + FILE_HEADER_TOKENS
    return FimText(prefix, suffix, tuple(files))


def cursor_in_indentation(prefix: str) -> bool:
    line = prefix.rsplit("\n", 1)[-1]
    return bool(line) and not line.strip()


def without_cursor_indentation(prefix: str) -> str:
    """The prefix without the blanks the cursor line holds so far, when the cursor sits at the end
    of a line's indentation. A backend that cannot heal tokens (a server) sends this, so the model
    writes the line's indentation itself instead of ending the line there; `finish_completion`
    then keeps the user's indentation. The local engine heals the last token instead."""
    return prefix.rstrip(" \t") if cursor_in_indentation(prefix) else prefix


def line_indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def following_lines(suffix: str, n: int) -> list[str]:
    """The first `n` non-blank lines after the cursor's line: what a model that "completes" by
    re-emitting the code that follows would write next."""
    return [ln for ln in suffix.split("\n")[1:] if ln.strip()][:n]


def lead_in(lines: list[str]) -> int:
    """1 when the first of a suggestion's lines is a blank lead-in (the suggestion starts with a
    line break and writes nothing on the cursor's line), else 0: such a line does not count."""
    return 1 if len(lines) > 1 and not lines[0].strip() else 0


# The start of a new definition (Python, JavaScript/TypeScript, Rust, Go): after a blank line, at
# the level of the cursor's block or above, it ends the suggestion.
_DEFINITION = re.compile(
    r"(?:@|(?:async\s+)?def\s|class\s|(?:export\s+(?:default\s+)?)?(?:async\s+)?function\b"
    r"|(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?fn\s|func\s|impl\b)"
)


class InlineStops:
    """The rules above as a stop check on a growing text, so generation ends as soon as the
    suggestion is complete: the line cap, the end of the cursor's block, and a line that repeats
    the line after the cursor. Returns "stop" or None."""

    def __init__(self, req: CompletionRequest) -> None:
        self.line_cap = max(1, req.max_lines) if req.multiline else 1
        cur = req.prefix.rsplit("\n", 1)[-1]
        self.block_indent = line_indent(cur) if cur.strip() else len(cur)
        # at the end of a line with code, a suggestion may step out to an enclosing block
        self.may_step_out = bool(cur.strip()) and not req.suffix.split("\n", 1)[0].strip()
        self.next_lines = following_lines(req.suffix, 3)

    def block_for(self, lines: list[str]) -> int:
        """The indentation below which a suggestion's `lines` end it (the rule above)."""
        if self.may_step_out:
            first = next((ln for ln in lines[1:] if ln.strip()), None)
            if first is not None and 0 < line_indent(first) < self.block_indent:
                return line_indent(first)
        return self.block_indent

    def block_end(self, lines: list[str]) -> int | None:
        """The index of the first of a suggestion's `lines` past the cursor's block (never the
        first line): one indented less than the block, or a new definition at the block's level
        or above after a blank line (the next function, class or decorator: not this block's
        business, and without its body it is half a suggestion). None: all of them belong."""
        block = self.block_for(lines)
        for i in range(1, len(lines)):
            ln = lines[i]
            if not ln.strip():
                continue
            indent = line_indent(ln)
            if indent < block:
                return i
            if indent <= block and not lines[i - 1].strip() and _DEFINITION.match(ln, indent):
                return i
        return None

    def __call__(self, text: str) -> str | None:
        if "\n" not in text:
            return None
        done = text.split("\n")[:-1]  # lines completed so far
        if len(done) - lead_in(done + [""]) >= self.line_cap:
            return "stop"
        if self.block_end(done) is not None:
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
    live, for every backend's final completion text and the editor's live ghost text alike:

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
    """Cut a finished completion (from any backend) to what is worth showing inline: the line cap,
    the cursor's block, trailing blanks, the user's indentation, then `drop_suffix_repeat`."""
    stops = InlineStops(req)
    lines = text.split("\n")
    lead = lead_in(lines)
    lines = lines[: lead + stops.line_cap]
    end = stops.block_end(lines)
    keep = lines[:end] if end is not None else lines
    while len(keep) > 1 and not keep[-1].strip():
        keep.pop()
    if cursor_in_indentation(req.prefix):
        keep[0] = keep[0].lstrip(" \t")
    out = drop_suffix_repeat("\n".join(keep), req.suffix)
    return out.rstrip() if "\n" in out else out


def live_completion(text: str, req: CompletionRequest) -> str:
    """What of a completion still streaming may be shown: `finish_completion` on its complete
    lines, plus the partial last line only while it is the first line with content. Why: a partial
    later line can still turn out to end the block or repeat the code after the cursor, and the
    finished text would then cut it; shown first and cut later, a suggestion seemed to vanish.
    With the same rules on the same lines, the finished text extends what was shown."""
    lines = text.split("\n")
    first = next((i for i, ln in enumerate(lines) if ln.strip()), len(lines))
    if len(lines) - 1 > first:
        text = "\n".join(lines[:-1])
    elif 0 < first < len(lines):
        # The partial line is the first with content, below the cursor's line: while it may still
        # become the line after the cursor's again, the finished text could cut it as a repeat
        # (`drop_suffix_repeat` keeps only the cursor's line for sure), so it waits; so does one
        # after a blank line that may still become a definition (`def` of `def f():`), which ends
        # the block.
        ahead = following_lines(req.suffix, 1)
        if (ahead and ahead[0].strip().startswith(lines[first].strip())) or (
                not lines[first - 1].strip() and _may_define(lines[first])):
            text = "\n".join(lines[:first])
    return finish_completion(text, req)


_DEFINITION_WORDS = ("def", "class", "function", "fn", "func", "impl")
_MODIFIERS = ("async", "export", "default", "pub")


def _may_define(partial: str) -> bool:
    """Whether a line still being written may become a definition (`_DEFINITION`) once its last
    word is complete: modifiers, then the start of a definition's keyword."""
    if partial.lstrip().startswith("@"):
        return True
    words = partial.split()
    if not words:
        return False
    modifier = lambda w: w in _MODIFIERS or w.startswith("pub(")  # noqa: E731
    if partial[-1:].isspace():
        return all(modifier(w) for w in words)  # the keyword may come next
    *before, last = words
    return all(modifier(w) for w in before) and any(k.startswith(last) for k in _DEFINITION_WORDS + _MODIFIERS)


def ended_completion(text: str, req: CompletionRequest, reason: str) -> str:
    """The text a completion shows once it has ended (every backend's `Finished.text`): a natural
    end by `finish_completion`; one the time budget cut by the live rules, as it was on screen,
    so it never ends on half a later line (`    if` under two whole lines); Tab takes the whole
    lines and the prefetch goes on from there."""
    return live_completion(text, req) if reason == "time" else finish_completion(text, req)


def worth_caching(reason: str, text: str) -> bool:
    """Whether a finished completion may be cached for its cursor: a complete answer, or one the
    time budget cut after some text. A completion cut before any text (a cold server still reading
    the prompt) is not an answer, and caching it would hide every later one."""
    if reason in ("eos", "length", "stop"):
        return True
    return reason == "time" and bool(text)
