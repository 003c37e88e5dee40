"""Lazy modules: placeholders until the first forward, then the eager layer, as in torch."""

import numpy as np
import pytest

import ember
from ember.nn.modules.lazy import UninitializedBuffer, UninitializedParameter, is_lazy

LAZY = [
    ("LazyLinear", (5,), (4, 3), "Linear", (5, 3)),
    ("LazyConv1d", (4, 3), (2, 6, 7), "Conv1d", (4, 6, 3)),
    ("LazyConv2d", (4, 3), (2, 6, 5, 5), "Conv2d", (4, 6, 3, 3)),
    ("LazyConv3d", (4, 2), (3, 4, 4, 4), "Conv3d", (4, 3, 2, 2, 2)),  # unbatched input
    ("LazyConvTranspose1d", (4, 3), (2, 6, 7), "ConvTranspose1d", (6, 4, 3)),
    ("LazyConvTranspose2d", (4, 3), (2, 6, 5, 5), "ConvTranspose2d", (6, 4, 3, 3)),
    ("LazyConvTranspose3d", (4, 2), (1, 2, 3, 3, 3), "ConvTranspose3d", (2, 4, 2, 2, 2)),
    ("LazyBatchNorm1d", (), (4, 6), "BatchNorm1d", (6,)),
    ("LazyBatchNorm2d", (), (4, 6, 2, 2), "BatchNorm2d", (6,)),
    ("LazyBatchNorm3d", (), (4, 6, 2, 2, 2), "BatchNorm3d", (6,)),
]


@pytest.mark.parametrize("cls,args,shape,eager,weight_shape", LAZY, ids=[c[0] for c in LAZY])
def test_lazy_modules_materialise_on_first_forward(cls, args, shape, eager, weight_shape):
    module = getattr(ember.nn, cls)(*args)
    assert isinstance(module.weight, UninitializedParameter) and module.has_uninitialized_params()
    weight = module.weight
    out = module(ember.randn(*shape))
    assert type(module) is getattr(ember.nn, eager)
    assert module.weight is weight and not is_lazy(weight)  # materialised in place
    assert tuple(module.weight.shape) == weight_shape
    out.sum().backward()
    assert module.weight.grad is not None
    assert module(ember.randn(*shape)).shape == out.shape


def test_lazy_instance_norm_and_optimizer_after_dry_run(torch_mod):
    norm = ember.nn.LazyInstanceNorm2d(affine=True, track_running_stats=True)
    assert is_lazy(norm.running_mean) and isinstance(norm.running_var, UninitializedBuffer)
    norm(ember.randn(2, 3, 4, 4))
    assert type(norm) is ember.nn.InstanceNorm2d and norm.num_features == 3
    assert norm.running_mean.shape == (3,) and norm.weight.tolist() == [1.0, 1.0, 1.0]
    ref = torch_mod.nn.LazyInstanceNorm2d(affine=True, track_running_stats=True)
    ref(torch_mod.zeros(2, 3, 4, 4))
    assert repr(norm) == repr(ref)
    model = ember.nn.Sequential(
        ember.nn.LazyConv2d(4, 3), ember.nn.ReLU(), ember.nn.Flatten(), ember.nn.LazyLinear(2)
    )
    x = ember.randn(2, 3, 5, 5)
    model(x)  # dry run
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    before = model[3].weight.detach().clone()
    model(x).sum().backward()
    opt.step()
    assert model[3].in_features == 36 and not np.allclose(
        before.numpy(), model[3].weight.detach().numpy()
    )


def test_lazy_module_dtype_is_kept_and_init_is_eager():
    layer = ember.nn.LazyLinear(3).double()
    layer(ember.randn(2, 4, dtype=ember.float64))
    assert layer.weight.dtype == ember.float64
    bound = 1 / np.sqrt(4)
    assert np.all(np.abs(layer.weight.detach().numpy()) <= bound)
    assert np.all(np.abs(layer.bias.detach().numpy()) <= bound)


def test_lazy_model_loads_a_state_dict_without_a_dry_run():
    nn = ember.nn

    def build():
        return nn.Sequential(
            nn.LazyConv1d(3, 2), nn.LazyBatchNorm1d(), nn.Flatten(), nn.LazyLinear(2)
        )

    trained = build()
    x = ember.randn(4, 2, 5)
    trained(x)
    trained.eval()
    fresh = build()
    state = trained.state_dict()
    # what Module.load_state_dict is to do for every lazy submodule before copying
    for name, module in fresh.named_modules():
        if hasattr(module, "_load_lazy_state"):
            module._load_lazy_state(state, name + "." if name else "")
    fresh.load_state_dict(state)
    fresh.eval()
    np.testing.assert_allclose(fresh(x).detach().numpy(), trained(x).detach().numpy())
    assert type(fresh[3]) is nn.Linear


def test_state_dict_keeps_placeholders_as_torch(torch_mod):
    # torch's state_dict holds the uninitialized parameters themselves, not detached copies
    kinds = []
    for m in (ember, torch_mod):
        state = m.nn.LazyConv2d(4, 3).state_dict()
        kinds.append({name: type(value).__name__ for name, value in state.items()})
    assert (
        kinds[0]
        == kinds[1]
        == {"weight": "UninitializedParameter", "bias": "UninitializedParameter"}
    )
    module = ember.nn.LazyConv2d(4, 3)
    module(ember.zeros(1, 2, 5, 5))
    assert all(type(v) is ember.Tensor for v in module.state_dict().values())
