"""ember.amp.GradScaler against torch.amp.GradScaler: the scale schedule with injected inf/NaN
gradients, skipped steps leaving optimizer state alone, parameters after N steps (SGD with
momentum, Adam), the once-per-step rules, state dicts, and an AMP training run on the digits."""

import math
import warnings

import numpy as np
import pytest

import ember
import ember.cpu
from ember.amp import GradScaler

rng = np.random.default_rng(1)
W0 = rng.standard_normal((3, 4)) * 0.5
B0 = rng.standard_normal(3) * 0.1
X = rng.standard_normal((8, 4))
Y = rng.standard_normal((8, 3))
BAD_STEPS = {2: math.inf, 5: math.nan, 6: -math.inf}  # step -> value put into one gradient


def _train(lib, optimizer_name: str, steps: int = 12):
    """A linear model trained with a scaler; some steps get a non-finite gradient."""
    w = lib.tensor(W0.astype(np.float32), requires_grad=True)
    b = lib.tensor(B0.astype(np.float32), requires_grad=True)
    if optimizer_name == "sgd":
        opt = lib.optim.SGD([w, b], lr=0.05, momentum=0.9)
    else:
        opt = lib.optim.Adam([w, b], lr=0.01)
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=3)
    x, y = lib.tensor(X.astype(np.float32)), lib.tensor(Y.astype(np.float32))
    history = []
    for step in range(steps):
        opt.zero_grad()
        loss = ((x @ w.t() + b - y) ** 2).mean()
        scaler.scale(loss).backward()
        if step in BAD_STEPS:
            with lib.no_grad():
                w.grad[0, 0] = BAD_STEPS[step]
        scaler.step(opt)
        scaler.update()
        state = opt.state[w]
        history.append(
            (
                scaler.get_scale(),
                scaler.state_dict()["_growth_tracker"],
                float(state["step"]) if "step" in state else None,
            )
        )
    return history, w.detach().numpy().copy(), b.detach().numpy().copy(), opt, w


@pytest.mark.parametrize("optimizer_name", ["sgd", "adam"])
def test_scale_schedule_and_parameters_match_torch(torch_mod, optimizer_name):
    t_hist, t_w, t_b, _, _ = _train(torch_mod, optimizer_name)
    e_hist, e_w, e_b, _, _ = _train(ember, optimizer_name)
    assert e_hist == t_hist
    np.testing.assert_allclose(e_w, t_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e_b, t_b, rtol=1e-5, atol=1e-6)
    scales = [h[0] for h in e_hist]
    # backed off at each bad step, grown after 3 clean ones
    assert scales[:4] == [1024.0, 1024.0, 512.0, 512.0]


def test_skipped_step_leaves_optimizer_state_alone():
    w = ember.ones(2, requires_grad=True)
    opt = ember.optim.Adam([w], lr=0.1)
    scaler = GradScaler("cpu")
    (scaler.scale(w.sum()) * math.inf).backward()
    assert scaler.step(opt) is None  # skipped
    assert len(opt.state) == 0 and w.tolist() == [1.0, 1.0]
    scaler.update()
    assert scaler.get_scale() == 2.0**15
    sgd = ember.optim.SGD([w], lr=0.1, momentum=0.9)
    opt.zero_grad()
    scaler.scale(w.sum()).backward()
    scaler.step(sgd)
    momentum = sgd.state[w]["momentum_buffer"].tolist()
    scaler.update()
    sgd.zero_grad()
    scaler.scale(w.sum() * math.nan).backward()
    scaler.step(sgd)
    assert sgd.state[w]["momentum_buffer"].tolist() == momentum


def test_unscale_once_per_step_rules(torch_mod):
    for lib in (torch_mod, ember):
        w = lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        scaler = lib.amp.GradScaler("cpu")
        scaler.scale(w.sum()).backward()
        scaler.unscale_(opt)
        assert w.grad.tolist() == [1.0, 1.0]
        with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this"):
            scaler.unscale_(opt)
        scaler.step(opt)  # step after unscale_ works
        with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)"):
            scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match=r"step\(\) has already been called since"):
            scaler.step(opt)
        scaler.update()
        assert w.tolist() == pytest.approx([0.9, 0.9])


