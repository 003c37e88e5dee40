import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

X = arrays_for([(2, 3, 4)], -2, 2)[0]

SHAPE_OPS = {
    "reshape": lambda m, t: t.reshape(4, 6),
    "reshape_infer": lambda m, t: m.reshape(t, (-1, 2)),
    "view": lambda m, t: t.view(6, 4),
    "flatten": lambda m, t: t.flatten(),
    "flatten_range": lambda m, t: m.flatten(t, 1),
    "unflatten": lambda m, t: t.unflatten(2, (2, 2)),
    "squeeze": lambda m, t: t.reshape(2, 1, 12).squeeze(),
    "squeeze_dim": lambda m, t: t.reshape(2, 1, 12).squeeze(1),
    "unsqueeze": lambda m, t: t.unsqueeze(-1),
    "transpose": lambda m, t: t.transpose(0, 2),
    "permute": lambda m, t: t.permute(2, 0, 1),
    "movedim": lambda m, t: m.movedim(t, 0, -1),
    "mT": lambda m, t: t.mT,
    "T2d": lambda m, t: t[0].T,
    "t": lambda m, t: t[0].t(),
    "expand": lambda m, t: t[:, :1].expand(2, 5, 4),
    "expand_lead": lambda m, t: t.expand(3, 2, 3, 4),
    "expand_as": lambda m, t: t[0, 0].expand_as(t),
    "broadcast_to": lambda m, t: m.broadcast_to(t[:, :, :1], (2, 3, 4)),
    "repeat": lambda m, t: t.repeat(2, 1, 1, 2),
    "tile": lambda m, t: m.tile(t, (2,)),
    "cat": lambda m, t: m.cat([t, t * 2], 1),
    "cat_neg": lambda m, t: m.cat([t, t[:, :1]], dim=-2),
    "stack": lambda m, t: m.stack([t, t + 1], 1),
    "split": lambda m, t: t.split(2, 2),
    "split_sizes": lambda m, t: m.split(t, [1, 2], 1),
    "chunk": lambda m, t: t.chunk(3, -1),
    "unbind": lambda m, t: t.unbind(1),
    "narrow": lambda m, t: t.narrow(2, 1, 2),
    "select": lambda m, t: t.select(1, -1),
    "flip": lambda m, t: t.flip(0, 2),
    "roll": lambda m, t: t.roll(1, 2),
    "roll_flat": lambda m, t: m.roll(t, 5),
    "roll_multi": lambda m, t: t.roll((1, -1), (0, 2)),
    "tril": lambda m, t: t.tril(),
    "triu": lambda m, t: m.triu(t, 1),
    "diagonal": lambda m, t: t.diagonal(0, 1, 2),
    "diagonal_offset": lambda m, t: m.diagonal(t, -1, 2, 1),
    "diag_matrix": lambda m, t: t[0].diag(1),
    "diag_vector": lambda m, t: m.diag(t[0, 0]),
    "diag_embed": lambda m, t: m.diag_embed(t),
    "clone": lambda m, t: t.clone(),
    "contiguous": lambda m, t: t.transpose(0, 1).contiguous(),
    "to_float32": lambda m, t: t.to(m.float32) * 1,
    "repeat_interleave": lambda m, t: t.repeat_interleave(2, dim=1),
    "hstack": lambda m, t: m.hstack([t, t]),
    "vstack": lambda m, t: m.vstack([t[0], t[1]]),
    "slice_scatter": lambda m, t: m.slice_scatter(t, t[:, 1:2] * 3, 1, 1, 2),
    "select_scatter": lambda m, t: m.select_scatter(t, t[:, 0] * 2, 1, 2),
    "diagonal_scatter": lambda m, t: m.diagonal_scatter(t[0], t[1].diagonal() * 2),
}


@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
def test_shape_op_gradcheck_and_torch(name):
    fn = SHAPE_OPS[name]
    if name != "to_float32":  # finite differences are meaningless in float32
        check_gradients(fn, [X])
        if name != "view":  # view of a transposed tensor is an error, as in PyTorch
            check_gradients(fn, [X], noncontiguous=True)
    compare_with_torch(
        fn,
        [X],
        rtol=1e-6 if name != "to_float32" else 1e-5,
        atol=1e-7 if name != "to_float32" else 1e-5,
    )


@given(shape=array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=3), data=st.data())
@settings(max_examples=25, deadline=None)
def test_permute_reshape_round_trip_over_shapes(shape, data):
    perm = data.draw(st.permutations(range(len(shape))))
    x = arrays_for([shape], -1, 1)[0]
    fn = lambda m, t: t.permute(*perm).reshape(-1) * 2
    check_gradients(fn, [x], gradgrad=False)
    compare_with_torch(fn, [x])


