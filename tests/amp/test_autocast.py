"""ember.autocast against torch.autocast on the CPU: result dtypes, values, gradient dtypes,
nesting, the cast cache, every path a user takes to a listed op, and the CUDA policy (through a
hook that treats CPU tensors as CUDA ones)."""

import threading
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from ember.amp import _patch
from ember.amp import state as amp_state


def api(lib, name: str):
    """A top-level autocast function of torch, or ember's (in ember.amp.state until ember's
    __init__ re-exports them)."""
    return getattr(lib, name) if lib is not ember else getattr(amp_state, name)


rng = np.random.default_rng(0)
ARRAYS = {
    "a": rng.standard_normal((3, 4)),
    "b": rng.standard_normal((4, 5)),
    "c": rng.standard_normal((3, 5)),
    "v": rng.standard_normal(4),
    "sq": rng.standard_normal((4, 4)) + 4 * np.eye(4),
    "a3": rng.standard_normal((2, 3, 4)),
    "b3": rng.standard_normal((2, 4, 5)),
    "img": rng.standard_normal((1, 2, 6, 6)),
    "k": rng.standard_normal((3, 2, 3, 3)),
    "sig": rng.standard_normal(8),
    "k1": rng.standard_normal((3, 2, 3)),
    "w": rng.standard_normal((5, 4)),
    "bias": rng.standard_normal(5),
    "p": rng.uniform(0.1, 0.9, (3, 5)),
}


def _inputs(lib, requires_grad=False):
    out = {}
    for name, arr in ARRAYS.items():
        t = lib.tensor(arr.astype(np.float32))
        out[name] = t.requires_grad_(requires_grad) if requires_grad else t
    return out


def _labels(lib):
    return lib.tensor([0, 4, 2])


