"""TokenTree: shape checks and merging several drafts into one tree (pure, no model)."""

from __future__ import annotations

import pytest

from specterm.engine.token_tree import TokenTree


def test_merging_one_draft_gives_the_linear_tree():
    assert TokenTree.merge(7, [[1, 2, 3]]) == TokenTree.linear([7, 1, 2, 3])
    assert TokenTree.merge(7, [[1, 2, 3]]).paths() == [[0, 1, 2, 3]]


def test_drafts_share_their_common_first_tokens_and_keep_their_order():
    tree = TokenTree.merge(7, [[1, 2, 3], [1, 5], [4], [1, 2, 6]])
    assert tree.tokens == (7, 1, 2, 3, 5, 4, 6)
    assert tree.parents == (-1, 0, 1, 2, 1, 0, 2)
    assert tree.depths == (0, 1, 2, 3, 2, 1, 3)
    paths = [[tree.tokens[n] for n in path] for path in tree.paths()]
    assert paths == [[7, 1, 2, 3], [7, 1, 5], [7, 4], [7, 1, 2, 6]]


def test_empty_and_repeated_drafts_add_no_nodes():
    assert TokenTree.merge(7, []) == TokenTree((7,), (-1,))
    assert TokenTree.merge(7, [[], [1, 2], [1, 2], [1]]) == TokenTree.linear([7, 1, 2])


def test_path_to_and_leaves():
    tree = TokenTree((7, 1, 2, 3), (-1, 0, 0, 2))
    assert tree.leaves() == [1, 3]
    assert tree.path_to(3) == [0, 2, 3]
    with pytest.raises(ValueError, match="not in a tree"):
        tree.path_to(4)
    with pytest.raises(ValueError, match="not in a tree"):
        tree.path_to(-1)


def test_greedy_path_follows_the_targets_argmax_down_any_branch():
    import numpy as np

    # root -> 1 -> 2, root -> 1 -> 5 -> 6, root -> 3
    tree = TokenTree.merge(0, [[1, 2], [1, 5, 6], [3]])
    rows = np.zeros((len(tree), 10))

    def argmax_after(node: int, tok: int) -> None:
        rows[node, :] = 0.0
        rows[node, tok] = 1.0

    argmax_after(0, 1)  # the root's argmax is 1: into the shared node
    argmax_after(1, 5)  # then 5: the second path, not the first
    argmax_after(tree.tokens.index(5), 6)
    argmax_after(tree.tokens.index(6), 9)  # beyond the leaf: the target's own token
    path, token = tree.greedy_path(rows)
    assert [tree.tokens[i] for i in path] == [0, 1, 5, 6] and token == 9
    argmax_after(0, 4)  # no child holds the target's token: nothing accepted
    assert tree.greedy_path(rows) == ([0], 4)
