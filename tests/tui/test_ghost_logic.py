"""Ghost-text rules without a widget: what is shown, what a partial accept takes, the cache."""

from specterm.engine import CompletionRequest
from specterm.engine.completion import finish_completion
from specterm.tui.widgets.ghost import CompletionCache, next_line, next_word, visible_ghost


def test_next_word_takes_blanks_and_one_word_or_punctuation_run():
    assert next_word("foo(bar)") == "foo"
    assert next_word("(bar)") == "("
    assert next_word("  return x") == "  return"
    assert next_word("\n    return x") == "\n    return"
    assert next_word("") == ""


def test_next_line_stops_at_line_end_or_takes_the_following_line():
    assert next_line("a + b\n    c") == "a + b"
    assert next_line("\n    return x\nmore") == "\n    return x"
    assert next_line("single") == "single"


def test_ghost_that_repeats_the_text_after_the_cursor_is_hidden():
    assert visible_ghost(")", ")", []) == ""
    assert visible_ghost("x)\n    y", "x)", ["    y"]) == ""
    assert visible_ghost("   ", "", []) == ""
    # the bracket already after the cursor is not drawn twice (the same rule as the final text)
    assert visible_ghost("total)", ")", []) == "total"
    assert visible_ghost("  ", ")", ["    y"]) == ""  # blanks alone: nothing to show


def test_live_ghost_and_final_completion_trim_the_same_way():
    """The editor's streaming ghost and the engine's finished completion share one repeat rule."""
    prefix = "def area(w, h):\n    "
    suffix = "\n    return result\n\nprint(area(2, 3))\n"
    text = "result = w * h\n    return result"
    line_after, *following = suffix.split("\n")
    final = finish_completion(text, CompletionRequest(prefix=prefix, suffix=suffix))
    assert final == "result = w * h"
    assert visible_ghost(text, line_after, following) == final


def test_trailing_lines_equal_to_the_following_code_are_trimmed():
    ghost = "a = 1\n    b = 2\n    return a + b"
    following = ["    return a + b", "", "def other():"]
    assert visible_ghost(ghost, "", following) == "a = 1\n    b = 2"


def test_cache_serves_exact_positions_and_positions_typed_into_a_suggestion():
    cache = CompletionCache(size=2)
    cache.put("def f(", ")", "x, y")
    assert cache.get("def f(", ")") == "x, y"
    # The user typed "x," since: the rest of the suggestion is served.
    assert cache.get("def f(x,", ")") == " y"
    # Something else typed: a miss.
    assert cache.get("def f(z", ")") is None
    cache.put("a", "", "1")
    cache.put("b", "", "2")  # evicts the least recently used ("def f(")
    assert cache.get("def f(", ")") is None
    assert len(cache) == 2
