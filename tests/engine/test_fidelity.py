"""The promise: speculation never changes what the target says.

Greedy speculative output must equal plain greedy decoding token by token. llama.cpp's batched
kernels can move logits slightly versus one-token decoding, so a divergence is tolerated only where
the target itself was at a near-tie: its top-2 logit gap in plain decoding at that step <= 1.0.
Any other divergence is a bug in the loop.
"""

from __future__ import annotations

import numpy as np
import pytest

from specterm.engine import GenerateRequest, ModelSettings
from specterm.engine.llamacpp.model import LlamaModel

PROMPTS = [
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "import os\nimport sys\n\n\ndef main():\n    for path in sys.argv[1:]:\n",
    "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n",
    "<|im_start|>user\nWrite a Python function that reverses a string.<|im_end|>\n<|im_start|>assistant\n",
]
N = 48
MAX_TIE_GAP = 1.0


def greedy_trace(m: LlamaModel, toks: list[int], n: int) -> tuple[list[int], list[float]]:
    """Plain greedy decoding of prompt tokens `toks` on a fresh model, one token per
    llama_decode, with the top-2 logit gap at each step (up to n tokens)."""
    m.decode_prompt(toks, 0)
    out: list[int] = []
    gaps: list[float] = []
    for _ in range(n):
        logits = m.logits()
        top2 = np.partition(logits, -2)[-2:]
        gaps.append(float(top2[1] - top2[0]))
        tok = int(logits.argmax())
        if m.is_eog(tok):
            break
        out.append(tok)
        m.decode([tok], len(toks) + len(out) - 1)
    return out, gaps


def plain_trace(path: str, prompt: str, n: int) -> tuple[list[int], list[float]]:
    """Plain greedy decoding of a text prompt, with the top-2 logit gap at each step."""
    m = LlamaModel.load(ModelSettings(path=path, ctx=2048))
    try:
        return greedy_trace(m, m.tokenize(prompt, add_special=True), n)
    finally:
        m.close()


def assert_faithful(plain: list[int], gaps: list[float], spec: list[int], label: str) -> None:
    for i, (a, b) in enumerate(zip(plain, spec)):
        if a != b:
            assert gaps[i] <= MAX_TIE_GAP, (
                f"{label}: speculative output diverged at token {i} ({b} instead of {a}) where the "
                f"target's own top-2 gap was {gaps[i]:.3f} > {MAX_TIE_GAP}: a loop bug, not numerics")
            return  # after a legitimate near-tie the texts may differ
    assert len(spec) == len(plain) or len(spec) >= N, f"{label}: lengths {len(spec)} vs {len(plain)}"


@pytest.fixture(scope="module")
def traces(models):
    return {p: plain_trace(models.demo, p, N) for p in PROMPTS}


@pytest.mark.parametrize("draft", ["none", "lookup", "q4", "same"])
def test_greedy_speculative_equals_plain(models, traces, engine_factory, draft):
    kind = "model" if draft in ("q4", "same") else draft
    path = {"q4": models.draft_q4, "same": models.demo}.get(draft)
    # adaptive off and a long draft: verify as many draft tokens per pass as possible
    eng = engine_factory(models.demo, kind, path, draft_max=8, adaptive=False, p_min=0.0)
    total_drafted = 0
    for prompt in PROMPTS:
        result = eng.run(GenerateRequest(prompt=prompt, max_tokens=N))
        reason, stats = result.reason, result.stats
        plain, gaps = traces[prompt]
        spec = result.tokens  # the decoder's own ids (re-tokenizing text is lossy)
        assert_faithful(plain, gaps, spec, f"{draft} / {prompt[:30]!r}")
        total_drafted += stats.drafted
        if reason == "length":
            assert stats.tokens == stats.accepted + stats.target_passes
    if draft != "none":
        assert total_drafted > 0, "the drafter never proposed anything: the test proves nothing"


def test_same_model_draft_is_nearly_always_accepted(models, engine_factory):
    eng = engine_factory(models.demo, "model", models.demo, draft_max=4, adaptive=False, p_min=0.0)
    stats = eng.run(GenerateRequest(prompt=PROMPTS[0], max_tokens=64)).stats
    assert stats.drafted >= 20
    assert stats.acceptance is not None and stats.acceptance >= 0.8


