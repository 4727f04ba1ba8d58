"""Code blocks from chat answers: extraction, insertion at the cursor (one undo step), copying."""

from specterm.tui.widgets.chat import ChatPane, Exchange, code_blocks

from .conftest import make_app


def test_code_blocks_are_extracted_in_order_including_an_unterminated_last_one():
    answer = "Try:\n```python\nx = 1\n```\nor\n```\ny = 2\n"
    assert code_blocks(answer) == ["x = 1\n", "y = 2\n"]
    assert code_blocks("no code here") == []


async def test_insert_code_block_replaces_the_selection_and_undoes_in_one_step(project, settings_for, env):
    app = make_app(settings_for(project, **{"completion.auto": False}), project / "notes.md", env)
    async with app.run_test(size=(120, 40)) as pilot:
        chat = app.query_one(ChatPane)
        chat.history.append(Exchange("q", "Here:\n```python\nprint('hi')\n```\n", finished=True))
        editor = app.active_editor
        before = editor.text
        editor.select_line(2)
        app.action_insert_code_block()
        await pilot.pause()
        assert "print('hi')\n" in editor.text and "Nothing here yet." not in editor.text
        await pilot.press("ctrl+z")
        assert editor.text == before
        app.action_copy_code_block()
        assert app.clipboard == "print('hi')\n"
