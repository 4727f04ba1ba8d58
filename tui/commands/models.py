"""`specterm models [TARGET]`: what can I run, what do I have, and which drafts fit my target?

Without TARGET: the curated pairs (`specterm pull NAME`), what of each is already in the Hugging
Face cache, and an estimate of the memory each pair needs at the configured context. With TARGET
(a GGUF path, or a pulled pair's name): every downloaded GGUF, checked with the engine's pairing
check as a draft for that target — the way LM Studio filters its draft-model list.

Memory figures come from `engine/llamacpp/memory.py`, the arithmetic `specterm doctor` uses: weights (file
size) plus both models' KV cache at the configured context and KV type.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from specterm.engine.errors import EngineError
from specterm.engine.models.catalogue import Catalogue, CatalogueModel, ModelFile, Pair, load_catalogue

from ..config import Settings, is_demo_target
from .common import TtyProgress, UsageError

NAME = "models"
CHECK_MODEL_FILES = False  # a configured model file that is gone must not block this command


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        NAME,
        parents=parents,
        help="list curated pairs, what is downloaded, and compatible drafts for a target",
        description="Without TARGET: the curated target/draft pairs `specterm pull` knows, which "
        "files are already in the Hugging Face cache, and the memory each pair needs here. With "
        "TARGET (a GGUF path or a pair name): which downloaded GGUFs can draft for it.",
    )
    # dest differs from the global --target flag's, which sets [model] target
    p.add_argument("for_target", nargs="?", metavar="TARGET",
                   help="a GGUF file, or a pulled pair's name: list the compatible drafts for it; "
                   "or `derive TARGET --type Q4_0 [-o PATH]`: write a low-bit copy of TARGET as its draft")
    p.add_argument("derive_target", nargs="?", metavar="DERIVE_TARGET", help=argparse.SUPPRESS)
    p.add_argument("--type", dest="derive_type", metavar="TYPE", default=None,
                   help="derive: the copy's type, e.g. Q4_0 (default), Q2_K, Q8_0")
    p.add_argument("-o", "--output", metavar="PATH", default=None,
                   help="derive: where to write the copy (default: next to the target, or "
                   "~/.cache/specterm/derived for the demo and downloaded files)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    return p


DERIVE_WORD = "derive"


def run(args: argparse.Namespace, settings: Settings) -> int:
    catalogue = load_catalogue()
    if args.for_target == DERIVE_WORD:
        return run_derive(args, catalogue)
    if args.derive_target or args.derive_type or args.output:
        raise UsageError("models: --type and -o belong to `specterm models derive TARGET --type Q4_0 [-o PATH]`.")
    if args.for_target:
        data = drafts_for(resolve_target(args.for_target, catalogue), settings)
        if args.json:
            _print_json(data)
        else:
            _print_drafts(data)
        return 0
    data = catalogue_listing(catalogue, settings)
    if args.json:
        _print_json(data)
    else:
        _print_catalogue(data)
    return 0


# --- the catalogue listing ----------------------------------------------------------------------
def _file_state(mf: ModelFile) -> dict[str, Any]:
    from specterm.engine.models import hub

    path = hub.cached_path(mf)
    return {
        "repo": mf.repo,
        "file": mf.file,
        "quant": mf.quant,
        "size_bytes": path.stat().st_size if path else mf.size_bytes,
        "downloaded": path is not None,
        "path": str(path) if path else None,
    }


def _pick_quant(model: CatalogueModel) -> ModelFile:
    """The downloaded quantization when there is one, else the default."""
    from specterm.engine.models import hub

    for mf in model.quants.values():
        if hub.cached_path(mf) is not None:
            return mf
    return model.file()


def _kv_bytes(model: CatalogueModel, ctx: int, kv_type: str) -> int:
    from specterm.engine.llamacpp.memory import kv_cache_bytes

    return kv_cache_bytes(n_layer=model.layers, ctx=min(ctx, model.context), n_head_kv=model.kv_heads,
                          key_length=model.head_dim, value_length=model.head_dim, kv_type=kv_type)


def machine() -> dict[str, Any]:
    """What memory estimates are compared with: GPU offload support and physical RAM."""
    from specterm.engine.llamacpp.memory import system_ram
    from specterm.engine.llamacpp.model import gpu_offload_supported

    ram = system_ram()  # the same figure doctor compares with
    return {"gpu_offload": gpu_offload_supported(), "ram_bytes": ram}


def _fits(total: int, where: dict[str, Any]) -> str:
    """'yes' / 'tight' / 'no' against RAM on a CPU build; 'gpu' (VRAM not measured) otherwise."""
    if where["gpu_offload"]:
        return "gpu"
    ram = where["ram_bytes"]
    if not ram:
        return "?"
    if total > ram:
        return "no"
    return "tight" if total > 0.8 * ram else "yes"


def catalogue_listing(catalogue: Catalogue, settings: Settings) -> dict[str, Any]:
    ctx, kv_type = settings.model.ctx, settings.model.kv_type
    where = machine()
    pairs = []
    listed_paths: set[str] = set()
    for pair in catalogue.pairs:
        target, draft = _file_state(_pick_quant(pair.target)), _file_state(_pick_quant(pair.draft))
        others = [q for q, mf in pair.target.quants.items() if q != target["quant"]]
        weights = target["size_bytes"] + draft["size_bytes"]
        kv = _kv_bytes(pair.target, ctx, kv_type) + _kv_bytes(pair.draft, ctx, kv_type)
        for f in (target, draft):
            if f["path"]:
                listed_paths.add(os.path.realpath(f["path"]))
        pairs.append({
            "name": pair.slug,
            # low-bit copies of the downloaded target (`specterm models derive`): drafts too
            "derived_drafts": derived_copies(Path(target["path"])) if target["path"] else [],
            "target": {"name": pair.target.name, **target},
            "draft": {"name": pair.draft.name, **draft},
            "other_quants": others,
            "context": pair.context,
            "memory": {"weights_bytes": weights, "kv_cache_bytes": kv, "total_bytes": weights + kv,
                       "fits": _fits(weights + kv, where)},
        })
    from specterm.engine.models import hub

    other = [
        {"repo": g.repo, "file": g.file, "path": str(g.path), "size_bytes": g.size_bytes}
        for g in hub.cached_ggufs()
        if os.path.realpath(g.path) not in listed_paths
    ]
    return {"ctx": ctx, "kv_type": kv_type, "machine": where, "hub_cache": str(hub.hub_cache_dir()),
            "pairs": pairs, "other_cached": other}


def derived_copies(target: Path) -> list[str]:
    """Copies of `target` in fewer bits (same tensors): next to it, or in the derive cache."""
    from specterm.engine.llamacpp.derive import cache_dir, is_derived_pair, read_gguf_summary

    mine = read_gguf_summary(target)
    found = []
    for folder in dict.fromkeys((target.parent, cache_dir())):
        for path in sorted(folder.glob("*.gguf")) if folder.is_dir() else []:
            if os.path.realpath(path) == os.path.realpath(target):
                continue
            if path.stat().st_size < target.stat().st_size and is_derived_pair(target, path):
                found.append(str(path))
    return found if mine.tensors else []


def _print_catalogue(data: dict[str, Any]) -> None:
    out = sys.stdout
    out.write("Curated pairs (`specterm pull NAME [--quant Q]`):\n\n")
    rows = [("NAME", "TARGET", "DRAFT", "CONTEXT", "DOWNLOADED", f"MEMORY@{data['ctx']}", "FITS")]
    for p in data["pairs"]:
        t, d = p["target"], p["draft"]
        have = [role for role, f in (("target", t), ("draft", d)) if f["downloaded"]]
        rows.append((
            p["name"],
            f"{t['quant']} {_size(t['size_bytes'])}",
            f"{d['name'].split('-Instruct')[0].split('-instruct')[0]} {d['quant']} {_size(d['size_bytes'])}",
            str(p["context"]),
            " + ".join(have) if have else "-",
            _size(p["memory"]["total_bytes"]),
            p["memory"]["fits"],
        ))
    _table(rows)
    m = data["machine"]
    ram = f"{m['ram_bytes'] / 1024**3:.1f} GiB RAM" if m["ram_bytes"] else "RAM unknown"
    where = ("this llama.cpp build can offload to a GPU (GPU memory is not measured: check the "
             "figure against your card)" if m["gpu_offload"] else "this llama.cpp build runs on the CPU")
    out.write(f"\nMemory: weights plus both KV caches at ctx {data['ctx']} ({data['kv_type']}); "
              f"{where}; {ram}.\n")
    out.write(f"Hugging Face cache: {data['hub_cache']}\n")
    derived = [(p["name"], d) for p in data["pairs"] for d in p["derived_drafts"]]
    if derived:
        out.write("\nDerived drafts (low-bit copies of a downloaded target):\n")
        for name, path in derived:
            out.write(f"  {name}: {path}\n")
    out.write("\nAny target can draft for itself: `specterm models derive TARGET --type Q4_0` writes a "
              "low-bit copy with the same vocabulary.\n")
    if data["other_cached"]:
        out.write("\nOther GGUFs in the cache (`specterm models PATH` lists drafts for one):\n")
        for g in data["other_cached"]:
            out.write(f"  {g['repo']}/{g['file']}  {_size(g['size_bytes'])}\n")


# --- derive: a low-bit copy of the target as its draft --------------------------------------------
def run_derive(args: argparse.Namespace, catalogue: Catalogue) -> int:
    from specterm.engine.llamacpp.derive import derive, normalise_type

    if not args.derive_target:
        raise UsageError("models derive: name the target: `specterm models derive TARGET --type Q4_0 [-o PATH]`.")
    kind = normalise_type(args.derive_type or "q4_0")  # before resolving: a typo fails at once
    target = resolve_target(args.derive_target, catalogue)
    progress = TtyProgress()
    try:
        out = derive(target, kind, args.output, on_progress=progress)
    finally:
        progress.clear()
    data: dict[str, Any] = {"target": str(target), "draft": str(out), "type": kind.upper(),
                            "size_bytes": out.stat().st_size, "target_size_bytes": target.stat().st_size}
    if args.json:
        _print_json(data)
    else:
        sys.stdout.write(f"Wrote {out} ({_size(data['size_bytes'])}), a {kind.upper()} copy of {target} "
                         f"({_size(data['target_size_bytes'])}): same vocabulary by construction.\n"
                         f"Use it with --draft {out}, or set [model] draft.\n")
    return 0


# --- compatible drafts for one target -----------------------------------------------------------
def resolve_target(name: str, catalogue: Catalogue) -> Path:
    """A GGUF path as given, "demo", or the downloaded target file of a catalogue pair."""
    if is_demo_target(name):
        from specterm.engine.llamacpp.demo import demo_model_path

        return Path(demo_model_path())
    path = Path(name).expanduser()
    if path.is_file() or name.endswith(".gguf") or os.sep in name:
        if not path.is_file():
            raise EngineError(f"The target file {name} does not exist.",
                              hint="Give a GGUF file path or a pair name from `specterm models`.")
        return path.absolute()
    from specterm.engine.models import hub

    pair: Pair = catalogue.pair(name)  # CatalogueError lists the nearest names
    for mf in pair.target.quants.values():
        found = hub.cached_path(mf)
        if found is not None:
            return found
    raise EngineError(f"{pair.slug} is not downloaded yet.",
                      hint=f"Download it with `specterm pull {pair.slug}`, or give a GGUF path.")


@dataclass(frozen=True)
class _Candidate:
    path: Path
    label: str  # repo/file for cached files, the path otherwise
    size_bytes: int


def _candidates(target: Path, settings: Settings) -> list[_Candidate]:
    """Downloaded GGUFs: the Hugging Face cache, the target's own folder, the configured draft."""
    from specterm.engine.models import hub

    seen = {os.path.realpath(target)}
    found: list[_Candidate] = []

    def add(path: Path, label: str) -> None:
        real = os.path.realpath(path)
        if real in seen or not path.is_file():
            return
        seen.add(real)
        found.append(_Candidate(path=path, label=label, size_bytes=path.stat().st_size))

    for g in hub.cached_ggufs():
        add(g.path, f"{g.repo}/{g.file}")
    for path in sorted(target.parent.glob("*.gguf")):
        add(path, str(path))
    from specterm.engine.llamacpp.derive import cache_dir

    for path in sorted(cache_dir().glob("*.gguf")):  # copies `derive` wrote for the demo or the hub cache
        add(path, str(path))
    draft = settings.draft.path
    if draft is not None:
        add(Path(draft), draft)
    return found


