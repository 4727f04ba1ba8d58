"""`specterm pull NAME [--quant Q]`: get a curated target/draft pair ready to run, in one command.

Downloads both GGUFs from Hugging Face into its normal cache (resumable, progress bar on a terminal,
HF_HOME / HF_HUB_OFFLINE / HF_TOKEN honoured), verifies each is a GGUF llama.cpp can load, runs the
engine's pairing check, then writes `[model] target` and `draft` into the user config — showing the
diff and asking first, keeping the user's comments.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specterm.engine.errors import ModelLoadError
from specterm.engine.models.catalogue import ModelFile, Pair, load_catalogue

from ..config import Settings, user_config_path
from ..config_writer import plan_edit

NAME = "pull"
CHECK_MODEL_FILES = False  # a configured model file that is gone must not block this command


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        NAME,
        parents=parents,
        help="download a curated target/draft pair and configure specterm to use it",
        description="Download a target model and its same-family draft from Hugging Face (into the "
        "standard Hugging Face cache), check both load and share a tokenizer, and set them as "
        "[model] target and draft in your user config. `specterm models` lists the names.",
        epilog="Honours HF_HOME, HF_HUB_OFFLINE and HF_TOKEN (or `hf auth login`). Interrupted "
        "downloads resume when you run the same pull again.",
    )
    p.add_argument("name", metavar="NAME", help="a pair from `specterm models`, e.g. qwen2.5-coder-7b")
    p.add_argument("--quant", metavar="Q", help="quantization of the target (default: the catalogue's)")
    p.add_argument("-y", "--yes", action="store_true", help="write the config change without asking")
    p.add_argument("--no-config", action="store_true",
                   help="download and verify only; leave the config files alone")
    p.add_argument("--force-download", action="store_true",
                   help="download the files again even when they are in the cache")
    return p


def run(args: argparse.Namespace, settings: Settings) -> int:
    from specterm.engine.models import hub

    pair = load_catalogue().pair(args.name)
    target_file = pair.target.file(args.quant)
    draft_file = pair.draft.file()
    out = sys.stdout
    out.write(
        f"{pair.slug}: {pair.target.name} {target_file.quant} ({_size(target_file.size_bytes)}) "
        f"with draft {pair.draft.name} {draft_file.quant} ({_size(draft_file.size_bytes)}); "
        f"context up to {pair.context} tokens.\n"
    )
    paths: dict[str, Path] = {}
    for role, mf in (("target", target_file), ("draft", draft_file)):
        paths[role] = _fetch(hub, role, mf, force=args.force_download)
        _verify(hub, role, mf, paths[role], pair)
        out.write(f"  {role}: {mf.file} verified (a GGUF llama.cpp loads).\n")
    out.flush()
    hub.check_pair_files(paths["target"], paths["draft"])  # PairingError: the engine's message
    out.write("  pairing check: the draft's tokens mean the same text to the target.\n")

    if args.no_config:
        out.write("Config left unchanged (--no-config).\n")
        return 0
    return _update_config(args, settings, pair, target_file, draft_file, paths)


def _fetch(hub, role: str, mf: ModelFile, *, force: bool) -> Path:
    """The cached file when there is one; otherwise download (resuming a partial download)."""
    if not force:
        cached = hub.cached_path(mf)
        if cached is not None:
            sys.stdout.write(f"  {role}: {mf.file} is already in the cache.\n")
            return cached
    sys.stdout.write(f"  {role}: downloading {mf.file} from {mf.repo} ({_size(mf.size_bytes)})...\n")
    sys.stdout.flush()
    return hub.download(mf, force=force)


def _verify(hub, role: str, mf: ModelFile, path: Path, pair: Pair) -> None:
    try:
        hub.verify_gguf(path, what=role)
    except ModelLoadError as err:
        raise ModelLoadError(
            f"The downloaded {role} {mf.file} ({mf.repo}) failed verification: {err.message}",
            hint=f"Download it again: specterm pull {pair.slug} --force-download",
        ) from None


def _config_target(settings: Settings) -> Path:
    """Where the pair is written: the --config file when one was given, else the user file."""
    for source in settings.sources:
        if source.kind == "--config" and source.path is not None:
            return source.path
    return user_config_path()


def _update_config(args, settings: Settings, pair: Pair, target_file: ModelFile,
                   draft_file: ModelFile, paths: dict[str, Path]) -> int:
    path = _config_target(settings)
    edit = plan_edit(
        path,
        {"model": {"target": str(paths["target"]), "draft": str(paths["draft"])}},
        comment=f"set by `specterm pull {pair.slug}`: {target_file.file} with {draft_file.file}",
    )
    out = sys.stdout
    if not edit.changed:
        out.write(f"{path} already uses this pair.\n")
        _warn_shadowed(settings, path)
        return 0
    out.write(f"\nProposed change to {path}:\n{edit.diff()}\n")
    if not args.yes:
        if not sys.stdin.isatty():
            out.write(f"Not written: standard input is not a terminal. Run again with --yes to write "
                      f"{path}.\n")
            return 0
        if not _confirm(f"Write this change to {path}? [y/N] "):
            out.write("Not written.\n")
            return 0
    edit.write()
    out.write(f"Wrote {path}. `specterm doctor` checks the pair on this machine.\n")
    _warn_shadowed(settings, path)
    return 0


def _confirm(question: str) -> bool:
    sys.stdout.write(question)
    sys.stdout.flush()
    try:
        answer = sys.stdin.readline()
    except (EOFError, OSError):
        return False
    return answer.strip().lower() in ("y", "yes")


def _warn_shadowed(settings: Settings, written: Path) -> None:
    """A project file or a flag that sets the target still wins over the file just written."""
    for key in ("model.target", "model.draft"):
        origin = settings.origin(key)
        if origin not in (str(written), "built-in defaults") and Path(origin) != written:
            sys.stderr.write(f"specterm: note: {key} is also set in {origin}, which overrides "
                             f"{written}.\n")


def _size(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"

