"""The command palette's entries (ctrl+p): every action the app has, each with its key, so the
palette doubles as the list of what specterm can do."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

from textual.app import SystemCommand

if TYPE_CHECKING:
    from .app import SpectermApp


def palette_commands(app: "SpectermApp") -> Iterable[SystemCommand]:
    def editor_action(name: str) -> Callable[..., None]:
        def run(*args) -> None:
            editor = app.active_editor
            if editor is not None:
                getattr(editor, f"action_{name}")(*args)
                editor.focus()

        return run

    def keys(action: str) -> str:
        """ " (tab)": the keys `[keys]` gives an accept action, as the help text's ending."""
        names = [key for key, act in app.completer.options.accept_keys.items() if act == action]
        return f" ({', '.join(names)})" if names else " (no key: [keys] in config.toml)"

    commands: list[tuple[str, str, Callable]] = [
        ("Save file", "Write the active file to disk (ctrl+s)", app.action_save),
        ("Close tab", "Close the active file (alt+w)", app.action_close_tab),
        ("Next tab", "Switch to the next open file (ctrl+pagedown)", lambda: app.action_cycle_tab(1)),
        ("Previous tab", "Switch to the previous open file (ctrl+pageup)", lambda: app.action_cycle_tab(-1)),
        ("Toggle file tree", "Show or hide the files (ctrl+b)", app.action_toggle_tree),
        ("Toggle chat pane", "Show or hide the chat (ctrl+t)", app.action_toggle_chat),
        ("Ask about the code", "Focus the chat question box (ctrl+l)", app.action_ask),
        ("Find", "Find text in the active file (ctrl+f, F3 next)", app.action_find),
        ("Edit by instruction",
         "Rewrite the selection, or the block at the cursor, as you say; review the diff (ctrl+r)", app.action_edit),
        ("Complete now", "Ask for an inline suggestion at the cursor (ctrl+space)", editor_action("complete")),
        ("Accept suggestion", f"Insert the whole suggestion{keys('accept_completion')}",
         editor_action("accept_completion")),
        ("Accept next word", f"Insert the suggestion's next word{keys('accept_word')}", editor_action("accept_word")),
        ("Accept next line", f"Insert the suggestion's next line{keys('accept_line')}", editor_action("accept_line")),
        ("Next alternative suggestion", "Show the next alternative to the suggestion (alt+], alt+n)",
         lambda: editor_action("alternative")(1)),
        ("Previous alternative suggestion", "Show the previous alternative to the suggestion (alt+[, alt+p)",
         lambda: editor_action("alternative")(-1)),
        ("Dismiss suggestion", "Hide the suggestion and stop its request (Esc)", editor_action("dismiss_completion")),
        ("Find next", "Go to the next match (F3)", app.action_find_next),
        ("Quit", "Leave specterm, asking about unsaved changes (ctrl+q)", lambda: app.run_action("quit")),
        ("Statistics", "Acceptance by draft position and over time (F9)", app.action_stats),
        ("Toggle suggestion info", "The status bar shows what the last suggestion cost, or the figures",
         app.status_bar.toggle_info),
        ("Insert code block", "Insert the last answer's code block at the cursor", app.action_insert_code_block),
        ("Apply code block", "Merge the last answer's code block into the file as a reviewable diff (alt+a)",
         app.action_apply_code_block),
        ("Copy code block", "Copy the last answer's code block (OSC 52)", app.chat.copy_last_code_block),
        ("Clear chat", "Forget the conversation so far", app.chat.clear),
        ("Reload config", "Re-read config.toml files now", app.reload_config),
        ("Forget session memory", "Empty what the session drafter remembered (open files, earlier answers)",
         app.action_forget_session),
        ("Draft: session", "Draft from the session's memory: prompt, output, open files, earlier answers (no model)",
         lambda: app.run_action("switch_draft('session')")),
        ("Draft: lookup", "Draft with prompt lookup: the prompt and output only (no model)",
         lambda: app.run_action("switch_draft('lookup')")),
        ("Draft: none", "Plain decoding, no drafting", lambda: app.run_action("switch_draft('none')")),
        ("Draft: model", "Draft with the configured draft model", lambda: app.run_action("switch_draft('model')")),
    ]
    commands += app.theming.choices()
    for title, help_text, callback in commands:
        yield SystemCommand(title, help_text, callback)
