"""How a multi-line suggestion is drawn: spliced in at the cursor, extra lines as virtual rows that
push the document down, the rest of the cursor line after the last suggested line."""

from textual.app import App, ComposeResult

from specterm.tui.suggest.controller import Suggestion
from specterm.tui.themes import load_themes
from specterm.tui.widgets.editor import CodeEditor


class EditorApp(App):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        yield CodeEditor(self.text, path=None, theme=load_themes(None)[0]["specterm-dark"])


def row_text(editor: CodeEditor, y: int) -> str:
    return "".join(segment.text for segment in editor.render_line(y)).rstrip()


async def test_multi_line_ghost_rows_push_the_document_down():
    app = EditorApp("result = call()\nnext_line()\n")
    async with app.run_test(size=(60, 10)) as pilot:
        editor = app.query_one(CodeEditor)
        editor.focus()
        editor.move_cursor((0, len("result = call(")))
        await pilot.pause()
        editor.suggest.ghost = Suggestion(None, editor.cursor_location, full="a,\n    b", streaming=False)
        editor.redraw_suggestion()
        await pilot.pause()
        assert editor.ghost_text == "a,\n    b"
        assert row_text(editor, 0).endswith("result = call(a,")
        assert row_text(editor, 1).endswith("    b)")  # the rest of the line moved after the ghost
        assert row_text(editor, 2).endswith("next_line()")  # the document continues below
        assert editor.virtual_size.height == editor.document.line_count + 1
        assert editor.text == "result = call()\nnext_line()\n"  # nothing inserted yet

        await pilot.press("escape")
        assert editor.ghost_text == ""
        assert row_text(editor, 0).endswith("result = call()")
        assert row_text(editor, 1).endswith("next_line()")
        assert editor.virtual_size.height == editor.document.line_count


async def test_the_placeholder_shows_exactly_while_the_document_is_empty():
    """While a line renders, the editor answers Textual's "is the document empty?" from its size
    instead of joining every line: the placeholder must still come and go with the text."""
    app = EditorApp("")
    async with app.run_test(size=(60, 10)) as pilot:
        editor = app.query_one(CodeEditor)
        editor.placeholder = "nothing here yet"
        editor.focus()
        await pilot.pause()
        assert "nothing here yet" in row_text(editor, 0)
        await pilot.press("x")
        assert "nothing here yet" not in row_text(editor, 0) and row_text(editor, 0).endswith("x")
        await pilot.press("backspace", "enter")
        assert "nothing here yet" not in row_text(editor, 0)  # two empty lines are not empty
        assert editor.text == "\n"  # outside rendering, the real text
        await pilot.press("backspace")
        assert "nothing here yet" in row_text(editor, 0)
