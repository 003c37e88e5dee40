"""Instance, RMS and local response norm, BatchNorm3d and SyncBatchNorm against torch."""

import numpy as np
import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

X = arrays_for([(3, 4, 3, 2, 4)], -1, 1)[0]
SMALL = X[:2, :2, :2, :1, :3]
W4, B4 = arrays_for([(4,), (4,)], 0.5, 1.5, seed=1)
F = lambda m: m.nn.functional  # noqa: E731

NORMS = {
    "instance_norm_3d": lambda m, x, w, b: F(m).instance_norm(
        x, weight=w[: x.shape[1]], bias=b[: x.shape[1]]
    ),
    "instance_norm_1d": lambda m, x, w, b: F(m).instance_norm(x[:, :, 0, 0], eps=1e-3),
    "rms_norm": lambda m, x, w, b: F(m).rms_norm(x.movedim(1, -1), (x.shape[1],), w[: x.shape[1]]),
    "rms_norm_eps": lambda m, x, w, b: F(m).rms_norm(x, tuple(x.shape[-2:]), eps=1e-2),
    "local_response_norm": lambda m, x, w, b: F(m).local_response_norm(x, 3, 0.5, 0.6, 1.5),
    "local_response_norm_even": lambda m, x, w, b: F(m).local_response_norm(x[:, :, 0], 2, 0.8),
}


@pytest.mark.parametrize("name", sorted(NORMS))
def test_norms_match_torch_and_gradcheck(name):
    fn = NORMS[name]
    compare_with_torch(fn, [X, W4, B4])
    check_gradients(fn, [SMALL, W4, B4], gradgrad=name.endswith(("_3d", "rms_norm", "norm")))


def test_cross_map_lrn2d_values_match_torch_gradient_is_exact():
    # torch's hand-written backward for this legacy layer fails its own gradcheck, so only the
    # values are compared; ember's gradient is the exact one of the same forward
    fn = lambda m, x: m.nn.CrossMapLRN2d(3, 0.5, 0.6, 1.5)(x[:, :, 0])  # noqa: E731
    compare_with_torch(fn, [X], grad=False)
    check_gradients(fn, [SMALL])


def test_rms_norm_float32_default_eps_matches_torch():
    fn = lambda m, x: F(m).rms_norm(x * 1e-4, (x.shape[-1],))  # noqa: E731
    compare_with_torch(fn, [X], dtype=np.float32, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("cls", ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"])
@pytest.mark.parametrize("affine,track", [(False, False), (True, True)])
def test_instance_norm_modules_train_and_eval_like_torch(torch_mod, cls, affine, track):
    nd = int(cls[-2])
    x = X[(slice(None), slice(None)) + (0,) * (3 - nd)]
    mine = getattr(ember.nn, cls)(4, affine=affine, track_running_stats=track, momentum=0.3)
    ref = getattr(torch_mod.nn, cls)(4, affine=affine, track_running_stats=track, momentum=0.3)
    assert repr(mine) == repr(ref)
    mine, ref = mine.double(), ref.double()
    for _ in range(2):
        np.testing.assert_allclose(
            mine(ember.tensor(x)).detach().numpy(),
            ref(torch_mod.tensor(x)).detach().numpy(),
            atol=1e-10,
        )
    np.testing.assert_allclose(
        mine(ember.tensor(x[0])).detach().numpy(),
        ref(torch_mod.tensor(x[0])).detach().numpy(),
        atol=1e-10,
    )
    mine.eval(), ref.eval()
    np.testing.assert_allclose(
        mine(ember.tensor(x)).detach().numpy(),
        ref(torch_mod.tensor(x)).detach().numpy(),
        atol=1e-10,
    )
    if track:
        np.testing.assert_allclose(mine.running_var.numpy(), ref.running_var.numpy(), atol=1e-12)
        np.testing.assert_allclose(mine.running_mean.numpy(), ref.running_mean.numpy(), atol=1e-12)


def test_batchnorm3d_and_syncbatchnorm_match_torch(torch_mod):
    for cls in ("BatchNorm3d", "SyncBatchNorm"):
        mine, ref = getattr(ember.nn, cls)(4).double(), getattr(torch_mod.nn, cls)(4).double()
        assert repr(mine) == repr(ref)
        for _ in range(2):
            np.testing.assert_allclose(
                mine(ember.tensor(X)).detach().numpy(),
                ref(torch_mod.tensor(X)).detach().numpy(),
                atol=1e-10,
            )
        np.testing.assert_allclose(mine.running_var.numpy(), ref.running_var.numpy(), atol=1e-12)
    model = ember.nn.Sequential(ember.nn.Conv1d(2, 4, 1), ember.nn.BatchNorm1d(4))
    converted = ember.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]).__name__ == "SyncBatchNorm"
    assert converted[1].weight is model[1].weight


