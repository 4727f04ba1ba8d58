"""Edit by instruction in the real app with the demo model: the key, the instruction box and its
history, the streamed diff, and the review. Whatever the weak demo model writes, the buffer must
end byte for byte as the user chose: computed from the rewrite it streamed (Finished.text) and the
choices made; the file on disk changes only on save."""

from __future__ import annotations

from pathlib import Path

import pytest

from specterm.engine.edit_prompt import build_edit_prompt
from specterm.tui.edit.diff import EditDiff
from specterm.tui.edit.region import target_for
from specterm.tui.edit.review import EditReview
from specterm.tui.widgets.chat import Exchange
from specterm.tui.widgets.highlight import highlight_map

from .conftest import make_app, wait_for

SOURCE = (
    "import math\n"
    "\n"
    "\n"
    "def area(radius):\n"
    "    result = math.pi * radius * radius\n"
    "    return result\n"
    "\n"
    "\n"
    "def perimeter(radius):\n"
    "    return 2 * math.pi * radius\n"
)
INSIDE_AREA = (4, 8)  # the cursor inside area(): the region is that function
AREA = "def area(radius):\n    result = math.pi * radius * radius\n    return result\n"
INSTRUCTION = "rename result to value and add a docstring"
GENERATION_S = 400  # the demo model on a loaded 2-core box


@pytest.fixture
def circle(project: Path) -> Path:
    path = project / "circle.py"
    path.write_text(SOURCE)
    return path


async def _ready(pilot, app) -> None:
    await wait_for(pilot, lambda: app.engine_ready.is_set() and app.active_editor is not None, 120)
    app.active_editor.focus()
    await pilot.pause()


async def _type(pilot, text: str) -> None:
    await pilot.press(*[{" ": "space"}.get(ch, ch) for ch in text])


async def _open_box(pilot, app, at=INSIDE_AREA):
    editor = app.active_editor
    editor.move_cursor(at)
    await pilot.press("ctrl+r")
    await wait_for(pilot, lambda: app.edits.box is not None and app.edits.box.has_focus, 10)
    return app.edits.box


async def _rewrite(pilot, app, instruction: str | None = INSTRUCTION) -> EditReview | None:
    """Open the box, send `instruction` (None: the last one, recalled with up), wait for the
    rewrite's end; the review (None: it ended at once, the model changed nothing)."""
    box = await _open_box(pilot, app)
    if instruction is None:
        await pilot.press("up")
        assert box.value == app.edits.history.items[-1]
    else:
        await _type(pilot, instruction)
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.edits.finished is not None, GENERATION_S)
    await pilot.pause()
    return app.edits.review


def _expected(app, choices: list[bool] | None) -> str:
    """The file after the user's choices: None accepts all, else one decision per hunk in order."""
    request, finished = app.edits.request, app.edits.finished
    diff = EditDiff(request.region)
    diff.update(finished.text, final=True, cut=finished.reason == "length")
    for hunk, take in zip(diff.hunks, choices or [True] * len(diff.hunks)):
        hunk.accepted = take
    return request.before + diff.result() + request.after


