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


def test_a_kept_window_stays_put_across_step_boundaries_and_row_window_moves():
    from specterm.tui.widgets.completion import HEAD_CHARS, STICKY, sticky_window_start

    starts, head = set(), ""
    for n in range(40_000, 42_000, 7):  # typing on: the stable start alone moves every 1500
        for origin in (0, 10_000):  # the editor's row window starts elsewhere (it moved)
            prefix = TEXT[origin:n]
            start = sticky_window_start(prefix, 6000, head)
            assert len(prefix) - start <= 6000 * STICKY
            assert start == 0 or prefix[start - 1] == "\n"
            starts.add(origin + start)  # where it begins in the file
            head = prefix[start:start + HEAD_CHARS]
    assert len(starts) == 1  # one window start in the file for all 2,000 characters typed
    assert len({stable_window_start(TEXT[o:n], 6000) + o for n in range(40_000, 42_000, 7) for o in (0, 10_000)}) > 1
    # grown past STICKY x the window, or its start edited away: a fresh stable start
    assert sticky_window_start(TEXT[:50_000], 6000, head) == stable_window_start(TEXT[:50_000], 6000)
    assert sticky_window_start(TEXT[:40_000], 6000, "not in the text") == stable_window_start(TEXT[:40_000], 6000)
