"""The palette's Screenshot: an SVG of the screen, saved where a folder exists, with a notice that
names the file or says why it could not be written.

Textual's own delivery saved to ~/Downloads only, failed without a reason where that folder is
missing (a server over SSH), and announced success with theme markup that specterm's plain-text
notices showed raw."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from platformdirs import user_downloads_path

if TYPE_CHECKING:
    from textual.app import App


def screenshot_folder() -> Path:
    """The user's downloads folder where it exists, else the current directory."""
    downloads = user_downloads_path()
    return downloads if downloads.is_dir() else Path.cwd()


def save_screenshot(app: "App", filename: str | None = None, folder: str | Path | None = None) -> Path | None:
    """Write the screen as SVG and say where (or why not) in a notice; the path, or None."""
    try:
        target = Path(folder).expanduser() if folder else screenshot_folder()
        path = Path(app.save_screenshot(filename, str(target)))
    except OSError as err:
        where = err.filename or (folder or "the current directory")
        app.notify(f"Screenshot not saved: {where}: {err.strerror or err}.", title="Screenshot",
                   severity="error", timeout=10, markup=False)
        return None
    app.notify(f"Saved screenshot to {path}", title="Screenshot", timeout=8, markup=False)
    return path
