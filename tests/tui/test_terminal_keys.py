"""Alt with punctuation from a legacy terminal (ESC then the key), through Textual's own parser."""

from __future__ import annotations

import time

from textual._parser import ParseError
from textual._xterm_parser import XTermParser

from specterm.tui import terminal_keys


def keys_for(data: str) -> list[tuple[str, str | None]]:
    """Feed `data` to a terminal parser, then let its escape delay run out."""
    parser = XTermParser()
    events = list(parser.feed(data))
    time.sleep(0.2)
    try:
        events += list(parser.feed(""))  # end of input: a lone ESC sequence is decided now
    except ParseError:
        pass
    return [(e.key, e.character) for e in events if hasattr(e, "key")]


def test_alt_with_a_bracket_keeps_its_alt():
    terminal_keys.install()
    assert keys_for("\x1b]") == [("alt+right_square_bracket", "]")]
    assert keys_for("\x1b[") == [("alt+left_square_bracket", "[")]
    # what already worked, and plain keys, are as they were
    assert keys_for("\x1bn") == [("alt+n", "n")]
    assert keys_for("]") == [("right_square_bracket", "]")]
    assert keys_for("a") == [("a", "a")]
    assert keys_for("\x1b") == [("escape", "\x1b")]
    assert keys_for("\x1b[A") == [("up", None)]
