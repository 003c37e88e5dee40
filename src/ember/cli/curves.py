"""The demo's ``curves.png``: loss and accuracy per epoch, train and held out."""

from __future__ import annotations

import math
from pathlib import Path

# tried in this order; the first where the legend covers no curve (and no note) wins
LEGEND_CORNERS = ("upper right", "lower left", "upper left", "lower right", "center right")
# where the final held-out accuracy's note may go, as offsets from its point (in points),
# close enough to read as its label: left of it first, as the curves end at the right edge
NOTE_OFFSETS = ((-6, -13), (-6, 13), (0, -18), (0, 18), (-6, -26), (-6, 26), (-6, -40), (-6, 40))
# a loss that spans this many decades is drawn on a log scale, so that its early epochs (or
# a divergence) do not flatten the rest into a line at the bottom
LOG_SCALE_DECADES = 2


def tick_text(value: float, percent: bool = False) -> str:
    """The one tick format of both panels: a short number without trailing zeros ("0.5",
    "2", "95%"), a power of ten as such ("10⁶" in mathtext) where plain digits get long."""
    if percent:
        return f"{value * 100:.4g}%"
    if value != 0 and not 1e-3 <= abs(value) < 1e4:
        mantissa, exponent = f"{value:.1e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        power = f"10^{{{int(exponent)}}}"
        return f"${power}$" if mantissa == "1" else f"${mantissa}\\times{power}$"
    return f"{value:.4g}"


def loss_spans_decades(values) -> bool:
    """Whether the positive, finite losses span ``LOG_SCALE_DECADES`` decades or more."""
    shown = [v for v in values if math.isfinite(v) and v > 0]
    if len(shown) < 2 or len(shown) < len([v for v in values if math.isfinite(v)]):
        return False  # a loss of 0 cannot go on a log axis
    return math.log10(max(shown) / min(shown)) >= LOG_SCALE_DECADES


def draw_curves(history: dict):
    """The figure of ``history`` (lists ``train_loss``, ``test_loss``, ``train_acc``,
    ``test_acc``, one value per epoch): integer epoch ticks, a marker on every point, the loss
    on a log axis when it spans two decades or more, the accuracy axis zoomed to the values
    (its label says so), the final held-out accuracy written next to its point, one tick
    format on every axis, and each legend where it hides no curve.

    Example::
        >>> fig = draw_curves({"train_loss": [0.9], "test_loss": [1.0],
        ...                    "train_acc": [0.7], "test_acc": [0.6]})
        >>> fig.savefig("curves.png")
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

    epochs = list(range(1, len(history["train_loss"]) + 1))
    fig = Figure(figsize=(10, 4))
    FigureCanvasAgg(fig)  # a renderer, to measure the legends; no pyplot, no global state
    ax_loss, ax_acc = fig.subplots(1, 2)
    for ax, key, title in ((ax_loss, "loss", "loss"), (ax_acc, "acc", "accuracy")):
        ax.plot(epochs, history[f"train_{key}"], marker="o", markersize=4, label="train")
        ax.plot(epochs, history[f"test_{key}"], marker="s", markersize=4, label="held out")
        ax.set(title=title, xlabel="epoch")
        # epochs are whole numbers; half a step of room keeps a single epoch's points inside
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_text(v)))
        ax.set_xlim(0.5, max(len(epochs), 1) + 0.5)
        ax.grid(alpha=0.3)

    losses = list(history["train_loss"]) + list(history["test_loss"])
    if loss_spans_decades(losses):
        ax_loss.set_yscale("log")
        ax_loss.yaxis.set_minor_formatter(NullFormatter())
        ax_loss.set_ylabel("cross-entropy loss (log scale)")
    else:
        ax_loss.set_ylabel("cross-entropy loss")
    ax_loss.yaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_text(v)))

    ax_acc.set_ylabel("accuracy")
    values = list(history["train_acc"]) + list(history["test_acc"])
    if values:
        low, high = min(values), max(values)
        margin = max(0.02, 0.1 * (high - low))
        # whole percents, so that the note says "zoomed to 28%–98%", not 28.83%–97.66%
        low, high = math.floor(100 * (low - margin)) / 100, math.ceil(100 * (high + margin)) / 100
        ax_acc.set_ylim(max(0.0, low), min(1.0, high))
        lo_shown, hi_shown = ax_acc.get_ylim()
        if (lo_shown, hi_shown) != (0.0, 1.0):
            zoom = f"{tick_text(lo_shown, True)}–{tick_text(hi_shown, True)}"
            ax_acc.set_ylabel(f"accuracy\n(axis zoomed to {zoom} of 0–100%)")
    ax_acc.yaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_text(v, percent=True)))
    fig.tight_layout()
    if history["test_acc"]:
        note_final_accuracy(ax_acc, epochs[-1], history["test_acc"][-1])
    for ax in (ax_loss, ax_acc):
        place_legend(ax)
    return fig


def note_final_accuracy(ax, epoch: int, accuracy: float) -> None:
    """Write the final held-out accuracy next to its point, at the first of ``NOTE_OFFSETS``
    where the note stays inside the axes and covers no curve."""
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    for dx, dy in NOTE_OFFSETS:
        note = ax.annotate(
            f"held out: {accuracy:.1%}",
            xy=(epoch, accuracy),
            xytext=(dx, dy),
            textcoords="offset points",
            ha="right" if dx < 0 else "center",
            va="center",
            fontsize=9,
            color="C1",  # the held-out curve's colour
        )
        box = note.get_window_extent(renderer)
        inside = frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
        if inside and not covers_curve(ax, box):
            return
        note.remove()
    ax.set_title(f"accuracy (held out at the end: {accuracy:.1%})")


def place_legend(ax) -> None:
    """Put the legend in the first of ``LEGEND_CORNERS`` where it covers no point or line of
    the curves and no note; below the axes when every corner would hide something."""
    renderer = ax.figure.canvas.get_renderer()
    notes = [t.get_window_extent(renderer) for t in ax.texts]
    for corner in LEGEND_CORNERS:
        legend = ax.legend(loc=corner)
        box = legend.get_window_extent(renderer)
        if not covers_curve(ax, box) and not any(box.overlaps(n) for n in notes):
            return
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8)


def covers_curve(ax, box) -> bool:
    """Whether any curve of ``ax`` (its points or the segments between them, with a few pixels
    for the line width and markers) passes through the display-space box ``box``."""
    import numpy as np

    pad = 4.0
    for line in ax.get_lines():
        points = ax.transData.transform(np.column_stack(line.get_data()))
        points = points[np.isfinite(points).all(axis=1)]
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
