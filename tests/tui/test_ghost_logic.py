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


# -- the live ghost follows the finished text's rules (issue 14: shown suggestions vanished) -------

LIVE_CASES = [
    # (prefix, suffix, what the model streams, max_lines)
    ("def f(x):\n", "\ndef g():\n    pass\n", "    y = x + 1\n    return y\n\ndef h():\n    pass\n", 8),
    ("def f(x):\n    ", "\n", "y = 1\n    z = 2\n    w = 3\n    v = 4\n", 2),  # the line cap
    ("x = [\n", "]\n", "    1,\n    2,\n\n\n", 8),  # trailing blank lines
    ("if a:\n    b = 1\n", "    c = 2\n    d = 3\n", "    e = 0\n    c = 2\n    d = 3\n", 8),  # repeats what follows
    ("print(", ")\n", "total)", 8),  # the closing bracket already there
    ("def f():\n", "", "\n\n", 8),  # only line breaks: never a "\n" ghost
    # after a blank lead-in, the lines after the cursor's again (seen in a replay of calendar.py:
    # "\n    if month == 1" shown, then cut whole once the line was complete)
    ("def prev(year, month):", "  # before\n    if month == 1:\n        return year - 1, 12\n",
     "\n    if month == 1:\n        return year - 1, 12\n", 8),
    ("def prev(year, month):", "  # before\n    if month == 1:\n        return year - 1, 12\n",
     "\n    if month == 12:\n        return year + 1, 1\n", 8),  # the same start, then its own
    # a blank line, then what becomes the next definition (which ends the block): 'def' alone
    # was shown, then cut when 'def f():' was complete (a replay saw '\ndef' vanish)
    ("x = 1", "\n\nclass A:\n    pass\n", "\n\ndef helper(value):\n    return value\n", 8),
    ("x = 1", "\n", "\n\n@cache\ndef helper(value):\n", 8),
    ("x = 1", "\n", "\n\nasync def main():\n", 8),
]


def test_every_live_ghost_is_a_prefix_of_the_finished_text():
    from specterm.engine.completion import live_completion

    for prefix, suffix, streamed, max_lines in LIVE_CASES:
        req = CompletionRequest(prefix=prefix, suffix=suffix, max_lines=max_lines)
        line_after, *rest = suffix.split("\n")

        def drawn(text: str, line_after: str = line_after, rest: list[str] = rest) -> str:  # drawn at this cursor
            return visible_ghost(text, line_after, rest)

        final = drawn(finish_completion(streamed, req))
        shown = ""
        for n in range(1, len(streamed) + 1):
            now = drawn(live_completion(streamed[:n], req))
            assert final.startswith(now), (streamed[:n], now, final)
            assert now.startswith(shown), (shown, now)  # it only grows: nothing shown vanishes
            assert now == "" or now.strip(), repr(now)  # never blanks or a bare line break
            shown = now


def test_the_first_line_streams_at_once_later_lines_when_complete():
    from specterm.engine.completion import live_completion

    req = CompletionRequest(prefix="def f(x):\n", suffix="")
    assert live_completion("    ret", req) == "    ret"  # the first line grows token by token
    assert live_completion("\n    ret", req) == "\n    ret"  # after a blank lead-in too
    assert live_completion("    y = 1\n    ret", req) == "    y = 1"  # a later line: once complete
    assert live_completion("    y = 1\nclass", req) == "    y = 1"
    top = CompletionRequest(prefix="x = 1", suffix="\n")
    assert live_completion("\n\nde", top) == "" and live_completion("\n\nasync d", top) == ""
    assert live_completion("\n\ny = 2", top) == "\n\ny = 2"  # not a definition: shown as it grows
    assert live_completion("\n\ndefaul", top) == ""  # ('export default function' may come)
    assert live_completion("\n\ndefault_value", top) == "\n\ndefault_value"  # no keyword starts so


def test_cache_key_is_the_text_near_the_cursor():
    cache = CompletionCache()
    far = "# top\n" * 400  # 2400 characters: further than the key looks
    cache.put(far + "x = 1\n", "\nend\n", "y = 2")
    # an edit far above the cursor, and the request window starting elsewhere: still found
    assert cache.get("# edited\n" + far + "x = 1\n", "\nend\n") == "y = 2"
    assert cache.get(far[-2000:] + "x = 1\n", "\nend\n") == "y = 2"
    # an edit near the cursor (before or after): not found
    assert cache.get(far + "x = 2\n", "\nend\n") is None
    assert cache.get(far + "x = 1\n", "\nstart\n") is None


