"""The demo's ``curves.png``: loss and accuracy per epoch, train and held out."""

from __future__ import annotations

from pathlib import Path

# tried in this order; the first where the legend covers no curve wins
LEGEND_CORNERS = ("upper right", "lower left", "upper left", "lower right", "center right")


def draw_curves(history: dict):
    """The figure of ``history`` (lists ``train_loss``, ``test_loss``, ``train_acc``,
    ``test_acc``, one value per epoch): integer epoch ticks, a marker on every point, the
    accuracy axis zoomed to the values (the full 0-100% scale is named in a note), and each
    legend where it hides no curve.

    Example::
        >>> fig = draw_curves({"train_loss": [0.9], "test_loss": [1.0],
        ...                    "train_acc": [0.7], "test_acc": [0.6]})
        >>> fig.savefig("curves.png")
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator, PercentFormatter

    epochs = list(range(1, len(history["train_loss"]) + 1))
    fig = Figure(figsize=(10, 4))
    FigureCanvasAgg(fig)  # a renderer, to measure the legends; no pyplot, no global state
    ax_loss, ax_acc = fig.subplots(1, 2)
    for ax, key, title in ((ax_loss, "loss", "cross-entropy loss"), (ax_acc, "acc", "accuracy")):
        ax.plot(epochs, history[f"train_{key}"], marker="o", markersize=4, label="train")
        ax.plot(epochs, history[f"test_{key}"], marker="s", markersize=4, label="held out")
        ax.set(title=title, xlabel="epoch")
        # epochs are whole numbers; half a step of room keeps a single epoch's points inside
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.set_xlim(0.5, max(len(epochs), 1) + 0.5)
        ax.grid(alpha=0.3)

    values = list(history["train_acc"]) + list(history["test_acc"])
    if values:
        low, high = min(values), max(values)
        margin = max(0.02, 0.1 * (high - low))
        ax_acc.set_ylim(max(0.0, low - margin), min(1.0, high + margin))
        lo_shown, hi_shown = ax_acc.get_ylim()
        if (lo_shown, hi_shown) != (0.0, 1.0):
            note = f"axis zoomed to {lo_shown:.0%}–{hi_shown:.0%} (full scale 0–100%)"
            ax_acc.set_ylabel(note, fontsize=8, color="dimgray")
    ax_acc.yaxis.set_major_formatter(PercentFormatter(1.0))
    fig.tight_layout()
    for ax in (ax_loss, ax_acc):
        place_legend(ax)
    return fig


def place_legend(ax) -> None:
    """Put the legend in the first of ``LEGEND_CORNERS`` where it covers no point or line of
    the curves; below the axes when every corner would hide some."""
    renderer = ax.figure.canvas.get_renderer()
    for corner in LEGEND_CORNERS:
        legend = ax.legend(loc=corner)
        if not legend_hides_curve(ax, legend.get_window_extent(renderer)):
            return
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8)


def legend_hides_curve(ax, box) -> bool:
    """Whether any curve of ``ax`` (its points or the segments between them, with a few pixels
    for the line width and markers) passes through the display-space box ``box``."""
    import numpy as np

    pad = 4.0
    for line in ax.get_lines():
        points = ax.transData.transform(np.column_stack(line.get_data()))
        if len(points) == 1:
            points = np.repeat(points, 2, axis=0)
        for start, end in zip(points[:-1], points[1:]):
            for t in np.linspace(0.0, 1.0, 50):
                x, y = start + t * (end - start)
                if box.x0 - pad <= x <= box.x1 + pad and box.y0 - pad <= y <= box.y1 + pad:
                    return True
    return False


def plot_curves(history: dict, path: Path) -> None:
    """Draw ``history`` (see ``draw_curves``) into the PNG file ``path``."""
    fig = draw_curves(history)
    fig.savefig(path, dpi=120, bbox_inches="tight")
