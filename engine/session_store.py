"""Keeping the session drafter's memory between runs, when a user asks for it (`[draft]
session_store = PATH`; by default nothing is written).

What is kept is the text the index holds (token ids in the order they were seen, documents
separated), not its hash table: the table is rebuilt on load (a few numpy passes), so a store
written with another memory cap or another n-gram set still loads. Token ids mean something only
to the vocabulary that made them, so a store carries that vocabulary's fingerprint and a store
written for another one is ignored, with a note, never used. Writes are atomic (a temporary file
renamed over the old one), so a crash mid-write never leaves half a store.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FORMAT = 1


@dataclass(frozen=True)
class SessionStore:
    """Where a session's memory is kept, and the vocabulary its token ids belong to."""

    path: Path
    vocab: str  # Model.vocab_fingerprint() of the target

    def load(self) -> tuple[np.ndarray | None, str]:
        """The stored tokens (None when there are none to use) and a line saying what happened."""
        if not self.path.exists():
            return None, f"session memory: new store {self.path}"
        try:
            with np.load(self.path, allow_pickle=False) as data:
                fmt = int(data["format"])
                vocab = str(data["vocab"])
                tokens = np.asarray(data["tokens"], dtype=np.int32)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as err:
            return None, (f"session memory: {self.path} is not a specterm session store ({err}); "
                          "starting empty, it will be overwritten on exit")
        if fmt != FORMAT:
            return None, (f"session memory: {self.path} has format {fmt}, this specterm reads "
                          f"{FORMAT}; starting empty, it will be overwritten on exit")
        if vocab != self.vocab:
            return None, (f"session memory: {self.path} was written for another model's vocabulary; "
                          "starting empty, it will be overwritten on exit (set [draft] session_store "
                          "to another file to keep both)")
        return tokens, f"session memory: {tokens.size} tokens from {self.path}"

    def save(self, tokens: np.ndarray) -> str | None:
        """Write the tokens; a line saying why not when the file cannot be written."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                np.savez(f, format=np.int32(FORMAT), vocab=np.str_(self.vocab),
                         tokens=np.asarray(tokens, dtype=np.int32))
            os.replace(tmp, self.path)
        except OSError as err:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            return f"session memory not saved to {self.path}: {err.strerror or err}"
        return None
