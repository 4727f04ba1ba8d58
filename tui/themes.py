"""The one theme loader: `themes/*.toml` (shipped) and the user's theme folder.

A specterm theme bundles three things that must agree with each other: the Textual colours of the
interface, a pygments style for code in the editor, and the style of ghost text (the same pygments
colours, blended towards the background so a suggestion is visibly not yet code). Keeping them in one
file means switching theme never leaves code unreadable on the new background.

A broken file never stops the app: `load_themes` returns the good themes plus a `ThemeError` per bad
file, naming the file and what is wrong, for the app to show as a notice.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from pygments.styles import get_style_by_name
from pygments.token import STANDARD_TYPES, Token, _TokenType
from pygments.util import ClassNotFound
from rich.color import ColorSystem
from rich.style import Style
from rich.syntax import ANSI_DARK, ANSI_LIGHT, ANSISyntaxTheme, PygmentsSyntaxTheme, SyntaxTheme
from textual.color import Color, ColorParseError
from textual.theme import Theme

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_THEME = "specterm-dark"
ANSI_THEME = "specterm-ansi"  # picked by itself where the terminal has only 16 colours
ANSI_STYLES = {"ansi-dark": ANSI_DARK, "ansi-light": ANSI_LIGHT}
_COLOR_KEYS = (
    "primary", "secondary", "warning", "error", "success", "accent",
    "foreground", "background", "surface", "panel", "boost",
)
_TOP_KEYS = {"name", "dark", "ansi", "pygments_style", "colors", "variables", "ghost"}
_GHOST_KEYS = {"opacity", "italic", "dim"}
# Textual's own ANSI themes set these and its widgets' CSS refers to them; its colour system does not
# derive them, so an ANSI theme without them stopped the app at the first stylesheet refresh.
_ANSI_DEFAULTS = {
    True: {"ansi-background": "ansi_black", "ansi-foreground": "ansi_white"},
    False: {"ansi-background": "ansi_white", "ansi-foreground": "ansi_black"},
}
COLOR_SYSTEMS = {
    "standard": ColorSystem.STANDARD, "windows": ColorSystem.WINDOWS,
    "256": ColorSystem.EIGHT_BIT, "truecolor": ColorSystem.TRUECOLOR,
}


class ThemeError(Exception):
    """A theme file that cannot be used; the message names the file and the problem."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"Theme file {path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class GhostStyle:
    """How ghost text differs from code: colour strength and attributes."""

    opacity: float = 0.5  # 0..1: blend of the token colour over the background
    italic: bool = True
    dim: bool = False


@dataclass(frozen=True, eq=False)  # identity hash: used as a cache key
class SpectermTheme:
    name: str
    textual: Theme
    pygments_style: str
    ghost: GhostStyle = field(default_factory=GhostStyle)
    source: Path | None = None

    @property
    def dark(self) -> bool:
        return self.textual.dark

    @property
    def syntax_theme(self) -> SyntaxTheme:
        return _syntax_theme(self.pygments_style)

    def token_style(self, ttype: _TokenType) -> Style:
        """The rich style of a pygments token type in this theme (foreground and attributes only)."""
        return _token_style(self.pygments_style, ttype)

    def syntax_styles(self) -> dict[str, Style]:
        """Styles keyed by pygments token name, as the editor's highlight map uses them."""
        return {str(ttype): self.token_style(ttype) for ttype in STANDARD_TYPES}

    def ghost_token_style(
        self, ttype: _TokenType, background: Color | None, color_system: str | None = "truecolor"
    ) -> Style:
        """The token's code style turned into ghost text: blended towards the background, but
        never so far that the terminal's colour system (`Console.color_system`: "standard" for
        16 colours, "256", "truecolor") draws it in the background's own colour."""
        system = COLOR_SYSTEMS.get(color_system or "truecolor", ColorSystem.TRUECOLOR)
        return _ghost_style(self, ttype, background.hex6 if background else None, system)


def builtin_theme_dir() -> Path:
    """Themes shipped with specterm (package data of specterm.themes)."""
    import specterm.themes

    return Path(specterm.themes.__file__).parent


def token_name(ttype: _TokenType) -> str:
    """The standard (styled) ancestor of a token type, as a highlight name."""
    while ttype not in STANDARD_TYPES and ttype.parent is not None:
        ttype = ttype.parent
    return str(ttype)


@lru_cache(maxsize=16)
def _syntax_theme(style_name: str) -> SyntaxTheme:
    if style_name in ANSI_STYLES:
        return ANSISyntaxTheme(ANSI_STYLES[style_name])
    return PygmentsSyntaxTheme(style_name)


@lru_cache(maxsize=4096)
def _token_style(style_name: str, ttype: _TokenType) -> Style:
    style = _syntax_theme(style_name).get_style_for_token(ttype)
    # The editor's own background shows through: drop per-token backgrounds.
    return Style(
        color=style.color, bold=style.bold or None, italic=style.italic or None,
        underline=style.underline or None,
    )


@lru_cache(maxsize=4096)
def _ghost_style(
    theme: SpectermTheme, ttype: _TokenType, background_hex: str | None, system: ColorSystem
) -> Style:
    base = theme.token_style(ttype)
    ghost = theme.ghost
    color = base.color
    # ANSI colours are the terminal's own and cannot be blended: such themes use `ghost.dim`.
    if background_hex and not theme.textual.ansi and not (color is not None and color.is_system_defined):
        background = Color.parse(background_hex)
        if color is not None:
            color = _visible_blend(theme, Color.from_rich_color(color), background, system, ghost.opacity).rich_color
        elif ghost.opacity < 1.0:  # text the style leaves uncoloured: a shade towards white or black
            plain = Color.parse("#ffffff" if theme.dark else "#000000")
            color = _visible_blend(theme, plain, background, system, ghost.opacity * 0.8).rich_color
    return Style(color=color, italic=ghost.italic or None, dim=ghost.dim or None)


def _plain_text_color(theme: SpectermTheme) -> Color:
    """Text the pygments style leaves uncoloured is drawn in the theme's foreground."""
    try:
        return Color.parse(theme.textual.foreground or "")
    except ColorParseError:
        return Color.parse("#ffffff" if theme.dark else "#000000")


def _visible_blend(theme: SpectermTheme, fg: Color, background: Color, system: ColorSystem, opacity: float) -> Color:
    """`fg` blended `opacity` of the way from the background, or further if the terminal would
    round that to the background's colour (16 and 256 colours): ghost text that matches the
    background is invisible."""
    candidates = [background.blend(fg, opacity + (1.0 - opacity) * step / 5) for step in range(6)]
    candidates += [_plain_text_color(theme), Color.parse("#ffffff" if theme.dark else "#000000")]
    shown_background = _cell_color(background, system)
    for candidate in candidates:
        if _cell_color(candidate, system) != shown_background:
            return candidate
    return candidates[-1]


def _cell_color(color: Color, system: ColorSystem) -> object:
    """What a terminal with `system` colours draws for `color` (a palette number or an RGB)."""
    shown = color.rich_color.downgrade(system)
    return shown.number if shown.number is not None else shown.triplet


def _expect(path: Path, key: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(value, kind):
        raise ThemeError(path, f"`{key}` must be {what}, got {value!r}")
    return value


def parse_theme(path: Path, data: dict[str, Any]) -> SpectermTheme:
    """Build a theme from parsed TOML; raise ThemeError naming the key for anything wrong."""
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ThemeError(path, f"unknown key `{sorted(unknown)[0]}` (expected one of {sorted(_TOP_KEYS)})")
    name = _expect(path, "name", data.get("name", path.stem), str, "a string")
    if not name.strip():
        raise ThemeError(path, "`name` must not be empty")
    dark = _expect(path, "dark", data.get("dark", True), bool, "true or false")
    ansi = _expect(path, "ansi", data.get("ansi", False), bool, "true or false")
    pygments_style = _expect(
        path, "pygments_style", data.get("pygments_style", "monokai"), str, "a string"
    )
    try:
        if pygments_style not in ANSI_STYLES:
            get_style_by_name(pygments_style)
    except ClassNotFound:
        raise ThemeError(
            path,
            f"`pygments_style` {pygments_style!r} is not a pygments style "
            "(see `python -m pygments -L styles`, or use ansi-dark / ansi-light)",
        ) from None
    colors = _expect(path, "colors", data.get("colors", {}), dict, "a table")
    unknown = set(colors) - set(_COLOR_KEYS)
    if unknown:
        raise ThemeError(path, f"unknown colour `colors.{sorted(unknown)[0]}` (expected {', '.join(_COLOR_KEYS)})")
    if "primary" not in colors:
        raise ThemeError(path, "`colors.primary` is required")
    for key, value in colors.items():
        _expect(path, f"colors.{key}", value, str, "a colour string")
        _check_color(path, f"colors.{key}", value)
    variables = _expect(path, "variables", data.get("variables", {}), dict, "a table")
    for key, value in variables.items():
        _expect(path, f"variables.{key}", value, str, "a string")
    if ansi:
        variables = {**_ANSI_DEFAULTS[dark], **variables}
    ghost_table = _expect(path, "ghost", data.get("ghost", {}), dict, "a table")
    unknown = set(ghost_table) - _GHOST_KEYS
    if unknown:
        raise ThemeError(path, f"unknown key `ghost.{sorted(unknown)[0]}` (expected {sorted(_GHOST_KEYS)})")
    opacity = ghost_table.get("opacity", 0.5)
    if isinstance(opacity, bool) or not isinstance(opacity, (int, float)) or not 0.0 < opacity <= 1.0:
        raise ThemeError(path, f"`ghost.opacity` must be a number in (0, 1], got {opacity!r}")
    ghost = GhostStyle(
        opacity=float(opacity),
        italic=_expect(path, "ghost.italic", ghost_table.get("italic", True), bool, "true or false"),
        dim=_expect(path, "ghost.dim", ghost_table.get("dim", False), bool, "true or false"),
    )
    textual_theme = Theme(name=name, dark=dark, ansi=ansi, variables=dict(variables), **colors)
    return SpectermTheme(
        name=name, textual=textual_theme, pygments_style=pygments_style, ghost=ghost, source=path
    )


def _check_color(path: Path, key: str, value: str) -> None:
    if value.startswith("ansi_"):
        return
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeError(path, f"`{key}` = {value!r} is not a colour (use #rrggbb, a CSS name or ansi_*)") from None


def load_theme_file(path: Path) -> SpectermTheme:
    """Read and validate one theme file."""
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ThemeError(path, f"cannot be read ({err.strerror or err})") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ThemeError(path, "is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as err:
        raise ThemeError(path, f"is not valid TOML: {err}") from None
    return parse_theme(path, data)


def theme_files(directories: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for directory in directories:
        if directory.is_dir():
            files.extend(sorted(p for p in directory.glob("*.toml") if p.is_file()))
    return files


def load_themes(
    user_dir: Path | None = None,
) -> tuple[dict[str, SpectermTheme], list[ThemeError]]:
    """All usable themes by name (user themes override shipped ones of the same name) and the
    errors of files that could not be used."""
    themes: dict[str, SpectermTheme] = {}
    errors: list[ThemeError] = []
    directories = [builtin_theme_dir()] + ([user_dir] if user_dir else [])
    for path in theme_files(directories):
        try:
            theme = load_theme_file(path)
        except ThemeError as err:
            errors.append(err)
            continue
        themes[theme.name] = theme
    return themes, errors


__all__ = [
    "ANSI_THEME", "COLOR_SYSTEMS", "DEFAULT_THEME", "GhostStyle", "SpectermTheme", "ThemeError", "builtin_theme_dir",
    "load_theme_file", "load_themes", "parse_theme", "theme_files", "token_name", "Token",
]
