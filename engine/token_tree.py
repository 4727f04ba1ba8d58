"""A token tree: several guesses that share their first tokens, checked in one verify pass.

Node 0 is the root (the token the target has not read yet); every other node names its parent, which
comes before it. One root-to-leaf path is one linear draft, so a tree with one leaf is today's
linear draft. The model decodes all nodes in one batch (`LlamaModel.decode_tree`) and keeps one path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class TokenTree:
    """Tokens with the index of each node's parent (-1 for the root, node 0 only)."""

    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    depths: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        if not self.tokens:
            raise ValueError("a token tree needs at least its root")
        if len(self.parents) != len(self.tokens):
            raise ValueError(f"{len(self.tokens)} tokens but {len(self.parents)} parents")
        if self.parents[0] != -1:
            raise ValueError("node 0 is the root: its parent must be -1")
        depths = [0]
        for i, p in enumerate(self.parents[1:], start=1):
            if not 0 <= p < i:
                raise ValueError(f"node {i} names parent {p}: a parent must be an earlier node")
            depths.append(depths[p] + 1)
        object.__setattr__(self, "depths", tuple(depths))

    @classmethod
    def linear(cls, tokens: list[int]) -> "TokenTree":
        """A tree of width 1: the root and a linear draft after it."""
        return cls(tuple(tokens), tuple(range(-1, len(tokens) - 1)))

    @classmethod
    def merge(cls, root: int, drafts: list[list[int]]) -> "TokenTree":
        """The root followed by every draft, shared first tokens stored once (a trie). Drafts come
        best first: each node's children, and so the leaves, keep that order, so path 0 starts
        with the first draft. One draft gives the linear tree; empty and repeated drafts add nothing.
        """
        tokens, parents = [root], [-1]
        children: dict[tuple[int, int], int] = {}  # (parent node, token) -> node
        for draft in drafts:
            node = 0
            for tok in draft:
                nxt = children.get((node, tok))
                if nxt is None:
                    nxt = len(tokens)
                    tokens.append(tok)
                    parents.append(node)
                    children[(node, tok)] = nxt
                node = nxt
        return cls(tuple(tokens), tuple(parents))

    def __len__(self) -> int:
        return len(self.tokens)

    def leaves(self) -> list[int]:
        """Nodes without children, in node order."""
        has_child = set(self.parents)
        return [i for i in range(len(self.tokens)) if i not in has_child]

    def path_to(self, node: int) -> list[int]:
        """The nodes from the root down to `node`, root first."""
        if not 0 <= node < len(self.tokens):
            raise ValueError(f"node {node} is not in a tree of {len(self.tokens)} nodes")
        path = [node]
        while self.parents[path[-1]] >= 0:
            path.append(self.parents[path[-1]])
        return path[::-1]

    def paths(self) -> list[list[int]]:
        """Every root-to-leaf path (one per leaf, in leaf order)."""
        return [self.path_to(leaf) for leaf in self.leaves()]

    def greedy_path(self, rows: np.ndarray) -> tuple[list[int], int]:
        """Greedy verification of the whole tree: `rows[i]` are the target's logits after node i.
        From the root, follow the child that is the target's argmax while there is one. Returns
        the path (root first; its nodes after the root are the accepted tokens) and the target's
        own token after it (at the first mismatch, or beyond a leaf)."""
        children = {(p, t): i for i, (p, t) in enumerate(zip(self.parents, self.tokens)) if p >= 0}
        path = [0]
        while True:
            tok = int(rows[path[-1]].argmax())
            nxt = children.get((path[-1], tok))
            if nxt is None:
                return path, tok
            path.append(nxt)
