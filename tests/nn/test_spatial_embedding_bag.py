"""embedding_bag / EmbeddingBag against torch: every mode, offsets, weights, padding."""

import numpy as np
import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

W = arrays_for([(7, 3)], -1, 1)[0]
INDICES = np.array([1, 2, 4, 5, 4, 3, 2, 0, 6])
OFFSETS = np.array([0, 2, 2, 5])  # the second bag is empty
PSW = arrays_for([(9,)], 0.5, 1.5, seed=2)[0]
F = lambda m: m.nn.functional  # noqa: E731


def _ints(m, a):
    return m.tensor(a, dtype=m.int64)


CASES = {
    "mean_offsets": lambda m, w, s: F(m).embedding_bag(_ints(m, INDICES), w, _ints(m, OFFSETS)),
    "sum_weights": lambda m, w, s: F(m).embedding_bag(
        _ints(m, INDICES), w, _ints(m, OFFSETS), mode="sum", per_sample_weights=s
    ),
    "max_offsets": lambda m, w, s: F(m).embedding_bag(
        _ints(m, INDICES), w, _ints(m, OFFSETS), mode="max"
    ),
    "mean_2d_padding": lambda m, w, s: F(m).embedding_bag(
        _ints(m, INDICES.reshape(3, 3)), w, padding_idx=4
    ),
    "max_2d_padding": lambda m, w, s: F(m).embedding_bag(
        _ints(m, INDICES.reshape(3, 3)), w, mode="max", padding_idx=2
    ),
    "sum_last_offset_padding": lambda m, w, s: F(m).embedding_bag(
        _ints(m, INDICES),
        w,
        _ints(m, [0, 3, 9]),  # the last offset is the input length
        mode="sum",
        per_sample_weights=s,
        include_last_offset=True,
        padding_idx=4,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_embedding_bag_matches_torch_and_gradcheck(name):
    compare_with_torch(CASES[name], [W, PSW])
    check_gradients(CASES[name], [W, PSW], gradgrad=not name.startswith("max"))


def test_scale_grad_by_freq_matches_torch_embedding(torch_mod):
    # torch's CPU embedding_bag divides by the wrong counts (row 3 of [1, 2, 2, 3] gets 1/2);
    # the reference is F.embedding with scale_grad_by_freq, summed per bag
    def bags_via_embedding(m, w, s):
        rows = F(m).embedding(_ints(m, INDICES), w, scale_grad_by_freq=True)
        return m.stack([rows[a:b].sum(0) for a, b in zip(OFFSETS, list(OFFSETS[1:]) + [9])])

    mine = lambda m, w, s: F(m).embedding_bag(  # noqa: E731
        _ints(m, INDICES), w, _ints(m, OFFSETS), mode="sum", scale_grad_by_freq=True
    )
    w = ember.tensor(W, requires_grad=True)
    mine(ember, w, None).sum().backward()
    ref = torch_mod.tensor(W, requires_grad=True)
    bags_via_embedding(torch_mod, ref, None).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), ref.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(
        mine(ember, w, None).detach().numpy(),
        bags_via_embedding(torch_mod, ref, None).detach().numpy(),
    )


def test_embedding_bag_module_matches_torch(torch_mod):
    kwargs = dict(mode="max", padding_idx=2, max_norm=1.0)
    mine, ref = ember.nn.EmbeddingBag(7, 3, **kwargs), torch_mod.nn.EmbeddingBag(7, 3, **kwargs)
    assert (
        repr(mine) == repr(ref)
        and repr(ember.nn.EmbeddingBag(7, 3)) == "EmbeddingBag(7, 3, mode='mean')"
    )
    assert float(mine.weight[2].abs().sum()) == 0.0
    with torch_mod.no_grad():
        ref.weight.copy_(torch_mod.tensor(mine.weight.detach().numpy()))
    a = mine(_ints(ember, INDICES), _ints(ember, OFFSETS))
    b = ref(_ints(torch_mod, INDICES), _ints(torch_mod, OFFSETS))
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(mine.weight.detach().numpy(), ref.weight.detach().numpy(), rtol=1e-6)
    bag = ember.nn.EmbeddingBag.from_pretrained(ember.tensor(W), mode="sum")
    assert not bag.weight.requires_grad
    assert bag(_ints(ember, [[0, 1]])).tolist() == [list(W[0] + W[1])]


def test_embedding_bag_errors_match_torch(torch_mod):
    for m in (ember, torch_mod):
        w = m.zeros(7, 3)
        with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
            F(m).embedding_bag(_ints(m, INDICES), w)
        with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
            F(m).embedding_bag(_ints(m, [[1, 2]]), w, _ints(m, [0]))
        with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
            F(m).embedding_bag(_ints(m, [[1, 2]]), w, per_sample_weights=m.ones(1, 2))
        with pytest.raises(RuntimeError, match=r"offsets\[0\] has to be 0"):
            F(m).embedding_bag(_ints(m, INDICES), w, _ints(m, [1, 3]))


def test_mean_bags_with_a_last_offset_divide_each_sum_like_torch(torch_mod):
    indices = [1, 2, 4, 5, 4, 3, 7]
    for offsets in ([0, 3, 7], [0, 0, 3, 3, 7], [0, 7]):
        for dtype in ("float32", "float64"):
            out = []
            for m in (ember, torch_mod):
                w = m.arange(20, dtype=getattr(m, dtype)).reshape(10, 2) / 3
                w.requires_grad_()
                y = m.nn.functional.embedding_bag(
                    m.tensor(indices), w, m.tensor(offsets), include_last_offset=True
                )
                (g,) = m.autograd.grad(y.sum(), w)
                out.append((y.detach().numpy(), g.numpy()))
            np.testing.assert_array_equal(out[0][0], out[1][0])  # bit for bit: sum, then divide
            np.testing.assert_array_equal(out[0][1], out[1][1])
