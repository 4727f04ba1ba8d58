"""The diff between a region and its rewrite: rows to draw and hunks to accept or reject.

Lines keep their "\\n", so the text a set of decisions gives is byte for byte the original where
a hunk is rejected and the rewrite where it is accepted. While the rewrite streams, original lines
past the point it has reached are "pending" (not yet rewritten), not removed, and the line being
written shows only once it differs from the original line it would copy (a copied line does not
appear as added and then vanish again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Literal

RowKind = Literal["same", "removed", "added", "pending"]


def split_lines(text: str) -> list[str]:
    """Lines with their "\\n" kept (only "\\n" splits: a "\\r" or form feed stays in its line)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


@dataclass
class Hunk:
    """Original lines [old_start, old_end) rewritten as new lines [new_start, new_end).
    `accepted`: None until the user decides."""

    old_start: int
    old_end: int
    new_start: int
    new_end: int
    accepted: bool | None = None


@dataclass(frozen=True)
class Row:
    kind: RowKind
    text: str  # the line without its "\n"
    index: int  # into the original lines (same, removed, pending) or the new ones (added)
    hunk: int | None = None


@dataclass
class EditDiff:
    """The original region and the rewrite so far; `update` recomputes rows and hunks."""

    old_text: str
    new_text: str = ""
    final: bool = False
    old: list[str] = field(init=False)
    new: list[str] = field(init=False, default_factory=list)
    hunks: list[Hunk] = field(init=False, default_factory=list)
    rows: list[Row] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.old = split_lines(self.old_text)
        self.update(self.new_text, final=self.final)

    def update(self, new_text: str, *, final: bool, cut: bool = False) -> None:
        """`cut`: a final rewrite that stopped short (its length limit): the original lines it did
        not reach are kept, and a half-written last line is dropped."""
        self.new_text, self.final = new_text, final
        new = split_lines(new_text)
        partial = None
        open_end = not final or cut
        if open_end and new and not new[-1].endswith("\n"):
            partial = new.pop()  # a line still being written: shown, not diffed
        self.new = new
        ops = SequenceMatcher(None, self.old, new, autojunk=False).get_opcodes()
        pending_from = len(self.old)
        if open_end and ops and ops[-1][0] in ("delete", "replace") and ops[-1][2] == len(self.old):
            # The rewrite has reached about as far into the original as it has written lines:
            # that many are replaced, the rest wait.
            tag, i1, i2, j1, j2 = ops.pop()
            reached = i1 + min(i2 - i1, j2 - j1)
            if tag == "replace":
                ops.append(("replace", i1, reached, j1, j2))
            pending_from = reached
        self.hunks, self.rows = [], []
        for tag, i1, i2, j1, j2 in ops:
            if tag == "equal":
                self.rows += [Row("same", self.old[i].rstrip("\n"), i) for i in range(i1, i2)]
                continue
            h = len(self.hunks)
            self.hunks.append(Hunk(i1, i2, j1, j2))
            self.rows += [Row("removed", self.old[i].rstrip("\n"), i, h) for i in range(i1, i2)]
            self.rows += [Row("added", new[j].rstrip("\n"), j, h) for j in range(j1, j2)]
        if partial is not None and not final and not (
                pending_from < len(self.old) and self.old[pending_from].startswith(partial)):
            # a line being written is shown once it leaves the original line it would copy
            self.rows.append(Row("added", partial, len(new), None))
        self.rows += [Row("same" if final else "pending", self.old[i].rstrip("\n"), i)
                      for i in range(pending_from, len(self.old))]

    @property
    def changed(self) -> bool:
        return bool(self.hunks)

    def frontier(self) -> int | None:
        """The row of the last line the rewrite has reached (the view follows it while
        streaming), None before the first."""
        return next((at for at in range(len(self.rows) - 1, -1, -1) if self.rows[at].kind != "pending"), None)

    def hunk_row(self, hunk: int) -> int:
        """The first row of a hunk."""
        return next(at for at, row in enumerate(self.rows) if row.hunk == hunk)

    def result(self, undecided: bool = False) -> str:
        """The region's text with each hunk's decision applied (`undecided` for the rest); only
        meaningful once `final`."""
        out: list[str] = []
        at = 0
        for hunk in self.hunks:
            out += self.old[at:hunk.old_start]
            take = undecided if hunk.accepted is None else hunk.accepted
            out += self.new[hunk.new_start:hunk.new_end] if take else self.old[hunk.old_start:hunk.old_end]
            at = hunk.old_end
        out += self.old[at:]
        return "".join(out)
