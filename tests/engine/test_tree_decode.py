"""LlamaModel.decode_tree / keep_path on the real demo model: a tree decoded in one batch gives each node
the logits of its own path decoded linearly, and keeping one path leaves a cache that continues as
if that path had been decoded linearly in the first place."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.engine.llamacpp.demo import demo_model_path
from specterm.engine.llamacpp.model import TREE_PATHS_MAX, LlamaModel, quantize
from specterm.engine.settings import ModelSettings
from specterm.engine.token_tree import TokenTree

# Float tolerance: a node's row is computed in a batch of another size and layout than its linear
# decode, and llama.cpp's CPU kernels round differently by batch shape. On the Q4_1 demo model that
# moves logits by up to ~0.4 (as much as a wrong cell would), so these tests use an f16 copy of it,
# where shapes move them by ~0.03 and a wrong cell still moves them by far more.
ATOL = 0.1


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    f16 = tmp_path_factory.mktemp("tree") / "demo-f16.gguf"
    quantize(demo_model_path(), str(f16), "f16")
    m = LlamaModel.load(ModelSettings(path=str(f16), ctx=512))
    yield m
    m.close()


@pytest.fixture(scope="module")
def prefix(model) -> list[int]:
    return model.tokenize("def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a -")


def tree_of(model) -> TokenTree:
    """root -> a1 -> a2 -> a3, a1 -> b2 -> b3, root -> c1: three paths sharing the root, two a1."""
    a = model.tokenize(" b\n\ndef")
    b = model.tokenize(" c + d")
    c = model.tokenize(" 1")
    root = model.tokenize(" ")[0]
    tokens = (root, a[0], a[1], a[2], b[1], b[2], c[0])
    return TokenTree(tokens, (-1, 0, 1, 2, 1, 4, 0))


def linear_logits(model: LlamaModel, tokens: list[int], start: int) -> np.ndarray:
    """Logits of every token of `tokens` decoded in one linear batch after the cached prefix."""
    model.decode(tokens, start, logits_from=0)
    return model.logits_rows(len(tokens)).copy()


def fresh(model: LlamaModel, prefix: list[int]) -> None:
    model.clear()
    model.decode_prompt(prefix, 0)


def test_every_node_gets_the_logits_of_its_own_path_decoded_linearly(model, prefix):
    tree = tree_of(model)
    fresh(model, prefix)
    model.decode_tree(tree, len(prefix))
    tree_rows = model.logits_rows(len(tree)).copy()
    model.keep_path([0])
    assert len(tree.paths()) == 3
    for path in tree.paths():
        fresh(model, prefix)
        rows = linear_logits(model, [tree.tokens[n] for n in path], len(prefix))
        for depth, node in enumerate(path):
            np.testing.assert_allclose(tree_rows[node], rows[depth], atol=ATOL, rtol=0)
            assert int(np.argmax(tree_rows[node])) == int(np.argmax(rows[depth]))


@pytest.mark.parametrize("kept", [[0, 1, 4, 5], [0, 1, 4], [0, 6], [0, 1, 2, 3], [0]])
def test_a_kept_path_continues_like_a_linear_decode_of_it(model, prefix, kept):
    tree = tree_of(model)
    follow = model.tokenize(" x\n    return")
    fresh(model, prefix)
    model.decode_tree(tree, len(prefix))
    model.keep_path(kept)
    assert model.cache_length() == len(prefix) + len(kept)
    after_tree = linear_logits(model, follow, len(prefix) + len(kept))

    fresh(model, prefix)
    linear = linear_logits(model, [tree.tokens[n] for n in kept] + follow, len(prefix))
    np.testing.assert_allclose(after_tree, linear[len(kept):], atol=ATOL, rtol=0)
    assert list(np.argmax(after_tree, axis=1)) == list(np.argmax(linear[len(kept):], axis=1))


def test_a_tree_of_one_path_decodes_as_the_linear_draft_does(model, prefix):
    tokens = model.tokenize(" b\n\ndef mul")
    fresh(model, prefix)
    model.decode_tree(TokenTree.linear(tokens), len(prefix))
    tree_rows = model.logits_rows(len(tokens)).copy()
    model.keep_path(list(range(len(tokens))))
    assert model.cache_length() == len(prefix) + len(tokens)
    fresh(model, prefix)
    np.testing.assert_array_equal(tree_rows, linear_logits(model, tokens, len(prefix)))


def test_trees_one_after_another_keep_the_cache_consistent(model, prefix):
    """Several passes of tree, keep, tree, keep: no cells of dropped paths linger to break the
    next tree (llama.cpp refuses a batch whose positions do not follow its sequence's)."""
    tree = tree_of(model)
    fresh(model, prefix)
    pos = len(prefix)
    kept_tokens: list[int] = []
    for kept in ([0, 1, 4], [0, 6], [0, 1, 2, 3]):
        model.decode_tree(tree, pos)
        last = model.logits(kept[-1]).copy()
        model.keep_path(kept)
        kept_tokens += [tree.tokens[n] for n in kept]
        pos += len(kept)
    assert model.cache_length() == pos
    fresh(model, prefix)
    linear = linear_logits(model, kept_tokens, len(prefix))
    np.testing.assert_allclose(last, linear[-1], atol=ATOL, rtol=0)


def test_bad_trees_and_paths_are_refused(model, prefix):
    with pytest.raises(ValueError, match="root"):
        TokenTree((1, 2), (0, 0))
    with pytest.raises(ValueError, match="earlier node"):
        TokenTree((1, 2, 3), (-1, 2, 0))
    with pytest.raises(ValueError, match="parents"):
        TokenTree((1, 2), (-1,))
    with pytest.raises(ValueError, match="at least its root"):
        TokenTree((), ())
    fresh(model, prefix)
    wide = TokenTree((1,) * (TREE_PATHS_MAX + 2), (-1,) + (0,) * (TREE_PATHS_MAX + 1))
    with pytest.raises(ValueError, match="paths exceeds"):
        model.decode_tree(wide, len(prefix))
    with pytest.raises(RuntimeError, match="without a decode_tree"):
        model.keep_path([0])
    tree = tree_of(model)
    model.decode_tree(tree, len(prefix))
    with pytest.raises(ValueError, match="not a chain"):
        model.keep_path([0, 4])
    with pytest.raises(ValueError, match="not a chain"):
        model.keep_path([])
    model.keep_path([0])
    assert model.cache_length() == len(prefix) + 1
