"""The benchmark's own logic, without running a model: the theory, task cutting, the histogram."""

from __future__ import annotations

from pathlib import Path

import pytest

from specterm.engine.bench.costs import Costs
from specterm.engine.bench.runner import draft_length_histogram, first_divergence, predicted_for
from specterm.engine.bench.tasks import TASK_KINDS, builtin_tasks, collect_files, fim_tasks
from specterm.engine.bench.theory import expected_tokens, fit_acceptance, geometric_mean, predicted_speedup
from specterm.engine.requests import CompletionRequest, EditRequest
from specterm.engine.stats import Stats


def test_expected_tokens_limits_and_a_worked_value():
    assert expected_tokens(0.0, 5) == 1.0  # nothing accepted: the pass yields its own token
    assert expected_tokens(1.0, 5) == 6.0  # everything accepted: g drafts plus one
    assert expected_tokens(0.5, 2) == pytest.approx(1.75)  # 1 + 0.5 + 0.25
    assert expected_tokens(0.8, 0) == 1.0


def test_predicted_speedup_is_leviathan_when_verification_costs_one_decode():
    # Leviathan et al.: speedup = (1 - a^(g+1)) / ((1 - a)(g c + 1)) with c = t_d / t1, t_v = t1.
    a, g, t1, td = 0.7, 4, 0.010, 0.002
    c = td / t1
    leviathan = (1 - a ** (g + 1)) / ((1 - a) * (g * c + 1))
    assert predicted_speedup(a, g, t1, td, t1) == pytest.approx(leviathan)
    # On a CPU verification grows with k: the same acceptance pays much less.
    assert predicted_speedup(a, g, t1, td, 4.5 * t1) < 1.0 < leviathan


@pytest.mark.parametrize("a,g", [(0.1, 1), (0.5, 4), (0.9, 8), (0.99, 16)])
def test_fit_acceptance_inverts_expected_tokens(a, g):
    assert fit_acceptance(expected_tokens(a, g), g) == pytest.approx(a, abs=1e-6)


def test_fit_acceptance_clamps_out_of_range_figures():
    assert fit_acceptance(0.5, 4) == pytest.approx(0.0, abs=1e-9)
    assert fit_acceptance(9.0, 4) == pytest.approx(1.0, abs=1e-9)


def test_geometric_mean_ignores_missing_values():
    assert geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    assert geometric_mean([2.0, None]) == pytest.approx(2.0)
    assert geometric_mean([]) is None


def _stats(passes: list[tuple[int, int]], source: str | None = None) -> Stats:
    s = Stats(requests=1, target_passes=1, tokens=1)  # the prompt pass yields the first token
    for drafted, accepted in passes:
        s.record_pass(drafted, accepted, [source] * drafted if source else None)
        s.tokens += accepted + 1
    return s


def test_draft_length_histogram_recovers_the_lengths_used():
    s = _stats([(4, 4), (4, 1), (2, 0), (0, 0), (0, 0), (1, 1)])
    assert draft_length_histogram(s) == {4: 2, 2: 1, 0: 2, 1: 1}


def test_histogram_of_merged_runs_excludes_every_prompt_pass():
    a, b = _stats([(2, 2), (0, 0)]), _stats([(2, 1)])
    a.merge(b)
    assert a.requests == 2 and draft_length_histogram(a) == {2: 2, 0: 1}


def test_prediction_for_a_single_draft_length_is_the_formula():
    s = _stats([(4, 4), (4, 2), (4, 0), (4, 3)])
    costs = Costs(t1=0.01, t_d=0.001, t_v={1: 0.01, 5: 0.03})
    pred, g_mean, a = predicted_for(s, costs)
    assert g_mean == 4
    e = (s.tokens - 1) / 4
    assert expected_tokens(a, 4) == pytest.approx(e, rel=1e-6)
    assert pred == pytest.approx(predicted_speedup(a, 4, 0.01, 0.001, 0.03), rel=1e-6)


def test_prediction_prices_the_draft_models_work_at_the_measured_costs():
    """Three drafts of 4: the theory counts 4 t_d each (a one-token read, 3 decodes). The run's
    counts say what the model really did: reads of more than one token cost t_read a token
    more, and a draft that stopped at p_min decoded its last token too."""
    s = _stats([(4, 4), (4, 4), (4, 1)])
    costs = Costs(t1=0.01, t_d=0.001, t_v={1: 0.01, 5: 0.03}, t_read=0.0005)
    theory, _, _ = predicted_for(s, costs)  # no counts: g * t_d a pass
    s.draft_reads, s.draft_catchup_tokens, s.draft_decodes = 3, 3, 9
    assert predicted_for(s, costs)[0] == pytest.approx(theory)  # exactly what the theory counts
    # two reads of two tokens (after whole drafts), one read of 38 (drafting was off), and one
    # draft that stopped at p_min (a 4th decode)
    s.draft_catchup_tokens, s.draft_decodes = 2 + 2 + 38, 10
    pred, _, _ = predicted_for(s, costs)
    theory_time = 3 * (4 * 0.001 + 0.03)
    assert pred == pytest.approx(theory * theory_time / (theory_time + 39 * 0.0005 + 0.001))


