"""The edit flow's pure parts: the diff's rows, hunks and results byte for byte, the region an
edit rewrites, the merge region of a chat block, the instruction history."""

from __future__ import annotations

import itertools

import pytest

from specterm.tui.edit.box import InstructionHistory
from specterm.tui.edit.diff import EditDiff, split_lines
from specterm.tui.edit.merge import defined_name, merge_instruction, merge_rows
from specterm.tui.edit.region import block_rows, pick_rows, selected_rows, target_for

OLD = "def f(x):\n    a = 1\n    b = 2\n    return a + b\n"
NEW = "def f(x):\n    a = 10\n    b = 2\n    c = 3\n    return a + b + c\n"


def test_split_lines_keeps_every_byte():
    for text in ["", "a", "a\n", "a\n\nb", "a\r\nb\r\n", "x\x0cy\n", "\n\n"]:
        assert "".join(split_lines(text)) == text


def test_hunks_and_every_combination_of_decisions_is_byte_exact():
    diff = EditDiff(OLD, NEW, final=True)
    assert len(diff.hunks) == 2
    kinds = [row.kind for row in diff.rows]
    assert kinds == ["same", "removed", "added", "same", "removed", "added", "added"]
    for choice in itertools.product([True, False], repeat=2):
        for hunk, take in zip(diff.hunks, choice):
            hunk.accepted = take
        expected_lines = ["def f(x):\n", "    a = 10\n" if choice[0] else "    a = 1\n", "    b = 2\n"]
        expected_lines += ["    c = 3\n", "    return a + b + c\n"] if choice[1] else ["    return a + b\n"]
        assert diff.result() == "".join(expected_lines)
    for hunk in diff.hunks:
        hunk.accepted = None
    assert diff.result(undecided=True) == NEW
    assert diff.result(undecided=False) == OLD


def test_streaming_keeps_unreached_lines_pending_not_removed():
    diff = EditDiff(OLD)
    diff.update("def f(x):\n    a = 10\n    c", final=False)
    kinds = [(row.kind, row.text) for row in diff.rows]
    assert ("added", "    c") in kinds  # the line being written is shown: it left "    b = 2"
    assert [k for k, _ in kinds if k == "removed"] == ["removed"]  # "a = 1" only
    assert [t for k, t in kinds if k == "pending"] == ["    b = 2", "    return a + b"]
    assert diff.rows[diff.frontier()].text == "    c"  # the view follows the line being written
    diff.update("def f(x):\n    a = 10\n    b", final=False)  # on its way to copy "    b = 2"
    assert [(row.kind, row.text) for row in diff.rows] == [
        ("same", "def f(x):"), ("removed", "    a = 1"), ("added", "    a = 10"),
        ("pending", "    b = 2"), ("pending", "    return a + b")]
    assert diff.frontier() == 2
    assert EditDiff(OLD).frontier() is None


def test_a_rewrite_cut_at_its_length_limit_keeps_the_rest():
    diff = EditDiff(OLD)
    diff.update("def f(x):\n    a = 10\n    b = ", final=True, cut=True)
    for hunk in diff.hunks:
        hunk.accepted = True
    assert diff.result() == "def f(x):\n    a = 10\n    b = 2\n    return a + b\n"


def test_no_change_has_no_hunks_and_a_missing_final_newline_is_a_change():
    assert not EditDiff(OLD, OLD, final=True).changed
    diff = EditDiff("x = 1\n", "x = 1", final=True)
    assert diff.changed and diff.result(undecided=True) == "x = 1"


SOURCE = [
    "import os",
    "",
    "",
    "class A:",
    "    @property",
    "    def size(self):",
    "        if self.x:",
    "            return 1",
    "        return 2",
    "",
    "    def other(self):",
    "        pass",
    "",
    "",
    "x = 1",
    "",
]


def test_block_rows_find_the_enclosing_definition_with_its_decorators():
    assert block_rows(SOURCE, 7) == (4, 9)  # inside the if: the method, decorator included
    assert block_rows(SOURCE, 5) == (4, 9)  # on the def line
    assert block_rows(SOURCE, 11) == (10, 12)
    assert block_rows(SOURCE, 3) == (3, 12)  # the class line: the class
    assert block_rows(SOURCE, 0) is None  # top-level code
    assert block_rows(["function f() {", "  return 1;", "}", ""], 1) == (0, 3)  # the closing brace


def test_pick_rows_selection_block_short_file_and_nothing():
    assert selected_rows((2, 3), (4, 0)) == (2, 4)  # a selection ending at a line start leaves it out
    assert pick_rows(SOURCE, (1, 0), (2, 5)) == (1, 3)
    assert pick_rows(SOURCE, (14, 0), (14, 0)) == (0, len(SOURCE))  # short file: all of it
    long_file = ["x = 1"] * 50 + [""] + ["y = 2", "z = 3"] + [""] * 50
    assert pick_rows(long_file, (50, 0), (50, 0)) is None  # a blank line in a long file: nothing
    assert pick_rows(long_file, (52, 0), (52, 0)) == (51, 53)  # the paragraph


@pytest.mark.parametrize("start,end", [(0, 1), (3, 9), (14, 16), (0, 16)])
def test_target_pieces_rebuild_the_file(start, end):
    target = target_for(SOURCE, start, end)
    assert target.before + target.region + target.after == "\n".join(SOURCE)
    assert target.region.endswith("\n") or end == len(SOURCE)
    assert target.from_location == (start, 0)


def test_merge_rows_use_the_definition_the_block_redefines():
    block = "def other(self):\n    return 3\n"
    assert defined_name(block) == "other"
    assert merge_rows(SOURCE, block, (0, 0), (0, 0)) == (10, 12)
    assert merge_rows(SOURCE, "x = 2\n", (0, 0), (0, 0)) == (0, len(SOURCE))  # short file
    assert merge_rows(SOURCE, block, (3, 0), (5, 0)) == (3, 5)  # the selection wins
    assert "def other" in merge_instruction(block) and "..." in merge_instruction(block)


def test_instruction_history_moves_a_repeat_to_the_end():
    history = InstructionHistory()
    for text in ["a", "b", "a"]:
        history.add(text)
    assert history.items == ["b", "a"]


def test_the_context_around_a_region_is_whole_lines_within_the_read_budget():
    from specterm.tui.edit.flow import context_around
    from specterm.tui.edit.region import target_for

    lines = [f"line {i}" for i in range(100)] + [""]
    target = target_for(lines, 40, 45)
    before, after = context_around(target, 300)
    assert target.before.endswith(before) and target.after.startswith(after)
    assert before.endswith("\n") and after.endswith("\n") and before.startswith("line ")
    assert len(before) + len(after) + len(target.region) <= 300
    assert 0 < len(after) <= (300 - len(target.region)) // 4 < len(before)
    assert context_around(target, 100_000) == (target.before, target.after)  # it all fits
    assert context_around(target, 10) == ("", "")  # the region alone is over budget
