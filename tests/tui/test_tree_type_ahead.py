"""Keys typed right after choosing a file in the tree (a fast typist, or keys arriving together over
SSH) go into that file once its editor has the focus, in order; before, they reached the tree
and were lost. Keys are sent as the terminal driver sends them, without waiting in between."""

from __future__ import annotations

import asyncio

import pytest
from textual import events

from .conftest import make_app, wait_for


async def _tree_on(app, pilot, name: str) -> None:
    await pilot.pause()  # the file opened at start has taken the focus (after a refresh)
    app.file_tree.focus()  # (shown at this width)
    await wait_for(pilot, lambda: app.focused is app.file_tree, timeout=10)
    tree = app.file_tree
    for _ in range(10):
        node = tree.cursor_node
        if node is not None and node.data is not None and node.data.path.name == name:
            return
        await pilot.press("down")
    raise AssertionError(f"{name} not found in the tree")


async def _type_at_once(app, keys: list[str], turns: int) -> None:
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))
        for _ in range(turns):
            await asyncio.sleep(0)


@pytest.mark.parametrize("turns", [0, 3, 40])
@pytest.mark.parametrize("target", ["c.py", "a.py"])  # not open yet / open in another tab
async def test_keys_typed_after_enter_on_a_file_land_in_it(tmp_path, settings_for, env, target, turns):
    root = tmp_path / "w"
    root.mkdir()
    for name in ("a.py", "b.py", "c.py"):
        (root / name).write_text(f"# {name}\n")
    app = make_app(settings_for(root, **{"completion.auto": False}), root / "a.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.open_file(root / "b.py")
        await pilot.pause()
        await _tree_on(app, pilot, target)
        await _type_at_once(app, ["enter", "x", "y", "delete", "z"], turns)
        # Delete is a binding, run once the key has bubbled back up to the app: typed at once, it
        # may come after z (as in any Textual app), which here deletes the same "#".
        await wait_for(pilot, lambda: app.active_file is not None and app.active_file.file.path.name == target
                       and app.focused is app.active_editor and app.active_editor.text.startswith("xyz")
                       and "#" not in app.active_editor.text, timeout=10)
        texts = {f.file.path.name: f.editor.text for f in app.editor_tabs.files.values()}
        assert texts[target] == f"xyz {target}\n"  # x, y, then Delete took "#", then z
        assert all(text == f"# {name}\n" for name, text in texts.items() if name != target)


async def test_a_file_that_cannot_open_leaves_the_tree_working(tmp_path, settings_for, env):
    root = tmp_path / "w"
    root.mkdir()
    (root / "a.py").write_text("# a\n")
    (root / "b.bin").write_bytes(b"\x00\x01binary")
    app = make_app(settings_for(root, **{"completion.auto": False}), root / "a.py", env)
    async with app.run_test(size=(120, 40)) as pilot:
        await _tree_on(app, pilot, "b.bin")
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.focused is app.file_tree  # nothing opened: a notice, the tree keeps the focus
        before = app.file_tree.cursor_line
        await pilot.press("up")  # the tree answers keys again (it holds none)
        assert app.file_tree.cursor_line == before - 1
        assert app.active_editor.text == "# a\n"