# (name, fn(lib, F, x)) -- the same PyTorch code runs on both libraries
CASES = [
    ("x @ w", lambda t, F, x: x["a"] @ x["b"]),
    ("Tensor.matmul", lambda t, F, x: x["a"].matmul(x["b"])),
    ("torch.mm", lambda t, F, x: t.mm(x["a"], x["b"])),
    ("torch.bmm", lambda t, F, x: t.bmm(x["a3"], x["b3"])),
    ("matmul 3-d", lambda t, F, x: t.matmul(x["a3"], x["b"])),
    ("matmul vector", lambda t, F, x: t.matmul(x["a"], x["v"])),
    ("addmm", lambda t, F, x: t.addmm(x["c"], x["a"], x["b"])),
    ("F.linear", lambda t, F, x: F.linear(x["a"], x["w"], x["bias"])),
    ("F.conv2d", lambda t, F, x: F.conv2d(x["img"], x["k"], padding=1)),
    ("F.conv1d", lambda t, F, x: F.conv1d(x["img"][:, :, 0], x["k1"])),
    ("einsum", lambda t, F, x: t.einsum("ij,jk->ik", x["a"], x["b"])),
    ("tensordot", lambda t, F, x: t.tensordot(x["a"], x["b"], 1)),
    ("mv (not listed on CPU)", lambda t, F, x: t.mv(x["a"], x["v"])),
    ("dot (not listed on CPU)", lambda t, F, x: t.dot(x["v"], x["v"])),
    ("sum of f32 stays", lambda t, F, x: x["a"].sum()),
    ("sum of lower", lambda t, F, x: (x["a"] @ x["b"]).sum()),
    ("softmax of lower", lambda t, F, x: (x["a"] @ x["b"]).softmax(-1)),
    ("F.softmax dtype=", lambda t, F, x: F.softmax(x["a"] @ x["b"], -1, dtype=t.float32)),
    ("exp of lower", lambda t, F, x: (x["a"] @ x["b"]).exp()),
    ("relu of lower", lambda t, F, x: F.relu(x["a"] @ x["b"])),
    ("lower + f32 bias", lambda t, F, x: (x["a"] @ x["b"]) + x["c"]),
    ("prod", lambda t, F, x: (x["a"] @ x["b"]).prod()),
    ("mse_loss", lambda t, F, x: F.mse_loss(x["a"] @ x["b"], x["c"])),
    ("l1_loss", lambda t, F, x: F.l1_loss(x["a"] @ x["b"], x["c"])),
    ("smooth_l1_loss", lambda t, F, x: F.smooth_l1_loss(x["a"] @ x["b"], x["c"])),
    ("huber_loss", lambda t, F, x: F.huber_loss(x["a"] @ x["b"], x["c"])),
    ("cross_entropy", lambda t, F, x: F.cross_entropy(x["a"] @ x["b"], _labels(t))),
    ("nll_loss", lambda t, F, x: F.nll_loss(F.log_softmax(x["a"] @ x["b"], -1), _labels(t))),
    (
        "binary_cross_entropy",
        lambda t, F, x: F.binary_cross_entropy(t.sigmoid(x["a"] @ x["b"]), x["p"]),
    ),
    (
        "bce_with_logits",
        lambda t, F, x: F.binary_cross_entropy_with_logits(x["a"] @ x["b"], x["p"]),
    ),
    (
        "kl_div",
        lambda t, F, x: F.kl_div(F.log_softmax(x["a"] @ x["b"], -1), x["p"], reduction="batchmean"),
    ),
    ("cat promotes", lambda t, F, x: t.cat([x["a"] @ x["b"], x["c"]])),
    ("cat of lower", lambda t, F, x: t.cat([x["a"] @ x["b"], x["a"] @ x["b"]])),
    ("stack promotes", lambda t, F, x: t.stack([x["a"] @ x["b"], x["c"]])),
    ("inverse", lambda t, F, x: t.inverse(x["sq"] @ x["sq"])),
    ("linalg.inv", lambda t, F, x: t.linalg.inv(x["sq"] @ x["sq"])),
    ("linalg.solve", lambda t, F, x: t.linalg.solve(x["sq"] @ x["sq"], x["sq"])),
    ("float64 untouched", lambda t, F, x: x["a"].double() @ x["b"].double()),
    ("int64 untouched", lambda t, F, x: x["a"].long() @ x["b"].long()),
]


def _run(lib, F, fn, dtype, requires_grad=False):
    x = _inputs(lib, requires_grad)
    with lib.amp.autocast("cpu", dtype=dtype):
        out = fn(lib, F, x)
    return out, x


@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_cpu_autocast_dtype_and_value_match_torch(torch_mod, name, fn, dtype_name):
    import torch.nn.functional as TF

    t_out, _ = _run(torch_mod, TF, fn, getattr(torch_mod, dtype_name))
    e_out, _ = _run(ember, EF, fn, getattr(ember, dtype_name))
    assert e_out.dtype.name == str(t_out.dtype).removeprefix("torch.")
    expected = t_out.detach().double().numpy()
    got = e_out.detach().double().numpy()
    # both libraries round the same inputs and accumulate in float32; the results may differ
    # in the last bit of the lower type
    tol = 2e-2 if dtype_name == "bfloat16" else 2e-3
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * max(1, np.abs(expected).max()))


GRAD_CASES = [c for c in CASES if "untouched" not in c[0] and "dot" not in c[0]]


@pytest.mark.parametrize("name,fn", GRAD_CASES[:12] + GRAD_CASES[-8:], ids=lambda v: v)
def test_cpu_autocast_gradients_match_torch(torch_mod, name, fn):
    """Backward runs in the dtypes the forward chose; each leaf gets its own dtype back."""
    import torch.nn.functional as TF

    grads = []
    for lib, F in ((torch_mod, TF), (ember, EF)):
        out, x = _run(lib, F, fn, lib.bfloat16, requires_grad=True)
        (out.float() * 1.5).sum().backward()
        grads.append({k: v.grad for k, v in x.items() if v.grad is not None})
    t_grads, e_grads = grads
    assert sorted(t_grads) == sorted(e_grads)
    for key, tg in t_grads.items():
        eg = e_grads[key]
        assert eg.dtype == ember.float32 and str(tg.dtype) == "torch.float32"
        expected = tg.double().numpy()
        np.testing.assert_allclose(
            eg.double().numpy(), expected, rtol=3e-2, atol=3e-2 * max(1, np.abs(expected).max())
        )


