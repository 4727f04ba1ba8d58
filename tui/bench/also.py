"""`specterm bench --also DRAFTER,...`: the same tasks with other drafters, side by side in one run.

Each drafter runs every task against its own interleaved plain runs (the bench's usual A B / B A
pairs), on the same loaded target, one drafter after the other, so load drift during the run
touches each speedup's plain and speculative side alike; the report then sets each task's
speedup beside the main drafter's (session drafter vs prompt lookup, hybrid vs a draft model).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from specterm.engine.settings import DraftSettings

from ..commands.common import UsageError
from ..config import parse_draft


def parse_also(text: str) -> list[str]:
    """`lookup,session,PATH` -> the names; `none` is not a drafter to compare."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("give one or more drafters: lookup, session or a GGUF path")
    for item in items:
        if item == "none":
            raise argparse.ArgumentTypeError("'none' is the plain side of every comparison already")
    return items


def draft_settings(item: str, engine_settings) -> DraftSettings:
    """The DraftSettings for one --also item (a path is a draft model with the target's settings)."""
    base = engine_settings.draft
    choice = parse_draft(item, DraftSettings(session_mb=base.session_mb), engine_settings.target)
    if choice.kind in ("lookup", "session"):
        return choice
    path = Path(item).expanduser()
    if choice.model is None or not path.is_file():
        raise UsageError(f"--also: {item} is neither lookup, session nor a GGUF file.")
    return replace(choice, model=replace(choice.model, path=str(path)))


def run_also(engine, engine_settings, items: list[str], tasks, make_bench) -> list[dict]:
    """Run the tasks with each extra drafter; returns one report dict per drafter. The engine
    gets its own drafter back afterwards."""
    own = engine_settings.draft
    out = []
    try:
        for item in items:
            engine.use_drafter(draft_settings(item, engine_settings))
            data = make_bench().run(tasks).to_dict()
            out.append({"draft": data["draft"], "draft_kind": data["draft_kind"], "tasks": data["tasks"],
                        "summary": data["summary"]})
    finally:
        engine.use_drafter(own)
    return out


def write_also(main: dict, also: list[dict], out: TextIO) -> None:
    """Per task: the main drafter's speedup, each other drafter's, and its ratio to the main."""
    names = [a["draft"] for a in also]
    out.write(f"\nside by side (each against its own plain runs; ratio = drafter / {main['draft']}):\n")
    head = f"{'task':<26} {main['draft'][:14]:>14}" + "".join(f" {n[:14]:>14} {'ratio':>6}" for n in names)
    out.write(head + "\n")
    by_name = [{t["name"]: t for t in a["tasks"]} for a in also]
    for t in main["tasks"]:
        row = f"{t['name'][:26]:<26} {_x(t['speedup']):>14}"
        for tasks in by_name:
            other = tasks.get(t["name"], {}).get("speedup")
            ratio = other / t["speedup"] if other and t["speedup"] else None
            row += f" {_x(other):>14} {('%.2f' % ratio) if ratio else '-':>6}"
        out.write(row + "\n")
    row = f"{'geometric mean':<26} {_x(main['summary']['speedup']):>14}"
    for a in also:
        g, m = a["summary"]["speedup"], main["summary"]["speedup"]
        row += f" {_x(g):>14} {('%.2f' % (g / m)) if g and m else '-':>6}"
    out.write(row + "\n")


def _x(v: float | None) -> str:
    return f"{v:.2f}x" if v else "-"
