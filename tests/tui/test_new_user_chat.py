"""Lost work and wrong text found by trying specterm as a new user (issue 33), in the chat pane,
the dialogs and the notices: a question asked while the model loads (or after it failed), a
cancelled answer's half-written code, notices over the status bar and the question box, the
palette's Quit, the quit dialog, the keys panel, long code lines and the context of a question.
Each drives the real app (demo model, real files) through Pilot."""

from __future__ import annotations

import socket

import pytest
from textual.widgets import Button, HelpPanel, Input, Markdown
from textual.widgets._markdown import MarkdownFence
from textual.widgets._toast import Toast
from textual.widgets.text_area import Selection

from specterm.tui.screens.choice import ChoiceScreen

from .conftest import make_app, wait_for

NO_COMPLETIONS = {"completion.auto": False}


def notices(app) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]


def stats_lines(chat) -> list[str]:
    return [str(line.render()) for line in chat.query(".chat-stats")]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- 6: a question asked before the engine is there ----------------------------------------------

async def test_a_question_asked_while_the_model_loads_waits_and_is_sent_once_ready(project, settings_for, env):
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "adders.py", env)
    async with app.run_test(size=(150, 40)) as pilot:
        chat = app.chat
        box = chat.query_one("#chat-input", Input)
        box.value = "What does add_four do?"
        # Enter at once (a Pilot key press waits for frames, by which time the demo model may be in memory).
        assert chat.engine is None, "the model loaded before the question: nothing to test"
        await box.action_submit()
        await wait_for(pilot, lambda: bool(chat.history), timeout=10)
        assert box.value == ""
        assert [e.question for e in chat.history] == ["What does add_four do?"]
        assert "queued" in stats_lines(chat)[-1] or chat.engine is not None  # (loaded meanwhile: sent)
        assert not any("still loading" in n for n in notices(app))
        await wait_for(pilot, lambda: chat.history[-1].finished and not chat.streaming, timeout=120)
        assert chat.history[-1].answer.strip()
        assert "queued" not in stats_lines(chat)[-1]


async def test_a_question_queued_while_an_unreachable_backend_is_tried_goes_back_in_the_box(project, env):
    from specterm.tui.config import load_settings

    settings = load_settings(project_dir=project, env=env, overrides={
        "engine.backend": "openai", "engine.url": f"http://127.0.0.1:{closed_port()}", **NO_COMPLETIONS})
    app = make_app(settings, project / "adders.py", env)
    async with app.run_test(size=(150, 40)) as pilot:
        chat = app.chat
        await pilot.press("ctrl+l")
        chat.query_one("#chat-input", Input).value = "why?"
        assert app.status_model.state != "error", "the backend was given up before the question"
        await pilot.press("enter")
        assert "queued" in stats_lines(chat)[-1]  # connecting retries for a while: it waits meanwhile
        await wait_for(pilot, lambda: app.status_model.state == "error", timeout=60)
        await wait_for(pilot, lambda: chat.query_one("#chat-input", Input).value == "why?", timeout=10)
        assert chat.history == []
        assert "not sent" in stats_lines(chat)[-1]
        # Asked again: it stays in the box, and the notice says why (not "still loading").
        await pilot.press("enter")
        await pilot.pause()
        assert chat.query_one("#chat-input", Input).value == "why?" and chat.history == []
        said = notices(app)
        assert not any("still loading" in n for n in said)
        assert any("Not sent" in n and "could not be loaded" in n for n in said)


async def test_a_question_after_the_model_failed_to_load_stays_in_the_box(project, settings_for, env, models):
    app = make_app(settings_for(project, **NO_COMPLETIONS, **{"model.target": models.not_gguf}),
                   project / "adders.py", env)
    async with app.run_test(size=(150, 40)) as pilot:
        await wait_for(pilot, lambda: app.status_model.state == "error", timeout=60)
        await pilot.press("ctrl+l")
        await pilot.press(*"hello?")
        await pilot.press("enter")
        await pilot.pause()
        assert app.chat.query_one("#chat-input", Input).value == "hello?"
        assert app.chat.history == []
        said = notices(app)
        assert not any("still loading" in n for n in said)
        assert any("Not sent" in n and "could not be loaded" in n for n in said)
        # the engine's other actions say the same true thing
        await app.action_switch_draft("lookup")
        await app.action_forget_session()
        await pilot.pause()
        later = notices(app)[len(said):]
        assert len(later) == 2 and all("The model could not be loaded:" in n for n in later), later


