"""The edit prompt and the rules for an edit's answer: one place for every backend and the bench.

An `EditRequest` asks the model to rewrite a region of a file. The prompt is a document that the
model continues, the way edit-apply tools prompt a model, in plain text (no chat template: small
instruct models copy far more of the region when the answer is the continuation of a "before the
change / after the change" document than when it is a chat reply):

    intro:        the file (or part of it) and a change to make; every line the change does not
                  touch is kept as it is
    context:      the lines above and below the region (when the region is part of a file)
    region:       "before the change", in a code block, with the indentation all its lines share
                  taken off (a method is shown at the left margin; the answer's lines get it
                  back, `EditText`): small models rewrote an indented region one level out
    instruction:  "Change: ..."
    answer_start: "after the change", and the opening of the code block the model fills in

The instruction comes last but for the answer's header, so everything before it can be read ahead
(Engine.prewarm with an empty instruction) while the user is still typing it. The prompt is a list
of pieces: the prompt's own words, and the user's texts (file text, instruction) between them. A
local engine tokenizes each piece on its own (the user's text without parsing special tokens: a
file that contains `<|im_end|>` stays text), so the pieces before the instruction tokenize the same
whatever the instruction is, and the region's tokens are known: the drafter follows them
(engine/edit_drafter.py). A remote server gets the same text as one user message.

The answer's rules (`EditText`): an opening code fence is dropped, a closing one ends the answer,
so does writing on into the file's next lines (the first two non-blank lines after the region, cut
off with the blank lines before them: a small model that copied its region often goes on copying
the file), and the answer keeps the region's trailing line break convention (it ends with a line break
exactly when the region did; blank lines the model wrote before its closing fence stay when the
region ends with a line break).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Callable, Literal

from .completion import cut_text
from .requests import EditRequest

KEEP = "The new version keeps every line the change does not touch exactly as it is."
# The answer's length when the request gives none: the region rewritten twice over, plus room for
# what an instruction adds to a short region.
MAX_TOKENS_FACTOR = 2
MAX_TOKENS_SLACK = 64
OVERHEAD_TOKENS = 160  # the template's text and the system message, counted generously
# Room kept for the instruction whatever its length, so a prewarm (no instruction yet) fits the
# context exactly as the request that follows does and reads the same prompt start.
INSTRUCTION_ROOM = 256
AFTER_SHARE = 4  # the text after the region gets at most 1/4 of the context budget
AFTER_LINES = 2  # an answer that writes the file's next this many non-blank lines has run on

LANGUAGES = {".py": "python", ".pyi": "python", ".js": "javascript", ".jsx": "jsx",
             ".ts": "typescript", ".tsx": "tsx", ".go": "go", ".rs": "rust", ".c": "c", ".h": "c",
             ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".java": "java", ".kt": "kotlin",
             ".swift": "swift", ".rb": "ruby", ".php": "php", ".lua": "lua", ".sh": "bash",
             ".zig": "zig", ".cs": "csharp", ".scala": "scala", ".sql": "sql", ".toml": "toml",
             ".yaml": "yaml", ".yml": "yaml", ".md": "markdown", ".html": "html", ".css": "css",
             ".json": "json"}


def fence_language(path: str | None) -> str:
    """The code block's language tag for a file (empty when unknown)."""
    return LANGUAGES.get(PurePath(path).suffix.lower(), "") if path else ""


def fence_for(*texts: str) -> str:
    """A code fence longer than any run of backticks in `texts` (at least three), so the file's
    own backticks never close a block (the whole file's: a prewarm and its request agree)."""
    longest = max((len(m) for t in texts for m in re.findall(r"`+", t)), default=0)
    return "`" * max(3, longest + 1)


def default_max_tokens(region_tokens: int) -> int:
    return MAX_TOKENS_FACTOR * region_tokens + MAX_TOKENS_SLACK


PieceKind = Literal["template", "text", "region", "instruction"]


@dataclass(frozen=True)
class Piece:
    kind: PieceKind  # "template": the prompt's own words; the rest: the user's text
    text: str


