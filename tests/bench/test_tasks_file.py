"""`specterm bench --tasks-file FILE`: the user's own tasks, one JSON object a line.

Bad lines must be named by file and line number with exit 2 and nothing on stdout; a good file runs
through the real engine and the report carries the names and kinds as the file gave them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specterm.engine.bench.tasks import TasksFileError, parse_tasks_file
from specterm.engine.requests import ChatRequest, CompletionRequest, EditRequest, GenerateRequest

from bench_support import TINY

REPO = Path(__file__).resolve().parents[2]
GOOD = [
    {"name": "rename", "kind": "edit", "instruction": "Rename x to y.", "code": "x = 1\nprint(x)\n",
     "path": "a.py", "max_tokens": 6, "context": ["def helper():\n    pass\n"]},
    {"name": "ask", "kind": "chat", "message": "What is 2 + 2?"},
    {"name": "go-on", "kind": "continuation", "prompt": "def add(a, b):\n"},
    {"name": "middle", "kind": "fim", "prefix": "def sub(a, b):\n    return ", "suffix": "\n"},
    {"name": "at-end", "kind": "completion", "prefix": "import os\nprint(os.getcwd(", "path": "m.py"},
]


def _lines(*objs) -> str:
    return "\n".join(o if isinstance(o, str) else json.dumps(o) for o in objs) + "\n"


def test_every_kind_parses_with_its_request_type_and_defaults():
    tasks = parse_tasks_file(_lines(*GOOD), source="t.jsonl", max_tokens={"chat": 11, "fim": 7})
    assert [(t.name, t.kind) for t in tasks] == [(g["name"], g["kind"]) for g in GOOD]
    edit, chat, cont, fim, comp = tasks
    assert isinstance(edit.request, EditRequest) and edit.request.instruction == "Rename x to y."
    assert edit.request.region == "x = 1\nprint(x)\n" and edit.request.path == "a.py"
    assert edit.request.max_tokens == 6 and edit.context == ("def helper():\n    pass\n",)
    assert isinstance(chat.request, ChatRequest) and chat.request.max_tokens == 11  # the kind's default
    assert chat.request.messages[0].content == "What is 2 + 2?"
    assert isinstance(cont.request, GenerateRequest) and cont.request.prompt == "def add(a, b):\n"
    assert isinstance(fim.request, CompletionRequest) and fim.request.suffix == "\n"
    assert fim.request.max_tokens == 7
    assert isinstance(comp.request, CompletionRequest) and comp.request.suffix == ""
    assert comp.request.path == "m.py"
    assert [t.source for t in tasks] == [f"t.jsonl:{i}" for i in range(1, 6)]


def test_blank_and_comment_lines_are_skipped_and_counted():
    text = "# my tasks\n\n" + json.dumps(GOOD[1]) + "\n"
    (task,) = parse_tasks_file(text, source="f")
    assert task.source == "f:3"


@pytest.mark.parametrize("line, needle", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ({"kind": "chat", "message": "hi"}, '"name" must be a non-empty string'),
    ({"name": "a", "kind": "poem", "message": "hi"}, '"kind" must be one of edit, chat, continuation, fim, completion'),
    ({"name": "a", "kind": "edit", "code": "x\n"}, "needs \"instruction\""),
    ({"name": "a", "kind": "chat", "message": "hi", "prompt": "x"}, "unknown key(s) 'prompt'"),
    ({"name": "a", "kind": "chat", "message": 3}, '"message" must be a string'),
    ({"name": "a", "kind": "chat", "message": "hi", "max_tokens": 0}, '"max_tokens" must be a whole number >= 1'),
    ({"name": "a", "kind": "chat", "message": "hi", "max_tokens": True}, '"max_tokens" must be a whole number'),
    ({"name": "a", "kind": "chat", "message": "hi", "context": "text"}, '"context" must be a list of strings'),
    ({"name": "ask", "kind": "chat", "message": "again"}, "'ask' is already used on line 1"),
])
def test_a_bad_line_is_named_by_its_number(line, needle):
    with pytest.raises(TasksFileError) as err:
        parse_tasks_file(_lines(GOOD[1], "", line), source="mine.jsonl")
    assert str(err.value).startswith("mine.jsonl:3: ") and needle in str(err.value)


def test_a_file_without_tasks_says_what_a_line_looks_like():
    with pytest.raises(TasksFileError, match=r'empty.jsonl: no tasks \(one JSON object a line'):
        parse_tasks_file("\n# nothing\n", source="empty.jsonl")


def test_the_example_tasks_files_parse_and_cover_every_kind():
    tasks = parse_tasks_file((REPO / "bench" / "tasks" / "code.jsonl").read_text(), source="code.jsonl")
    assert {t.kind for t in tasks} == {"edit", "chat", "continuation", "fim", "completion"}
    edits = parse_tasks_file((REPO / "bench" / "tasks" / "edits.jsonl").read_text(), source="edits.jsonl")
    assert edits and {t.kind for t in edits} == {"edit"}


def test_cli_bad_line_exits_2_with_the_line_number(bench, tmp_path: Path):
    f = tmp_path / "tasks.jsonl"
    f.write_text(_lines(GOOD[0], {"name": "b", "kind": "fim"}))
    r = bench("--tasks-file", str(f))
    assert r.rc == 2 and r.out == "" and "Traceback" not in r.err
    assert f"{f}:2: a 'fim' task needs \"prefix\"" in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_cli_missing_file_and_paths_together_exit_2(bench, tmp_path: Path):
    r = bench("--tasks-file", str(tmp_path / "nope.jsonl"))
    assert r.rc == 2 and "nope.jsonl: no such file" in r.err and "Traceback" not in r.err
    f = tmp_path / "t.jsonl"
    f.write_text(_lines(GOOD[1]))
    r = bench("--tasks-file", str(f), str(tmp_path))
    assert r.rc == 2 and "either PATHS" in r.err


def test_cli_runs_a_tasks_file_of_every_kind(bench, tmp_path: Path):
    f = tmp_path / "tasks.jsonl"
    f.write_text(_lines(*GOOD))
    r = bench("--json", "--tasks-file", str(f), "--draft", "lookup", "--no-costs", *TINY)
    data = r.json()
    assert [(t["name"], t["kind"]) for t in data["tasks"]] == [(g["name"], g["kind"]) for g in GOOD]
    for task in data["tasks"]:
        assert task["speculative"]["tokens"] > 0 and task["plain"]["drafted"] == 0
        assert task["source"].startswith(f"{f}:")
        assert task["speedup"] is None or task["speedup"] > 0
        for key in ("num_drafts", "num_draft_tokens", "num_accepted_tokens", "mean_acceptance_length"):
            assert key in task["speculative"]
    kinds = data["summary"]["by_kind"]
    assert set(kinds) == {"edit", "chat", "continuation", "fim", "completion"}
    assert all(v["tasks"] == 1 for v in kinds.values())
    assert data["summary"]["num_draft_tokens"] == sum(t["speculative"]["drafted"] for t in data["tasks"])
    # off a terminal, progress is one plain line per finished task, on stderr
    done = [ln for ln in r.err.splitlines() if ln.startswith("bench: [")]
    assert [ln.split("] ")[1].split(" (")[0] for ln in done] == [g["name"] for g in GOOD]
    assert "speculative telemetry" in r.err and "num_drafts" in r.err


def test_the_stdlib_edit_tasks_parse_as_edits_of_whole_files_of_regions_and_of_methods():
    import subprocess
    import sys
    from pathlib import Path

    from specterm.engine import EditRequest
    from specterm.engine.bench.tasks import parse_tasks_file

    script = Path(__file__).resolve().parents[2] / "bench" / "stdlib_edits.py"
    run = lambda *a: subprocess.run([sys.executable, str(script), *a], capture_output=True, text=True)  # noqa: E731
    whole = parse_tasks_file(run("whole").stdout)
    assert len(whole) >= 8 and all(isinstance(t.request, EditRequest) and not t.request.before for t in whole)
    regions = parse_tasks_file(run("region").stdout)
    assert len(regions) == 3
    methods = parse_tasks_file(run("methods").stdout)
    assert len(methods) == 10 and len({t.name for t in methods}) == 10
    for task in regions + methods:
        req = task.request
        assert req.before.endswith("\n") and req.after and req.region.startswith("    def ")
    assert all(12 <= t.request.region.count("\n") <= 60 for t in methods)
    bad = run("nonsense")
    assert bad.returncode == 2 and "usage" in bad.stderr and bad.stdout == ""
