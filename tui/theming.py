"""The themes a running app can switch between: the shipped ones plus the user's theme folder, read
through the one theme loader (tui/themes.py), with the files worth watching and the user's choice
persisted to their config. The app applies a theme; this keeps the set.

A theme is tried against the whole stylesheet (the app's CSS and every widget's default CSS) before
it is applied: Textual stops the app on a stylesheet error, so a theme whose colours do not build
one is refused with a notice, never applied and never saved; a saved one that no longer builds
gives way to the default at start.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from inspect import getfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from rich.text import Text
from textual.css.errors import StylesheetError
from textual.css.stylesheet import Stylesheet
from textual.css.tokenizer import TokenError
from textual.dom import DOMNode
from textual.theme import Theme

from .themes import (
    ANSI_THEME,
    DEFAULT_THEME,
    SpectermTheme,
    ThemeError,
    builtin_theme_dir,
    load_theme_file,
    load_themes,
    theme_files,
)

if TYPE_CHECKING:
    from .app import SpectermApp


def theme_name(name: str) -> str:
    """A configured theme name, with "" and "default" meaning the default theme."""
    return DEFAULT_THEME if name in ("", "default") else name


def stylesheet_problem(app: "SpectermApp", theme: Theme) -> str | None:
    """Why the app's stylesheet does not build with `theme`'s colours (a CSS variable it lacks, a
    value that is no colour), or None when it does. Every widget class loaded so far is tried, not
    only those on screen: a dialog opened later must not stop the app either."""
    sheet = app.stylesheet.copy()
    for node_class in _node_classes(DOMNode):
        css = node_class.__dict__.get("DEFAULT_CSS", "")
        if css:
            sheet.add_source(css, read_from=_css_location(node_class), is_default_css=True,
                             scope=node_class.__name__ if node_class.__dict__.get("SCOPED_CSS", True) else "")
    problem = _parse_problem(sheet, _css_variables(app, theme))
    if problem is None:
        return None
    for key, value in theme.variables.items():  # name the theme's own variable at fault, if one is
        rest = replace(theme, variables={k: v for k, v in theme.variables.items() if k != key})
        if _parse_problem(sheet, _css_variables(app, rest)) is None:
            return f"`variables.{key}` = {value!r} does not work in Textual's CSS ({problem})"
    return problem


def _css_variables(app: "SpectermApp", theme: Theme) -> dict[str, str]:
    """The CSS variables the app would have under `theme` (as App.get_css_variables makes them)."""
    return {**app.get_theme_variable_defaults(), **theme.to_color_system().generate(), **theme.variables}


def _parse_problem(sheet: Stylesheet, variables: dict[str, str]) -> str | None:
    sheet.set_variables(variables)
    try:
        sheet.parse()
    except TokenError as err:  # e.g. "reference to undefined variable '$ansi-background'"
        return str(err)
    except StylesheetError as err:
        return _first_error(err)
    return None


def _node_classes(base: type[DOMNode]) -> Iterator[type[DOMNode]]:
    for sub in base.__subclasses__():
        yield sub
        yield from _node_classes(sub)


def _css_location(node_class: type) -> tuple[str, str]:
    try:
        return (getfile(node_class), f"{node_class.__name__}.DEFAULT_CSS")
    except (TypeError, OSError):
        return ("", f"{node_class.__name__}.DEFAULT_CSS")


def _first_error(err: StylesheetError) -> str:
    """The first problem in words ("Invalid value for border property"), not a rich panel."""
    for rule in getattr(getattr(err, "errors", None), "rules", None) or []:
        for _token, message in rule.errors:
            summary = getattr(message, "summary", message)
            return Text.from_markup(str(summary)).plain.rstrip(".")
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


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
        errors = ([] if name in self.themes
                  else [ThemeError(Path(name), f"no theme named {name!r}; using {DEFAULT_THEME}")])
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

    def _register(self, skip: str | None = None) -> None:
        for spec in self.set.themes.values():
            if spec.name != skip:
                self.app.register_theme(spec.textual)

    def start(self) -> None:
        """Apply the configured theme once the app's stylesheet is read. Where the terminal shows
        only 16 colours, the ANSI theme instead (for this session: nothing is saved), since the
        others' shades collapse there; a configured theme that does not build a stylesheet gives
        way to the default with a warning, instead of stopping the app at every start."""
        wanted = self.current
        ansi = self.set.themes.get(ANSI_THEME)
        if self.app.console.color_system in ("standard", "windows") and not wanted.textual.ansi and ansi:
            self.app.notify(f"This terminal shows only 16 colours, so {ANSI_THEME} is used for this session "
                            f"instead of {wanted.name}. Where your terminal shows more, set TERM=xterm-256color "
                            "or COLORTERM=truecolor.", title="Theme", timeout=10)
            wanted = ansi
        if self.apply(wanted):
            return
        default = self.set.themes[DEFAULT_THEME]
        self.app.notify(f"Using {DEFAULT_THEME} instead of {wanted.name}.", title="Theme", severity="warning",
                        timeout=12)
        if not self.apply(default):
            self._show(default)  # nothing better to fall back to: Textual's own error says the rest

    def apply(self, theme: SpectermTheme, *, persist: bool = False) -> bool:
        """Apply `theme` (and save the choice with `persist`); a theme the stylesheet cannot be built
        with is refused with a notice saying why, leaving the current one on (and unsaved)."""
        app = self.app
        problem = stylesheet_problem(app, theme.textual)
        if problem is not None:
            app.register_theme(self.current.textual)  # a reloaded file of the same name stays out
            saved = " It was not saved." if persist else ""
            app.notify(f"Theme {theme.name} cannot be used: {problem}.{saved}", title="Theme not applied",
                       severity="error", timeout=12)
            return False
        self._show(theme)
        if persist:
            try:
                self.set.persist(app.user_config, theme.name)
            except Exception as err:  # persisting is a convenience: never fail the switch
                app.notify(f"Theme applied but not saved: {err}", severity="warning", timeout=8)
        return True

    def _show(self, theme: SpectermTheme) -> None:
        app = self.app
        self.current = theme
        app.register_theme(theme.textual)
        if app.theme == theme.name:
            app._watch_theme(theme.name)  # same name, new colours (a reloaded file): re-apply
        else:
            app.theme = theme.name
        app.editor_tabs.apply_theme(theme)

    def switch(self, name: str) -> None:
        theme = self.set.themes.get(theme_name(name))
        if theme is None:
            self.app.notify(f"No theme named {name!r}.", severity="error")
            return
        self.apply(theme, persist=True)

    def choices(self) -> list[tuple[str, str, Callable[[], None]]]:
        """The one theme list: (title, help, switch) per theme, for the palette and the picker;
        either way a choice is applied and saved by `switch`."""
        return [(f"Theme: {name}", f"Switch to the {name} theme (saved to your config)",
                 partial(self.switch, name)) for name in sorted(self.set.themes)]

    def reload(self) -> None:
        for err in self.set.load():
            self.app.notify(str(err), title="Theme not loaded", severity="warning", timeout=10)
        self._register(skip=self.current.name)  # the applied theme's new version only after its check
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
