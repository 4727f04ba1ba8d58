"""Derived drafts: a low-bit copy of the target, written by llama.cpp's own quantizer.

A copy of the target in fewer bits per weight has the target's vocabulary by construction and agrees
with it on most tokens, so it is a draft for any target with no second download (QSpec, QuantSpec and
ML-SpecQD report 1.6-2.5x from such self-drafts where verification is memory-bound). The same call
writes the bench's memory-bound proxy: an F32 copy of a small target, whose weights no longer fit in
the CPU caches, so verifying k tokens costs about what one token costs, as on a GPU.

What is checked before llama.cpp runs, each with a sentence the user can act on: the file is a GGUF,
a draft's type is smaller than the target's, the output folder exists and is writable, and the disk
has room for the copy. The header is read here (no tensor data, no llama.cpp), which also gives the
expected size of the copy for progress: the quantizer writes tensor by tensor, so the growing output
file tells how far it is.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

from ..errors import ModelLoadError
from .model import QUANT_TYPES, check_gguf_file, quantize

# Nominal bits per weight of each llama.cpp file type (llama_ftype values as GGUF's general.file_type
# stores them): what "smaller" means for a draft, and the size estimate of a copy.
FILE_TYPE_BITS: dict[int, tuple[str, float]] = {
    0: ("f32", 32.0), 1: ("f16", 16.0), 32: ("bf16", 16.0), 7: ("q8_0", 8.5), 18: ("q6_k", 6.56),
    9: ("q5_1", 6.0), 17: ("q5_k_m", 5.69), 16: ("q5_k_s", 5.54), 8: ("q5_0", 5.5), 3: ("q4_1", 5.0),
    15: ("q4_k_m", 4.89), 14: ("q4_k_s", 4.58), 2: ("q4_0", 4.5), 13: ("q3_k_l", 4.27),
    12: ("q3_k_m", 3.91), 11: ("q3_k_s", 3.5), 10: ("q2_k", 2.96),
    25: ("iq4_nl", 4.5), 30: ("iq4_xs", 4.25), 26: ("iq3_s", 3.44), 27: ("iq3_m", 3.66),
    22: ("iq3_xs", 3.3), 23: ("iq3_xxs", 3.06), 29: ("iq2_m", 2.7), 28: ("iq2_s", 2.5),
    20: ("iq2_xs", 2.31), 19: ("iq2_xxs", 2.06), 21: ("q2_k_s", 2.63), 31: ("iq1_m", 1.75),
    24: ("iq1_s", 1.56),
}
BITS_BY_NAME = {name: bits for name, bits in FILE_TYPE_BITS.values()}
DERIVE_TYPES = tuple(QUANT_TYPES)  # what `specterm models derive --type` accepts

ProgressFn = Callable[[str, float | None], None]


class DeriveError(ModelLoadError):
    """A derived copy that cannot be written (bad type, not smaller, no room, unwritable folder)."""


# -- the GGUF header ------------------------------------------------------------------------------
@dataclass(frozen=True)
class GgufSummary:
    """What derive needs from a GGUF header: its type, and the tensors' shapes (a copy of the same
    model in another type has the same names and shapes)."""

    path: Path
    architecture: str | None
    name: str | None
    file_type: int | None  # general.file_type (a llama_ftype); None when the file does not say
    tensors: tuple[tuple[str, tuple[int, ...]], ...]

    @property
    def n_params(self) -> int:
        total = 0
        for _, dims in self.tensors:
            n = 1
            for d in dims:
                n *= d
            total += n
        return total

    @property
    def type_name(self) -> str:
        if self.file_type in FILE_TYPE_BITS:
            return FILE_TYPE_BITS[self.file_type][0]
        return "unknown"

    @property
    def bits_per_weight(self) -> float:
        """The type's nominal figure, else the file's own (size over parameters)."""
        if self.file_type in FILE_TYPE_BITS:
            return FILE_TYPE_BITS[self.file_type][1]
        return self.path.stat().st_size * 8 / max(self.n_params, 1)

    def shape_key(self) -> str:
        """Equal for copies of one model in different types (names and shapes of every tensor)."""
        text = ";".join(f"{n}:{'x'.join(map(str, d))}" for n, d in sorted(self.tensors))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q",
            12: "<d"}


def _read(fh: BinaryIO, fmt: str):
    size = struct.calcsize(fmt)
    data = fh.read(size)
    if len(data) != size:
        raise EOFError
    return struct.unpack(fmt, data)[0]


def _read_str(fh: BinaryIO) -> str:
    n = _read(fh, "<Q")
    if n > 1 << 24:
        raise ValueError("string too long")
    data = fh.read(n)
    if len(data) != n:
        raise EOFError
    return data.decode("utf-8", errors="replace")


def _read_value(fh: BinaryIO, vtype: int):
    if vtype == 8:
        return _read_str(fh)
    if vtype == 9:
        item_type, count = _read(fh, "<I"), _read(fh, "<Q")
        if item_type in _SCALARS:  # numbers: skip in one seek (token scores, types)
            fh.seek(struct.calcsize(_SCALARS[item_type]) * count, os.SEEK_CUR)
            return None
        for _ in range(count):
            _read_value(fh, item_type)
        return None
    if vtype in _SCALARS:
        return _read(fh, _SCALARS[vtype])
    raise ValueError(f"unknown GGUF value type {vtype}")


def read_gguf_summary(path: str | Path, *, what: str = "model") -> GgufSummary:
    """The header of a GGUF file; ModelLoadError for a missing, non-GGUF or damaged file."""
    check_gguf_file(str(path), what=what)
    p = Path(path)
    meta: dict[str, object] = {}
    tensors: list[tuple[str, tuple[int, ...]]] = []
    try:
        with p.open("rb") as fh:
            fh.seek(8)
            n_tensors, n_kv = _read(fh, "<Q"), _read(fh, "<Q")
            for _ in range(n_kv):
                key = _read_str(fh)
                meta[key] = _read_value(fh, _read(fh, "<I"))
            for _ in range(n_tensors):
                name = _read_str(fh)
                dims = tuple(_read(fh, "<Q") for _ in range(_read(fh, "<I")))
                _read(fh, "<I")  # tensor type
                _read(fh, "<Q")  # offset
                tensors.append((name, dims))
    except (EOFError, ValueError, struct.error):
        raise ModelLoadError(f"The {what} file {path} has a damaged GGUF header.",
                             hint="Download the file again; it is corrupt or truncated.") from None
    ft = meta.get("general.file_type")
    arch, model_name = meta.get("general.architecture"), meta.get("general.name")
    return GgufSummary(p, arch if isinstance(arch, str) else None, model_name if isinstance(model_name, str) else None,
                       ft if isinstance(ft, int) else None, tuple(tensors))


def is_derived_pair(target: str | Path, draft: str | Path) -> bool:
    """True when both files hold the same model (tensor names and shapes) in different types."""
    try:
        a, b = read_gguf_summary(target), read_gguf_summary(draft, what="draft")
    except ModelLoadError:
        return False
    return a.shape_key() == b.shape_key() and a.file_type != b.file_type


# -- writing a copy -------------------------------------------------------------------------------
def normalise_type(kind: str) -> str:
    """`Q4_0` -> `q4_0`; DeriveError listing the choices for an unknown one."""
    k = kind.strip().lower()
    if k not in QUANT_TYPES:
        raise DeriveError(f"Unknown type {kind!r} for a derived copy.",
                          hint=f"Choose one of {', '.join(t.upper() for t in DERIVE_TYPES)} "
                          "(Q4_0 is a good draft for most targets).")
    return k


def expected_bytes(summary: GgufSummary, kind: str) -> int:
    """About how large the copy will be: matrices at the new type, vectors (norms) kept in F32."""
    bits = BITS_BY_NAME[kind]
    total = 0.0
    for _, dims in summary.tensors:
        n = 1
        for d in dims:
            n *= d
        total += n * (bits / 8 if len(dims) >= 2 else 4)
    header = summary.path.stat().st_size - summary.n_params * summary.bits_per_weight / 8
    return int(total + max(header, 0))


def cache_dir() -> Path:
    """Where derived copies made on the user's behalf live (`specterm bench --regime`, `derive` of the
    demo or of a file inside the Hugging Face cache): $XDG_CACHE_HOME/specterm/derived."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "specterm" / "derived"