def drafts_for(target: Path, settings: Settings) -> dict[str, Any]:
    from specterm.engine.llamacpp.derive import is_derived_pair
    from specterm.engine.llamacpp.report import build_report
    from specterm.engine.settings import DraftSettings

    base = settings.engine_settings()
    target_settings = replace(base.target, path=str(target), demo=False)  # build_report tells the demo's file
    rows = []
    for cand in _candidates(target, settings):
        draft_model = replace(target_settings, path=str(cand.path),
                              gpu_layers=settings.draft.gpu_layers)
        report = build_report(replace(base, target=target_settings,
                                      draft=DraftSettings(kind="model", model=draft_model)))
        reason = None
        if report.vocab_compatible is not True:
            reason = report.problems[0].splitlines()[0] if report.problems else "not checked"
        rows.append({
            "path": str(cand.path),
            "label": cand.label,
            "size_bytes": cand.size_bytes,
            "compatible": report.vocab_compatible is True,
            "smaller_than_target": cand.size_bytes < target.stat().st_size,
            # a copy of the target itself in fewer bits (`specterm models derive`)
            "derived_from_target": is_derived_pair(target, cand.path),
            "reason": reason,
            "memory_total_bytes": report.memory.total_bytes if report.memory else None,
        })
    rows.sort(key=lambda r: (not r["compatible"], not r["smaller_than_target"], r["size_bytes"]))
    return {"target": str(target), "target_size_bytes": target.stat().st_size,
            "ctx": settings.model.ctx, "drafts": rows}


