"""An edit answer's text rules (engine/edit_prompt.py), streamed a character at a time and whole:
the same clean region either way."""

from __future__ import annotations

import pytest

from specterm.engine import EditRequest
from specterm.engine.edit_prompt import EditText, build_edit_prompt, clean_edit_text, dedent, region_margin

REGION = "def f():\n    return 1\n"
AFTER = "\n\ndef g():\n    return 2\n"


def _streamed(raw: str, region: str, after: str = "") -> tuple[str, str, bool]:
    text = EditText(region, "```", after)
    shown = "".join(text.feed(ch) for ch in raw)
    shown += text.finish()
    return text.text, shown, text.done


@pytest.mark.parametrize("raw, region, after, expected", [
    ("```python\nx = 1\n```\nprose", "x = 0\n", "", "x = 1\n"),  # fences dropped, the closing one ends it
    ("x = 1", "x = 0\n", "", "x = 1\n"),  # the region's trailing line break kept
    ("x = 1\n", "x = 0", "", "x = 1"),  # ... and its absence
    # the answer wrote on into the file's next lines: they and the blank lines before them go
    ("def f():\n    return 10\n\n\ndef g():\n    return 2\n\ndef h():\n", REGION, AFTER, "def f():\n    return 10\n"),
    # one of the next lines alone is not running on (an edit may write such a line)
    ("def f():\n    return 10\n\ndef g():\n    pass\n```", REGION, AFTER,
     "def f():\n    return 10\n\ndef g():\n    pass\n"),
])
def test_the_answer_is_cleaned_the_same_streamed_or_whole(raw, region, after, expected):
    assert clean_edit_text(raw, region, after=after) == expected
    text, _, done = _streamed(raw, region, after)
    assert text == expected and done


def test_an_answer_that_runs_on_stops_the_decoder():
    text = EditText(REGION, "```", AFTER)
    for piece in ("def f():\n    return 10\n", "\n\ndef g():\n"):
        text.feed(piece)
        assert text.check("") is None
    text.feed("    return 2\n")
    assert text.check("") == "stop" and text.text == "def f():\n    return 10\n"
    assert text.feed("more\n") == ""  # nothing after the end


METHOD = "    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n"


@pytest.mark.parametrize("region, margin", [
    (METHOD, "    "),
    ("\tif x:\n\t\ty()\n", "\t"),
    ("        a = 1\n    b = 2\n", "    "),  # the least indentation
    ("    a = 1\n  \n    b = 2\n", ""),  # a blank line that is not empty: nothing taken off
    ("    s = '''\nat the margin\n'''\n", ""),  # a line at column 0
    ("\tif x:\n    y()\n", ""),  # tabs and spaces share no margin
    ("x = 1\n", ""),
    ("", ""),
])
def test_region_margin(region, margin):
    assert region_margin(region) == margin
    back = "\n".join(margin + line if line else line for line in dedent(region, margin).split("\n"))
    assert back == region  # taken off and put back: the same bytes


def test_an_indented_region_is_shown_one_level_out_and_its_answer_put_back():
    """The prompt's region has the margin taken off; the answer (written at that level, as
    the prompt shows it) gets it back on every line it writes, empty lines staying empty,
    streamed a character at a time or whole."""
    req = EditRequest(instruction="return more", region=METHOD, before="class C:\n", after="", path="c.py")
    region_piece = next(p.text for p in build_edit_prompt(req, req.before, "").pieces if p.kind == "region")
    assert region_piece == "def f(self):\n    return 1\n\ndef g(self):\n    return 2\n"
    raw = "```python\ndef f(self):\n    return 10\n\n# done\ndef g(self):\n    return 20\n```\n"
    expected = "    def f(self):\n        return 10\n\n    # done\n    def g(self):\n        return 20\n"
    assert clean_edit_text(raw, METHOD) == expected
    text, shown, done = _streamed(raw, METHOD)
    assert text == shown == expected and done
    top = EditRequest(instruction="x", region=REGION, before="", after="", path="c.py")
    assert next(p.text for p in build_edit_prompt(top, "", "").pieces if p.kind == "region") == REGION
