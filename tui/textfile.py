"""Reading and atomically writing the files the editor opens.

A file comes back to disk the way it was read: same encoding (UTF-8, UTF-8 with BOM, or Latin-1 for
bytes that are not UTF-8), same newline style, same permissions. Writes go to a temporary file in
the same folder that is renamed over the original, so a crash or a full disk never leaves a
half-written file. A `DiskSignature` remembers what specterm last read or wrote, so the watcher can
tell its own saves from someone else's changes. A save that cannot happen raises `FileSaveError`
saying why in words a user can act on (`UnencodableText` when the file's encoding cannot hold the
text: the editor offers UTF-8 then).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

BINARY_SNIFF = 8192
ENCODING_NAMES = {"latin-1": "Latin-1", "utf-8": "UTF-8", "utf-8-sig": "UTF-8 with BOM"}


def encoding_name(encoding: str) -> str:
    """An encoding (a Python codec name) as people call it, for messages."""
    return ENCODING_NAMES.get(encoding, encoding)


class FileLoadError(Exception):
    """A file that cannot be opened as text; the message says which and why."""


class FileSaveError(Exception):
    """A save that wrote nothing; the message names the file and says why."""


class UnencodableText(FileSaveError):
    """The text holds a character that the file's encoding has no bytes for (a Latin-1 file and a
    "€"): saving it in that encoding would lose it."""

    def __init__(self, path: Path, encoding: str, char: str, line: int) -> None:
        super().__init__(f"{path}: {encoding_name(encoding)} cannot hold {char!r} (line {line}).")
        self.path = path
        self.encoding = encoding
        self.char = char
        self.line = line


@dataclass(frozen=True)
class DiskSignature:
    """What is on disk, cheaply comparable: size, mtime and a content hash."""

    size: int
    mtime_ns: int
    digest: str

    @classmethod
    def of_bytes(cls, data: bytes, st: os.stat_result) -> "DiskSignature":
        return cls(len(data), st.st_mtime_ns, hashlib.blake2b(data, digest_size=16).hexdigest())

    @classmethod
    def read(cls, path: Path) -> "DiskSignature | None":
        try:
            data = path.read_bytes()
            st = path.stat()
        except OSError:
            return None
        return cls.of_bytes(data, st)

    def same_content(self, other: "DiskSignature | None") -> bool:
        return other is not None and other.digest == self.digest


@dataclass
class TextFile:
    """A text file as the editor holds it: text with "\\n" newlines plus what is needed to write it
    back exactly as it came."""

    path: Path
    text: str
    encoding: str = "utf-8"
    newline: str = "\n"
    signature: DiskSignature | None = None  # what specterm last read or wrote

    @classmethod
    def load(cls, path: Path) -> "TextFile":
        try:
            data = path.read_bytes()
            st = path.stat()
        except FileNotFoundError:
            raise FileLoadError(f"{path}: no such file.") from None
        except IsADirectoryError:
            raise FileLoadError(f"{path}: is a folder, not a file.") from None
        except OSError as err:
            raise FileLoadError(f"{path}: cannot be read ({err.strerror}).") from None
        text, encoding, newline = read_text(data, path)
        return cls(path, text, encoding, newline, DiskSignature.of_bytes(data, st))

    def take_text(self) -> str:
        """The text as read, handed over once: the editor's document is the buffer from then on,
        and a second copy of a multi-megabyte file would only hold memory."""
        text, self.text = self.text, ""
        return text

    def encode(self, text: str, encoding: str | None = None) -> bytes:
        """`text` as the file's bytes (in `encoding` instead of the file's when given)."""
        encoding = encoding or self.encoding
        if self.newline != "\n":
            text = text.replace("\n", self.newline)
        try:
            return text.encode(encoding)
        except UnicodeEncodeError as err:
            line = err.object.count(self.newline, 0, err.start) + 1
            raise UnencodableText(self.path, encoding, err.object[err.start], line) from None

    def changed_on_disk(self) -> bool:
        """True when the file on disk is not what specterm last read or wrote (a file that was
        never on disk has changed once something appears there)."""
        current = DiskSignature.read(self.path)
        if current is None:
            return self.path.exists()
        return self.signature is None or not self.signature.same_content(current)

    def read_only(self) -> bool:
        """The file on disk is marked read-only: not writable for this user, or (for root, whom
        permissions do not stop) without any write bit. A save renames a new file over it, which
        its mode does not prevent, so the editor asks first."""
        try:
            mode = self.path.stat().st_mode
        except OSError:
            return False
        return not os.access(self.path, os.W_OK) or not mode & 0o222

    def check_writable(self) -> None:
        """Raise FileSaveError when something other than a file is at `path` now (a folder put in
        its place): a save must not replace it, and it is no other version of the file."""
        if self.path.exists() and not self.path.is_file():
            what = "a folder" if self.path.is_dir() else "something other than a file"
            raise FileSaveError(f"{self.path}: is {what} now, not a file; nothing was written over it.")

    def save(self, text: str, *, encoding: str | None = None) -> None:
        """Write atomically; afterwards `signature` matches the new file. With `encoding` (the user
        chose it), the file is written and kept in that encoding from then on. Raises
        FileSaveError, having written nothing, when the save cannot happen."""
        data = self.encode(text, encoding)
        self.check_writable()
        try:
            write_atomic(self.path, data)
            st = self.path.stat()
        except OSError as err:
            raise FileSaveError(f"{self.path}: {_why_not_written(err, self.path)}") from None
        self.signature = DiskSignature.of_bytes(data, st)
        if encoding is not None:
            self.encoding = encoding


def _why_not_written(err: OSError, path: Path) -> str:
    """An OSError from writing `path`, in words that say what to do about it. A save writes a new
    file beside the old one and renames it over, so the folder must be writable."""
    folder = path.parent
    if isinstance(err, PermissionError):
        return f"permission denied: you cannot write in {folder}."
    if isinstance(err, IsADirectoryError):
        return "is a folder now, not a file; nothing was written over it."
    if isinstance(err, (FileNotFoundError, NotADirectoryError)):
        return f"its folder {folder} does not exist (any more)."
    if err.errno == errno.ENOSPC:
        return "the disk is full."
    if err.errno == errno.EROFS:
        return "the file system is read-only."
    return f"cannot be written ({err.strerror or err})."


def read_text(data: bytes, name: object) -> tuple[str, str, str]:
    """A file's bytes as specterm reads text everywhere (the editor, `specterm complete`): the text
    with "\n" newlines, its encoding and newline style; a FileLoadError naming `name` for binary."""
    if b"\0" in data[:BINARY_SNIFF]:
        raise FileLoadError(f"{name}: looks like a binary file; specterm reads text files only.")
    text, encoding = decode(data)
    newline = detect_newline(text)
    return text.replace("\r\n", "\n").replace("\r", "\n"), encoding, newline


def decode(data: bytes) -> tuple[str, str]:
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8"), "utf-8-sig"
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def detect_newline(text: str) -> str:
    """The file's newline style: the most common of \\r\\n, \\r and \\n (\\n when there is none)."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    if crlf > lf and crlf >= cr:
        return "\r\n"
    if cr > lf:
        return "\r"
    return "\n"


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to a temp file beside `path`, fsync it, give it `path`'s permissions and rename
    it over `path`. Symlinks are followed so the link itself survives."""
    target = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".specterm-tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