def test_every_user_path_reaches_the_wrapped_op():
    x = ember.randn(2, 4)
    w = ember.randn(3, 4)
    lin = ember.nn.Linear(4, 3)
    conv = ember.nn.Conv2d(2, 3, 3)
    img = ember.randn(1, 2, 5, 5)
    with ember.amp.autocast("cpu"):
        results = {
            "x @ w.T": x @ w.T,
            "x.matmul": x.matmul(w.t()),
            "x.mm": x.mm(w.t()),
            "ember.mm": ember.mm(x, w.t()),
            "ember.matmul": ember.matmul(x, w.t()),
            "F.linear": EF.linear(x, w),
            "nn.Linear": lin(x),
            "nn.Conv2d": conv(img),
            "F.conv2d": EF.conv2d(img, conv.weight),
            "rmatmul": x.numpy().tolist() @ w.T if False else x @ w.T,
        }
    assert {k: v.dtype for k, v in results.items()} == {k: ember.bfloat16 for k in results}


def test_dtype_and_gradient_of_an_mlp_training_step_match_torch(torch_mod):
    """nn.Linear layers in bfloat16, the loss in float32, float32 gradients for float32 weights."""
    import torch.nn.functional as TF

    params = {
        "w1": rng.standard_normal((8, 4)) * 0.5,
        "b1": rng.standard_normal(8) * 0.1,
        "w2": rng.standard_normal((3, 8)) * 0.5,
        "b2": rng.standard_normal(3) * 0.1,
    }
    data = rng.standard_normal((6, 4))
    labels = [0, 1, 2, 0, 1, 2]
    results = []
    for lib, F in ((torch_mod, TF), (ember, EF)):
        p = {k: lib.tensor(v.astype(np.float32), requires_grad=True) for k, v in params.items()}
        with lib.amp.autocast("cpu", dtype=lib.bfloat16):
            h = F.relu(F.linear(lib.tensor(data.astype(np.float32)), p["w1"], p["b1"]))
            logits = F.linear(h, p["w2"], p["b2"])
            loss = F.cross_entropy(logits, lib.tensor(labels))
        loss.backward()
        results.append((h.dtype, logits.dtype, loss.dtype, loss.item(), p))
    (th, tl, tloss_dtype, tloss, tp), (eh, el, eloss_dtype, eloss, ep) = results
    assert (eh.name, el.name, eloss_dtype.name) == ("bfloat16", "bfloat16", "float32")
    assert str(th) == "torch.bfloat16" and str(tloss_dtype) == "torch.float32"
    assert eloss == pytest.approx(tloss, rel=1e-2)
    for k in params:
        assert ep[k].grad.dtype == ember.float32
        np.testing.assert_allclose(ep[k].grad.numpy(), tp[k].grad.numpy(), rtol=5e-2, atol=2e-2)


# --- regions: nesting, disabling, decorator, state functions ---------------------------------


