"""Identify a server: which kind (llama-server, vLLM, llama-cpp-python, other), which model, its
context size, whether it drafts and where acceptance figures come from."""

from __future__ import annotations

import time

from ..errors import BackendUnavailableError
from .client import HttpClient
from .server_stats import spec_counters
from .settings import RemoteSettings, ServerInfo, ServerKind


async def probe(http: HttpClient, settings: RemoteSettings) -> ServerInfo:
    """GET /v1/models (with retries), then the kind's own endpoints (best effort)."""
    root = http.root
    t0 = time.perf_counter()
    listing = await http.get_json("/v1/models")
    latency = time.perf_counter() - t0
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        raise BackendUnavailableError(
            f"{root}/v1/models did not list models: is this an OpenAI-compatible server?",
            hint="Check [engine] url / --url.",
        )
    models = tuple(str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id"))
    owners = {str(m.get("owned_by", "")).lower() for m in data if isinstance(m, dict)}
    if not models:
        raise BackendUnavailableError(f"the server at {root} has no model loaded")
    model = settings.model or models[0]
    if settings.model and settings.model not in models:
        raise BackendUnavailableError(
            f"the server at {root} does not serve model {settings.model!r}",
            hint=f"It serves: {', '.join(models)}. Leave the model unset to use the first.",
        )

    kind: ServerKind = "openai-compatible"
    version = None
    drafting: bool | None = None
    source = "none"
    n_ctx = None
    if "llamacpp" in owners:
        kind = "llama-server"
        props = await http.get_json("/props", retry=False, quiet=True) or {}
        version = props.get("build_info") if isinstance(props, dict) else None
        gen = props.get("default_generation_settings") if isinstance(props, dict) else None
        n_ctx = gen.get("n_ctx") if isinstance(gen, dict) else None
        slots = await http.get_json("/slots", retry=False, quiet=True)
        if isinstance(slots, list) and slots and isinstance(slots[0], dict) and "speculative" in slots[0]:
            drafting = any(bool(s.get("speculative")) for s in slots)
        source = "timings"
    elif "vllm" in owners:
        kind = "vllm"
        ver = await http.get_json("/version", retry=False, quiet=True)
        version = ver.get("version") if isinstance(ver, dict) else None
        metrics = await http.get_text("/metrics")
        counters = spec_counters(metrics, model=model) if metrics else None
        drafting = counters is not None if metrics is not None else None
        source = "metrics" if counters is not None else "none"
        max_len = next((m.get("max_model_len") for m in data if isinstance(m, dict) and m.get("id") == model), None)
        n_ctx = max_len if isinstance(max_len, int) else None
    elif "me" in owners:  # llama-cpp-python's server lists its models as owned by "me"
        kind = "llama-cpp-python"
    return ServerInfo(
        root=root,
        kind=kind,
        model=model,
        models=models,
        version=str(version) if version is not None else None,
        drafting=drafting,
        acceptance_source=source,
        n_ctx=n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None,
        latency_s=latency,
    )