def test_prediction_charges_a_hybrids_free_guesses_nothing():
    """A hybrid run whose passes all sent the session's free guesses: its draft model read and
    decoded nothing, so the prediction is the verify passes alone, although t_d was measured on
    the model beside it. Tokens the model did propose without reported reads cost t_d each."""
    costs = Costs(t1=0.01, t_d=0.004, t_v={1: 0.01, 5: 0.02})
    free = _stats([(4, 4), (4, 4), (4, 2)], source="session")
    e = (free.tokens - 1) / 3
    assert predicted_for(free, costs)[0] == pytest.approx(e * 0.01 / 0.02)
    paid = _stats([(4, 4), (4, 4), (4, 2)], source="model")
    assert predicted_for(paid, costs)[0] == pytest.approx(e * 0.01 / (0.02 + 4 * 0.004))


def test_costs_interpolate_unmeasured_sizes():
    c = Costs(t1=1.0, t_d=0.0, t_v={1: 1.0, 3: 3.0, 9: 6.0})
    assert c.verify(2) == pytest.approx(2.0)
    assert c.verify(6) == pytest.approx(4.5)
    assert c.verify(18) == pytest.approx(12.0)  # past the largest size: proportional


def test_first_divergence():
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert first_divergence([1, 2], [1, 2, 3]) == 2


def test_builtin_tasks_cover_every_kind_early_and_have_unique_names():
    tasks = builtin_tasks(completion_tokens=16, generate_tokens=32)
    assert {t.kind for t in tasks[:4]} == {"completion", "continuation", "edit", "chat"}
    assert len({t.name for t in tasks}) == len(tasks)
    assert all(t.kind in TASK_KINDS for t in tasks)
    for t in tasks:
        assert t.request.max_tokens == (16 if t.kind == "completion" else 32)
        if isinstance(t.request, CompletionRequest):
            # comparable runs: no time budget, no line cap cutting one side short
            assert t.request.time_budget_s is None


def test_edit_tasks_carry_the_code_they_edit():
    kinds = set()
    for t in builtin_tasks():
        kinds.add(t.kind)
        if t.kind == "edit":  # the app's edit request: the whole file rewritten as instructed
            assert isinstance(t.request, EditRequest) and t.request.instruction.strip()
            assert len(t.request.region) > 200 and t.request.region.endswith("\n")
            assert t.request.path.endswith((".py", ".js"))
        if t.kind == "chat":
            (msg,) = t.request.messages
            assert msg.role == "user" and "```" in msg.content and len(msg.content) > 200
    assert {"edit", "chat"} <= kinds


@pytest.fixture
def source_tree(tmp_path: Path) -> Path:
    src = tmp_path / "proj"
    (src / "pkg").mkdir(parents=True)
    (src / ".git").mkdir()
    (src / ".git" / "config.py").write_text("x = 1\n" * 50)
    (src / "node_modules").mkdir()
    (src / "node_modules" / "lib.js").write_text("var a = 1;\n" * 50)
    for i in range(3):
        body = "\n".join(f"    value_{j} = compute({i}, {j})  # step {j}" for j in range(40))
        (src / "pkg" / f"mod{i}.py").write_text(f"def run_{i}():\n{body}\n    return value_0\n")
    (src / "blob.bin").write_bytes(b"\0\1\2" * 100)
    (src / "notes.py").write_bytes(b"\xff\xfe not utf-8" * 20)
    return src


def test_collect_files_skips_hidden_and_vendored_folders(source_tree: Path):
    files = collect_files([source_tree])
    names = [f.relative_to(source_tree).as_posix() for f in files]
    assert names == ["notes.py", "pkg/mod0.py", "pkg/mod1.py", "pkg/mod2.py"]


def test_collect_files_reports_a_missing_path(tmp_path: Path):
    with pytest.raises(ValueError, match="no such file"):
        collect_files([tmp_path / "nope"])


def test_fim_tasks_are_reproducible_and_cut_real_cursors(source_tree: Path):
    a = fim_tasks([source_tree], count=6, seed=7, max_tokens=12)
    b = fim_tasks([source_tree], count=6, seed=7, max_tokens=12)
    c = fim_tasks([source_tree], count=6, seed=8, max_tokens=12)
    assert [t.source for t in a] == [t.source for t in b]
    assert [t.request for t in a] == [t.request for t in b]
    assert [t.source for t in a] != [t.source for t in c]
    for t in a:
        assert t.kind == "fim" and t.request.max_tokens == 12
        path, line, col = t.source.rsplit(":", 2)
        text = Path(path).read_text()
        assert t.request.prefix + t.request.suffix == text  # a cut, nothing lost or added
        lines = text.split("\n")
        cur = lines[int(line) - 1]
        assert cur.strip(), "cursor on a blank line"
        assert 1 <= int(col) <= len(cur) + 1
        assert t.request.prefix.endswith(cur[: int(col) - 1])
        assert "not utf-8" not in text


def test_fim_tasks_without_usable_text_raise(tmp_path: Path):
    (tmp_path / "tiny.py").write_text("x = 1\n")
    with pytest.raises(ValueError, match="no usable text files"):
        fim_tasks([tmp_path], count=2)
