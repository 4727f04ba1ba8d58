"""A person's path through a real terminal: specterm in tmux, the first suggestion timed from the
keystrokes as a user sees it on the screen.

    python bench/person_tmux.py FILE [--spots 10] [--seed 0] [--jump N] [--specterm PATH] [--json]

specterm opens a copy of FILE with 2 x SPOTS lines taken out (as `specterm bench --replay` does for
its person's path). At each of those places, in no order, the keys a person presses go to the
terminal: ctrl+f, the line above the place, Enter, Esc (the find bar moves the cursor there), End;
then, on every other place after a 0.3 s look, Enter and the first 4 characters of the line that
belongs there in one write. The screen is read each time the app draws (tmux tells its control
client): the time from that write to the first text the editor shows beyond what was typed is the
first suggestion's. Then
ctrl+z takes the typed text out again. `--jump N` instead times N jumps from the top of the file to
its end (ctrl+home, a second, ctrl+end, Enter and the start of the file's last line, taken out).
Needs tmux; the model is the configured one (the demo pair by default). Prints p50/p95 in ms each
way, and with --json the raw times.
"""

from __future__ import annotations

import argparse
import json
import queue
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from specterm.tui.bench.replay import percentiles  # (p50/p95 in ms of times in seconds)

SIZE = (120, 40)
LOOK_S = 0.3
CHARS = 4
WAIT_S = 5.0  # the longest a place waits for a suggestion
NOTICES_S = 14.0  # the app's first notices (the demo model's: 12 s) have gone by then
EDGE = 4  # columns at the right edge left out of the comparison (the scroll bar)


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


