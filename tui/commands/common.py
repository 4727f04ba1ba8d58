"""What the headless commands share: building the engine, running one request, progress and output.

Progress goes to stderr and only when stderr is a terminal, so piped output (editor plugins,
scripts) is exactly the generated text or one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, Callable, TextIO

from specterm.engine.errors import EngineError
from specterm.engine.requests import EngineInfo, Finished, Request, TextDelta

from ..config import Settings
from ..engine_factory import make_engine
from ..textfile import FileLoadError, read_text


class UsageError(Exception):
    """Bad input to a command (a cursor past the end of a file, no prompt): exit 2, no traceback."""


class TtyProgress:
    """A one-line status on stderr (`loading target ... 50%`), erased when done; silent when piped."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = isatty(self.stream)
        self._shown = False

    def __call__(self, message: str, fraction: float | None = None) -> None:
        if not self.enabled:
            return
        pct = f" {fraction:4.0%}" if fraction is not None else ""
        self.stream.write(f"\r\x1b[2K{message}{pct}")
        self.stream.flush()
        self._shown = True

    def clear(self) -> None:
        if self.enabled and self._shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._shown = False


MAX_TEXT_BYTES = 16 * 1024 * 1024  # a buffer or prompt larger than this is not source code


def _too_large(size: int, label: str) -> UsageError:
    return UsageError(f"{label}: {size / 2**20:.0f} MiB is too large; specterm reads text up to "
                      f"{MAX_TEXT_BYTES // 2**20} MiB.")


def _decode(raw: bytes, label: str) -> str:
    """Text as the app's editor reads it (tui/textfile.py: UTF-8, UTF-8 with BOM or Latin-1, any
    newline style as "\n"), so a file the app edits is one the commands read too."""
    if len(raw) > MAX_TEXT_BYTES:
        raise _too_large(len(raw), label)
    try:
        return read_text(raw, label)[0]
    except FileLoadError as err:
        raise UsageError(str(err)) from None


def read_user_text(path: Path, label: str, hint: str = "") -> str:
    """A text file named on the command line, or a UsageError that says what is wrong.
    `label` names it in messages (the path, or the flag and the path)."""
    try:
        if path.is_file() and path.stat().st_size > MAX_TEXT_BYTES:
            raise _too_large(path.stat().st_size, label)
        return _decode(path.read_bytes(), label)
    except FileNotFoundError:
        raise UsageError(f"{label}: no such file.{hint}") from None
    except IsADirectoryError:
        raise UsageError(f"{label}: is a folder, not a file.") from None
    except OSError as err:
        raise UsageError(f"{label}: cannot read it ({err.strerror or err}).") from None


def read_stdin_text(label: str = "standard input") -> str:
    """Standard input as text, read like a file (an editor pipes its buffer in the file's encoding);
    a binary pipe is a UsageError."""
    return _decode(sys.stdin.buffer.read(MAX_TEXT_BYTES + 1), label)


def isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


async def run_one(
    settings: Settings,
    request: Request,
    *,
    on_text: Callable[[str], None] | None = None,
) -> tuple[Finished, EngineInfo]:
    """Start an engine, run one request to its end, close the engine.

    A `Finished` with reason "error" becomes an EngineError (exit 2). Cancellation (ctrl+c) runs
    the `finally`, so the engine's worker stops before the process exits.
    """
    progress = TtyProgress()
    engine = make_engine(settings, on_progress=progress)
    try:
        try:
            await engine.start()
        finally:
            progress.clear()
        finished: Finished | None = None
        async for event in engine.stream(request):
            if isinstance(event, TextDelta):
                if on_text is not None:
                    on_text(event.text)
            elif isinstance(event, Finished):
                finished = event
        if finished is None:  # the protocol promises a Finished; say so plainly if it broke
            raise EngineError("The engine ended the request without a result.")
        if finished.reason == "error":
            raise EngineError(finished.error or "Generation failed.")
        return finished, engine.info
    finally:
        await engine.close()


def run_async(coro: Any) -> Any:
    return asyncio.run(coro)


def result_json(finished: Finished, info: EngineInfo) -> str:
    """The `--json` object of complete and generate: text, models, why it stopped, statistics."""
    obj = {
        "text": finished.text,
        "target": info.target_name,
        "draft": info.draft_name,
        "draft_kind": info.draft_kind,
        "demo": info.demo,
        "finish_reason": finished.reason,
        "stats": finished.stats.to_dict(),
    }
    return json.dumps(obj, ensure_ascii=False)


def stats_line(finished: Finished) -> str:
    """One human line for a terminal: tokens, speed, acceptance (or why there is none)."""
    s = finished.stats
    parts = [f"{s.tokens} tokens"]
    if s.tokens_per_second is not None:
        parts.append(f"{s.tokens_per_second:.1f} tok/s")
    if s.acceptance is not None:
        parts.append(f"acceptance {s.acceptance:.0%} ({s.accepted}/{s.drafted})")
    else:
        parts.append("nothing drafted")
    if s.tokens_per_pass is not None:
        parts.append(f"{s.tokens_per_pass:.2f} tokens/pass")
    parts.append(f"stop: {finished.reason}")
    return "[" + ", ".join(parts) + "]"


def write_text(text: str, stream: TextIO | None = None) -> None:
    """Write generated text exactly; on a terminal end with a newline so the prompt stays tidy."""
    stream = stream or sys.stdout
    stream.write(text)
    if isatty(stream) and not text.endswith("\n"):
        stream.write("\n")
    stream.flush()


def add_json_flag(parser: Any) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (text, target, draft, stats) instead of text")
