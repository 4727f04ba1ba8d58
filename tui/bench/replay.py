"""`specterm bench --replay FILE`: the real app, headless, types a file as a person would and
measures what its completions are worth.

The app (Textual's run_test/Pilot, the engine the settings choose) opens a copy of FILE with some
regions taken out (`--full`: all of it), each leaving an open line, and types each region back there
at a human pace (`--cps` characters a second, a pause at every line end). An open line, as a person
who writes new code opens one: typed in front of the code that follows, on its line, each pause
would have that code after the cursor, where no suggestion is asked for unless the user asks
(`max_line_suffix`). A simulated user presses Tab when the shown
suggestion is what the file says next, End when its first line is, ctrl+right when only its
first word is. Time is measured from the keystroke; a suggestion taken whole (Tab, or line by line
or word by word to its end) is an accept, and the time to the next suggestion after it is
`after_accept_ms`. A small model's suggestion is seldom exactly what the file says, so at up to
ACCEPT_PROBES pauses the user also presses Tab on a suggestion the file does not want, times the
next one the same way, and takes the accepted text out again (an accept probe; the file is
unchanged).
The start of a region is a cursor jump, not a pause in typing: the first suggestion there has a new
place to read and is reported on its own (`after_jump_ms`). After the typing, the same requests run
again with the UI idle, in the app's order with the session memory started afresh (every shown
one of MIN_TOKENS or more is compared), to compare in-app tokens/s with the engine's own.

Then a person's path, what most real editing is: at PERSON_SPOTS places of the file, in no order,
the cursor moves to the end of a line, Enter opens a new line below it and the first PERSON_CHARS
characters of the line that belongs there come in one quick burst; the first suggestion is timed
from the last of those keys (`person_ms`), and at as many other places after a LOOK_S look before
typing (`person_look_ms`). Those lines are taken out of the buffer first (a model that sees the
line it is asked for repeats it, and the completion rules drop a repeat); what is typed there is
taken out again after each visit.
"""

from __future__ import annotations

import asyncio
import math
import random
import shutil
import tempfile
import time
import unicodedata
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from textual import events
from textual.keys import REPLACED_KEYS, _character_to_key, _get_unicode_name_from_key
from textual.message import Message

from specterm.engine import CompletionRequest, Engine, Finished, StatsUpdate

from ..app import SpectermApp
from ..config import Settings
from ..widgets.editor import CodeEditor
from ..widgets.ghost import next_line, next_word

DEFAULT_CPS = 8.0
BUDGET_S = 300.0  # a 25 KB file's default replay finishes within this
REGION_LINES = 4
TYPING_SHARE = 0.5  # of the budget: typing; the rest is pauses and waiting for suggestions
MIN_TOKENS = 4  # shorter requests say little about a rate
KEY_WAIT_S = 1.0  # the longest a key's effect is waited for
ACCEPT_PROBES = 10  # pauses at which Tab takes a suggestion the file does not want (then undone)
PERSON_SPOTS = 10  # places of the person's path, each way (typing at once; after a look)
PERSON_CHARS = 4  # typed at each place, in one burst
PERSON_GAP_S = 0.0  # between the burst's keys: at once, as a terminal delivers them (each waits for its effect)
LOOK_S = 0.3  # the look before typing on the second half of the path
PERSON_WITHIN_S = 0.6  # the share of places whose first suggestion came within this is reported


class ReplayError(Exception):
    """The replay could not run (the model did not load): one line for the user."""


@dataclass(frozen=True)
class ReplayOptions:
    cps: float = DEFAULT_CPS
    full: bool = False
    line_pause_s: float = 1.0  # the least pause at a line end
    wait_s: float = 3.0  # the longest a pause waits for a suggestion to finish
    budget_s: float = BUDGET_S
    seed: int = 0
    size: tuple[int, int] = (120, 40)


