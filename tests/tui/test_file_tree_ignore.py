"""The file tree hides what git would ignore, using pathspec's gitignore rules."""

from specterm.tui.widgets.file_tree import GitIgnore


def test_root_nested_and_negated_patterns(tmp_path):
    (tmp_path / ".gitignore").write_text("*.log\nbuild/\n!keep.log\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.py").write_text("")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / ".gitignore").write_text("generated_*.py\n")
    for name in ("a.log", "keep.log", "src/generated_x.py", "src/main.py", "build.py"):
        (tmp_path / name).write_text("")
    (tmp_path / ".git").mkdir()
    ignore = GitIgnore(tmp_path)
    assert ignore.ignored(tmp_path / "a.log")
    assert not ignore.ignored(tmp_path / "keep.log")
    assert ignore.ignored(tmp_path / "build")
    assert ignore.ignored(tmp_path / "build" / "out.py")
    assert not ignore.ignored(tmp_path / "build.py")  # "build/" matches folders only
    assert ignore.ignored(tmp_path / "src" / "generated_x.py")
    assert not ignore.ignored(tmp_path / "src" / "main.py")
    assert ignore.ignored(tmp_path / ".git")
