"""`specterm edit FILE[:START-END] --instruction TEXT`: rewrite lines of a file as instructed.

For editor plugins and scripts. START and END are 1-based line numbers, both included (`FILE:N`
is the one line N); without them the whole file is the region. The model rewrites the region
(the engine's EditRequest: the same prompt and drafting as the app's edits), and the command
prints the change as a unified diff of the whole file, as `diff -u` prints it (hunk ranges are line
numbers in FILE, three lines of context, `\\ No newline at end of file` where it applies), with
`--- a/FILE` and `+++ b/FILE` headers. When the model changes nothing it prints nothing and says
so on stderr (exit 0). `--write` saves the result as the app saves (atomically, in the file's
encoding and newline style); `--stdin` reads the buffer from standard input (FILE only names
it); `--json` prints one object: text (the new region), diff, changed, file, start, end and the
`stats` of `complete --json`.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from specterm.engine.requests import EditRequest

from ..config import Settings
from ..textfile import FileLoadError, FileSaveError, TextFile
from .common import MAX_TEXT_BYTES, UsageError, read_stdin_text, result_json, run_async, run_one

NAME = "edit"
CONTEXT_LINES = 3


@dataclass(frozen=True)
class Target:
    file: Path
    start: int | None  # 1-based, inclusive; None: the whole file
    end: int | None


def parse_target(text: str) -> Target:
    """FILE, FILE:N or FILE:START-END (the range split from the right: FILE may hold colons)."""
    file, sep, lines = text.rpartition(":")
    m = re.fullmatch(r"(\d+)(?:-(\d+))?", lines) if sep else None
    if not sep or not file or m is None:
        if not text:
            raise argparse.ArgumentTypeError("expected FILE or FILE:START-END")
        return Target(Path(text), None, None)
    start = int(m.group(1))
    end = int(m.group(2)) if m.group(2) else start
    if start < 1 or end < start:
        raise argparse.ArgumentTypeError(
            f"lines are 1-based and START <= END in FILE:START-END, got {text!r}")
    return Target(Path(file), start, end)


def add_parser(subparsers: argparse._SubParsersAction,
               parents: list[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        NAME,
        parents=parents,
        help="rewrite lines of a file as instructed; prints a unified diff (for editor plugins)",
        description="Rewrite FILE (or its lines START to END, 1-based, inclusive) as the "
                    "instruction says and print the change as a unified diff of the whole file.",
    )
    p.add_argument("location", type=parse_target, metavar="FILE[:START-END]",
                   help="the file, and optionally the lines to rewrite (1-based, inclusive)")
    p.add_argument("--instruction", "-i", required=True, metavar="TEXT", help="what to change")
    p.add_argument("--write", action="store_true",
                   help="save the result to FILE (atomically, as the app saves)")
    p.add_argument("--stdin", action="store_true",
                   help="read the buffer from standard input; FILE only names it")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (text, diff, changed, stats) instead of the diff")
    return p


def project_dir(args: argparse.Namespace) -> Path:
    return args.location.file.absolute().parent


def split_lines(text: str) -> list[str]:
    """Lines with their "\\n" (the last one without, when the text does not end with one)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def unified_diff(old: str, new: str, name: str) -> str:
    """`old` -> `new` as `diff -u` prints it (3 lines of context, ranges in line numbers, the
    missing-newline marker), with `--- a/NAME` / `+++ b/NAME` headers; "" when they are equal.
    No junk heuristic: a file's many blank lines must not bend the hunks."""
    a, b = split_lines(old), split_lines(new)
    if a == b:
        return ""
    out = [f"--- a/{name}\n", f"+++ b/{name}\n"]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [_line(" ", ln) for ln in a[a1:a2]]
                continue
            out += [_line("-", ln) for ln in a[a1:a2]]
            out += [_line("+", ln) for ln in b[b1:b2]]
    return "".join(out)


def _range(lo: int, hi: int) -> str:
    """A hunk's range as diff -u writes it: START,COUNT; START alone for one line; an empty
    range starts at the line before it."""
    n = hi - lo
    if n == 1:
        return str(lo + 1)
    return f"{lo if n == 0 else lo + 1},{n}"


def _line(mark: str, line: str) -> str:
    return mark + line if line.endswith("\n") else f"{mark}{line}\n\\ No newline at end of file\n"


def read_buffer(args: argparse.Namespace) -> tuple[str, TextFile | None]:
    """The text to edit, and the file to write it back to (None with --stdin)."""
    if args.stdin:
        return read_stdin_text(), None
    path: Path = args.location.file
    try:
        if path.is_file() and path.stat().st_size > MAX_TEXT_BYTES:
            raise UsageError(f"{path}: too large; specterm reads text up to {MAX_TEXT_BYTES // 2**20} MiB.")
        f = TextFile.load(path)
    except FileLoadError as err:
        raise UsageError(f"{err} Give an existing text file, or pipe the buffer with --stdin.") from None
    return f.take_text(), f


def build_request(text: str, target: Target, instruction: str) -> tuple[EditRequest, int, int]:
    """The request for the target's lines of `text`, and the 1-based line range it covers."""
    if not instruction.strip():
        raise UsageError("--instruction is empty: say what to change.")
    lines = split_lines(text)
    start, end = (1, len(lines)) if target.start is None or target.end is None else (target.start, target.end)
    if target.start is not None and end > len(lines):
        raise UsageError(f"{target.file}:{start}-{end}: the file has {len(lines)} line(s); "
                         f"give lines between 1 and {len(lines)}.")
    req = EditRequest(instruction=instruction, region="".join(lines[start - 1:end]),
                      before="".join(lines[:start - 1]), after="".join(lines[end:]),
                      path=str(target.file))
    return req, start, end


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.write and args.stdin:
        raise UsageError("--write saves FILE, --stdin edits a buffer FILE only names: use one.")
    target: Target = args.location
    text, textfile = read_buffer(args)
    request, start, end = build_request(text, target, args.instruction)
    finished, info = run_async(run_one(settings, request))
    if finished.reason == "length":
        raise UsageError(f"{target.file}:{start}-{end}: the rewrite reached its token limit before "
                         "it ended; nothing was changed. Edit fewer lines at a time.")
    new = request.before + finished.text + request.after
    diff = unified_diff(text, new, str(target.file))
    if args.json:
        obj = json.loads(result_json(finished, info))
        obj.update(diff=diff, changed=bool(diff), file=str(target.file), start=start, end=end)
        print(json.dumps(obj, ensure_ascii=False), flush=True)
    elif diff:
        sys.stdout.write(diff)
        sys.stdout.flush()
    if not diff:
        sys.stderr.write(f"specterm: no change: the model left {target.file}:{start}-{end} as it was.\n")
    elif args.write and textfile is not None:
        try:
            textfile.save(new)
        except FileSaveError as err:  # it says which file and why (encoding, permission, a folder)
            raise UsageError(str(err)) from None
    return 0
