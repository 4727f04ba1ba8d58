"""A large file (about 1.5 MB of the standard library's Python) in the real app: it edits, saves,
highlights at the cursor (a window around the viewport) and keeps the dirty flag right. Correctness
only: bench/editor_echo.py measures the keystroke echo."""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path

from textual.document._document import Document
from textual.document._wrapped_document import WrappedDocument

from specterm.tui.app import SpectermApp
from specterm.tui.widgets.document import EditorDocument, UnwrappedDocument
from specterm.tui.widgets.highlight import WHOLE_FILE_LINES

from .conftest import wait_for


def stdlib_python(size: int) -> str:
    parts, total = [], 0
    for src in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        try:
            text = src.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(text if text.endswith("\n") else text + "\n")
        total += len(text)
        if total >= size:
            break
    return "".join(parts)


def keyword_at(editor, row: int, col: int) -> str | None:
    return next((name for start, end, name in editor._highlights.get(row, ())
                 if start <= col < (end if end is not None else col + 1)), None)


async def test_a_large_file_edits_saves_highlights_and_tracks_dirty(tmp_path, settings_for, env):
    path = tmp_path / "big.py"
    text = stdlib_python(1_500_000)
    path.write_text(text)
    app = SpectermApp(settings_for(tmp_path, **{"completion.auto": False}), path, environ=env, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        open_file = app.active_file
        lines = editor.document.line_count
        assert lines > WHOLE_FILE_LINES * 10 and not open_file.dirty

        row = lines * 2 // 3  # far below the first screen: outside any window lexed at opening
        editor.move_cursor((row, 0))
        await pilot.press("enter", "up")
        await pilot.press(*"def zz_new(value):")
        assert editor.document[row] == "def zz_new(value):"
        assert open_file.dirty and "●" in app.editor_tabs.tab_label(open_file)
        await wait_for(pilot, lambda: keyword_at(editor, row, 0) is not None, timeout=10)
        assert "Keyword" in keyword_at(editor, row, 0)
        assert "Name" in (keyword_at(editor, row, 4) or "")

        # Undo back to the text as loaded: clean again (compared by content, not by edits made).
        for _ in range(10):
            await pilot.press("ctrl+z")
            if editor.document.line_count == lines:
                break
        assert editor.text == text and not open_file.dirty
        assert "●" not in app.editor_tabs.tab_label(open_file)

        await pilot.press("x")
        assert open_file.dirty
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not open_file.dirty, timeout=10)
        assert path.read_text() == editor.text
        assert editor.text.split("\n")[row] == "x" + text.split("\n")[row]


def test_editor_document_matches_textual_after_random_edits():
    """The cached text, size and unwrapped view agree with Textual's own after every edit,
    tabs and wide characters included."""
    rng = random.Random(7)
    start = "def f(x):\n\treturn x\n\n# 漢字 wide\n" * 30
    mine, theirs = EditorDocument(start), Document(start)
    view = UnwrappedDocument(mine, tab_width=4)
    pieces = ["a", "\n", "\t", "漢", "", "long line " * 9, "x\ny\n"]
    for _ in range(300):
        r1 = rng.randrange(theirs.line_count)
        r2 = min(theirs.line_count - 1, r1 + rng.choice([0, 0, 1, 3]))
        c1 = rng.randint(0, len(theirs[r1]))
        c2 = rng.randint(0, len(theirs[r2])) if r2 != r1 else rng.randint(c1, len(theirs[r1]))
        piece = rng.choice(pieces)
        result = mine.replace_range((r1, c1), (r2, c2), piece)
        assert result == theirs.replace_range((r1, c1), (r2, c2), piece)
        view.wrap_range((r1, c1), (r2, c2), result.end_location)
        assert mine.text == theirs.text
        assert mine.get_size(4) == theirs.get_size(4)
        reference = WrappedDocument(theirs, tab_width=4)
        assert view.height == reference.height
        for row in {0, r1, theirs.line_count - 1}:
            for col in {0, len(theirs[row])}:
                assert view.location_to_offset((row, col)) == reference.location_to_offset((row, col))
            assert view.get_tab_widths(row) == reference.get_tab_widths(row)
            assert view.get_offsets(row) == reference.get_offsets(row)
    assert mine.get_size(8) == theirs.get_size(8)  # another tab width measures again


