"""Orthogonal polynomials (special/_orthogonal_polynomials.py): ATen's fused recurrences."""

from __future__ import annotations

import ember


def test_hermite_he_recurrence_is_fused_as_atens():
    # ATen computes x*q - k*p as one fma; two roundings give 43.708862 and 1.9563599 here
    out = ember.special.hermite_polynomial_he(
        ember.tensor([3.7644824981689453, -3.327920913696289]), ember.tensor([7.0, 6.0])
    )
    assert out.tolist() == [43.709285736083984, 1.956298828125]
