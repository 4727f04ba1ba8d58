"""Requests and the events an engine streams back. Plain data, shared by local and remote engines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

from .settings import SamplingSettings
from .stats import Stats


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class ContextFile:
    """Another open file offered as context for a fill-in-the-middle completion."""

    path: str
    text: str


@dataclass(frozen=True)
class GenerateRequest:
    """Plain continuation of a prompt."""

    prompt: str
    max_tokens: int = 256
    sampling: SamplingSettings | None = None  # None: the engine's configured sampling
    stop: tuple[str, ...] = ()
    add_bos: bool = True


@dataclass(frozen=True)
class CompletionRequest:
    """Fill-in-the-middle at a cursor: text before and after it, optionally other files as context.

    `multiline=False` stops at the end of the line; `max_lines` caps a multi-line suggestion;
    `time_budget_s` ends the completion when it would keep an editor waiting too long, counted
    from `started_at` (time.monotonic() of the keystroke that asked; None: when the engine starts
    it), so time spent waiting for the engine counts too; one that has read its prompt and begun
    writing still gets GENERATION_FLOOR_S (`completion.Deadline`). `predict_budget_s` caps the
    writing itself: the completion ends this long after its first text (llama.vim's
    t_max_predict_ms), so a slow machine shows a shorter suggestion at once rather than a long one
    late; the next part comes from the prefetch (asked as if this one were accepted).
    `first_token_rank` k > 0 asks for an alternative: the target's k-th most likely first token
    (0 is the most likely), then its own greedy continuation — distinct first tokens, so distinct
    suggestions. Engines that cannot (`EngineInfo.alternatives` False) answer with an error.
    `first_read_s` bounds the prompt read before the first token: where the part of the prompt the
    engine has not read yet would take longer, a local engine starts the prefix later (at a line;
    engine/llamacpp/fim_prompt.py); None reads the whole prefix.
    """

    prefix: str
    suffix: str = ""
    path: str | None = None
    context_files: tuple[ContextFile, ...] = ()
    max_tokens: int = 128
    sampling: SamplingSettings | None = None
    stop: tuple[str, ...] = ()
    multiline: bool = True
    max_lines: int = 16
    time_budget_s: float | None = None
    predict_budget_s: float | None = None
    first_token_rank: int = 0
    started_at: float | None = None
    first_read_s: float | None = None


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple[ChatMessage, ...]
    max_tokens: int = 1024
    sampling: SamplingSettings | None = None
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class EditRequest:
    """Rewrite `region` (whole lines of a file) as `instruction` asks; the answer replaces it.

    The engine streams the new region's text (code only: no fences, no prose; it ends with a line
    break when the region did). The region is the prediction a local engine drafts from. An
    `EditRequest` with an empty instruction given to `Engine.prewarm` reads the whole prompt but
    the instruction (engine/edit_prompt.py puts it last), so the request that follows reads only
    the instruction and the answer's start."""

    instruction: str
    region: str  # the exact text replaced: whole lines, ending "\n" unless at the end of the file
    before: str = ""  # the file's text before the region (context)
    after: str = ""  # the file's text after the region (context)
    path: str | None = None
    max_tokens: int | None = None  # None: sized from the region (engine/edit_prompt.py)
    sampling: SamplingSettings | None = None


Request = Union[GenerateRequest, CompletionRequest, ChatRequest, EditRequest]

FinishReason = Literal["eos", "length", "stop", "cancelled", "superseded", "busy", "time", "error"]


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class StatsUpdate:
    stats: Stats  # a snapshot (a copy): safe to keep


@dataclass(frozen=True)
class Finished:
    reason: FinishReason
    text: str  # the whole generated text, after post-processing (e.g. FIM trimming)
    stats: Stats
    error: str | None = None  # user-facing message when reason == "error"

    @property
    def answered(self) -> bool:
        """The request ended with its answer: naturally, or cut by its time budget (the text so
        far is the answer then), not cancelled or failed."""
        return self.reason in ("eos", "length", "stop", "time")


Event = Union[TextDelta, StatsUpdate, Finished]


@dataclass(frozen=True)
class EngineInfo:
    """What the UI and `doctor` show about the loaded pair."""

    target_name: str
    draft_name: str  # file name of the draft model, "lookup" or "none"
    draft_kind: str
    demo: bool  # True when the target is the built-in demo model
    gpu: bool  # True when any layer is offloaded to a GPU
    target_gpu_layers: int = 0
    draft_gpu_layers: int = 0
    fim: bool = False
    chat_template: bool = False
    backend: str = "local"
    alternatives: bool = False  # answers CompletionRequest.first_token_rank > 0
    extra: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # lines to show the user once (what a saved session memory did)
