"""Faults found by trying specterm as a new user (issue 16): focus traps that lose keystrokes, an
unsafe dialog default, raw markup in a notice, a silent refusal, a lost marker, file tree order and
a figure below its floor. Each drives the real app through Pilot."""

from __future__ import annotations

import re

import pytest
from textual import events
from textual.widgets import Input

from specterm.tui.screens.choice import ChoiceScreen
from specterm.tui.widgets.chat import Exchange

from .conftest import make_app, wait_for

NO_COMPLETIONS = {"completion.auto": False}


async def test_escape_without_a_suggestion_keeps_typing_in_the_editor(project, settings_for, env):
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "notes.md", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        await pilot.press("escape")
        assert editor.has_focus
        await pilot.press("z", "z")
        assert editor.text.startswith("zz# Notes")


async def test_keys_that_arrive_together_act_in_the_order_they_were_typed(project, settings_for, env):
    """A cursor key and the characters after it, arriving before the app has handled the first
    (a fast typist on a busy app; tmux send-keys did it): Textual runs a widget's bindings once
    the key has bubbled up to the app, and the editor inserted the characters first, on the line
    the cursor was leaving (`Down End Y` put Y on line 1; ctrl+end then text typed it at the top)."""
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "notes.md", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        assert editor.has_focus and editor.cursor_location == (0, 0)
        for key, char in (("down", None), ("end", None), ("Y", "Y"),
                          ("ctrl+end", None), ("Z", "Z"), ("ctrl+home", None), ("X", "X")):
            app.post_message(events.Key(key, char))  # all queued before the first is handled
        await pilot.pause()
        assert editor.text == "X# Notes\nY\nNothing here yet.\nZ"


async def test_the_tab_keys_work_from_the_editor_and_not_under_a_dialog(project, settings_for, env):
    """ctrl+pageup / ctrl+pagedown scrolled the editor sideways (TextArea's own binding) instead of
    switching tabs, and Alt+W as tmux and terminals over SSH send it (ESC w: alt+w carrying a
    printable "w") typed a w instead of closing the tab. Under a dialog they do nothing."""
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "notes.md", env)
    async with app.run_test(size=(120, 40)) as pilot:
        notes = app.active_editor
        await app.open_file(project / "adders.py")
        await wait_for(pilot, lambda: app.active_editor is not notes)
        adders = app.active_editor
        before = adders.text
        await pilot.press("ctrl+pageup")
        assert app.active_editor is notes and notes.has_focus
        await pilot.press("ctrl+pagedown")
        assert app.active_editor is adders and adders.has_focus

        await pilot.press("x")
        app.post_message(events.Key("alt+w", "w"))  # unsaved changes: it asks
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), timeout=10)
        assert "unsaved changes" in app.screen.question and adders.text == "x" + before
        app.post_message(events.Key("alt+w", "w"))
        await pilot.press("ctrl+pageup")
        assert isinstance(app.screen, ChoiceScreen) and app.editor_tabs.active_file.editor is adders
        await pilot.press("escape")  # Cancel
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        assert len(app.editor_tabs.files) == 2 and adders.text == "x" + before

        await pilot.press("ctrl+pageup")  # notes.md, no edits: closes at once
        app.post_message(events.Key("alt+w", "w"))
        await wait_for(pilot, lambda: len(app.editor_tabs.files) == 1, timeout=10)
        assert app.active_editor is adders and notes.text == "# Notes\n\nNothing here yet.\n"
        assert (project / "adders.py").read_text() == before


async def test_tab_keys_that_arrive_together_end_on_the_tab_they_add_up_to(project, settings_for, env):
    """Tab keys queued before the app handled the first (a held or fast-repeated key; CI's busy
    box right after a file opened): the late report of the focus given by one switch reached the
    tabs after the next switch and made the earlier tab active again."""
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "notes.md", env)
    async with app.run_test(size=(120, 40)) as pilot:
        notes = app.active_editor
        await app.open_file(project / "adders.py")
        await wait_for(pilot, lambda: app.active_editor is not notes and app.active_editor.has_focus)
        for key in ("ctrl+pageup", "ctrl+pagedown", "ctrl+pageup"):
            app.post_message(events.Key(key, None))  # all queued before the first is handled
        await pilot.pause(0.3)  # without a refresh between: a late report has landed by now
        await wait_for(pilot, lambda: app.active_editor is notes and notes.has_focus, timeout=5)
        await pilot.press("z")
        assert notes.text.startswith("z# Notes")


@pytest.mark.parametrize("run", range(3))
async def test_a_file_opened_at_once_keeps_the_focus_for_the_keys_after(project, settings_for, env, run):
    """A second file opened right after the first (before the first's delayed focus had run): the
    late focus switched back to the first tab, the newer editor was hidden meanwhile, and Textual
    moved the focus to the tab strip, where the next keys went nowhere (one run in two here)."""
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "notes.md", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.open_file(project / "adders.py")
        await wait_for(pilot, lambda: app.active_editor is not None and app.active_editor.path.name == "adders.py")
        adders = app.active_editor
        before = adders.text
        await pilot.press("q")
        await pilot.pause(0.2)  # what was queued behind the key has run
        await pilot.press("w")
        assert app.focused is adders and app.active_editor is adders
        assert adders.text == "qw" + before


async def test_ctrl_t_puts_the_focus_in_the_chat_question_box(project, settings_for, env):
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "notes.md", env)
    async with app.run_test(size=(120, 40)) as pilot:  # 120 columns: the chat starts closed
        editor = app.active_editor
        before = editor.text
        assert not app.chat.display
        await pilot.press("ctrl+t")
        question = app.chat.query_one("#chat-input", Input)
        assert app.chat.display and question.has_focus
        await pilot.press(*"why?")
        await pilot.press("enter")
        assert editor.text == before  # the question did not land in the file
        await pilot.press("ctrl+t")  # closing it gives the editor the focus back
        assert not app.chat.display and editor.has_focus


