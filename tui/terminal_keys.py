"""Alt with a punctuation key, as a terminal without the kitty keyboard protocol sends it.

Why: such a terminal (tmux, most over SSH) sends Alt+] as ESC followed by "]", and Textual 8's
parser names the key "alt+n" for a letter but plain "right_square_bracket" for "]": the Alt is
lost, so Alt+] / Alt+[ (next / previous alternative suggestion) typed a bracket into the file.
`install` gives such keys their Alt back ("alt+right_square_bracket"); the character stays, so a
key nobody binds still types what it typed before.
"""

from __future__ import annotations

from typing import Iterable

from textual import events

_installed = False


def install() -> None:
    """Patch Textual's terminal parser once (it is a private class: left alone if it changed)."""
    global _installed
    if _installed:
        return
    try:
        from textual._xterm_parser import XTermParser
    except ImportError:
        return
    original = getattr(XTermParser, "_sequence_to_key_events", None)
    if original is None:
        return

    def sequence_to_key_events(self, sequence: str, alt: bool = False) -> Iterable[events.Key]:
        for event in original(self, sequence, alt):
            if (alt and len(sequence) == 1 and not sequence.isalnum()
                    and not event.key.startswith("alt+") and event.key != "escape"):
                event = events.Key(f"alt+{event.key}", event.character)
            yield event

    XTermParser._sequence_to_key_events = sequence_to_key_events  # type: ignore[method-assign]  # the patch
    _installed = True
