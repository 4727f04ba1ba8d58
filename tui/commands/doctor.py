"""`specterm doctor`: which config files were read, and can the configured pair work here?

It prints the target and drafter (files, architectures, sizes), whether their vocabularies agree,
FIM and chat-template support, GPU offload (build support and layers per model) and a memory
estimate, then warnings and problems. Exit 0 when the pair can work, 2 when it cannot. Model files
are checked here rather than by the config loader, so a missing file is reported together with the
list of config files that named it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TextIO

from specterm.engine.llamacpp.report import ModelReport, PairReport, build_report

from ..cli import version_string
from ..config import BUILTIN_LABEL, ConfigError, Settings, check_model_files, set_in, user_config_path
from .common import TtyProgress, add_json_flag

NAME = "doctor"
CHECK_MODEL_FILES = False  # doctor reports missing model files itself, after the config files


def add_parser(subparsers: argparse._SubParsersAction,
               parents: list[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        NAME,
        parents=parents,
        help="check the configured model pair and show which config files were read",
        description="Check the configured target and drafter without loading their weights.",
    )
    add_json_flag(p)
    return p


def run(args: argparse.Namespace, settings: Settings) -> int:
    if settings.engine.backend == "openai":
        return run_remote(args, settings)
    config_problem: str | None = None
    try:
        check_model_files(settings)
    except ConfigError as err:
        config_problem = str(err)

    report: PairReport | None = None
    if config_problem is None:
        progress = TtyProgress()
        progress("reading model headers")
        try:
            report = build_report(settings.engine_settings(), demo=settings.demo)
        finally:
            progress.clear()

    ok = config_problem is None and report is not None and report.ok
    if args.json:
        obj = {
            "version": version_string(),
            "config_files": [
                {"kind": s.kind, "path": str(s.path) if s.path else None, "read": s.found}
                for s in settings.sources
            ],
            "demo": settings.demo,
            "backend": settings.engine.backend,
            "ok": ok,
            "config_problem": config_problem,
            "report": report.to_dict() if report else None,
        }
        print(json.dumps(obj, indent=2))
    else:
        print_doctor(settings, report, config_problem, sys.stdout)
    return 0 if ok else 2


# -- text output ---------------------------------------------------------------------------------


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def _params(n: int) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.1f}B"
    if n >= 1e6:
        return f"{n / 1e6:.0f}M"
    return str(n)


def _layers(m: ModelReport, gpu: bool) -> str:
    requested = "all" if m.gpu_layers_requested < 0 else str(m.gpu_layers_requested)
    why = "" if gpu else " (this llama.cpp build is CPU-only)"
    return f"{m.gpu_layers_offloaded} of {m.layers_total} offloaded (requested: {requested}){why}"


def _from(origin: str) -> str:
    """Where a model path came from; nothing for a built-in default nobody set."""
    return "" if origin == BUILTIN_LABEL else f"from {origin}"


def _model_block(out: TextIO, title: str, m: ModelReport, gpu: bool, origin: str) -> None:
    out.write(f"{title:<14}{m.file_name}\n")
    source = "; ".join(part for part in (_size(m.file_bytes), _from(origin)) if part)
    out.write(f"  {'file':<12}{m.path}  ({source})\n")
    out.write(
        f"  {'model':<12}{m.name} · {m.arch} · {_params(m.n_params)} parameters · {m.n_layer} layers"
        f" · trained context {m.n_ctx_train}\n"
    )
    out.write(f"  {'vocabulary':<12}{m.vocab_type}, {m.vocab_size} tokens\n")
    out.write(f"  {'FIM':<12}{'yes' if m.fim else 'no (completion uses the text before the cursor only)'}\n")
    out.write(f"  {'chat':<12}{'chat template in the file' if m.chat_template else 'no chat template'}\n")
    out.write(f"  {'GPU':<12}{_layers(m, gpu)}\n")
    out.write(f"  {'KV cache':<12}{_size(m.kv_cache_bytes)}\n")


def _speculation(settings: Settings, report: PairReport) -> str:
    if report.draft_kind == "none":
        return "off (draft = \"none\")"
    sp = settings.speculative
    how = "adaptive length (stops drafting when it does not pay)" if sp.adaptive else "fixed length"
    line = f"up to {sp.draft_max} draft tokens per target pass, {how}"
    if report.draft_kind == "model":
        line += f"; draft stops below p = {sp.p_min}"
        if settings.draft.hybrid:
            line += ("; hybrid: the session memory's free guess beside the model, the better guess each "
                     "pass (share by drafter in --json stats and the stats screen)")
    t = settings.sampling.temperature
    return line + (f"; sampling at temperature {t}" if t > 0 else "; greedy")


def _bullet(text: str) -> str:
    """A list item; continuation lines (an error's hint) line up under its first word."""
    return "  - " + "\n    ".join(text.splitlines()) + "\n"


def print_doctor(settings: Settings, report: PairReport | None, config_problem: str | None, out: TextIO) -> None:
    out.write(f"{version_string()}\n\nConfiguration (later files win)\n")
    for config in settings.sources:
        out.write(f"  {config.describe()}\n")
    out.write(f"  backend   {settings.engine.backend}\n\n")

    if config_problem is not None:
        out.write(f"Problem\n{_bullet(config_problem)}\nThe pair cannot work: fix the setting above.\n")
        return
    assert report is not None
    if report.target is not None:
        title = "Target (demo)" if report.demo else "Target"
        _model_block(out, title, report.target, report.gpu_offload_supported, settings.origin("model.target"))
    if report.draft is not None:
        _model_block(out, "Draft", report.draft, report.gpu_offload_supported, settings.origin("model.draft"))
    elif report.draft_kind == "model" and settings.draft.path:  # named, but not usable
        path = settings.draft.path
        source = _from(settings.origin("model.draft"))
        out.write(f"{'Draft':<14}{Path(path).name}\n")
        out.write(f"  {'file':<12}{path}" + (f"  ({source})" if source else "") + "\n")
        problem = (report.draft_problem or "it could not be read (see Problems)").splitlines()[0]
        out.write(f"  {'problem':<12}{problem}\n")
    elif report.draft_kind == "session":
        out.write(f"{'Draft':<14}session memory (n-grams from the prompt, the output, files opened and "
                  "earlier answers; no model)\n")
    elif report.draft_kind == "lookup":
        out.write(f"{'Draft':<14}prompt lookup (n-grams from the prompt and the output; no model)\n")
    else:
        out.write(f"{'Draft':<14}none (plain decoding, no speculation)\n")
    if report.draft_kind == "session" or (report.draft is not None and settings.draft.hybrid):
        store = settings.draft.session_store
        kept = (f"kept between runs in {store}{set_in(settings.origin('draft.session_store'))}" if store
                else "kept in memory only ([draft] session_store = PATH keeps it between runs)")
        # the session drafter's own Draft line above says what it is; beside a model it needs a line
        label, what = ("", "") if report.draft_kind == "session" else ("Session", "memory beside the draft model: ")
        out.write(f"{label:<14}{what}{settings.draft.session_mb} MB cap, {kept}\n")

    if report.vocab_compatible is True and report.derived_draft:
        vocab = ("compatible: the draft is a derived copy of the target (the same model in fewer "
                 "bits, `specterm models derive`), so the same vocabulary by construction")
    elif report.vocab_compatible is True:
        vocab = "compatible (draft tokens mean the same text to the target)"
    elif report.vocab_compatible is False:
        vocab = "INCOMPATIBLE (see problems)"
    elif report.draft_problem is not None:
        vocab = "not checked (the draft file could not be read)"
    else:
        vocab = "not applicable (no draft model)"
    out.write(f"{'Vocabularies':<14}{vocab}\n")
    out.write(f"{'Speculation':<14}{_speculation(settings, report)}\n")
    gpu = (
        "this llama.cpp build can offload to a GPU"
        if report.gpu_offload_supported
        else "not available: this llama.cpp build is CPU-only"
    )
    out.write(f"{'GPU offload':<14}{gpu}\n")
    if report.memory is not None:
        mem = report.memory
        ram = f" of {_size(mem.system_ram_bytes)} RAM" if mem.system_ram_bytes else ""
        out.write(
            f"{'Memory':<14}about {_size(mem.total_bytes)} at ctx {report.ctx}, KV {report.kv_type}: "
            f"weights {_size(mem.weights_bytes)} + KV cache {_size(mem.kv_cache_bytes)}\n"
            f"{'':<14}GPU {_size(mem.gpu_bytes)}, host {_size(mem.host_bytes)}{ram} "
            "(plus llama.cpp's compute buffers)\n"
        )

    if report.demo:
        out.write(
            "\nThis is the built-in DEMO model (SmolLM2-135M-Instruct): tiny, for trying specterm "
            "out, not for real work.\nThe quickest way to a real pair: `specterm pull "
            "qwen2.5-coder-7b` downloads one and configures it (`specterm models` lists others).\n"
            "Or, with GGUFs you already have, put this in "
            f"{user_config_path()} (or .specterm.toml in a project):\n"
            "    [model]\n"
            '    target = "~/models/qwen2.5-coder-7b-instruct-q4_k_m.gguf"\n'
            '    draft = "~/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"\n'
            "or pass --target PATH --draft PATH. The README lists recommended pairs.\n"
        )
    if report.warnings:
        out.write("\nWarnings\n")
        for w in report.warnings:
            out.write(_bullet(w))
    if report.problems:
        out.write("\nProblems\n")
        for p in report.problems:
            out.write(_bullet(p))
        out.write("\nThe pair cannot work: fix the problems above.\n")
    else:
        out.write("\nOK: the pair can work.\n")


def run_remote(args: argparse.Namespace, settings: Settings) -> int:
    """[engine] backend = "openai": check the server (engine/remote/doctor.py), not model files."""
    from specterm.engine.remote.doctor import check_remote

    from ..engine_factory import make_remote_engine

    progress = TtyProgress()
    progress(f"contacting {settings.engine.url or '(no url)'}")
    try:
        report = asyncio.run(check_remote(settings.remote_settings(), lambda: make_remote_engine(settings)))
    finally:
        progress.clear()
    if args.json:
        sources = [{"kind": s.kind, "path": str(s.path) if s.path else None, "read": s.found} for s in settings.sources]
        obj = {"version": version_string(), "config_files": sources, "backend": "openai", "ok": report.ok,
               "remote": report.to_dict()}
        print(json.dumps(obj, indent=2))
    else:
        out = sys.stdout
        out.write(f"{version_string()}\n\nConfiguration (later files win)\n")
        for config in settings.sources:
            out.write(f"  {config.describe()}\n")
        source = _from(settings.origin("engine.url"))
        out.write("  backend   openai" + (f" (url {source})" if source else "") + "\n\n")
        report.write(out)
    return 0 if report.ok else 2
