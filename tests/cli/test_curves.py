"""The demo's curves: integer epoch ticks, markers, a zoomed accuracy axis with its note, and
legends that hide no curve, checked on matplotlib's own objects."""

import pytest

from ember.cli.curves import draw_curves, legend_hides_curve, plot_curves

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


def _visible_ticks(ax) -> list:
    low, high = ax.get_xlim()
    return [t for t in ax.get_xticks() if low <= t <= high]


@pytest.mark.parametrize("history", [FIVE_EPOCHS, ONE_EPOCH, HIGH_ACCURACY])
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


def test_accuracy_axis_is_zoomed_to_the_values_and_says_so():
    ax_acc = draw_curves(FIVE_EPOCHS).axes[1]
    low, high = ax_acc.get_ylim()
    assert 0.35 <= low < 0.45 and 0.97 < high <= 1.0
    assert "zoomed to 3" in ax_acc.get_ylabel() or "zoomed to 4" in ax_acc.get_ylabel()
    assert "0–100%" in ax_acc.get_ylabel()


def test_accuracy_axis_stays_within_zero_and_one():
    history = dict(FIVE_EPOCHS, train_acc=[0.0, 0.5, 1.0, 1.0, 1.0], test_acc=[0.0] * 5)
    ax_acc = draw_curves(history).axes[1]
    assert ax_acc.get_ylim() == (0.0, 1.0)
    assert ax_acc.get_ylabel() == ""  # nothing zoomed, nothing to say


@pytest.mark.parametrize("history", [FIVE_EPOCHS, ONE_EPOCH, HIGH_ACCURACY])
def test_legends_hide_no_curve(history):
    fig = draw_curves(history)
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        assert legend is not None
        assert [t.get_text() for t in legend.get_texts()] == ["train", "held out"]
        assert not legend_hides_curve(ax, legend.get_window_extent(renderer))


def test_legend_moves_away_from_the_curves_it_would_hide():
    fig = draw_curves(HIGH_ACCURACY)
    ax_acc = fig.axes[1]
    # the curves end in the upper right; the rule picks another corner for both panels alike
    assert ax_acc.get_legend()._loc != 1  # 1 is "upper right"
    in_the_way = ax_acc.legend(loc="upper right")
    assert legend_hides_curve(ax_acc, in_the_way.get_window_extent(fig.canvas.get_renderer()))


def test_plot_curves_writes_a_png(tmp_path):
    plot_curves(FIVE_EPOCHS, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