async def test_review_reject_all_per_hunk_accept_all_undo_and_save(circle, settings_for, env):
    """One instruction three times (the same greedy rewrite): rejected, decided hunk by hunk,
    accepted; each leaves the buffer as chosen, the disk as it was until ctrl+s."""
    app = make_app(settings_for(circle.parent), circle, env)
    async with app.run_test(size=(120, 40)) as pilot:
        await _ready(pilot, app)
        editor = app.active_editor
        review = await _rewrite(pilot, app)
        request = app.edits.request
        assert request.region == AREA and request.before + AREA + request.after == SOURCE
        assert request.path == "circle.py"  # relative to the opened folder
        assert review is not None, f"the demo model changed nothing: {app.edits.finished}"
        assert not editor.display and review.view.display
        assert "a accept all" in str(review.query_one("#edit-bar").render())
        assert app.edits.sent_at <= review.first_change_at  # what the bench times
        view = review.view
        for index, row in enumerate(review.diff.rows):  # drawn in place of the region, as code
            strip = view.render_line(view.diff_row_y(index) - int(view.scroll_offset.y))
            struck = any(seg.style is not None and seg.style.strike for seg in strip if seg.text.strip())
            assert struck == (row.kind == "removed"), (row, strip.text)
            mark = strip.text[view.editor.gutter_width]  # after the line number
            assert mark == {"removed": "-", "added": "+"}.get(row.kind, " "), (row, strip.text)
            assert row.text.strip() in strip.text
        await pilot.press("x", "backspace", "enter")  # other keys do nothing while reviewing
        assert app.edits.review is review and editor.text == SOURCE
        await pilot.press("r")
        await wait_for(pilot, lambda: app.edits.review is None and editor.has_focus, 10)
        assert editor.text == SOURCE
        await pilot.press("ctrl+z")
        assert editor.text == SOURCE  # a rejected edit left nothing to undo
        assert app.completer.blocked_by is None  # completions run again

        review = await _rewrite(pilot, app, None)  # recalled from the history
        assert review is not None
        choices = [i % 2 == 1 for i in range(len(review.diff.hunks))]  # reject, accept, reject...
        for take in choices:
            await pilot.press("y" if take else "n")
        await wait_for(pilot, lambda: app.edits.review is None, 10)
        assert editor.text == _expected(app, choices)
        if any(choices):
            await pilot.press("ctrl+z")
        assert editor.text == SOURCE

        review = await _rewrite(pilot, app, None)
        assert review is not None
        expected = _expected(app, None)
        assert expected != SOURCE
        await pilot.press("a")
        await wait_for(pilot, lambda: app.edits.review is None and editor.has_focus, 10)
        assert editor.text == expected
        assert circle.read_text() == SOURCE  # nothing on disk until the user saves
        await pilot.press("ctrl+z")
        assert editor.text == SOURCE  # one undo step gives back the original exactly
        await pilot.press("ctrl+y")
        assert editor.text == expected
        assert circle.read_text() == SOURCE
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: circle.read_text() == expected, 10)


async def _review_of_area(app, on_done=lambda text: None) -> EditReview:
    """A review of area() mounted in the editor's pane, as the flow mounts one, fed by the test."""
    editor = app.active_editor
    review = EditReview(editor, target_for(editor.document.lines, 3, 6), "Edit", on_done, lambda: None)
    await editor.parent.mount(review, after=editor)
    return review


async def test_the_diff_is_drawn_while_the_rewrite_streams(circle, settings_for, env):
    """The first text at once, then batches while it streams: a changed first line shows before
    the rewrite ends (the lines it has not reached wait as pending, not removed)."""
    app = make_app(settings_for(circle.parent), circle, env)
    async with app.run_test(size=(120, 40)) as pilot:
        await _ready(pilot, app)
        ended: list[str | None] = []
        review = await _review_of_area(app, ended.append)
        review.stream_text("def area(r")
        assert review.diff.new_text == "def area(r"  # drawn at once
        review.stream_text("def area(r):\n")
        await wait_for(pilot, lambda: review.first_change_at is not None, 5)
        assert review.streaming and not ended
        assert [row.kind for row in review.diff.rows] == ["removed", "added", "pending", "pending"]
        review.stream_text("def area(r):\n    result = math.pi * r * r\n")
        await wait_for(pilot, lambda: review.diff.new_text.count("\n") == 2, 5)
        assert [row.kind for row in review.diff.rows] == ["removed", "removed", "added", "added", "pending"]


