"""Alternative suggestions from the one decoding loop: the k-th most likely first token, then the
target's own greedy continuation, with the same completion rules."""

from __future__ import annotations

import numpy as np

from specterm.engine import CompletionRequest
from specterm.engine.speculative import ranked_choice


def test_ranked_choice_orders_by_likelihood_and_respects_the_mask():
    logits = np.array([0.5, 3.0, -1.0, 2.0, 1.0], dtype=np.float32)
    assert [ranked_choice(logits, k) for k in range(5)] == [1, 3, 4, 0, 2]
    mask = np.array([True, False, True, False, True])
    assert [ranked_choice(logits, k, mask) for k in range(3)] == [4, 0, 2]
    assert ranked_choice(logits, 9, mask) == 2  # fewer allowed than the rank: the least likely allowed


def test_alternatives_start_with_distinct_first_tokens_and_reuse_the_prompt(models, engine_factory):
    eng = engine_factory(models.fim, "lookup", draft_max=4)
    assert eng.info.alternatives
    base = CompletionRequest(prefix="def area(width, height):\n    ", suffix="\n\nprint(area(2, 3))\n",
                             max_tokens=12, max_lines=2)
    results = []
    for rank in range(3):
        request = CompletionRequest(**{**base.__dict__, "first_token_rank": rank})
        results.append(eng.run(request))
    firsts = [r.tokens[0] for r in results if r.tokens]
    assert len(firsts) == 3 and len(set(firsts)) == 3  # distinct by construction
    texts = [r.text for r in results]
    assert len(set(texts)) == 3, texts
    # rank 0 is the plain greedy suggestion, token for token
    again = eng.run(base)
    assert again.tokens == results[0].tokens and again.text == results[0].text
    # the same prompt: every alternative decodes only the last prompt token again
    assert all(r.stats.prompt_tokens_decoded <= 1 for r in results[1:])
    # the completion rules apply: at most max_lines lines
    assert all(len(t.strip("\n").split("\n")) <= 2 for t in texts)