def test_nested_and_disabled_regions_restore_state(torch_mod):
    seen = []
    for lib in (torch_mod, ember):
        a, b = lib.ones(2, 2), lib.ones(2, 2)
        out = []
        with lib.amp.autocast("cpu", dtype=lib.bfloat16):
            out.append((a @ b).dtype)
            with lib.amp.autocast("cpu", enabled=False):
                out.append((a @ b).dtype)
                out.append(api(lib, "is_autocast_enabled")("cpu"))
            with lib.amp.autocast("cpu", dtype=lib.float16):
                out.append((a @ b).dtype)
                out.append(api(lib, "get_autocast_dtype")("cpu"))
            out.append((a @ b).dtype)
            out.append(api(lib, "is_autocast_enabled")("cpu"))
        out.append((a @ b).dtype)
        out.append(api(lib, "is_autocast_enabled")("cpu"))
        out.append(api(lib, "get_autocast_dtype")("cpu"))
        seen.append([str(v).split(".")[-1] for v in out])
    assert seen[0] == seen[1]
    assert seen[1][:3] == ["bfloat16", "float32", "False"]


def test_decorator_and_state_functions(torch_mod):
    @ember.amp.autocast("cpu")
    def forward(a):
        assert amp_state.is_autocast_enabled("cpu")
        return a @ a

    assert forward(ember.ones(2, 2)).dtype == ember.bfloat16
    assert not amp_state.is_autocast_enabled("cpu")
    assert amp_state.state.nesting == 0
    # defaults, as torch reports them
    assert str(amp_state.get_autocast_dtype("cuda")) == "ember.float16"
    assert str(torch_mod.get_autocast_dtype("cuda")) == "torch.float16"
    assert amp_state.get_autocast_dtype("cpu") is ember.bfloat16
    assert amp_state.is_autocast_enabled() is torch_mod.is_autocast_enabled() is False
    assert amp_state.is_autocast_cache_enabled() is True
    assert ember.amp.is_autocast_available("cpu") and ember.amp.is_autocast_available("cuda")
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        ember.amp.is_autocast_available("foo")


def test_set_autocast_enabled_outside_a_region():
    a = ember.ones(2, 2)
    amp_state.set_autocast_enabled("cpu", True)
    try:
        assert (a @ a).dtype == ember.bfloat16
    finally:
        amp_state.set_autocast_enabled("cpu", False)
    assert (a @ a).dtype == ember.float32
    assert not _patch._installed  # the op code is back


def test_bad_arguments_match_torch(torch_mod):
    for lib in (torch_mod, ember):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.amp.autocast(lib.device("cpu"))
        with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
            lib.amp.autocast("foo")
        with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not"):
            region = lib.amp.autocast("cpu", dtype=lib.float32)
        assert region._enabled is False
        with pytest.raises(TypeError, match="requires a callable"):
            lib.amp.autocast("cpu")(3)


def test_cuda_region_without_cuda_warns_and_disables(torch_mod):
    for lib in (torch_mod, ember):
        with pytest.warns(UserWarning, match="CUDA is not available"):
            region = lib.amp.autocast("cuda")
        with region:
            a = lib.ones(2, 2)
            assert (a @ a).dtype == lib.float32


def test_legacy_spellings_warn(torch_mod):
    import ember.cpu

    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        region = ember.cpu.amp.autocast()
    assert region.fast_dtype is ember.bfloat16
    with region:
        assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype == ember.bfloat16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.warns(FutureWarning, match=r"torch.amp.autocast\('cuda', args...\)"):
            ember.cuda.amp.autocast()
        with pytest.warns(FutureWarning, match=r"torch.amp.GradScaler\('cuda', args...\)"):
            ember.cuda.amp.GradScaler()


def test_outside_any_region_ops_run_their_own_code():
    a = ember.ones(2, 2)
    code = ember.Tensor.__matmul__.__code__
    with ember.amp.autocast("cpu"):
        assert ember.Tensor.__matmul__.__code__ is not code
    assert ember.Tensor.__matmul__.__code__ is code
    assert (a @ a).dtype == ember.float32


def test_autocast_state_is_thread_local():
    seen = {}

    def other():
        a = ember.ones(2, 2)
        seen["enabled"] = amp_state.is_autocast_enabled("cpu")
        seen["dtype"] = (a @ a).dtype

    with ember.amp.autocast("cpu"):
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype == ember.bfloat16
    assert seen == {"enabled": False, "dtype": ember.float32}