class ControlClient:
    """One tmux control-mode client (`tmux -C`): screen reads and keys are commands on its pipe, so
    timing starts no process (a `tmux capture-pane` process every few ms takes a share of a 2-core
    box from the app being timed), and the screen is read when the app has written to it (tmux's
    `%output` notifications), not polled on a clock: between the keys and the suggestion the
    script wakes only when there is something new to see. It ignores its own size, so the window
    keeps SIZE."""

    def __init__(self, session: str) -> None:
        self.proc = subprocess.Popen(["tmux", "-C", "attach-session", "-f", "ignore-size,read-only", "-t", session],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                     encoding="utf-8", errors="replace")  # (%output carries raw bytes)
        self.outputs = 0  # %output notifications so far: the app wrote to the terminal
        self._changed = threading.Condition()
        self._replies: "queue.Queue[list[str] | None]" = queue.Queue()
        threading.Thread(target=self._read, name="tmux-control", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        block: list[str] | None = None
        for got in self.proc.stdout:
            got = got.rstrip("\n")
            if got.startswith("%begin"):
                block = []
            elif got.startswith(("%end", "%error")) and block is not None:
                self._replies.put(block)
                block = None
            elif block is not None:
                block.append(got)
            elif got.startswith("%output"):
                with self._changed:
                    self.outputs += 1
                    self._changed.notify_all()
        self._replies.put(None)  # the client ended

    def command(self, line: str) -> list[str]:
        """Run one tmux command; its output lines."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self._replies.get(timeout=30)
        if reply is None:
            raise RuntimeError("the tmux control client ended")
        return reply

    def wait_output(self, seen: int, timeout: float) -> int:
        """The count of %output notifications once it differs from `seen` (or `timeout` passed)."""
        with self._changed:
            self._changed.wait_for(lambda: self.outputs != seen, timeout=max(timeout, 0.0))
            return self.outputs

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=5)


_client: ControlClient | None = None


def control() -> ControlClient:
    assert _client is not None, "the control client is attached in main, before any read"
    return _client


def screen(session: str) -> list[str]:
    return control().command(f"capture-pane -p -t {session}")


def type_at_once(session: str, text: str) -> None:
    """Enter and `text` in one command, as bytes (`send-keys -H`): the pane gets them together,
    as a terminal delivers keys typed faster than it reads them."""
    data = "\r" + text
    control().command(f"send-keys -t {session} -H " + " ".join(f"{b:02x}" for b in data.encode("utf-8")))


def editor_rows(rows: list[str]) -> list[str]:
    """The rows from the file's tab to the editor's last: not the status bar and footer below. The
    last of them counts: a find that moves down leaves its line one row above it, so Enter puts the
    typed line and its suggestion there."""
    return rows[1:SIZE[1] - 2]


def pick_places(text: str, count: int, seed: int) -> list[int]:
    """Line numbers to take out and write again: at least CHARS characters after the indentation,
    below a non-blank line that occurs once in the file (the find bar goes there)."""
    lines = text.split("\n")
    good = [i for i in range(1, len(lines) - 1)
            if len(lines[i].strip()) >= CHARS and lines[i - 1].strip() and text.count(lines[i - 1].strip()) == 1]
    rng = random.Random(seed)
    picked = sorted(rng.sample(good, min(count, len(good))))
    # no two adjacent: the line above a place must stay in the file
    picked = [p for k, p in enumerate(picked) if k == 0 or p - picked[k - 1] > 1]
    rng.shuffle(picked)
    return picked


GUTTER = re.compile(r"▎\s*(\d+) (.*)$")


def code_of(row: str, number: int | None = None) -> str | None:
    """The code a screen row of the editor shows (after its line number); with `number`, only
    for that line (1-based), else None."""
    m = GUTTER.search(row)
    if m is None or (number is not None and int(m.group(1)) != number):
        return None
    return m.group(2)


def settle(session: str, quiet_s: float = 2.0, limit_s: float = 60.0) -> None:
    """Wait until the screen has not changed for `quiet_s` (the model loaded, notices gone)."""
    last, since, start = None, time.monotonic(), time.monotonic()
    while time.monotonic() - start < limit_s:
        rows = screen(session)
        if rows != last:
            last, since = rows, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.1)


def go_to(session: str, above: str) -> None:
    """The cursor to the end of the line `above` (ctrl+f finds it)."""
    tmux("send-keys", "-t", session, "C-f")
    time.sleep(0.15)
    tmux("send-keys", "-t", session, "-l", above.strip())
    tmux("send-keys", "-t", session, "Enter")
    time.sleep(0.15)
    tmux("send-keys", "-t", session, "Escape")
    time.sleep(0.1)
    tmux("send-keys", "-t", session, "End")


def jump_to_end(session: str) -> None:
    """From the top of the file to its end, as ctrl+home and ctrl+end take a person there."""
    tmux("send-keys", "-t", session, "C-Home")
    time.sleep(1.0)
    tmux("send-keys", "-t", session, "C-End")


def visit(session: str, move: Callable[[], None], line: str, look: bool, number: int) -> float | None:
    """One place: `move` there, (look,) Enter and the first characters of `line`, which land on
    line `number` (1-based); the ms from that write to the first suggestion on screen (None: none
    within WAIT_S)."""
    move()
    time.sleep(LOOK_S if look else 0.02)
    typed = line.strip()[:CHARS]
    before = editor_rows(screen(session))
    # what line `number` shows before the keys: while it still does, the keys are not drawn yet
    stale = next((c for c in (code_of(r[: SIZE[0] - EDGE], number) for r in before) if c is not None), None)
    seen = control().outputs
    sent = time.monotonic()
    type_at_once(session, typed)
    below: list[str] | None = None
    found = None
    while time.monotonic() - sent < WAIT_S:
        seen = control().wait_output(seen, WAIT_S - (time.monotonic() - sent))  # the app drew something
        rows = [r[: SIZE[0] - EDGE] for r in editor_rows(screen(session))]
        at = next((i for i, r in enumerate(rows) if code_of(r, number) is not None), None)
        code = code_of(rows[at], number) if at is not None else None
        if at is not None and code is not None and code != stale and code.strip().startswith(typed):
            if code.rstrip() != code[: code.find(typed) + len(typed)].rstrip():
                found = time.monotonic()  # text beyond what was typed on its line
                break
            now_below = [code_of(r) or "" for r in rows[at + 1: at + 4]]
            if below is None:
                below = now_below  # the typed line's echo: what follows it without a suggestion
            elif now_below != below:
                found = time.monotonic()  # a suggestion that starts on the next line
                break
    tmux("send-keys", "-t", session, "Escape")
    for _ in range(4):  # the typed text out again: one undo for the characters, one for the line
        time.sleep(0.15)
        if editor_rows(screen(session)) == before:
            break
        tmux("send-keys", "-t", session, "C-z")
    time.sleep(0.5)
    return None if found is None else (found - sent) * 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--spots", type=int, default=10, help="places each way (default 10)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jump", type=int, default=0, metavar="N",
                    help="time N jumps from the top to the end instead")
    # (the specterm beside this Python first: a venv's, when the venv is not on PATH)
    beside = Path(sys.executable).with_name("specterm")
    ap.add_argument("--specterm", default=shutil.which("specterm") or (str(beside) if beside.exists() else "specterm"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if shutil.which("tmux") is None:
        print("person_tmux: tmux is not installed.", file=sys.stderr)
        return 2
    if shutil.which(args.specterm) is None:
        print(f"person_tmux: {args.specterm!r} is not a program; name specterm with --specterm PATH.", file=sys.stderr)
        return 2
    text = args.file.read_text(encoding="utf-8")
    lines = text.split("\n")
    last = max((i for i, ln in enumerate(lines) if len(ln.strip()) >= CHARS), default=0)
    places = [last] if args.jump else pick_places(text, 2 * args.spots, args.seed)
    kept = [ln for i, ln in enumerate(lines) if i not in set(places)]
    folder = Path(tempfile.mkdtemp(prefix="specterm-person-"))
    copy = folder / args.file.name
    copy.write_text("\n".join(kept), encoding="utf-8")
    session = f"person{int(time.time())}"
    tmux("new-session", "-d", "-s", session, "-x", str(SIZE[0]), "-y", str(SIZE[1]),
         f"cd {folder} && {args.specterm} {copy.name}")
    times: dict[bool, list[float]] = {False: [], True: []}
    missed = {False: 0, True: 0}
    global _client
    try:
        _client = ControlClient(session)
        launched = time.monotonic()
        time.sleep(3)
        settle(session, quiet_s=3.0)  # the model loaded, the file's head read
        time.sleep(max(0.0, NOTICES_S - (time.monotonic() - launched)))  # the first notices gone
        visits = [(p, n % 2 == 1) for n, p in enumerate(places)] if not args.jump else [(last, False)] * args.jump
        for n, (place, look) in enumerate(visits):
            above = lines[place - 1]

            def move() -> None:  # (called in this iteration: `above` is this place's)
                if args.jump:
                    jump_to_end(session)
                else:
                    go_to(session, above)  # noqa: B023

            # the line the typed text lands on: below the last one, or below the line above in the
            # copy (the places above it taken out)
            number = len(kept) + 1 if args.jump else place - sum(p < place for p in places) + 1
            ms = visit(session, move, lines[place], look, number)
            if ms is None:
                missed[look] += 1
            else:
                times[look].append(ms)
            print(f"place {n + 1}/{len(visits)} line {place + 1}: "
                  f"{'none' if ms is None else f'{ms:.0f} ms'}{' (after a look)' if look else ''}",
                  file=sys.stderr)
    finally:
        if _client is not None:
            _client.close()
            _client = None
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
    report: dict[str, Any] = {
        "file": str(args.file),
        "person_ms": percentiles([t / 1000 for t in times[False]]), "person_count": len(times[False]),
        "person_missed": missed[False], "person_within_600ms": sum(t <= 600 for t in times[False]),
        "person_look_ms": percentiles([t / 1000 for t in times[True]]), "person_look_count": len(times[True]),
        "person_look_missed": missed[True],
    }
    print(f"move, type at once: p50 {report['person_ms']['p50']:.0f} ms, p95 {report['person_ms']['p95']:.0f} ms "
          f"({len(times[False])} places, {missed[False]} without a suggestion, "
          f"{report['person_within_600ms']} within 600 ms)")
    print(f"after a look:       p50 {report['person_look_ms']['p50']:.0f} ms, "
          f"p95 {report['person_look_ms']['p95']:.0f} ms ({len(times[True])} places, {missed[True]} without)")
    if args.json:
        report["raw_ms"] = [round(t) for t in times[False]]
        report["raw_look_ms"] = [round(t) for t in times[True]]
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