@dataclass(frozen=True)
class Region:
    start: int  # character offsets into the file
    end: int

    def typed_end(self, text: str) -> int:
        """Where typing the region stops: before its last line break, which the open line left
        in the copy already."""
        return self.end - 1 if self.end > self.start and text[self.end - 1] == "\n" else self.end


def open_lines(text: str, regions: list[Region]) -> str:
    """The copy the app opens: `text` without each region's typed part (an open line where a
    region of whole lines was)."""
    kept, at = [], 0
    for r in regions:
        kept.append(text[at:r.start])
        at = r.typed_end(text)
    return "".join(kept) + text[at:]


def pick_regions(text: str, opts: ReplayOptions) -> list[Region]:
    """Whole-line regions spread over the file, as many as the typing budget allows (the whole
    file when it fits or with --full)."""
    budget = opts.cps * opts.budget_s * TYPING_SHARE
    if opts.full or len(text) <= budget:
        return [Region(0, len(text))]
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    lines = len(starts)
    per_region = len(text) / lines * REGION_LINES
    count = max(1, min(lines // REGION_LINES, int(budget // max(per_region, 1))))
    rng = random.Random(opts.seed)
    regions: list[Region] = []
    span = lines / count
    for k in range(count):
        first = int(k * span) + rng.randrange(max(1, int(span) - REGION_LINES + 1))
        last = min(first + REGION_LINES, lines)
        start = starts[first]
        end = starts[last] if last < lines else len(text)
        if text[start:end].strip():
            regions.append(Region(start, end))
    while len(regions) > 1 and sum(r.end - r.start for r in regions) > budget:
        regions.remove(max(regions, key=lambda r: r.end - r.start))  # the budget holds
    return regions or [Region(0, len(text))]


def pick_spots(text: str, count: int, seed: int = 0) -> list[int]:
    """Up to `count` line numbers spread over the file, in a random order: lines with at least
    PERSON_CHARS characters after their indentation that follow another line (the person opens a
    new line below that one and writes this one)."""
    lines = text.split("\n")
    good = [i for i in range(1, len(lines))
            if len(lines[i].strip()) >= PERSON_CHARS and i + 1 < len(lines)]
    if not good:
        return []
    count = min(count, len(good))
    rng = random.Random(seed)
    span = len(good) / count
    spots = [good[int(k * span) + rng.randrange(max(1, int(span)))] for k in range(count)]
    spots = sorted(set(spots))
    rng.shuffle(spots)
    return spots


def percentiles(values: list[float]) -> dict[str, float]:
    """p50 and p95 in ms (0 with no values: the count beside it says so)."""
    if not values:
        return {"p50": 0.0, "p95": 0.0}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))] * 1000, 1)

    return {"p50": at(0.5), "p95": at(0.95)}


@dataclass
class _Tally:
    first_ghost: list[float] = field(default_factory=list)
    complete: list[float] = field(default_factory=list)
    after_accept: list[float] = field(default_factory=list)
    after_jump: list[float] = field(default_factory=list)  # first text after a region's cursor jump
    person: list[float] = field(default_factory=list)  # the person's path: moved, typed at once
    person_look: list[float] = field(default_factory=list)  # ... after a look
    person_spots: int = 0
    person_look_spots: int = 0
    accept_probes: int = 0
    jumps: int = 0
    pauses: int = 0
    pauses_with_ghost: int = 0
    served: int = 0  # pauses whose suggestion came from the cache or a prefetch
    accepts_without_next: int = 0
    typed: int = 0
    accepted_chars: int = 0
    accepted: int = 0  # whole accepts (Tab, or line by line or word by word to its end)
    word_accepts: int = 0
    line_accepts: int = 0
    vanished: int = 0
    vanished_examples: list[str] = field(default_factory=list)


