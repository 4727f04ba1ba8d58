"""Issue 14 in the real app with the real demo model: the prefetched next suggestion after Tab, an
edit cancelling the prefetch, a shown suggestion that never vanishes without an edit, the adaptive
typing pause, and the cache surviving an edit far away."""

from __future__ import annotations

import asyncio

from specterm.tui.engine_factory import ui_spare_cores
from specterm.tui.suggest.completer import MIN_WINDOW_CHARS, READ_BUDGET_S, WINDOW_STEP_CHARS
from specterm.tui.widgets.editor import CodeEditor
from specterm.tui.widgets.ghost import PREFIX_CHARS

from .conftest import CURSOR_AFTER_DEF, fresh_completion, make_app, user_requests, wait_for

NUMBERS = "values = [\n    1,\n    2,\n    3,\n    4,\n"
END_OF_NUMBERS = (5, 0)


async def shown_at(pilot, app, location) -> str:
    await wait_for(pilot, app.engine_ready.is_set)
    editor = app.active_editor
    editor.move_cursor(location)
    editor.action_complete()  # a move alone asks for nothing (issue 33)
    await wait_for(pilot, lambda: editor.ghost_text and not editor.completion_pending, timeout=120)
    return editor.ghost_text


async def test_tab_shows_the_prefetched_next_suggestion_at_once(tmp_path, settings_for, env):
    (tmp_path / "numbers.py").write_text(NUMBERS)
    app = make_app(settings_for(tmp_path), tmp_path / "numbers.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        ghost = await shown_at(pilot, app, END_OF_NUMBERS)
        assert app.completer.prefetch is not None  # asked as soon as the suggestion was complete
        asked = user_requests(app)
        await pilot.press("tab")  # at once: the prefetch may still be streaming
        assert editor.text == NUMBERS + ghost
        assert editor.ghost_source in ("prefetch", "cache")
        # (the next prefetch, asked once this one was complete, must finish first: a request of
        # the test's own would supersede it)
        await wait_for(pilot, lambda: not editor.completion_pending and app.completer.prefetch is None)
        prefix, suffix = editor.prefix_suffix()
        fresh = await fresh_completion(app, prefix, suffix)
        assert fresh.strip()  # the list goes on: there is a next suggestion to show
        assert editor.ghost_text == fresh
        assert user_requests(app) == asked  # Tab made no request of its own

        # Once the prefetch has finished, Tab shows the next one from the cache, in the same key:
        # exactly what a fresh request there gives. (Where the model has nothing more to add, as
        # a build of llama.cpp for another CPU may decide at the end of this list, the answer is
        # empty: nothing is cached and nothing shows.)
        before = editor.text
        shown = editor.ghost_text
        await pilot.press("tab")
        assert editor.text == before + shown
        prefix, suffix = editor.prefix_suffix()
        cached = app.completer.cache.get(prefix, suffix)
        now_shown, source, requests = editor.ghost_text, editor.ghost_source, user_requests(app)
        expected = await fresh_completion(app, prefix, suffix)
        assert (cached or "") == expected
        if expected:
            assert now_shown == expected and source == "cache"
            assert requests == asked
        else:  # nothing to show from the cache: the app asks there itself
            assert now_shown == ""


async def test_an_edit_cancels_the_prefetch(tmp_path, settings_for, env):
    (tmp_path / "numbers.py").write_text(NUMBERS)
    settings = settings_for(tmp_path, **{"completion.max_tokens": 64, "completion.max_lines": 8})
    app = make_app(settings, tmp_path / "numbers.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        await wait_for(pilot, app.engine_ready.is_set)
        editor.move_cursor(END_OF_NUMBERS)
        editor.action_complete()
        await wait_for(pilot, lambda: editor.ghost_text and not editor.completion_pending
                       and app.completer.prefetch is not None, step=0.005)
        prefetch = app.completer.prefetch
        editor.insert("#")  # not what the suggestion says: an edit elsewhere in its sense
        assert app.completer.prefetch is None and editor.ghost_text == ""
        await wait_for(pilot, lambda: prefetch.record.finished_at is not None)
        assert prefetch.record.reason in ("cancelled", "superseded")
        assert prefetch.key not in app.completer.cache  # nothing half-done is served later
        assert not prefetch.record.shown


async def test_a_shown_suggestion_never_vanishes_without_an_edit(project, settings_for, env):
    drawn: list[str] = []
    seen: list[object] = []

    def hook(message) -> None:  # every GhostChanged, once (messages bubble)
        if isinstance(message, CodeEditor.GhostChanged) and not any(m is message for m in seen):
            seen.append(message)
            drawn.append(message.text)

    app = make_app(settings_for(project, **{"completion.max_tokens": 48, "completion.max_lines": 6}),
                   project / "adders.py", env)
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        editor = app.active_editor
        ghost = await shown_at(pilot, app, CURSOR_AFTER_DEF)  # the end of the file
        await wait_for(pilot, lambda: app.completer.prefetch is None)
        await pilot.pause(0.3)
        texts = [t for t in drawn if t]
        assert texts and texts[-1] == ghost and drawn[-1] == ghost
        for earlier, later in zip(texts, texts[1:]):
            assert later.startswith(earlier), (earlier, later)  # streamed in, never cut back
        # ctrl+space with the suggestion shown (the issue: at the end of a file it vanished)
        await pilot.press("ctrl+space")
        await pilot.pause(0.5)
        assert editor.ghost_text == ghost and drawn[-1] == ghost


async def test_the_typing_pause_adapts(project, settings_for, env):
    app = make_app(settings_for(project, **{"completion.debounce_ms": 250}), project / "notes.md", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        await wait_for(pilot, app.engine_ready.is_set)
        assert editor.suggest.debounce.delay_s == 0.25  # the configured start
        for key in "abcdefgh":  # a fast typist (edits as fast as the machine makes them)
            editor.insert(key)
        fast = editor.suggest.debounce.delay_s
        assert fast < 0.25 and editor.suggest.debounce.gap_s is not None
        await pilot.pause(0.05)
        assert editor.completion_pending  # the shorter pause is the one scheduled
        for key in "ijklm":  # slower now: the pause grows with the gaps
            await asyncio.sleep(0.3)  # (not pilot.pause: it also waits for a busy machine to idle)
            editor.insert(key)
        assert editor.suggest.debounce.delay_s > fast
        slow = editor.suggest.debounce.delay_s
        await pilot.press("enter")  # a line end: the request goes out almost at once
        assert editor.suggest.debounce.line_break and editor.suggest.debounce.delay_s < slow
        await pilot.press("x")
        assert not editor.suggest.debounce.line_break and editor.suggest.debounce.delay_s >= fast
        await pilot.press("ctrl+end", "enter", "x", "backspace")  # a new line blank again: at once
        assert editor.suggest.debounce.line_break and editor.suggest.debounce.delay_s < slow
        await pilot.press("y", "z", "backspace")  # a character deleted within a word: typing goes on
        assert not editor.suggest.debounce.line_break and editor.suggest.debounce.delay_s >= fast
        await pilot.press("home", "space", "space", "backspace")  # indentation fixed before the code
        assert editor.suggest.debounce.line_break and editor.suggest.debounce.delay_s < slow
        await pilot.press("end", "space")  # a blank between words is typing
        assert not editor.suggest.debounce.line_break


async def test_the_cache_survives_an_edit_far_away(tmp_path, settings_for, env):
    body = "".join(f"value_{i} = {i}\n" for i in range(200)) + "total = value_0 + "
    (tmp_path / "far.py").write_text(body + "\n")
    app = make_app(settings_for(tmp_path), tmp_path / "far.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = app.active_editor
        cursor = (200, len("total = value_0 + "))
        ghost = await shown_at(pilot, app, cursor)
        asked = user_requests(app)
        editor.move_cursor((0, 0))
        editor.insert("# edited far above\n")  # more than 1500 characters before the cursor
        await pilot.pause(0.2)
        editor.move_cursor((cursor[0] + 1, cursor[1]))
        await pilot.press("ctrl+space")  # back there: asked, the cache answers at once
        await wait_for(pilot, lambda: editor.ghost_text == ghost, timeout=5)
        assert editor.ghost_source == "cache"
        assert user_requests(app) <= asked + 1  # at most the one the edit itself caused, up there


async def test_the_info_line_says_what_the_last_suggestion_cost(project, settings_for, env):
    from specterm.tui.screens.stats import StatsScreen
    from specterm.tui.widgets.status_bar import StatusBar

    app = make_app(settings_for(project), project / "adders.py", env)
    async with app.run_test(size=(140, 40)) as pilot:
        await shown_at(pilot, app, CURSOR_AFTER_DEF)
        record = app.completer.log.last_shown()
        assert record is not None and not record.prefetch and record.stats is not None
        s = record.stats
        await pilot.press("f9")
        assert isinstance(app.screen, StatsScreen)
        await pilot.press("i")  # the status bar shows the info line instead of the figures
        await pilot.press("escape")
        bar = app.query_one(StatusBar)
        await wait_for(pilot, lambda: bar.render_status().plain.startswith("last suggestion:"))
        text = bar.render_status().plain
        cached = s.prompt_tokens - s.prompt_tokens_decoded
        assert f"prompt {s.prompt_tokens} tok ({cached} cached)" in text
        assert f"gen {s.tokens} tok" in text and f"acc {s.accepted}/{s.drafted}" in text
        assert "first text" in text
        bar.toggle_info()  # and back to the figures
        assert "tok/s" in bar.render_status().plain


async def test_opening_a_file_warms_its_head_so_the_first_suggestion_reads_little(tmp_path, settings_for, env):
    """The file's head (as far as a request's prefix reaches) is read while the user looks at
    the file; the first suggestion in its middle then decodes only what differs."""
    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(60))
    (tmp_path / "many.py").write_text(text)
    app = make_app(settings_for(tmp_path), tmp_path / "many.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        editor = app.active_editor
        head, _ = editor.head_window()
        n_head = len(app.engine.target.tokenize(head))
        await wait_for(pilot, lambda: len(app.engine.decoder.cached) >= n_head * 0.9, timeout=120)
        # That read also taught the prefix window how fast the engine reads, before any request:
        # the first request after a far jump carries what reads in the budget, not the maximum.
        await wait_for(pilot, lambda: app.completer.window.rate is not None)
        assert not app.completer.log.records
        window = app.completer.window
        budget_chars = window.rate * READ_BUDGET_S
        assert MIN_WINDOW_CHARS <= window.chars <= PREFIX_CHARS
        assert (window.chars in (MIN_WINDOW_CHARS, PREFIX_CHARS)
                or abs(window.chars - budget_chars) <= WINDOW_STEP_CHARS), (window, budget_chars)
        prefix, suffix = editor.prefix_suffix((90, 0))  # the middle of the file, never visited
        request = app.completer.build_request(prefix, suffix, str(editor.path))
        events = [event async for event in app.engine.stream(request)]
        stats = events[-1].stats
        assert stats.prompt_tokens > 300
        assert stats.prompt_tokens_decoded <= 16, stats.to_dict()


async def test_the_prefix_window_of_a_long_file_keeps_its_start_line_after_line(tmp_path, settings_for, env):
    """Past PREFIX_ROWS, a window moved one row per new line would change the prompt's start at
    every line: the model would read it all again. The start moves in PREFIX_STEP steps."""
    from specterm.tui.widgets.editor import PREFIX_ROWS, PREFIX_STEP

    text = "".join(f"v{i} = {i}\n" for i in range(1000))
    (tmp_path / "long.py").write_text(text)
    app = make_app(settings_for(tmp_path), tmp_path / "long.py", env)
    async with app.run_test(size=(120, 40)):
        editor = app.active_editor
        row = PREFIX_ROWS + PREFIX_STEP + 10
        prefixes = [editor.prefix_suffix((r, 0))[0] for r in range(row, row + PREFIX_STEP // 2)]
        first_lines = {p.split("\n", 1)[0] for p in prefixes}
        assert len(first_lines) == 1, first_lines  # one start for these lines
        assert all(p.count("\n") >= PREFIX_ROWS - PREFIX_STEP for p in prefixes)  # enough context
        assert editor.prefix_suffix((10, 0))[0].startswith("v0 = 0")  # near the top: from the top


async def test_a_cursor_jump_reads_the_new_place_before_the_typing_pause(tmp_path, settings_for, env):
    """After a jump past what the KV cache holds (a click, ctrl+end, a search), the new place's
    prompt start is read at once, while the typing pause runs, not by the request after it."""
    from specterm.engine.llamacpp.fim_prompt import build_fim_prompt

    text = "".join(f"{i}\n" for i in range(700))  # short rows: a prompt of ~1,000 tokens at row 650
    (tmp_path / "long.py").write_text(text)
    # The pause is long (60 s): no request is made while the test watches the prewarm.
    app = make_app(settings_for(tmp_path, **{"completion.debounce_ms": 60000}), tmp_path / "long.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        editor = app.active_editor
        editor.move_cursor((650, 0))  # its prompt starts at row 300: nothing of it is cached
        prefix, suffix = editor.prefix_suffix()
        request = app.completer.build_request(prefix, suffix, str(editor.path))
        fp = build_fim_prompt(app.engine.target, request, request.max_tokens)
        want = fp.tokens[: fp.warm]
        assert len(want) > 300
        await wait_for(pilot, lambda: app.engine.decoder.cached[: len(want)] == want, timeout=55)
        assert user_requests(app) == 0  # the prewarm, not a request, read it
        assert not editor.completion_pending  # (a move alone asks for no suggestion)


async def test_a_find_reads_the_place_it_lands_on_while_the_bar_is_still_open(tmp_path, settings_for, env):
    """ctrl+f, a word, Enter: the match is selected and the cursor stands at its end. A person then
    leaves the bar and types there; the read of that place starts when the find lands, not at the
    first key after the bar closes."""
    from specterm.engine.drafters import common_prefix

    (tmp_path / "long.py").write_text("".join(f"{i}\n" for i in range(700)))
    app = make_app(settings_for(tmp_path, **{"completion.debounce_ms": 60000}), tmp_path / "long.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        await wait_for(pilot, lambda: app.completer.ready, timeout=55)
        await wait_for(pilot, lambda: not any(w.group == "prewarm" for w in app.workers), timeout=55)
        editor = app.active_editor
        await pilot.press("ctrl+f", "6", "5", "0", "enter")
        assert not editor.selection.is_empty and editor.selection.end == (650, 3)
        assert not editor.has_focus  # (the find bar still has it)

        def left_to_read() -> int:  # of what a request there would read now
            request = app.completer.build_request(*editor.prefix_suffix(), str(editor.path))
            fp = app.engine._fim_prompt(request, request.max_tokens)
            return fp.warm - common_prefix(app.engine.decoder.cached, fp.tokens)

        await wait_for(pilot, lambda: left_to_read() <= 0, timeout=55)
        assert user_requests(app) == 0  # the prewarm, not a request, read it


async def test_typing_before_a_moves_read_started_starts_it(tmp_path, settings_for, env, monkeypatch):
    """A person moves and types at once: the first edit starts the move's read of the new place
    (not the move's timer, here longer than the test), so the read runs while the typing pause
    does."""
    from specterm.tui.suggest import prewarm

    monkeypatch.setattr(prewarm, "MOVE_PREWARM_S", 600.0)
    (tmp_path / "long.py").write_text("".join(f"{i}\n" for i in range(700)))
    app = make_app(settings_for(tmp_path, **{"completion.debounce_ms": 60000}), tmp_path / "long.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        await wait_for(pilot, lambda: app.completer.ready, timeout=55)

        def reads() -> int:
            return sum(1 for w in app.workers if w.group == "prewarm")

        await wait_for(pilot, lambda: reads() == 0, timeout=55)  # the opened file's head read
        editor = app.active_editor
        editor.move_cursor((650, 0))
        app.prewarmer.moved()  # (what the editor's Moved message does)
        app.prewarmer.typed()  # (what the first edit's Changed message does)
        assert reads() == 1


async def test_typing_in_a_new_place_reads_its_prompt_before_the_pause(tmp_path, settings_for, env):
    """While the user types, what was typed is read on the threads the engine leaves the UI free
    of, not at the pause that asks for a suggestion (the prompt that request would read, its
    first read bounded as the app bounds it, is in the KV cache but for its last tokens); idle
    work then gives the batch threads back."""
    import os

    from specterm.engine.drafters import common_prefix
    from specterm.engine.llamacpp.fim_prompt import WARM_TAIL
    from specterm.tui.widgets.debounce import BURST_GAP_S

    text = "".join(f"{i}\n" for i in range(700))
    (tmp_path / "long.py").write_text(text)
    app = make_app(settings_for(tmp_path, **{"completion.debounce_ms": 60000}), tmp_path / "long.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        editor = app.active_editor
        editor.move_cursor((650, 0))
        # ~40 tokens, more than a prewarm leaves out, in one edit soon after the move (typing on
        # there for GROW_TYPING_S would read the whole window back instead), but not so soon that
        # the adaptive pause takes move and edit for a burst and asks at once (BURST_GAP_S).
        await pilot.pause(BURST_GAP_S + 0.1)
        editor.insert(" ".join(str(n) for n in range(20)) + " ")
        def left_to_read() -> int:  # by the request the pause would make now (the window as sized now)
            request = app.completer.build_request(*editor.prefix_suffix(), str(editor.path))
            tokens = app.engine._fim_prompt(request, request.max_tokens).tokens
            return len(tokens) - common_prefix(app.engine.decoder.cached, tokens)

        await wait_for(pilot, lambda: left_to_read() <= WARM_TAIL + 2, timeout=55)
        assert user_requests(app) == 0  # the prewarm, not a request, read it
        cores = os.cpu_count() or 2
        assert app.engine.target.threads == (max(1, cores - ui_spare_cores(cores)), cores)


async def test_after_a_move_the_first_read_is_short_and_a_pause_reads_the_whole_window_back(
        tmp_path, settings_for, env):
    """The first suggestion after a jump reads within its budget (a short window); once the user
    pauses, the whole window is read in the background, and the next request there uses it."""
    from specterm.engine.drafters import common_prefix
    from specterm.engine.llamacpp.fim_prompt import build_fim_prompt

    text = "".join(f"def helper_{i}(value):\n    return value * {i}\n\n" for i in range(400))
    (tmp_path / "long.py").write_text(text)
    app = make_app(settings_for(tmp_path), tmp_path / "long.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        editor = app.active_editor
        await wait_for(pilot, lambda: app.engine.decoder.policy.costs.read_cost() is not None, timeout=55)
        editor.move_cursor((1001, 0))  # a blank line between two functions
        await pilot.press("d", "e", "f")
        await wait_for(pilot, lambda: any(r.stats is not None for r in app.completer.log.records), timeout=55)
        first = next(r for r in app.completer.log.records if r.stats is not None)
        assert first.stats.prompt_cut_chars > 0  # a short window: the jump's place was not read
        prefix, suffix = editor.prefix_suffix()
        whole = app.completer.build_request(prefix, suffix, str(editor.path), whole=True)
        want = build_fim_prompt(app.engine.target, whole, whole.max_tokens)
        await wait_for(pilot, lambda: common_prefix(app.engine.decoder.cached, want.tokens) >= want.warm,
                       timeout=55)
        asked = len(app.completer.log.records)
        await pilot.press("escape", "_")  # typing on there: the next request

        def typed_request():
            later = [r for r in list(app.completer.log.records)[asked:] if not r.prefetch and r.stats is not None]
            return later[0] if later else None

        await wait_for(pilot, lambda: typed_request() is not None, timeout=55)
        assert typed_request().stats.prompt_cut_chars == 0  # the whole window


async def test_the_prefix_window_follows_what_the_engine_reads(tmp_path, settings_for, env):
    """A read the engine reports sizes the prefix window of the requests that follow."""
    import pytest

    from specterm.tui.suggest.completer import MIN_WINDOW_CHARS, PREFIX_CHARS, STICKY

    body = "".join(f"def helper_{i}(value):\n    return value * {i}\n\n\n" for i in range(200))
    path = tmp_path / "long.py"
    path.write_text(body)
    # automatic completions off: nothing reads ahead, the request reads its whole window
    app = make_app(settings_for(tmp_path, **{"completion.auto": False}), path, env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        editor = app.active_editor
        window = app.completer.window
        assert window.rate is None and window.chars == PREFIX_CHARS
        editor.move_cursor((editor.document.line_count - 1, 0))
        await pilot.press("ctrl+@")
        log = app.completer.log.records
        await wait_for(pilot, lambda: log and log[0].finished_at is not None, timeout=120)
        stats, asked = log[0].stats, log[0].request
        assert stats.prompt_tokens_decoded >= 64
        assert window.rate == pytest.approx(
            stats.prompt_tokens_decoded / stats.prompt_time_s * len(asked.prefix) / stats.prompt_tokens)
        assert MIN_WINDOW_CHARS <= window.chars <= PREFIX_CHARS
        prefix, suffix = editor.prefix_suffix()
        assert len(app.completer.build_request(prefix, suffix, str(path)).prefix) <= window.chars * STICKY


async def test_no_automatic_suggestion_before_much_text_on_the_line(project, settings_for, env):
    """llama.vim's max_line_suffix: with more than 8 characters after the cursor on its line (here
    the start of a `def` line, which a model without FIM tokens completes from nothing), a typing
    pause asks nothing; a few closing characters do not stop it, and the complete key always asks."""
    app = make_app(settings_for(project), project / "adders.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        editor = app.active_editor
        editor.focus()
        editor.move_cursor((4, 0))  # before "def add_two(x):", 15 characters
        await pilot.press("x", "backspace")  # typed there (a move alone asks for nothing)
        await pilot.pause(1.0)  # twenty typing pauses of 50 ms
        assert user_requests(app) == 0 and not editor.ghost_text
        editor.move_cursor((4, len("def add_two(x")))  # "):" follows
        await pilot.press("x")
        await wait_for(pilot, lambda: user_requests(app) == 1, timeout=20)
        editor.move_cursor((8, 0))  # before "def add_three(x):"
        await pilot.press("ctrl+space")
        await wait_for(pilot, lambda: user_requests(app) == 2, timeout=20)
        assert app.completer.log.records[-1].request.suffix.startswith("def add_three(x):")
