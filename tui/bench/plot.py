"""`specterm bench --plot FILE`: the speedup-against-draft-length chart as an image.

matplotlib is an optional extra (`pip install 'specterm[plot]'`): the terminal chart needs nothing,
and most users never want a PNG. It is imported only when --plot is given, and checked before the
benchmark runs, so a missing extra costs no minutes of measuring first.
"""

from __future__ import annotations

from pathlib import Path

from ..commands.common import UsageError

FORMATS = (".png", ".svg", ".pdf")


def check_plot_target(path: str) -> Path:
    """Fail early, with something to do about it: missing extra, unknown format, no such folder."""
    p = Path(path).expanduser()
    if p.suffix.lower() not in FORMATS:
        raise UsageError(f"--plot {path}: the file name must end in {', '.join(FORMATS)}.")
    if not p.parent.is_dir():
        raise UsageError(f"--plot {path}: the folder {p.parent} does not exist.")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(
            "--plot needs matplotlib, which is an optional extra: pip install 'specterm[plot]' "
            "(the chart in the terminal needs nothing)."
        ) from None
    return p


def write_plot(data: dict, path: Path) -> None:
    """Measured and predicted speedup for each fixed draft length, the adaptive run as a line,
    and plain decoding at 1.0x. `data` is the report's JSON object."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed (SSH sessions, CI)
    import matplotlib.pyplot as plt

    sweep = data["sweep"]
    summary = data["summary"]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    if sweep:
        g = [e["draft_length"] for e in sweep]
        ax.plot(g, [e["speedup"] or 0 for e in sweep], "o-", label="measured (fixed draft length)")
        pred = [(x, e["predicted_speedup"]) for x, e in zip(g, sweep) if e["predicted_speedup"]]
        if pred:
            ax.plot(*zip(*pred), "s--", alpha=0.7, label="predicted from t1, t_d, t_v(k) and acceptance")
        ax.set_xscale("log", base=2)
        ax.set_xticks(g, [str(x) for x in g])
    if summary.get("speedup"):
        ax.axhline(summary["speedup"], color="tab:green", linestyle="-.",
                   label=f"adaptive ({summary['speedup']:.2f}x)")
    ax.axhline(1.0, color="grey", linewidth=1, label="plain decoding (1.0x)")
    ax.set_xlabel("draft length g")
    ax.set_ylabel("speedup over plain decoding")
    ax.set_title(f"{data['target']} + {data['draft']}", fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
