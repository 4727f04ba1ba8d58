"""Keys typed while a file chosen in the tree opens, held until its editor has the focus.

Enter (or a click) on a file opens it in the editor, which takes the focus only once its tab is on
screen; keys typed meanwhile (a fast typist, keys arriving together over SSH) went to the tree,
which has no use for them: they were lost. The app holds them from that Enter and replays them
once an editor has the focus, in order and before any key typed later; if none takes it within
HOLD_KEYS_S they go where the focus is. (After a click, holding starts when the tree's
FileSelected reaches the app, a few ms later: keys typed within those still reach the tree.)

Why in the app's `on_event`, not in a widget or screen that takes the focus meanwhile: the app is
the one place every key passes in order (Textual 8's `App.on_event` forwards each key to the
focused widget's own queue). A holder with the focus receives keys in its queue, and when it
hands the focus to the editor, keys still in that queue come after the ones the app already sent
to the editor (a hold kept by the tree lost them); a replay must go through the app's dispatch
ahead of keys still queued, which `App.simulate_key` (a message at the end of the app's queue)
does not do. Priority bindings, the other hook that sees keys in the app's order, match named
keys only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable

from textual import events
from textual.timer import Timer

from .widgets.editor import CodeEditor

if TYPE_CHECKING:
    from .app import SpectermApp

HOLD_KEYS_S = 5.0  # the longest keys typed after choosing a file in the tree wait for its editor

Dispatch = Callable[[events.Event], Awaitable[None]]


class KeyHold:
    """The app's hold on keys while a file chosen in the tree opens; `dispatch` is Textual's own
    App.on_event (what a key not held goes through)."""

    def __init__(self, app: "SpectermApp", dispatch: Dispatch) -> None:
        self.app = app
        self.dispatch = dispatch
        self._held: list[events.Key] | None = None
        self._timer: Timer | None = None

    async def on_event(self, event: events.Event) -> None:
        """Every event the app receives: a key is held, replayed after the held ones, or starts
        the hold (the tree's key that opens a file); anything else goes on at once."""
        app = self.app
        if isinstance(event, events.Key) and not app.screen_stack:
            return  # closing: the screens are gone, a key (or one bubbling back) has nowhere to go
        if isinstance(event, events.Key) and not event.is_forwarded:
            if self._held is not None:
                if not isinstance(app.focused, CodeEditor):
                    self._held.append(events.Key(event.key, event.character))
                    return
                await self.release()  # typed before this key
            elif app.focused is app.file_tree and app.file_tree.opens_file_on(event.key):
                await self.dispatch(event)
                self.start()
                return
        await self.dispatch(event)

    def start(self) -> None:
        """Hold keys from now on (until an editor has the focus, or HOLD_KEYS_S)."""
        if self._held is None:
            self._held = []
            self._timer = self.app.set_timer(HOLD_KEYS_S, self.release)

    async def focused(self, widget: object) -> None:
        """A widget took the focus: an editor's ends the hold."""
        if self._held is not None and isinstance(widget, CodeEditor):
            await self.release()

    async def release(self) -> None:
        """The held keys, in order, as if typed now (priority bindings first), to the focus."""
        held, self._held = self._held or [], None
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        for key in held:
            if not self.app.screen_stack:
                return  # closing
            await self.dispatch(key)
