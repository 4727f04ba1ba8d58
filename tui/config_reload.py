"""The config files changed on disk: apply what can change while the app runs (the completion
options and keys, the status bar's figures, the chat's prompt and length, the theme); model,
speculative and sampling changes apply after a restart, and the notice says so. A file that does
not load is a notice naming what is wrong; the settings in use stay."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from .config import ConfigError, Settings
from .suggest.completer import CompletionOptions
from .theming import theme_name

if TYPE_CHECKING:
    from .app import SpectermApp


def reload_config(app: "SpectermApp", loader: Callable[[], Settings]) -> None:
    """Re-read the config files with `loader` (the config module's) and apply what can change live."""
    try:
        fresh = loader()
    except ConfigError as err:
        app.notify(str(err), title="Config not reloaded", severity="error", timeout=15)
        return
    old = app.settings
    app.settings = fresh
    app.completer.options = CompletionOptions.from_config(fresh.completion, fresh.keys)
    app.status_model.show_stats = fresh.ui.show_stats
    app.status_bar.mark_dirty()
    app.chat.system_prompt = fresh.chat.system_prompt
    app.chat.max_tokens = fresh.chat.max_tokens
    if fresh.ui.theme != old.ui.theme:
        theme = app.themes.get(theme_name(fresh.ui.theme))
        if theme is not None:
            app.theming.apply(theme)
    if fresh.model != old.model or fresh.speculative != old.speculative or fresh.sampling != old.sampling:
        app.notify("Config reloaded. Model, speculative and sampling changes apply after a restart.",
                   title="Config", timeout=6)
    else:
        app.notify("Config reloaded.", timeout=3)
    app._update_watch()