# --- the weight cast cache -------------------------------------------------------------------


def test_leaf_parameter_cast_once_per_region():
    lin = ember.nn.Linear(4, 4)
    x = ember.randn(2, 4)
    with ember.amp.autocast("cpu"):
        y1 = lin(x)
        first = {key: entry[2] for key, entry in amp_state.state.cache.items()}
        y2 = lin(x)
        second = {key: entry[2] for key, entry in amp_state.state.cache.items()}
        assert len(first) == 2  # weight and bias, cast once
        assert all(first[key] is second[key] for key in first)  # and reused
        (y1.float().sum() + y2.float().sum()).backward()
    assert amp_state.state.cache == {}  # cleared when the outermost region exits
    assert lin.weight.grad.dtype == ember.float32
    np.testing.assert_allclose(
        lin.weight.grad.numpy(),
        2 * np.tile(x.sum(0).numpy(), (4, 1)),
        rtol=2e-2,
        atol=2e-2,
    )


def test_cache_disabled_and_no_cache_for_non_leaves():
    lin = ember.nn.Linear(4, 4)
    x = ember.randn(2, 4)
    with ember.amp.autocast("cpu", cache_enabled=False):
        lin(x)
        assert amp_state.state.cache == {}
    with ember.amp.autocast("cpu"):
        lin(x * 2)  # the input is not a leaf parameter
        assert len(amp_state.state.cache) == 2
        with ember.no_grad():
            lin(x)
        assert len(amp_state.state.cache) == 2


def test_cache_sees_in_place_updates():
    w = ember.ones(3, 3, requires_grad=True)
    x = ember.ones(1, 3)
    with ember.amp.autocast("cpu"):
        first = (x @ w).float().sum().item()
        with ember.no_grad():
            w.mul_(2)
        second = (x @ w).float().sum().item()
    assert (first, second) == (9.0, 18.0)


# --- the CUDA policy, exercised on CPU tensors through the device hook -----------------------


@pytest.fixture
def as_cuda(monkeypatch):
    """CPU tensors count as CUDA tensors for autocast's policy; CUDA autocast on, float16."""
    monkeypatch.setattr(_patch, "device_type_of", lambda t: "cuda")
    amp_state.set_autocast_enabled("cuda", True)
    try:
        yield
    finally:
        amp_state.set_autocast_enabled("cuda", False)


def test_cuda_policy_lower_fp32_and_opt_dtype(as_cuda):
    a, b = ember.randn(3, 4), ember.randn(4, 5)
    assert (a @ b).dtype == ember.float16
    h = a @ b
    assert h.sum().dtype == ember.float32  # fp32 unless dtype= is given
    assert h.sum(dtype=ember.float16).dtype == ember.float16
    assert h.softmax(-1).dtype == ember.float32
    assert EF.softmax(h, -1, dtype=ember.float16).dtype == ember.float16
    assert ember.softmax(h, -1, ember.float16).dtype == ember.float16  # positional dtype
    assert h.exp().dtype == ember.float32
    assert (h**2).dtype == ember.float32
    assert EF.layer_norm(h, (5,)).dtype == ember.float32
    assert h.relu().dtype == ember.float16  # not listed: runs as called
    assert ember.addcmul(h, h, a @ b).dtype == ember.float16  # promote among lower types
    assert ember.addcmul(h, h, ember.ones(3, 5)).dtype == ember.float32  # ... or to float32
    assert ember.dot(ember.ones(3), ember.ones(3, dtype=ember.float16)).dtype == ember.float32
    assert a.double().exp().dtype == ember.float64
    # the other spellings of the listed ops reach the same wrapper
    for out in (
        h.log_softmax(-1),
        EF.log_softmax(h, -1),
        ember.nn.Softmax(-1)(h),
        ember.nn.LayerNorm(5)(h),
        h.cumsum(0),
        h.prod(),
        ember.log(h.abs()),
        h.norm(),
        ember.nn.MSELoss()(h, h),
    ):
        assert out.dtype == ember.float32
    assert ember.nn.Linear(5, 2)(h).dtype == ember.float16


