"""An edit answer's text rules (engine/edit_prompt.py), streamed a character at a time and whole:
the same clean region either way."""

from __future__ import annotations

import pytest

from specterm.engine.edit_prompt import EditText, clean_edit_text

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
