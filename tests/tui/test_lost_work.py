"""Lost work found by trying specterm as a new user (issue 33): a deleted file's text that quit
threw away, a "saving will ask" promise broken by a file deleted and written again, and saves that
failed without a word. Each drives the real app through Pilot, on real files, with real watchfiles
events where the disk changes behind the app's back."""

from __future__ import annotations

import os
import shutil
import stat

import pytest
from textual import events
from textual.keys import _character_to_key

from specterm.tui.screens.choice import ChoiceScreen

from .conftest import make_app, wait_for

NO_COMPLETIONS = {"completion.auto": False}
NOTES = "# Notes\n\nNothing here yet.\n"


def notices(app) -> list[str]:
    """Every notification shown so far, title and message together."""
    return [f"{n.title}: {n.message}" for n in app._notifications]


async def dialog(pilot, app, timeout: float = 10) -> ChoiceScreen:
    await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen) and app.focused is not None, timeout=timeout)
    return app.screen


async def type_text(pilot, app, text: str) -> None:
    """Type `text` as a terminal sends it: one key event per character, named as Textual names it
    (Pilot.press cannot type "€": it finds no character for the key name "euro_sign")."""
    for char in text:
        app.post_message(events.Key(char if char.isalnum() else _character_to_key(char), char))
    await pilot.pause()


async def answer(pilot, app, answer_id: str) -> None:
    """Click the dialog's answer `answer_id` and wait for the dialog to go."""
    screen = app.screen
    await pilot.click(f"#answer-{answer_id}")
    await wait_for(pilot, lambda: app.screen is not screen, timeout=10)


# -- a deleted file's buffer is unsaved work --------------------------------------------------------


async def test_quit_asks_about_a_clean_buffer_whose_file_was_deleted(project, settings_for, env):
    """The tab said "(deleted)" but ctrl+q quit at once: the buffer was the text's last copy."""
    path = project / "notes.md"
    app = make_app(settings_for(project, **NO_COMPLETIONS), path, env, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.watcher.ready.is_set())
        open_file = app.active_file
        path.unlink()
        await wait_for(pilot, lambda: open_file.deleted, timeout=20)
        assert not open_file.dirty  # no edits: only the disk lost the text

        await pilot.press("ctrl+q")
        screen = await dialog(pilot, app)
        assert "notes.md" in screen.question and "deleted" in screen.question
        await pilot.press("escape")  # Cancel
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        assert app.is_running

        app.post_message(events.Key("alt+w", "w"))  # closing the tab asks too
        screen = await dialog(pilot, app)
        assert "notes.md" in screen.question and "deleted" in screen.question
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        assert len(app.editor_tabs.files) == 1

        await pilot.press("ctrl+q")
        await dialog(pilot, app)
        await answer(pilot, app, "save")  # "Save all and quit" writes it again
        await wait_for(pilot, lambda: not app.is_running, timeout=10)
    assert path.read_text() == NOTES


# -- "Keep my edits" keeps its promise ----------------------------------------------------------------


async def test_keep_my_edits_over_a_file_deleted_and_written_again_still_asks_before_saving(
    project, settings_for, env
):
    """Edited, deleted on disk, written again by another program, "Keep my edits": the notice
    promises that saving will ask, but ctrl+s overwrote the other program's text (the tab still
    thought the file was deleted)."""
    path = project / "notes.md"
    app = make_app(settings_for(project, **NO_COMPLETIONS), path, env, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.watcher.ready.is_set())
        open_file = app.active_file
        await pilot.press("x")
        path.unlink()
        await wait_for(pilot, lambda: open_file.deleted, timeout=20)
        path.write_text("written by another program\n")
        screen = await dialog(pilot, app, timeout=20)
        assert "changed on disk" in screen.question
        await pilot.press("escape")  # "Keep my edits"
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        assert any("ask before overwriting" in n for n in notices(app))

        await pilot.press("ctrl+s")
        screen = await dialog(pilot, app)
        assert "Overwrite" in screen.question
        await pilot.press("escape")  # Cancel
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        assert path.read_text() == "written by another program\n"
        assert open_file.dirty

        await pilot.press("ctrl+s")
        await dialog(pilot, app)
        await answer(pilot, app, "overwrite")
        await wait_for(pilot, lambda: not open_file.dirty, timeout=10)
        assert path.read_text() == "x" + NOTES
        assert "(deleted)" not in app.editor_tabs.tab_label(open_file)  # it is on disk again


