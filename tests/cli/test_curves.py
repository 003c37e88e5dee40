"""The demo's curves: integer epoch ticks, markers, a log loss axis when the loss spans
decades, a labelled accuracy axis zoomed to the values, the final held-out accuracy written
by its point, one tick format on every axis, and legends that hide no curve and no note,
checked on matplotlib's own objects."""

import pytest
from matplotlib.ticker import FuncFormatter

from ember.cli.curves import covers_curve, draw_curves, plot_curves, tick_text

FIVE_EPOCHS = {
    "train_loss": [2.0, 1.0, 0.5, 0.3, 0.2],
    "test_loss": [2.1, 1.2, 0.6, 0.4, 0.35],
    "train_acc": [0.5, 0.8, 0.9, 0.95, 0.97],
    "test_acc": [0.45, 0.75, 0.88, 0.93, 0.94],
}
ONE_EPOCH = {"train_loss": [2.0], "test_loss": [2.1], "train_acc": [0.5], "test_acc": [0.45]}
# accuracy climbing to the top right and loss falling to the bottom right: the corner the
# legend would take by default (upper right) is taken by the accuracy curves
HIGH_ACCURACY = {
    "train_loss": [0.8, 0.2, 0.1],
    "test_loss": [0.7, 0.3, 0.2],
    "train_acc": [0.80, 0.97, 0.99],
    "test_acc": [0.82, 0.95, 0.98],
}


# a run that diverges: the loss climbs fourteen decades
DIVERGING = {
    "train_loss": [2.3, 40.0, 3e3, 5e5, 2e8, 7e10, 1e14],
    "test_loss": [2.2, 120.0, 9e3, 1e6, 6e8, 2e11, 3e14],
    "train_acc": [0.2, 0.12, 0.1, 0.1, 0.09, 0.1, 0.1],
    "test_acc": [0.25, 0.1, 0.1, 0.11, 0.1, 0.1, 0.09],
}


def _visible_ticks(ax) -> list:
    low, high = ax.get_xlim()
    return [t for t in ax.get_xticks() if low <= t <= high]


@pytest.mark.parametrize("history", [FIVE_EPOCHS, ONE_EPOCH, HIGH_ACCURACY, DIVERGING])
def test_epoch_ticks_are_whole_numbers_and_every_point_has_a_marker(history):
    fig = draw_curves(history)
    epochs = len(history["train_loss"])
    for ax in fig.axes:
        ticks = _visible_ticks(ax)
        assert ticks and all(float(t).is_integer() for t in ticks)
        assert set(range(1, epochs + 1)) >= {int(t) for t in ticks}
        low, high = ax.get_xlim()
        assert low < 1 and high > epochs  # the first and last points are inside the frame
        assert len(ax.get_lines()) == 2
        for line in ax.get_lines():
            assert line.get_marker() not in (None, "", "None", " ")
            assert len(line.get_xdata()) == epochs


def test_one_epoch_shows_a_tick_at_one():
    for ax in draw_curves(ONE_EPOCH).axes:
        assert _visible_ticks(ax) == [1]


def test_accuracy_axis_is_labelled_zoomed_to_the_values_and_says_so():
    ax_acc = draw_curves(FIVE_EPOCHS).axes[1]
    low, high = ax_acc.get_ylim()
    assert 0.35 <= low < 0.45 and 0.97 < high <= 1.0
    label = ax_acc.get_ylabel()
    assert label.startswith("accuracy\n")
    assert f"zoomed to {round(100 * low)}%–{round(100 * high)}% of 0–100%" in label
    assert (100 * low).is_integer() and (100 * high).is_integer()  # whole percents


def test_accuracy_axis_stays_within_zero_and_one():
    history = dict(FIVE_EPOCHS, train_acc=[0.0, 0.5, 1.0, 1.0, 1.0], test_acc=[0.0] * 5)
    ax_acc = draw_curves(history).axes[1]
    assert ax_acc.get_ylim() == (0.0, 1.0)
    assert ax_acc.get_ylabel() == "accuracy"  # nothing zoomed, nothing more to say