async def test_insert_code_block_goes_on_its_own_lines(project, settings_for, env):
    path = project / "search.py"
    path.write_text("if x < lo:\n    return\n")
    app = make_app(settings_for(project, **NO_COMPLETIONS), path, env)
    async with app.run_test(size=(120, 40)) as pilot:
        app.chat.history.append(Exchange("q", "```python\nclass BinarySearchTree:\n    pass\n```\n", finished=True))
        editor = app.active_editor
        editor.move_cursor((0, len("if x < lo:")))  # mid-document, at the end of a line
        app.action_insert_code_block()
        await pilot.pause()
        assert editor.text == "if x < lo:\nclass BinarySearchTree:\n    pass\n    return\n"
        await pilot.press("ctrl+z")
        editor.move_cursor((1, len("    ret")))  # inside a line: the rest of it moves below the block
        app.action_insert_code_block()
        await pilot.pause()
        assert editor.text == "if x < lo:\n    ret\nclass BinarySearchTree:\n    pass\nurn\n"


async def test_changed_on_disk_dialog_defaults_to_keeping_the_edits(project, settings_for, env):
    path = project / "notes.md"
    app = make_app(settings_for(project, **NO_COMPLETIONS), path, env, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        await wait_for(pilot, lambda: app.watcher.ready.is_set())
        await pilot.press("!")
        path.write_text("# Notes\n\nChanged outside.\n")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), timeout=20)
        await pilot.press("enter")  # the likeliest key must not throw the edits away
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        assert editor.text.startswith("!# Notes") and "Changed outside" not in editor.text
        assert path.read_text() == "# Notes\n\nChanged outside.\n"  # nothing written either


async def test_ctrl_c_says_how_to_quit_in_plain_words(project, settings_for, env):
    app = make_app(settings_for(project, **NO_COMPLETIONS), project, env)
    async with app.run_test(size=(120, 40)) as pilot:
        app.file_tree.focus()
        await pilot.press("ctrl+c")
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        hint = [m for m in messages if "quit" in m]
        assert hint and "ctrl+q" in hint[0] and "[" not in hint[0]


async def test_a_binary_file_on_the_command_line_says_why_it_is_not_open(project, settings_for, env):
    path = project / "bin.dat"
    path.write_bytes(b"\x00\x01\x02binary\x00" * 64)
    app = make_app(settings_for(project, **NO_COMPLETIONS), path, env)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.active_file is None
        messages = [n.message for n in app._notifications]
        assert any("bin.dat" in m and "binary" in m for m in messages)
        welcome = str(app.query_one("#welcome").render())
        assert "bin.dat" in welcome and "binary" in welcome  # still said once the notice is gone


async def test_a_deleted_tab_keeps_its_unsaved_marker(project, settings_for, env):
    path = project / "notes.md"
    app = make_app(settings_for(project, **NO_COMPLETIONS), path, env, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.watcher.ready.is_set())
        await pilot.press("x")
        path.unlink()
        await wait_for(pilot, lambda: app.active_file.deleted, timeout=20)
        label = app.editor_tabs.tab_label(app.active_file)
        assert "●" in label and "(deleted)" in label


async def test_ctrl_home_and_ctrl_end_go_to_the_start_and_end_of_the_document(project, settings_for, env):
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        editor.move_cursor((5, 3))
        await pilot.press("ctrl+end")
        last = editor.document.line_count - 1
        assert editor.cursor_location == (last, len(editor.document[last]))
        await pilot.press("ctrl+home")
        assert editor.cursor_location == (0, 0)


async def test_the_file_tree_sorts_numbers_naturally(project, settings_for, env):
    for name in ("f100.py", "f10.py", "f2.py", "f1.py"):
        (project / name).write_text("")
    (project / "dir10").mkdir()
    (project / "dir9").mkdir()
    app = make_app(settings_for(project, **NO_COMPLETIONS), project, env)
    async with app.run_test(size=(120, 40)) as pilot:
        tree = app.file_tree
        await wait_for(pilot, lambda: len(tree.root.children) >= 8)
        labels = [str(c.label) for c in tree.root.children]
        assert labels == ["dir9", "dir10", "adders.py", "f1.py", "f2.py", "f10.py", "f100.py", "notes.md"]
        (project / "f20.py").write_text("")  # a folder read again (after a change on disk): same order
        tree.refresh_folders({project})
        await wait_for(pilot, lambda: len(tree.root.children) == 9)
        labels = [str(c.label) for c in tree.root.children]
        assert labels[3:8] == ["f1.py", "f2.py", "f10.py", "f20.py", "f100.py"]


async def test_plain_decoding_shows_one_token_per_pass_never_fewer(project, settings_for, env):
    """A chat answer that ends at the model's end-of-generation token: the pass that produced it
    produced a token too, so plain decoding is exactly 1.00 tokens per pass (it showed 0.98)."""
    app = make_app(settings_for(project, **NO_COMPLETIONS, **{"chat.max_tokens": 400}), project / "adders.py", env)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        await app.action_switch_draft("none")
        await pilot.press("ctrl+l")
        await pilot.press(*"Say hello.")
        await pilot.press("enter")
        chat = app.chat
        await wait_for(pilot, lambda: chat.history and chat.history[-1].finished and not chat.streaming, timeout=120)
        footer = str(chat.query(".chat-stats").last().render())
        assert re.search(r"\b1\.00 tok/pass", footer), footer
        assert "length" not in footer  # it ended at the end-of-generation token
        last = app.status_model.last
        assert last.tokens_per_pass == 1.0 and last.drafted == 0