async def test_save_all_and_quit_asks_before_overwriting_a_file_changed_on_disk(project, settings_for, env):
    """"Save all and quit" (and "Save and close") wrote over a disk version the user never saw."""
    path = project / "notes.md"
    app = make_app(settings_for(project, **NO_COMPLETIONS), path, env)  # no watcher: only the save sees it
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("x")
        path.write_text("written by another program\n")

        app.post_message(events.Key("alt+w", "w"))
        await dialog(pilot, app)
        await answer(pilot, app, "save")  # "Save and close"
        screen = await dialog(pilot, app)
        assert "Overwrite" in screen.question
        await pilot.press("escape")  # Cancel: the tab stays open, the disk as the other program left it
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        assert len(app.editor_tabs.files) == 1 and app.active_file.dirty
        assert path.read_text() == "written by another program\n"

        await pilot.press("ctrl+q")
        await dialog(pilot, app)
        await answer(pilot, app, "save")  # "Save all and quit"
        screen = await dialog(pilot, app)
        assert "Overwrite" in screen.question
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        await pilot.pause(0.2)
        assert app.is_running and app.active_file.dirty
        assert path.read_text() == "written by another program\n"
        assert any("not saved" in n.lower() and "notes.md" in n for n in notices(app))


# -- a save that fails says why -------------------------------------------------------------------------


async def test_text_latin1_cannot_hold_offers_to_save_as_utf8(project, settings_for, env):
    """`€→` typed into a Latin-1 file: ctrl+s did nothing, no word, the buffer still dirty."""
    path = project / "latin.txt"
    path.write_bytes("café\n".encode("latin-1"))
    app = make_app(settings_for(project, **NO_COMPLETIONS), path, env)
    async with app.run_test(size=(120, 40)) as pilot:
        open_file = app.active_file
        assert open_file.file.encoding == "latin-1"
        await type_text(pilot, app, "€→")
        assert open_file.editor.text == "€→café\n"

        await pilot.press("ctrl+s")
        screen = await dialog(pilot, app)
        assert "Latin-1" in screen.question and "€" in screen.question and "line 1" in screen.question
        assert [a for a, _ in screen.answers] == ["utf-8", "cancel"]
        await pilot.press("escape")  # Cancel: nothing written, still unsaved
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        assert path.read_bytes() == "café\n".encode("latin-1")
        assert open_file.dirty and "●" in app.editor_tabs.tab_label(open_file)

        await pilot.press("ctrl+s")
        await dialog(pilot, app)
        await answer(pilot, app, "utf-8")  # "Save as UTF-8"
        await wait_for(pilot, lambda: not open_file.dirty, timeout=10)
        assert path.read_bytes() == "€→café\n".encode("utf-8")
        assert open_file.file.encoding == "utf-8"

        await type_text(pilot, app, "ä")  # from now on it is a UTF-8 file: no question
        assert open_file.editor.text == "€→äcafé\n"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not open_file.dirty, timeout=10)
        assert not isinstance(app.screen, ChoiceScreen)
        assert path.read_bytes() == "€→äcafé\n".encode("utf-8")