def default_output(target: str | Path, kind: str) -> Path:
    """`<stem>.derived-<TYPE>.gguf` next to the target, or in cache_dir() when the target's folder is
    not ours to write in (a package, the Hugging Face cache) or not writable."""
    t = Path(target)
    name = f"{t.stem}.derived-{kind.upper()}.gguf"
    folder = t.parent
    parts = Path(os.path.abspath(t)).parts
    in_hub_cache = "snapshots" in parts and any(p.startswith("models--") for p in parts)
    if in_hub_cache or "site-packages" in parts or not os.access(folder, os.W_OK):
        folder = cache_dir()
    return folder / name


def cached_copy_path(target: str | Path, kind: str) -> Path:
    """A copy in cache_dir() keyed by the target's path, size and time, so an edited target gets
    a new copy instead of a stale one."""
    t = Path(target).resolve()
    st = t.stat()
    key = hashlib.sha256(f"{t}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:10]
    return cache_dir() / f"{t.stem}.{key}.derived-{kind.upper()}.gguf"


def derive(target: str | Path, kind: str, output: str | Path | None = None, *, draft: bool = True,
           threads: int = 0, on_progress: ProgressFn | None = None) -> Path:
    """Write a copy of `target` in `kind` and return its path.

    `draft=True` (a draft for the target) requires the type to be smaller than the target's;
    `draft=False` allows any type (the bench's F32 proxy target). The copy is written to a `.part`
    file and renamed when complete, so an interrupted run never leaves a half file under the name.
    """
    kind = normalise_type(kind)
    summary = read_gguf_summary(target, what="target")
    if draft and BITS_BY_NAME[kind] >= summary.bits_per_weight:
        raise DeriveError(
            f"A {kind.upper()} copy of {target} would not be smaller than the target "
            f"({summary.type_name.upper()}, about {summary.bits_per_weight:.1f} bits per weight); "
            "a draft must be cheaper to run than the target.",
            hint="Choose a type with fewer bits, e.g. --type Q4_0 or --type Q2_K.")
    out = Path(output) if output is not None else default_output(target, kind)
    out = out.expanduser()
    if out.is_dir():
        raise DeriveError(f"The output {out} is a folder.",
                          hint=f"Give a file name, e.g. -o {out / default_output(target, kind).name}.")
    if out.suffix.lower() != ".gguf":
        raise DeriveError(f"The output {out} must end in .gguf.", hint="e.g. -o draft-q4_0.gguf")
    if Path(target).resolve() == out.resolve():
        raise DeriveError(f"The output {out} is the target itself.", hint="Give another file name.")
    folder = out.parent
    if folder == cache_dir():
        folder.mkdir(parents=True, exist_ok=True)
    if not folder.is_dir():
        raise DeriveError(f"The output folder {folder} does not exist.",
                          hint="Create it first, or give -o a path in an existing folder.")
    if not os.access(folder, os.W_OK):
        raise DeriveError(f"The output folder {folder} is not writable.", hint="Give -o a path you can write.")
    need = expected_bytes(summary, kind)
    free = shutil.disk_usage(folder).free
    if free < need * 1.02 + (16 << 20):
        raise DeriveError(
            f"Not enough free disk space in {folder} for the copy: it needs about {_size(need)}, "
            f"{_size(free)} is free.", hint="Free some space, or write it to another disk with -o PATH.")
    part = out.with_name(out.name + ".part")
    part.unlink(missing_ok=True)
    _quantize_watched(str(target), part, kind, threads, need, on_progress)
    os.replace(part, out)
    return out


def ensure_copy(target: str | Path, kind: str, *, draft: bool, on_progress: ProgressFn | None = None) -> Path:
    """The cached copy of `target` in `kind`, derived the first time it is asked for."""
    out = cached_copy_path(target, kind)
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        derive(target, kind, out, draft=draft, on_progress=on_progress)
    return out


def _quantize_watched(src: str, part: Path, kind: str, threads: int, need: int,
                      on_progress: ProgressFn | None) -> None:
    """Run the quantizer on a worker thread and report the output's growth as progress."""
    failure: list[BaseException] = []

    def work() -> None:
        try:
            quantize(src, str(part), kind, threads)
        except BaseException as exc:  # re-raised on the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=work, name="specterm-derive", daemon=True)
    worker.start()
    label = f"writing {kind.upper()} copy"
    while worker.is_alive():
        worker.join(0.2)
        if on_progress is not None:
            size = part.stat().st_size if part.exists() else 0
            on_progress(label, min(size / need, 0.99) if need else None)
    if failure:
        part.unlink(missing_ok=True)
        exc = failure[0]
        if _disk_full(part.parent):
            raise DeriveError(f"The disk holding {part.parent} is full; the copy was not written.",
                              hint="Free some space, or write it to another disk with -o PATH.") from None
        raise exc
    if on_progress is not None:
        on_progress(label, 1.0)


def _disk_full(folder: Path) -> bool:
    try:
        return shutil.disk_usage(folder).free < (1 << 20)
    except OSError as err:
        return err.errno == errno.ENOSPC


def _size(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"