class _Watch:
    """Follows GhostChanged messages (the message hook): when the first text appeared after a
    keystroke, and whether a shown suggestion changed without one (a vanish)."""

    def __init__(self, tally: _Tally) -> None:
        self.tally = tally
        # (pressed, handled) per key: a key is on its way between the two
        self.spans: deque[list[float]] = deque([[0.0, 0.0]], maxlen=256)
        self.shown = ""
        self.shown_at = 0.0
        self.shown_edits = 0
        self.first_text_at: float | None = None
        self.seen: deque[Message] = deque(maxlen=64)

    @property
    def last_key(self) -> float:
        """When the latest key was pressed."""
        return self.spans[-1][0]

    def key(self) -> float:
        self.spans.append([time.monotonic(), math.inf])
        self.first_text_at = None
        return self.last_key

    def handled(self) -> None:
        """The latest key has been handled by the editor."""
        self.spans[-1][1] = time.monotonic()

    def __call__(self, message: Message) -> None:
        """Called at every widget a message reaches (it bubbles): only its first arrival counts."""
        if not isinstance(message, CodeEditor.GhostChanged) or any(m is message for m in self.seen):
            return
        self.seen.append(message)
        text, at = message.text, message.at  # drawn at `at`, handled now
        # Changed by the user: the text was edited since the last drawing, or a key (a move,
        # Escape) was pressed or on its way in between.
        edited = message.edits != self.shown_edits or any(
            sent <= at and done >= self.shown_at for sent, done in self.spans)
        if self.shown and not edited and not text.startswith(self.shown):
            self.tally.vanished += 1
            if len(self.tally.vanished_examples) < 5:
                self.tally.vanished_examples.append(f"{self.shown!r} -> {text!r}")
        if text and self.first_text_at is None and at >= self.last_key:
            self.first_text_at = at
        self.shown, self.shown_at, self.shown_edits = text, at, message.edits


def key_for(ch: str) -> str:
    return {"\n": "enter", "\t": "tab", " ": "space"}.get(ch, ch)


def key_event(key: str) -> events.Key:
    """The Key event a terminal sends for `key` (a character or a key name), as Pilot makes it."""
    name = _character_to_key(key) if len(key) == 1 and not key.isalnum() else key
    try:
        char: str | None = unicodedata.lookup(_get_unicode_name_from_key(REPLACED_KEYS.get(name, name)))
    except KeyError:
        char = key if len(key) == 1 else None
    return events.Key(name, char)


async def wait_engine_ready(app: SpectermApp, pilot) -> None:
    """Wait for the app's model to load; ReplayError when it cannot."""
    deadline = time.monotonic() + 300
    while not app.engine_ready.is_set():
        if app.status_model.state == "error":
            raise ReplayError(f"the model could not be loaded: {app.status_model.message}")
        if time.monotonic() > deadline:
            raise ReplayError("the model did not load within 300 s")
        await pilot.pause(0.05)


