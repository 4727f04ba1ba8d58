"""Mapping server-reported speculative statistics onto `Stats` (no server needed).

The vLLM page in data/ is written in vLLM's exact exposition format (see data/README.md for where
every line's shape comes from); the llama-server side is tested against a live server in
test_llama_server.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from specterm.engine.remote.server_stats import (
    NOT_REPORTED,
    SpecCounters,
    apply_counters,
    describe_acceptance,
    parse_prometheus,
    spec_counters,
    stats_from_timings,
)
from specterm.engine.stats import Stats

DATA = Path(__file__).parent / "data"
VLLM_PAGE = (DATA / "vllm_metrics_spec_decode.prom").read_text()
MODEL = "Qwen/Qwen2.5-Coder-32B-Instruct"


# -- llama-server timings -------------------------------------------------------------------------


def test_timings_with_drafts_map_onto_stats():
    timings = {
        "cache_n": 12, "prompt_n": 30, "prompt_ms": 45.5, "prompt_per_token_ms": 1.5,
        "prompt_per_second": 659.3, "predicted_n": 64, "predicted_ms": 800.0,
        "predicted_per_token_ms": 12.5, "predicted_per_second": 80.0,
        "draft_n": 48, "draft_n_accepted": 36,
    }
    s = stats_from_timings(timings)
    assert (s.tokens, s.drafted, s.accepted) == (64, 48, 36)
    assert s.acceptance == pytest.approx(0.75)
    assert s.target_passes == 64 - 36  # each pass emits one token of its own plus accepted drafts
    assert s.tokens_per_pass == pytest.approx(64 / 28)
    assert s.prompt_tokens == 42 and s.prompt_tokens_decoded == 30
    assert s.prompt_time_s == pytest.approx(0.0455)
    assert s.tokens_per_second == pytest.approx(80.0)
    assert s.acceptance_reported and s.drafting
    d = s.to_dict()
    assert d["acceptance"] == pytest.approx(0.75) and d["requests"] == 1


def test_timings_without_draft_keys_are_a_real_zero_not_missing():
    # llama-server omits draft_n when it drafted nothing: acceptance is None, but it *was* reported
    s = stats_from_timings({"predicted_n": 10, "predicted_ms": 100.0, "prompt_n": 5})
    assert s.drafted == 0 and s.acceptance is None
    assert s.acceptance_reported
    assert describe_acceptance(s) == "no drafts yet"
    assert s.target_passes == 10


def test_no_timings_means_not_reported_and_no_made_up_figures():
    s = stats_from_timings(None, tokens_fallback=17, generation_time_fallback_s=0.5, prompt_tokens_fallback=9)
    assert s.tokens == 17 and s.prompt_tokens == 9
    assert s.acceptance is None and not s.acceptance_reported
    assert s.target_passes == 0 and s.tokens_per_pass is None  # unknown, not "1.0"
    assert describe_acceptance(s) == NOT_REPORTED == "not reported by server"
    assert s.to_dict()["acceptance"] is None


def test_not_reported_survives_session_merge():
    session = Stats()
    session.merge(stats_from_timings(None, tokens_fallback=5))
    assert session.acceptance is None and describe_acceptance(session) == NOT_REPORTED


# -- Prometheus parsing ---------------------------------------------------------------------------


def test_parse_prometheus_reads_labels_values_and_skips_comments():
    samples = parse_prometheus(VLLM_PAGE)
    assert not any(s.name.startswith("#") for s in samples)
    by = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in samples}
    assert by[("vllm:generation_tokens_total", (("engine", "0"), ("model_name", MODEL)))] == 61744.0
    assert by[("process_max_fds", ())] == 1048576.0  # Go-style exponent: 1.048576e+06
    assert by[("process_virtual_memory_bytes", ())] == 128474105856.0  # "e+011"
    info = next(s for s in samples if s.name == "vllm:cache_config_info")
    assert info.labels["num_gpu_blocks"] == "61440" and info.labels["block_size"] == "16"
    inf_bucket = [s for s in samples if s.name.endswith("_bucket") and s.labels.get("le") == "+Inf"]
    assert inf_bucket and inf_bucket[0].value == 361.0


def test_parse_prometheus_escapes_special_values_and_bad_lines():
    text = "\n".join([
        'm{a="x\\"y",b="c\\\\d",n="l1\\nl2"} 1',
        "nan_metric NaN",
        "inf_metric +Inf",
        "neg_inf -Inf",
        "with_ts 3 1700000000000",
        "this is not a sample",
        'broken{a="1" 2',
        "",
    ])
    samples = {s.name: s for s in parse_prometheus(text)}
    assert samples["m"].labels == {"a": 'x"y', "b": "c\\d", "n": "l1\nl2"}
    assert math.isnan(samples["nan_metric"].value)
    assert samples["inf_metric"].value == math.inf and samples["neg_inf"].value == -math.inf
    assert samples["with_ts"].value == 3.0
    assert "this" not in samples and "broken" not in samples


# -- speculative counters from vLLM's page --------------------------------------------------------


def test_vllm_spec_counters_take_only_the_totals():
    c = spec_counters(VLLM_PAGE)
    assert c is not None and c.source == "vllm"
    assert c.drafts == 21873.0
    assert c.draft_tokens == 87492.0
    # the per-position series break the total down (and _created lines are timestamps): neither adds
    assert c.accepted_tokens == 39871.0
    assert c.accepted_per_position == (15102.0, 11230.0, 8017.0, 5522.0)
    assert sum(c.accepted_per_position) == c.accepted_tokens
    assert c.acceptance == pytest.approx(39871 / 87492)


def test_vllm_counters_filter_by_model_and_sum_engines():
    second_engine = VLLM_PAGE.replace('engine="0"', 'engine="1"')
    both = spec_counters(VLLM_PAGE + second_engine)
    assert both.draft_tokens == 2 * 87492.0 and both.accepted_per_position[0] == 2 * 15102.0
    other_model = VLLM_PAGE.replace(MODEL, "other/model")
    assert spec_counters(VLLM_PAGE + other_model, model=MODEL).draft_tokens == 87492.0
    assert spec_counters(VLLM_PAGE, model="not/served") is None


def test_page_without_spec_decode_is_not_reported():
    plain = "\n".join(line for line in VLLM_PAGE.splitlines() if "spec_decode" not in line)
    assert parse_prometheus(plain)  # still a valid vLLM page
    assert spec_counters(plain) is None
    stats = apply_counters(Stats(tokens=50, requests=1), None)
    assert not stats.acceptance_reported and stats.acceptance is None
    assert describe_acceptance(stats) == NOT_REPORTED


def test_llama_server_prefix_is_read_too():
    page = VLLM_PAGE.replace("vllm:", "llamacpp:")
    c = spec_counters(page)
    assert c is not None and c.source == "llamacpp" and c.draft_tokens == 87492.0


def test_one_request_is_the_difference_of_two_scrapes():
    before = spec_counters(VLLM_PAGE)
    after_page = (
        VLLM_PAGE.replace("} 21873.0", "} 21893.0")  # 20 more drafts
        .replace("} 87492.0", "} 87572.0")  # 80 more draft tokens
        .replace("} 39871.0", "} 39921.0")  # 50 more accepted
        .replace('position="0"} 15102.0', 'position="0"} 15120.0')
        .replace('position="1"} 11230.0', 'position="1"} 11245.0')
        .replace('position="2"} 8017.0', 'position="2"} 8029.0')
        .replace('position="3"} 5522.0', 'position="3"} 5527.0')
    )
    after = spec_counters(after_page)
    delta = after.minus(before)
    assert (delta.drafts, delta.draft_tokens, delta.accepted_tokens) == (20.0, 80.0, 50.0)
    assert delta.accepted_per_position == (18.0, 15.0, 12.0, 5.0)

    stats = apply_counters(Stats(tokens=70, generation_time_s=1.0, requests=1), delta)
    assert (stats.drafted, stats.accepted) == (80, 50)
    assert stats.acceptance == pytest.approx(50 / 80)
    assert stats.target_passes == 20  # 70 tokens, 50 of them accepted drafts
    assert stats.tokens_per_pass == pytest.approx(3.5)
    # vLLM's convention: position i is drafted once per draft
    assert stats.drafted_by_position == [20, 20, 20, 20]
    assert stats.acceptance_by_position == [pytest.approx(0.9), 0.75, 0.6, 0.25]
    assert stats.to_dict()["acceptance"] == pytest.approx(0.625)


def test_server_restart_between_scrapes_takes_the_new_counts():
    before = spec_counters(VLLM_PAGE)
    restarted = SpecCounters(source="vllm", drafts=3, draft_tokens=12, accepted_tokens=7,
                             accepted_per_position=(3, 2, 1, 1))
    assert restarted.minus(before) == restarted
