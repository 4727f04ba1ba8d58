"""The specterm application: file tree, editor tabs with ghost-text completions, chat pane, status.

Entry point for the CLI: `run_app(settings, path) -> exit code`. SpectermApp composes the widgets
and routes between them: keys to actions, engine events to the status bar, disk events to the
tree, the editor tabs (files, save, reload, conflicts), the config and the themes. Its services
live in modules of their own: the engine (engine_service.py, started in a worker while the UI is
already usable), the prewarms (suggest/prewarm.py) and the config reload (config_reload.py). It
talks to the engine only through `Engine`.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable, Iterable

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer
from watchfiles import Change

from specterm.engine import Engine
from specterm.engine.settings import DraftKind

from . import terminal_keys
from .config import Settings, load_settings, user_config_path
from .config_reload import reload_config
from .edit.flow import EditFlow
from .engine_service import EngineService
from .palette import palette_commands
from .screens.stats import StatsScreen
from .screenshot import save_screenshot
from .suggest.completer import Completer, CompletionOptions
from .suggest.prewarm import Prewarmer
from .themes import SpectermTheme
from .theming import Theming
from .watch import FileWatcher
from .widgets.chat import ChatPane
from .widgets.editor import CodeEditor
from .widgets.editor_tabs import EditorTabs, OpenFile
from .widgets.file_tree import FileTree
from .widgets.find_bar import FindBar
from .widgets.status_bar import StatusBar, StatusModel

TREE_WIDTH = 100  # from this many columns the file tree starts open
CHAT_WIDTH = 140  # from this many columns the chat pane starts open too
CONTEXT_LINES = 30  # lines around the cursor sent with a chat question when nothing is selected
CONTEXT_CHUNKS = 6  # chunks of the context ring (other files, copies) offered with a completion
AROUND_LINES = 32  # lines around the cursor the chunks are picked by


class SpectermApp(App[int]):
    """specterm's terminal UI."""

    CSS_PATH = "app.tcss"
    TITLE = "specterm"
    ENABLE_COMMAND_PALETTE = True

    BINDINGS = [
        Binding("ctrl+s", "save", "Save"),
        Binding("ctrl+b", "toggle_tree", "Files"),
        Binding("ctrl+t", "toggle_chat", "Chat"),
        Binding("ctrl+l", "ask", "Ask"),
        Binding("ctrl+f", "find", "Find"),
        Binding("ctrl+r", "edit", "Edit"),  # edit by instruction (tui/edit/)
        Binding("alt+a", "apply_code_block", "Apply", show=False, priority=True),
        Binding("f3", "find_next", "Find next", show=False),
        Binding("f9", "stats", "Stats"),
        # Tab keys come first (priority): the editor and the tree scroll sideways on ctrl+pageup/
        # pagedown, and take ESC w (Alt+W from tmux or over SSH) for a typed "w".
        Binding("alt+w", "close_tab", "Close tab", show=False, priority=True),
        Binding("ctrl+pagedown", "cycle_tab(1)", "Next tab", show=False, priority=True),
        Binding("ctrl+pageup", "cycle_tab(-1)", "Previous tab", show=False, priority=True),
        Binding("ctrl+q", "quit", "Quit", priority=True),
        # Esc closes the keys panel (palette: Keys) from wherever the focus is; only while it is shown.
        Binding("escape", "hide_help_panel", "Close keys", show=False, priority=True),
    ]

    def __init__(
        self,
        settings: Settings,
        path: Path | str = ".",
        *,
        reload_settings: Callable[[], Settings] | None = None,
        user_theme_dir: Path | None = None,
        watch: bool = True,
        environ: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        terminal_keys.install()  # Alt+] / Alt+[ from a terminal such as tmux
        env = dict(os.environ if environ is None else environ)
        self.settings = settings
        self.path = Path(path).absolute()
        self.root = self.path if self.path.is_dir() else self.path.parent
        self.engines = EngineService(self)  # the engine: built, started, closed (tui/engine_service.py)
        self._reload_settings = reload_settings
        self.user_config = user_config_path(env)  # where a theme choice is persisted
        self.user_theme_dir = user_theme_dir or (self.user_config.parent / "themes")
        self.watch_files = watch
        self.over_ssh = bool(env.get("SSH_CONNECTION"))
        if self.over_ssh:
            self.animation_level = "none"
        self.completer = Completer(
            CompletionOptions.from_config(settings.completion, settings.keys),
            event_sink=self.engines.event,
            context_files=lambda path: self.editor_tabs.context_files(path, CONTEXT_CHUNKS, AROUND_LINES),
        )
        self.prewarmer = Prewarmer(self, self.completer, lambda: self.active_editor,
                                   paused=lambda: self.editor_tabs.new_picks())
        self.status_model = StatusModel(demo=settings.demo, show_stats=settings.ui.show_stats,
                                        suggestions=self.completer.log)
        self.theming = Theming(self, self.user_theme_dir, settings.ui.theme)
        self.edits = EditFlow(self)
        self._layout: tuple[bool, bool] | None = None
        self.watcher: FileWatcher | None = None

    def notify(self, message: str, *, title: str = "", severity="information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Notices carry file names, config keys ([model]) and model output: never markup."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield FileTree(self.root, opener=self.open_file, id="tree")
            with Vertical(id="center"):
                yield EditorTabs(theme=self.spectheme, completer=self.completer, prewarmer=self.prewarmer,
                                 blink=not self.over_ssh, id="editor-tabs")
                yield FindBar(lambda: self.active_editor, id="find")
            yield ChatPane(
                system_prompt=self.settings.chat.system_prompt,
                max_tokens=self.settings.chat.max_tokens,
                context=lambda: self.editor_tabs.chat_context(CONTEXT_LINES),
                event_sink=self.engines.event,
                id="chat",
            )
        yield StatusBar(self.status_model, id="status")
        yield Footer()

    @property
    def file_tree(self) -> FileTree:
        return self.query_one("#tree", FileTree)

    @property
    def editor_tabs(self) -> EditorTabs:
        return self.query_one("#editor-tabs", EditorTabs)

    @property
    def chat(self) -> ChatPane:
        return self.query_one("#chat", ChatPane)

    @property
    def status_bar(self) -> StatusBar:
        return self.query_one("#status", StatusBar)

    @property
    def find_bar(self) -> FindBar:
        return self.query_one("#find", FindBar)

    @property
    def active_file(self) -> OpenFile | None:
        return self.editor_tabs.active_file

    @property
    def active_editor(self) -> CodeEditor | None:
        return self.editor_tabs.active_editor

    async def on_mount(self) -> None:
        self.theming.start()
        self.status_model.message = "loading the model"
        self._update_layout(self.size.width)
        for err in self.theming.errors:
            self.notify(str(err), title="Theme not loaded", severity="warning", timeout=10)
        if self.path.is_file():
            await self.open_file(self.path)
        elif not self.path.exists():
            if self.path.parent.is_dir() and self.path.suffix:
                await self.open_file(self.path, create=True)  # like an editor: a new file
            else:
                self.notify(f"{self.path} does not exist.", severity="error")
        if self.watch_files:
            self.watcher = FileWatcher(self._files_changed)
            self._update_watch()
        self._start_engine()

    async def open_file(self, path: Path, *, create: bool = False) -> CodeEditor | None:
        return await self.editor_tabs.open_file(path, create=create)
    def on_descendant_blur(self, _event) -> None:
        self.call_later(self._keep_focus)

    def _keep_focus(self) -> None:
        """Keystrokes must always land somewhere: when the focus is lost on the main screen (a
        focused pane hidden, a tab switched away), it goes to the active editor."""
        if self.focused is None and len(self.screen_stack) == 1:
            self._focus_editor()

    def on_resize(self, event) -> None:
        self._update_layout(event.size.width)

    def _update_layout(self, width: int) -> None:
        """Side panes open by default only where the editor keeps room for code; crossing a
        breakpoint resets them, in between the user's toggles stand."""
        layout = (width >= TREE_WIDTH, width >= CHAT_WIDTH)
        if layout == self._layout:
            return
        self._layout = layout
        focused = self.focused
        for pane, shown in ((self.file_tree, layout[0]), (self.chat, layout[1])):
            pane.display = shown
            if not shown and focused is not None and (focused is pane or pane in focused.ancestors):
                self._focus_editor()  # the focus must not vanish with the pane (keys went nowhere)

    # -- engine -----------------------------------------------------------------------------------

    @property
    def engine(self) -> Engine | None:
        return self.engines.engine

    @property
    def engine_ready(self) -> threading.Event:
        return self.engines.ready

    @work(exclusive=True, group="engine", exit_on_error=False)
    async def _start_engine(self) -> None:
        await self.engines.start()

    async def action_switch_draft(self, kind: DraftKind) -> None:
        await self.engines.switch_draft(kind)

    async def action_forget_session(self) -> None:
        await self.engines.forget_session()

    async def on_unmount(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        await self.engines.close()

    # -- files: routed to the editor tabs ---------------------------------------------------------

    @on(FileTree.FileSelected)
    async def _file_selected(self, event: FileTree.FileSelected) -> None:
        """A click on a file (Enter opens through the tree's own binding, `FileTree.action_open_file`).
        Either way the file opens while the app takes no key: keys typed meanwhile wait in the
        app's queue and go, in order, to the editor, which has the focus on return (or to the
        tree, when the file could not be opened: the notice says why)."""
        await self.open_file(event.path)

    def on_text_area_selection_changed(self, event: CodeEditor.SelectionChanged) -> None:
        editor = event.text_area
        if isinstance(editor, CodeEditor) and editor.is_attached and editor is self.active_editor:
            row, col = editor.cursor_location
            self.status_model.file_label = f"{row + 1}:{col + 1} {editor.language_label}"
            self.status_bar.mark_dirty()

    def on_chat_pane_leave(self, event: ChatPane.Leave) -> None:
        """Esc in an idle chat: back to the file, the pane stays open (ctrl+t hides it)."""
        self._focus_editor()

    def on_chat_pane_busy(self, event: ChatPane.Busy) -> None:
        self.completer.blocked_by = "chat" if event.busy else None

    def on_editor_tabs_saved(self, event: EditorTabs.Saved) -> None:
        if event.created:
            self.file_tree.refresh_folders({event.path.parent})  # show it
            self._update_watch()

    def action_save(self) -> None:
        self.editor_tabs.save_active()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The tab keys act on the main screen only: under a dialog, or the statistics screen,
        they must not switch or close the tabs behind it."""
        if action in ("close_tab", "cycle_tab", "edit", "apply_code_block") and len(self.screen_stack) > 1:
            return False
        if action == "quit" and self._asking_to_quit():
            return False  # ctrl+q in the quit dialog: that dialog is the answer, not a second one
        if action == "hide_help_panel" and not self.screen.query("HelpPanel"):
            return False  # Esc goes on to the focused widget
        return super().check_action(action, parameters)

    def _asking_to_quit(self) -> bool:
        return any(worker.group == "quit" and not worker.is_finished for worker in self.workers)

    async def action_close_tab(self) -> None:
        await self.editor_tabs.close_active()

    def action_cycle_tab(self, step: int) -> None:
        self.editor_tabs.cycle(step)

    async def action_quit(self) -> None:
        if not self.editor_tabs.unsaved_files():
            return self.exit(0)
        self.editor_tabs.ask_before_quit(lambda: self.exit(0))

    # -- watching files ---------------------------------------------------------------------------

    def _config_paths(self) -> set[Path]:
        paths = {p for p in self.settings.files_read if p is not None}
        paths.add(self.user_config)
        paths.add(self.root / ".specterm.toml")
        return {Path(p).absolute() for p in paths}

    @on(EditorTabs.FilesChanged)
    @on(FileTree.FoldersChanged)
    def _update_watch(self) -> None:
        if self.watcher is None:
            return
        tree = self.file_tree
        paths = self.editor_tabs.paths() | self._config_paths() | self.theming.set.files(self.spectheme)
        self.watcher.set_paths(paths | tree.rule_files(), {self.user_theme_dir}, listings=tree.open_folders())

    async def _files_changed(self, changes: dict[Path, Change]) -> None:
        self.file_tree.follow(changes)
        config_paths, theme_paths = self._config_paths(), self.theming.set.files(self.spectheme)
        if any(p in config_paths for p in changes):
            self.reload_config()
        if any(p in theme_paths or p.parent == self.user_theme_dir.absolute() for p in changes):
            self.reload_themes()
        tabs = self.editor_tabs
        for path in changes:
            open_file = tabs.find_open(path)
            if open_file is not None:
                await tabs.file_changed_on_disk(open_file)

    def reload_config(self) -> None:
        """Re-read the config files and apply what can change live (tui/config_reload.py)."""
        reload_config(self, self._reload_settings or (lambda: load_settings(project_dir=self.path)))

    # -- themes (tui/theming.py) -------------------------------------------------------------------

    @property
    def themes(self) -> dict[str, SpectermTheme]:
        return self.theming.set.themes

    @property
    def spectheme(self) -> SpectermTheme:
        return self.theming.current

    def reload_themes(self) -> None:
        self.theming.reload()

    def action_set_theme(self, name: str) -> None:
        self.theming.switch(name)

    def action_change_theme(self) -> None:
        """Textual's "Theme" picker lists specterm's themes only, saved like "Theme: X"."""
        self.search_commands([(title, switch, help_text) for title, help_text, switch in self.theming.choices()],
                             placeholder="Search for themes…")

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """The palette's Screenshot (tui/screenshot.py): saved where a folder exists, said plainly."""
        saved = save_screenshot(self, filename, path)
        return str(saved) if saved is not None else None

    def load_theme_path(self, path: Path) -> bool:
        return self.theming.load_file(path)

    # -- panes and actions ------------------------------------------------------------------------

    def _focus_editor(self) -> None:
        if self.active_editor is not None:
            self.active_editor.focus()

    def action_toggle_tree(self) -> None:
        tree = self.file_tree
        tree.display = not tree.display
        tree.focus() if tree.display else self._focus_editor()

    def action_toggle_chat(self) -> None:
        if self.chat.display:
            self.chat.display = False
            self._focus_editor()
        else:
            self.action_ask()  # open means ready for a question: typing must not go into the file

    def action_ask(self) -> None:
        self.chat.display = True
        self.chat.focus_input()

    def action_help_quit(self) -> None:
        """ctrl+c outside a text box (where it copies): say how to quit, in plain words."""
        self.notify("Press ctrl+q to quit specterm.", title="Do you want to quit?")

    def action_find(self) -> None:
        self.find_bar.open()

    def action_find_next(self) -> None:
        self.find_bar.find_next()

    def on_key(self, event) -> None:
        if event.key == "escape" and self.find_bar.has_class("-open"):
            self.find_bar.close()

    def action_stats(self) -> None:
        if self.engine is not None and self.engine_ready.is_set():
            session = self.engine.session_stats()
        else:
            session = self.status_model.session
        self.push_screen(StatsScreen(session, list(self.engines.acceptance_history), self.status_model))

    def action_insert_code_block(self) -> None:
        editor = self.active_editor
        if editor is None:
            self.notify("No file open to insert the code block into.", severity="warning", timeout=4)
            return
        block, why_not = self.chat.usable_code_block()
        if block is None:
            self.notify(f"Not inserted: {why_not}.", severity="warning", timeout=6)
            return
        editor.insert_block(block)
        editor.focus()

    def action_edit(self) -> None:
        self.edits.open()

    def action_apply_code_block(self) -> None:
        self.edits.apply_chat_block()

    def action_copy_code_block(self) -> None:
        self.chat.copy_last_code_block()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        # Textual's own "Quit" runs the same action as specterm's entry (which names its key): one is enough.
        yield from (command for command in super().get_system_commands(screen) if command.title != "Quit")
        yield from palette_commands(self)


def run_app(settings: Settings, path: Path, *, reload_settings: Callable[[], Settings] | None = None) -> int:
    """Run the TUI until the user quits; returns the exit code."""
    app = SpectermApp(settings, path, reload_settings=reload_settings)
    result = app.run()
    if app.return_code:  # the app stopped on an error (Textual printed it): never report success
        return app.return_code
    return int(result or 0)
