"""A small dialog that asks one question with a few labelled answers.

Used only where specterm must not guess (unsaved changes on quit, a file changed on disk while
edited, saving over a file changed since it was loaded). Each answer has a key; Esc picks the
last (safest) answer; the focused answer (what Enter picks) is the first unless the caller names
a safer default.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ChoiceScreen(ModalScreen[str]):
    """Dismisses with the id of the chosen answer."""

    DEFAULT_CSS = """
    ChoiceScreen { align: center middle; }
    ChoiceScreen > Vertical {
        width: auto; max-width: 76; height: auto; padding: 1 2;
        border: thick $warning; background: $surface;
    }
    ChoiceScreen .question { width: auto; max-width: 70; margin-bottom: 1; }
    ChoiceScreen Horizontal { width: auto; height: auto; }
    ChoiceScreen Button { margin-right: 1; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]

    def __init__(self, question: str, answers: list[tuple[str, str]], *, default: str | None = None) -> None:
        """answers: (id, label) pairs; `default` (the first when None) is focused, the last is what
        Esc chooses."""
        super().__init__()
        self.question = question
        self.answers = answers
        self.default = default or answers[0][0]
        self.AUTO_FOCUS = f"#answer-{self.default}"  # focused from the first frame: Enter is never early

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, classes="question", markup=False)
            with Horizontal():
                for answer_id, label in self.answers:
                    yield Button(label, id=f"answer-{answer_id}")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        assert event.button.id is not None
        self.dismiss(event.button.id.removeprefix("answer-"))

    def action_cancel(self) -> None:
        self.dismiss(self.answers[-1][0])