@pytest.mark.parametrize(
    ("losses", "scale"),
    [
        ([2.1, 1.0, 0.2], "linear"),  # one decade
        ([2.0, 0.5, 0.0201], "linear"),  # just under two
        ([2.0, 0.5, 0.02], "log"),  # two decades
        ([2.3, 1e6, 1e14], "log"),  # a divergence
        ([2.0, 0.5, 0.0], "linear"),  # a zero cannot go on a log axis
        ([2.0, float("nan"), 0.01], "log"),  # NaN is left out of the span
    ],
)
def test_loss_axis_is_logarithmic_when_the_loss_spans_two_decades(losses, scale):
    accuracy = [0.5] * 3
    history = {
        "train_loss": losses,
        "test_loss": losses,
        "train_acc": accuracy,
        "test_acc": accuracy,
    }
    ax_loss = draw_curves(history).axes[0]
    assert ax_loss.get_yscale() == scale
    assert ax_loss.get_ylabel() == "cross-entropy loss" + (" (log scale)" if scale == "log" else "")


@pytest.mark.parametrize("history", [FIVE_EPOCHS, ONE_EPOCH, HIGH_ACCURACY, DIVERGING])
def test_final_held_out_accuracy_is_written_by_its_point(history):
    fig = draw_curves(history)
    ax_acc = fig.axes[1]
    renderer = fig.canvas.get_renderer()
    final = history["test_acc"][-1]
    (note,) = ax_acc.texts
    assert note.get_text() == f"held out: {100 * final:.1f}%"
    assert note.xy == (len(history["test_acc"]), final)
    box, frame = note.get_window_extent(renderer), ax_acc.get_window_extent(renderer)
    assert frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
    assert not covers_curve(ax_acc, box)
    assert not ax_acc.get_legend().get_window_extent(renderer).overlaps(box)
    # next to its point: within 60 px
    x, y = ax_acc.transData.transform(note.xy)
    assert box.x0 - 60 < x < box.x1 + 60 and box.y0 - 60 < y < box.y1 + 60


def test_every_axis_has_the_one_tick_format():
    for history in (FIVE_EPOCHS, DIVERGING):
        ax_loss, ax_acc = draw_curves(history).axes
        for axis in (ax_loss.xaxis, ax_loss.yaxis, ax_acc.xaxis, ax_acc.yaxis):
            assert isinstance(axis.get_major_formatter(), FuncFormatter)
        for ax in (ax_loss, ax_acc):
            assert ax.xaxis.get_major_formatter()(3.0, 0) == "3"
        assert ax_acc.yaxis.get_major_formatter()(0.95, 0) == "95%"
    assert draw_curves(FIVE_EPOCHS).axes[0].yaxis.get_major_formatter()(0.5, 0) == "0.5"
    assert draw_curves(DIVERGING).axes[0].yaxis.get_major_formatter()(1e6, 0) == "$10^{6}$"


@pytest.mark.parametrize(
    ("value", "percent", "text"),
    [
        (2.0, False, "2"),
        (0.25, False, "0.25"),
        (1200.0, False, "1200"),
        (1e14, False, "$10^{14}$"),
        (3e-5, False, "$3\\times10^{-5}$"),
        (0.0, False, "0"),
        (0.875, True, "87.5%"),
        (1.0, True, "100%"),
    ],
)
def test_tick_text(value, percent, text):
    assert tick_text(value, percent) == text


@pytest.mark.parametrize("history", [FIVE_EPOCHS, ONE_EPOCH, HIGH_ACCURACY, DIVERGING])
def test_legends_hide_no_curve(history):
    fig = draw_curves(history)
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        assert legend is not None
        assert [t.get_text() for t in legend.get_texts()] == ["train", "held out"]
        assert not covers_curve(ax, legend.get_window_extent(renderer))


def test_legend_moves_away_from_the_curves_it_would_hide():
    fig = draw_curves(HIGH_ACCURACY)
    ax_acc = fig.axes[1]
    # the curves end in the upper right; the rule picks another corner for both panels alike
    assert ax_acc.get_legend()._loc != 1  # 1 is "upper right"
    in_the_way = ax_acc.legend(loc="upper right")
    assert covers_curve(ax_acc, in_the_way.get_window_extent(fig.canvas.get_renderer()))


@pytest.mark.parametrize("history", [FIVE_EPOCHS, DIVERGING], ids=["normal", "diverging"])
def test_plot_curves_writes_a_png(tmp_path, history):
    plot_curves(history, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