def test_clipping_between_unscale_and_step_matches_torch(torch_mod):
    results = []
    for lib in (torch_mod, ember):
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        opt = lib.optim.SGD([w], lr=1.0)
        scaler = lib.amp.GradScaler("cpu", init_scale=256.0)
        scaler.scale((w * w).sum()).backward()  # grad (6, 8), norm 10
        scaler.unscale_(opt)
        norm = lib.nn.utils.clip_grad_norm_([w], max_norm=1.0)
        scaler.step(opt)
        scaler.update()
        results.append((float(norm), w.tolist()))
    assert results[1][0] == pytest.approx(results[0][0])
    assert results[1][1] == pytest.approx(results[0][1], rel=1e-6)
    assert results[1][1] == pytest.approx([2.4, 3.2], rel=1e-5)


def test_several_optimizers_skip_separately_and_share_the_update():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    opt_a, opt_b = ember.optim.SGD([a], lr=0.5), ember.optim.SGD([b], lr=0.5)
    scaler = GradScaler("cpu", init_scale=4.0)
    scaler.scale(a.sum() + (b * math.inf).sum()).backward()
    scaler.step(opt_a)
    scaler.step(opt_b)
    scaler.update()
    assert a.tolist() == [0.5, 0.5] and b.tolist() == [1.0, 1.0]
    assert scaler.get_scale() == 2.0


def test_gradient_accumulation_over_two_backwards():
    w = ember.zeros(2, requires_grad=True)
    opt = ember.optim.SGD([w], lr=1.0)
    scaler = GradScaler("cpu", init_scale=1024.0)
    for k in (1.0, 2.0):
        scaler.scale((w * k).sum()).backward()
    assert w.grad.tolist() == [3072.0, 3072.0]
    scaler.step(opt)
    scaler.update()
    assert w.tolist() == [-3.0, -3.0]