def test_views_share_memory_and_version_counter():
    x = ember.zeros(2, 3)
    v = x.view(3, 2)
    s = x[0]
    t = x.t()
    v[0, 0] = 5.0
    assert x[0, 0].item() == 5.0 and s[0].item() == 5.0 and t[0, 0].item() == 5.0
    assert x._version == v._version == s._version == 1
    s.add_(1)
    assert x._version == 4 - 2  # the two writes bumped the shared counter twice
    assert x[0, 1].item() == 1.0


def test_view_on_noncontiguous_raises_and_reshape_copies():
    x = ember.ones(3, 4).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.view(12)
    y = x.reshape(12)
    y[0] = 7
    assert x[0, 0].item() == 1.0


def test_shape_errors_name_the_problem():
    with pytest.raises(RuntimeError, match="shape '\\[5, 5\\]' is invalid for input of size 6"):
        ember.ones(2, 3).reshape(5, 5)
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        ember.ones(2, 3).expand(4, 3)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        ember.cat([ember.ones(2, 3), ember.ones(2, 4)])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ember.stack([ember.ones(2), ember.ones(3)])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.ones(2, 3).transpose(0, 3)
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly"):
        ember.ones(5).split([2, 2])


def test_cat_promotes_and_skips_legacy_empty():
    out = ember.cat([ember.tensor([1, 2]), ember.tensor([0.5]), ember.tensor([])])
    assert out.dtype == ember.float32
    np.testing.assert_allclose(out.numpy(), [1, 2, 0.5])


def test_zero_size_shape_ops():
    x = np.zeros((0, 3))
    for fn in (
        lambda m, t: t.reshape(3, 0),
        lambda m, t: t.t(),
        lambda m, t: m.cat([t, t]),
        lambda m, t: t.flip(0),
        lambda m, t: t.unsqueeze(0).expand(2, 0, 3),
    ):
        compare_with_torch(fn, [x])
        check_gradients(fn, [x])


GENERATED_SHAPE_OPS = {
    "flatten": lambda m, t: t.flatten(),
    "unsqueeze": lambda m, t: t.unsqueeze(0),
    "expand": lambda m, t: t.expand((2,) + tuple(t.shape)),
    "flip": lambda m, t: t.flip(list(range(t.ndim))),
    "reshape_neg": lambda m, t: t.reshape(-1, 1),
    "cat_self": lambda m, t: m.cat([t, t * 2], 0) if t.ndim else m.stack([t, t * 2]),
    "repeat": lambda m, t: t.repeat((2,) * max(t.ndim, 1)),
    "clone_t": lambda m, t: (t.mT if t.ndim >= 2 else t).clone(),
    "sum_to": lambda m, t: (t.unsqueeze(0).expand((3,) + tuple(t.shape)) * 1).sum_to_size(t.shape),
}


