"""Errors a user can act on.

Every error the engine raises for bad input is an `EngineError` whose message says what went wrong,
which file, key or model is involved, and what to do. The CLI prints the message and exits 2; the TUI
shows it as a notice. Nothing here should ever surface as a traceback.
"""

from __future__ import annotations


class EngineError(Exception):
    """A user-facing failure: the message is the whole explanation."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:  # message first, then what to do, as separate sentences
        return f"{end_sentence(self.message)}\n{self.hint}" if self.hint else self.message


def end_sentence(text: str) -> str:
    """`text` ending in a full stop (or its own ! ? :), so a sentence that follows it does not run on
    ("3 attempts in 1.6 s. Start the server", not "... 1.6 s Start the server")."""
    text = text.rstrip()
    return text if not text or text.endswith((".", "!", "?", ":")) else text + "."


class ModelLoadError(EngineError):
    """A model file is missing, not a GGUF, truncated, unsupported or too large."""


class PairingError(EngineError):
    """Draft and target tokenizers disagree, so draft tokens would mean different text."""


class ContextOverflowError(EngineError):
    """A prompt does not fit the configured context window."""


class BackendUnavailableError(EngineError):
    """A remote backend cannot be reached or refused the request."""
