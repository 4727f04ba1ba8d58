"""Ghost text stays visible in every shipped theme in 16 colours, 256 colours and truecolor
(issue #33): drawn by a real editor in a real Textual app whose console uses that colour system,
each ghost cell's colour as the terminal gets it differs from its background."""

from __future__ import annotations

from pathlib import Path

import pytest
import textual.constants
from rich.color import Color as RichColor
from rich.color import ColorSystem
from rich.style import Style
from textual.app import App, ComposeResult

from specterm.tui.suggest.controller import Suggestion
from specterm.tui.themes import SpectermTheme, load_themes
from specterm.tui.widgets.editor import CodeEditor

THEMES = load_themes(None)[0]
CODE = "import os\nvalue = compute(os)\n"
GHOST = "os.path.join(base, 'name', 42)  # joined"
SYSTEMS = {"standard": ColorSystem.STANDARD, "256": ColorSystem.EIGHT_BIT, "truecolor": ColorSystem.TRUECOLOR}


class ThemedEditorApp(App):
    """One editor under one specterm theme, applied as the app applies it."""

    def __init__(self, theme: SpectermTheme) -> None:
        super().__init__()
        self.spec = theme
        self.register_theme(theme.textual)

    def on_mount(self) -> None:
        self.theme = self.spec.name

    def compose(self) -> ComposeResult:
        yield CodeEditor(CODE, path=Path("example.py"), theme=self.spec)


def shown(color: RichColor | None, system: ColorSystem) -> object:
    """The colour a terminal with `system` draws: a palette number, an RGB, or None for its default."""
    if color is None or color.is_default:
        return None
    color = color.downgrade(system)
    return color.number if color.number is not None else color.triplet


def visible(style: Style, system: ColorSystem) -> bool:
    if style.reverse:
        return True
    fg, bg = shown(style.color, system), shown(style.bgcolor, system)
    return fg is None and bg is None or fg != bg  # both None: the terminal's own text colours


def terminal_cells(app: App, editor: CodeEditor, y: int) -> list[tuple[str, Style]]:
    """Row `y` of the editor as the terminal gets it: after the app's filters (ANSI colours)."""
    strip = editor.render_line(y)
    for line_filter in app._filters:
        strip = strip.apply_filter(line_filter, editor.background_colors[1])
    return [(segment.text, segment.style or Style()) for segment in strip]


@pytest.mark.parametrize("system", ["standard", "256", "truecolor"])
@pytest.mark.parametrize("name", sorted(THEMES))
async def test_ghost_text_is_visible_in_every_theme_and_colour_system(monkeypatch, name, system):
    monkeypatch.setattr(textual.constants, "COLOR_SYSTEM", system)
    app = ThemedEditorApp(THEMES[name])
    async with app.run_test(size=(70, 8)) as pilot:
        assert app.console.color_system == system
        editor = app.query_one(CodeEditor)
        editor.focus()
        editor.move_cursor((1, len("value = compute(")))
        await pilot.pause()
        editor.suggest.ghost = Suggestion(None, editor.cursor_location, full=GHOST, streaming=False)
        editor.redraw_suggestion()
        await pilot.pause()
        assert editor.ghost_text == GHOST
        cells = terminal_cells(app, editor, 1)
        start = "".join(text for text, _ in cells).index("value = compute(") + len("value = compute(")
        ghost_cells, x = [], 0
        for text, style in cells:
            for char in text:
                if start < x < start + len(GHOST) and not char.isspace():  # (the first cell has the cursor)
                    ghost_cells.append((char, style))
                x += 1
        assert "".join(c for c, _ in ghost_cells) == "".join(GHOST[1:].split())
        color_system = SYSTEMS[system]
        hidden = sorted({char for char, style in ghost_cells if not visible(style, color_system)})
        assert not hidden, f"{name} in {system}: ghost characters drawn in the background's colour: {hidden}"
        assert all(style.italic for _, style in ghost_cells)  # still told apart from typed code


async def test_line_numbers_and_selection_show_in_the_ansi_theme_in_16_colours(monkeypatch):
    """The theme the app picks by itself in 16 colours keeps the gutter and a selection visible."""
    monkeypatch.setattr(textual.constants, "COLOR_SYSTEM", "standard")
    app = ThemedEditorApp(THEMES["specterm-ansi"])
    async with app.run_test(size=(70, 8)) as pilot:
        editor = app.query_one(CodeEditor)
        editor.focus()
        editor.selection = ((0, 0), (0, len("import")))
        await pilot.pause()
        cells = terminal_cells(app, editor, 0)
        gutter = cells[0]
        assert gutter[0].strip() == "1" and visible(gutter[1], ColorSystem.STANDARD)
        selected = next(style for text, style in cells if text == "import")
        plain = next(style for text, style in cells if text.strip() == "os")
        assert selected.reverse or shown(selected.bgcolor, ColorSystem.STANDARD) != shown(
            plain.bgcolor, ColorSystem.STANDARD)
