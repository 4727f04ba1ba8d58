"""Switching themes in the running app (issue #33): every shipped theme loads with unsaved work
open, a theme that cannot build the stylesheet is refused and never saved, a saved one that no
longer loads gives way to the default, and every way of picking a theme saves it the same way."""

from __future__ import annotations

from pathlib import Path

import pytest
import textual.constants
from textual.command import CommandPalette

from specterm.tui.config import user_config_path
from specterm.tui.themes import DEFAULT_THEME, load_themes

from .conftest import make_app, wait_for

SHIPPED = sorted(load_themes(None)[0])
# A user theme whose colours Textual's CSS cannot use: a variable that is no colour.
BROKEN_VARS = 'name = "broken-vars"\n[colors]\nprimary = "#ff0000"\n[variables]\n"border" = "no-such-colour"\n'


def unsaved_texts(app) -> dict[str, str]:
    """Open files whose text differs from the disk: the work a crash would lose."""
    editors = [f.editor for f in app.editor_tabs.files.values()]
    return {e.path.name: e.text for e in editors if e.text != e.path.read_text()}


def palette_options(app) -> list[str] | None:
    """The prompts the open command palette lists (None while it is not up yet)."""
    if not isinstance(app.screen, CommandPalette) or not app.screen.query("CommandList"):
        return None
    command_list = app.screen.query_one("CommandList")
    prompts = (str(command_list.get_option_at_index(i).prompt) for i in range(command_list.option_count))
    return [prompt.split("\n")[0] for prompt in prompts]  # the titles, without their help lines


def messages(app) -> list[str]:
    return [n.message for n in app._notifications]


async def _dirty_tabs(app, pilot, project: Path) -> None:
    await wait_for(pilot, lambda: app.active_editor is not None)
    await pilot.press("x")
    await app.open_file(project / "notes.md")
    await wait_for(pilot, lambda: app.active_editor is not None and app.active_editor.path.name == "notes.md")
    await pilot.press("y")
    await wait_for(pilot, lambda: len(unsaved_texts(app)) == 2)


async def test_every_shipped_theme_loads_with_unsaved_work_open(project, settings_for, env):
    app = make_app(settings_for(project, **{"completion.auto": False}), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        await _dirty_tabs(app, pilot, project)
        unsaved = unsaved_texts(app)
        assert unsaved["notes.md"].startswith("y# Notes") and unsaved["adders.py"].startswith("x")
        # The ANSI theme through the palette, as a person picks it (it stopped the app)...
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"specterm-ansi")
        await wait_for(pilot, lambda: (palette_options(app) or [""])[0].startswith("Theme: specterm-ansi"))
        await pilot.press("enter")
        # ...and every shipped theme through the same palette commands.
        for name in ["specterm-ansi", *SHIPPED]:
            if name != app.theme:
                commands = {c.title: c for c in app.get_system_commands(app.screen)}
                commands[f"Theme: {name}"].callback()
            await wait_for(pilot, lambda name=name: app.theme == name, timeout=10)
            await pilot.pause(0.2)  # the stylesheet refresh runs after the switch
            assert app.is_running, f"the app stopped on theme {name}"
            assert not [m for m in messages(app) if "cannot be used" in m], name
            assert f'theme = "{name}"' in app.user_config.read_text()
            assert unsaved_texts(app) == unsaved


async def test_a_theme_that_cannot_load_is_refused_and_not_saved(project, settings_for, env):
    app = make_app(settings_for(project), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        await pilot.press("x")
        app.user_theme_dir.mkdir(parents=True, exist_ok=True)
        (app.user_theme_dir / "broken-vars.toml").write_text(BROKEN_VARS)
        app.reload_themes()
        assert "Theme: broken-vars" in [c.title for c in app.get_system_commands(app.screen)]
        app.action_set_theme("broken-vars")
        await pilot.pause(0.2)
        assert app.is_running
        assert app.theme == DEFAULT_THEME
        refused = [m for m in messages(app) if "broken-vars cannot be used" in m]
        assert refused and "no-such-colour" in refused[0] and "not saved" in refused[0]
        assert not app.user_config.exists() or "broken-vars" not in app.user_config.read_text()
        # A reload of the applied theme's file that breaks it is refused the same way.
        app.action_set_theme("nord")
        await pilot.pause(0.2)
        (app.user_theme_dir / "nord.toml").write_text(BROKEN_VARS.replace("broken-vars", "nord"))
        app.reload_themes()
        await pilot.pause(0.2)
        assert app.is_running and app.theme == "nord"
        assert any("nord cannot be used" in m for m in messages(app))
        await pilot.press("a")
        assert app.active_editor.text.startswith("xa")


async def test_a_saved_theme_that_no_longer_loads_falls_back_to_the_default(project, settings_for, env):
    user_config = user_config_path(env)
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text('[ui]\ntheme = "broken-vars"\n')
    (user_config.parent / "themes").mkdir()
    (user_config.parent / "themes" / "broken-vars.toml").write_text(BROKEN_VARS)
    app = make_app(settings_for(project), project / "adders.py", env)  # reads the saved choice
    assert app.settings.ui.theme == "broken-vars"
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.theme == DEFAULT_THEME
        assert any("broken-vars cannot be used" in m for m in messages(app))  # (before they time out)
        assert any(f"Using {DEFAULT_THEME} instead of broken-vars" in m for m in messages(app))
        await wait_for(pilot, app.engine_ready.is_set)
        assert app.is_running
        await pilot.press("z")
        assert app.active_editor.text.startswith("z")


async def test_textual_theme_picker_offers_the_same_themes_and_saves_the_choice(project, settings_for, env):
    app = make_app(settings_for(project), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert [t for t in titles if t.startswith("Theme: ")] == [f"Theme: {name}" for name in SHIPPED]
        app.action_change_theme()  # what the palette's "Theme" entry runs
        await wait_for(pilot, lambda: (palette_options(app) or []) == [f"Theme: {name}" for name in SHIPPED])
        await pilot.press(*"nord")
        await wait_for(pilot, lambda: palette_options(app) == ["Theme: nord"])
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.theme == "nord", timeout=10)
        assert 'theme = "nord"' in app.user_config.read_text()


@pytest.mark.parametrize("system", ["standard", "256"])
async def test_sixteen_colours_pick_the_ansi_theme_by_itself(project, settings_for, env, monkeypatch, system):
    monkeypatch.setattr(textual.constants, "COLOR_SYSTEM", system)
    app = make_app(settings_for(project), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        if system == "standard":
            assert app.theme == "specterm-ansi"
            assert any("only 16 colours" in m for m in messages(app))
        else:
            assert app.theme == DEFAULT_THEME
        assert not app.user_config.exists()  # a session's fallback, not the user's choice
        await wait_for(pilot, app.engine_ready.is_set)
