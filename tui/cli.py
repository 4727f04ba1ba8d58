"""specterm's command line: `specterm [PATH]` opens the TUI; subcommands run headless.

Every command takes the same global flags (model pair, sampling, context); they are the last and
strongest configuration layer (see tui/config.py). Subcommands are modules in `tui/commands/` (the
bench's is `tui/bench/command.py`) with `add_parser(subparsers, parents)` and
`run(args, settings) -> int`; register a new one by adding it to `COMMAND_MODULES`.

Exit codes: 0 success; 2 bad usage, bad configuration, an unusable model or an unreachable backend
(a message on stderr, never a traceback); 130 on ctrl+c.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import threading
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn, Sequence

from specterm.engine.errors import EngineError, end_sentence

from .commands.common import UsageError
from .config import ConfigError, Settings, load_settings

EXIT_OK = 0
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130

# Headless subcommands, in the order `specterm --help` lists them. One module each.
COMMAND_MODULES = [
    "specterm.tui.commands.complete",
    "specterm.tui.commands.edit",
    "specterm.tui.commands.generate",
    "specterm.tui.commands.doctor",
    "specterm.tui.commands.pull", "specterm.tui.commands.models",
    "specterm.tui.bench.command",
]
OPEN_COMMAND = "open"  # the TUI; `specterm [PATH]` means `specterm open [PATH]`

# Global flag (argparse dest) -> the config keys it sets.
FLAG_KEYS: dict[str, tuple[str, ...]] = {
    "target": ("model.target",),
    "draft": ("model.draft",),
    "hybrid": ("draft.hybrid",),
    "gpu_layers": ("model.gpu_layers",),
    "draft_gpu_layers": ("model.draft_gpu_layers",),
    "ctx": ("model.ctx",),
    "draft_max": ("speculative.draft_max",),
    "adaptive": ("speculative.adaptive",),
    "tree": ("speculative.tree",),
    "temperature": ("sampling.temperature",),
    "seed": ("sampling.seed",),
    "max_tokens": ("completion.max_tokens", "chat.max_tokens", "generate.max_tokens"),
    "backend": ("engine.backend",),
    "url": ("engine.url",),
}


def version_string() -> str:
    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    return f"specterm {version('specterm')} (llama-cpp-python {version('llama-cpp-python')})"


def _on_off(text: str) -> bool:
    value = {"on": True, "off": False}.get(text.lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")
    return value


def global_flags() -> argparse.ArgumentParser:
    """Flags every command accepts. Defaults are SUPPRESSed so an absent flag sets nothing and the
    configuration files decide (and so a subcommand's parser never overwrites a value given before
    the command name)."""
    p = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    g = p.add_argument_group("configuration (every command)")
    g.add_argument("--config", metavar="FILE", help="read this config file after the user and project files")
    g.add_argument("--target", metavar="PATH", help='target GGUF file, or "demo" for the built-in demo model')
    g.add_argument("--draft", metavar="PATH|session|lookup|none",
                   help="draft GGUF of the same family, session memory lookup (default), prompt lookup, "
                   "or no drafting")
    g.add_argument("--hybrid", action=argparse.BooleanOptionalAction,
                   help="with a draft GGUF: also draft from the session's memory, the better guess each pass "
                   "(default: on, [draft] hybrid; --no-hybrid: the model alone)")
    g.add_argument("--gpu-layers", type=int, metavar="N", help="target layers to offload to the GPU (-1: all)")
    g.add_argument("--draft-gpu-layers", type=int, metavar="N", help="draft layers to offload (-1: all)")
    g.add_argument("--draft-max", type=int, metavar="N", help="largest draft the target verifies in one pass")
    g.add_argument("--adaptive", action=argparse.BooleanOptionalAction,
                   help="adapt the draft length to measured acceptance and cost")
    g.add_argument("--tree", type=_on_off, metavar="on|off",
                   help="draft trees: verify a free drafter's other continuations beside its draft where "
                   "that pays (default: on, [speculative] tree); off: linear drafts only")
    g.add_argument("--temperature", type=float, metavar="T", help="0 is greedy; above 0 samples")
    g.add_argument("--seed", type=int, metavar="N", help="sampling seed")
    g.add_argument("--ctx", type=int, metavar="N", help="context window in tokens")
    g.add_argument("--max-tokens", type=int, metavar="N", help="most tokens to generate")
    g.add_argument("--backend", choices=("local", "openai"),
                   help="local llama.cpp, or an OpenAI-compatible server (llama-server, vLLM) at --url")
    g.add_argument("--url", metavar="URL", help="the server's base URL for --backend openai, e.g. http://127.0.0.1:8080")
    g.add_argument("--verbose", action="store_true", help="show llama.cpp's own log on stderr")
    g.add_argument("--version", action="version", version=version_string())
    return p


def command_modules() -> list[ModuleType]:
    return [importlib.import_module(name) for name in COMMAND_MODULES]


class OneLineParser(argparse.ArgumentParser):
    """Bad usage is one line on stderr and exit 2 (the usage block is in --help), like every other
    error a script may have to read."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser(modules: Sequence[ModuleType]) -> argparse.ArgumentParser:
    flags = global_flags()
    parser: argparse.ArgumentParser = OneLineParser(
        prog="specterm",
        parents=[flags],
        description="A terminal coding assistant for local GGUF models with speculative decoding.",
        epilog="`specterm [PATH]` opens the app on PATH (default: the current folder). "
        "`specterm COMMAND --help` shows a command's own flags. `specterm doctor` shows which "
        "config files were read.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    tui = sub.add_parser(
        OPEN_COMMAND, parents=[flags], help="open the app on a folder or file (the default command)",
        description="Open specterm's terminal app: file tree, editor with inline completions, chat.",
    )
    tui.add_argument("path", nargs="?", default=".", help="folder or file to open (default: .)")
    for module in modules:
        module.add_parser(sub, [flags])
    return parser


