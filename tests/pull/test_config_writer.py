"""The comment-preserving config writer `specterm pull` uses."""

from __future__ import annotations

import os
import tomllib

import pytest

from specterm.tui.config_writer import ConfigWriteError, plan_edit

USER_FILE = """\
# my specterm settings -- hand written
[model]
# the model I use at work
target = "/models/old-target.gguf"  # keep this comment
ctx = 8192 # big context

[ui]
theme = "nord"  # dark
"""

PAIR = {"model": {"target": "/hf/new-target.gguf", "draft": "/hf/new-draft.gguf"}}


def test_update_keeps_comments_layout_and_other_keys(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(USER_FILE)
    edit = plan_edit(path, PAIR, comment="set by specterm pull")
    assert edit.changed and not edit.creates
    assert path.read_text() == USER_FILE  # planning touches nothing
    edit.write()
    text = path.read_text()
    for line in ("# my specterm settings -- hand written", "# the model I use at work",
                 'target = "/hf/new-target.gguf"  # keep this comment', "ctx = 8192 # big context",
                 'theme = "nord"  # dark'):
        assert line in text
    assert "# set by specterm pull\ndraft = \"/hf/new-draft.gguf\"" in text
    data = tomllib.loads(text)
    assert data["model"] == {"target": "/hf/new-target.gguf", "ctx": 8192, "draft": "/hf/new-draft.gguf"}
    assert data["ui"] == {"theme": "nord"}


def test_diff_shows_exactly_the_changed_lines(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(USER_FILE)
    diff = plan_edit(path, PAIR).diff()
    assert diff.startswith(f"--- {path}\n+++ {path}\n")
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert removed == ['-target = "/models/old-target.gguf"  # keep this comment']
    assert added == ['+target = "/hf/new-target.gguf"  # keep this comment',
                     '+draft = "/hf/new-draft.gguf"']


def test_new_file_gets_a_header_and_the_section(tmp_path):
    path = tmp_path / "deeper" / "specterm" / "config.toml"
    edit = plan_edit(path, PAIR)
    assert edit.creates and edit.diff().startswith("--- /dev/null\n")
    edit.write()
    text = path.read_text()
    assert text.startswith("# specterm user configuration")
    assert tomllib.loads(text) == PAIR


def test_same_values_mean_no_change(tmp_path):
    path = tmp_path / "config.toml"
    plan_edit(path, PAIR).write()
    again = plan_edit(path, PAIR)
    assert not again.changed and again.diff() == ""


def test_write_keeps_file_mode(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(USER_FILE)
    os.chmod(path, 0o600)
    plan_edit(path, PAIR).write()
    assert (path.stat().st_mode & 0o777) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]  # no temp file left behind


def test_malformed_file_is_refused_with_its_line(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[model]\ntarget = "a"\nctx = = 3\n')
    with pytest.raises(ConfigWriteError) as err:
        plan_edit(path, PAIR)
    assert str(path) in err.value.message and "line 3" in err.value.message
    assert path.read_text() == '[model]\ntarget = "a"\nctx = = 3\n'


def test_section_that_is_a_value_is_refused(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("model = 3\n")
    with pytest.raises(ConfigWriteError) as err:
        plan_edit(path, PAIR)
    assert "model = 3 is a value, not a table" in err.value.message


def test_inline_table_section_is_updated_in_place(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('model = { target = "a", ctx = 2048 }  # inline\n')
    plan_edit(path, PAIR).write()
    text = path.read_text()
    assert "# inline" in text
    assert tomllib.loads(text)["model"] == {"target": "/hf/new-target.gguf", "ctx": 2048,
                                            "draft": "/hf/new-draft.gguf"}


def test_unwritable_location_gives_a_message(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the config folder should be")
    with pytest.raises(ConfigWriteError) as err:
        plan_edit(blocker / "specterm" / "config.toml", PAIR).write()
    assert "Cannot write the config file" in err.value.message
    assert str(blocker / "specterm" / "config.toml") in err.value.message
