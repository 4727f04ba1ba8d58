"""Helpers for the `specterm pull` / `specterm models` tests: tiny GGUFs, a private Hugging Face
cache laid out like the real one, and running the installed `specterm` in a sandboxed environment.

Tiny GGUFs carry only metadata and the tokenizer of the demo model (SmolLM2), copied with
`gguf.GGUFReader`/`GGUFWriter`: llama.cpp loads them with vocab_only, which is all `pull` verifies.
A "mismatched" variant differs in one token's text, which the engine's pairing check must catch.
(A uniquely named module, not conftest.py, so test files can import it unambiguously.)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

MISMATCHED_TOKEN = 1000  # the token id whose text the mismatched variant changes


def write_vocab_gguf(reader, dst: Path, *, name: str, change_token: tuple[int, str] | None = None) -> Path:
    """Write a tensor-free GGUF with every metadata key of `reader` (tokenizer included)."""
    import gguf

    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(str(dst), arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = field.contents()
        if key == "general.name":
            value = name
        if key == "tokenizer.ggml.tokens" and change_token is not None:
            value = list(value)
            value[change_token[0]] = change_token[1]
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(key, value, vtype, sub_type=field.types[-1])
        else:
            writer.add_key_value(key, value, vtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return dst


@dataclass(frozen=True)
class TinyGGUFs:
    good: Path  # the demo model's tokenizer, no weights
    mismatched: Path  # same, with token MISMATCHED_TOKEN renamed
    corrupt: Path  # a valid GGUF header, then cut off in the middle of the metadata


class HubCache:
    """Builds the standard Hugging Face cache layout (refs/main, snapshots/<rev>/, blobs/<sha>)."""

    def __init__(self, hf_home: Path) -> None:
        self.hf_home = hf_home
        self.hub = hf_home / "hub"

    def put(self, repo: str, filename: str, src: Path, *, revision: str = "0" * 40,
            etag: str | None = None) -> Path:
        """Cache `src` as `filename`; `etag` names the blob (default: the content's sha256, as the
        Hub does for LFS files; give another to fake a damaged blob)."""
        repo_dir = self.hub / ("models--" + repo.replace("/", "--"))
        data = src.read_bytes()
        blob = repo_dir / "blobs" / (etag or hashlib.sha256(data).hexdigest())
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
        (repo_dir / "refs" / "main").write_text(revision)
        link = repo_dir / "snapshots" / revision / filename
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.exists() or link.is_symlink():
            link.unlink()
        link.symlink_to(os.path.relpath(blob, link.parent))
        return link


@dataclass
class Sandbox:
    """One test's environment: its own HF cache, config home and working folder."""

    root: Path
    cache: HubCache
    env: dict[str, str]

    @property
    def user_config(self) -> Path:
        return Path(self.env["XDG_CONFIG_HOME"]) / "specterm" / "config.toml"

    def specterm(self, *args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [specterm_executable(), *args],
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.root / "work",
            timeout=timeout,
        )


def specterm_executable() -> str:
    """The installed console script next to this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name("specterm")
    if beside.exists():
        return str(beside)
    found = shutil.which("specterm")
    if found is None:
        pytest.fail("the specterm console script is not installed; pip install -e '.[test]'")
    return found


# The catalogue pair most tests use, and where its files live on the Hub.
PAIR = "qwen2.5-coder-7b"
TARGET_REPO = "bartowski/Qwen2.5-Coder-7B-Instruct-GGUF"
TARGET_FILE = "Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf"
DRAFT_REPO = "bartowski/Qwen2.5-Coder-0.5B-Instruct-GGUF"
DRAFT_FILE = "Qwen2.5-Coder-0.5B-Instruct-Q8_0.gguf"
