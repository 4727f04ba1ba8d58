"""The curated catalogue of target/draft pairs that share a tokenizer (data in catalogue.toml).

It answers "which files do I need for `qwen2.5-coder-7b`?" without touching the network: repository,
file name, quantization, size, context and the attention shape used for memory estimates. Names are
lowercase slugs of family and size; an unknown name gets the nearest known ones as suggestions.
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import EngineError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CATALOGUE_FILE = "catalogue.toml"


class CatalogueError(EngineError):
    """An unknown model name or quantization, or a malformed catalogue file."""


@dataclass(frozen=True)
class ModelFile:
    """One GGUF file in a Hugging Face repository."""

    repo: str
    file: str
    quant: str
    size_bytes: int  # as listed by the repository (rounded); the download itself is checked by hub


@dataclass(frozen=True)
class CatalogueModel:
    """One model in the catalogue, available in one or more quantizations."""

    slug: str
    name: str
    repo: str
    context: int
    layers: int
    kv_heads: int
    head_dim: int
    default_quant: str
    quants: dict[str, ModelFile]
    draft_slug: str | None = None

    def file(self, quant: str | None = None) -> ModelFile:
        """The file for `quant` (default quantization when None); CatalogueError names the choices."""
        q = quant or self.default_quant
        found = self.quants.get(q) or _casefold_get(self.quants, q)
        if found is None:
            raise CatalogueError(
                f"{self.slug} has no {q} quantization in specterm's catalogue.",
                hint=f"Available: {', '.join(self.quants)} (default {self.default_quant}).",
            )
        return found

    def kv_bytes_per_token(self, kv_type_bytes: float = 2.0) -> float:
        """K and V for every layer: the per-token KV-cache cost at f16 (2 bytes) by default."""
        return 2 * self.layers * self.kv_heads * self.head_dim * kv_type_bytes


@dataclass(frozen=True)
class Pair:
    """A target with its catalogue draft; the pair is named by the target's slug."""

    slug: str
    target: CatalogueModel
    draft: CatalogueModel

    @property
    def context(self) -> int:
        """The context both models support."""
        return min(self.target.context, self.draft.context)


@dataclass(frozen=True)
class Catalogue:
    models: dict[str, CatalogueModel]
    source: str  # where the data came from, for error messages

    @property
    def pairs(self) -> list[Pair]:
        return [self.pair(slug) for slug, m in self.models.items() if m.draft_slug]

    def pair(self, name: str) -> Pair:
        """The pair named `name` (a target slug, case-insensitive); CatalogueError suggests names."""
        slug = normalise_name(name)
        model = self.models.get(slug)
        if model is None or model.draft_slug is None:
            pair_names = [s for s, m in self.models.items() if m.draft_slug]
            hint = "Run `specterm models` to see them all."
            if model is not None:  # a known draft model: point at the targets it drafts for
                targets = [s for s, m in self.models.items() if m.draft_slug == slug]
                raise CatalogueError(
                    f"{slug} is a draft model; pull one of the targets it drafts for: "
                    f"{', '.join(targets)}.",
                    hint=hint,
                )
            near = nearest(slug, pair_names)
            listed = (f"Nearest known: {', '.join(near)}." if near
                      else f"Known pairs: {', '.join(pair_names)}.")
            raise CatalogueError(f"Unknown model {name!r}. {listed}", hint=hint)
        return Pair(slug=slug, target=model, draft=self.models[model.draft_slug])


def normalise_name(name: str) -> str:
    """Slugs are lowercase with dashes: `Qwen2.5-Coder-7B`, `qwen2.5_coder_7b` name the same pair."""
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def nearest(name: str, candidates: list[str], n: int = 3) -> list[str]:
    """Up to `n` candidates closest to `name`, best first.

    Spelling similarity alone ranks `deepseek` closer to one DeepSeek size than to the family, so a
    candidate that starts with the name's family (the part before the first dash) gets a bonus.
    """
    family = name.split("-")[0]
    scored = []
    for cand in candidates:
        score = difflib.SequenceMatcher(None, name, cand).ratio()
        if family and cand.startswith(family):
            score += 0.5
        scored.append((score, cand))
    scored.sort(key=lambda sc: -sc[0])
    return [cand for score, cand in scored[:n] if score >= 0.5]