# -- 8: a cancelled answer's code ----------------------------------------------------------------

async def test_a_cancelled_answer_is_marked_and_its_half_written_code_is_not_inserted(project, settings_for, env):
    app = make_app(settings_for(project, **NO_COMPLETIONS, **{"chat.max_tokens": 400}), project / "adders.py", env)
    async with app.run_test(size=(150, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set, timeout=120)
        chat = app.chat
        await pilot.press("ctrl+l")
        await pilot.press(*"Write a Python loop over a list, with comments.")
        await pilot.press("enter")
        await wait_for(pilot, lambda: chat.streaming and len(chat.history[-1].answer) > 10, timeout=120)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not chat.streaming)
        exchange = chat.history[-1]
        assert exchange.reason == "cancelled"
        line = chat.query(".chat-stats").last()
        assert "incomplete" in str(line.render()) and line.has_class("-cut")  # visible in the history
        # However far the model got: the code it was writing when stopped.
        exchange.answer += "\n```python\nfor i in range(len(items) +"
        editor = app.active_editor
        before = editor.text
        app.action_insert_code_block()
        await pilot.pause()
        assert editor.text == before
        assert any("Not inserted" in n and "cancelled" in n for n in notices(app))
        app.action_copy_code_block()
        assert "range(len(items)" not in (app.clipboard or "")


# -- 12: notices --------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [(150, 40), (100, 24)])
async def test_notices_cover_neither_the_status_bar_nor_the_question_box(project, settings_for, env, size):
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "notes.md", env)
    async with app.run_test(size=size, notifications=True) as pilot:
        await wait_for(pilot, app.engine_ready.is_set, timeout=120)
        assert app.settings.demo  # the first-run notice about the demo model is up now
        await pilot.press("ctrl+l" if app.chat.display else "ctrl+t")  # to the question box
        await pilot.press(*"typed")
        app.notify("A second notice, " + "long enough to take several lines " * 4, timeout=30)
        await pilot.pause(0.3)
        toasts = list(app.screen.query(Toast))
        assert len(toasts) >= 2
        box = app.chat.query_one("#chat-input", Input)
        assert box.value == "typed" and box.has_focus
        for toast in toasts:
            assert not toast.region.overlaps(app.status_bar.region), toast.region
            assert not toast.region.overlaps(box.region), toast.region


# -- smaller: palette, quit dialog, keys panel, code lines, context -------------------------------

async def test_the_palette_has_one_quit(project, settings_for, env):
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "notes.md", env)
    async with app.run_test(size=(120, 40)):
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert titles.count("Quit") == 1


async def test_ctrl_q_in_the_quit_dialog_does_not_stack_a_second_one(project, settings_for, env):
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "notes.md", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("x")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), timeout=10)
        await pilot.press("ctrl+q")
        await pilot.pause(0.3)
        assert sum(isinstance(s, ChoiceScreen) for s in app.screen_stack) == 1
        await pilot.press("escape")  # Cancel: back to the file, nothing lost
        await wait_for(pilot, lambda: len(app.screen_stack) == 1, timeout=10)
        assert app.active_editor.text.startswith("x# Notes")


@pytest.mark.parametrize("size", [(60, 20), (50, 20), (40, 20), (32, 20)])
async def test_the_quit_dialog_fits_a_narrow_terminal(project, settings_for, env, size):
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "notes.md", env)
    async with app.run_test(size=size) as pilot:
        await pilot.press("x")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), timeout=10)
        await pilot.pause(0.2)
        screen = app.screen
        dialog = screen.query_one("ChoiceScreen > Vertical")
        assert screen.region.contains_region(dialog.region), (dialog.region, screen.region)
        buttons = list(screen.query(Button))
        assert len(buttons) == 3
        for button in buttons:
            assert dialog.region.contains_region(button.region), (str(button.label), button.region)
            assert button.content_region.width >= len(str(button.label)), str(button.label)
        for i, one in enumerate(buttons):
            for other in buttons[i + 1:]:
                assert not one.region.overlaps(other.region)
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(app.screen_stack) == 1, timeout=10)


