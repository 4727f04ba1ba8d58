"""The hybrid: a free proposer (the session drafter) and a draft model, asked in turn.

Neither prices anything: each pass the draft policy (engine/policy.py) decides how much of the
free guess to send and how many of the model's tokens to add after it (`DraftPolicy.split`), and
the loop asks the two proposers for exactly that. This object only holds the pair and passes the
request-level verbs (begin, rewind, forget, close) to both.
"""

from __future__ import annotations

from .drafters import Drafter, ModelDrafter
from .model import Model
from .session_drafter import SessionDrafter


class DraftPair:
    """A free proposer and a draft model (`[draft] hybrid`)."""

    kind = "hybrid"
    judge_unsent = False

    def __init__(self, free: Drafter, model: ModelDrafter) -> None:
        self.free = free
        self.model = model
        self.name = f"{free.name}+{model.name}"

    def parts(self) -> tuple[Drafter | None, Drafter | None]:
        return self.free, self.model

    def begin(self, prompt: list[int]) -> None:
        self.free.begin(prompt)
        self.model.begin(prompt)

    def rewind(self, n_keep: int) -> None:
        self.free.rewind(n_keep)
        self.model.rewind(n_keep)

    def forget(self) -> None:
        self.free.forget()
        self.model.forget()

    def close(self) -> None:
        self.free.close()
        self.model.close()


def session_drafter(drafter: Drafter | DraftPair) -> SessionDrafter | None:
    """The session drafter inside `drafter` (itself, or a pair's free part), if any."""
    free, _ = drafter.parts()
    return free if isinstance(free, SessionDrafter) else None


def draft_model(drafter: Drafter | DraftPair) -> Model | None:
    """The draft model inside `drafter` (a model drafter's, or a pair's), if any: what a cost
    meter times t_d on (a pair's model costs what it costs alone)."""
    _, model = drafter.parts()
    return model.model if isinstance(model, ModelDrafter) else None
