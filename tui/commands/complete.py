"""`specterm complete FILE:LINE:COL`: fill-in-the-middle at a cursor, for editor plugins.

LINE and COL are 1-based; COL counts characters (not bytes) and may be one past the end of the
line. The file is read from disk, or with `--stdin` from standard input (the editor's unsaved
buffer), in which case FILE only names it. The completion is printed exactly as the model produced
it, after the completion rules every backend applies (engine/completion.py: line cap, block end,
suffix repeat, trailing blanks), with no added newline unless stdout is a terminal. A completion
the time budget cut before any text prints nothing (exit 0) and says so on stderr.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from specterm.engine.requests import CompletionRequest

from ..config import Settings
from .common import (
    UsageError,
    add_json_flag,
    read_stdin_text,
    read_user_text,
    result_json,
    run_async,
    run_one,
    write_text,
)

NAME = "complete"


@dataclass(frozen=True)
class Location:
    file: Path
    line: int  # 1-based
    col: int  # 1-based, in characters


def parse_location(text: str) -> Location:
    """FILE:LINE:COL; FILE may itself contain colons (split from the right)."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise argparse.ArgumentTypeError(f"expected FILE:LINE:COL, got {text!r}")
    file, line, col = parts
    try:
        line_no, col_no = int(line), int(col)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"LINE and COL must be whole numbers in FILE:LINE:COL, got {text!r}"
        ) from None
    if line_no < 1 or col_no < 1:
        raise argparse.ArgumentTypeError(f"LINE and COL are 1-based (at least 1), got {text!r}")
    return Location(Path(file), line_no, col_no)


def add_parser(subparsers: argparse._SubParsersAction,
               parents: list[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        NAME,
        parents=parents,
        help="fill-in-the-middle completion at FILE:LINE:COL (for editor plugins)",
        description="Complete the code at a cursor. LINE and COL are 1-based; COL counts characters.",
    )
    p.add_argument("location", type=parse_location, metavar="FILE:LINE:COL",
                   help="the file and the cursor in it (1-based line and character column)")
    p.add_argument("--stdin", action="store_true",
                   help="read the buffer from standard input; FILE only names it")
    add_json_flag(p)
    return p


def project_dir(args: argparse.Namespace) -> Path:
    return args.location.file.absolute().parent


def split_at_cursor(text: str, line: int, col: int, name: str) -> tuple[str, str]:
    """Prefix and suffix around a 1-based (line, character column) cursor."""
    lines = text.split("\n")
    if line > len(lines):
        raise UsageError(
            f"{name}:{line}:{col}: line {line} is past the end of the buffer ({len(lines)} lines)."
        )
    current = lines[line - 1]
    width = len(current.rstrip("\r"))
    if col > width + 1:
        raise UsageError(
            f"{name}:{line}:{col}: column {col} is past the end of line {line} "
            f"({width} characters; the last cursor position is column {width + 1})."
        )
    offset = sum(len(ln) + 1 for ln in lines[: line - 1]) + (col - 1)
    return text[:offset], text[offset:]


def read_buffer(loc: Location, from_stdin: bool) -> str:
    if from_stdin:
        return read_stdin_text()
    return read_user_text(loc.file, str(loc.file),
                          " Give an existing file, or pipe the buffer with --stdin.")


def build_request(settings: Settings, loc: Location, text: str) -> CompletionRequest:
    prefix, suffix = split_at_cursor(text, loc.line, loc.col, str(loc.file))
    c = settings.completion
    return CompletionRequest(
        prefix=prefix,
        suffix=suffix,
        path=str(loc.file),
        max_tokens=c.max_tokens,
        multiline=c.multiline,
        max_lines=c.max_lines,
        time_budget_s=c.time_budget_s,
        predict_budget_s=c.predict_budget_s,
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    loc: Location = args.location
    request = build_request(settings, loc, read_buffer(loc, args.stdin))
    finished, info = run_async(run_one(settings, request))
    if finished.reason == "time" and not finished.text:
        budget = settings.completion.time_budget_ms
        sys.stderr.write(
            f"specterm: no completion: the {budget} ms time budget ([completion] time_budget_ms) ran out "
            "before the first token (a cold server may still be reading the prompt); try again or raise it.\n"
        )
    if args.json:
        print(result_json(finished, info), flush=True)
    else:
        write_text(finished.text)
    return 0
