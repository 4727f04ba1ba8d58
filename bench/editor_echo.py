"""Keystroke echo in a large file: the real app, headless (Textual's run_test/Pilot), opens FILE,
types at several spots spread through it and reports keystroke-to-paint latency (p50/p95: from the
key event until the screen update that drew the edited line has ended) and RSS growth (opening the
file, then typing).

    .venv/bin/python bench/editor_echo.py FILE [--keys N] [--make-mb 5] [--no-completions] [--cold] [--json]

`--make-mb M` first writes FILE from the standard library's .py files concatenated (about M MB):
the 5 MB test input is generated, never committed. The app loads its model (the demo pair unless
configured) before anything is measured; completions run as in the app, after each pause at a spot
(`--no-completions` turns them off).

Memory is FILE's: by default the app first edits a small file (FILE's first 60 KB, with
completions), as a session in use would have, so that what the first use of the model costs
whatever the file (its KV cache pages touched, token healing's index, the session memory's first
table) is not counted as FILE's; `--cold` opens FILE first thing, and the warm-up's own growth is
reported (`warm_up_growth_mb`). The growth is also given as private memory alone (RssAnon; the
rest is pages of mapped files, above all the model's weights).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from statistics import median

from textual import events

from specterm.tui.app import SpectermApp
from specterm.tui.config import load_settings

WORD = "value_1 "  # typed at each spot, one key at a time
WARM_UP_CHARS = 60_000  # the small file edited first (the start of FILE)


def make_input(path: Path, megabytes: float) -> None:
    """Concatenate stdlib .py files (sorted, so the file is the same each time) up to the size."""
    limit = int(megabytes * 1024 * 1024)
    parts, size = [], 0
    for src in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        try:
            text = src.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(text if text.endswith("\n") else text + "\n")
        size += len(text)
        if size >= limit:
            break
    path.write_text("".join(parts)[:limit], encoding="utf-8")


def rss_mb(kind: str = "VmRSS") -> float:
    """Resident memory in MB: all of it (VmRSS), or its private part (RssAnon: the heap, numpy
    arrays, llama.cpp's buffers) or its file-backed part (RssFile: pages of mapped files, above
    all the model's weights as decoding first reads them; shared page cache, not the editor's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(kind + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


def start_profiler():
    from pyinstrument import Profiler  # optional: pip install pyinstrument

    profiler = Profiler(async_mode="disabled")
    profiler.start()
    return profiler


def stop_profiler(profiler, what: str) -> None:
    profiler.stop()
    print(f"--- profile: {what}", file=sys.stderr)
    print(profiler.output_text(unicode=False, color=False, show_all=False), file=sys.stderr)


async def type_at_spots(app, pilot, editor, keys: int, interval_s: float,
                        pause_s: float) -> list[float]:
    """Type WORD at spots spread through the editor's file, one key at a time as the terminal
    driver sends them; the keystroke-to-paint latency of each key (ms)."""
    painted: list[float] = []
    real_render = editor.render_line

    def render_line(y: int):  # record when the editor draws a line
        painted.append(time.perf_counter())
        return real_render(y)

    editor.render_line = render_line
    lines = editor.document.line_count
    spots = max(1, keys // len(WORD))
    latencies: list[float] = []
    driver = app._driver
    for s in range(spots):
        row = int((s + 0.5) * lines / spots)
        editor.move_cursor((row, len(editor.document[row])))
        await pilot.pause(0.1)
        for ch in WORD:
            before = editor.document[row]
            painted.clear()
            key = "space" if ch == " " else ch
            t0 = time.perf_counter()
            driver.send_message(events.Key(key, ch))
            while True:  # the edit applied and its line drawn
                await asyncio.sleep(0)
                if editor.document[row] != before and painted:
                    break
                if time.perf_counter() - t0 > 30:
                    raise SystemExit("a keystroke took more than 30 s")
            latencies.append((time.perf_counter() - t0) * 1000)  # the paint has ended
            await asyncio.sleep(max(0.0, interval_s - (time.perf_counter() - t0)))
        await pilot.pause(pause_s)
    editor.render_line = real_render
    return latencies


async def measure(path: Path, keys: int, interval_s: float, pause_s: float, engine: bool,
                  profile: bool = False, warm: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as home:
        env = {"HOME": home, "XDG_CONFIG_HOME": str(Path(home) / ".config")}
        overrides = {} if engine else {"completion.auto": False}
        settings = load_settings(project_dir=path.parent, overrides=overrides, env=env)
        app = SpectermApp(settings, path.parent, environ=env, watch=False)
        async with app.run_test(size=(120, 40)) as pilot:
            while not app.engine_ready.is_set():  # the app loads its model either way
                await pilot.pause(0.1)
            rss_cold = rss_mb()
            if warm:  # a session in use: a small file edited (with completions) before the big one
                small = Path(home) / "warm_up.py"
                with path.open(encoding="utf-8", errors="replace") as f:
                    small.write_text(f.read(WARM_UP_CHARS), encoding="utf-8")
                first = await app.open_file(small)
                assert first is not None
                await pilot.pause(0.5)
                await type_at_spots(app, pilot, first, keys, interval_s, pause_s)
            rss_before_open = rss_mb()
            anon_before_open = rss_mb("RssAnon")
            profiler = start_profiler() if profile else None
            t = time.perf_counter()
            editor = await app.open_file(path)
            assert editor is not None
            await pilot.pause(0.5)
            open_s = time.perf_counter() - t
            rss_open = rss_mb()
            anon_open = rss_mb("RssAnon")
            if profiler is not None:
                stop_profiler(profiler, "opening")
                profiler = start_profiler()
            lines = editor.document.line_count
            latencies = await type_at_spots(app, pilot, editor, keys, interval_s, pause_s)
            rss_end = rss_mb()
            anon_end = rss_mb("RssAnon")
            if profiler is not None:
                stop_profiler(profiler, "typing")
    size = path.stat().st_size / 1024 / 1024
    return {
        "file": str(path),
        "file_mb": round(size, 2),
        "lines": lines,
        "keys": len(latencies),
        "completions": engine,
        "open_s": round(open_s, 2),
        "echo_ms": {"p50": round(median(latencies), 1), "p95": round(pct(latencies, 0.95), 1),
                    "max": round(max(latencies), 1)},
        "rss_mb": {"before_open": round(rss_before_open, 1), "after_open": round(rss_open, 1),
                   "after_typing": round(rss_end, 1)},
        "rss_growth_open_mb": round(rss_open - rss_before_open, 1),
        "rss_growth_typing_mb": round(rss_end - rss_open, 1),
        "rss_growth_over_file_size": round((rss_end - rss_before_open) / size, 2) if size else None,
        "anon_growth_open_mb": round(anon_open - anon_before_open, 1),
        "anon_growth_typing_mb": round(anon_end - anon_open, 1),
        "warm": warm,
        "warm_up_growth_mb": round(rss_before_open - rss_cold, 1),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file", type=Path)
    p.add_argument("--keys", type=int, default=80, help="keys typed in all (default 80)")
    p.add_argument("--make-mb", type=float, help="first write FILE from stdlib .py files, this many MB")
    p.add_argument("--interval-ms", type=float, default=60, help="time between keys (default 60)")
    p.add_argument("--pause-ms", type=float, default=600, help="pause after each spot (default 600)")
    p.add_argument("--no-completions", action="store_true", help="[completion] auto off")
    p.add_argument("--cold", action="store_true",
                   help="open FILE first thing (by default a small file is edited first, so that "
                        "what any first use of the model costs is not counted as FILE's)")
    p.add_argument("--profile", action="store_true", help="pyinstrument profiles on stderr")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    path = args.file.absolute()
    if args.make_mb:
        make_input(path, args.make_mb)
    if not path.is_file():
        print(f"{path}: no such file (--make-mb 5 writes one)", file=sys.stderr)
        return 2
    data = asyncio.run(measure(path, args.keys, args.interval_ms / 1000, args.pause_ms / 1000,
                               not args.no_completions, args.profile, not args.cold))
    if args.json:
        print(json.dumps(data))
    else:
        e, r = data["echo_ms"], data["rss_mb"]
        print(f"{data['file']}: {data['file_mb']} MB, {data['lines']} lines, {data['keys']} keys, "
              f"completions {'on' if data['completions'] else 'off'}, opened in {data['open_s']} s")
        print(f"keystroke to paint: p50 {e['p50']} ms, p95 {e['p95']} ms, max {e['max']} ms")
        print(f"RSS: {r['before_open']} MB before opening, {r['after_open']} MB open "
              f"(+{data['rss_growth_open_mb']}), {r['after_typing']} MB after typing "
              f"(+{data['rss_growth_typing_mb']}); growth / file size {data['rss_growth_over_file_size']}")
        print(f"private memory (RssAnon): +{data['anon_growth_open_mb']} MB opening, "
              f"+{data['anon_growth_typing_mb']} MB typing; "
              + (f"after a warm-up on a small file (+{data['warm_up_growth_mb']} MB)" if data["warm"]
                 else "cold (FILE opened first thing)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
