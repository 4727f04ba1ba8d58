"""`specterm bench --edits FILE` through the installed script: the real app makes an edit task
with the demo model (the region selected, the edit key, the instruction typed, Enter) and rejects
it. The figures depend on the machine; the report's shape, the buffer restored and the headless
re-run are asserted."""

from __future__ import annotations

import json
from pathlib import Path

TASK = {"name": "rename", "kind": "edit", "path": "shapes.py",
        "before": "import math\n\n\n", "code": "def area(r):\n    return math.pi * r * r\n",
        "after": "\n\ndef perimeter(r):\n    return 2 * math.pi * r\n",
        "instruction": "rename r to radius"}


def test_an_edit_task_made_in_the_app_reports_its_timings(bench, tmp_path: Path):
    tasks = tmp_path / "edits.jsonl"
    tasks.write_text(json.dumps(TASK) + "\n" + json.dumps({"name": "c", "kind": "chat", "message": "hi"}) + "\n")
    r = bench("--edits", str(tasks), "--cps", "40", "--json", timeout=600)
    data = r.json()
    assert data["edits"] == 1 and data["restored"] == 1  # the chat task is not an edit: skipped
    (task,) = data["tasks"]
    assert task["name"] == "rename" and task["region_lines"] == 2 and task["tokens"] > 0
    assert task["typed_s"] > 0 and task["total_s"] > 0
    if task["first_change_ms"] is not None:  # the model changed something: shown before the end
        assert 0 < task["first_change_ms"] <= task["total_s"] * 1000 + 1
        assert data["first_change_ms"]["p50"] == task["first_change_ms"]
    assert task["prompt_tokens_decoded"] > 0 and task["headless_tokens_per_second"] is not None
    assert data["in_app_vs_headless"] is not None and data["in_app_vs_headless"] > 0
    assert "first changed line on screen after Enter" in r.err  # the table goes to stderr


def test_edits_bad_input_exits_2_with_one_line(bench, tmp_path: Path):
    def clean(r, needle: str) -> None:
        assert r.rc == 2 and "Traceback" not in r.err and r.out == "", (r.rc, r.err)
        assert len(r.err.strip().splitlines()) == 1 and needle in r.err, r.err

    clean(bench("--edits", str(tmp_path / "missing.jsonl")), "no such file")
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"name": "c", "kind": "chat", "message": "hi"}) + "\n")
    clean(bench("--edits", str(chat)), "has no edit task")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"name": "x", "kind": "edit"}\n')
    clean(bench("--edits", str(bad)), "bad.jsonl:1: a 'edit' task needs \"instruction\"")
    clean(bench("--edits", str(chat), "--replay", str(chat)), "run alone")
