"""specterm.engine: speculative decoding on llama.cpp, as a library (it never imports Textual)."""

from .errors import (
    BackendUnavailableError,
    ContextOverflowError,
    EngineError,
    ModelLoadError,
    PairingError,
)
from .protocol import Engine
from .requests import (
    ChatMessage,
    ChatRequest,
    CompletionRequest,
    ContextFile,
    EditRequest,
    EngineInfo,
    Event,
    Finished,
    GenerateRequest,
    Request,
    StatsUpdate,
    TextDelta,
)
from .settings import (
    DraftSettings,
    EngineSettings,
    ModelSettings,
    SamplingSettings,
    SpeculativeSettings,
)
from .stats import Stats

__all__ = [
    "BackendUnavailableError", "ChatMessage", "ChatRequest", "CompletionRequest", "ContextFile", "EditRequest",
    "ContextOverflowError", "DraftSettings", "Engine", "EngineError", "EngineInfo",
    "EngineSettings", "Event", "Finished", "GenerateRequest", "ModelLoadError", "ModelSettings",
    "PairingError", "Request", "SamplingSettings", "SpeculativeSettings", "Stats", "StatsUpdate",
    "TextDelta",
]
