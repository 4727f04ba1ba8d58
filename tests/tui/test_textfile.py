"""Files come back to disk exactly as they were read: encoding, newlines, permissions; writes are
atomic (temp file + rename)."""

import os
import stat

import pytest

from specterm.tui.textfile import FileLoadError, TextFile, detect_newline, write_atomic


def test_crlf_latin1_and_mode_survive_a_save(tmp_path):
    path = tmp_path / "legacy.txt"
    path.write_bytes("caf\xe9\r\nline two\r\n".encode("latin-1"))
    os.chmod(path, 0o640)
    f = TextFile.load(path)
    assert f.text == "caf\xe9\nline two\n"
    assert (f.encoding, f.newline) == ("latin-1", "\r\n")
    f.save(f.text + "three\n")
    assert path.read_bytes() == "caf\xe9\r\nline two\r\nthree\r\n".encode("latin-1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert not f.changed_on_disk()
    assert [p.name for p in tmp_path.iterdir()] == ["legacy.txt"]  # no temp file left behind


def test_bom_is_kept_and_outside_changes_are_detected(tmp_path):
    path = tmp_path / "bom.py"
    path.write_bytes(b"\xef\xbb\xbfx = 1\n")
    f = TextFile.load(path)
    assert f.text == "x = 1\n" and f.encoding == "utf-8-sig"
    f.save("x = 2\n")
    assert path.read_bytes() == b"\xef\xbb\xbfx = 2\n"
    path.write_text("x = 3\n")
    assert f.changed_on_disk()


def test_failed_write_leaves_the_original_untouched(tmp_path):
    path = tmp_path / "keep.txt"
    path.write_text("original\n")
    with pytest.raises(TypeError):
        write_atomic(path, "not bytes")  # type: ignore[arg-type]
    assert path.read_text() == "original\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_binary_and_missing_files_are_refused_with_a_message(tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    with pytest.raises(FileLoadError, match="binary"):
        TextFile.load(tmp_path / "blob.bin")
    with pytest.raises(FileLoadError, match="no such file"):
        TextFile.load(tmp_path / "missing.py")


def test_newline_detection():
    assert detect_newline("a\r\nb\r\n") == "\r\n"
    assert detect_newline("a\nb") == "\n"
    assert detect_newline("a\rb\r") == "\r"
    assert detect_newline("") == "\n"


def test_the_text_is_handed_over_once_and_a_save_keeps_no_copy(tmp_path):
    from specterm.engine.heap import release_freed_memory

    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    f = TextFile.load(path)
    assert f.take_text() == "x = 1\n" and f.text == ""  # the editor's document is the buffer now
    f.save("x = 2\n")
    assert path.read_text() == "x = 2\n" and f.text == ""
    assert not f.changed_on_disk()
    import platform

    # glibc is asked to return freed pages; other C libraries have nothing to ask
    assert release_freed_memory() is (platform.libc_ver()[0] == "glibc")


def test_a_failed_save_says_why_and_writes_nothing(tmp_path):
    from specterm.tui.textfile import FileSaveError, UnencodableText

    path = tmp_path / "legacy.txt"
    path.write_bytes("caf\xe9\r\nok\r\n".encode("latin-1"))
    f = TextFile.load(path)
    with pytest.raises(UnencodableText) as caught:
        f.save("caf\xe9\nok \u20ac\n")
    assert (caught.value.char, caught.value.line, caught.value.encoding) == ("\u20ac", 2, "latin-1")
    assert "legacy.txt" in str(caught.value) and "Latin-1 cannot hold" in str(caught.value)
    assert path.read_bytes() == "caf\xe9\r\nok\r\n".encode("latin-1") and f.encoding == "latin-1"
    f.save("caf\xe9\nok \u20ac\n", encoding="utf-8")  # the user chose UTF-8: kept from now on
    assert path.read_bytes() == "caf\xe9\r\nok \u20ac\r\n".encode("utf-8") and f.encoding == "utf-8"
    assert not f.changed_on_disk()

    path.unlink()
    path.mkdir()
    with pytest.raises(FileSaveError, match="legacy.txt.*folder"):
        f.save("text\n")
    assert path.is_dir() and list(path.iterdir()) == []
    gone = TextFile(tmp_path / "no-such-folder" / "new.txt", "")
    with pytest.raises(FileSaveError, match="new.txt.*no-such-folder.*does not exist"):
        gone.save("text\n")
