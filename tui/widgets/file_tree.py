"""The file tree: Textual's DirectoryTree that hides what git ignores and follows the disk.

Ignore rules come from every `.gitignore` between the project root and a path (a nested file's
patterns are relative to its own folder, as in git), plus `.git/info/exclude`, matched with
pathspec's gitignore implementation — not a hand-rolled glob. `.git` itself is always hidden.

Following the disk: only the folders the user has open (expanded, with every folder above them
expanded) are shown, so only those are worth watching — `open_folders()` is what the app hands the
file watcher, and `FoldersChanged` says when that set changed. A change in one of them reloads that
one node's children in place (`refresh_folders`): other nodes, what is expanded below, and the
cursor stay. A folder closed and opened again is read again, since nobody watched it meanwhile.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Awaitable, Callable, Iterable

from pathspec import GitIgnoreSpec
from textual import work
from textual.actions import SkipAction
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DirectoryTree, Tree
from textual.widgets.directory_tree import DirEntry
from textual.widgets.tree import TreeNode
from watchfiles import Change

ALWAYS_HIDDEN = {".git", "__pycache__", ".specterm-tmp"}


def entry_order(name: str, is_dir: bool) -> tuple:
    """How the tree orders a folder's entries: folders first, then by name, case-insensitively and
    with runs of digits compared as numbers (f1, f2, f10, f100 — not f1, f10, f100, f2)."""
    parts = re.split(r"(\d+)", name.lower())
    return (not is_dir, [int(part) if part.isdigit() else part for part in parts], name)


class GitIgnore:
    """Answers "would git ignore this path?" for paths under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._specs: dict[Path, GitIgnoreSpec | None] = {}

    def _spec(self, folder: Path) -> GitIgnoreSpec | None:
        if folder not in self._specs:
            lines: list[str] = []
            for name in (".gitignore",) + ((".git/info/exclude",) if folder == self.root else ()):
                try:
                    lines.extend((folder / name).read_text(encoding="utf-8", errors="replace").splitlines())
                except OSError:
                    pass
            self._specs[folder] = GitIgnoreSpec.from_lines(lines) if lines else None
        return self._specs[folder]

    def invalidate(self) -> None:
        self._specs.clear()

    def ignored(self, path: Path) -> bool:
        if path.name in ALWAYS_HIDDEN:
            return True
        try:
            path = path.resolve()
            relative = path.relative_to(self.root)
        except (OSError, ValueError):
            return False
        is_dir = path.is_dir()
        # Git does not look inside an ignored folder, so check each ancestor folder first.
        parts = relative.parts
        for depth in range(1, len(parts) + 1):
            candidate_is_dir = is_dir if depth == len(parts) else True
            if self._matches(parts[:depth], candidate_is_dir):
                return True
        return False

    def _matches(self, parts: tuple[str, ...], is_dir: bool) -> bool:
        ignored = False
        # Rules from the root's .gitignore down to the deepest folder's; deeper files win.
        for split in range(len(parts)):
            folder = self.root.joinpath(*parts[:split])
            spec = self._spec(folder)
            if spec is None:
                continue
            rel = "/".join(parts[split:]) + ("/" if is_dir else "")
            result = spec.check_file(rel)
            if result.include is not None:
                ignored = bool(result.include)
        return ignored


Opener = Callable[[Path], Awaitable[object]]


