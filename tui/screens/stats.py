"""The statistics panel: is drafting paying off, and where does it fail?

Shows the session totals, acceptance by draft position (position 1 is almost always accepted more
often than position 8: this is where the draft length should stop), and acceptance over time, one
point per finished request, as a sparkline. Figures come from the engine's `Stats`.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Sparkline, Static

from specterm.engine import Stats

from ..widgets.status_bar import StatusModel, percent
from ..widgets.suggestions import info_line

BAR_WIDTH = 30


def position_chart(stats: Stats) -> Table:
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("pos", justify="right")
    table.add_column("acceptance")
    table.add_column("", justify="right")
    table.add_column("drafted", justify="right")
    for i, (rate, drafted) in enumerate(zip(stats.acceptance_by_position, stats.drafted_by_position)):
        filled = round((rate or 0.0) * BAR_WIDTH)
        bar = Text("█" * filled + "·" * (BAR_WIDTH - filled))
        table.add_row(str(i + 1), bar, percent(rate), str(drafted))
    return table


def summary(stats: Stats) -> str:
    tps = stats.tokens_per_second
    tpp = stats.tokens_per_pass
    lines = [
        f"requests {stats.requests}   tokens {stats.tokens}   target passes {stats.target_passes}",
        f"drafted {stats.drafted}   accepted {stats.accepted}   acceptance {percent(stats.acceptance)}",
        f"tokens per pass {tpp:.2f}" if tpp is not None else "tokens per pass –",
        f"speed {tps:.1f} tok/s" if tps is not None else "speed –",
    ]
    if stats.accepted_by_drafter:  # which drafter produced the accepted tokens
        lines.append("accepted by drafter   " + "   ".join(
            f"{k} {stats.accepted_by_drafter[k]} ({v:.0%})" for k, v in stats.drafter_share.items()))
    if stats.tree_passes:  # draft trees: how often the target took a branch, not the draft's own path
        lines.append(f"draft trees {stats.tree_passes} passes, {stats.tree_rows_per_pass:.1f} rows each   "
                     f"a branch taken {stats.tree_branch_taken} times (+{stats.tree_branch_tokens} tokens)")
    if not stats.drafting:
        lines.append("drafting is off: it did not pay on this hardware; it is retried now and then")
    return "\n".join(lines)


class StatsScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    StatsScreen { align: center middle; }
    StatsScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%; border: thick $primary; background: $surface;
        padding: 0 1;
    }
    StatsScreen .title { text-style: bold; margin-top: 1; }
    StatsScreen Sparkline { height: 4; margin: 0 1; }
    """
    BINDINGS = [Binding("escape,q", "dismiss", "Close"), Binding("i", "toggle_info", "Info line")]

    def __init__(self, session: Stats, history: list[float], status: StatusModel | None = None) -> None:
        super().__init__()
        self.session = session
        self.history = history  # acceptance of each finished request that drafted something
        self.status = status  # the status bar's model: its info line is toggled here

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static("Session", classes="title")
            yield Static(summary(self.session), markup=False)
            yield Static("Acceptance by draft position", classes="title")
            if self.session.drafted_by_position:
                yield Static(position_chart(self.session))
            else:
                yield Static("– nothing drafted yet")
            yield Static(f"Acceptance over time ({len(self.history)} requests)", classes="title")
            if self.history:
                yield Sparkline(self.history, summary_function=max)
            else:
                yield Static("– no request has drafted yet")
            if self.status is not None and self.status.suggestions is not None:
                yield Static("Last suggestion", classes="title")
                yield Static(info_line(self.status.suggestions.last_shown()), markup=False)
            yield Static("i: the status bar shows the last suggestion's cost (or the figures). Esc closes.",
                         classes="title")

    def action_toggle_info(self) -> None:
        if self.status is not None:
            self.status.show_info = not self.status.show_info
            self.notify("Status bar: " + ("last suggestion's cost" if self.status.show_info else "figures"),
                        timeout=2)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
