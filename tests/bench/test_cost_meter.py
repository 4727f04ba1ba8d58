"""The bench's cost meter on a real model: rounds timed between runs leave the caches as they were."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.engine.bench.costs import CostMeter
from specterm.engine.llamacpp.model import LlamaModel
from specterm.engine.settings import ModelSettings

# Slow tier (tests/conftest.py): the meter times decode rounds of every size on two models.
pytestmark = pytest.mark.slow

SIZES = (1, 2, 3, 5)


@pytest.fixture(scope="module")
def pair(demo_path: str):
    target = LlamaModel.load(ModelSettings(path=demo_path, ctx=512, threads=1))
    draft = LlamaModel.load(ModelSettings(path=demo_path, ctx=512, threads=1))
    yield target, draft
    target.close()
    draft.close()


def test_rounds_in_place_time_every_size_and_leave_both_caches_as_they_were(pair):
    target, draft = pair
    prompt = target.tokenize("def fibonacci(n):\n    if n < 2:\n        return n\n")
    nxt = target.tokenize("    return")[0]
    n = len(prompt)
    for m in (target, draft):
        m.clear()
        m.decode_prompt(prompt, 0)
    target.decode([nxt], n)
    before = target.logits().copy()
    target.trim(n)

    meter = CostMeter(target, draft, sizes=SIZES)
    meter.sample_in_place(3)

    assert target.cache_length() == n and draft.cache_length() == n
    target.decode([nxt], n)  # the text the run left is still there, and nothing after it
    assert np.allclose(target.logits(), before, atol=1e-4)
    target.trim(n)
    c = meter.costs()
    assert c.samples == 3 and c.position == n
    assert sorted(c.t_v) == list(SIZES) and c.t_v[1] == c.t1
    assert all(v > 0 for v in c.t_v.values()) and c.t_d > 0 and c.t_read >= 0


def test_a_meter_with_no_room_left_takes_no_round_and_says_so(pair):
    target, _ = pair
    target.clear()
    filler = target.tokenize(" x")[0]
    target.decode_prompt([filler] * (target.n_ctx - 3), 0)  # fewer free positions than the largest size
    meter = CostMeter(target, None, sizes=SIZES)
    meter.sample_in_place(2)
    assert meter.rounds == 0
    assert target.cache_length() == target.n_ctx - 3
    with pytest.raises(ValueError, match="no cost samples"):
        meter.costs()
    target.clear()
