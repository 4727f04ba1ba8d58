"""Small, comment-preserving edits to a user's TOML config (used by `specterm pull`).

Users annotate their config files; rewriting one from a dict would throw their comments and layout
away. This module changes only the keys it is asked to, through tomlkit, keeps each replaced
value's inline comment, shows the change as a unified diff first and writes atomically. Reading
config *for use* stays in `tui/config.py`; this is only the writer.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, MutableMapping

import tomlkit
from tomlkit.exceptions import ParseError, TOMLKitError

from specterm.engine.errors import EngineError


class ConfigWriteError(EngineError):
    """The config file cannot be parsed or written."""


NEW_FILE_HEADER = (
    "specterm user configuration: these values override the built-in defaults.\n"
    "Every key, with its default, is documented in the config.toml that ships with specterm."
)


@dataclass(frozen=True)
class ConfigEdit:
    """A planned change to one file: nothing touches the disk until `write()`."""

    path: Path
    old_text: str  # "" when the file does not exist yet
    new_text: str
    creates: bool

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text

    def diff(self) -> str:
        """A unified diff of the change (empty when nothing changes)."""
        name = str(self.path)
        lines = difflib.unified_diff(
            self.old_text.splitlines(keepends=True),
            self.new_text.splitlines(keepends=True),
            fromfile="/dev/null" if self.creates else name,
            tofile=name,
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def write(self) -> None:
        """Write atomically (temp file + rename), creating parent folders; keeps the file's mode."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            mode = self.path.stat().st_mode & 0o777 if self.path.exists() else None
            fd, tmp = tempfile.mkstemp(prefix=".specterm-", suffix=".toml", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                    fh.write(self.new_text)
                if mode is not None:
                    os.chmod(tmp, mode)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise ConfigWriteError(
                f"Cannot write the config file {self.path}: {exc.strerror or exc}.",
                hint="Check the folder's permissions, or pass --config FILE to write elsewhere.",
            ) from None


def plan_edit(
    path: str | Path,
    values: Mapping[str, Mapping[str, Any]],
    *,
    comment: str | None = None,
) -> ConfigEdit:
    """Plan setting `values` ({section: {key: value}}) in the TOML file at `path`.

    Existing keys keep their position and inline comment; new keys are appended to their section
    (created at the end when missing). `comment`, if given, is placed above keys this edit adds.
    """
    p = Path(path).expanduser()
    creates = not p.exists()
    try:
        old_text = "" if creates else p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigWriteError(f"Cannot read the config file {p}: {reason}.") from None
    try:
        doc = tomlkit.parse(old_text)
    except ParseError as exc:
        raise ConfigWriteError(
            f"The config file {p} is not valid TOML (line {exc.line}, column {exc.col}); "
            "specterm will not rewrite it.",
            hint="Fix that line (or move the file away) and run the command again.",
        ) from None
    except TOMLKitError as exc:
        raise ConfigWriteError(f"The config file {p} is not valid TOML: {exc}.") from None

    if creates:
        for line in NEW_FILE_HEADER.splitlines():
            doc.add(tomlkit.comment(line))
        doc.add(tomlkit.nl())

    for section, keys in values.items():
        table = doc.get(section)
        if table is None:
            table = tomlkit.table()
            doc[section] = table
            table = doc[section]
        elif not isinstance(table, MutableMapping):
            raise ConfigWriteError(
                f"In {p}, {section} = {tomlkit.item(table).as_string()} is a value, not a table; "
                f"specterm cannot set {section}.{next(iter(keys), '')} there.",
                hint=f"Turn it into a [{section}] table and run the command again.",
            )
        added_comment = False
        for key, value in keys.items():
            if key in table:
                _replace_keeping_comment(table, key, value)
            else:
                if comment and not added_comment and hasattr(table, "add"):
                    table.add(tomlkit.comment(comment))
                    added_comment = True
                table[key] = value

    new_text = tomlkit.dumps(doc)
    return ConfigEdit(path=p, old_text=old_text, new_text=new_text, creates=creates)


def _replace_keeping_comment(table: Any, key: str, value: Any) -> None:
    old = table.item(key) if hasattr(table, "item") else None
    new = tomlkit.item(value)
    if old is not None and hasattr(old, "trivia") and hasattr(new, "trivia"):
        new.trivia.comment = old.trivia.comment
        new.trivia.comment_ws = old.trivia.comment_ws
        new.trivia.indent = old.trivia.indent
    table[key] = new
