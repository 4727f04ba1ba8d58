"""Alternative suggestions in the real app (demo model): distinct, cycled with Alt+] / Alt+[,
Tab accepts the one shown, an edit stops them."""

from __future__ import annotations

from textual import events

from specterm.tui.app import SpectermApp

from .conftest import CURSOR_AFTER_DEF, REPETITIVE, wait_for


async def shown_with_alternatives(pilot, app):
    await wait_for(pilot, app.engine_ready.is_set)
    editor = app.active_editor
    editor.move_cursor(CURSOR_AFTER_DEF)
    editor.action_complete()  # a move alone asks for nothing (issue 33)
    await wait_for(pilot, lambda: editor.ghost_text and not editor.completion_pending)
    return editor


async def test_alternatives_cycle_and_tab_accepts_the_one_shown(project, settings_for, env):
    app = SpectermApp(settings_for(project), project / "adders.py", environ=env, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = await shown_with_alternatives(pilot, app)
        alts = editor.suggest.ghost.alternatives
        await wait_for(pilot, lambda: alts.done, timeout=60)
        options = list(alts.options)
        assert 2 <= len(options) <= 3 and len(set(options)) == len(options)
        assert editor.alternatives_marker == f"1/{len(options)}"
        first = editor.ghost_text

        seen = [first]
        for i in range(1, len(options)):
            await pilot.press("alt+right_square_bracket")
            assert editor.alternatives_marker == f"{i + 1}/{len(options)}"
            seen.append(editor.ghost_text)
        assert len(set(seen)) == len(options)  # each one shown
        await pilot.press("alt+right_square_bracket")  # round to the first
        assert editor.ghost_text == first and editor.alternatives_marker.startswith("1/")
        await pilot.press("alt+left_square_bracket")  # back to the last
        assert editor.ghost_text == seen[-1]
        # What a terminal without the kitty protocol sends (ESC n, ESC p): alt+n carrying the
        # printable "n", which must cycle, not type.
        app._driver.send_message(events.Key("alt+n", "n"))
        await pilot.pause()
        assert editor.ghost_text == first
        app._driver.send_message(events.Key("alt+p", "p"))
        await pilot.pause()
        shown = editor.ghost_text
        assert shown == seen[-1]
        assert editor.text == REPETITIVE  # cycling never touches the document

        await pilot.press("tab")
        assert editor.text == REPETITIVE[:-1] + shown + "\n"
        assert editor.ghost_text == "" and editor.alternatives_marker == ""


async def test_an_edit_stops_the_alternatives(project, settings_for, env):
    app = SpectermApp(settings_for(project, **{"completion.auto": False}), project / "adders.py",
                      environ=env, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        editor = app.active_editor
        editor.move_cursor(CURSOR_AFTER_DEF)
        await pilot.press("ctrl+space")
        await wait_for(pilot, lambda: editor.suggest.ghost is not None
                       and editor.suggest.ghost.alternatives is not None)
        alts = editor.suggest.ghost.alternatives
        await pilot.press("ctrl+home")  # a cursor move dismisses the suggestion
        tried, found = len(alts.tried), len(alts.options)
        assert editor.suggest.ghost is None and alts.fetching is None
        await wait_for(pilot, lambda: alts.done, timeout=30)
        assert len(alts.tried) == tried and len(alts.options) == found  # no rank asked for after
        await pilot.press("x")  # and an edit leaves nothing running in the engine
        await wait_for(pilot, lambda: app.completer._active is None, timeout=30)
        assert editor.alternatives_marker == ""
