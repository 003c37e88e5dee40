"""The Summary builders on their own: histogram trimming, PR-curve counts, hparams types."""

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import ember  # noqa: E402
from ember.utils.tensorboard import summary  # noqa: E402


def test_make_histogram_keeps_buckets_from_first_to_last_filled_bin():
    hist = summary.make_histogram(np.array([2.5, 2.6, 4.5]), bins=[0, 1, 2, 3, 4, 5, 6])
    # an empty bucket ending at 2 (the first filled bin's left edge), then bins 2-3, 3-4, 4-5
    assert list(hist.bucket_limit) == [2, 3, 4, 5]
    assert list(hist.bucket) == [0, 2, 0, 1]
    assert (hist.min, hist.max, hist.num) == (2.5, 4.5, 3)
    assert hist.sum_squares == pytest.approx(2.5**2 + 2.6**2 + 4.5**2)


def test_make_histogram_of_nothing_raises():
    with pytest.raises(ValueError, match="no element"):
        summary.make_histogram(np.array([]), bins=10)
    with pytest.raises(ValueError, match="empty"):
        summary.make_histogram(np.array([10.0]), bins=[0, 1, 2])


def test_tensorflow_bins_grow_ten_percent_from_1e_12_to_1e20():
    bins = summary.TENSORFLOW_BINS
    half = len(bins) // 2
    assert bins[half] == 0 and bins[half + 1] == 1e-12 and bins[half - 1] == -1e-12
    assert bins[-1] < 1e20 <= bins[-1] * 1.1
    assert bins[half + 2] == pytest.approx(1.1e-12)
    assert bins[:half] == [-b for b in reversed(bins[half + 1 :])]


def test_compute_curve_with_weights_counts_weighted_predictions():
    labels = np.array([1, 0, 1])
    predictions = np.array([0.9, 0.6, 0.2])
    tp, fp, tn, fn, precision, recall = summary.compute_curve(
        labels, predictions, num_thresholds=3, weights=np.array([2.0, 1.0, 1.0])
    )
    assert tp.tolist() == [3, 2, 0] and fp.tolist() == [1, 1, 0]
    assert tn.tolist() == [0, 0, 1] and fn.tolist() == [0, 1, 3]
    assert precision.tolist() == [0.75, 2 / 3, 0.0]
    assert recall.tolist() == [1.0, 2 / 3, 0.0]


def test_pr_curve_keeps_at_most_127_thresholds():
    s = summary.pr_curve("pr", np.array([1, 0]), np.array([0.3, 0.7]), num_thresholds=300)
    assert [d.size for d in s.value[0].tensor.tensor_shape.dim] == [6, 127]


def test_hparams_records_bools_as_numbers_and_tensors_as_their_value():
    from tensorboard.plugins.hparams import metadata

    _, start, _ = summary.hparams({"flag": True, "t": ember.tensor([0.5])}, {})
    info = metadata.parse_session_start_info_plugin_data(
        start.value[0].metadata.plugin_data.content
    )
    assert info.hparams["flag"].number_value == 1.0
    assert info.hparams["t"].number_value == 0.5


def test_scalar_of_a_bfloat16_tensor():
    s = summary.scalar("x", ember.tensor(1.5, dtype=ember.bfloat16))
    assert s.value[0].simple_value == 1.5


def test_half_to_int_round_trips():
    assert summary.int_to_half(summary.half_to_int(1.5)) == 1.5
    assert summary.half_to_int(1.0) == 0x3F800000