class Replay:
    def __init__(self, settings: Settings, path: Path, text: str, opts: ReplayOptions,
                 progress: Callable[[str], None] | None = None) -> None:
        self.settings = settings
        self.path = path
        self.text = text
        self.opts = opts
        self.progress = progress or (lambda message: None)
        self.tally = _Tally()
        self.watch = _Watch(self.tally)
        self.blanked = ""  # the file as the app opened it (regions blanked out)

    async def run(self) -> dict:
        regions = pick_regions(self.text, self.opts)
        blanked = open_lines(self.text, regions)
        folder = Path(tempfile.mkdtemp(prefix="specterm-replay-"))
        try:
            copy = folder / self.path.name
            copy.write_text(blanked, encoding="utf-8")
            self.blanked = blanked
            app = SpectermApp(self.settings, copy, watch=False)
            started = time.monotonic()
            async with app.run_test(size=self.opts.size, message_hook=self.watch) as pilot:
                await wait_engine_ready(app, pilot)
                editor = app.active_editor
                assert editor is not None
                for n, region in enumerate(regions):
                    self.progress(f"region {n + 1}/{len(regions)}")
                    await self._type_region(pilot, editor, region)
                typed_s = time.monotonic() - started
                await self._press(pilot, "escape")  # no suggestion or prefetch left running
                await pilot.pause(0.2)
                self.progress("re-running the requests with the UI idle")
                report = await self._report(app, regions, typed_s, editor.text == self.text)
                await self._person_path(pilot, editor)
                return report | self._person_report()
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _location(self, offset: int) -> tuple[int, int]:
        before = self.text[:offset]
        return before.count("\n"), len(before) - (before.rfind("\n") + 1)

    async def _press(self, pilot, key: str) -> float:
        """Press `key` as a person does: send it and go on once the editor shows its effect (an
        edit; Escape: no suggestion), at most KEY_WAIT_S. (Pilot.press also waits until the whole
        process is idle, which with the engine writing a suggestion in-process means until it has
        finished: typing would stall behind every suggestion, and times measured from keys would
        grow by as much. Keys bound to actions, such as accepting a word, take effect only once the
        event has bubbled up to the app, so "the editor has handled it" is not enough.)"""
        app = pilot.app
        editor = app.active_editor
        edits = editor.edits if editor is not None else 0
        at = self.watch.key()
        app.post_message(key_event(key))
        deadline = at + KEY_WAIT_S
        while time.monotonic() < deadline and editor is not None:
            if editor.edits > edits if key != "escape" else not editor.ghost_text:
                break
            await asyncio.sleep(0.002)
        self.watch.handled()
        return at

    async def _type_region(self, pilot, editor: CodeEditor, region: Region) -> None:
        gap = 1.0 / self.opts.cps
        at = self.watch.key()
        editor.move_cursor(self._location(region.start))
        editor.action_complete()  # a move alone asks for nothing: a user there asks (ctrl+space)
        self.watch.handled()
        end = region.typed_end(self.text)
        await self._pause(pilot, editor, at, ahead=self.text[region.start:end], jump=True)
        i = region.start
        while i < end:
            want = self.text[i:end]
            ghost = editor.ghost_text
            # What a key takes is what is on screen when it arrives: while the suggestion still
            # streams, it may have grown by then, so Tab waits for its end and a word must be
            # followed by more text (complete).
            streaming = editor.completion_pending
            if ghost and want.startswith(ghost) and not streaming:
                i += await self._accept(pilot, editor, "tab", ghost)
                continue
            line = next_line(ghost) if ghost else ""
            if (line.strip() and line != ghost and want.startswith(line)
                    and (len(line) < len(ghost) or not streaming)):
                i += await self._accept(pilot, editor, "end", line)
                continue
            word = next_word(ghost) if ghost else ""
            if word.strip() and want.startswith(word) and (len(word) < len(ghost) or not streaming):
                i += await self._accept(pilot, editor, "ctrl+right", word)
                continue
            ch = want[0]
            if ch == "\t" and editor.ghost_text:
                await self._press(pilot, "escape")  # Tab would accept the suggestion
            through = editor.ghost_text.startswith(ch)  # the key types through the suggestion
            at = await self._press(pilot, key_for(ch))
            self.tally.typed += 1
            i += 1
            if ch == "\n":
                i += await self._fix_indent(pilot, editor, self.text[i:end].split("\n", 1)[0])
            line_end = i >= end or ch == "\n"  # (i is past the new line's indentation)
            if line_end:  # timed from the last key (indentation fixed after Enter included)
                last = self.watch.last_key
                await self._pause(pilot, editor, last, through and last == at,
                                  ahead=self.text[i:end])
            else:
                await asyncio.sleep(max(0.0, gap - (time.monotonic() - at)))

    async def _person_path(self, pilot, editor: CodeEditor) -> None:
        """The person's path (see the module's docstring) on the typed file, visiting its places
        in a random order, every other one after a look."""
        lines = self.text.split("\n")
        spots = pick_spots(self.text, 2 * PERSON_SPOTS, self.opts.seed)
        gone = sorted(spots)
        for row in reversed(gone):  # bottom up: the rows above stay where they are
            editor.delete((row, 0), (row + 1, 0))
        await self._press(pilot, "escape")
        deadline = time.monotonic() + 30  # what the deletions asked for ends before the first move
        while (editor.completion_pending or pilot.app.completer.generating) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        for n, spot in enumerate(spots):
            self.progress(f"a person's path: place {n + 1}/{len(spots)}")
            row = spot - 1 - sum(g < spot for g in gone)  # the line above it, in the buffer now
            await self._visit(pilot, editor, row, lines[spot], look=n % 2 == 1)

    async def _visit(self, pilot, editor: CodeEditor, row: int, line: str, *, look: bool) -> None:
        """Move to the end of `row`, (look,) open a line below it and type the start of `line` at
        once; time the first suggestion from the last key; take the typed text out again."""
        self.watch.key()
        end = (row, len(editor.document[row]))
        editor.move_cursor(end)
        self.watch.handled()
        if look:
            await asyncio.sleep(LOOK_S)
        at = await self._press(pilot, "enter")
        written = await self._fix_indent(pilot, editor, line)
        content = line.lstrip(" \t")
        for ch in line[written: len(line) - len(content)] + content[:PERSON_CHARS]:
            if ch == "\t" and editor.ghost_text:
                await self._press(pilot, "escape")  # Tab would accept the suggestion
            at = await self._press(pilot, key_for(ch))
            await asyncio.sleep(max(0.0, PERSON_GAP_S - (time.monotonic() - at)))
        await self._settle(pilot, editor, least_s=0.0)
        first = self.watch.first_text_at
        if look:
            self.tally.person_look_spots += 1
        else:
            self.tally.person_spots += 1
        if first is not None and editor.ghost_text:
            (self.tally.person_look if look else self.tally.person).append(first - at)
        await self._press(pilot, "escape")
        editor.delete(end, editor.cursor_location)
        await self._press(pilot, "escape")  # (the edit's own pause asks for nothing then)

    def _person_report(self) -> dict:
        t = self.tally
        within = sum(v <= PERSON_WITHIN_S for v in t.person)
        return {
            "person_ms": percentiles(t.person),
            "person_count": len(t.person),
            "person_spots": t.person_spots,  # places visited; those without a suggestion: the difference
            "person_within_600ms": within,
            "person_look_ms": percentiles(t.person_look),
            "person_look_count": len(t.person_look),
            "person_look_spots": t.person_look_spots,
        }

    async def _fix_indent(self, pilot, editor: CodeEditor, line: str) -> int:
        """Enter kept the line's indentation: keep what `line` (the file's) has, delete the rest.
        Returns how many of its characters the editor already wrote."""
        row, col = editor.cursor_location
        auto = editor.document[row][:col]
        want = line[: len(line) - len(line.lstrip(" \t"))]
        while auto and not want.startswith(auto):
            await self._press(pilot, "backspace")  # (one level of leading spaces at a time)
            row, col = editor.cursor_location
            auto = editor.document[row][:col]
        return len(auto)

    async def _accept(self, pilot, editor: CodeEditor, key: str, piece: str) -> int:
        whole = piece == editor.ghost_text  # Tab, or the last word of it: all of it is taken
        at = await self._press(pilot, key)
        self.tally.accepted_chars += len(piece)
        if key == "end":
            self.tally.line_accepts += 1
        elif key != "tab":
            self.tally.word_accepts += 1
        if whole:
            self.tally.accepted += 1
            await self._time_next_after(pilot, editor, at)
        return len(piece)

    async def _time_next_after(self, pilot, editor: CodeEditor, at: float) -> None:
        """After an accept pressed at `at`: wait for the next suggestion and time its first text."""
        await self._settle(pilot, editor, least_s=0.0)
        if self.watch.first_text_at is not None:
            self.tally.after_accept.append(self.watch.first_text_at - at)
        else:
            self.tally.accepts_without_next += 1

    async def _pause(self, pilot, editor: CodeEditor, at: float, had: bool = False, *,
                     ahead: str = "", jump: bool = False) -> None:
        """A pause at a line end (`jump`: at a region's start, after the cursor jumped there): wait
        for a suggestion (or for none to come), and time it. `had`: the key before it typed through
        a shown suggestion (nothing new to time). A new suggestion may be on screen already: the
        watch saw when it came. `ahead`: what the file says next (a suggestion that is not its
        start may be taken for an accept probe)."""
        self.tally.pauses += 1
        self.tally.jumps += jump
        complete_at = await self._settle(pilot, editor,
                                         least_s=self.opts.line_pause_s - (time.monotonic() - at))
        if had or not editor.ghost_text:
            return
        self.tally.pauses_with_ghost += 1
        if editor.ghost_source in ("cache", "prefetch"):
            self.tally.served += 1
        if self.watch.first_text_at is not None:
            first = self.tally.after_jump if jump else self.tally.first_ghost
            first.append(self.watch.first_text_at - at)
        if complete_at is not None and not jump:
            self.tally.complete.append(complete_at - at)
        if (complete_at is not None and self.tally.accept_probes < ACCEPT_PROBES
                and not ahead.startswith(editor.ghost_text)):
            await self._probe_accept(pilot, editor)

    async def _probe_accept(self, pilot, editor: CodeEditor) -> None:
        """Tab on a suggestion the file does not want: time the next suggestion as after any
        accept, then delete what Tab inserted (the text is as before; the replay goes on)."""
        before, where = editor.text, editor.cursor_location
        at = await self._press(pilot, "tab")
        if editor.text == before:
            return  # nothing was taken (the suggestion went meanwhile)
        self.tally.accept_probes += 1
        await self._time_next_after(pilot, editor, at)
        editor.delete(where, editor.cursor_location)
        if editor.text != before:
            raise ReplayError("an accept probe could not be taken back (the editor's text differs)")

    async def _settle(self, pilot, editor: CodeEditor, *, least_s: float) -> float | None:
        """Let the app run at least `least_s`, then until nothing is pending (at most `wait_s`);
        returns when the shown suggestion was first complete (None: none was)."""
        start = time.monotonic()
        complete = None
        while True:
            now = time.monotonic()
            pending = editor.completion_pending
            if complete is None and editor.ghost_text and not pending:
                complete = now
            if now - start >= self.opts.wait_s or (now - start >= least_s and not pending):
                return complete
            # A plain sleep, not pilot.pause: that makes every widget answer a callback (to wait
            # for the screen), 100 times a second here, which a real user's app never does and
            # which took the UI thread (and cores) from the engine while it wrote suggestions.
            await asyncio.sleep(0.01)

    async def _report(self, app: SpectermApp, regions: list[Region], typed_s: float, same: bool) -> dict:
        t = self.tally
        records = list(app.completer.log.records)
        wasted = sum(r.stats.tokens for r in records if not r.shown and r.stats is not None)
        timed = [r for r in records if r.shown and r.stats is not None
                 and r.stats.tokens >= MIN_TOKENS]
        in_tokens, in_time, head_tokens, head_time, compared = 0, 0.0, 0, 0.0, 0
        in_drafted = head_drafted = reruns = 0
        engine = app.engine
        assert engine is not None
        # The re-runs start from what the app had at the start (the opened file) and run every
        # request the app ran up to the last one compared, in the app's order and each for as many
        # tokens as it wrote there (prefetches, alternatives and cut-short ones too): the session drafter then
        # remembers what it remembered in the app, and the draft policy learns from the same
        # sequence, so each compared request drafts as it drafted in the app. (Re-running only
        # the compared ones left the policy a different history: it drafted markedly fewer
        # tokens headless, which moved the ratio by more than the UI did.)
        await engine.forget_session()
        await engine.remember(self.blanked)
        chosen = {id(r) for r in timed}
        last = max((i for i, r in enumerate(records) if id(r) in chosen), default=-1)
        for r in records[:last + 1]:
            if r.stats is None or not r.stats.tokens:
                continue
            # the same request (its max_tokens too: the policy's probing and draft lengths
            # depend on it), stopped once it has written what it wrote in the app, the UI idle;
            # its prefix as the app's first-read budget left it (what the engine had read before
            # it, in the app, decided that)
            request = replace(r.request, prefix=r.request.prefix[r.stats.prompt_cut_chars:], first_read_s=None,
                              time_budget_s=None, predict_budget_s=None, started_at=None)
            finished = await _run_for(engine, request, r.stats.tokens)
            reruns += 1
            if (id(r) not in chosen or finished is None
                    or finished.reason not in ("eos", "length", "stop", "cancelled")
                    or not finished.stats.tokens):
                continue
            compared += 1
            in_tokens += r.stats.tokens
            in_time += r.stats.generation_time_s
            head_tokens += finished.stats.tokens
            head_time += finished.stats.generation_time_s
            in_drafted += r.stats.drafted
            head_drafted += finished.stats.drafted
        in_tps = in_tokens / in_time if in_time > 0 else 0.0
        head_tps = head_tokens / head_time if head_time > 0 else 0.0
        written = t.typed + t.accepted_chars
        return {
            "file": str(self.path),
            "file_chars": len(self.text),
            "regions": len(regions),
            "region_chars": sum(r.end - r.start for r in regions),
            "cps": self.opts.cps,
            "full": self.opts.full,
            "duration_s": round(typed_s, 1),
            "text_matches": same,
            "first_ghost_ms": percentiles(t.first_ghost),
            "first_ghost_count": len(t.first_ghost),
            "typing_ms": percentiles(t.first_ghost),  # the pauses inside continuous typing
            "typing_count": len(t.first_ghost),
            "complete_ms": percentiles(t.complete),
            "complete_count": len(t.complete),
            "after_accept_ms": percentiles(t.after_accept),
            "after_accept_count": len(t.after_accept),
            "accept_probes": t.accept_probes,
            "after_jump_ms": percentiles(t.after_jump),
            "after_jump_count": len(t.after_jump),
            "jumps": t.jumps,
            "accepts_without_next": t.accepts_without_next,
            "pauses": t.pauses,
            "pauses_with_ghost": t.pauses_with_ghost,
            "served_share": round(t.served / t.pauses_with_ghost, 3) if t.pauses_with_ghost else 0.0,
            "typed_chars": t.typed,
            "accepted_chars": t.accepted_chars,
            "accepted_chars_share": round(t.accepted_chars / written, 3) if written else 0.0,
            "suggestions_shown": sum(r.shown for r in records),
            "suggestions_accepted": t.accepted,
            "word_accepts": t.word_accepts,
            "line_accepts": t.line_accepts,
            "requests": sum(not r.prefetch and not r.alternative for r in records),
            "prefetches": sum(r.prefetch for r in records),
            "alternatives": sum(r.alternative for r in records),
            "wasted_tokens": wasted,
            "in_app_tokens_per_s": round(in_tps, 1),
            "headless_tokens_per_s": round(head_tps, 1),
            "in_app_vs_headless": round(in_tps / head_tps, 3) if head_tps > 0 else 0.0,
            "compared_requests": compared,
            "headless_reruns": reruns,  # every request up to the last compared one
            "in_app_drafted": in_drafted,  # draft tokens the compared requests sent: like for like
            "headless_drafted": head_drafted,
            "vanished": t.vanished,
            "vanished_examples": t.vanished_examples,
        }


async def _run_for(engine: Engine, request: CompletionRequest, tokens: int) -> Finished | None:
    """Stream `request` until it has written `tokens` tokens (then cancel it: it ends a pass or
    so later) or ends by itself; its Finished event."""
    finished, asked = None, False
    async for event in engine.stream(request):
        if isinstance(event, StatsUpdate) and event.stats.tokens >= tokens and not asked:
            asked = True
            await engine.cancel()
        elif isinstance(event, Finished):
            finished = event
    return finished


def run_replay(settings: Settings, path: Path, text: str, opts: ReplayOptions,
               progress: Callable[[str], None] | None = None) -> dict:
    return asyncio.run(Replay(settings, path, text, opts, progress).run())