def test_requantized_draft_gives_partial_acceptance(models, engine_factory):
    eng = engine_factory(models.demo, "model", models.draft_q4, draft_max=6, adaptive=False, p_min=0.0)
    stats_all = []
    for p in PROMPTS:
        stats = eng.run(GenerateRequest(prompt=p, max_tokens=48)).stats
        stats_all.append(stats)
    drafted = sum(s.drafted for s in stats_all)
    accepted = sum(s.accepted for s in stats_all)
    assert drafted > 50
    assert 0.2 < accepted / drafted < 1.0


@pytest.mark.parametrize("draft", ["lookup", "q4"])
def test_passes_padded_to_one_shape_keep_the_targets_output_and_an_exact_cache(models, traces,
                                                                            engine_factory, draft):
    """constant_shape = "on" (experimental, for a GPU): every verify pass has draft_max + 1 rows, the
    rows past the draft copies of its last token. What the target says stays its own, and the
    padding's KV entries are gone after each pass (the cache holds exactly the text)."""
    path = models.draft_q4 if draft == "q4" else None
    kind = "model" if path else draft
    eng = engine_factory(models.demo, kind, path, draft_max=8, adaptive=False, p_min=0.0,
                         constant_shape="on")
    assert eng.decoder.pad_rows == 9
    assert eng.decoder.policy.costs.shape == 9 and 9 in eng.decoder.policy.costs.verify
    drafted = 0
    for prompt in PROMPTS:
        result = eng.run(GenerateRequest(prompt=prompt, max_tokens=N))
        plain, gaps = traces[prompt]
        assert_faithful(plain, gaps, result.tokens, f"padded {draft} / {prompt[:30]!r}")
        assert eng.target.cache_length() == len(eng.decoder.cached)
        drafted += result.stats.drafted
    assert drafted > 0, "nothing was drafted: the test proves nothing"
    off = engine_factory(models.demo, kind, path, draft_max=8, constant_shape="auto")
    assert off.decoder.pad_rows == 0  # a CPU-only build: nothing is padded


# -- draft trees ----------------------------------------------------------------------------------
# Trees keep the promise too: greedy output with trees equals plain greedy decoding (the same
# near-tie rule), on prompts whose text repeats with variations, so prompt lookup and the session
# drafter find several continuations and the loop verifies them as trees.
# Text that occurs several times with different continuations: the latest occurrence is often
# the wrong one to copy, so a tree has branches to offer.
TREE_PROMPTS = [
    "def area(shape):\n    if shape.kind == 'square':\n        return shape.side * shape.side\n"
    "    if shape.kind == 'circle':\n        return 3.14159 * shape.radius * shape.radius\n"
    "    if shape.kind == 'rect':\n        return shape.width * shape.height\n\n\n"
    "def perimeter(shape):\n    if shape.kind == 'square':\n",
    "<|im_start|>user\nRewrite this with f-strings:\n```python\nprint('a=%s' % a)\nprint('b=%s' % b)\n"
    "print('c=%s, d=%s' % (c, d))\nprint('e=%s' % e)\n```<|im_end|>\n<|im_start|>assistant\n```python\n",
]
TREE_N = 64


@pytest.fixture(scope="module")
def tree_traces(models):
    return {p: plain_trace(models.demo, p, TREE_N) for p in TREE_PROMPTS}


@pytest.mark.parametrize("draft", ["lookup", "session"])
def test_greedy_output_with_trees_equals_plain(models, tree_traces, engine_factory, draft):
    # adaptive off: every branch a drafter offers is verified, to the draft's depth
    eng = engine_factory(models.demo, draft, draft_max=8, adaptive=False, tree=True)
    passes = branches = 0
    for prompt in TREE_PROMPTS:
        result = eng.run(GenerateRequest(prompt=prompt, max_tokens=TREE_N))
        plain, gaps = tree_traces[prompt]
        assert_faithful(plain, gaps, result.tokens, f"{draft} tree / {prompt[:30]!r}")
        s = result.stats
        passes += s.tree_passes
        branches += s.tree_branches
        assert s.tree_accepted <= s.accepted
        assert s.tree_branch_tokens <= s.tree_accepted
        assert s.tree_rows >= s.tree_passes * 3  # the pending token, a draft token and a branch
        if result.reason == "length":
            assert s.tokens == s.accepted + s.target_passes
    assert passes > 0 and branches >= passes, "no tree was verified: the test proves nothing"


def test_tree_off_stays_linear(models, engine_factory):
    eng = engine_factory(models.demo, "lookup", draft_max=8, adaptive=False, tree=False)
    result = eng.run(GenerateRequest(prompt=TREE_PROMPTS[0], max_tokens=TREE_N))
    assert result.stats.drafted > 0
    assert result.stats.tree_passes == 0 and result.stats.tree_rows_per_pass is None