@pytest.mark.parametrize("name", sorted(GENERATED_SHAPE_OPS))
@given(shape=array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
@settings(max_examples=10, deadline=None)
def test_shape_ops_over_generated_shapes(name, shape):
    x = arrays_for([shape], -1, 1)[0]
    fn = GENERATED_SHAPE_OPS[name]
    check_gradients(fn, [x])
    compare_with_torch(fn, [x])


def test_flip_takes_dims_by_keyword_and_atleast_takes_lists_like_torch(torch_mod):
    for m in (ember, torch_mod):
        x = m.arange(6.0).reshape(2, 3)
        assert m.flip(x, dims=(0,)).tolist() == [[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]]
        assert m.flip(x, dims=[0, 1]).tolist() == x.flip(0, 1).tolist() == x.flip((0, 1)).tolist()
        assert x.flip(dims=(1,)).tolist() == [[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]]
        pair = [m.tensor(1.0), m.tensor([2.0, 3.0])]
        assert [tuple(t.shape) for t in m.atleast_1d(pair)] == [(1,), (2,)]
        assert [tuple(t.shape) for t in m.atleast_2d(pair)] == [(1, 1), (1, 2)]
        assert [tuple(t.shape) for t in m.atleast_1d(tuple(pair))] == [(1,), (2,)]
        assert [tuple(t.shape) for t in m.atleast_2d(*pair)] == [(1, 1), (1, 2)]
        assert tuple(m.atleast_1d(m.tensor(1.0)).shape) == (1,)
    check_gradients(lambda m, t: m.flip(t, dims=[1]), arrays_for([(2, 3)]))


def test_tile_method_takes_sizes_as_varargs_like_repeat(torch_mod):
    values = np.arange(6.0).reshape(2, 3)
    for call in (
        lambda m, t: t.tile(2),
        lambda m, t: t.tile(2, 2),
        lambda m, t: t.tile((3,)),
        lambda m, t: m.tile(t, (2, 1, 1)),
        lambda m, t: m.tile(t, dims=(1, 2)),
    ):
        ours = call(ember, ember.tensor(values))
        theirs = call(torch_mod, torch_mod.tensor(values))
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_tile_of_an_int_without_torch():
    x = ember.arange(3.0)
    np.testing.assert_array_equal(x.tile(2).numpy(), [0, 1, 2, 0, 1, 2])
    assert x.view(3, 1).tile((2,)).shape == (3, 2)


def test_broadcast_shapes_takes_plain_integers_among_shapes():
    assert ember.broadcast_shapes((5, 1), 5) == (5, 5)
    assert ember.broadcast_shapes(3, (2, 1)) == (2, 3)


def test_t_of_a_scalar_passes_its_gradient_through():
    x = ember.tensor(2.0, requires_grad=True)
    (x.t() * 3).backward()
    assert x.grad.item() == 3.0


# --- error inputs of PyTorch's OpInfo database: torch's exception type and message ---


def test_reshape_of_empty_tensor_with_inferred_dim_is_ambiguous():
    x = ember.zeros(0, 5)
    for reshaping in (lambda: x.reshape(0, -1), lambda: x.view(0, -1)):
        with pytest.raises(RuntimeError, match=r"cannot reshape tensor of 0 elements into shape"):
            reshaping()
    with pytest.raises(RuntimeError, match=r"shape '\[0, -1\]' is invalid for input of size 3"):
        ember.zeros(3).reshape(0, -1)


def test_movedim_repeated_dims_raise_naming_the_argument():
    x = ember.zeros(2, 3, 4, 5, 6)
    with pytest.raises(RuntimeError, match=r"repeated dim in `source` \(\[0, 4, -5\]\)"):
        ember.movedim(x, (0, 4, -5), (1, 0, 2))
    with pytest.raises(RuntimeError, match=r"repeated dim in `destination` \(\[0, 4, -5\]\)"):
        ember.movedim(x, (1, 0, 2), (0, 4, -5))
    assert ember.movedim(ember.zeros(2, 3, 4), (0, 1), (1, 2)).shape == (4, 2, 3)


def test_cat_refuses_a_tensor_or_a_non_tensor_element():
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        ember.cat(ember.zeros(2, 3))
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0, but got None"):
        ember.cat([ember.zeros(2), None])


def test_cat_of_only_empty_vectors_passes_each_a_gradient():
    a = ember.zeros(0, requires_grad=True)
    b = ember.zeros(0, dtype=ember.float64, requires_grad=True)
    out = ember.cat([a, b], dim=1)  # torch checks no dim when every input is skipped
    assert out.shape == (0,) and out.dtype == ember.float64
    out.sum().backward()
    assert a.grad.shape == (0,) and b.grad.shape == (0,) and b.grad.dtype == ember.float64


@pytest.mark.parametrize("name", ["hstack", "vstack"])
def test_stacking_nothing_raises(name):
    with pytest.raises(RuntimeError, match=f"{name} expects a non-empty TensorList"):
        getattr(ember, name)([])


def test_narrow_checks_length_sign_and_start_tensor():
    x = ember.zeros(10)
    with pytest.raises(RuntimeError, match=r"narrow\(\): length must be non-negative\."):
        x.narrow(0, 0, -1)
    for start in (ember.tensor([1, 2]), ember.tensor(True), ember.tensor(1.0)):
        with pytest.raises(RuntimeError, match="start must be an 0-dim integral Tensor"):
            x.narrow(0, start, 2)
    assert x.narrow(0, ember.tensor(8), 2).shape == (2,)


def test_roll_without_shifts_raises():
    with pytest.raises(RuntimeError, match="`shifts` required"):
        ember.roll(ember.zeros(5), ())


def test_roll_of_empty_tensor_has_a_gradient():
    x = ember.zeros(0, 3, requires_grad=True)
    ember.roll(x, (1, 2), (0, 1)).sum().backward()
    assert x.grad.shape == (0, 3)


def test_unbind_of_a_scalar_raises_index_error():
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        ember.unbind(ember.tensor(3), 0)


def test_fliplr_and_flipud_check_dims():
    with pytest.raises(RuntimeError, match=r"Input must be >= 2-d\."):
        ember.fliplr(ember.zeros(3))
    with pytest.raises(RuntimeError, match=r"Input must be >= 1-d\."):
        ember.flipud(ember.tensor(1.0))
    assert ember.flipud(ember.tensor([1.0, 2.0])).tolist() == [2.0, 1.0]


def test_diag_embed_refuses_identical_dims():
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 1, 1"):
        ember.diag_embed(ember.zeros(10, 20), dim1=1, dim2=1)
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 0, -2"):
        ember.diag_embed(ember.zeros(3), 0, 0, -2)
    assert ember.diag_embed(ember.zeros(2, 3), 1, 0, 2).shape == (4, 2, 4)


def test_broadcast_to_takes_one_int_as_the_size():
    assert ember.tensor(2.0).broadcast_to(3).tolist() == [2.0, 2.0, 2.0]
    assert ember.broadcast_to(ember.tensor([1.0]), 2).tolist() == [1.0, 1.0]
