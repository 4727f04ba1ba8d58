"""The themes a running app can switch between: the shipped ones plus the user's theme folder, read
through the one theme loader (tui/themes.py), with the files worth watching and the user's choice
persisted to their config. The app applies a theme; this keeps the set."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .themes import DEFAULT_THEME, SpectermTheme, ThemeError, builtin_theme_dir, load_theme_file, load_themes, theme_files


if TYPE_CHECKING:
    from .app import SpectermApp


def theme_name(name: str) -> str:
    """A configured theme name, with "" and "default" meaning the default theme."""
    return DEFAULT_THEME if name in ("", "default") else name


class ThemeSet:
    """Themes by name; `load` and `reload` return the errors of files that could not be used."""

    def __init__(self, user_dir: Path) -> None:
        self.user_dir = user_dir
        self.themes: dict[str, SpectermTheme] = {}

    def load(self) -> list[ThemeError]:
        self.themes, errors = load_themes(self.user_dir)
        return errors

    def pick(self, wanted: str) -> tuple[SpectermTheme, list[ThemeError]]:
        """The theme named `wanted` (or the default, with an error saying so)."""
        name = theme_name(wanted)
        theme = self.themes.get(name) or self.themes.get(DEFAULT_THEME)
        errors = [] if name in self.themes else [ThemeError(Path(name), f"no theme named {name!r}; using {DEFAULT_THEME}")]
        if theme is None:  # the shipped themes are missing: a broken install
            raise RuntimeError("specterm's built-in themes are missing; reinstall specterm")
        return theme, errors

    def add_file(self, path: Path) -> SpectermTheme:
        """Load one theme file into the set; raises ThemeError naming the file and the problem."""
        theme = load_theme_file(path)
        self.themes[theme.name] = theme
        return theme

    def files(self, current: SpectermTheme) -> set[Path]:
        """Theme files worth watching: shipped, the user's, and the current theme's own file."""
        paths = set(theme_files([builtin_theme_dir(), self.user_dir]))
        if current.source is not None:
            paths.add(current.source)
        return {p.absolute() for p in paths}

    @staticmethod
    def persist(user_config: Path, name: str) -> None:
        """Save the choice as [ui] theme in the user's config (keeps the file's other content)."""
        from .config_writer import plan_edit

        plan_edit(user_config, {"ui": {"theme": name}}).write()


class Theming:
    """The app's theme: applied to the interface and every editor, switched from the palette
    (persisted), re-read when theme files change; broken files are notices naming the file."""

    def __init__(self, app: "SpectermApp", user_dir: Path, wanted: str) -> None:
        self.app = app
        self.set = ThemeSet(user_dir)
        self.errors = self.set.load()  # shown once the app runs
        self.current, unknown = self.set.pick(wanted)
        self.errors += unknown
        self._register()

    def _register(self) -> None:
        for spec in self.set.themes.values():
            self.app.register_theme(spec.textual)

    def apply(self, theme: SpectermTheme, *, persist: bool = False) -> None:
        app = self.app
        self.current = theme
        app.register_theme(theme.textual)
        if app.theme == theme.name:
            app._watch_theme(theme.name)  # same name, new colours (a reloaded file): re-apply
        else:
            app.theme = theme.name
        if app.is_mounted:
            app.editor_tabs.apply_theme(theme)
        if persist:
            try:
                self.set.persist(app.user_config, theme.name)
            except Exception as err:  # persisting is a convenience: never fail the switch
                app.notify(f"Theme applied but not saved: {err}", severity="warning", timeout=8)

    def switch(self, name: str) -> None:
        theme = self.set.themes.get(theme_name(name))
        if theme is None:
            self.app.notify(f"No theme named {name!r}.", severity="error")
            return
        self.apply(theme, persist=True)

    def reload(self) -> None:
        for err in self.set.load():
            self.app.notify(str(err), title="Theme not loaded", severity="warning", timeout=10)
        self._register()
        if self.current.name in self.set.themes:
            self.apply(self.set.themes[self.current.name])

    def load_file(self, path: Path) -> bool:
        """Load and apply one theme file; a broken file gives a notice naming it."""
        try:
            theme = self.set.add_file(path)
        except ThemeError as err:
            self.app.notify(str(err), title="Theme not loaded", severity="error", timeout=10)
            return False
        self.apply(theme)
        return True
