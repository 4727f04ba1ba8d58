"""The suggestion lifecycle without a widget (tui/suggest/controller.py): a plain host over a list
of lines stands where the editor does, as the `SuggestionHost` protocol allows; the editor's own
behaviour is tested through the app (test_editor_completions.py, test_suggestion_keys.py)."""

from __future__ import annotations

from pathlib import Path

from specterm.tui.suggest.completer import Completer, CompletionOptions
from specterm.tui.suggest.controller import Suggestion, SuggestionController


class LinesHost:
    """A document of lines with a caret, reporting its edits to the controller as the editor does."""

    path: Path | None = None
    read_only = False
    is_mounted = False  # no workers to run: nothing streams here
    has_focus = True

    def __init__(self, lines: list[str], cursor: tuple[int, int]) -> None:
        self.lines = lines
        self.cursor_location = cursor
        self.controller = SuggestionController(self, Completer(CompletionOptions.from_config()))
        self.notices: list[str] = []
        self.timers: list[float] = []

    def cursor_is_caret(self) -> bool:
        return True

    def prefix_suffix(self, at=None) -> tuple[str, str]:
        row, col = self.cursor_location if at is None else at
        text_before = "\n".join(self.lines[:row] + [self.lines[row][:col]])
        return text_before, "\n".join([self.lines[row][col:]] + self.lines[row + 1:])

    def text_after(self, at, lines):
        row, col = at
        return self.lines[row][col:], self.lines[row + 1: row + 1 + lines]

    def insert_suggestion(self, piece: str, at) -> None:
        consumed = self.controller.consumes(piece, at, at)
        row, col = at
        line = self.lines[row]
        new = (line[:col] + piece + line[col:]).split("\n")
        self.lines[row:row + 1] = new
        end = (row + len(new) - 1, len(new[-1]) - len(line[col:]))
        self.cursor_location = end
        self.controller.edited(piece, consumed, end, line_break=False)

    def redraw_suggestion(self) -> None:
        self.controller.update_shown(drawn=False)

    def set_timer(self, delay, callback):
        self.timers.append(delay)

    def run_worker(self, work, **kwargs):
        work.close()
        raise AssertionError("nothing streams without an engine")

    def notify(self, message: str, **kwargs) -> None:
        self.notices.append(message)


def shown_at(host: LinesHost, full: str) -> SuggestionController:
    controller = host.controller
    controller.ghost = Suggestion(None, host.cursor_location, full=full, streaming=False, source="cache")
    host.redraw_suggestion()
    return controller


def test_a_suggestion_shows_what_the_line_does_not_hold_already():
    host = LinesHost(["def f(", "x = 1"], (0, 6))
    controller = shown_at(host, "a, b):")
    assert controller.shown == "a, b):" and controller.source == "cache"
    host.lines[0] = "def f(a, b):"  # the rest is in the document now: nothing new to show
    host.redraw_suggestion()
    assert controller.shown == ""


def test_typing_through_consumes_and_accepting_a_word_inserts_it():
    host = LinesHost(["total = "], (0, 8))
    controller = shown_at(host, "price * count")
    assert controller.consumes("p", (0, 8), (0, 8))
    assert not controller.consumes("q", (0, 8), (0, 8))  # another character: no
    assert not controller.consumes("p", (0, 7), (0, 8))  # over a range: no
    host.insert_suggestion("p", (0, 8))
    assert controller.shown == "rice * count" and controller.ghost is not None
    controller.accept("word")
    assert host.lines == ["total = price"] and controller.shown == " * count"
    controller.accept("line")
    assert host.lines == ["total = price * count"]
    assert controller.ghost is None and controller.shown == ""  # accepted through: gone


def test_a_move_away_dismisses_and_a_move_to_the_anchor_does_not():
    host = LinesHost(["x = ", ""], (0, 4))
    controller = shown_at(host, "1")
    assert not controller.moved((0, 4), caret=True)  # the suggestion's own place
    assert controller.shown == "1"
    host.cursor_location = (1, 0)
    assert controller.moved((1, 0), caret=True)
    assert controller.ghost is None and controller.shown == "" and controller.rests_after_move


def test_accepting_nothing_does_nothing_and_asking_before_the_model_loaded_says_so():
    host = LinesHost(["x = "], (0, 4))
    controller = host.controller
    for how in ("all", "word", "line"):
        controller.accept(how)
    assert host.lines == ["x = "]
    controller.complete(manual=False)  # the typing pause: silent
    assert host.notices == []
    controller.complete(manual=True)  # the complete key: it says why nothing comes
    assert host.notices == ["The model is still loading."] and controller.ghost is None
    controller.alternative(1)  # no suggestion, no alternatives: nothing happens
    assert controller.shown == ""
