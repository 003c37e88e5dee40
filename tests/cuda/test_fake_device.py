"""Whole programs on ``cuda`` tensors over the fake CuPy (or a real GPU with EMBER_REAL_CUDA=1):
each equals the same program on the CPU.

The fake refuses NumPy arrays as operands and implicit conversion to NumPy, as CuPy does, so
an op that reaches for ``numpy`` instead of its array's module fails here as on a GPU.
"""

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from tests import _fake_cupy


def _host(value):
    if isinstance(value, ember.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, (list, tuple)):
        return [_host(v) for v in value]
    return value


def run_on_both(program, rtol=1e-6, atol=1e-6):
    """``program(device)`` on the CPU and on the fake GPU from the same seed; results equal."""
    results = {}
    for device in ("cpu", "cuda"):
        ember.manual_seed(0)
        results[device] = program(device)
    cpu, cuda = results["cpu"], results["cuda"]
    assert len(cpu) == len(cuda)
    for a, b in zip(cpu, cuda):
        assert isinstance(b, ember.Tensor) and b.device == ember.device("cuda:0")
        np.testing.assert_allclose(_host(b), _host(a), rtol=rtol, atol=atol)
    return cpu, cuda


def _train(model, optimizer, x, y, steps=3, loss_fn=F.cross_entropy):
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    return loss


# --- training programs ----------------------------------------------------------------------


@pytest.mark.parametrize("optimizer", ["sgd_momentum", "adam"])
def test_mlp_trains_on_cuda_as_on_cpu(cuda_device, optimizer):
    def program(device):
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
        if optimizer == "adam":
            opt = ember.optim.Adam(model.parameters(), lr=0.01)
        else:
            opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x = ember.randn(8, 6).to(device)
        y = ember.tensor([0, 1, 2, 0, 1, 2, 0, 1]).to(device)
        loss = _train(model, opt, x, y)
        state = next(iter(opt.state.values()))
        assert all(v.device == model[0].weight.device for v in state.values() if v.dim())
        return [loss, *model.parameters()]

    run_on_both(program)


def test_cnn_with_batch_norm_pooling_and_dropout(cuda_device):
    def program(device):
        model = nn.Sequential(
            nn.Conv2d(2, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Dropout(0.3),
            nn.Conv2d(4, 4, 3),
            nn.AvgPool2d(2, ceil_mode=True),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(4, 3),
        ).to(device)
        # SGD: the CPU's Adam rounds as torch's FMA kernels, CuPy's as plain ops, and Adam
        # turns those last-bit differences of near-zero gradients into visible ones
        opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
        x = ember.randn(4, 2, 8, 8).to(device)
        y = ember.tensor([0, 1, 2, 1]).to(device)
        loss = _train(model, opt, x, y, steps=2)
        return [loss, model[1].running_mean, model[1].running_var, *model.parameters()]

    run_on_both(program, rtol=1e-5, atol=1e-6)


def test_max_pool_indices_stay_on_the_device(cuda_device):
    x = ember.randn(1, 1, 4, 4, device="cuda")
    out, indices = F.max_pool2d(x, 2, return_indices=True)
    assert out.device == indices.device == ember.device("cuda:0")
    assert indices.dtype == ember.int64
    back = F.max_unpool2d(out, indices, 2)
    assert back.device == x.device


def test_lstm_and_gru_train_on_cuda_as_on_cpu(cuda_device):
    def program(device):
        lstm = nn.LSTM(3, 5, num_layers=2, batch_first=True).to(device)
        gru = nn.GRU(5, 4).to(device)
        opt = ember.optim.SGD([*lstm.parameters(), *gru.parameters()], lr=0.1)
        x = ember.randn(2, 6, 3).to(device)
        out, (h, c) = lstm(x)
        out2, h2 = gru(out.transpose(0, 1))
        loss = out2.pow(2).mean() + h.sum() + c.mean()
        loss.backward()
        opt.step()
        return [loss, out2, h2, *lstm.parameters()]

    run_on_both(program, rtol=1e-5)


def test_transformer_encoder_layer_trains_on_cuda_as_on_cpu(cuda_device):
    def program(device):
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True).to(device)
        # SGD: the key bias's gradient is zero up to rounding, which Adam would blow up to ±lr
        opt = ember.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
        x = ember.randn(2, 5, 8).to(device)
        mask = nn.Transformer.generate_square_subsequent_mask(5).to(device)
        out = layer(x, src_mask=mask)
        loss = out.pow(2).mean()
        loss.backward()
        opt.step()
        return [loss, out, *layer.parameters()]

    run_on_both(program, rtol=1e-5, atol=1e-6)


