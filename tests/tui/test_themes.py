"""Theme files: the shipped set loads; broken files give errors that name the file and problem."""

from pathlib import Path

import pytest
from pygments.token import Keyword
from textual.color import Color

from specterm.tui.themes import ThemeError, load_theme_file, load_themes


def test_shipped_themes_include_dark_light_and_ansi():
    themes, errors = load_themes(None)
    assert errors == []
    assert len(themes) >= 4
    assert {"specterm-dark", "specterm-light", "specterm-ansi"} <= set(themes)
    assert not themes["specterm-light"].dark
    assert themes["specterm-ansi"].textual.ansi
    assert themes["specterm-ansi"].textual.primary.startswith("ansi_")


def test_ghost_style_is_the_code_colour_blended_towards_the_background():
    theme = load_themes(None)[0]["specterm-dark"]
    code = theme.token_style(Keyword)
    background = Color.parse(theme.textual.background)
    ghost = theme.ghost_token_style(Keyword, background)
    assert ghost.italic
    code_rgb = Color.from_rich_color(code.color)
    ghost_rgb = Color.from_rich_color(ghost.color)
    # Closer to the background than the real code colour.
    def distance(a, b):
        return sum(abs(x - y) for x, y in zip(a.rgb, b.rgb))
    assert distance(ghost_rgb, background) < distance(code_rgb, background)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("name = \"x\"\n[colors\n", "not valid TOML"),
        ("name = \"x\"\n[colors]\nprimary = \"not-a-colour\"\n", "colors.primary"),
        ("name = \"x\"\npygments_style = \"nope\"\n[colors]\nprimary = \"#fff\"\n", "pygments_style"),
        ("name = \"x\"\n[colors]\nprimary = \"#fff\"\n[ghost]\nopacity = 3\n", "ghost.opacity"),
        ("name = \"x\"\ncolour = 1\n", "unknown key `colour`"),
        ("name = \"x\"\n[colors]\nsecondary = \"#fff\"\n", "colors.primary"),
    ],
)
def test_broken_theme_files_name_the_file_and_the_problem(tmp_path: Path, body, problem):
    path = tmp_path / "broken.toml"
    path.write_text(body)
    with pytest.raises(ThemeError) as info:
        load_theme_file(path)
    assert str(path) in str(info.value)
    assert problem in str(info.value)


def test_user_themes_load_and_broken_ones_are_reported_not_fatal(tmp_path: Path):
    (tmp_path / "mine.toml").write_text('name = "mine"\npygments_style = "monokai"\n[colors]\nprimary = "#ff0000"\n')
    (tmp_path / "bad.toml").write_text("name = ")
    themes, errors = load_themes(tmp_path)
    assert "mine" in themes and "specterm-dark" in themes
    assert len(errors) == 1 and errors[0].path == tmp_path / "bad.toml"
