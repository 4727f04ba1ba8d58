"""Watching files on disk with watchfiles, off the UI thread.

The app says which files matter (open buffers, config files, theme files) and which folders' entries
matter (the folders open in the file tree); this module watches those folders (not recursively, so a
big project tree costs nothing) and reports batches of changed paths that are among them. Whether a
change is specterm's own save is decided by the caller, by comparing content with what it last
wrote — timestamps alone cannot tell.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import AbstractSet, Awaitable, Callable

from watchfiles import Change, awatch

ChangeHandler = Callable[[dict[Path, Change]], Awaitable[None] | None]


class FileWatcher:
    """Watches a changing set of files; call `set_paths` whenever the set changes."""

    def __init__(self, on_change: ChangeHandler, *, debounce_ms: int = 150) -> None:
        self.on_change = on_change
        self.debounce_ms = debounce_ms
        self._paths: frozenset[Path] = frozenset()
        self._dirs: frozenset[Path] = frozenset()
        self._folders: frozenset[Path] = frozenset()
        self._listings: frozenset[Path] = frozenset()
        self._task: asyncio.Task | None = None
        self._stop: asyncio.Event | None = None
        self.ready = asyncio.Event()  # set once the current watch is running

    @property
    def paths(self) -> frozenset[Path]:
        return self._paths

    @property
    def listings(self) -> frozenset[Path]:
        """The folders whose entries are watched."""
        return self._listings

    def set_paths(
        self, paths: AbstractSet[Path], folders: AbstractSet[Path] = frozenset(), *,
        listings: AbstractSet[Path] = frozenset()
    ) -> None:
        """Watch `paths`, plus every `*.toml` in `folders` (so a new theme file is noticed too), plus
        entries created, deleted or renamed in `listings` (content changes there are not reported,
        unless the file is one of `paths`)."""
        resolved = frozenset(Path(p).absolute() for p in paths)
        self._folders = frozenset(Path(f).absolute() for f in folders if Path(f).is_dir())
        self._listings = frozenset(Path(f).absolute() for f in listings if Path(f).is_dir())
        dirs = frozenset(p.parent for p in resolved if p.parent.is_dir()) | self._folders | self._listings
        self._paths = resolved
        if dirs == self._dirs and self._task is not None and not self._task.done():
            return
        self._dirs = dirs
        self._restart()

    def _restart(self) -> None:
        self.stop()
        if not self._dirs:
            return
        self._stop = asyncio.Event()
        self.ready = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(self._dirs, self._stop, self.ready))

    async def _run(self, dirs: frozenset[Path], stop: asyncio.Event, ready: asyncio.Event) -> None:
        watcher = awatch(
            *sorted(dirs), stop_event=stop, recursive=False, debounce=self.debounce_ms,
            step=50, rust_timeout=500, yield_on_timeout=True,
        )
        try:
            async for changes in watcher:
                ready.set()
                relevant: dict[Path, Change] = {}
                for change, raw in changes:
                    path = Path(raw).absolute()
                    if path in self._paths or (path.parent in self._folders and path.suffix == ".toml"):
                        relevant[path] = change
                    elif path.parent in self._listings and change != Change.modified:
                        relevant[path] = change
                if relevant:
                    result = self.on_change(relevant)
                    if asyncio.iscoroutine(result):
                        await result
        except asyncio.CancelledError:
            raise
        except Exception:
            # A folder vanished or the OS refused a watch: stop watching rather than crash the UI.
            return

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._task is not None:
            self._task.cancel()
        self._task = None
        self._stop = None