def test_closure_rules(torch_mod):
    for lib in (torch_mod, ember):
        w = lib.ones(1, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        scaler = lib.amp.GradScaler("cpu")
        scaler.scale(w.sum()).backward()
        with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
            scaler.step(opt, closure=lambda: 1.0)
        off = lib.amp.GradScaler("cpu", enabled=False)

        def closure():
            opt.zero_grad()
            loss = w.sum()
            loss.backward()
            return loss

        assert float(off.step(opt, closure).detach()) == 1.0  # disabled: the closure's return value


def test_update_with_new_scale(torch_mod):
    for lib in (torch_mod, ember):
        scaler = lib.amp.GradScaler("cpu")
        scaler.scale(lib.ones(1))
        scaler.update(8.0)
        assert scaler.get_scale() == 8.0
        scaler.update(lib.tensor(16.0))
        assert scaler.get_scale() == 16.0
        with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
            scaler.update(lib.ones(2))
        with pytest.raises(AssertionError, match="No inf checks were recorded prior to update"):
            scaler.update()


def test_scale_before_use_and_fp16_grads_are_errors(torch_mod):
    for lib in (torch_mod, ember):
        scaler = lib.amp.GradScaler("cpu")
        w = lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
            scaler.step(opt)
        scaler.scale(w.sum())
        half = lib.ones(2, dtype=lib.float16, requires_grad=True)
        half.grad = lib.ones(2, dtype=lib.float16)
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
            scaler.unscale_(lib.optim.SGD([half], lr=0.1))


def test_scale_of_nested_outputs():
    scaler = GradScaler("cpu", init_scale=4.0)
    a, b = ember.ones(1), ember.full((2,), 2.0)
    out = scaler.scale([a, (b, a)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    assert [out[0].tolist(), out[1][0].tolist()] == [[4.0], [8.0, 8.0]]
    assert [t.tolist() for t in scaler.scale(t for t in (a, b))] == [[4.0], [8.0, 8.0]]
    assert scaler.scale(ember.ones(1, dtype=ember.bfloat16)).dtype == ember.bfloat16
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale(3.0)


def test_state_dict_round_trip_matches_torch_keys(torch_mod):
    scaler = GradScaler("cpu", init_scale=512.0, growth_interval=7)
    reference = torch_mod.amp.GradScaler("cpu", init_scale=512.0, growth_interval=7)
    assert scaler.state_dict() == reference.state_dict()
    scaler.scale(ember.ones(1))
    scaler.update(64.0)
    state = scaler.state_dict()
    restored = GradScaler("cpu")
    restored.load_state_dict(state)
    assert restored.state_dict() == state
    assert restored.get_scale() == 64.0 and restored.get_growth_interval() == 7
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        restored.load_state_dict({})
    assert GradScaler("cpu", enabled=False).state_dict() == {}


def test_accessors_and_factor_checks(torch_mod):
    scaler = GradScaler("cpu", init_scale=3.0, growth_factor=4.0, backoff_factor=0.25)
    assert (scaler.get_init_scale(), scaler.get_growth_factor()) == (3.0, 4.0)
    scaler.set_growth_factor(3.0)
    scaler.set_backoff_factor(0.5)
    scaler.set_growth_interval(10)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor()) == (3.0, 0.5)
    assert scaler.get_growth_interval() == 10 and scaler.is_enabled()
    for lib in (torch_mod, ember):
        with pytest.raises(AssertionError, match="The growth factor must be > 1.0"):
            lib.amp.GradScaler("cpu", growth_factor=1.0)
        with pytest.raises(AssertionError, match="The backoff factor must be < 1.0"):
            lib.amp.GradScaler("cpu", backoff_factor=1.0)


def test_disabled_scaler_is_a_pass_through():
    scaler = GradScaler("cpu", enabled=False)
    loss = ember.ones(1)
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0
    w = ember.ones(1, requires_grad=True)
    opt = ember.optim.SGD([w], lr=1.0)
    w.sum().backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert w.tolist() == [0.0]


def test_cuda_scaler_without_cuda_warns_and_disables(torch_mod):
    for lib in (torch_mod, ember):
        with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available"):
            scaler = lib.amp.GradScaler()
        assert not scaler.is_enabled() and scaler.get_scale() == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.warns(FutureWarning, match=r"torch.cuda.amp.GradScaler\(args...\)"):
            ember.cuda.amp.GradScaler()
    with pytest.warns(FutureWarning, match=r"torch.amp.GradScaler\('cpu', args...\)"):
        scaler = ember.cpu.amp.GradScaler(init_scale=8.0)
    assert scaler.is_enabled() and scaler.get_scale() == 8.0


# --- a short AMP training run ------------------------------------------------------------------


def _digits_accuracy(amp: bool) -> float:
    from ember import nn

    images, labels = ember.datasets.load_digits()
    x = images.reshape(-1, 64).float() / 16.0
    n_train = 1400
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = GradScaler("cpu", enabled=amp)
    loss_fn = nn.CrossEntropyLoss()
    order = np.random.default_rng(0)
    for _ in range(6):
        perm = order.permutation(n_train)
        for start in range(0, n_train, 64):
            idx = ember.tensor(perm[start : start + 64])
            opt.zero_grad()
            with ember.amp.autocast("cpu", dtype=ember.bfloat16, enabled=amp):
                loss = loss_fn(model(x[idx]), labels[idx])
            assert loss.dtype == ember.float32
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            scaler.step(opt)
            scaler.update()
    with ember.no_grad():
        predicted = model(x[n_train:]).argmax(1)
    return float((predicted == labels[n_train:]).float().mean())


def test_bfloat16_autocast_training_reaches_float32_accuracy():
    # one BLAS thread: small GEMMs gain nothing from more, and lose much on a busy machine
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(1):
        full, mixed = _digits_accuracy(amp=False), _digits_accuracy(amp=True)
    assert full > 0.9
    assert mixed >= full - 0.005
