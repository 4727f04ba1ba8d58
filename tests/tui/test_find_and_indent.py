"""Issue 33, smaller items, in the real app: find with smart case, a case toggle and "N of M";
Enter and Backspace follow the file's own indentation unit; the status bar's session figure says
"this session"."""

from __future__ import annotations

from textual.app import App, ComposeResult

from specterm.engine import Stats
from specterm.tui.widgets.indentation import Indentation, dedent_to, detect_indentation
from specterm.tui.widgets.status_bar import StatusBar, StatusModel

from .conftest import make_app, wait_for

WORDS = "Return x\nreturn y\nRETURN z\nreturned = 1\n"
JS = "function f(x) {\n  if (x) {\n    go();\n  }\n}\n"


async def test_find_is_smart_case_with_a_toggle_and_a_match_count(tmp_path, settings_for, env):
    (tmp_path / "words.py").write_text(WORDS)
    app = make_app(settings_for(tmp_path, **{"completion.auto": False}), tmp_path / "words.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        bar = app.find_bar
        await pilot.press("ctrl+f")
        assert "alt+c" in bar.case_text and "smart" in bar.case_text  # the toggle is named in the bar
        await pilot.press(*"return")  # lower case: any case
        await wait_for(pilot, lambda: bar.count_text == "4 matches", timeout=10)
        await pilot.press("enter")
        assert editor.selected_text == "Return" and bar.count_text == "1 of 4"
        await pilot.press("enter", "enter")
        assert editor.selected_text == "RETURN" and bar.count_text == "3 of 4"
        await pilot.press("f3", "f3")  # past the last: back to the first
        assert editor.selection.start == (0, 0) and bar.count_text == "1 of 4"

        await pilot.press("alt+c")  # match case: only "return" as typed
        assert "match case" in bar.case_text and bar.input.value == "return"
        await wait_for(pilot, lambda: bar.count_text == "2 matches", timeout=10)
        await pilot.press("enter")
        assert editor.selected_text == "return" and editor.selection.start == (1, 0)
        assert bar.count_text == "1 of 2"

        await pilot.press("alt+c")  # ignore case, even with a capital in the query
        assert "ignore case" in bar.case_text
        await pilot.press("backspace", "backspace", "backspace", "backspace", "backspace", "backspace", *"RETURN")
        await wait_for(pilot, lambda: bar.count_text == "4 matches", timeout=10)
        await pilot.press("alt+c")  # smart again: a capital means this case
        await wait_for(pilot, lambda: bar.count_text == "1 match", timeout=10)
        await pilot.press("x")
        await wait_for(pilot, lambda: bar.count_text == "no matches", timeout=10)
        await pilot.press("enter")
        assert editor.text == WORDS  # nothing typed into the file, nothing found


def test_find_all_smart_case_rules():
    from specterm.tui.widgets.find_bar import find_all

    assert find_all(WORDS, "return", "smart") == [(0, 6), (9, 15), (18, 24), (27, 33)]
    assert find_all(WORDS, "Return", "smart") == [(0, 6)]
    assert find_all(WORDS, "Return", "ignore") == find_all(WORDS, "return", "smart")
    assert find_all(WORDS, "return", "match") == [(9, 15), (27, 33)]
    assert find_all(WORDS, "x.y", "smart") == []  # the query is text, not a pattern
    assert find_all(WORDS, "", "smart") == []


def test_the_indentation_unit_is_read_from_the_file():
    assert detect_indentation(JS.split("\n")) == Indentation("spaces", 2)
    assert detect_indentation("def f():\n    if x:\n        y()\n".split("\n")) == Indentation("spaces", 4)
    assert detect_indentation("int f() {\n\tif (x) {\n\t\ty();\n\t}\n}\n".split("\n")).kind == "tabs"
    assert detect_indentation(["x = 1", "", "y = 2"]) == Indentation("spaces", 4)  # nothing to go by
    # alignment (an argument list lined up under a bracket) does not outvote the levels
    mixed = ["def f(a,", "      b):", "  x = 1", "  if x:", "    y = 2", "  return y"]
    assert detect_indentation(mixed).width == 2
    assert [dedent_to(c, 2) for c in (1, 2, 3, 4, 5)] == [0, 0, 2, 2, 4]
    assert [dedent_to(c, 4) for c in (1, 4, 5, 8)] == [0, 0, 4, 4]


async def test_enter_and_backspace_follow_the_files_indentation(tmp_path, settings_for, env):
    (tmp_path / "app.js").write_text(JS)
    (tmp_path / "four.py").write_text("def f():\n    return 1\n")
    app = make_app(settings_for(tmp_path, **{"completion.auto": False}), tmp_path / "app.js", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        editor.move_cursor((1, len("  if (x) {")))
        await pilot.press("enter")  # one level deeper: the file's two spaces
        assert editor.document[2] == "    " and editor.cursor_location == (2, 4)
        await pilot.press("backspace")  # one level back
        assert editor.document[2] == "  " and editor.cursor_location == (2, 2)
        await pilot.press("space", "backspace")  # off the grid: back to the level below
        assert editor.document[2] == "  "
        await pilot.press("tab")  # Tab indents by the file's unit too
        assert editor.document[2] == "    "
        await pilot.press("x", "y", "backspace")  # after code: one character, as ever
        assert editor.document[2] == "    x"

        await app.open_file(tmp_path / "four.py")
        await wait_for(pilot, lambda: app.active_editor is not editor and app.active_editor is not None)
        four = app.active_editor
        four.move_cursor((0, len("def f():")))
        await pilot.press("enter")
        assert four.document[1] == "    "
        await pilot.press("backspace")
        assert four.document[1] == ""


class StatusHost(App):
    def __init__(self, model: StatusModel) -> None:
        super().__init__()
        self.model = model

    def compose(self) -> ComposeResult:
        yield StatusBar(self.model)


async def test_the_status_bar_says_this_session():
    stats = Stats(tokens=27, drafted=16, accepted=12, target_passes=15, generation_time_s=0.2,
                  draft_max=16, draft_length=4, drafting=True, requests=1)
    model = StatusModel(target="t.gguf", draft="session", state="idle", last=stats, session=stats)
    app = StatusHost(model)
    async with app.run_test(size=(140, 5)):
        text = app.query_one(StatusBar).render_status().plain
        assert "acc 75% · 75% this session" in text
