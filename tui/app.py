"""The specterm application: file tree, editor tabs with ghost-text completions, chat pane, status.

Entry point for the CLI: `run_app(settings, path) -> exit code`. Tests construct `SpectermApp`
directly and may hand in an engine they started themselves (`engine=`); otherwise the app builds a
`LocalEngine` from the settings and loads it in a worker while the UI is already usable.

The app talks to the engine only through the `Engine` protocol: completions and chat run in Textual
workers, model loading runs on the engine's own thread, and every event is mirrored into the status
bar at most a few times a second.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input, Static, TabbedContent, TabPane
from watchfiles import Change

from specterm.engine import (
    ContextFile,
    DraftSettings,
    Engine,
    EngineError,
    Event,
    Finished,
    StatsUpdate,
)

from .config import ConfigError, Settings, load_settings, user_config_path
from .screens.choice import ChoiceScreen
from .screens.stats import StatsScreen
from .textfile import FileLoadError, TextFile
from .themes import DEFAULT_THEME, SpectermTheme, ThemeError, load_theme_file, load_themes
from .watch import FileWatcher
from .widgets.chat import ChatPane
from .widgets.completion import Completer, CompletionOptions
from .widgets.editor import CodeEditor
from .widgets.file_tree import FileTree
from .widgets.status_bar import StatusBar, StatusModel

TREE_WIDTH = 100  # from this many columns the file tree starts open
CHAT_WIDTH = 140  # from this many columns the chat pane starts open too
CONTEXT_LINES = 30  # lines around the cursor sent with a chat question when nothing is selected
NEIGHBOUR_FILES = 2  # other open files offered as context for a completion
NEIGHBOUR_CHARS = 3000


@dataclass
class OpenFile:
    file: TextFile
    editor: CodeEditor
    pane_id: str
    saved_text: str
    deleted: bool = False

    @property
    def dirty(self) -> bool:
        return self.editor.text != self.saved_text


class FindBar(Horizontal):
    """ctrl+f: find text in the active editor; Enter and F3 go to the next match."""

    DEFAULT_CSS = """
    FindBar { height: 1; display: none; background: $panel; }
    FindBar.-open { display: block; }
    FindBar Input { border: none; height: 1; padding: 0 1; width: 1fr; }
    FindBar Static { width: auto; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static("Find:")
        yield Input(placeholder="text (Enter: next, Esc: close)", id="find-input")


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
        Binding("f3", "find_next", "Find next", show=False),
        Binding("f9", "stats", "Stats"),
        Binding("alt+w", "close_tab", "Close tab", show=False),
        Binding("ctrl+pagedown", "next_tab", "Next tab", show=False),
        Binding("ctrl+pageup", "previous_tab", "Previous tab", show=False),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(
        self,
        settings: Settings,
        path: Path | str = ".",
        *,
        engine: Engine | None = None,
        reload_settings: Callable[[], Settings] | None = None,
        user_theme_dir: Path | None = None,
        watch: bool = True,
        environ: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        env = dict(os.environ if environ is None else environ)
        self.settings = settings
        self.path = Path(path).absolute()
        self.root = self.path if self.path.is_dir() else self.path.parent
        self.engine: Engine | None = engine
        self._owns_engine = engine is None
        self._reload_settings = reload_settings
        self.user_config = user_config_path(env)  # where a theme choice is persisted
        self.user_theme_dir = user_theme_dir or (self.user_config.parent / "themes")
        self.watch_files = watch
        self.over_ssh = bool(env.get("SSH_CONNECTION"))
        if self.over_ssh:
            self.animation_level = "none"
        self.files: dict[str, OpenFile] = {}  # by pane id
        self._pane_counter = 0
        self.status_model = StatusModel(demo=settings.demo, show_stats=settings.ui.show_stats)
        self.acceptance_history: list[float] = []
        self.frozen_figures: dict[str, float] = {}
        self.completer = Completer(
            CompletionOptions.from_config(settings.completion),
            event_sink=self._engine_event,
            context_files=self._context_files,
        )
        self.themes: dict[str, SpectermTheme] = {}
        self.theme_errors: list[ThemeError] = []
        self.spectheme = self._load_themes(settings.ui.theme)
        self._layout: tuple[bool, bool] | None = None
        self.watcher: FileWatcher | None = None
        self._prompting: set[str] = set()  # pane ids with an open "changed on disk" question
        self.engine_ready = threading.Event()

    def notify(self, message: str, *, title: str = "", severity="information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Notices carry file names, config keys ([model]) and model output: never markup."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield FileTree(self.root, id="tree")
            with Vertical(id="center"):
                yield Static(self._welcome_text(), id="welcome")
                yield TabbedContent(id="tabs")
                yield FindBar(id="find")
            yield ChatPane(
                system_prompt=self.settings.chat.system_prompt,
                max_tokens=self.settings.chat.max_tokens,
                context=self._chat_context,
                event_sink=self._engine_event,
                id="chat",
            )
        yield StatusBar(self.status_model, id="status")
        yield Footer()

    def _welcome_text(self) -> str:
        return (
            "specterm\n\n"
            "ctrl+b  files          ctrl+p  every action\n"
            "ctrl+l  ask the chat   ctrl+q  quit\n\n"
            "Suggestions appear when you pause typing:\n"
            "Tab accepts · ctrl+right a word · End a line · Esc dismisses"
        )

    async def on_mount(self) -> None:
        self._apply_theme(self.spectheme, persist=False)
        self.query_one(TabbedContent).display = False
        self.status_model.message = "loading the model"
        self._update_layout(self.size.width)
        for err in self.theme_errors:
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

    def on_resize(self, event) -> None:
        self._update_layout(event.size.width)

    def _update_layout(self, width: int) -> None:
        """Side panes open by default only where the editor keeps room for code; crossing a
        breakpoint resets them, in between the user's toggles stand."""
        layout = (width >= TREE_WIDTH, width >= CHAT_WIDTH)
        if layout == self._layout:
            return
        self._layout = layout
        self.query_one("#tree").display = layout[0]
        self.query_one("#chat").display = layout[1]

    # -- engine -----------------------------------------------------------------------------------

    @work(exclusive=True, group="engine", exit_on_error=False)
    async def _start_engine(self) -> None:
        engine = self.engine
        try:
            if engine is None:
                if self.settings.engine.backend == "openai":  # an OpenAI-compatible server
                    from specterm.engine.remote.engine import RemoteEngine

                    engine = RemoteEngine(self.settings.remote_settings())
                else:
                    from specterm.engine.llamacpp.local import LocalEngine  # only here: tests may bring their own

                    engine = LocalEngine(self.settings.engine_settings(), on_progress=self._progress)
                self.engine = engine
            await engine.start()
        except EngineError as err:
            self.status_model.state = "error"
            self.status_model.message = err.message
            self.query_one(StatusBar).mark_dirty()
            self.notify(str(err), title="The model could not be loaded", severity="error", timeout=30)
            return
        self.completer.engine = engine
        self.query_one(ChatPane).engine = engine
        self.status_model.update_info(engine.info, demo=self.settings.demo)
        self.status_model.state = "idle"
        self.query_one(StatusBar).mark_dirty()
        self.engine_ready.set()
        self._first_run_hints()

    def freeze_figures(self, **figures: float) -> None:
        """Show fixed values for timing-dependent figures (tokens_per_second, acceptance,
        tokens_per_pass, draft_length, drafting) everywhere they are displayed. A display-level
        hook for deterministic snapshots; the engine and its statistics are untouched."""
        self.frozen_figures.update(figures)
        self.query_one(StatusBar).frozen_figures = self.frozen_figures
        self.query_one(StatusBar).mark_dirty()
        self.query_one(ChatPane).frozen_figures = self.frozen_figures

    def _progress(self, message: str, fraction: float) -> None:
        def show() -> None:
            self.status_model.message = f"{message} ({fraction:.0%})"
            self.query_one(StatusBar).mark_dirty()

        if threading.current_thread() is threading.main_thread():
            show()
        else:
            try:
                self.call_from_thread(show)
            except RuntimeError:
                pass  # the app is shutting down

    def _first_run_hints(self) -> None:
        if self.settings.demo:
            self.notify(
                "This is the demo pair (SmolLM2-135M + prompt lookup): tiny and weak at code. "
                "For real work, `specterm pull qwen2.5-coder-7b` downloads and configures a real "
                "pair (`specterm models` lists others), or set [model] target and draft in "
                "~/.config/specterm/config.toml.",
                title="Demo model",
                timeout=12,
            )
        if not self.files:
            self.notify("Pick a file in the tree (ctrl+b) to start; ctrl+p lists every action.", timeout=8)

    def _engine_event(self, kind: str, event: Event) -> None:
        model = self.status_model
        if isinstance(event, StatsUpdate):
            model.live = event.stats
            model.state = "chatting" if kind == "chat" else "completing"
        elif isinstance(event, Finished):
            model.live = None
            if event.stats.tokens or event.stats.target_passes:
                model.last = event.stats
                if event.stats.acceptance is not None:
                    self.acceptance_history.append(event.stats.acceptance)
            if self.engine is not None:
                model.session = self.engine.session_stats()
            chat_running = kind != "chat" and self.query_one(ChatPane).streaming
            model.state = "chatting" if chat_running else "idle"
        else:
            model.state = "chatting" if kind == "chat" else "completing"
        self.query_one(StatusBar).mark_dirty()

    async def action_switch_draft(self, kind: str) -> None:
        """Switch the drafter at run time: "lookup", "none" or "model" (the configured draft)."""
        if self.engine is None or not self.engine_ready.is_set():
            self.notify("The model is still loading.", severity="warning")
            return
        if kind == "model":
            draft = self.settings.engine_settings().draft
            if draft.kind != "model":
                self.notify("No draft model is configured: set [model] draft to a GGUF path.",
                            severity="warning", timeout=8)
                return
        else:
            draft = DraftSettings(kind=kind)  # type: ignore[arg-type]
        self.status_model.message = f"switching draft to {kind}"
        try:
            await self.engine.set_drafter(draft)
        except EngineError as err:
            self.notify(str(err), title="Draft not switched", severity="error", timeout=15)
            return
        self.status_model.update_info(self.engine.info, demo=self.settings.demo)
        self.query_one(StatusBar).mark_dirty()
        self.notify(f"Drafting with: {self.engine.info.draft_name}", timeout=4)

    async def on_unmount(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        if self._owns_engine and self.engine is not None:
            try:
                await self.engine.close()
            except Exception:
                pass

    # -- files ------------------------------------------------------------------------------------

    @property
    def active_file(self) -> OpenFile | None:
        tabs = self.query_one(TabbedContent)
        return self.files.get(tabs.active) if tabs.active else None

    @property
    def active_editor(self) -> CodeEditor | None:
        open_file = self.active_file
        return open_file.editor if open_file else None

    def find_open(self, path: Path) -> OpenFile | None:
        path = path.absolute()
        for open_file in self.files.values():
            if open_file.file.path == path:
                return open_file
        return None

    async def open_file(self, path: Path, *, create: bool = False) -> CodeEditor | None:
        """Open `path` in a tab (or switch to it); with `create`, a missing file opens empty and
        the first save creates it."""
        path = Path(path).absolute()
        existing = self.find_open(path)
        tabs = self.query_one(TabbedContent)
        if existing is not None:
            tabs.active = existing.pane_id
            existing.editor.focus()
            return existing.editor
        try:
            text_file = TextFile(path, "") if create and not path.exists() else TextFile.load(path)
        except FileLoadError as err:
            self.notify(str(err), title="Cannot open", severity="error")
            return None
        self._pane_counter += 1
        pane_id = f"file-{self._pane_counter}"
        editor = CodeEditor(text_file.text, path=path, theme=self.spectheme, completer=self.completer)
        if self.over_ssh:
            editor.cursor_blink = False  # every blink is a redraw sent over the connection
        self.files[pane_id] = OpenFile(text_file, editor, pane_id, saved_text=editor.text)
        await tabs.add_pane(TabPane(self._tab_label(self.files[pane_id]), editor, id=pane_id))
        tabs.display = True
        self.query_one("#welcome").display = False
        tabs.active = pane_id
        editor.move_cursor((0, 0))
        editor.focus()
        self._update_watch()
        if self.engine is not None and self.engine_ready.is_set() and text_file.text:
            await self.engine.remember(text_file.text)  # the session drafter's memory (queued)
        return editor

    def _tab_label(self, open_file: OpenFile) -> str:
        name = open_file.file.path.name
        if open_file.deleted:
            return f"{name} (deleted)"
        return f"● {name}" if open_file.dirty else name

    def _refresh_tab(self, open_file: OpenFile) -> None:
        try:
            tab = self.query_one(TabbedContent).get_tab(open_file.pane_id)
        except Exception:
            return
        tab.label = self._tab_label(open_file)

    @on(FileTree.FileSelected)
    async def _file_selected(self, event: FileTree.FileSelected) -> None:
        await self.open_file(event.path)

    @on(CodeEditor.Changed)
    def _editor_changed(self, event: CodeEditor.Changed) -> None:
        for open_file in self.files.values():
            if open_file.editor is event.text_area:
                self._refresh_tab(open_file)

    @on(CodeEditor.SelectionChanged)
    def _cursor_moved(self, event: CodeEditor.SelectionChanged) -> None:
        editor = event.text_area
        if isinstance(editor, CodeEditor) and editor is self.active_editor:
            row, col = editor.cursor_location
            self.status_model.file_label = f"{row + 1}:{col + 1} {editor.language_label}"
            self.query_one(StatusBar).mark_dirty()

    @on(ChatPane.Busy)
    def _chat_busy(self, event: ChatPane.Busy) -> None:
        self.completer.blocked_by = "chat" if event.busy else None

    def action_save(self) -> None:
        open_file = self.active_file
        if open_file is None:
            self.notify("No file to save.", severity="warning", timeout=3)
            return
        self._save(open_file)

    @work(group="save", exit_on_error=False)
    async def _save(self, open_file: OpenFile) -> bool:
        if open_file.file.changed_on_disk() and not open_file.deleted:
            answer = await self.push_screen_wait(
                ChoiceScreen(
                    f"{open_file.file.path.name} changed on disk since it was loaded. "
                    "Overwrite it with your version?",
                    [("overwrite", "Overwrite"), ("cancel", "Cancel")],
                )
            )
            if answer != "overwrite":
                return False
        return self.save_now(open_file)

    def save_now(self, open_file: OpenFile) -> bool:
        text = open_file.editor.text
        created = not open_file.file.path.exists()
        try:
            open_file.file.save(text)
        except OSError as err:
            self.notify(f"{open_file.file.path}: {err.strerror or err}", title="Not saved", severity="error")
            return False
        open_file.saved_text = text
        open_file.deleted = False
        self._refresh_tab(open_file)
        if created:
            self.query_one(FileTree).refresh_folders({open_file.file.path.parent})  # show it
            self._update_watch()
        self.notify(f"Saved {open_file.file.path.name}", timeout=2)
        return True

    async def action_close_tab(self) -> None:
        open_file = self.active_file
        if open_file is None:
            return
        if open_file.dirty:
            self._confirm_close(open_file)
        else:
            await self._close(open_file)

    @work(group="close", exit_on_error=False)
    async def _confirm_close(self, open_file: OpenFile) -> None:
        answer = await self.push_screen_wait(
            ChoiceScreen(
                f"{open_file.file.path.name} has unsaved changes.",
                [("save", "Save and close"), ("discard", "Discard"), ("cancel", "Cancel")],
            )
        )
        if answer == "save" and self.save_now(open_file):
            await self._close(open_file)
        elif answer == "discard":
            await self._close(open_file)

    async def _close(self, open_file: OpenFile) -> None:
        self.files.pop(open_file.pane_id, None)
        tabs = self.query_one(TabbedContent)
        await tabs.remove_pane(open_file.pane_id)
        if not self.files:
            tabs.display = False
            self.query_one("#welcome").display = True
        self._update_watch()

    def action_next_tab(self) -> None:
        self._cycle_tab(1)

    def action_previous_tab(self) -> None:
        self._cycle_tab(-1)

    def _cycle_tab(self, step: int) -> None:
        ids = list(self.files)
        if not ids:
            return
        tabs = self.query_one(TabbedContent)
        index = ids.index(tabs.active) if tabs.active in ids else 0
        tabs.active = ids[(index + step) % len(ids)]
        self.files[tabs.active].editor.focus()

    async def action_quit(self) -> None:
        dirty = [f for f in self.files.values() if f.dirty]
        if not dirty:
            self.exit(0)
            return
        self._confirm_quit(dirty)

    @work(group="quit", exit_on_error=False)
    async def _confirm_quit(self, dirty: list[OpenFile]) -> None:
        names = ", ".join(f.file.path.name for f in dirty)
        answer = await self.push_screen_wait(
            ChoiceScreen(
                f"Unsaved changes in {names}.",
                [("save", "Save all and quit"), ("discard", "Quit without saving"), ("cancel", "Cancel")],
            )
        )
        if answer == "save":
            if all(self.save_now(f) for f in dirty):
                self.exit(0)
        elif answer == "discard":
            self.exit(0)

    # -- watching files ---------------------------------------------------------------------------

    def _config_paths(self) -> set[Path]:
        paths = {p for p in self.settings.files_read if p is not None}
        paths.add(self.user_config)
        paths.add(self.root / ".specterm.toml")
        return {Path(p).absolute() for p in paths}

    def _theme_paths(self) -> set[Path]:
        from .themes import builtin_theme_dir, theme_files

        paths = set(theme_files([builtin_theme_dir(), self.user_theme_dir]))
        if self.spectheme.source is not None:
            paths.add(self.spectheme.source)
        return {p.absolute() for p in paths}

    def _update_watch(self) -> None:
        if self.watcher is None:
            return
        tree = self.query_one(FileTree)
        paths = {f.file.path for f in self.files.values()} | self._config_paths() | self._theme_paths()
        self.watcher.set_paths(paths | tree.rule_files(), {self.user_theme_dir}, listings=tree.open_folders())

    @on(FileTree.FoldersChanged)
    def _tree_folders_changed(self, _event: FileTree.FoldersChanged) -> None:
        self._update_watch()

    def _refresh_tree(self, changes: dict[Path, Change]) -> None:
        """Created, deleted or renamed entries reload their folder's node; a changed ignore file
        reloads every open folder (what is hidden may have changed)."""
        tree = self.query_one(FileTree)
        if tree.rule_files() & changes.keys():
            tree.gitignore.invalidate()
            tree.refresh_folders(tree.open_folders())
            return
        folders = {path.parent for path, change in changes.items() if change != Change.modified}
        if folders:
            tree.refresh_folders(folders)

    async def _files_changed(self, changes: dict[Path, Change]) -> None:
        self._refresh_tree(changes)
        config_paths, theme_paths = self._config_paths(), self._theme_paths()
        if any(p in config_paths for p in changes):
            self.reload_config()
        if any(p in theme_paths or p.parent == self.user_theme_dir.absolute() for p in changes):
            self.reload_themes()
        for path in changes:
            open_file = self.find_open(path)
            if open_file is not None:
                await self.file_changed_on_disk(open_file)

    async def file_changed_on_disk(self, open_file: OpenFile) -> None:
        path = open_file.file.path
        if not path.exists():
            if not open_file.deleted:
                open_file.deleted = True
                self._refresh_tab(open_file)
                self.notify(f"{path.name} was deleted on disk; ctrl+s writes it again.",
                            severity="warning", timeout=8)
            return
        if not open_file.file.changed_on_disk():
            if open_file.deleted:
                open_file.deleted = False
                self._refresh_tab(open_file)
            return  # our own save, or a touch without a content change
        if not open_file.dirty:
            self._reload(open_file)
            self.notify(f"Reloaded {path.name} (changed on disk).", timeout=3)
            return
        if open_file.pane_id in self._prompting:
            return
        self._ask_reload(open_file)

    @work(group="ask-reload", exit_on_error=False)
    async def _ask_reload(self, open_file: OpenFile) -> None:
        self._prompting.add(open_file.pane_id)
        try:
            answer = await self.push_screen_wait(
                ChoiceScreen(
                    f"{open_file.file.path.name} changed on disk and you have unsaved edits.",
                    [("reload", "Load disk version"), ("keep", "Keep my edits")],
                )
            )
        finally:
            self._prompting.discard(open_file.pane_id)
        if answer == "reload":
            self._reload(open_file)
        else:
            self.notify("Kept your edits; saving will ask before overwriting the disk version.", timeout=5)

    def _reload(self, open_file: OpenFile) -> None:
        try:
            fresh = TextFile.load(open_file.file.path)
        except FileLoadError as err:
            self.notify(str(err), severity="error")
            return
        editor = open_file.editor
        cursor = editor.cursor_location
        scroll = editor.scroll_offset
        open_file.file = fresh
        editor.load_text(fresh.text)
        open_file.saved_text = editor.text
        open_file.deleted = False
        row = min(cursor[0], editor.document.line_count - 1)
        col = min(cursor[1], len(editor.document[row]))
        editor.move_cursor((row, col))
        editor.scroll_to(scroll.x, scroll.y, animate=False)
        self._refresh_tab(open_file)

    def reload_config(self) -> None:
        """Re-read the config files (via the config module) and apply what can change live."""
        if self._reload_settings is not None:
            loader = self._reload_settings
        else:
            def loader() -> Settings:
                return load_settings(project_dir=self.path)
        try:
            fresh = loader()
        except ConfigError as err:
            self.notify(str(err), title="Config not reloaded", severity="error", timeout=15)
            return
        old = self.settings
        self.settings = fresh
        self.completer.options = CompletionOptions.from_config(fresh.completion)
        self.status_model.show_stats = fresh.ui.show_stats
        self.query_one(StatusBar).mark_dirty()
        chat = self.query_one(ChatPane)
        chat.system_prompt = fresh.chat.system_prompt
        chat.max_tokens = fresh.chat.max_tokens
        if fresh.ui.theme != old.ui.theme:
            theme = self.themes.get(self._theme_name(fresh.ui.theme))
            if theme is not None:
                self._apply_theme(theme, persist=False)
        if fresh.model != old.model or fresh.speculative != old.speculative or fresh.sampling != old.sampling:
            self.notify("Config reloaded. Model, speculative and sampling changes apply after a restart.",
                        title="Config", timeout=6)
        else:
            self.notify("Config reloaded.", timeout=3)
        self._update_watch()

    # -- themes -----------------------------------------------------------------------------------

    @staticmethod
    def _theme_name(name: str) -> str:
        return DEFAULT_THEME if name in ("", "default") else name

    def _load_themes(self, wanted: str) -> SpectermTheme:
        self.themes, self.theme_errors = load_themes(self.user_theme_dir)
        name = self._theme_name(wanted)
        theme = self.themes.get(name) or self.themes.get(DEFAULT_THEME)
        if name not in self.themes:
            self.theme_errors.append(ThemeError(Path(name), f"no theme named {name!r}; using {DEFAULT_THEME}"))
        if theme is None:  # the shipped themes are missing: a broken install, but keep running
            raise RuntimeError("specterm's built-in themes are missing; reinstall specterm")
        for spec in self.themes.values():
            self.register_theme(spec.textual)
        return theme

    def reload_themes(self) -> None:
        current = self.spectheme.name
        themes, errors = load_themes(self.user_theme_dir)
        for err in errors:
            self.notify(str(err), title="Theme not loaded", severity="warning", timeout=10)
        self.themes = themes
        for spec in themes.values():
            self.register_theme(spec.textual)
        if current in themes:
            self._apply_theme(themes[current], persist=False)

    def _apply_theme(self, theme: SpectermTheme, *, persist: bool) -> None:
        self.spectheme = theme
        self.register_theme(theme.textual)
        if self.theme == theme.name:
            self._watch_theme(theme.name)  # same name, new colours (a reloaded file): re-apply
        else:
            self.theme = theme.name
        for open_file in self.files.values():
            open_file.editor.apply_theme(theme)
        if persist:
            try:
                from .config_writer import plan_edit

                plan_edit(self.user_config, {"ui": {"theme": theme.name}}).write()
            except Exception as err:  # persisting is a convenience: never fail the switch
                self.notify(f"Theme applied but not saved: {err}", severity="warning", timeout=8)

    def action_set_theme(self, name: str) -> None:
        theme = self.themes.get(name)
        if theme is None:
            self.notify(f"No theme named {name!r}.", severity="error")
            return
        self._apply_theme(theme, persist=True)

    def load_theme_path(self, path: Path) -> bool:
        """Load and apply one theme file; a broken file gives a notice naming it."""
        try:
            theme = load_theme_file(path)
        except ThemeError as err:
            self.notify(str(err), title="Theme not loaded", severity="error", timeout=10)
            return False
        self.themes[theme.name] = theme
        self._apply_theme(theme, persist=False)
        return True

    # -- panes and actions ------------------------------------------------------------------------

    def action_toggle_tree(self) -> None:
        tree = self.query_one("#tree")
        tree.display = not tree.display
        if tree.display:
            tree.focus()
        elif self.active_editor:
            self.active_editor.focus()

    def action_toggle_chat(self) -> None:
        chat = self.query_one("#chat")
        chat.display = not chat.display
        if not chat.display and self.active_editor:
            self.active_editor.focus()

    def action_ask(self) -> None:
        chat = self.query_one("#chat")
        chat.display = True
        self.query_one("#chat-input", Input).focus()

    def action_find(self) -> None:
        bar = self.query_one(FindBar)
        bar.add_class("-open")
        self.query_one("#find-input", Input).focus()

    @on(Input.Submitted, "#find-input")
    def _find_submitted(self) -> None:
        self.action_find_next()

    def on_key(self, event) -> None:
        if event.key == "escape" and self.query_one(FindBar).has_class("-open"):
            self.query_one(FindBar).remove_class("-open")
            if self.active_editor:
                self.active_editor.focus()

    def action_find_next(self) -> None:
        editor = self.active_editor
        needle = self.query_one("#find-input", Input).value
        if editor is None or not needle:
            return
        text = editor.text
        lines = text.split("\n")
        row, col = editor.selection.end
        start = sum(len(line) + 1 for line in lines[:row]) + col
        index = text.find(needle, start)
        if index < 0:
            index = text.find(needle)
        if index < 0:
            self.notify(f"Not found: {needle}", severity="warning", timeout=2)
            return
        before = text[:index]
        r = before.count("\n")
        c = index - (before.rfind("\n") + 1)
        end = text[: index + len(needle)]
        editor.selection = editor.selection.__class__((r, c), (end.count("\n"), len(end) - (end.rfind("\n") + 1)))
        editor.scroll_cursor_visible()

    def action_stats(self) -> None:
        session = self.engine.session_stats() if self.engine is not None and self.engine_ready.is_set() else self.status_model.session
        self.push_screen(StatsScreen(session, list(self.acceptance_history), frozen=self.frozen_figures))

    def action_insert_code_block(self) -> None:
        editor = self.active_editor
        block = self.query_one(ChatPane).last_code_block()
        if editor is None or block is None:
            self.notify("No code block in the last answer, or no file open.", severity="warning", timeout=3)
            return
        editor.history.checkpoint()
        editor.replace(block, *editor.selection) if not editor.selection.is_empty else editor.insert(block)
        editor.history.checkpoint()
        editor.focus()

    def action_copy_code_block(self) -> None:
        block = self.query_one(ChatPane).last_code_block()
        if block is None:
            self.notify("No code block in the last answer.", severity="warning", timeout=3)
            return
        self.copy_to_clipboard(block)  # OSC 52: works over SSH
        self.notify("Code block copied.", timeout=2)

    def action_clear_chat(self) -> None:
        self.query_one(ChatPane).clear()

    def action_complete(self) -> None:
        if self.active_editor:
            self.active_editor.action_complete()

    def _editor_action(self, name: str) -> None:
        editor = self.active_editor
        if editor is None:
            return
        getattr(editor, f"action_{name}")()
        editor.focus()

    def _chat_context(self) -> str:
        open_file = self.active_file
        if open_file is None:
            return ""
        editor = open_file.editor
        name = open_file.file.path.name
        language = editor.language_label.lower()
        if not editor.selection.is_empty:
            return f"File: {name}\nSelected code:\n```{language}\n{editor.selected_text}\n```"
        row, _ = editor.cursor_location
        lines = editor.text.split("\n")
        start, end = max(0, row - CONTEXT_LINES // 2), min(len(lines), row + CONTEXT_LINES // 2)
        snippet = "\n".join(lines[start:end])
        return f"File: {name} (lines {start + 1}-{end}, cursor at line {row + 1})\n```{language}\n{snippet}\n```"

    def _context_files(self, path: str | None) -> tuple[ContextFile, ...]:
        others = [f for f in self.files.values() if str(f.file.path) != path]
        return tuple(
            ContextFile(str(f.file.path), f.editor.text[:NEIGHBOUR_CHARS]) for f in others[:NEIGHBOUR_FILES]
        )

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        commands: list[tuple[str, str, Callable]] = [
            ("Save file", "Write the active file to disk (ctrl+s)", self.action_save),
            ("Close tab", "Close the active file (alt+w)", self.action_close_tab),
            ("Next tab", "Switch to the next open file (ctrl+pagedown)", self.action_next_tab),
            ("Previous tab", "Switch to the previous open file (ctrl+pageup)", self.action_previous_tab),
            ("Toggle file tree", "Show or hide the files (ctrl+b)", self.action_toggle_tree),
            ("Toggle chat pane", "Show or hide the chat (ctrl+t)", self.action_toggle_chat),
            ("Ask about the code", "Focus the chat question box (ctrl+l)", self.action_ask),
            ("Find", "Find text in the active file (ctrl+f, F3 next)", self.action_find),
            ("Complete now", "Ask for an inline suggestion at the cursor (ctrl+space)", self.action_complete),
            ("Accept suggestion", "Insert the whole suggestion (Tab)", lambda: self._editor_action("accept_completion")),
            ("Accept next word", "Insert the suggestion's next word (ctrl+right)", lambda: self._editor_action("accept_word")),
            ("Accept next line", "Insert the suggestion's next line (End)", lambda: self._editor_action("accept_line")),
            ("Dismiss suggestion", "Hide the suggestion and stop its request (Esc)", lambda: self._editor_action("dismiss_completion")),
            ("Find next", "Go to the next match (F3)", self.action_find_next),
            ("Quit", "Leave specterm, asking about unsaved changes (ctrl+q)", lambda: self.run_action("quit")),
            ("Statistics", "Acceptance by draft position and over time (F9)", self.action_stats),
            ("Insert code block", "Insert the last answer's code block at the cursor", self.action_insert_code_block),
            ("Copy code block", "Copy the last answer's code block (OSC 52)", self.action_copy_code_block),
            ("Clear chat", "Forget the conversation so far", self.action_clear_chat),
            ("Reload config", "Re-read config.toml files now", self.reload_config),
            ("Draft: lookup", "Draft with prompt lookup (no model)", lambda: self.run_action("switch_draft('lookup')")),
            ("Draft: none", "Plain decoding, no drafting", lambda: self.run_action("switch_draft('none')")),
            ("Draft: model", "Draft with the configured draft model", lambda: self.run_action("switch_draft('model')")),
        ]
        for name in sorted(self.themes):
            commands.append((f"Theme: {name}", f"Switch to the {name} theme (saved to your config)",
                             lambda name=name: self.action_set_theme(name)))
        for title, help_text, callback in commands:
            yield SystemCommand(title, help_text, callback)


def run_app(settings: Settings, path: Path, *, reload_settings: Callable[[], Settings] | None = None) -> int:
    """Run the TUI until the user quits; returns the exit code."""
    app = SpectermApp(settings, path, reload_settings=reload_settings)
    result = app.run()
    return int(result or 0)
