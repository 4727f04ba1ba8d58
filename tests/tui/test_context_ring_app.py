"""The app feeds the context ring from files the user opens, leaves, edits and copies from, and a
completion request carries the chunks most like the lines at the cursor (the real app and engine)."""

from __future__ import annotations

from textual.widgets.text_area import Selection

from specterm.tui.app import SpectermApp
from specterm.tui.suggest.prewarm import PREWARM_DELAY_S

from .conftest import wait_for

HELPERS = "".join(f"def helper_{i}(value):\n    return value * {i}\n\n\n" for i in range(60))
OTHER = "".join(f"class Thing{i}:\n    size = {i}\n\n\n" for i in range(60))


async def test_leaving_editing_and_copying_feed_the_ring_and_requests_carry_it(project, settings_for, env):
    (project / "helpers.py").write_text(HELPERS)
    (project / "things.py").write_text(OTHER)
    main = project / "adders.py"
    app = SpectermApp(settings_for(project, **{"completion.auto": False}), main, environ=env, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        tabs = app.editor_tabs
        helpers = await app.open_file(project / "helpers.py")
        helpers.move_cursor((150, 0))  # work far down the file, then leave it
        await app.open_file(project / "things.py")
        await pilot.pause()
        paths = [c.path for c in tabs.ring.chunks]
        assert str(project / "helpers.py") in paths and str(project / "things.py") in paths
        left = next(c for c in tabs.ring.chunks if c.path.endswith("helpers.py") and c.start > 0)
        assert "def helper_37(value):" in left.text  # the chunk around row 150

        # An edit far from where the last chunk was taken adds one there.
        things = app.active_editor
        things.focus()  # the key must reach this editor, wherever opening the tabs left focus
        await pilot.pause()
        things.move_cursor((200, 0))
        await pilot.press("x")  # the ring is fed from the editor's Changed message
        assert things.document[200].startswith("x")
        await wait_for(pilot, lambda: any(c.path.endswith("things.py") and c.start > 100
                                          for c in tabs.ring.chunks))

        # A copied selection goes in as it is.
        things.selection = Selection((196, 0), (206, 0))
        await pilot.press("ctrl+c")
        assert any(c.start == -1 and "class Thing49:" in c.text for c in tabs.ring.chunks)

        # A request in adders.py gets the chunk most like the lines at its cursor.
        await app.open_file(main)
        editor = app.active_editor
        editor.move_cursor((12, 0))
        editor.insert("def helper_38(value):\n    return value * 38\n\n\ndef helper_39(value):\n")
        prefix, suffix = editor.prefix_suffix()
        request = app.completer.build_request(prefix, suffix, str(main))
        assert request.context_files and any("helper_38" in f.text for f in request.context_files)
        assert all(f.path != str(main) for f in request.context_files)  # its own text is in the prompt

        # The picks come first in the prompt: while the user works on they stay as they were
        # (a changed pick makes the engine read everything after it again); once the user
        # pauses after the ring changed, the next request picks again.
        await pilot.pause(PREWARM_DELAY_S + 0.3)  # the idle prewarm opening the file asked for
        prefix, suffix = editor.prefix_suffix()
        held = app.completer.build_request(prefix, suffix, str(main)).context_files
        editor.selection = Selection((12, 0), (17, 0))
        await pilot.press("ctrl+c")
        copied = next(c for c in tabs.ring.chunks if c.start == -1 and "helper_38" in c.text)
        editor.move_cursor((17, 0))
        prefix, suffix = editor.prefix_suffix()
        assert app.completer.build_request(prefix, suffix, str(main)).context_files == held
        await pilot.pause(PREWARM_DELAY_S + 0.3)
        again = app.completer.build_request(prefix, suffix, str(main)).context_files
        assert copied.text in [f.text for f in again]
        survivors = [f for f in held if f in again]
        assert list(again[: len(survivors)]) == survivors  # the held ones keep their places, first
