"""The file tree: Textual's DirectoryTree that hides what git ignores.

Ignore rules come from every `.gitignore` between the project root and a path (a nested file's
patterns are relative to its own folder, as in git), plus `.git/info/exclude`, matched with
pathspec's gitignore implementation — not a hand-rolled glob. `.git` itself is always hidden.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from pathspec import GitIgnoreSpec
from textual.widgets import DirectoryTree

ALWAYS_HIDDEN = {".git", "__pycache__", ".specterm-tmp"}


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


class FileTree(DirectoryTree):
    """The project's files, without what .gitignore hides."""

    def __init__(self, path: Path, *, id: str | None = None) -> None:
        super().__init__(path, id=id)
        self.gitignore = GitIgnore(Path(path))

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return [p for p in paths if not self.gitignore.ignored(p)]