class FileTree(DirectoryTree):
    """The project's files, without what .gitignore hides; open folders follow the disk.

    Enter on a file opens it through `opener` within the key's own turn (a priority binding: the
    app awaits the action before it takes the next key), so keys typed right after Enter (a fast
    typist, keys arriving together over SSH) wait in the app's queue, in order, and reach the
    file's editor once it has the focus; handled as the tree's select, they reached the tree and
    were lost. Enter on a folder opens or closes it, as in any tree."""

    BINDINGS = [Binding("enter", "open_file", "Open", show=False, priority=True)]

    class FoldersChanged(Message):
        """A folder was opened, closed or removed: `open_folders()` may have changed."""

    def __init__(self, path: Path, *, opener: Opener, id: str | None = None) -> None:
        super().__init__(path, id=id)
        self._opener = opener
        self.gitignore = GitIgnore(Path(path))
        self._unwatched: set[int] = set()  # ids of loaded nodes the user collapsed (not watched since)

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return [p for p in paths if not self.gitignore.ignored(p)]

    async def action_open_file(self) -> None:
        """Enter: the file under the cursor, opened before the app reads the next key; anything
        else (a folder, no node) goes on as the tree's own Enter."""
        node = self.cursor_node
        if node is None or node.data is None or node.allow_expand:
            raise SkipAction()
        await self._opener(node.data.path)

    # -- which folders are shown ------------------------------------------------------------------

    def _open_nodes(self, start: TreeNode[DirEntry] | None = None) -> dict[Path, TreeNode[DirEntry]]:
        """Expanded folder nodes at or below `start` (the root by default) whose ancestors are all
        expanded, by resolved path."""
        found: dict[Path, TreeNode[DirEntry]] = {}
        stack = [start or self.root]
        while stack:
            node = stack.pop()
            if node.data is None or not node.allow_expand or not node.is_expanded:
                continue
            found[node.data.path.resolve()] = node
            stack.extend(node.children)
        return found

    def open_folders(self) -> set[Path]:
        """The folders whose entries are on screen (resolved paths): what is worth watching."""
        return set(self._open_nodes())

    def rule_files(self) -> set[Path]:
        """The ignore files that decide what the open folders show."""
        files = {folder / ".gitignore" for folder in self.open_folders()}
        files.add(self.gitignore.root / ".git" / "info" / "exclude")
        return files

    # -- following the disk -----------------------------------------------------------------------

    @work(group="file-tree-refresh", exit_on_error=False)
    async def refresh_folders(self, folders: Iterable[Path]) -> None:
        """Read again those of `folders` that are open, and update their children in place."""
        wanted = {Path(f).resolve() for f in folders}
        before = self.open_folders()
        async with self.lock:
            nodes = [node for path, node in self._open_nodes().items() if path in wanted]
            await self._sync(nodes)
        if self.open_folders() != before:
            self.post_message(self.FoldersChanged())

    async def _sync(self, nodes: list[TreeNode[DirEntry]]) -> None:
        """Make each node's children match its folder on disk (call with `self.lock` held)."""
        cursor = self.cursor_node
        gone: dict[int, tuple[TreeNode[DirEntry], int]] = {}  # removed node id -> (parent, index)
        for node in nodes:
            if node.data is None or not node.data.loaded:
                continue  # not read yet: the loader will list it
            listing = await asyncio.to_thread(self._listing, node.data.path)
            gone.update(self._apply(node, listing))
        if not gone or cursor is None:
            return
        # The cursor was on a removed entry (or inside a removed folder): the entry now in its place.
        removed: TreeNode[DirEntry] | None = cursor
        while removed is not None and removed.id not in gone:
            removed = removed.parent
        if removed is None:
            return  # still in the tree: Tree keeps the cursor on its node
        parent, index = gone[removed.id]
        children = parent.children
        target = children[min(index, len(children) - 1)] if children else parent
        _ = self._tree_lines  # node lines must be current before moving the cursor
        self.move_cursor(target, animate=False)

    def _listing(self, folder: Path) -> list[tuple[Path, bool]]:
        """The folder's entries as DirectoryTree shows them (filtered, folders first, by name), each
        with whether it is a folder. Runs in a thread: it touches the disk."""
        try:
            entries = list(folder.expanduser().resolve().iterdir())
        except OSError:
            entries = []  # gone or unreadable: show it empty (its parent's refresh removes it)
        listing = [(path, self._safe_is_dir(path)) for path in self.filter_paths(entries)]
        return sorted(listing, key=lambda entry: entry_order(entry[0].name, entry[1]))

    @work(thread=True, exit_on_error=False)
    def _load_directory(self, node: TreeNode[DirEntry]) -> list[Path]:
        """A folder's first reading (DirectoryTree's loader, in a thread), ordered as `_listing`."""
        return [path for path, _ in self._listing(node.data.path)] if node.data is not None else []

    def _apply(
        self, node: TreeNode[DirEntry], listing: list[tuple[Path, bool]]
    ) -> dict[int, tuple[TreeNode[DirEntry], int]]:
        """Remove children that are gone, add new ones at their sorted place; keep the rest (and
        what is expanded below them) untouched. Returns the removed nodes' places."""
        is_dir = dict(listing)
        gone: dict[int, tuple[TreeNode[DirEntry], int]] = {}
        kept: set[Path] = set()
        for index, child in enumerate(list(node.children)):
            path = child.data.path if child.data is not None else None
            if path in is_dir and child.allow_expand == is_dir[path]:
                kept.add(path)
                continue
            gone[child.id] = (node, index - len(gone))
            self._unwatched.discard(child.id)
            child.remove()
        for index, (path, _) in enumerate(listing):
            if path not in kept:
                node.add(path.name, data=DirEntry(path), allow_expand=is_dir[path], before=index)
        return gone

    def follow(self, changes: dict[Path, Change]) -> None:
        """Entries created, deleted or renamed on disk reload their folder's node; a changed ignore
        file reloads every open folder (what is hidden may have changed)."""
        if self.rule_files() & changes.keys():
            self.gitignore.invalidate()
            self.refresh_folders(self.open_folders())
            return
        folders = {path.parent for path, change in changes.items() if change != Change.modified}
        if folders:
            self.refresh_folders(folders)

    async def on_tree_node_expanded(self, event: Tree.NodeExpanded[DirEntry]) -> None:
        node = event.node
        if node.id in self._unwatched:  # opened again: what changed while it was closed is unknown
            self._unwatched.discard(node.id)
            async with self.lock:
                await self._sync(list(self._open_nodes(node).values()))
        self.post_message(self.FoldersChanged())

    def on_tree_node_collapsed(self, event: Tree.NodeCollapsed[DirEntry]) -> None:
        if event.node.data is not None and event.node.data.loaded:
            self._unwatched.add(event.node.id)
        self.post_message(self.FoldersChanged())