def _print_drafts(data: dict[str, Any]) -> None:
    out = sys.stdout
    out.write(f"Drafts for {data['target']} ({_size(data['target_size_bytes'])}):\n\n")
    usable = [r for r in data["drafts"] if r["compatible"]]
    if not data["drafts"]:
        out.write("No other GGUF files are downloaded. `specterm models` lists pairs to pull; "
                  f"`specterm models derive {data['target']} --type Q4_0` writes a draft from the target itself.\n")
        return
    rows = [("", "DRAFT", "SIZE", f"PAIR MEMORY@{data['ctx']}", "NOTE")]
    for r in data["drafts"]:
        mark = "ok" if r["compatible"] else "no"
        note = r["reason"] or ("" if r["smaller_than_target"] else "not smaller than the target")
        if r["derived_from_target"] and not note:
            note = "derived copy of the target"
        mem = _size(r["memory_total_bytes"]) if r["memory_total_bytes"] else "-"
        rows.append((mark, r["label"], _size(r["size_bytes"]), mem, note))
    _table(rows)
    if usable:
        best = next((r for r in usable if r["smaller_than_target"]), usable[0])
        out.write(f"\nUse one with --draft PATH, or set [model] draft; e.g.\n  --draft {best['path']}\n")
    else:
        out.write("\nNone of the downloaded GGUFs shares this target's tokenizer; "
                  "--draft lookup needs no draft model.\n")


# --- output helpers -----------------------------------------------------------------------------
def _table(rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        sys.stdout.write("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def _print_json(data: dict[str, Any]) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")
