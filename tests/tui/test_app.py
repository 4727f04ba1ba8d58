"""The real app, the real engine, the demo model: driven through Textual's Pilot."""

from __future__ import annotations

import asyncio
import os
import stat

import pytest

from specterm.tui.engine_factory import ui_spare_cores
from specterm.tui.screens.choice import ChoiceScreen
from specterm.tui.screens.stats import StatsScreen
from specterm.tui.widgets.chat import ChatPane
from specterm.tui.widgets.status_bar import StatusBar

from .conftest import CURSOR_AFTER_DEF, REPETITIVE, fresh_completion, make_app, user_requests, wait_for


async def ghost_at(pilot, app, location=CURSOR_AFTER_DEF) -> str:
    """Put the cursor somewhere, pause, and wait for the streamed suggestion to finish."""
    await wait_for(pilot, app.engine_ready.is_set)
    editor = app.active_editor
    editor.move_cursor(location)
    editor.action_complete()  # a move alone asks for nothing (issue 33)
    await wait_for(pilot, lambda: editor.ghost_text and not editor.completion_pending)
    return editor.ghost_text


async def test_pause_shows_ghost_text_tab_inserts_it_as_one_undo_step(project, settings_for, env):
    path = project / "adders.py"
    app = make_app(settings_for(project), path, env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        assert editor is not None and editor.has_focus
        assert editor.cursor_location == (0, 0)  # `specterm FILE`: cursor at the start
        ghost = await ghost_at(pilot, app)
        assert "\n" in ghost  # a multi-line suggestion (next line of the function)
        assert editor.text == REPETITIVE  # ghost text is not in the document
        await wait_for(pilot, lambda: app.completer.prefetch is None)  # the next one, asked ahead
        await pilot.press("tab")
        assert editor.text == REPETITIVE[: len(REPETITIVE) - 1] + ghost + "\n"
        # What shows now is the prefetched next suggestion, from the cache: exactly what a fresh
        # request at the new cursor answers ("" here: the function's block ends after its return).
        prefix, suffix = editor.prefix_suffix()
        fresh = await fresh_completion(app, prefix, suffix)
        assert app.completer.cache.get(prefix, suffix) == (fresh or None)
        assert editor.ghost_text == fresh and not editor.completion_pending
        await pilot.press("ctrl+z")
        assert editor.text == REPETITIVE


async def test_status_bar_shows_acceptance_after_a_completion(project, settings_for, env):
    # Fixed draft lengths: adaptive drafting rightly stays off for a 12-token completion on this
    # compute-bound demo (forced drafts come out of a 2% probe budget), and this test is about the bar.
    app = make_app(settings_for(project, **{"speculative.adaptive": False}), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await ghost_at(pilot, app)
        last = app.status_model.last
        assert last is not None and last.drafted > 0  # the session drafter drafted from the pattern
        bar = app.query_one(StatusBar)
        await wait_for(pilot, lambda: not bar._dirty)
        text = bar.render_status().plain
        assert f"acc {round(last.acceptance * 100)}%" in text
        assert "tok/s" in text and "session" in text and "[demo]" in text and "CPU" in text

        # The stats panel charts acceptance by draft position and over time.
        await pilot.press("f9")
        assert isinstance(app.screen, StatsScreen)
        assert app.screen.session.drafted_by_position and app.screen.history
        await pilot.press("escape")
        assert not isinstance(app.screen, StatsScreen)


async def test_escape_dismisses_and_typing_through_consumes(project, settings_for, env):
    app = make_app(settings_for(project), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        ghost = await ghost_at(pilot, app)
        await pilot.press("escape")
        assert editor.ghost_text == "" and not editor.completion_pending
        assert editor.text == REPETITIVE

        # Back at the same position: the cache answers at once, without a request (only the
        # prefetch of what would follow it).
        requests_before = user_requests(app)
        editor.move_cursor((0, 0))
        editor.move_cursor(CURSOR_AFTER_DEF)
        await pilot.press("ctrl+space")
        await wait_for(pilot, lambda: editor.ghost_text == ghost, timeout=5)
        assert user_requests(app) == requests_before
        assert editor.ghost_source == "cache"
        assert app.completer.cache.hits >= 1

        # Typing what the suggestion says consumes it: no new request, the rest stays.
        assert ghost.startswith("\n")
        await pilot.press("enter")  # inserts "\n" plus the indentation
        typed = editor.text[len(REPETITIVE) - 1:].rstrip("\n")
        assert ghost.startswith(typed)
        await pilot.pause(0.3)  # several debounce periods
        assert editor.ghost_text == ghost[len(typed):]
        assert user_requests(app) == requests_before

        # Any other edit dismisses it (and a new request follows the pause).
        editor.insert("z")
        assert editor.ghost_text == ""


async def test_accept_next_word_and_next_line(project, settings_for, env):
    app = make_app(settings_for(project), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        ghost = await ghost_at(pilot, app)
        await pilot.press("ctrl+right")  # the next word: "\n    return"
        inserted = editor.text[len(REPETITIVE) - 1:-1]
        assert inserted.strip() and ghost.startswith(inserted) and len(inserted) < len(ghost)
        assert editor.ghost_text == ghost[len(inserted):]
        await wait_for(pilot, lambda: app.completer.prefetch is None)
        await pilot.press("end")  # the rest of that line: the whole suggestion is in now
        line = editor.document[CURSOR_AFTER_DEF[0] + 1]
        assert line.strip().startswith("return") and editor.text.endswith(line + "\n")
        # The next suggestion (prefetched) shows, exactly as a fresh request says; never a bare
        # line break.
        prefix, suffix = editor.prefix_suffix()
        fresh = await fresh_completion(app, prefix, suffix)
        assert editor.ghost_text == fresh and (fresh == "" or fresh.strip())


async def test_chat_streams_an_answer_and_escape_cancels(project, settings_for, env):
    app = make_app(settings_for(project, **{"chat.max_tokens": 400}), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        chat = app.query_one(ChatPane)
        await pilot.press("ctrl+l")
        await pilot.press(*"Explain this code in detail, step by step.")
        await pilot.press("enter")
        await wait_for(pilot, lambda: chat.streaming and len(chat.history[-1].answer) > 10)
        assert app.completer.blocked_by == "chat"
        await pilot.press("escape")
        await wait_for(pilot, lambda: not chat.streaming)
        stats = chat.query(".chat-stats").last().render()
        assert "cancelled" in str(stats)
        answer = chat.query(".chat-answer").last()
        assert answer.source.strip()  # the Markdown widget received the streamed text
        assert app.completer.blocked_by is None
        chat_input = chat.query_one("#chat-input")
        assert app.focused is chat_input  # Esc stopped the answer, the focus stayed

        # Esc with nothing streaming: back to the file; the pane stays open and keys edit the file.
        await pilot.press("escape")
        assert app.focused is app.active_editor and chat.display
        before = app.active_editor.text
        await pilot.press("z")
        assert app.active_editor.text != before and chat_input.value == ""


async def test_save_is_atomic_and_keeps_newlines_and_mode(project, settings_for, env):
    path = project / "dos.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    os.chmod(path, 0o600)
    app = make_app(settings_for(project), path, env)
    async with app.run_test(size=(120, 40)) as pilot:
        inode_before = path.stat().st_ino
        await pilot.press("x")
        open_file = app.active_file
        assert open_file.dirty and "●" in app.editor_tabs.tab_label(open_file)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not open_file.dirty)
        assert path.read_bytes() == b"xone\r\ntwo\r\n"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.stat().st_ino != inode_before  # written to a temp file and renamed over
        assert sorted(p.name for p in project.iterdir()) == ["adders.py", "dos.txt", "notes.md"]
        assert "●" not in app.editor_tabs.tab_label(open_file)


async def test_external_changes_reload_clean_buffers_and_ask_for_dirty_ones(project, settings_for, env):
    path = project / "notes.md"
    app = make_app(settings_for(project), path, env, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        await wait_for(pilot, lambda: app.watcher.ready.is_set())
        editor.move_cursor((2, 4))
        path.write_text("# Notes\n\nSomething changed outside.\n")
        await wait_for(pilot, lambda: "outside" in editor.text, timeout=10)
        assert editor.cursor_location == (2, 4)
        assert not app.active_file.dirty

        # Our own save never triggers the prompt.
        await pilot.press("!")
        await pilot.press("ctrl+s")
        await pilot.pause(1.0)
        assert not isinstance(app.screen, ChoiceScreen)

        # Dirty buffer + outside change: ask, and keep the user's edits when they say so.
        await pilot.press("?")
        path.write_text("# Notes\n\nChanged again.\n")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), timeout=10)
        await pilot.press("escape")  # "Keep my edits"
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        assert "?" in editor.text and "Changed again" not in editor.text

        # Saving now asks before overwriting the changed disk version.
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("escape")  # Cancel
        await pilot.pause(0.1)
        assert path.read_text() == "# Notes\n\nChanged again.\n"

        # Deleted on disk: the tab says so.
        path.unlink()
        await wait_for(pilot, lambda: app.active_file.deleted, timeout=10)
        assert "(deleted)" in app.editor_tabs.tab_label(app.active_file)


async def test_a_kept_disk_version_is_not_asked_about_again(project, settings_for, env):
    """After "Keep my edits", a chmod or a rewrite with the same bytes is the same disk version: no
    second dialog (it used to pop up again on any event for the file, over whatever the user was
    doing). A new version asks again, and saving still asks before overwriting it."""
    notes, adders = project / "notes.md", project / "adders.py"
    app = make_app(settings_for(project), notes, env, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.watcher.ready.is_set())
        editor = app.active_editor
        await pilot.press("?")
        await app.open_file(adders)
        await wait_for(pilot, lambda: app.active_editor is not editor)
        other = app.active_editor

        async def seen(action) -> None:
            """Do `action` to notes.md, then edit adders.py (clean: reloaded) and wait for that: the
            watcher hands changes over in order, so notes.md's event has been handled too."""
            action()
            marker = f"# marker {len(other.text)}\n"
            adders.write_text(marker + adders.read_text())
            await wait_for(pilot, lambda: other.text.startswith(marker) or isinstance(app.screen, ChoiceScreen),
                           timeout=10)
            await pilot.pause(0.2)

        await seen(lambda: notes.write_text("# Notes\n\nChanged outside.\n"))
        assert isinstance(app.screen, ChoiceScreen)
        await pilot.press("escape")  # "Keep my edits"
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        await wait_for(pilot, lambda: other.text.startswith("# marker"), timeout=10)

        await seen(lambda: os.chmod(notes, 0o600))
        assert not isinstance(app.screen, ChoiceScreen), "asked again about a chmod"
        await seen(lambda: notes.write_text("# Notes\n\nChanged outside.\n"))
        assert not isinstance(app.screen, ChoiceScreen), "asked again about the same bytes"
        assert "?" in editor.text

        await seen(lambda: notes.write_text("# Notes\n\nChanged once more.\n"))
        assert isinstance(app.screen, ChoiceScreen), "a new disk version must ask"
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        await app.open_file(notes)  # its tab again
        await wait_for(pilot, lambda: app.active_editor is editor)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        assert "Overwrite" in app.screen.question
        await pilot.press("escape")  # Cancel
        await pilot.pause(0.1)
        assert notes.read_text() == "# Notes\n\nChanged once more.\n"


async def test_theme_switch_persists_and_a_broken_theme_is_a_notice(project, settings_for, env, tmp_path):
    app = make_app(settings_for(project), project / "adders.py", env)
    await _theme_switch(app)
    assert app.engine.target is None  # the app closed the engine it built


async def _theme_switch(app) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        assert app.completer.engine is app.engine
        editor = app.active_editor
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Theme: specterm-light" in titles and "Draft: none" in titles and "Save file" in titles
        app.action_set_theme("specterm-light")
        await pilot.pause()
        assert app.theme == "specterm-light"
        assert editor.theme == "specterm-specterm-light"
        user_config = app.user_config.read_text()
        assert 'theme = "specterm-light"' in user_config

        broken = app.user_theme_dir / "broken.toml"
        broken.parent.mkdir(parents=True, exist_ok=True)
        broken.write_text("name = \"broken\"\n[colors]\nprimary = \"nonsense\"\n")
        assert not app.load_theme_path(broken)
        app.reload_themes()
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert any(str(broken) in m and "colors.primary" in m for m in messages)
        assert app.theme == "specterm-light"  # still running, theme unchanged
        await pilot.press("a")
        assert editor.text.startswith("a")


async def test_quit_with_unsaved_changes_asks(project, settings_for, env):
    app = make_app(settings_for(project), project / "notes.md", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("x")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("escape")  # Cancel
        await pilot.pause()
        assert app.is_running and app.active_file.dirty


async def test_small_terminal_collapses_side_panes_and_draft_switch(project, settings_for, env, monkeypatch):
    monkeypatch.setenv("SSH_CONNECTION", "10.0.0.1 5555 10.0.0.2 22")
    env = dict(env, SSH_CONNECTION="10.0.0.1 5555 10.0.0.2 22")
    app = make_app(settings_for(project), project, env)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.animation_level == "none"
        assert not app.query_one("#tree").display and not app.query_one("#chat").display
        await pilot.press("ctrl+b")
        assert app.query_one("#tree").display
        await wait_for(pilot, app.engine_ready.is_set)
        await app.action_switch_draft("none")
        assert app.engine.info.draft_name == "none"
        assert "no draft" in app.query_one(StatusBar).render_status().plain  # 80 columns: abbreviated
        await app.action_switch_draft("lookup")
        assert app.engine.info.draft_kind == "lookup"
        await app.action_switch_draft("session")
        assert app.engine.info.draft_kind == "session"


@pytest.mark.parametrize("name", ["NO_COLOR"])
async def test_no_color_is_honoured(project, settings_for, env, monkeypatch, name):
    monkeypatch.setenv(name, "1")
    app = make_app(settings_for(project), project, env)
    async with app.run_test(size=(80, 24)):
        assert app.no_color


async def test_manual_trigger_when_auto_is_off_and_tab_indents_without_a_suggestion(project, settings_for, env):
    app = make_app(settings_for(project, **{"completion.auto": False}), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        editor = app.active_editor
        editor.move_cursor((3, 0))
        await pilot.press("tab")
        assert editor.document[3] == "    "  # no suggestion: Tab indents
        await pilot.pause(0.3)
        assert app.completer._next_id == 0 and editor.ghost_text == ""  # nothing automatic
        editor.move_cursor(CURSOR_AFTER_DEF)
        await pilot.press("ctrl+@")  # what ctrl+space sends
        await wait_for(pilot, lambda: editor.ghost_text and not editor.completion_pending)
        # One suggestion asked for and no prefetch (the alternatives of the suggestion asked for
        # may follow: logged as requests of their own, with the rank of their first token)
        records = app.completer.log.records
        assert [r.prefetch for r in records if not r.alternative] == [False]
        assert not any(r.prefetch for r in records)


async def test_config_and_theme_files_reload_live(project, settings_for, env):
    app = make_app(settings_for(project), project / "adders.py", env, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.watcher.ready.is_set())
        assert app.completer.options.max_tokens == 12
        (project / ".specterm.toml").write_text("[completion]\nmax_tokens = 5\n[ui]\nshow_stats = false\n")
        await wait_for(pilot, lambda: app.completer.options.max_tokens == 5, timeout=10)
        await wait_for(pilot, lambda: "tok/s" not in app.query_one(StatusBar).render_status().plain)

        # A broken config: a notice, and the running settings stay.
        (project / ".specterm.toml").write_text("[completion]\nmax_tokens = \"many\"\n")
        await wait_for(pilot, lambda: any("max_tokens" in n.message for n in app._notifications), timeout=10)
        assert app.completer.options.max_tokens == 5

        # A new user theme file appears in the palette without a restart; a broken one is a notice.
        app.user_theme_dir.mkdir(parents=True, exist_ok=True)
        app._update_watch()
        await wait_for(pilot, lambda: app.watcher.ready.is_set())
        (app.user_theme_dir / "mine.toml").write_text(
            'name = "mine"\npygments_style = "monokai"\n[colors]\nprimary = "#ff0000"\n')
        await wait_for(pilot, lambda: "mine" in app.themes, timeout=10)
        (app.user_theme_dir / "oops.toml").write_text("name = [")
        await wait_for(pilot, lambda: any("oops.toml" in n.message for n in app._notifications), timeout=10)
        assert app.is_running


async def test_find_selects_the_next_match(project, settings_for, env):
    app = make_app(settings_for(project, **{"completion.auto": False}), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        await pilot.press("ctrl+f")
        await pilot.press(*"return")
        box = app.find_bar.input
        assert box.has_focus and box.region.height == 1
        assert "return" in box.render_line(0).text  # the one row shows the text, not a border
        await pilot.press("enter")
        assert editor.selected_text == "return" and editor.selection.start == (1, 4)
        await pilot.press("f3")
        assert editor.selection.start == (5, 4)


async def test_large_files_highlight_edited_lines_at_once_and_the_rest_after_a_pause(tmp_path, settings_for, env):
    from specterm.tui.widgets.highlight import highlight_map, lexer_for

    path = tmp_path / "big.py"
    path.write_text("".join(f"def f{i}(x):\n    return x + {i}  # c\n\n" for i in range(300)))
    app = make_app(settings_for(tmp_path, **{"completion.auto": False}), path, env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        editor.move_cursor((450, 0))
        await pilot.press("enter", "enter")  # two new lines in the middle: everything below shifts
        await pilot.press(*"import os")
        expected = highlight_map(lexer_for("big.py"), editor.text)
        assert editor._highlights[450] == expected[450]  # the edited line, right away
        assert editor._highlights[800] == expected[800]  # shifted rows stay right
        await pilot.pause(0.5)
        def nonempty(highlights):
            return {row: ranges for row, ranges in highlights.items() if ranges}

        assert nonempty(editor._highlights) == nonempty(expected)


async def test_a_new_file_opens_empty_and_the_first_save_creates_it(project, settings_for, env):
    path = project / "new_module.py"
    app = make_app(settings_for(project, **{"completion.auto": False}), path, env)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.active_editor is not None and app.active_editor.text == ""
        await pilot.press(*"x = 1")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: path.exists())
        assert path.read_text() == "x = 1"
        await pilot.press("ctrl+b")
        tree = app.query_one("#tree")
        await wait_for(pilot, lambda: any(n.data and n.data.path == path for n in tree.root.children))


async def test_the_palette_can_accept_a_suggestion(project, settings_for, env):
    app = make_app(settings_for(project), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        ghost = await ghost_at(pilot, app)
        await pilot.press("ctrl+p")
        await pilot.press(*"Accept suggestion")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: editor.text != REPETITIVE)
        assert editor.text == REPETITIVE[:-1] + ghost + "\n"


async def test_an_unusable_model_is_a_notice_and_the_editor_still_works(project, settings_for, env):
    bad = project / "notes.gguf"
    bad.write_text("this is not a model\n" * 20)
    app = make_app(settings_for(project, **{"model.target": str(bad)}), project / "notes.md", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: any("notes.gguf" in n.message for n in app._notifications))
        assert app.status_model.state == "error"
        assert "error" in app.query_one(StatusBar).render_status().plain
        await pilot.press("x")
        assert app.active_editor.text.startswith("x")
        assert app.active_editor.ghost_text == ""


async def test_the_engine_leaves_the_ui_a_core_where_it_has_cores_to_spare(project, settings_for, env):
    """On a machine with enough cores; on 2 the engine keeps both (`ui_spare_cores`)."""
    app = make_app(settings_for(project), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        cores = os.cpu_count() or 2
        assert app.engine.target.threads == (max(1, cores - ui_spare_cores(cores)), cores)
    assert [ui_spare_cores(n) for n in (1, 2, 3, 4, 16)] == [0, 0, 0, 1, 1]


async def test_the_session_memory_holds_the_opened_file_and_what_the_user_saved(project, settings_for, env):
    # No automatic completions: their answers would be remembered too, and this is about the files.
    app = make_app(settings_for(project, **{"completion.auto": False}), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        memory = app.engine.decoder.drafter.memory  # the default drafter: the session drafter
        # The file was opened while the model loaded: it is remembered once the engine is there.
        await wait_for(pilot, lambda: memory.tokens > 20)
        opened = memory.tokens
        app.active_editor.insert("def sum_of_squares(values):\n    return sum(v * v for v in values)\n")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: memory.tokens > opened + 20)


async def test_a_save_remembers_what_changed_not_the_whole_file_again(tmp_path, settings_for, env):
    root = tmp_path / "w"
    root.mkdir()
    path = root / "many.py"
    path.write_text("".join(f"def f{i}(x):\n    return x * {i} + {i * 7}\n\n" for i in range(300)))
    app = make_app(settings_for(root, **{"completion.auto": False}), path, env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        memory = app.engine.decoder.drafter.memory
        await wait_for(pilot, lambda: memory.tokens > 2000)  # the opened file (900 lines)
        await pilot.pause(0.5)
        opened = memory.tokens
        app.active_editor.move_cursor((450, 0))
        app.active_editor.insert("def added(values):\n    return sorted(values)\n")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: memory.tokens > opened + 10)
        await pilot.pause(0.5)
        assert memory.tokens - opened < opened / 5  # the block around the edit, not the file again


async def test_what_lives_as_long_as_the_app_is_not_walked_by_every_collection(project, settings_for, env):
    """A full garbage collection of the started app (Textual, the UI, the engine's Python side)
    took 60-100 ms and held up the keystroke that set it off; once the model is loaded those
    objects are frozen out of collections, and thawed when the app ends."""
    import gc

    app = make_app(settings_for(project), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        assert gc.get_freeze_count() > 10_000
    assert gc.get_freeze_count() == 0


async def test_the_whole_file_highlight_after_a_pause_waits_while_a_suggestion_generates(tmp_path, settings_for, env):
    """The pass that mends what the edited lines' own re-lex cannot see (here a string opened
    above the rest of the file) lexes the file and redraws every row: it waits until the
    suggestion asked for at the pause is written, then runs."""
    from specterm.tui.widgets.code_area import FULL_HIGHLIGHT_DELAY_S
    from specterm.tui.widgets.highlight import highlight_map, lexer_for

    path = tmp_path / "big.py"
    path.write_text("".join(f"def f{i}(x):\n    return x + {i}  # c\n\n" for i in range(300)))
    overrides = {"completion.max_tokens": 96, "completion.max_lines": 40}
    app = make_app(settings_for(tmp_path, **overrides), path, env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.completer.ready)
        editor = app.active_editor
        editor.move_cursor((450, 0))
        await pilot.pause()
        editor.insert('x = """\n')  # typed at once (a key press waits for the screen to settle)
        paused = asyncio.get_running_loop().time()
        editor.action_complete()  # what the pause's debounce asks
        expected = highlight_map(lexer_for("big.py"), editor.text)
        assert editor._highlights[800] != expected[800]  # below: still drawn as code
        assert app.completer.generating or editor.completion_pending
        await wait_for(pilot, lambda: app.completer.generating, timeout=10, step=0.01)
        late = 0
        while app.completer.generating:
            await pilot.pause(0.02)
            waited = asyncio.get_running_loop().time() - paused
            if app.completer.generating and FULL_HIGHLIGHT_DELAY_S + 0.05 < waited < 1.5:
                late += 1
                assert editor._highlights[800] != expected[800], "the pass ran while the engine wrote"
        assert late, "the suggestion was written before the pass was due: nothing was tested"
        await wait_for(pilot, lambda: editor._highlights[800] == expected[800], timeout=3)