def test_autocast_and_grad_scaler_on_cuda(cuda_device):
    def program(device):
        model = nn.Linear(4, 3).to(device)
        opt = ember.optim.SGD(model.parameters(), lr=0.1)
        scaler = ember.amp.GradScaler(device)
        x = ember.randn(5, 4).to(device)
        y = ember.tensor([0, 1, 2, 0, 1]).to(device)
        with ember.autocast(device, dtype=ember.float16):
            out = model(x)
            loss = F.cross_entropy(out, y)
        assert out.dtype == ember.float16 and loss.dtype == ember.float32
        scaler.scale(loss).backward()
        assert model.weight.grad.dtype == ember.float32
        scaler.step(opt)
        scaler.update()
        return [loss, model.weight, model.bias]

    run_on_both(program, rtol=1e-3, atol=1e-4)


def test_common_ops_and_their_gradients_match_cpu(cuda_device):
    def program(device):
        x = ember.randn(3, 4).to(device).requires_grad_()
        idx = ember.tensor([2, 0]).to(device)
        parts = [
            F.gelu(F.layer_norm(x, (4,))),
            F.gelu(x, approximate="tanh"),
            F.softmax(x, -1) + F.log_softmax(x, 0),
            x.sigmoid() * x.tanh() + x.abs().sqrt(),
            ember.cat([x, x * 2]).max(0).values.expand(3, 4),
            ember.where(x > 0, x, x.exp() - 1) + x.clamp(-0.5, 0.5),
            x.index_select(0, idx).sum(0).expand(3, 4) + x.cumsum(1),
            x.topk(2, dim=1).values.sum(1, keepdim=True) + x.logsumexp(1, keepdim=True),
            x @ x.t() @ x + ember.erf(x),
        ]
        total = sum(p.sum() for p in parts)
        loss = (
            total
            + F.mse_loss(x, x.detach() * 0.5)
            + F.binary_cross_entropy_with_logits(x, x.detach().sigmoid())
            + F.nll_loss(x.log_softmax(1), ember.tensor([0, 1, 3]).to(device))
            + F.smooth_l1_loss(x, x.detach().flip(0))
        )
        loss.backward()
        return [loss, x.grad, *parts]

    run_on_both(program, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "name", ["RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta", "Adam_amsgrad"]
)
def test_optimizers_step_on_cuda_as_on_cpu(cuda_device, name):
    def program(device):
        p = nn.Parameter(ember.randn(4).to(device))
        if name == "Adam_amsgrad":
            opt = ember.optim.Adam([p], lr=0.1, amsgrad=True, weight_decay=0.1)
        else:
            opt = getattr(ember.optim, name)([p], lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            (p**2).sum().backward()
            opt.step()
        nn.utils.clip_grad_norm_([p], 0.5)
        return [p, p.grad]

    run_on_both(program, rtol=1e-5)


# --- moving tensors and modules -------------------------------------------------------------


def test_to_cuda_and_back(cuda_device):
    x = ember.arange(6.0).reshape(2, 3)
    for y in (x.to("cuda"), x.cuda(), x.to(ember.device("cuda", 0)), x.to("cuda", ember.float64)):
        assert y.is_cuda and y.device == ember.device("cuda:0") and str(y.device) == "cuda:0"
        assert type(y._data) is cuda_device.ndarray
        assert y.cpu().tolist() == x.tolist()
    assert x.cuda().to(ember.float64).dtype == ember.float64
    assert x.to("cuda", ember.float64).dtype == ember.float64
    y = x.cuda()
    assert y.cuda() is y and y.to("cuda:0") is y
    assert not y.cpu().is_cuda and y.cpu().device == ember.device("cpu")
    z = ember.zeros(2, device="cuda")
    assert z.device.type == "cuda" and ember.zeros_like(z).is_cuda
    assert ember.ones(2, device="cuda:0").is_cuda
    with pytest.raises(TypeError, match="cuda:0 device type tensor to numpy"):
        y.numpy()
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(y._data)


def test_to_cuda_without_index_keeps_a_tensor_on_the_current_device(cuda_device):
    y = ember.ones(2, device="cuda:0")
    assert y.to("cuda") is y and y.cuda() is y  # torch: no copy, "cuda" is the current device
    ember.cuda.set_device(1)
    try:
        assert ember._backend.current_cuda_device() == ember.device("cuda:1")
        assert y.to("cuda") is not y and y.cuda() is not y  # copied to the current GPU
        assert y.cuda(0) is y and y.to("cuda:0") is y
    finally:
        ember.cuda.set_device(0)


def test_module_to_moves_parameters_buffers_and_grads(cuda_device):
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    model(ember.randn(4, 2)).sum().backward()
    model.to("cuda")
    for t in [*model.parameters(), *model.buffers()]:
        assert t.is_cuda
    assert all(p.grad.is_cuda for p in model.parameters())
    assert isinstance(model[0].weight, nn.Parameter)
    model.cpu()
    assert not any(p.is_cuda for p in model.parameters())


def test_state_dict_of_cuda_tensors_saves_and_loads(cuda_device, tmp_path):
    model = nn.Linear(3, 2).cuda()
    path = tmp_path / "model.pt"
    ember.save(model.state_dict(), path)
    on_cpu = ember.load(path, map_location="cpu")
    assert on_cpu["weight"].device == ember.device("cpu")
    np.testing.assert_array_equal(on_cpu["weight"].numpy(), model.weight.detach().cpu().numpy())
    on_gpu = ember.load(path, map_location="cuda")
    assert on_gpu["weight"].is_cuda
    fresh = nn.Linear(3, 2).cuda()
    fresh.load_state_dict(on_cpu)  # copies the CPU values into the CUDA parameters
    assert fresh.weight.is_cuda
    np.testing.assert_array_equal(fresh.weight.detach().cpu().numpy(), on_cpu["weight"].numpy())


def test_load_without_map_location_restores_cuda_tensors_as_torch(cuda_device, tmp_path):
    # torch records each storage's location ("cuda:0") and load puts it back there
    ember.save({"w": ember.ones(2, device="cuda")}, tmp_path / "w.pt")
    assert ember.load(tmp_path / "w.pt")["w"].is_cuda


def test_dataloader_pin_memory_and_non_blocking_copy(cuda_device):
    data = ember.utils.data.TensorDataset(ember.randn(6, 2), ember.arange(6))
    loader = ember.utils.data.DataLoader(data, batch_size=4, pin_memory=True)
    seen = []
    for xb, yb in loader:
        xb, yb = xb.to("cuda", non_blocking=True), yb.cuda(non_blocking=True)
        assert xb.is_cuda and yb.is_cuda
        seen.append(yb.cpu())
    assert ember.cat(seen).tolist() == list(range(6))


# --- mixing devices -------------------------------------------------------------------------

_SAME_DEVICE = "Expected all tensors to be on the same device, but found at least two devices"


def _mixes():
    cpu, gpu = ember.randn(2, 2), ember.randn(2, 2, device="cuda")
    return {
        "add": lambda: cpu + gpu,
        "mul_reflected": lambda: gpu * cpu,
        "matmul": lambda: cpu @ gpu,
        "cat": lambda: ember.cat([gpu, cpu]),
        "index_select": lambda: gpu.index_select(0, ember.tensor([0])),
        "cross_entropy_target_on_cpu": lambda: F.cross_entropy(gpu, ember.tensor([0, 1])),
        "linear_weight_on_cpu": lambda: F.linear(gpu, cpu),
    }


@pytest.mark.parametrize(
    "op",
    [
        "add",
        "mul_reflected",
        "matmul",
        "cat",
        "index_select",
        "cross_entropy_target_on_cpu",
        "linear_weight_on_cpu",
    ],
)
def test_mixing_devices_raises_torchs_error(cuda_device, op):
    with pytest.raises(RuntimeError, match=_SAME_DEVICE):
        _mixes()[op]()


# --- memory and the strict array type --------------------------------------------------------


def test_memory_accounting_through_the_fake_pool(fake_cuda):
    cuda = ember.cuda
    cuda.reset_peak_memory_stats()
    before = cuda.memory_allocated()
    x = ember.zeros(1000, device="cuda")
    assert cuda.memory_allocated() == before + 4000
    y = x * 2
    assert cuda.memory_allocated() == before + 8000
    del x, y
    assert cuda.memory_allocated() == before
    assert cuda.max_memory_allocated() >= before + 8000
    assert cuda.memory_stats()["allocated_bytes.all.peak"] >= before + 8000


def test_fake_refuses_numpy_operands_like_cupy(fake_cuda):
    a = fake_cuda.asarray([1.0, 2.0])
    with pytest.raises(TypeError, match="Unsupported type"):
        a + np.ones(2)
    with pytest.raises(TypeError, match="Unsupported type"):
        fake_cuda.concatenate([a, np.ones(2)])
    assert isinstance(a.sum(), _fake_cupy.ndarray) and a.sum().ndim == 0  # 0-d, as CuPy
    assert fake_cuda.asnumpy(a * 2).tolist() == [2.0, 4.0]


def test_python_number_cache_is_not_shared_with_cuda(cuda_device):
    ember.ones(2) * 0.25  # caches a 0-d NumPy array for (0.25, float32)
    assert (ember.ones(2, device="cuda") * 0.25).cpu().tolist() == [0.25, 0.25]
    assert (ember.ones(2, device="cuda") + 0.25).cpu().tolist() == [1.25, 1.25]


def test_backward_and_inplace_work_without_flags_writeable(strict_fake_cuda):
    w = ember.randn(3, device="cuda", requires_grad=True)
    (w * 2).sum().backward()
    (w * 3).sum().backward()  # accumulates in place
    assert w.grad.cpu().tolist() == [5.0, 5.0, 5.0]
    x = ember.zeros(3, device="cuda")
    x.add_(1.0)
    assert x.cpu().tolist() == [1.0, 1.0, 1.0]


def test_convolution_with_weight_or_bias_on_another_device_raises(cuda_device):
    x, w = ember.randn(1, 1, 4, 4, device="cuda"), ember.randn(2, 1, 3, 3)
    with pytest.raises(RuntimeError, match=r"\(ember.cuda.FloatTensor\) and weight type \(ember"):
        F.conv2d(x, w)
    with pytest.raises(RuntimeError, match="and bias type .* should be the same"):
        F.conv2d(x, w.cuda(), ember.zeros(2))
    with pytest.raises(RuntimeError, match="and weight type .* should be the same"):
        F.conv_transpose2d(x.cpu(), ember.randn(1, 2, 3, 3, device="cuda"))
    assert F.conv2d(x, w.cuda(), ember.zeros(2, device="cuda")).is_cuda


def test_a_zero_dim_cpu_tensor_joins_cuda_ops_as_a_scalar_as_torch(cuda_device):
    x = ember.ones(2, device="cuda", requires_grad=True)
    scale = ember.tensor(3.0, requires_grad=True)
    y = x * scale + ember.tensor(1.0)
    assert y.is_cuda and y.cpu().tolist() == [4.0, 4.0]
    y.sum().backward()
    assert scale.grad.device == ember.device("cpu") and scale.grad.item() == 2.0
    with pytest.raises(RuntimeError, match=_SAME_DEVICE):
        x + ember.ones(1)  # one element, but not 0-d: torch refuses it too


def test_data_ptr_of_a_cuda_tensor_is_its_device_address(cuda_device):
    x = ember.arange(4.0, device="cuda")
    assert x.data_ptr() == x._data.data.ptr != 0
    assert x[1:].data_ptr() == x.data_ptr() + 4  # a view starts inside its base
