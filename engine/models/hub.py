"""Getting catalogue files onto disk and making sure they are usable.

Downloads go through `huggingface_hub` into its normal cache, so `HF_HOME`, `HF_HUB_CACHE`,
`HF_HUB_OFFLINE`, `HF_TOKEN` / the saved login token and resumable partial downloads all behave as
they do for every other Hugging Face tool, and a file another tool already fetched is reused.
Verification is deliberately cheap: GGUF header plus a vocabulary-only load by llama.cpp (which
parses all metadata and the tokenizer) and the engine's pairing check; no weights are read.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import EngineError, ModelLoadError
from ..settings import ModelSettings
from .catalogue import ModelFile


class OfflineError(EngineError):
    """A needed file is not cached and the Hub cannot be reached (or offline mode is on)."""


class DownloadError(EngineError):
    """The Hub answered, but the file cannot be downloaded (missing, gated, no permission)."""


@dataclass(frozen=True)
class CachedGGUF:
    """A .gguf file found in the local Hugging Face cache."""

    repo: str
    file: str
    path: Path
    size_bytes: int


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache in effect (honours HF_HOME and HF_HUB_CACHE)."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def offline_mode() -> bool:
    """True when HF_HUB_OFFLINE (or the older TRANSFORMERS_OFFLINE) asks for no network at all."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def cached_path(mf: ModelFile) -> Path | None:
    """Where `mf` lies in the cache (latest `main` snapshot), or None when it is not downloaded."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(mf.repo, mf.file)
    if isinstance(found, str) and Path(found).is_file():
        return Path(found)
    return None


def download(mf: ModelFile, *, force: bool = False, progress: bool | None = None) -> Path:
    """Fetch `mf` into the cache (or find it there) and return its path.

    Partial downloads resume. `progress=None` shows huggingface_hub's progress bar only when
    stderr is a terminal. Raises OfflineError or DownloadError with a user-facing message.
    """
    from huggingface_hub import errors as hf_errors
    from huggingface_hub import hf_hub_download
    from huggingface_hub.utils import disable_progress_bars, enable_progress_bars
    from huggingface_hub.utils import logging as hf_logging

    show = sys.stderr.isatty() if progress is None else progress
    (enable_progress_bars if show else disable_progress_bars)()
    hf_logging.set_verbosity_error()  # failures become one DownloadError, not a log of retries
    where = f"{mf.file} from {mf.repo}"
    if offline_mode():
        found = cached_path(mf)
        if found is None or force:
            state = "cannot be downloaded again" if found else "is not in the Hugging Face cache"
            raise OfflineError(f"Offline (HF_HUB_OFFLINE is set) and {where} {state} "
                               f"({hub_cache_dir()}).")
        return found
    if not hub_reachable():
        # Checked first: huggingface_hub would retry with back-off for half a minute, logging
        # every attempt, before reporting what one quick request shows.
        raise OfflineError(f"Offline: {_endpoint()} cannot be reached and {where} is not in the "
                           f"Hugging Face cache ({hub_cache_dir()}).")
    try:
        return Path(hf_hub_download(mf.repo, mf.file, force_download=force))
    except (hf_errors.LocalEntryNotFoundError, hf_errors.OfflineModeIsEnabled):
        # Raised when the Hub cannot be reached (no network, DNS, proxy) and nothing is cached.
        # LocalEntryNotFoundError subclasses EntryNotFoundError, so it must be caught first.
        raise OfflineError(
            f"Offline: {_endpoint()} cannot be reached and {where} is not in the Hugging Face "
            f"cache ({hub_cache_dir()})."
        ) from None
    except hf_errors.GatedRepoError:
        raise DownloadError(
            f"{mf.repo} is gated: Hugging Face needs you to accept its licence before downloading.",
            hint=f"Accept it at https://huggingface.co/{mf.repo}, then log in with `hf auth login` "
            "or set HF_TOKEN, and run the pull again.",
        ) from None
    except hf_errors.RepositoryNotFoundError:
        raise DownloadError(
            f"The repository {mf.repo} was not found on Hugging Face (or it is private).",
            hint="If it is private, log in with `hf auth login` or set HF_TOKEN.",
        ) from None
    except hf_errors.EntryNotFoundError:
        raise DownloadError(
            f"{mf.file} is not in the repository {mf.repo}: the catalogue entry is out of date.",
            hint="Pick another quantization with --quant, or point [model] target at a file "
            "you downloaded yourself.",
        ) from None
    except hf_errors.HfHubHTTPError as exc:
        raise DownloadError(f"Downloading {where} failed: {_first_line(exc)}.") from None
    except Exception as exc:  # disk full, permissions, connection reset mid-transfer, ...
        reason = getattr(exc, "strerror", None) or _first_line(exc)
        raise DownloadError(
            f"Downloading {where} failed: {reason}.",
            hint="Run the pull again: the download resumes where it stopped.",
        ) from None


def hub_reachable(timeout: float = 5.0) -> bool:
    """One quick request to the Hub endpoint (HF_ENDPOINT), through huggingface_hub's own HTTP
    client so proxies and certificates are handled as for the download itself."""
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session

    try:
        get_session().head(constants.ENDPOINT, timeout=timeout)
    except Exception:  # any transport failure means: not reachable now
        return False
    return True


def verify_gguf(path: str | Path, *, what: str = "model") -> None:
    """A loadable GGUF: right magic, sane header, and llama.cpp loads its metadata and vocabulary."""
    from ..llamacpp.model import LlamaModel

    model = LlamaModel.load(ModelSettings(path=str(path), gpu_layers=0), vocab_only=True, what=what)
    model.close()


def check_pair_files(target: str | Path, draft: str | Path) -> None:
    """Load both vocabularies and run the engine's pairing check (raises PairingError)."""
    from ..llamacpp.model import LlamaModel
    from ..llamacpp.pairing import check_pair

    t = LlamaModel.load(ModelSettings(path=str(target), gpu_layers=0), vocab_only=True, what="target")
    try:
        d = LlamaModel.load(ModelSettings(path=str(draft), gpu_layers=0), vocab_only=True, what="draft")
        try:
            check_pair(t, d)
        finally:
            d.close()
    finally:
        t.close()


def cached_ggufs() -> list[CachedGGUF]:
    """Every .gguf file in the Hugging Face cache (each repository's newest snapshot first)."""
    from huggingface_hub import scan_cache_dir

    cache = hub_cache_dir()
    if not cache.is_dir():
        return []
    try:
        info = scan_cache_dir(cache)
    except Exception:  # a damaged cache must not break `specterm models`
        return []
    found: list[CachedGGUF] = []
    seen: set[Path] = set()
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model":
            continue
        revisions = sorted(repo.revisions, key=lambda r: r.last_modified, reverse=True)
        names: set[str] = set()
        for rev in revisions:
            for f in sorted(rev.files, key=lambda f: f.file_name):
                if not f.file_name.endswith(".gguf") or f.file_name in names:
                    continue
                path = Path(f.file_path)
                if path in seen:
                    continue
                names.add(f.file_name)
                seen.add(path)
                found.append(CachedGGUF(repo=repo.repo_id, file=str(Path(f.file_path).relative_to(
                    rev.snapshot_path)), path=path, size_bytes=f.size_on_disk))
    return found


def _endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT.split("://", 1)[-1].rstrip("/")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(".") if text else type(exc).__name__


__all__ = [
    "CachedGGUF", "DownloadError", "ModelLoadError", "OfflineError", "cached_ggufs", "cached_path",
    "check_pair_files", "download", "hub_cache_dir", "offline_mode", "verify_gguf",
]
