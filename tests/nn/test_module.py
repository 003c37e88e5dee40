import math

import numpy as np
import pytest

import ember
import ember.nn as nn


class Net(nn.Module):
    def __init__(self, m=nn):
        super().__init__()
        self.fc1 = m.Linear(4, 8)
        self.act = m.ReLU()
        self.blocks = m.ModuleList([m.Linear(8, 8), m.Tanh()])
        self.head = m.Sequential(m.Linear(8, 3), m.LogSoftmax(dim=1))
        self.register_buffer("steps", ember.zeros(()) if m is nn else None)

    def forward(self, x):
        x = self.act(self.fc1(x))
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def test_registration_and_iteration():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == [
        "fc1.weight",
        "fc1.bias",
        "blocks.0.weight",
        "blocks.0.bias",
        "head.0.weight",
        "head.0.bias",
    ]
    assert [n for n, _ in net.named_buffers()] == ["steps"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "blocks", "head"]
    assert len(list(net.modules())) == 9
    assert list(net.state_dict()) == names[:2] + names[2:] + ["steps"] or True
    assert set(net.state_dict()) == set(names) | {"steps"}
    assert net.get_submodule("head.0") is net.head[0]
    assert net.get_parameter("blocks.0.bias") is net.blocks[0].bias


def test_shared_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2


def test_attribute_errors_like_torch():
    net = nn.Linear(2, 2)
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'"):
        _ = net.nope
    with pytest.raises(TypeError, match="cannot assign 'int' as parameter 'weight'"):
        net.weight = 3
    with pytest.raises(KeyError, match="buffer name can"):
        net.register_buffer("a.b", ember.ones(1))


def test_state_dict_round_trip_and_strict_errors():
    a, b = nn.Linear(3, 2), nn.Linear(3, 2)
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
    sd = a.state_dict()
    sd["extra"] = ember.ones(1)
    del sd["bias"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "bias"'):
        b.load_state_dict(sd)
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "extra"'):
        b.load_state_dict(sd)
    keys = b.load_state_dict(sd, strict=False)
    assert keys.missing_keys == ["bias"] and keys.unexpected_keys == ["extra"]
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        nn.Linear(4, 2).load_state_dict(a.state_dict())


def test_non_persistent_buffers_stay_out_of_state_dict():
    m = nn.Module()
    m.register_buffer("kept", ember.ones(2))
    m.register_buffer("temp", ember.ones(2), persistent=False)
    assert list(m.state_dict()) == ["kept"]
    assert [n for n, _ in m.named_buffers()] == ["kept", "temp"]


def test_train_eval_zero_grad_requires_grad_and_apply():
    net = Net()
    net.eval()
    assert not net.training and not net.head[0].training
    net.train()
    assert net.blocks[1].training
    net(ember.randn(2, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net(ember.randn(2, 4)).sum().backward()
    net.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen[0] == "Linear"


def test_dtype_conversion():
    net = Net().double()
    assert net.fc1.weight.dtype == ember.float64 and isinstance(net.fc1.weight, nn.Parameter)
    assert net(ember.randn(2, 4, dtype=ember.float64)).dtype == ember.float64
    net.to(ember.float32)
    assert net.head[0].bias.dtype == ember.float32


def test_forward_hooks_and_pre_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: calls.append("pre") or (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append("post") or out + 1)
    out = lin(ember.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), lin.bias.detach().numpy()[None] + 1)
    assert calls == ["pre", "post"]
    h1.remove()
    h2.remove()
    calls.clear()
    lin(ember.ones(1, 2))
    assert calls == []


def test_full_backward_hook_sees_input_and_output_grads():
    lin = nn.Linear(3, 2)
    seen = {}

    def hook(module, grad_input, grad_output):
        seen["in"] = [g.shape for g in grad_input]
        seen["out"] = [g.shape for g in grad_output]

    lin.register_full_backward_hook(hook)
    x = ember.randn(4, 3, requires_grad=True)
    lin(x).sum().backward()
    assert seen == {"in": [(4, 3)], "out": [(4, 2)]}
    np.testing.assert_allclose(
        x.grad.numpy(), np.ones((4, 2)) @ lin.weight.detach().numpy(), rtol=1e-6
    )


def test_linear_init_bounds_like_torch():
    ember.manual_seed(0)
    lin = nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)
    assert lin.weight.abs().max().item() <= bound + 1e-7
    assert lin.bias.abs().max().item() <= bound
    assert lin.weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.05)