def test_debounce_adapts_to_typing_speed_and_response_time():
    from specterm.tui.widgets.debounce import MAX_S, MIN_S, AdaptiveDebounce

    fast = AdaptiveDebounce(start_s=0.25)
    assert fast.delay_s == 0.25  # nothing measured yet
    for i in range(20):
        fast.keystroke(i * 0.06)  # 16 characters a second
    slow = AdaptiveDebounce(start_s=0.25)
    for i in range(20):
        slow.keystroke(i * 0.4)
    assert MIN_S <= fast.delay_s < 0.25 < slow.delay_s <= MAX_S
    before = slow.delay_s
    slow.response(2.0)  # slow answers: a request thrown away costs more, wait a little longer
    assert slow.delay_s > before
    slow.keystroke(100.0)  # a long pause is not a typing speed
    assert slow.gap_s is not None and slow.gap_s < 0.5
    for i in range(50):
        slow.keystroke(200 + i * 0.9)
        slow.response(5.0)
    assert slow.delay_s == MAX_S  # never more than a second
    fast.response(-1.0)  # nonsense is ignored
    assert fast.response_s is None


def test_a_burst_faster_than_usual_asks_after_its_own_pause():
    """A few characters typed at once after a move: the pause follows that burst, not the slower
    average; typing at the usual speed again brings the usual pause back."""
    from specterm.tui.widgets.debounce import BURST_GAP_S, MIN_S, AdaptiveDebounce

    d = AdaptiveDebounce(start_s=0.25)
    for i in range(20):
        d.keystroke(i * 0.15)
    usual = d.delay_s
    t = 20 * 0.15 + BURST_GAP_S + 1.0  # moved, looked: a new burst
    for i in range(4):
        d.keystroke(t + i * 0.04)  # fast, as a person types a word they know
    assert MIN_S <= d.delay_s < usual / 2
    for i in range(1, 4):
        d.keystroke(t + 0.12 + i * 0.15)
    assert d.delay_s >= usual * 0.7  # (the average took the burst in too)


def test_keys_that_came_at_once_ask_as_after_a_line_break():
    """Keys a few milliseconds apart came in one read from the terminal (typed ahead over SSH,
    or a person's 4 characters at once): the burst is over, so the request starts almost at once,
    however slow the user's usual typing and the answers are. One quick pair among ordinary keys
    (a rollover) is not such a burst."""
    from specterm.tui.widgets.debounce import AT_ONCE_GAP_S, LINE_BREAK_S, MIN_S, AdaptiveDebounce

    d = AdaptiveDebounce(start_s=0.25)
    for i in range(20):
        d.keystroke(i * 0.3)
    d.response(2.0)
    t = 20.0
    for i in range(4):
        d.keystroke(t + i * AT_ONCE_GAP_S / 3)
    assert d.delay_s == LINE_BREAK_S < MIN_S
    d.keystroke(t + 0.3)
    d.keystroke(t + 0.3 + AT_ONCE_GAP_S / 3)  # two keys rolled over, after an ordinary gap
    assert d.delay_s > LINE_BREAK_S
    assert AdaptiveDebounce(start_s=0.0).delay_s == 0.0


def test_a_line_break_asks_almost_at_once():
    """People stop at a line end: after Enter the pause is short whatever the typing speed, and
    the next ordinary key goes back to the typing-speed pause."""
    from specterm.tui.widgets.debounce import LINE_BREAK_S, AdaptiveDebounce

    d = AdaptiveDebounce(start_s=0.25)
    for i in range(10):
        d.keystroke(i * 0.4)
    typing = d.delay_s
    d.keystroke(4.0, line_break=True)
    assert d.delay_s == LINE_BREAK_S < typing
    d.keystroke(4.4)
    assert d.delay_s > LINE_BREAK_S
    assert AdaptiveDebounce(start_s=0.0).delay_s == 0.0  # a configured 0 stays 0