def _casefold_get(quants: dict[str, ModelFile], quant: str) -> ModelFile | None:
    for key, value in quants.items():
        if key.casefold() == quant.casefold():
            return value
    return None


# --- loading ------------------------------------------------------------------------------------
def load_catalogue(path: str | Path | None = None) -> Catalogue:
    """Read and validate the catalogue (the packaged one unless `path` is given)."""
    if path is None:
        resource = resources.files("specterm.engine.models") / CATALOGUE_FILE
        source = str(resource)
        try:
            text = resource.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CatalogueError(
                f"specterm's model catalogue {CATALOGUE_FILE} is missing from the installation.",
                hint="Reinstall specterm (`pip install --force-reinstall specterm`).",
            ) from None
    else:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise CatalogueError(f"Cannot read the catalogue {source}: {exc.strerror}.") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"The catalogue {source} is not valid TOML: {exc}.") from None
    return _parse(data, source)


def _parse(data: dict[str, Any], source: str) -> Catalogue:
    raw_models = data.get("models")
    if not isinstance(raw_models, dict) or not raw_models:
        raise CatalogueError(f"The catalogue {source} has no [models.*] tables.")
    models: dict[str, CatalogueModel] = {}
    for slug, raw in raw_models.items():
        where = f"[models.{slug!r}] in {source}"
        if slug != normalise_name(slug):
            raise CatalogueError(f"{where}: model names must be lowercase slugs.")
        models[slug] = _parse_model(slug, raw, where)
    for slug, model in models.items():
        if model.draft_slug is not None:
            draft = models.get(model.draft_slug)
            if draft is None:
                raise CatalogueError(
                    f"[models.{slug!r}] in {source}: draft {model.draft_slug!r} is not in the catalogue."
                )
            if draft.draft_slug is not None:
                raise CatalogueError(
                    f"[models.{slug!r}] in {source}: its draft {model.draft_slug!r} is itself a target."
                )
    return Catalogue(models=models, source=source)


def _parse_model(slug: str, raw: Any, where: str) -> CatalogueModel:
    if not isinstance(raw, dict):
        raise CatalogueError(f"{where} must be a table.")

    def need(key: str, kind: type) -> Any:
        value = raw.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            expected = {str: "a string", int: "an integer", dict: "a table"}[kind]
            raise CatalogueError(f"{where}: key {key!r} must be {expected}, got {value!r}.")
        return value

    repo = need("repo", str)
    raw_quants = need("quants", dict)
    quants: dict[str, ModelFile] = {}
    for quant, entry in raw_quants.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise CatalogueError(f"{where}: quants.{quant} needs a file name.")
        size = entry.get("size_mb")
        if not isinstance(size, int) or size <= 0:
            raise CatalogueError(f"{where}: quants.{quant}.size_mb must be a positive integer.")
        if not entry["file"].endswith(".gguf"):
            raise CatalogueError(f"{where}: quants.{quant}.file must name a .gguf file.")
        quants[quant] = ModelFile(repo=repo, file=entry["file"], quant=quant,
                                  size_bytes=size * 1_000_000)
    default_quant = need("default_quant", str)
    if default_quant not in quants:
        raise CatalogueError(f"{where}: default_quant {default_quant!r} is not one of its quants.")
    draft = raw.get("draft")
    if draft is not None and not isinstance(draft, str):
        raise CatalogueError(f"{where}: key 'draft' must be a model name.")
    return CatalogueModel(
        slug=slug,
        name=need("name", str),
        repo=repo,
        context=need("context", int),
        layers=need("layers", int),
        kv_heads=need("kv_heads", int),
        head_dim=need("head_dim", int),
        default_quant=default_quant,
        quants=quants,
        draft_slug=draft,
    )
