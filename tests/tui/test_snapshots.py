"""Snapshots of the main screen at 80x24 and 120x40, with a real streamed suggestion on screen.

The engine is real and greedy, so the suggestion text is deterministic; figures that depend on
timing (tokens/s, and acceptance and draft length, which the adaptive controller derives from
measured costs) are fixed by handing the status bar known `Stats` through its public model
(`app.status_model`, the object engine events update) once the real request has finished.
"""

from __future__ import annotations

import pytest

from specterm.engine import Stats
from specterm.tui.app import SpectermApp

from .conftest import CURSOR_AFTER_DEF, REPETITIVE, wait_for

# acceptance 12/16 = 75 %, (12 accepted + 15 passes) / 15 passes = 1.80 tok/pass, 27 tokens in
# 27/123.4 s = 123.4 tok/s
KNOWN = Stats(tokens=27, drafted=16, accepted=12, target_passes=15, generation_time_s=27 / 123.4,
              draft_max=16, draft_length=4, drafting=True, requests=1)


@pytest.fixture
def snapshot_project(tmp_path):
    root = tmp_path / "demo-project"  # the tree shows this name: keep it fixed
    root.mkdir()
    (root / "adders.py").write_text(REPETITIVE)
    (root / "README.md").write_text("# demo\n")
    (root / ".gitignore").write_text("*.log\n")
    (root / "debug.log").write_text("ignored\n")
    return root


def snapshot_app(root, settings_for, env) -> tuple[SpectermApp, object]:
    app = SpectermApp(settings_for(root), root / "adders.py", environ=env, watch=False)

    async def run_before(pilot) -> None:
        await wait_for(pilot, app.engine_ready.is_set, timeout=60)
        tree = app.query_one("#tree")
        await wait_for(pilot, lambda: len(tree.root.children) >= 2)
        editor = app.active_editor
        editor.cursor_blink = False
        editor.move_cursor(CURSOR_AFTER_DEF)
        editor.action_complete()  # a move alone asks for nothing
        await wait_for(pilot, lambda: editor.ghost_text and not editor.completion_pending, timeout=60)
        alts = editor.suggest.ghost.alternatives  # computed after the suggestion: wait for all of them ("1/3")
        await wait_for(pilot, lambda: alts is None or alts.done, timeout=60)
        assert app.status_model.last is not None  # the real request's figures were shown...
        app.status_model.last = KNOWN  # ...and are replaced by known ones for a stable picture
        app.status_model.session = KNOWN
        app.status_bar.mark_dirty()
        app.clear_notifications()
        await pilot.pause(0.5)  # let the status bar's 4 Hz refresh run

    return app, run_before


def test_main_screen_80x24(snap_compare, snapshot_project, settings_for, env):
    app, run_before = snapshot_app(snapshot_project, settings_for, env)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_main_screen_120x40(snap_compare, snapshot_project, settings_for, env):
    app, run_before = snapshot_app(snapshot_project, settings_for, env)
    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
