"""The file tree follows files created, deleted and renamed outside specterm, in open folders only:
the real app, real files on disk, real watchfiles events."""

from __future__ import annotations

import shutil
from pathlib import Path

from specterm.tui.app import SpectermApp
from specterm.tui.widgets.file_tree import FileTree

from .conftest import wait_for

EVENT_TIMEOUT = 30.0  # a slow, busy box: watch restarts and events can take seconds


def find(tree: FileTree, path: Path):
    """The tree's node for `path`, or None."""
    wanted = path.resolve()
    stack = [tree.root]
    while stack:
        node = stack.pop()
        if node.data is not None and node.data.path.resolve() == wanted:
            return node
        stack.extend(node.children)
    return None


def names(tree: FileTree, folder: Path) -> list[str]:
    """The entries the tree shows in `folder`, in order ([] when it is not there or not open)."""
    node = find(tree, folder)
    return [str(child.label) for child in node.children] if node is not None and node.is_expanded else []


def node_for(tree: FileTree, path: Path):
    node = find(tree, path)
    assert node is not None, f"{path} is not in the tree"
    return node


async def watching(pilot, app: SpectermApp, folder: Path) -> None:
    """Wait until the watcher runs with `folder`'s entries watched."""
    await wait_for(pilot, lambda: folder.resolve() in app.watcher.listings, timeout=EVENT_TIMEOUT)
    await wait_for(pilot, app.watcher.ready.is_set, timeout=EVENT_TIMEOUT)


async def test_open_folders_follow_external_creates_deletes_and_renames(project, settings_for, env):
    pkg = project / "pkg"
    (pkg / "deep").mkdir(parents=True)
    (pkg / "b.py").write_text("b = 1\n")
    (pkg / "d.py").write_text("d = 1\n")
    (project / ".gitignore").write_text("*.log\n")
    app = SpectermApp(settings_for(project), project, environ=env, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        tree = app.query_one(FileTree)
        await wait_for(pilot, lambda: "pkg" in names(tree, project), timeout=EVENT_TIMEOUT)
        await watching(pilot, app, project)
        # Only open folders are watched: pkg is closed, so neither it nor anything below it is.
        assert pkg.resolve() not in app.watcher.listings

        # A file created at the top level appears.
        (project / "zz_new.txt").write_text("new\n")
        await wait_for(pilot, lambda: "zz_new.txt" in names(tree, project), timeout=EVENT_TIMEOUT)

        # Open pkg with the keyboard; its entries are now watched, the deeper folder still is not.
        tree.focus()
        tree.move_cursor(node_for(tree, pkg))
        await pilot.press("space")
        await wait_for(pilot, lambda: names(tree, pkg) == ["deep", "b.py", "d.py"], timeout=EVENT_TIMEOUT)
        await watching(pilot, app, pkg)
        assert (pkg / "deep").resolve() not in app.watcher.listings

        # Created outside: shown in sorted place; the cursor stays on its entry, pkg stays open.
        tree.move_cursor(node_for(tree, pkg / "d.py"))
        await pilot.pause()
        (pkg / "c.py").write_text("c = 1\n")
        (pkg / "ignored.log").write_text("git ignores this\n")
        await wait_for(pilot, lambda: "c.py" in names(tree, pkg), timeout=EVENT_TIMEOUT)
        assert names(tree, pkg) == ["deep", "b.py", "c.py", "d.py"]  # not the .log git ignores
        assert tree.cursor_node.data.path == (pkg / "d.py").resolve()
        assert node_for(tree, pkg).is_expanded

        # Renamed outside: the old name goes, the new one comes.
        (pkg / "b.py").rename(pkg / "a.py")
        await wait_for(pilot, lambda: names(tree, pkg) == ["deep", "a.py", "c.py", "d.py"], timeout=EVENT_TIMEOUT)

        # The entry under the cursor is deleted: the cursor goes to the entry now in its place.
        tree.move_cursor(node_for(tree, pkg / "c.py"))
        await pilot.pause()
        (pkg / "c.py").unlink()
        await wait_for(pilot, lambda: "c.py" not in names(tree, pkg), timeout=EVENT_TIMEOUT)
        assert tree.cursor_node.data.path == (pkg / "d.py").resolve()

        # A closed folder is not watched; opened again, it shows what changed meanwhile.
        tree.move_cursor(node_for(tree, pkg))
        await pilot.press("space")
        await wait_for(pilot, lambda: pkg.resolve() not in app.watcher.listings, timeout=EVENT_TIMEOUT)
        (pkg / "d.py").unlink()
        (pkg / "e.py").write_text("e = 1\n")
        await pilot.press("space")
        await wait_for(pilot, lambda: names(tree, pkg) == ["deep", "a.py", "e.py"], timeout=EVENT_TIMEOUT)
        await watching(pilot, app, pkg)

        # A folder deleted outside goes from the tree (and from the watch).
        shutil.rmtree(pkg)
        await wait_for(pilot, lambda: "pkg" not in names(tree, project), timeout=EVENT_TIMEOUT)
        await wait_for(pilot, lambda: pkg.resolve() not in app.watcher.listings, timeout=EVENT_TIMEOUT)

        # The watch still works after that: a new file at the top level appears.
        (project / "after.txt").write_text("still watching\n")
        await wait_for(pilot, lambda: "after.txt" in names(tree, project), timeout=EVENT_TIMEOUT)
        assert app.is_running