def test_norm_modules_repr_and_forward(torch_mod):
    for cls, args, kwargs in [
        ("RMSNorm", (4,), {}),
        ("RMSNorm", ([2, 4],), dict(eps=1e-3, elementwise_affine=False)),
        ("LocalResponseNorm", (3,), dict(alpha=0.1, k=2.0)),
        ("CrossMapLRN2d", (3,), dict(alpha=0.1, k=2)),
        ("CrossMapLRN2d", (4,), dict(alpha=0.3, beta=0.5)),
    ]:
        mine, ref = (
            getattr(ember.nn, cls)(*args, **kwargs),
            getattr(torch_mod.nn, cls)(*args, **kwargs),
        )
        assert repr(mine) == repr(ref)
        x = X if cls == "LocalResponseNorm" else X[:, :, 0]  # (3, 4, 2, 4)
        np.testing.assert_allclose(
            mine.double()(ember.tensor(x)).detach().numpy(),
            ref.double()(torch_mod.tensor(x)).detach().numpy(),
            atol=1e-12,
        )


def test_norm_errors_match_torch(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
            m.nn.InstanceNorm2d(3)(m.zeros(3, 4))
        with pytest.raises(ValueError, match="to match num_features"):
            m.nn.InstanceNorm2d(3, affine=True)(m.zeros(2, 4, 4, 4))
        with pytest.raises(ValueError, match="Expected more than 1 spatial element"):
            F(m).instance_norm(m.zeros(1, 3, 1))
        with pytest.raises(RuntimeError, match="expected input with shape"):
            F(m).rms_norm(m.zeros(3, 4), (3,))
        with pytest.raises(ValueError, match=r"expected 5D input \(got 3D input\)"):
            m.nn.BatchNorm3d(3)(m.zeros(1, 3, 1))


@pytest.mark.parametrize("name", ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"])
def test_instance_norm_takes_the_bias_keyword_like_torch(torch_mod, name):
    shape = {"InstanceNorm1d": (2, 3, 5), "InstanceNorm2d": (2, 3, 4, 4)}.get(name, (2, 3, 2, 3, 3))
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    out = []
    for m in (ember, torch_mod):
        layer = getattr(m.nn, name)(3, affine=True, bias=False)
        assert [n for n, _ in layer.named_parameters()] == ["weight"] and layer.bias is None
        assert "bias=False" in repr(layer)
        out.append(layer(m.tensor(x)).detach().numpy())
        lazy = getattr(m.nn, "Lazy" + name)(bias=False)  # torch's lazy defaults: affine, tracking
        lazy(m.tensor(x))
        assert lazy.affine and lazy.track_running_stats and lazy.bias is None
    np.testing.assert_allclose(out[0], out[1], rtol=1e-5, atol=1e-6)


def test_group_norm_names_the_sizes_it_cannot_divide(torch_mod):
    messages = []
    for m in (ember, torch_mod):
        with pytest.raises(ValueError) as info:
            m.nn.GroupNorm(3, 10)
        messages.append(str(info.value))
    assert messages[0] == messages[1] == "num_channels (10) must be divisible by num_groups (3)"
