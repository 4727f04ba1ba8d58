"""The stats panel's session summary says how often draft trees paid: tree passes, their rows, and
how often the target took a branch rather than the draft's own path; nothing about trees when none
was verified (a compute-bound CPU, `tree = false`, a draft model)."""

from __future__ import annotations

from specterm.engine import Stats
from specterm.tui.screens.stats import summary


def test_tree_line_counts_passes_rows_and_branches_taken():
    stats = Stats(requests=1, tokens=40, target_passes=10, drafted=30, accepted=25,
                  tree_passes=4, tree_rows=30, tree_branches=6, tree_accepted=12,
                  tree_branch_taken=2, tree_branch_tokens=5)
    line = next(x for x in summary(stats).splitlines() if x.startswith("draft trees"))
    assert line == "draft trees 4 passes, 7.5 rows each   a branch taken 2 times (+5 tokens)"


def test_no_tree_line_without_tree_passes():
    stats = Stats(requests=1, tokens=40, target_passes=10, drafted=30, accepted=25)
    assert "tree" not in summary(stats)