def test_cuda_policy_bans_binary_cross_entropy(as_cuda):
    p = ember.rand(4)
    with pytest.raises(RuntimeError, match="are unsafe to autocast"):
        EF.binary_cross_entropy(p, p)
    assert EF.binary_cross_entropy_with_logits(p, p).dtype == ember.float32


def test_cuda_policy_does_not_touch_cpu_regions(as_cuda):
    assert not amp_state.is_autocast_enabled("cpu")
    with ember.amp.autocast("cpu", enabled=False):
        assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype == ember.float16


# --- composition with the profiler's code swapping -------------------------------------------


def test_profiler_and_autocast_compose_in_any_order():
    from ember.profiler import profile

    a = ember.ones(2, 2)
    code = ember.Tensor.__matmul__.__code__
    with profile() as prof:
        with ember.amp.autocast("cpu"):
            assert (a @ a).dtype == ember.bfloat16
    assert "matmul" in prof.key_averages().table()
    # non-nested: autocast opened inside the profile, closed after it
    region = ember.amp.autocast("cpu")
    prof = profile()
    region.__enter__()
    prof.__enter__()
    assert (a @ a).dtype == ember.bfloat16
    region.__exit__(None, None, None)
    prof.__exit__(None, None, None)
    assert (a @ a).dtype == ember.float32
    assert ember.Tensor.__matmul__.__code__ is code  # restored by its first call after both let go
    # and the other way round
    prof = profile()
    prof.__enter__()
    region = ember.amp.autocast("cpu")
    region.__enter__()
    prof.__exit__(None, None, None)
    region.__exit__(None, None, None)
    assert (a @ a).dtype == ember.float32
    assert ember.Tensor.__matmul__.__code__ is code


@pytest.mark.skipif(not hasattr(ember, "autocast"), reason="ember/__init__ re-exports pending")
def test_top_level_names():
    assert ember.autocast is ember.amp.autocast
    for name in ("is_autocast_enabled", "get_autocast_dtype", "set_autocast_enabled"):
        assert getattr(ember, name) is getattr(amp_state, name)


# --- custom Functions: custom_fwd / custom_bwd ------------------------------------------------


def _square_function(lib, cast_inputs):
    seen = {}

    class Square(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, x):
            seen["forward"] = (x.dtype, api(lib, "is_autocast_enabled")("cpu"))
            ctx.save_for_backward(x)
            return x @ x

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["backward"] = api(lib, "is_autocast_enabled")("cpu")
            (x,) = ctx.saved_tensors
            return g @ x.mT + x.mT @ g

    return Square, seen


@pytest.mark.parametrize("cast_inputs", [None, "float32"])
def test_custom_fwd_and_bwd_match_torch(torch_mod, cast_inputs):
    results = []
    for lib in (torch_mod, ember):
        square, seen = _square_function(lib, cast_inputs and getattr(lib, cast_inputs))
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        # float16: ember's Function.apply does not yet treat bfloat16 outputs as differentiable
        with lib.amp.autocast("cpu", dtype=lib.float16):
            y = square.apply(x.to(lib.float16))
        y.float().sum().backward()
        results.append(
            (
                str(seen["forward"][0]).split(".")[-1],
                seen["forward"][1],
                seen["backward"],
                str(y.dtype).split(".")[-1],
                x.grad.tolist(),
            )
        )
    assert results[0] == results[1]
    assert results[1][:4] == (
        ("float16", True, True, "float16")
        if cast_inputs is None
        else ("float32", False, False, "float32")
    )


