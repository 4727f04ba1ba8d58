"""Issue 33, in the real app with the real demo model: no suggestion after a cursor move alone (End
and ctrl+right there move the cursor), the accept keys from `[keys]` in config.toml (checked with
a clear error), the info line's "first text" counted from the complete key, and the alternative
suggestion keys in the command palette."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from specterm.tui.config import ConfigError, load_settings
from specterm.tui.widgets.ghost import next_line
from specterm.tui.widgets.suggestions import info_line

from .conftest import CURSOR_AFTER_DEF, REPETITIVE, make_app, user_requests, wait_for

RETURN_LINE = 1  # "    return x + 1"


async def typed_ghost(pilot, app, location=CURSOR_AFTER_DEF) -> str:
    """Type a character where a suggestion is wanted and take it back: the typing pause asks."""
    await wait_for(pilot, app.engine_ready.is_set)
    editor = app.active_editor
    editor.move_cursor(location)
    await pilot.press("space", "backspace")
    await wait_for(pilot, lambda: editor.ghost_text and not editor.completion_pending, timeout=120)
    return editor.ghost_text


async def test_a_cursor_move_alone_shows_no_suggestion_and_end_moves_the_cursor(project, settings_for, env):
    app = make_app(settings_for(project), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        editor = app.active_editor
        await pilot.pause(0.3)
        asked = user_requests(app)
        for location in (CURSOR_AFTER_DEF, (RETURN_LINE, len("    return x"))):  # end, middle of a line
            editor.move_cursor(location)
            await pilot.pause(0.1)
            assert not editor.completion_pending  # no typing pause is timed after a move
            await asyncio.sleep(1.0)  # far past the 50 ms pause the old code waited for
            await pilot.pause(0.1)
            assert editor.ghost_text == "" and user_requests(app) == asked
        await pilot.press("end")  # moves to the end of the line: nothing inserted
        assert editor.text == REPETITIVE and editor.cursor_location == (RETURN_LINE, len("    return x + 1"))
        await pilot.press("home", "ctrl+right")
        assert editor.text == REPETITIVE and editor.cursor_location[0] == RETURN_LINE

        # After typing, a suggestion comes as before, and End takes its next line.
        ghost = await typed_ghost(pilot, app)
        before = editor.text
        await pilot.press("end")
        assert editor.text == before[:-1] + next_line(ghost) + "\n"  # (at the end of the file's last line)


async def test_the_accept_keys_come_from_the_keys_section(project, settings_for, env):
    settings = settings_for(project, **{"keys.accept": "f2, ctrl+y", "keys.accept_line": ""})
    app = make_app(settings, project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        ghost = await typed_ghost(pilot, app)
        before = editor.text
        await pilot.press("end")  # no longer an accept key: the cursor is at the line end already
        assert editor.text == before and editor.ghost_text == ghost
        await pilot.press("f2")
        assert editor.text == before[:-1] + ghost + "\n"
        titles = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert "(f2, ctrl+y)" in titles["Accept suggestion"]
        assert "no key" in titles["Accept next line"] and "(ctrl+right)" in titles["Accept next word"]


def test_accept_keys_are_checked_with_a_clear_error(env, tmp_path):
    settings = load_settings(project_dir=tmp_path, env=env)
    assert (settings.keys.accept, settings.keys.accept_word, settings.keys.accept_line) == ("tab", "ctrl+right", "end")
    ok = load_settings(project_dir=tmp_path, env=env, overrides={"keys.accept": "Tab, F2"})
    assert ok.keys.accept == "Tab, F2"
    bad = {
        "ctlr+right": r"'keys.accept_word' names an unknown key \"ctlr\+right\" \(modifiers: ctrl",
        "ctrl+rigth": r'unknown key "ctrl\+rigth"; did you mean "ctrl\+right"\?',
        "x": r'may not use "x": it types a character',
        "escape": r'may not use "escape": it dismisses',
        "tab,,end": r"empty key name",
    }
    for value, message in bad.items():
        with pytest.raises(ConfigError, match=message):
            load_settings(project_dir=tmp_path, env=env, overrides={"keys.accept_word": value})
    (tmp_path / ".specterm.toml").write_text('[keys]\naccept_line = "tab"\n')
    with pytest.raises(ConfigError, match=r"'keys.accept_line' \(from .*specterm.toml\) and 'keys.accept' "
                                          r"\(from built-in defaults\) both use \"tab\""):
        load_settings(project_dir=tmp_path, env=env)
    (tmp_path / ".specterm.toml").write_text("[keys]\naccept = 1\n")
    with pytest.raises(ConfigError, match=r"'keys.accept' must be a string"):
        load_settings(project_dir=tmp_path, env=env)


async def test_first_text_counts_from_the_complete_key(project, settings_for, env):
    app = make_app(settings_for(project, **{"completion.auto": False}), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        editor = app.active_editor
        editor.move_cursor(CURSOR_AFTER_DEF)
        await asyncio.sleep(1.0)  # the user reads for a while, then asks
        asked_at = time.monotonic()
        await pilot.press("ctrl+space")
        await wait_for(pilot, lambda: editor.ghost_text and not editor.completion_pending, timeout=120)
        record = app.completer.log.last_shown()
        assert record is not None and record.keystroke_at >= asked_at
        shown = int(re.search(r"first text (\d+) ms", info_line(record))[1])
        assert shown <= (record.first_text_at - asked_at) * 1000 + 1


async def test_the_palette_has_the_alternative_suggestion_keys(project, settings_for, env):
    app = make_app(settings_for(project, **{"completion.auto": False}), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        nxt, prev = commands["Next alternative suggestion"], commands["Previous alternative suggestion"]
        assert "alt+]" in nxt.help and "alt+n" in nxt.help
        assert "alt+[" in prev.help and "alt+p" in prev.help
        assert "(tab)" in commands["Accept suggestion"].help  # the default keys
        editor = app.active_editor
        editor.move_cursor(CURSOR_AFTER_DEF)
        await pilot.press("ctrl+space")
        await wait_for(pilot, lambda: editor.suggest.ghost is not None and editor.suggest.ghost.alternatives is not None
                       and editor.suggest.ghost.alternatives.done and not editor.completion_pending, timeout=120)
        assert len(editor.suggest.ghost.alternatives.options) >= 2  # (as test_alternatives.py finds here)
        first = editor.ghost_text
        nxt.callback()
        assert editor.ghost_text != first and editor.alternatives_marker.startswith("2/")
        prev.callback()
        assert editor.ghost_text == first and editor.alternatives_marker.startswith("1/")
