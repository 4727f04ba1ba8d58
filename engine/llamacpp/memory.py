"""Memory arithmetic shared by model loading (refuse what cannot fit) and `doctor` (estimates)."""

from __future__ import annotations

import os

# Bytes per KV cache element for each supported cache type (ggml block sizes: q8_0 packs 32 values
# into 34 bytes, q4_0 into 18).
KV_BYTES_PER_ELEMENT = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}


def kv_cache_bytes(
    *, n_layer: int, ctx: int, n_head_kv: int, key_length: int, value_length: int, kv_type: str
) -> int:
    """K and V for every layer and position: n_layer * ctx * n_head_kv * (k + v) * bytes/element.

    An upper bound for models with sliding-window layers (llama.cpp may allocate less there).
    """
    per_element = KV_BYTES_PER_ELEMENT.get(kv_type, 2.0)
    return int(n_layer * ctx * n_head_kv * (key_length + value_length) * per_element)


def hparam(model, key: str) -> int:
    """An integer hyper-parameter from GGUF metadata (`<arch>.<key>`); 0 when absent."""
    value = model.meta(f"{model.arch}.{key}")
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def model_kv_cache_bytes(model, ctx: int, kv_type: str) -> int:
    """KV cache size of a loaded (or vocab-only) Model at `ctx` tokens, from its GGUF metadata."""
    n_layer = hparam(model, "block_count")
    n_embd = hparam(model, "embedding_length")
    n_head = hparam(model, "attention.head_count")
    n_head_kv = hparam(model, "attention.head_count_kv") or n_head
    head_dim = n_embd // n_head if n_head else 0
    return kv_cache_bytes(
        n_layer=n_layer, ctx=ctx, n_head_kv=n_head_kv,
        key_length=hparam(model, "attention.key_length") or head_dim,
        value_length=hparam(model, "attention.value_length") or head_dim, kv_type=kv_type)


def system_ram() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
