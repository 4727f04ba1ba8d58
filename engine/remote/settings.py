"""How to reach one OpenAI-compatible server, and what was learnt about it. Plain data: the config
module builds `RemoteSettings`; `discovery.probe` fills `ServerInfo`; doctor prints it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..settings import SamplingSettings

ServerKind = Literal["llama-server", "vllm", "llama-cpp-python", "openai-compatible"]
FimMode = Literal["auto", "infill", "completion"]

BACKEND_NAME = "openai"


@dataclass(frozen=True)
class RemoteSettings:
    """How to reach one OpenAI-compatible server. Plain data, built by the config module."""

    url: str  # base address: http://host:8080, http://host:8080/v1 or a proxy prefix …/v1
    api_key: str | None = None  # the key itself (resolved from the environment by the caller)
    api_key_env: str | None = None  # the variable it came from, named in error messages
    model: str | None = None  # model id to request; None: the first one the server lists
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    connect_timeout_s: float = 2.5  # one TCP/TLS connect attempt
    read_timeout_s: float = 120.0  # longest silence tolerated between two streamed events
    retries: int = 2  # extra attempts after a failed connect (or a reply lost before any text)
    backoff_s: float = 0.5  # first wait between attempts; doubles each time
    deadline_s: float = 10.0  # all connect attempts of one call together give up after this
    verify_tls: bool | str = True  # False, or a CA bundle path for self-signed certificates
    fim: FimMode = "auto"  # auto: /infill when the server has it, else a FIM prompt
    fim_template: str | None = None  # "{prefix}"/"{suffix}" template; None: by model family
    stats_interval_s: float = 0.1  # at most this often a StatsUpdate while streaming
    n_ctx: int = 4096  # the context assumed for the prompt budget when the server does not say


@dataclass(frozen=True)
class ServerInfo:
    """What `start()` learnt about the server; `doctor` prints it."""

    root: str  # base URL without the /v1 suffix
    kind: ServerKind
    model: str
    models: tuple[str, ...]
    version: str | None = None
    drafting: bool | None = None  # None: the server does not say
    acceptance_source: str = "none"  # "timings" (llama-server), "metrics" (Prometheus) or "none"
    n_ctx: int | None = None
    latency_s: float = 0.0  # round trip of the model-list request

    def describe_drafting(self) -> str:
        if self.drafting is None:
            return "unknown (not reported by server)"
        return "yes" if self.drafting else "no"
