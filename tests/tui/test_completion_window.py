"""The prefix window of a completion request stays put while the user types in a long file, so the
engine can reuse its KV cache instead of decoding the whole window again on every keystroke."""

from specterm.tui.suggest.completer import stable_window_start

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
    from specterm.tui.suggest.completer import HEAD_CHARS, STICKY, sticky_window_start

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


def _read(tokens: int, decoded: int, seconds: float):
    from specterm.engine import Stats

    return Stats(prompt_tokens=tokens, prompt_tokens_decoded=decoded, prompt_time_s=seconds)


def test_the_window_holds_what_the_engine_reads_in_the_read_budget():
    from specterm.tui.suggest.completer import (
        MIN_WINDOW_CHARS,
        PREFIX_CHARS,
        READ_BUDGET_S,
        Completer,
        CompletionOptions,
        PrefixWindow,
    )

    w = PrefixWindow()
    assert w.chars == PREFIX_CHARS  # nothing measured yet: the full window
    w.observe(6000, _read(1800, 40, 0.2))
    assert w.chars == PREFIX_CHARS and w.rate is None  # 40 tokens say little about a rate
    # The demo model on 2 cores: 1,200 of 1,800 tokens (3.3 characters each) in 4 s.
    w.observe(6000, _read(1800, 1200, 4.0))
    assert w.rate == 1200 / 4.0 * 6000 / 1800
    assert w.chars == round(w.rate * READ_BUDGET_S / 500) * 500 == 2000
    w.observe(2000, _read(600, 500, 1.4))  # a little faster: within the hysteresis, no change
    assert w.chars == 2000
    w.observe(2000, _read(600, 600, 0.05))  # a GPU: the whole window, no more
    assert w.chars == PREFIX_CHARS
    slow = PrefixWindow()
    slow.observe(6000, _read(1800, 1800, 60.0))  # a big model on a CPU: never below the floor
    assert slow.chars == MIN_WINDOW_CHARS

    completer = Completer(CompletionOptions.from_config())
    completer.window.observe(6000, _read(1800, 1800, 6.0))  # what the engine reported
    text = TEXT[:40_000]
    request = completer.build_request(text, "", "/p/a.py")
    assert len(request.prefix) <= completer.window.chars < PREFIX_CHARS and text.endswith(request.prefix)