async def test_save_all_and_quit_stops_at_text_the_encoding_cannot_hold(project, settings_for, env):
    path = project / "latin.txt"
    path.write_bytes("café\n".encode("latin-1"))
    app = make_app(settings_for(project, **NO_COMPLETIONS), path, env)
    async with app.run_test(size=(120, 40)) as pilot:
        await type_text(pilot, app, "€")
        await pilot.press("ctrl+q")
        await dialog(pilot, app)
        await answer(pilot, app, "save")  # "Save all and quit"
        screen = await dialog(pilot, app)
        assert "Latin-1" in screen.question
        await pilot.press("escape")  # Cancel
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        await pilot.pause(0.2)
        assert app.is_running and app.active_file.dirty
        assert path.read_bytes() == "café\n".encode("latin-1")
        assert any("not saved" in n.lower() and "latin.txt" in n for n in notices(app))

        await pilot.press("ctrl+q")  # saved as UTF-8 this time: it quits
        await dialog(pilot, app)
        await answer(pilot, app, "save")
        await dialog(pilot, app)
        await answer(pilot, app, "utf-8")
        await wait_for(pilot, lambda: not app.is_running, timeout=10)
    assert path.read_bytes() == "€café\n".encode("utf-8")


async def test_saving_over_a_folder_says_so_and_keeps_the_edits(project, settings_for, env):
    """The file replaced by a folder: ctrl+s and "Save all and quit" did nothing visible."""
    path = project / "notes.md"
    app = make_app(settings_for(project, **NO_COMPLETIONS), path, env)
    async with app.run_test(size=(120, 40)) as pilot:
        open_file = app.active_file
        await pilot.press("x")
        path.unlink()
        path.mkdir()
        (path / "inside.txt").write_text("mine\n")

        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("notes.md" in n and "folder" in n for n in notices(app)), timeout=10)
        assert not isinstance(app.screen, ChoiceScreen)  # nothing to overwrite: a folder is no version of it
        assert open_file.dirty and path.is_dir() and (path / "inside.txt").read_text() == "mine\n"
        assert "(deleted)" in app.editor_tabs.tab_label(open_file)  # no watcher here: the save found it

        await pilot.press("ctrl+q")
        await dialog(pilot, app)
        count = len(notices(app))
        await answer(pilot, app, "save")  # "Save all and quit"
        await wait_for(pilot, lambda: len(notices(app)) > count, timeout=10)
        await pilot.pause(0.2)
        assert app.is_running and open_file.dirty
        assert any("not saved" in n.lower() and "notes.md" in n for n in notices(app)[count:])


async def test_saving_over_a_read_only_file_asks_first(project, settings_for, env):
    """A save writes a new file and renames it over the old one, which a read-only file does not
    stop: ctrl+s replaced a file its owner had marked read-only without a word."""
    path = project / "notes.md"
    os.chmod(path, 0o444)
    app = make_app(settings_for(project, **NO_COMPLETIONS), path, env)
    async with app.run_test(size=(120, 40)) as pilot:
        open_file = app.active_file
        await pilot.press("x")
        await pilot.press("ctrl+s")
        screen = await dialog(pilot, app)
        assert "notes.md" in screen.question and "read-only" in screen.question
        await pilot.press("escape")  # Cancel
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        assert path.read_text() == NOTES and open_file.dirty

        await pilot.press("ctrl+s")
        await dialog(pilot, app)
        await answer(pilot, app, "overwrite")
        await wait_for(pilot, lambda: not open_file.dirty, timeout=10)
        assert path.read_text() == "x" + NOTES
        assert stat.S_IMODE(path.stat().st_mode) == 0o444  # still read-only


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
async def test_saving_into_a_read_only_folder_says_permission_denied(project, settings_for, env):
    folder = project / "locked"
    folder.mkdir()
    path = folder / "notes.md"
    path.write_text(NOTES)
    app = make_app(settings_for(project, **NO_COMPLETIONS), path, env)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            open_file = app.active_file
            os.chmod(folder, 0o555)
            await pilot.press("x")
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: any("notes.md" in n and "ermission" in n for n in notices(app)),
                           timeout=10)
            assert open_file.dirty and path.read_text() == NOTES
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder)