async def test_escape_closes_the_keys_panel_and_then_reaches_the_editor_again(project, settings_for, env):
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "notes.md", env)
    async with app.run_test(size=(120, 40)) as pilot:
        app.action_show_help_panel()
        await pilot.pause()
        assert app.screen.query(HelpPanel)
        await pilot.press("escape")
        await pilot.pause()
        assert not app.screen.query(HelpPanel)
        # Without the panel, Esc is the widgets' again: it closes the find bar.
        await pilot.press("ctrl+f")
        assert app.find_bar.has_class("-open")
        await pilot.press("escape")
        assert not app.find_bar.has_class("-open")


async def test_a_long_code_line_in_an_answer_wraps_in_the_chat_pane(project, settings_for, env):
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "notes.md", env)
    async with app.run_test(size=(150, 40)) as pilot:
        long_line = "total = compute(" + ", ".join(f"argument_{i}" for i in range(12)) + ", last_one_zq)"
        answer = Markdown(f"Here:\n\n```python\n{long_line}\n```\n", classes="chat-answer")
        await app.chat.query_one("#chat-log").mount(answer)
        await pilot.pause(0.3)
        fence = answer.query_one(MarkdownFence)
        assert fence.region.width < len(long_line)  # the pane is narrower than the line
        code = fence.query_one("Label")
        assert fence.region.contains_region(code.region), (code.region, fence.region)
        shown = "".join(strip.text for strip in code.render_lines(code.region.reset_offset))
        assert "last_one_zq)" in shown.replace(" ", "").replace("\n", "") or "last_one_zq)" in shown


async def test_a_question_shows_the_context_that_went_with_it(project, settings_for, env):
    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "adders.py", env)
    async with app.run_test(size=(150, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set, timeout=120)
        editor = app.active_editor
        editor.selection = Selection((0, 0), (1, len("    return x + 1")))  # two lines
        await pilot.press("ctrl+l")
        await pilot.press(*"What is this?")
        await pilot.press("enter")
        chat = app.chat
        context = chat.query(".chat-context").last()
        assert str(context.render()) == "with adders.py, the selection (2 lines)"
        await wait_for(pilot, lambda: chat.history[-1].finished and not chat.streaming, timeout=120)
        editor.focus()
        editor.move_cursor((3, 0))
        await pilot.press("ctrl+l")
        await pilot.press(*"And now?")
        await pilot.press("enter")
        context = chat.query(".chat-context").last()
        assert "adders.py (lines 1-" in str(context.render()) and "cursor at line 4" in str(context.render())
        await wait_for(pilot, lambda: chat.history[-1].finished and not chat.streaming, timeout=120)


def test_context_label_of_an_empty_or_odd_context():
    from specterm.tui.widgets.chat import context_label

    assert context_label("") == ""
    assert context_label("no header at all") == "no header at all"
    assert context_label("File: a.py\nSelected code:\n```\nx = 1\n```") == "a.py, the selection (1 line)"


async def test_a_cancelled_answer_is_not_applied_as_a_merge_either(project, settings_for, env):
    from specterm.tui.widgets.chat import Exchange

    app = make_app(settings_for(project, **NO_COMPLETIONS), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set, timeout=120)
        editor = app.active_editor
        before = editor.text
        answer = "Like this:\n```python\ndef add_four(x):\n    for i in range(len(items) +"
        app.chat.history.append(Exchange("q", answer, finished=True, reason="cancelled"))
        await pilot.press("alt+a")
        await pilot.pause()
        assert app.edits.request is None and editor.text == before
        assert any("Not applied" in n and "cancelled" in n for n in notices(app))
