"""ember._host_functions: histogramdd on the host, as torch computes it."""

from __future__ import annotations

import math

import pytest

import ember

ROWS = ember.tensor([[0.0, 1.0], [1.0, 1.0], [2.0, 0.5], [3.0, 3.0], [math.nan, 1.0]])


def test_histogramdd_with_edges_counts_the_last_edge_in_the_last_bin():
    hist, edges = ember.histogramdd(ROWS, [ember.tensor([0.0, 1, 2]), ember.tensor([0.0, 1, 3])])
    assert hist.tolist() == [[0.0, 1.0], [1.0, 1.0]]  # (3, 3) and the NaN row are outside
    assert [e.tolist() for e in edges] == [[0.0, 1.0, 2.0], [0.0, 1.0, 3.0]]


def test_histogramdd_takes_edges_that_do_not_increase_as_torch_does():
    # torch checks no order: its binary search decides the bin, its end edges the range
    bins = [ember.tensor([0.0, 2, 1]), ember.tensor([0.0, 1, 3])]
    assert ember.histogramdd(ROWS, bins).hist.tolist() == [[0.0, 2.0], [0.0, 0.0]]
    decreasing = [ember.tensor([3.0, 0.0]), ember.tensor([3.0, 0.0])]
    assert ember.histogramdd(ROWS, decreasing).hist.tolist() == [[0.0]]
    assert math.isnan(ember.histogramdd(ROWS, decreasing, density=True).hist.item())


def test_histogramdd_density_with_weights_divides_by_total_and_widths():
    bins = [ember.tensor([0.0, 2, 1, 3]), ember.tensor([0.0, 1, 3])]
    weight = ember.tensor([1.0, 2, 3, 4, 5])
    hist = ember.histogramdd(ROWS, bins, weight=weight, density=True).hist
    expected = [0.0, 0.025, 0.0, 0.0, 0.15, 0.15]  # torch's values
    assert hist.shape == (3, 2) and hist.reshape(-1).tolist() == pytest.approx(expected)


def test_histogramdd_checks_the_number_of_bins():
    with pytest.raises(RuntimeError, match="The size of bins must be equal to the innermost"):
        ember.histogramdd(ember.zeros(5, 6), [1, 1, 1, 1, 1])
    with pytest.raises(RuntimeError, match="expected 2 sequences of bin edges for a 2-dim"):
        ember.histogramdd(ROWS, [ember.tensor([0.0, 1.0])])
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 0"):
        ember.histogramdd(ROWS, [ember.tensor([0.0]), ember.tensor([0.0, 1.0])])
