"""`specterm generate`: plain continuation of a prompt (no chat template, no FIM).

The prompt comes from `--prompt TEXT`, `--prompt-file F` or standard input. Text streams to stdout
as it is generated; with `--json` one object is printed at the end instead. On a terminal a line of
statistics follows on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specterm.engine.requests import GenerateRequest

from ..config import Settings
from .common import (
    UsageError,
    add_json_flag,
    isatty,
    read_stdin_text,
    read_user_text,
    result_json,
    run_async,
    run_one,
    stats_line,
)

NAME = "generate"


def add_parser(subparsers: argparse._SubParsersAction,
               parents: list[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        NAME,
        parents=parents,
        help="continue a prompt (from --prompt, --prompt-file or stdin)",
        description="Continue a prompt with the configured pair; the text streams to stdout.",
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument("--prompt", metavar="TEXT", help="the prompt text")
    source.add_argument("--prompt-file", metavar="FILE", type=Path, help="read the prompt from FILE")
    p.add_argument("--stop", metavar="TEXT", action="append", default=[],
                   help="stop when this text is generated (repeatable)")
    add_json_flag(p)
    return p


def read_prompt(args: argparse.Namespace) -> str:
    if args.prompt is not None:
        return args.prompt
    if args.prompt_file is not None:
        return read_user_text(args.prompt_file, f"--prompt-file {args.prompt_file}")
    if isatty(sys.stdin):
        raise UsageError(
            "generate needs a prompt: give --prompt TEXT or --prompt-file FILE, or pipe it on stdin."
        )
    return read_stdin_text()


def run(args: argparse.Namespace, settings: Settings) -> int:
    prompt = read_prompt(args)
    if not prompt:
        raise UsageError("The prompt is empty: give --prompt TEXT, --prompt-file FILE or text on stdin.")
    request = GenerateRequest(prompt=prompt, max_tokens=settings.generate.max_tokens, stop=tuple(args.stop))

    def stream(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    finished, info = run_async(run_one(settings, request, on_text=None if args.json else stream))
    if args.json:
        print(result_json(finished, info), flush=True)
        return 0
    if isatty(sys.stdout) and not finished.text.endswith("\n"):
        sys.stdout.write("\n")
        sys.stdout.flush()
    if isatty(sys.stderr):
        sys.stderr.write(stats_line(finished) + "\n")
    return 0