class _ScanFailed(Exception):
    pass


class _Scanner(argparse.ArgumentParser):
    """Finds the command word without printing anything; the real parser reports errors."""

    def error(self, message: str) -> NoReturn:
        raise _ScanFailed(message)


def _insert_default_command(argv: list[str], names: set[str]) -> list[str]:
    """`specterm [flags] [PATH]` -> `specterm open [flags] [PATH]`, unless a command is named.

    The first word that is not a flag (nor a flag's value) decides; help and version flags alone
    are left to the top-level parser.
    """
    scanner = _Scanner(add_help=False, parents=[global_flags()], argument_default=argparse.SUPPRESS)
    scanner.add_argument("words", nargs="*")
    try:
        known, _ = scanner.parse_known_args([a for a in argv if a not in ("-h", "--help", "--version")])
    except _ScanFailed:  # e.g. `--ctx big`: the real parser reports it, with the right usage line
        return argv if any(a in names for a in argv) else [OPEN_COMMAND, *argv]
    words = getattr(known, "words", [])
    if words and words[0] in names:
        return argv
    if not words and any(a in ("-h", "--help", "--version") for a in argv):
        return argv
    return [OPEN_COMMAND, *argv]


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dest, keys in FLAG_KEYS.items():
        if hasattr(args, dest):
            for key in keys:
                out[key] = getattr(args, dest)
    return out


def project_dir(args: argparse.Namespace, module: ModuleType | None) -> Path:
    """The folder whose `.specterm.toml` applies: the opened path, or the command's own choice."""
    if module is None:
        return Path(args.path)
    chooser = getattr(module, "project_dir", None)
    return Path(chooser(args)) if chooser else Path.cwd()


def _run(argv: list[str]) -> int:
    modules = command_modules()
    by_name = {m.NAME: m for m in modules}
    parser = build_parser(modules)
    args = parser.parse_args(_insert_default_command(argv, {OPEN_COMMAND, *by_name}))
    if args.command is None:  # e.g. only flags that exit on their own were given
        parser.print_help()
        return EXIT_OK
    module = by_name.get(args.command)

    def load() -> Settings:
        """All layers again, with the same flags (the app calls this when a config file changes)."""
        return load_settings(
            project_dir=project_dir(args, module),
            config_file=getattr(args, "config", None),
            overrides=overrides_from_args(args),
            verbose=getattr(args, "verbose", False),
            check_files=getattr(module, "CHECK_MODEL_FILES", True),
        )

    settings = load()
    if module is None:
        from .app import run_app  # imported here: headless commands never load Textual

        return run_app(settings, Path(args.path), reload_settings=load) or EXIT_OK
    return module.run(args, settings)


def _interrupted() -> int:
    """ctrl+c: no traceback; exit 130 even if a worker thread is stuck inside llama.cpp."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass
    sys.stderr.write("\nspecterm: interrupted\n")
    sys.stderr.flush()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        os._exit(EXIT_INTERRUPTED)
    return EXIT_INTERRUPTED


def one_line(message: str) -> str:
    """A user-facing message (what went wrong, then what to do) as the one line a script reads; a
    line that a new sentence follows ends with a full stop, so the two do not run together."""
    parts = [part.strip() for part in message.splitlines() if part.strip()]
    return " ".join(end_sentence(part) if nxt[:1].isupper() else part
                    for part, nxt in zip(parts, [*parts[1:], ""]))


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(argv)
    except KeyboardInterrupt:
        return _interrupted()
    except (ConfigError, EngineError, UsageError) as err:
        sys.stderr.write(f"specterm: {one_line(str(err))}\n")
        return EXIT_ERROR
    except BrokenPipeError:
        # The reader went away (`specterm generate | head -1`): not an error of ours. Point stdout
        # at /dev/null so the interpreter's final flush does not complain either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
