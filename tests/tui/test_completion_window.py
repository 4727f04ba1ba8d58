"""The prefix window of a completion request stays put while the user types in a long file, so the
engine can reuse its KV cache instead of decoding the whole window again on every keystroke."""

from specterm.tui.widgets.completion import stable_window_start

TEXT = "".join(f"value_{i:05d} = compute({i})\n" for i in range(3000))


def test_window_start_is_stable_while_typing_and_bounded():
    starts = set()
    for n in range(40_000, 40_400):
        start = stable_window_start(TEXT[:n], 6000)
        assert n - start <= 6000
        assert start == 0 or TEXT[start - 1] == "\n"  # starts at a line boundary
        starts.add(start)
    assert len(starts) <= 2  # moves at most once over 400 keystrokes (a quarter-window step)


def test_short_prefix_is_taken_whole():
    assert stable_window_start("def f():\n    ", 6000) == 0
