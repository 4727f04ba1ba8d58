"""`specterm bench --edits FILE`: the real app, headless, makes each edit task as a person does and
times what the person waits for.

For every `edit` task of a tasks file (bench/tasks/README.md) the app (Textual's run_test, the
engine the settings choose) opens the task's file (its `before`, `code` and `after` on disk),
selects the task's region, presses the edit key, types the instruction at `cps` characters a second
(the box reads the prompt meanwhile, as it does for a user) and presses Enter. Measured from Enter:
the first changed line on screen (`first_change_ms`) and the end of the rewrite (`total_s`); then
the edit is rejected (the buffer must be the file again). Afterwards the same requests run on the
same engine with the UI idle, in the same order, its session memory emptied and fed the same files
first, and the in-app tokens/s is compared with those.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from textual.widgets.text_area import Selection

from specterm.engine import EditRequest, Finished
from specterm.engine.bench.tasks import BenchTask

from ..app import SpectermApp
from ..config import Settings
from .replay import ReplayError, key_event, key_for, percentiles, wait_engine_ready

DEFAULT_CPS = 12.0  # a quick typist's instruction: a few seconds for a short sentence
WAIT_S = 600.0  # the longest one rewrite is waited for


@dataclass(frozen=True)
class EditBenchOptions:
    cps: float = DEFAULT_CPS
    size: tuple[int, int] = (120, 40)
    wait_s: float = WAIT_S


@dataclass
class _Run:
    name: str
    lines: int
    typed_s: float
    first_change_s: float | None
    total_s: float
    request: EditRequest
    finished: Finished
    restored: bool
    file_text: str  # the file as opened (the app's session drafter remembered it then)


async def _until(pilot, done: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise ReplayError(f"{what} did not happen within {timeout:.0f} s")
        await asyncio.sleep(0.002)


class EditBench:
    def __init__(self, settings: Settings, tasks: Sequence[BenchTask], opts: EditBenchOptions,
                 progress: Callable[[str], None] | None = None) -> None:
        self.settings = settings
        self.tasks = list(tasks)  # edit tasks (the command keeps only those, and refuses none)
        self.opts = opts
        self.progress = progress or (lambda message: None)

    async def run(self) -> dict:
        folder = Path(tempfile.mkdtemp(prefix="specterm-edits-"))
        try:
            files = []
            for n, task in enumerate(self.tasks):
                req = task.request
                assert isinstance(req, EditRequest)
                path = folder / f"{n:02d}" / Path(req.path or "file.txt").name
                path.parent.mkdir()
                path.write_text(req.before + req.region + req.after, encoding="utf-8")
                files.append(path)
            app = SpectermApp(self.settings, folder, watch=False)
            async with app.run_test(size=self.opts.size) as pilot:
                await wait_engine_ready(app, pilot)
                runs = []
                for n, (task, path) in enumerate(zip(self.tasks, files)):
                    self.progress(f"edit {n + 1}/{len(self.tasks)}: {task.name}")
                    runs.append(await self._edit(app, pilot, task, path))
                self.progress("re-running the edits with the UI idle")
                return await self._report(app, runs)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    async def _edit(self, app: SpectermApp, pilot, task: BenchTask, path: Path) -> _Run:
        req = task.request
        assert isinstance(req, EditRequest)
        editor = await app.open_file(path)
        if editor is None:
            raise ReplayError(f"the app did not open {path.name}")
        original = editor.text
        start = req.before.count("\n")
        end = start + req.region.count("\n") + (0 if req.region.endswith("\n") else 1)
        editor.focus()
        editor.selection = Selection((start, 0), (end, 0) if end < editor.document.line_count else
                                     (end - 1, len(editor.document.lines[end - 1])))
        await pilot.pause()
        edits = app.edits
        app.post_message(key_event("ctrl+r"))
        await _until(pilot, lambda: edits.box is not None and edits.box.has_focus, 10, "the instruction box")
        t0 = time.monotonic()
        gap = 1.0 / self.opts.cps
        for n, ch in enumerate(req.instruction):  # at the typist's pace, whatever the app is doing
            app.post_message(key_event(key_for(ch)))
            await asyncio.sleep(max(0.0, t0 + (n + 1) * gap - time.monotonic()))
        await _until(pilot, lambda: edits.box is not None and edits.box.value == req.instruction, 10,
                     "typing the instruction")
        typed_s = time.monotonic() - t0
        before = edits.last_review
        app.post_message(key_event("enter"))
        await _until(pilot, lambda: edits.last_review is not before and edits.finished is not None,
                     self.opts.wait_s, "the rewrite")
        ended = time.monotonic()
        review, finished, request = edits.last_review, edits.finished, edits.request
        assert review is not None and finished is not None and request is not None and edits.sent_at is not None
        first = review.first_change_at
        sent = edits.sent_at
        if edits.review is not None:  # the model changed something: reject it all
            await _until(pilot, lambda: edits.review is not None and not edits.review.streaming, 10, "the review")
            app.post_message(key_event("r"))
            await _until(pilot, lambda: edits.review is None and not edits.active, 30, "rejecting the edit")
        await pilot.pause()
        return _Run(task.name, req.region.count("\n"), typed_s,
                    None if first is None else first - sent, ended - sent, request, finished,
                    editor.text == original, original)

    async def _report(self, app: SpectermApp, runs: list[_Run]) -> dict:
        engine = app.engine
        assert engine is not None
        tasks = []
        in_tokens = in_time = head_tokens = head_time = 0.0
        matched = 0
        # The session drafter starts again from nothing and meets what it met in the app, in the
        # app's order: each file as it was opened, then its edit (whose answer it learns). Re-run
        # with the app's memory instead, an edit drafted from its own earlier answer, and the
        # comparison measured that memory, not the UI.
        await engine.forget_session()
        for run in runs:
            await engine.remember(run.file_text)
            head: Finished | None = None
            async for event in engine.stream(run.request):
                if isinstance(event, Finished):
                    head = event
            a, b = run.finished.stats, head.stats if head is not None else None
            same = head is not None and head.text == run.finished.text
            matched += same
            if b is not None and a.tokens and b.tokens:
                in_tokens += a.tokens
                in_time += a.generation_time_s
                head_tokens += b.tokens
                head_time += b.generation_time_s
            tasks.append({
                "name": run.name, "region_lines": run.lines, "typed_s": round(run.typed_s, 2),
                "first_change_ms": None if run.first_change_s is None else round(run.first_change_s * 1000.0, 1),
                "total_s": round(run.total_s, 3), "tokens": a.tokens,
                "prompt_tokens_decoded": a.prompt_tokens_decoded,
                "in_app_tokens_per_second": _round(a.tokens_per_second, 1),
                "headless_tokens_per_second": None if b is None else _round(b.tokens_per_second, 1),
                "acceptance": _round(a.acceptance, 3), "same_text": same, "restored": run.restored,
            })
        firsts = [r.first_change_s for r in runs if r.first_change_s is not None]
        in_rate = in_tokens / in_time if in_time else 0.0
        head_rate = head_tokens / head_time if head_time else 0.0
        return {
            "edits": len(runs), "tasks": tasks,
            "first_change_ms": percentiles(firsts) if firsts else None,
            "total_ms": percentiles([r.total_s for r in runs]),
            "in_app_tokens_per_second": round(in_rate, 1),
            "headless_tokens_per_second": round(head_rate, 1),
            "in_app_vs_headless": round(in_rate / head_rate, 3) if head_rate else None,
            "same_text": matched, "restored": sum(r.restored for r in runs),
        }


def _round(x: float | None, digits: int) -> float | None:
    """round(), keeping None (nothing drafted: no acceptance; no time: no rate)."""
    return None if x is None else round(x, digits)


def run_edit_bench(settings: Settings, tasks: Sequence[BenchTask], opts: EditBenchOptions,
                   progress: Callable[[str], None] | None = None) -> dict:
    return asyncio.run(EditBench(settings, tasks, opts, progress).run())


def write_edit_bench(d: dict, out) -> None:
    lines = [f"{'task':<28} {'lines':>5} {'typed s':>7} {'first ms':>8} {'total s':>7} {'tok':>5} "
             f"{'app t/s':>7} {'headless':>8} {'same':>5}"]
    for t in d["tasks"]:
        first = "-" if t["first_change_ms"] is None else f"{t['first_change_ms']:.0f}"
        head = "-" if t["headless_tokens_per_second"] is None else f"{t['headless_tokens_per_second']:.1f}"
        app = "-" if t["in_app_tokens_per_second"] is None else f"{t['in_app_tokens_per_second']:.1f}"
        lines.append(f"{t['name'][:28]:<28} {t['region_lines']:>5} {t['typed_s']:>7.1f} {first:>8} "
                     f"{t['total_s']:>7.2f} {t['tokens']:>5} {app:>7} {head:>8} "
                     f"{'yes' if t['same_text'] else 'no':>5}")
    first = d["first_change_ms"]
    lines.append("")
    lines.append("first changed line on screen after Enter: "
                 + ("none shown" if first is None else f"p50 {first['p50']:.0f} ms, p95 {first['p95']:.0f} ms")
                 + f"; whole rewrite p50 {d['total_ms']['p50'] / 1000:.2f} s")
    ratio = d["in_app_vs_headless"]
    lines.append(f"tokens/s in the app {d['in_app_tokens_per_second']:.1f}, the same edits headless "
                 f"{d['headless_tokens_per_second']:.1f}"
                 + ("" if ratio is None else f" ({ratio:.2f}x)")
                 + f"; same text {d['same_text']} of {d['edits']}, buffer restored {d['restored']} of {d['edits']}")
    out.write("\n".join(lines) + "\n")
