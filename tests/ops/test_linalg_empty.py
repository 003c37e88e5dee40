"""ember.linalg on empty matrices (0×0 batches, 0×n and n×0) agrees with PyTorch."""

import numpy as np
import pytest

from tests.helpers import compare_with_torch

SQUARE, WIDE, TALL = np.zeros((2, 0, 0)), np.zeros((0, 3)), np.zeros((3, 0))

CASES = {
    "cholesky": (lambda m, x: m.linalg.cholesky(x), SQUARE),
    "qr_wide": (lambda m, x: m.linalg.qr(x), WIDE),
    "qr_tall": (lambda m, x: m.linalg.qr(x), TALL),
    "svd": (lambda m, x: m.linalg.svd(x), TALL),
    "svd_reduced": (lambda m, x: m.linalg.svd(x, full_matrices=False), WIDE),
    "svdvals": (lambda m, x: m.linalg.svdvals(x), WIDE),
    "eigh": (lambda m, x: m.linalg.eigh(x), SQUARE),
    "slogdet": (lambda m, x: m.linalg.slogdet(x), SQUARE),
    "det": (lambda m, x: m.linalg.det(x), SQUARE),
    "inv": (lambda m, x: m.linalg.inv(x), SQUARE),
    "lu": (lambda m, x: m.linalg.lu(x), TALL),
    "lu_factor": (lambda m, x: m.linalg.lu_factor(x), SQUARE),
    "pinv": (lambda m, x: m.linalg.pinv(x), TALL),
    "matrix_exp": (lambda m, x: m.linalg.matrix_exp(x), SQUARE),
    "matrix_power": (lambda m, x: m.linalg.matrix_power(x, 3), SQUARE),
    "matrix_rank": (lambda m, x: m.linalg.matrix_rank(x), TALL),
    "lstsq": (lambda m, x: m.linalg.lstsq(x, x), TALL),
    "cond": (lambda m, x: m.linalg.cond(x), SQUARE),
    "matrix_norm_2": (lambda m, x: m.linalg.matrix_norm(x, 2), WIDE),
    "matrix_norm_nuc": (lambda m, x: m.linalg.matrix_norm(x, "nuc"), WIDE),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_empty_input_matches_torch(case):
    fn, array = CASES[case]
    compare_with_torch(fn, [array])
