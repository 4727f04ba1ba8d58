"""A small dialog that asks one question with a few labelled answers.

Used only where specterm must not guess (unsaved changes on quit, a file changed on disk while
edited, saving over a file changed since it was loaded). Each answer has a key; Esc picks the
last (safest) answer; the focused answer (what Enter picks) is the first unless the caller names
a safer default. The answers stand side by side where they fit the terminal, else one under
another (at 60 columns the quit dialog's last answers were cut off).
"""

from __future__ import annotations

from textual import events, on
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
        width: auto; max-width: 76; height: auto; max-height: 100%; padding: 1 2;
        border: thick $warning; background: $surface; overflow-y: auto;
    }
    ChoiceScreen .question { width: auto; max-width: 70; margin-bottom: 1; }
    ChoiceScreen Horizontal { width: auto; height: auto; }
    ChoiceScreen Button { margin-right: 1; }
    ChoiceScreen.-narrow > Vertical { max-width: 100%; padding: 0 1; }
    ChoiceScreen.-narrow Horizontal { layout: vertical; }
    ChoiceScreen.-narrow Button { margin-right: 0; }
    """
    BUTTON_CHROME = 4  # a button's border and padding around its label
    BUTTON_MIN = 16  # Textual's min-width of a button
    DIALOG_CHROME = 6  # the dialog's border and padding

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]

    def __init__(self, question: str, answers: list[tuple[str, str]], *, default: str | None = None) -> None:
        """answers: (id, label) pairs; `default` (the first when None) is focused, the last is what
        Esc chooses."""
        super().__init__()
        self.question = question
        self.answers = answers
        self.default = default or answers[0][0]
        # focused from the first frame: Enter is never early (Textual reads it from the instance)
        self.AUTO_FOCUS = f"#answer-{self.default}"  # type: ignore[misc]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, classes="question", markup=False)
            with Horizontal():
                for answer_id, label in self.answers:
                    yield Button(label, id=f"answer-{answer_id}")

    def _row_width(self) -> int:
        """Columns the answers need side by side, the dialog's frame included."""
        buttons = sum(max(self.BUTTON_MIN, len(label) + self.BUTTON_CHROME) + 1 for _, label in self.answers)
        return buttons + self.DIALOG_CHROME

    def on_mount(self) -> None:
        self.set_class(self.app.size.width < self._row_width(), "-narrow")

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < self._row_width(), "-narrow")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        assert event.button.id is not None
        self.dismiss(event.button.id.removeprefix("answer-"))

    def action_cancel(self) -> None:
        self.dismiss(self.answers[-1][0])