def test_block_lines_split_and_edit_as_textual_does_across_blocks():
    """Lines kept in blocks are the lines Textual's Document has (every newline style, a form
    feed, a final line break or none), after edits that span many blocks; a copy is a snapshot,
    and comparing them tells an edited buffer from a saved one."""
    for text in ["", "\n", "a", "a\r\nb\r\n", "x\x0cy\n\n", "\r", "a\rb", "l\n" * 200, "ab\n" * 70_000 + "end"]:
        assert list(EditorDocument(text).lines) == Document(text).lines
        assert EditorDocument(text).text == Document(text).text
    rng = random.Random(3)
    pieces = ["x", "", "\n", "a\nb", "zz\nyy\nww", "\n".join(map(str, range(150)))]
    for _ in range(20):
        start = "".join(rng.choice([f"line {i}\n", "\n", "q", "\r\n"]) for i in range(rng.randint(0, 3000)))
        mine, theirs = EditorDocument(start), Document(start)
        saved = mine.lines.copy()
        for _ in range(40):
            r1 = rng.randrange(theirs.line_count)
            r2 = min(theirs.line_count - 1, r1 + rng.choice([0, 0, 1, 5, 100, 300]))
            c1, c2 = rng.randint(0, len(theirs[r1])), rng.randint(0, len(theirs[r2]))
            piece = rng.choice(pieces)
            assert mine.replace_range((r1, c1), (r2, c2), piece) == theirs.replace_range((r1, c1), (r2, c2), piece)
            assert mine.line_count == theirs.line_count and mine[-1] == theirs[-1]
            a, b = sorted((rng.randrange(theirs.line_count + 1), rng.randrange(theirs.line_count + 1)))
            assert mine.lines[a:b] == theirs.lines[a:b]
        assert list(mine.lines) == theirs.lines and mine.text == theirs.text
        assert list(saved) == Document(start).lines  # the snapshot kept the text as it was
        assert (saved == mine.lines) == (Document(start).lines == theirs.lines)
    undone = EditorDocument("a\nb\n" * 100)
    saved = undone.lines.copy()
    undone.replace_range((50, 0), (50, 1), "z")
    assert undone.lines != saved
    undone.replace_range((50, 0), (50, 1), "a")
    assert undone.lines == saved  # typed and taken back: clean again


def test_block_lines_cost_about_the_text():
    """Textual's list of line strings costs ~49 bytes a line over the text; blocks do not."""
    import tracemalloc

    text = "".join(f"    value_{i} = compute({i}, name='x')\n" for i in range(50_000))

    def held(build) -> int:
        tracemalloc.start()
        try:
            document = build(text)
            return tracemalloc.get_traced_memory()[0] if document.line_count else 0
        finally:
            tracemalloc.stop()

    assert held(EditorDocument) < 1.1 * len(text) < 0.5 * held(Document)


async def test_typing_re_renders_the_edited_row_and_keeps_the_others_right(tmp_path, settings_for, env):
    """A keystroke within one row drops only that row's rendered strips (re-rendering every
    visible row was most of a keystroke's time in a large file); an edit that adds or removes a
    row drops them all. What is drawn equals the document on every visible row either way."""
    path = tmp_path / "rows.py"
    path.write_text("".join(f"value_{i} = {i} * 2  # row {i}\n" for i in range(400)))
    app = SpectermApp(settings_for(tmp_path, **{"completion.auto": False}), path, environ=env, watch=False)
    async with app.run_test(size=(100, 30)) as pilot:
        editor = app.active_editor
        gutter = editor.gutter_width

        def drawn_matches_document() -> bool:
            top = editor.scroll_offset.y
            for y in range(editor.content_size.height):
                row = top + y
                want = editor.document[row] if row < editor.document.line_count else ""
                got = editor.render_line(y).text[gutter:].rstrip()
                if got != want.rstrip()[: len(got)] or (want.strip() and not got):
                    return False
            return True

        editor.move_cursor((12, 0))
        await pilot.pause()
        assert drawn_matches_document()
        await pilot.press(*"abc")
        assert len(editor._line_cache) > 1  # the other rows' strips were kept
        assert editor.document[12].startswith("abc") and drawn_matches_document()
        await pilot.press("left")  # the cursor where it was after "ab": that drawing is stale
        await pilot.pause()
        assert drawn_matches_document()
        await pilot.press("down")
        await pilot.pause()
        assert drawn_matches_document()
        await pilot.press("up", "end", "enter", *"x = 1")  # a new row: everything below moved down
        assert editor.document[13] == "x = 1"
        assert drawn_matches_document()
        await pilot.press("home", "backspace")  # rows joined again
        await pilot.pause()
        assert drawn_matches_document()
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert drawn_matches_document()


async def test_rows_added_and_removed_move_the_scrollbar_and_keep_the_cursor_in_view(tmp_path, settings_for, env):
    """The scrollable size is set without a layout pass of the whole screen: the scrollbar still
    appears when the document outgrows the view, the view still follows the cursor down, and the
    scrollbar goes again when the rows are taken back."""
    path = tmp_path / "short.py"
    path.write_text("x = 1\n")
    app = SpectermApp(settings_for(tmp_path, **{"completion.auto": False}), path, environ=env, watch=False)
    async with app.run_test(size=(100, 30)) as pilot:
        editor = app.active_editor
        await pilot.pause()
        assert not editor.show_vertical_scrollbar
        height = editor.content_size.height
        await pilot.press("ctrl+end", *["enter"] * (height + 10), *"y = 2")
        await pilot.pause()
        row = editor.cursor_location[0]
        assert row == height + 11 and editor.document[row] == "y = 2"
        assert editor.virtual_size.height == editor.document.line_count
        assert editor.show_vertical_scrollbar and editor.vertical_scrollbar.display
        assert editor.scroll_offset.y <= row < editor.scroll_offset.y + editor.content_size.height
        assert editor.render_line(row - editor.scroll_offset.y).text[editor.gutter_width:].rstrip() == "y = 2"
        await pilot.press("home", *["backspace"] * (height + 10))
        await pilot.pause()
        assert editor.document.line_count == 2 and editor.document[1] == "y = 2"
        assert not editor.show_vertical_scrollbar and editor.scroll_offset.y == 0