async def test_what_the_screen_shows_while_streaming_is_the_diff(circle, settings_for, env):
    """Each redraw asks for the rows that show something else, and only those: what the
    screen then shows in the view is, row by row, the diff so far (no row left as it was),
    while it streams and once it has ended."""
    app = make_app(settings_for(circle.parent), circle, env)
    async with app.run_test(size=(120, 40)) as pilot:
        await _ready(pilot, app)
        review = await _review_of_area(app)
        view = review.view
        digits = review.editor.gutter_width - 1

        async def screen_matches(what: str) -> None:
            await pilot.pause(0.3)
            strips = app.screen._compositor.render_strips()
            box = view.content_region
            for y in range(box.height):
                line = strips[box.y + y].text[box.x:box.right]
                look = view._row_look(int(view.scroll_offset.y) + y)
                if look is not None:
                    gutter = f"{look.number:>{digits}} {look.mark}"
                    assert line.startswith(gutter) and look.line.strip() in line, (what, y, look, line)

        kinds = []
        for text in ("def area(rad", "def area(radius):\n    res", "def area(radius):\n    result = 2 * ",
                     "def area(radius):\n    result = 2 * radius\n    return result\n"):
            review.stream_text(text)
            await screen_matches(text)
            kinds.append([row.kind for row in review.diff.rows])
        assert kinds[0] == ["pending", "pending", "pending"]  # on its way to copy the first line
        assert kinds[1] == ["same", "pending", "pending"]
        assert kinds[2] == ["same", "added", "pending", "pending"]
        review.finish("def area(radius):\n    result = 2 * radius\n    return result\n", cut=False)
        await screen_matches("final")
        assert [row.kind for row in review.diff.rows] == ["same", "removed", "added", "same"]


async def test_the_instruction_is_read_as_it_is_typed(circle, settings_for, env):
    """The box reads the prompt when it opens and then each word of the instruction once the next
    one starts: Enter leaves the last word and the answer's header to read."""
    app = make_app(settings_for(circle.parent), circle, env)
    async with app.run_test(size=(120, 40)) as pilot:
        await _ready(pilot, app)

        def reading() -> bool:
            return any(w.group == "edit-prewarm" and not w.is_finished for w in app.workers)

        await _open_box(pilot, app)
        await _type(pilot, "rename result to value and add a")
        await wait_for(pilot, lambda: not reading(), 60)
        await _type(pilot, " docstring")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.edits.finished is not None, GENERATION_S)
        request, stats = app.edits.request, app.edits.finished.stats
        assert request.instruction == "rename result to value and add a docstring"
        target = app.engine.target
        header = build_edit_prompt(request, request.before, request.after).answer_start
        last = len(target.tokenize(" a docstring")) + len(target.tokenize(header))
        assert 0 < stats.prompt_tokens_decoded <= last, (stats.prompt_tokens_decoded, last)


async def test_streamed_colours_are_those_of_the_whole_text(circle, settings_for, env):
    """While it streams only the rewrite's tail is lexed again: at every step the colours equal
    a whole lex of the text so far (a docstring and a comment across the steps), and the final
    text is lexed whole."""
    rewrite = ('def area(radius):\n    """The area.\n\n    # not a comment\n    """\n'
               "    # a comment\n    value = math.pi * radius * radius  # r squared\n"
               "    text = 'a' + \"b\"\n    return value\n")
    app = make_app(settings_for(circle.parent), circle, env)
    async with app.run_test(size=(120, 40)) as pilot:
        await _ready(pilot, app)
        review = await _review_of_area(app)
        view, lexer = review.view, review.editor._lexer
        for end in range(1, len(rewrite) + 1, 7):
            review.diff.update(rewrite[:end], final=False)
            view.update_diff()
            assert view._new_highlights == dict(highlight_map(lexer, rewrite[:end])), rewrite[:end]
        review.diff.update(rewrite, final=True)
        view.update_diff()
        assert view._new_highlights == dict(highlight_map(lexer, rewrite))


