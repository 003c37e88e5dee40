"""In-place random fills of strided tensors (transposed, permuted, sliced views) give torch's
values: draws are placed in the order torch's kernels fill memory, and normal_ of a
non-contiguous tensor uses torch's scalar sampler."""

import numpy as np
import pytest

import ember

VIEWS = {
    "transposed": lambda lib: lib.empty(4, 6).t(),
    "permuted": lambda lib: lib.empty(2, 3, 5).permute(2, 0, 1),
    "sliced": lambda lib: lib.empty(6, 8)[:, ::2],
    "contiguous": lambda lib: lib.empty(5, 7),
    "large_transposed": lambda lib: lib.empty(20, 30).t(),
    "float64_transposed": lambda lib: lib.empty(4, 6, dtype=lib.float64).t(),
}
FILLS = {
    "random_": lambda t: t.random_(0, 10),
    "normal_": lambda t: t.normal_(),
    "normal_mean_std": lambda t: t.normal_(2.0, 3.0),
    "uniform_": lambda t: t.uniform_(-1.0, 2.0),
    "exponential_": lambda t: t.exponential_(),
    "bernoulli_": lambda t: t.bernoulli_(0.3),
    "cauchy_": lambda t: t.cauchy_(),
    "log_normal_": lambda t: t.log_normal_(),
    "geometric_": lambda t: t.geometric_(0.3),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("fill", sorted(FILLS))
def test_in_place_fill_of_a_view_equals_torch(torch_mod, view, fill):
    torch_mod.manual_seed(0)
    want = FILLS[fill](VIEWS[view](torch_mod)).numpy()
    ember.manual_seed(0)
    got = FILLS[fill](VIEWS[view](ember)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_transposed_random_fills_the_base_in_memory_order():
    ember.manual_seed(0)
    base = ember.empty(4, 6)
    base.t().random_(0, 10)
    ember.manual_seed(0)
    plain = ember.empty(4, 6).random_(0, 10)
    assert base.tolist() == plain.tolist()  # the same draws, in the base's memory order
    assert base.tolist()[0] == [4.0, 9.0, 3.0, 0.0, 3.0, 9.0]  # torch.manual_seed(0)'s draws


def test_transposed_normal_uses_the_scalar_sampler():
    ember.manual_seed(0)
    strided = ember.empty(4, 6).t().normal_()
    ember.manual_seed(0)
    contiguous = ember.empty(6, 4).normal_()
    # 24 values: torch's vectorised sampler for the contiguous tensor, its scalar one for the
    # transposed view, so the two differ
    assert not np.allclose(strided.numpy().T.ravel(), contiguous.numpy().ravel())


@pytest.mark.parametrize(
    ("shape", "perm"), [((3, 4), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((2, 17, 3), (0, 2, 1))]
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_like_of_a_permuted_tensor_equals_torchs(torch_mod, shape, perm, dtype):
    """rand_like/randn_like/randint_like keep a permuted input's strides and fill in memory
    order, as torch's: same values at each position, same stream position afterwards."""
    outcomes = []
    for m in (torch_mod, ember):
        x = m.zeros(shape, dtype=getattr(m, dtype)).permute(perm)
        m.manual_seed(3)
        made = [m.rand_like(x), m.randn_like(x), m.randint_like(x, 10), m.randint_like(x, 3, 9)]
        outcomes.append(
            ([t.tolist() for t in made], [t.stride() for t in made], m.rand(2).tolist())
        )
    assert outcomes[0] == outcomes[1]