def test_zero_size_and_non_contiguous_inputs_match_torch(torch_mod):
    results = []
    for lib in (torch_mod, ember):
        w = lib.tensor(ARRAYS["w"].astype(np.float32))
        empty = lib.zeros(0, 4)
        strided = lib.tensor(ARRAYS["a3"].astype(np.float32)).transpose(0, 1)[:, :, ::2]
        with lib.amp.autocast("cpu", dtype=lib.bfloat16):
            a = empty @ w.t()
            b = strided @ w.t()[::2]
        results.append((tuple(a.shape), str(a.dtype), b.float().numpy(), str(b.dtype)))
    (ta, tad, tb, tbd), (ea, ead, eb, ebd) = results
    assert (ea, ebd) == (ta, tbd.replace("torch", "ember"))
    assert ead == tad.replace("torch", "ember")
    np.testing.assert_allclose(eb, tb, rtol=1e-2, atol=1e-2)


def test_double_backward_through_an_autocast_region_matches_torch(torch_mod):
    results = []
    for lib in (torch_mod, ember):
        x = lib.tensor([[1.0, 2.0], [0.5, -1.0]], requires_grad=True)
        w = lib.tensor([[2.0, -1.0], [1.0, 0.25]], requires_grad=True)
        with lib.amp.autocast("cpu", dtype=lib.bfloat16):
            y = (x @ w).float()
        (gx,) = lib.autograd.grad((y**3).sum(), x, create_graph=True)
        (ggw,) = lib.autograd.grad(gx.sum(), w)
        results.append((str(gx.dtype).split(".")[-1], gx.tolist(), ggw.tolist()))
    assert results[0] == results[1]


def test_policy_table_reaches_the_common_ops():
    """Every row names a function under its PyTorch name; the common ones must exist, so a
    rename or a new wrapper around an op cannot silently take it out of autocast."""
    from ember.amp import policy

    reached = {fn.__name__ for fn, _ in _patch._functions()}
    common = """matmul mm bmm addmm linear conv1d conv2d prelu softmax log_softmax sum prod cumsum
    exp log pow layer_norm group_norm mse_loss cross_entropy nll_loss l1_loss smooth_l1_loss
    binary_cross_entropy binary_cross_entropy_with_logits kl_div cat stack addcmul addcdiv dot
    einsum tensordot logsumexp norm vector_norm inv solve""".split()
    assert [name for name in common if name not in reached] == []
    for where, *categories in policy.POLICY:
        assert len(categories) == len(policy.DEVICES)
        assert set(categories) <= {None, *policy.CATEGORIES}, where
        for location in where.split():
            assert location.count(":") == 1 and location.startswith("ember"), location


def test_rnn_cells_follow_torch(torch_mod):
    cells = pytest.importorskip("ember.nn.modules.rnn_cells")
    g = np.random.default_rng(3)
    x, h = g.standard_normal((3, 4)), g.standard_normal((3, 5))
    w_ih, w_hh = g.standard_normal((20, 4)), g.standard_normal((20, 5))
    dtypes = []
    for lib, mod in ((torch_mod, torch_mod), (ember, cells)):

        def f(a, lib=lib):
            return lib.tensor(a.astype(np.float32))

        with lib.amp.autocast("cpu", dtype=lib.bfloat16):
            tanh = mod.rnn_tanh_cell(f(x), f(h), f(w_ih[:5]), f(w_hh[:5]))
            lstm = mod.lstm_cell(f(x), (f(h), f(h)), f(w_ih), f(w_hh))[0]
        dtypes.append((str(tanh.dtype).split(".")[-1], str(lstm.dtype).split(".")[-1]))
    assert dtypes[0] == dtypes[1] == ("bfloat16", "float32")


def test_arguments_given_by_keyword_are_cast(as_cuda):
    a, b = ember.randn(3, 4), ember.randn(4, 5)
    assert ember.matmul(input=a, other=b).dtype == ember.float16
    assert ember.sum(input=a @ b).dtype == ember.float32
    assert ember.cat(tensors=[a @ b, ember.ones(3, 5)]).dtype == ember.float32