async def test_box_history_empty_instruction_no_region_and_escape_mid_stream(circle, project, settings_for, env):
    app = make_app(settings_for(circle.parent), circle, env)
    async with app.run_test(size=(120, 40)) as pilot:
        await _ready(pilot, app)
        said: list[str] = []  # every notice (a short one may expire before a slow box looks)
        show = app.notify
        app.notify = lambda message, **kw: (said.append(message), show(message, **kw))[1]
        editor = app.active_editor
        box = await _open_box(pilot, app)
        assert editor.selected_text == AREA  # the region is shown
        await pilot.press("enter")  # empty: nothing is sent, the box stays
        await pilot.pause()
        assert app.edits.box is box and app.edits.request is None
        assert any("Type what should change" in message for message in said)
        await _type(pilot, "first")
        await pilot.press("escape")  # closes the box: nothing changed, the cursor back where it was
        await wait_for(pilot, lambda: app.edits.box is None and editor.has_focus, 10)
        assert editor.text == SOURCE and editor.cursor_location == INSIDE_AREA
        assert app.completer.blocked_by is None and app.edits.history.items == []

        await _open_box(pilot, app)
        await _type(pilot, "rewrite it with comments on every line")
        await pilot.press("enter")
        review = app.edits.review
        assert review is not None and not editor.display
        await wait_for(pilot, lambda: bool(review.diff.new_text) or app.edits.finished is not None, GENERATION_S)
        streaming = app.edits.finished is None
        await pilot.press("escape")  # mid-stream: stop, the region as it was
        await wait_for(pilot, lambda: app.edits.review is None and editor.display and editor.has_focus, 10)
        assert editor.text == SOURCE
        await wait_for(pilot, lambda: app.edits.finished is not None and not app.edits.active, GENERATION_S)
        if streaming:
            assert app.edits.finished.reason == "cancelled"
        assert app.completer.blocked_by is None
        await pilot.press("ctrl+z")
        assert editor.text == SOURCE and circle.read_text() == SOURCE

        box = await _open_box(pilot, app)
        await _type(pilot, "draft")
        await pilot.press("up")
        assert box.value == "rewrite it with comments on every line"
        await pilot.press("up")
        assert box.value == "rewrite it with comments on every line"  # the oldest stays
        await pilot.press("down")
        assert box.value == "draft"  # past the newest: what was being typed
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.edits.box is None, 10)

        path = project / "long.py"  # no block, no selection, too long for the whole file
        text = "".join(f"x{i} = {i}\n" for i in range(60)) + "\n\n" + "".join(f"y{i} = {i}\n" for i in range(60))
        path.write_text(text)
        await app.open_file(path)
        await wait_for(pilot, lambda: app.active_editor is not None and app.active_editor.path == path, 10)
        app.active_editor.focus()
        app.active_editor.move_cursor((61, 0))
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert app.edits.box is None and not app.edits.active
        assert any("Nothing to rewrite here" in message for message in said)
        assert app.active_editor.text == text


async def test_apply_from_chat_is_a_reviewed_merge_not_a_paste(circle, settings_for, env):
    app = make_app(settings_for(circle.parent), circle, env)
    async with app.run_test(size=(120, 40)) as pilot:
        await _ready(pilot, app)
        editor = app.active_editor
        editor.move_cursor((0, 0))
        block = 'def perimeter(radius):\n    """The circumference."""\n    ...\n'  # a fragment: merged
        app.chat.history.append(Exchange("document it", answer=f"Like this:\n```python\n{block}```\n", finished=True))
        await pilot.press("alt+a")
        await wait_for(pilot, lambda: app.edits.request is not None, 10)
        request = app.edits.request
        assert request.region == "def perimeter(radius):\n    return 2 * math.pi * radius\n"  # what it redefines
        assert block in request.instruction
        assert editor.text == SOURCE  # nothing pasted
        await wait_for(pilot, lambda: app.edits.finished is not None, GENERATION_S)
        await pilot.pause()
        review = app.edits.review
        assert review is not None, f"the demo model changed nothing: {app.edits.finished}"
        await pilot.press("a")
        await wait_for(pilot, lambda: app.edits.review is None, 10)
        assert editor.text == _expected(app, None) != SOURCE
        assert circle.read_text() == SOURCE