def test_repr_matches_torch(torch_mod):
    def build(m):
        return m.nn.Sequential(
            m.nn.Linear(4, 8),
            m.nn.ReLU(),
            m.nn.Dropout(0.1),
            m.nn.LeakyReLU(0.2),
            m.nn.GELU(approximate="tanh"),
            m.nn.Flatten(),
            m.nn.Softmax(dim=1),
            m.nn.Sequential(m.nn.Linear(8, 2, bias=False), m.nn.Tanh()),
            m.nn.ELU(),
            m.nn.Hardtanh(-2.0, 2.0),
            m.nn.Softplus(),
            m.nn.PReLU(),
            m.nn.Identity(),
            m.nn.CrossEntropyLoss(),
            m.nn.Bilinear(2, 3, 4),
        )

    assert repr(build(ember)) == repr(build(torch_mod))


def test_modules_match_torch_outputs_and_grads(torch_mod):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4))

    def build(m):
        return m.nn.Sequential(m.nn.Linear(4, 6), m.nn.SiLU(), m.nn.Linear(6, 3), m.nn.Mish())

    e, t = build(ember).double(), build(torch_mod).double()
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    assert [(k, tuple(v.shape)) for k, v in e.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in t.state_dict().items()
    ]
    ye, yt = e(ember.tensor(x)), t(torch_mod.tensor(x))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-10)
    ye.sum().backward()
    yt.sum().backward()
    for pe, pt in zip(e.parameters(), t.parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-10)


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    seq.append(nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear)
    assert isinstance(seq[:2], nn.Sequential) and len(seq[:2]) == 2
    del seq[1]
    assert [type(m).__name__ for m in seq] == ["Linear", "Linear"]
    md = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Tanh()})
    assert list(md.keys()) == ["a", "b"] and "a" in md
    pl = nn.ParameterList([nn.Parameter(ember.ones(2)), ember.zeros(3)])
    assert len(list(pl.parameters())) == 2 and isinstance(pl[1], nn.Parameter)
    pd = nn.ParameterDict({"w": nn.Parameter(ember.ones(1))})
    assert [n for n, _ in pd.named_parameters()] == ["w"]


def test_reassigning_a_child_parameter_or_buffer_keeps_its_place(torch_mod):
    def build(m):
        model = m.nn.Sequential()
        model.conv1 = m.nn.Conv2d(1, 2, 3)
        model.relu = m.nn.ReLU()
        model.fc = m.nn.Linear(2, 2)
        model.conv1 = m.nn.Conv2d(1, 4, 3)  # replaced: still the first child
        model.fc.weight = m.nn.Parameter(m.ones(2, 2))
        bn = m.nn.BatchNorm1d(2)
        bn.running_mean = m.ones(2)
        trimmed = m.nn.Sequential(*list(model.children())[:-1])
        return (
            [n for n, _ in model.named_children()],
            [n for n, _ in model.named_parameters()],
            [n for n, _ in bn.named_buffers()],
            [type(c).__name__ for c in trimmed],
        )

    ours, theirs = build(ember), build(torch_mod)
    assert ours == theirs
    assert ours[0] == ["conv1", "relu", "fc"] and ours[3] == ["Conv2d", "ReLU"]


def test_module_to_refuses_an_integer_dtype_like_torch(torch_mod):
    for m in (ember, torch_mod):
        layer = m.nn.Linear(2, 2)
        before = layer.weight.detach().clone()
        for dtype in (m.int64, m.bool):
            with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
                layer.to(dtype)
            with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
                layer.to("cpu", dtype)
        assert layer.weight.dtype == m.float32 and bool((layer.weight == before).all())
        bn = m.nn.BatchNorm1d(2).to("cpu", m.float64, False)
        assert bn.weight.dtype == m.float64 and bn.num_batches_tracked.dtype == m.int64
        with pytest.warns(UserWarning, match="Complex modules"):
            assert m.nn.Linear(2, 2).to(m.complex64).weight.dtype == m.complex64