@dataclass(frozen=True)
class EditPrompt:
    """The prompt as `pieces` (the instruction last), then `answer_start` (the answer's header and
    the opening fence the model's code follows)."""

    pieces: tuple[Piece, ...]
    answer_header: str  # "<the file or part>, after the change"
    fence: str
    lang: str

    @property
    def answer_start(self) -> str:
        return f"\n\n# {self.answer_header}\n{self.fence}{self.lang}\n"

    def message(self) -> str:
        """The prompt as one chat message, for a server that applies its own template (the
        answer cannot be started there, so the message asks for it)."""
        return ("".join(p.text for p in self.pieces)
                + f"\n\nAnswer with {self.answer_header}, in one code block, no explanation.")


def fit_context(req: EditRequest, room: int, count: Callable[[str], int]) -> tuple[str, str]:
    """(before, after) cut to at most `room` tokens by `count`, nearest the region kept: the
    text after gets at most 1/AFTER_SHARE of the room (its start), the text before the rest (its
    end)."""
    before, after = req.before, req.after
    if room <= 0:
        return "", ""
    n_after = count(after) if after else 0
    if n_after > room // AFTER_SHARE:
        after = _cut_to(after, room // AFTER_SHARE, "start", count)
        n_after = count(after) if after else 0
    left = room - n_after
    if before and count(before) > left:
        before = _cut_to(before, left, "end", count)
    return before, after


def _cut_to(text: str, limit: int, keep: Literal["start", "end"], count: Callable[[str], int]) -> str:
    for _ in range(8):
        if not text or limit <= 0:
            return ""
        n = count(text)
        if n <= limit:
            return text
        text = cut_text(text, limit / n * 0.95, keep)
    return ""


def region_margin(region: str) -> str:
    """The indentation every line of the region starts with, taken off in the prompt and put
    back on the answer's lines: a small model asked to rewrite a method often writes it one level
    out (every line a change, and the copy of the region no longer agrees). None ("") where a
    blank line is not empty (taking the margin off it could not be undone byte for byte)."""
    lines = region.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    margin: str | None = None
    for line in lines:
        if not line.strip():
            if line:
                return ""
            continue
        indent = line[:len(line) - len(line.lstrip(" \t"))]
        if margin is None:
            margin = indent
        else:
            while not indent.startswith(margin):
                margin = margin[:-1]
        if not margin:
            return ""
    return margin or ""


def dedent(region: str, margin: str) -> str:
    """The region with `margin` taken off each non-empty line."""
    if not margin:
        return region
    return "\n".join(line[len(margin):] if line else line for line in region.split("\n"))


def build_edit_prompt(req: EditRequest, before: str, after: str) -> EditPrompt:
    """The prompt for `req`, with the context already fitted (`fit_context`)."""
    lang = fence_language(req.path)
    fence = fence_for(req.region, req.before, req.after)
    path = req.path or "untitled"
    region = dedent(req.region, region_margin(req.region))
    region = region if region.endswith("\n") or not region else region + "\n"
    part = f"the part of {path}" if before or after else path
    intro = (f"Below is part of {path} and a change to make to it." if before or after
             else f"Below is {path} and a change to make.")
    pieces: list[Piece] = [Piece("template", f"{intro} {KEEP}\n\n")]
    for text, where in ((before, "above"), (after, "below")):
        if text:
            tail = "" if text.endswith("\n") else "\n"
            pieces += [Piece("template", f"# {path}, the lines {where} the part\n{fence}{lang}\n"),
                       Piece("text", text), Piece("template", f"{tail}{fence}\n\n")]
    pieces += [Piece("template", f"# {part}, before the change\n{fence}{lang}\n"), Piece("region", region),
               Piece("template", fence), Piece("template", "\n\nChange: "),
               Piece("instruction", req.instruction)]
    return EditPrompt(tuple(pieces), f"{part}, after the change", fence, lang)


class EditText:
    """An edit's answer text as it streams, made clean (the module docstring's rules): `feed` a
    piece of what the model wrote, get what may be shown now; `done` once the closing fence came;
    `finish` gives the rest. The pieces returned add up to `text`, the whole new region."""

    def __init__(self, region: str, fence: str = "```", after: str = "") -> None:
        self.ends_with_newline = region.endswith("\n") or not region
        self.fence = fence  # a line that starts with it closes the block
        self.margin = region_margin(region)  # put back at the start of each line written
        # the file's next non-blank lines: the answer that writes them has run past its region
        self._after_head = [line for line in after.split("\n") if line.strip()][:AFTER_LINES]
        self.text = ""
        self.done = False
        self._line = ""  # the current line, not shown yet while it may be a fence
        self._newlines = ""  # line breaks at the end, held until text follows them
        self._first = True  # the current line is the answer's first
        self._sink: Callable[[str], None] | None = None

    def relay(self, sink: Callable[[str], None] | None) -> Callable[[str], None]:
        """A callback that feeds this and passes what may be shown to `sink`, `finish`'s
        rest included."""
        self._sink = sink

        def feed(piece: str) -> None:
            shown = self.feed(piece)
            if shown and sink is not None:
                sink(shown)

        return feed

    def check(self, _text: str) -> str | None:
        """A decoder's stop check: "stop" once the closing fence came."""
        return "stop" if self.done else None

    def feed(self, piece: str) -> str:
        if self.done or not piece:
            return ""
        shown: list[str] = []
        for part in re.split(r"(\n)", piece):
            if not part:
                continue
            out: list[str] = []
            if part == "\n":
                self._end_line(out)
            else:
                self._line += part
                if not self._maybe_fence(self._line):
                    out.append(self._flush_line())
            self.text += "".join(out)
            shown += out
            if part == "\n" and not self.done and self._ran_on():
                self.done = True
            if self.done:
                break
        return "".join(shown)

    def _ran_on(self) -> bool:
        """The answer's last complete lines are the file's next lines: cut them (and the blank
        lines before them) off, and the answer ends."""
        head = self._after_head
        if not head or self._line or not self._newlines:
            return False
        lines = self.text.split("\n")
        tail = [line for line in lines if line.strip()][-len(head):]
        if tail != head:
            return False
        keep = len(lines)
        found = 0
        while keep > 0 and found < len(head):  # back over the head's lines and blank lines between
            keep -= 1
            found += bool(lines[keep].strip())
        while keep > 0 and not lines[keep - 1].strip():
            keep -= 1
        self.text = "\n".join(lines[:keep]) + ("\n" if keep else "")
        self._newlines = ""
        return True

    def _maybe_fence(self, line: str) -> bool:
        """The line could still be (or is) a code fence: held."""
        stripped = line.lstrip(" \t")
        return stripped.startswith(self.fence) or (not stripped or self.fence.startswith(stripped))

    def _flush_line(self) -> str:
        at_start = bool(self._newlines) or not self.text  # nothing of this line shown yet
        line = self.margin + self._line if at_start and self._line else self._line
        shown = self._newlines + line
        self._newlines, self._line, self._first = "", "", False
        return shown

    def _end_line(self, out: list[str]) -> None:
        line = self._line
        if line.lstrip(" \t").startswith(self.fence):
            if self._first and not self.text and not self._newlines:  # an opening fence: dropped
                self._line, self._first = "", False
                return
            self._line = ""
            self.done = True
            return
        if line:
            out.append(self._flush_line())
        else:
            self._first = False
        self._newlines += "\n"

    def finish(self) -> str:
        """What is left to show once the answer has ended (by its fence, its end or a cut)."""
        shown = ""
        if self._line and not self._line.lstrip(" \t").startswith(self.fence[:1]):
            shown = self._flush_line()
        self._line = ""
        if self.ends_with_newline:
            whole = self.text + shown
            shown += self._newlines or ("\n" if whole and not whole.endswith("\n") else "")
        self._newlines = ""
        self.text += shown
        self.done = True
        if shown and self._sink is not None:
            self._sink(shown)
        return shown


def clean_edit_text(raw: str, region: str, fence: str = "```", after: str = "") -> str:
    """A whole answer made clean at once (a backend that did not stream it)."""
    t = EditText(region, fence, after)
    t.feed(raw)
    t.finish()
    return t.text
