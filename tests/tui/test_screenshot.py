"""The palette's Screenshot (issue #33): saved where a folder exists, announced in plain words (no
raw markup), and where it cannot be written the notice says why."""

from __future__ import annotations

import os
from pathlib import Path

from .conftest import make_app, wait_for


def screenshot_notices(app) -> list[tuple[str, str]]:
    return [(n.message, n.severity) for n in app._notifications if n.title == "Screenshot"]


async def take_screenshot(app, pilot, count: int) -> tuple[str, str]:
    """Run the palette's Screenshot command; the notice it gives (the `count`-th)."""
    commands = {c.title: c for c in app.get_system_commands(app.screen)}
    commands["Screenshot"].callback()
    await wait_for(pilot, lambda: len(screenshot_notices(app)) >= count, timeout=20)
    return screenshot_notices(app)[count - 1]


async def test_screenshot_goes_to_a_folder_that_exists_and_says_where(project, settings_for, env, tmp_path,
                                                                       monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    downloads = Path(env["HOME"]) / "Downloads"
    assert not downloads.exists()
    app = make_app(settings_for(project), project / "adders.py", env)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, app.engine_ready.is_set)
        # No ~/Downloads (a server over SSH): the current directory.
        message, severity = await take_screenshot(app, pilot, 1)
        saved = list(work.glob("*.svg"))
        assert len(saved) == 1 and saved[0].read_text().lstrip().startswith("<svg")
        assert (message, severity) == (f"Saved screenshot to {saved[0]}", "information")
        assert not downloads.exists()  # nothing created behind the user's back

        # With ~/Downloads: there.
        downloads.mkdir()
        message, _ = await take_screenshot(app, pilot, 2)
        in_downloads = list(downloads.glob("*.svg"))
        assert len(in_downloads) == 1 and message == f"Saved screenshot to {in_downloads[0]}"

        # Nowhere to write (no Downloads, the current directory deleted): the notice says why.
        downloads.rename(tmp_path / "elsewhere")
        saved[0].unlink()
        os.rmdir(work)
        message, severity = await take_screenshot(app, pilot, 3)
        assert severity == "error"
        assert message.startswith("Screenshot not saved:") and "No such file or directory" in message
        assert all("[$" not in m for m, _ in screenshot_notices(app))
        await pilot.press("a")
        assert app.active_editor.text.startswith("a")
