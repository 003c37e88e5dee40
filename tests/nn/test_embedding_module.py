"""nn.Embedding and F.embedding run ember.ops.embedding with every option: sparse gradients,
scale_grad_by_freq, padding_idx and max_norm, and torch's argument errors."""

import numpy as np
import pytest

import ember

INDICES = [[1, 3, 3, 0], [3, 2, 1, 3]]


def _embeddings(torch_mod, **options):
    weight = np.random.default_rng(0).standard_normal((5, 3)).astype("float32")
    layers = []
    for lib in (torch_mod, ember):
        layer = lib.nn.Embedding(5, 3, **options)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(weight))
        layers.append(layer)
    return layers


def _backward(lib, layer):
    out = layer(lib.tensor(INDICES))
    (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    return out


def test_embedding_module_with_sparse_gives_a_sparse_gradient_as_torch(torch_mod):
    theirs, ours = _embeddings(torch_mod, sparse=True, padding_idx=2)
    _backward(torch_mod, theirs)
    _backward(ember, ours)
    assert ours.weight.grad.is_sparse and ours.weight.grad.layout == ember.sparse_coo
    np.testing.assert_array_equal(
        ours.weight.grad.to_dense().numpy(), theirs.weight.grad.to_dense().numpy()
    )
    np.testing.assert_array_equal(
        ours.weight.grad.coalesce().indices().numpy(),
        theirs.weight.grad.coalesce().indices().numpy(),
    )


@pytest.mark.parametrize("padding_idx", [None, 3, -2])
def test_embedding_module_scales_grad_by_frequency_as_torch(torch_mod, padding_idx):
    theirs, ours = _embeddings(torch_mod, scale_grad_by_freq=True, padding_idx=padding_idx)
    np.testing.assert_array_equal(
        _backward(ember, ours).detach().numpy(), _backward(torch_mod, theirs).detach().numpy()
    )
    assert not ours.weight.grad.is_sparse
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-6)
    plain_theirs, plain_ours = _embeddings(torch_mod)
    _backward(torch_mod, plain_theirs)
    _backward(ember, plain_ours)
    assert not np.allclose(plain_ours.weight.grad.numpy(), ours.weight.grad.numpy())


def test_embedding_module_max_norm_renormalises_rows_as_torch(torch_mod):
    theirs, ours = _embeddings(torch_mod, max_norm=0.5, norm_type=1.0)
    np.testing.assert_allclose(
        _backward(ember, ours).detach().numpy(),
        _backward(torch_mod, theirs).detach().numpy(),
        rtol=1e-6,
    )
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy())


def test_sparse_with_scale_grad_by_freq_raises_as_torch(torch_mod):
    for lib, layer in zip(
        (torch_mod, ember), _embeddings(torch_mod, sparse=True, scale_grad_by_freq=True)
    ):
        with pytest.raises(RuntimeError, match="scale_grad_by_freq"):
            _backward(lib, layer)


@pytest.mark.parametrize(
    "weight_shape,padding_idx,error,message",
    [
        ((3, 2), 3, AssertionError, "Padding_idx must be within num_embeddings"),
        ((3, 2), -4, AssertionError, "Padding_idx must be within num_embeddings"),
        ((3,), None, RuntimeError, "'weight' must be 2-D"),
        ((3,), 5, AssertionError, "Padding_idx must be within num_embeddings"),
        ((3, 2, 2), None, RuntimeError, "'weight' must be 2-D"),
        ((), 0, RuntimeError, "'weight' must be 2-D"),
        ((), 1, IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    ],
)
def test_functional_embedding_checks_arguments_in_torchs_order(
    torch_mod, weight_shape, padding_idx, error, message
):
    for lib in (torch_mod, ember):
        with pytest.raises(error, match=message):
            lib.nn.functional.embedding(
                lib.tensor([0.5]), lib.ones(weight_shape), padding_idx=padding_idx
            )


@pytest.mark.parametrize("weight_shape", [(0, 3), (1, 0), (0, 0), (2, 0)])
@pytest.mark.parametrize("indices", [[0], [-2], [1], []])
def test_embedding_of_an_empty_weight_matches_torch(torch_mod, weight_shape, indices):
    outcomes = []
    for lib in (torch_mod, ember):
        try:
            out = lib.nn.functional.embedding(
                lib.tensor(indices, dtype=lib.int64), lib.ones(weight_shape), padding_idx=0
            )
            outcomes.append(tuple(out.shape))
        except (RuntimeError, IndexError) as exc:
            outcomes.append((type(exc), str(exc).split(",")[0]))
    assert outcomes[1] == outcomes[0]
