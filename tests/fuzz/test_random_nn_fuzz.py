"""Fuzzing the random nn ops against torch after the same seed: the dropout family, rrelu and
hard gumbel_softmax on random shapes (0-size included), dtypes, probabilities and layouts draw
torch's values, raise torch's errors, and leave the generator where torch leaves it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ._compare import FLOATING, FUZZ, arrays, pick, rng_of, same, shapes

OPS = {
    "dropout": lambda F, t, p, training: F.dropout(t, p, training),
    "dropout1d": lambda F, t, p, training: F.dropout1d(t, p, training),
    "dropout2d": lambda F, t, p, training: F.dropout2d(t, p, training),
    "dropout3d": lambda F, t, p, training: F.dropout3d(t, p, training),
    "alpha_dropout": lambda F, t, p, training: F.alpha_dropout(t, p, training),
    "feature_alpha_dropout": lambda F, t, p, training: F.feature_alpha_dropout(t, p, training),
    "rrelu": lambda F, t, p, training: F.rrelu(t, p / 2, p, training),
    "gumbel_softmax": lambda F, t, p, training: F.gumbel_softmax(t, 0.5 + p, hard=True),
}


@FUZZ
@given(data=st.data())
def test_random_nn_ops_draw_as_torch(data):
    rng = rng_of(data.draw)
    name = pick(rng, sorted(OPS))
    # (integer logits: ember's Tensor.exponential_ does not refuse them yet, torch's does)
    dtypes = FLOATING + ["int64"] if name != "gumbel_softmax" else FLOATING
    x = data.draw(arrays(data.draw(shapes(max_dims=5, max_side=5)), dtypes=dtypes))
    p = pick(rng, [0.0, 0.1, 0.5, 0.9, 1.0, 1.5])
    training = rng.random() < 0.8
    seed = int(rng.integers(0, 2**31))
    transpose = rng.random() < 0.3 and len(x.array.shape) >= 2

    def run(m, t):
        m.manual_seed(seed)
        t = t.transpose(0, -1) if transpose else t
        return OPS[name](m.nn.functional, t, p, training), m.rand(2)

    same(run, x)
