"""The meta device as PyTorch users use it: factories, ops, modules and autograd give shapes
and dtypes without data; reading values raises torch's errors. Shapes, dtypes and messages are
compared with torch where it is importable."""

import tracemalloc
import warnings

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


def _signature(t):
    return (tuple(t.shape), str(t.dtype).split(".")[-1], t.device.type)


# --- factories ----------------------------------------------------------------------------------
FACTORIES = {
    "empty": lambda lib: lib.empty(3, 4, device="meta"),
    "zeros": lambda lib: lib.zeros(2, 3, device="meta", dtype=lib.float64),
    "ones": lambda lib: lib.ones((5,), device="meta", dtype=lib.int32),
    "full": lambda lib: lib.full((2, 2), 7, device="meta"),
    "full_float": lambda lib: lib.full((2, 2), 7.5, device="meta"),
    "arange": lambda lib: lib.arange(5, device="meta"),
    "arange_float": lambda lib: lib.arange(0, 1, 0.25, device="meta"),
    "randn": lambda lib: lib.randn(2, 3, device="meta"),
    "rand": lambda lib: lib.rand(4, device="meta", dtype=lib.float64),
    "randint": lambda lib: lib.randint(0, 10, (3, 2), device="meta"),
    "randperm": lambda lib: lib.randperm(6, device="meta"),
    "eye": lambda lib: lib.eye(3, 4, device="meta"),
    "empty_like": lambda lib: lib.empty_like(lib.empty(2, 5, device="meta")),
    "zeros_like": lambda lib: lib.zeros_like(lib.empty(2, 5, device="meta", dtype=lib.float16)),
    "ones_like_cpu": lambda lib: lib.ones_like(lib.ones(2, 5), device="meta"),
    "randn_like": lambda lib: lib.randn_like(lib.empty(2, 5, device="meta")),
    "tensor": lambda lib: lib.tensor([1.0, 2.0], device="meta"),
    "to_meta": lambda lib: lib.ones(3, 2).to("meta"),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factory_on_meta_gives_torchs_shape_and_dtype(name, torch_mod):
    make = FACTORIES[name]
    assert _signature(make(ember)) == _signature(make(torch_mod))


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factory_on_meta_is_meta(name):
    t = FACTORIES[name](ember)
    assert t.is_meta and t.device.type == "meta" and t.device == ember.device("meta")


def test_default_device_context_puts_factories_on_meta():
    with ember.device("meta"):
        t = ember.randn(2, 3)
    assert t.is_meta
    assert not ember.randn(2).is_meta


def test_random_factories_on_meta_leave_the_generator_alone():
    ember.manual_seed(3)
    expected = ember.rand(4)
    ember.manual_seed(3)
    ember.randn(1000, device="meta")
    ember.empty(3, 3, device="meta").uniform_()
    assert ember.equal(ember.rand(4), expected)


def test_device_object():
    d = ember.device("meta")
    assert d.type == "meta" and d.index is None
    assert repr(d) == "device(type='meta')" and str(d) == "meta"


# --- printing, values and strides -----------------------------------------------------------
REPRS = {
    "plain": (lambda lib: lib.empty(3, 4, device="meta")),
    "int64": (lambda lib: lib.arange(5, device="meta")),
    "float64": (lambda lib: lib.empty(2, device="meta", dtype=lib.float64)),
    "scalar": (lambda lib: lib.empty((), device="meta")),
    "empty": (lambda lib: lib.empty(0, device="meta")),
    "requires_grad": (lambda lib: lib.randn(2, device="meta", requires_grad=True)),
    "grad_fn": (lambda lib: lib.randn(2, device="meta", requires_grad=True) * 2),
}


@pytest.mark.parametrize("name", sorted(REPRS))
def test_repr_as_torch_prints_it(name, torch_mod):
    ours = repr(REPRS[name](ember)).replace("ember.", "torch.")
    assert ours == repr(REPRS[name](torch_mod))


def test_repr_of_a_meta_tensor():
    t = ember.empty(3, 4, device="meta")
    assert repr(t) == str(t) == "tensor(..., device='meta', size=(3, 4))"
    p = nn.Linear(4, 2, device="meta").weight
    assert repr(p) == (
        "Parameter containing:\ntensor(..., device='meta', size=(2, 4), requires_grad=True)"
    )


READS = {
    "item": (lambda t: t.item(), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    "bool": (lambda t: bool(t), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    "float": (lambda t: float(t), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    "int": (lambda t: int(t), RuntimeError, "Tensor.item() cannot be called on meta tensors"),
    "tolist": (lambda t: t.tolist(), NotImplementedError, "Cannot copy out of meta tensor"),
    "cpu": (lambda t: t.cpu(), NotImplementedError, "Cannot copy out of meta tensor; no data!"),
    "to_cpu": (lambda t: t.to("cpu"), NotImplementedError, "Cannot copy out of meta tensor"),
    "numpy": (
        lambda t: t.numpy(),
        TypeError,
        "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
        "to host memory first.",
    ),
}


@pytest.mark.parametrize("name", sorted(READS))
def test_reading_values_raises_torchs_error(name, torch_mod):
    read, error, message = READS[name]
    for lib in (ember, torch_mod):
        with pytest.raises(error) as info:
            read(lib.empty((), device="meta"))
        assert message in str(info.value)


@pytest.mark.parametrize("name", sorted(READS))
def test_reading_values_raises(name):
    read, error, message = READS[name]
    with pytest.raises(error, match=message.split(".")[0].replace("(", r"\(").replace(")", r"\)")):
        read(ember.empty((), device="meta"))


def test_copying_a_meta_tensor_into_a_cpu_one_raises_and_the_reverse_is_a_no_op():
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        ember.ones(2).copy_(ember.empty(2, device="meta"))
    t = ember.empty(2, device="meta")
    assert t.copy_(ember.ones(2)) is t and t.is_meta


def test_strides_and_memory_facts(torch_mod):
    for lib in (ember, torch_mod):
        t = lib.empty(3, 0, 4, device="meta")
        assert t.stride() == (4, 4, 1)
        u = lib.empty(3, 4, device="meta")
        assert u.is_contiguous() and u.data_ptr() == 0
        assert u.nbytes == 48 and u.element_size() == 4 and u.numel() == 12


# --- ops ------------------------------------------------------------------------------------------
def _meta(lib, *shape, dtype=None):
    return lib.empty(*shape, device="meta", dtype=dtype)


OPS = {
    "add_broadcast": lambda lib: _meta(lib, 3, 1) + _meta(lib, 4),
    "mul_scalar": lambda lib: _meta(lib, 3, 4) * 2.5,
    "int_plus_float": lambda lib: _meta(lib, 3, dtype=lib.int64) + 1.5,
    "int_div": lambda lib: _meta(lib, 3, dtype=lib.int32) / 2,
    "half_times_double": lambda lib: (
        _meta(lib, 3, dtype=lib.float16) * _meta(lib, 3, dtype=lib.float64)
    ),
    "cpu_scalar_tensor": lambda lib: _meta(lib, 3, 4) + lib.tensor(2.0),
    "compare": lambda lib: _meta(lib, 3, 4) > 0,
    "where": lambda lib: lib.where(_meta(lib, 3, 1) > 0, _meta(lib, 4), 0.0),
    "exp": lambda lib: _meta(lib, 2, 3).exp(),
    "sqrt_int": lambda lib: _meta(lib, 2, dtype=lib.int64).sqrt(),
    "erf": lambda lib: lib.erf(_meta(lib, 5)),
    "clamp": lambda lib: _meta(lib, 5).clamp(0, 1),
    "matmul": lambda lib: _meta(lib, 3, 4) @ _meta(lib, 4, 5),
    "matmul_batched": lambda lib: _meta(lib, 2, 1, 3, 4) @ _meta(lib, 5, 4, 6),
    "matmul_vector": lambda lib: _meta(lib, 3, 4) @ _meta(lib, 4),
    "bmm": lambda lib: lib.bmm(_meta(lib, 2, 3, 4), _meta(lib, 2, 4, 5)),
    "einsum": lambda lib: lib.einsum("bij,bjk->bik", _meta(lib, 2, 3, 4), _meta(lib, 2, 4, 5)),
    "linear": lambda lib: (
        F.linear(_meta(lib, 7, 3, 4), _meta(lib, 5, 4), _meta(lib, 5))
        if lib is ember
        else lib.nn.functional.linear(_meta(lib, 7, 3, 4), _meta(lib, 5, 4), _meta(lib, 5))
    ),
    "sum": lambda lib: _meta(lib, 3, 4).sum(),
    "sum_int": lambda lib: _meta(lib, 3, 4, dtype=lib.int32).sum(1),
    "mean_keepdim": lambda lib: _meta(lib, 3, 4, 5).mean((0, 2), keepdim=True),
    "max_dim": lambda lib: _meta(lib, 3, 4).max(dim=1)[0],
    "argmax": lambda lib: _meta(lib, 3, 4).argmax(-1),
    "std": lambda lib: _meta(lib, 3, 4).std(0),
    "cumsum": lambda lib: _meta(lib, 3, 4).cumsum(1),
    "softmax": lambda lib: _meta(lib, 2, 5).softmax(-1),
    "log_softmax_double": lambda lib: _meta(lib, 2, 5, dtype=lib.float64).log_softmax(0),
    "reshape": lambda lib: _meta(lib, 2, 3, 4).reshape(6, -1),
    "view": lambda lib: _meta(lib, 2, 3, 4).view(-1),
    "transpose": lambda lib: _meta(lib, 2, 3, 4).transpose(0, 2),
    "permute": lambda lib: _meta(lib, 2, 3, 4).permute(2, 0, 1),
    "flatten": lambda lib: _meta(lib, 2, 3, 4).flatten(1),
    "unsqueeze": lambda lib: _meta(lib, 2, 3).unsqueeze(1),
    "expand": lambda lib: _meta(lib, 3, 1).expand(2, 3, 5),
    "contiguous": lambda lib: _meta(lib, 3, 4).t().contiguous(),
    "cat": lambda lib: lib.cat([_meta(lib, 2, 3), _meta(lib, 4, 3)]),
    "stack": lambda lib: lib.stack([_meta(lib, 2, 3), _meta(lib, 2, 3)], dim=1),
    "split": lambda lib: _meta(lib, 5, 3).split(2)[-1],
    "chunk": lambda lib: _meta(lib, 6, 3).chunk(3, dim=0)[1],
    "slice": lambda lib: _meta(lib, 5, 6)[1:, ::2],
    "index_int": lambda lib: _meta(lib, 5, 6)[2],
    "index_none_ellipsis": lambda lib: _meta(lib, 5, 6)[None, ..., 1],
    "index_tensor": lambda lib: _meta(lib, 5, 6)[lib.tensor([0, 2, 4], device="meta")],
    "index_two_tensors": lambda lib: _meta(lib, 5, 6, 7)[
        :,
        lib.zeros(2, 3, dtype=lib.int64, device="meta"),
        lib.zeros(3, dtype=lib.int64, device="meta"),
    ],
    "gather": lambda lib: _meta(lib, 4, 5).gather(
        1, lib.zeros(4, 2, dtype=lib.int64, device="meta")
    ),
    "index_select": lambda lib: _meta(lib, 4, 5).index_select(
        0, lib.zeros(3, dtype=lib.int64, device="meta")
    ),
    "pad": lambda lib: (F if lib is ember else lib.nn.functional).pad(_meta(lib, 1, 2, 3), (1, 2)),
    "to_double": lambda lib: _meta(lib, 3).double(),
    "layer_norm": lambda lib: (F if lib is ember else lib.nn.functional).layer_norm(
        _meta(lib, 2, 3, 4), (4,)
    ),
    "embedding": lambda lib: (F if lib is ember else lib.nn.functional).embedding(
        lib.zeros(2, 7, dtype=lib.int64, device="meta"), _meta(lib, 10, 4)
    ),
    "conv2d": lambda lib: (F if lib is ember else lib.nn.functional).conv2d(
        _meta(lib, 2, 3, 16, 16), _meta(lib, 8, 3, 3, 3), stride=2, padding=1
    ),
    "max_pool2d": lambda lib: (F if lib is ember else lib.nn.functional).max_pool2d(
        _meta(lib, 2, 3, 16, 16), 2
    ),
    "gelu": lambda lib: (F if lib is ember else lib.nn.functional).gelu(_meta(lib, 3, 4)),
    "cross_entropy": lambda lib: (F if lib is ember else lib.nn.functional).cross_entropy(
        _meta(lib, 4, 5), lib.zeros(4, dtype=lib.int64, device="meta")
    ),
    "mse_loss": lambda lib: (F if lib is ember else lib.nn.functional).mse_loss(
        _meta(lib, 4, 5), _meta(lib, 4, 5)
    ),
    "topk": lambda lib: _meta(lib, 4, 6).topk(3, dim=1).indices,
    "tril": lambda lib: _meta(lib, 4, 6).tril(1),
    "lgamma": lambda lib: lib.lgamma(_meta(lib, 3, 4)),
    "digamma": lambda lib: lib.digamma(_meta(lib, 3, 4)),
    "erfinv": lambda lib: lib.erfinv(_meta(lib, 3, 4)),
    "i0": lambda lib: lib.i0(_meta(lib, 3, 4, dtype=lib.float64)),
    "xlogy": lambda lib: lib.xlogy(_meta(lib, 3, 1), _meta(lib, 4)),
    "count_nonzero": lambda lib: lib.count_nonzero(_meta(lib, 3, 4), dim=1),
    "isclose": lambda lib: lib.isclose(_meta(lib, 3, 4), _meta(lib, 4)),
    "searchsorted": lambda lib: lib.searchsorted(_meta(lib, 5), _meta(lib, 2, 3)),
    "one_hot": lambda lib: (F if lib is ember else lib.nn.functional).one_hot(
        lib.zeros(3, dtype=lib.int64, device="meta"), 10
    ),
    "sdpa": lambda lib: (F if lib is ember else lib.nn.functional).scaled_dot_product_attention(
        _meta(lib, 2, 4, 6, 8), _meta(lib, 2, 4, 6, 8), _meta(lib, 2, 4, 6, 8), is_causal=True
    ),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_on_meta_gives_torchs_shape_and_dtype(name, torch_mod):
    assert _signature(OPS[name](ember)) == _signature(OPS[name](torch_mod))


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_on_meta_stays_on_meta(name):
    assert OPS[name](ember).is_meta


SHAPE_ERRORS = {
    "matmul": lambda lib, make: make(lib, 3, 4) @ make(lib, 5, 2),
    "broadcast": lambda lib, make: make(lib, 3) + make(lib, 4),
    "cat": lambda lib, make: lib.cat([make(lib, 3, 4), make(lib, 3, 5)]),
    "view": lambda lib, make: make(lib, 3, 4).view(5, -1),
}


def _cpu(lib, *shape):
    return lib.ones(*shape)


@pytest.mark.parametrize("name", sorted(SHAPE_ERRORS))
def test_shape_errors_on_meta_are_the_cpu_ones(name, torch_mod):
    """The same check runs on meta as on the CPU: ember gives its CPU message (torch's meta
    kernels word some differently), of the type torch raises on meta."""
    bad = SHAPE_ERRORS[name]
    with pytest.raises(RuntimeError) as on_cpu:
        bad(ember, _cpu)
    with pytest.raises(RuntimeError) as on_meta:
        bad(ember, _meta)
    assert str(on_meta.value) == str(on_cpu.value)
    with pytest.raises(RuntimeError):
        bad(torch_mod, _meta)


MIXES = {
    "meta_plus_cpu": (
        lambda lib: _meta(lib, 3, 4) + lib.ones(3, 4),
        "Tensor on device cpu is not on the expected device meta!",
    ),
    "cpu_plus_meta": (
        lambda lib: lib.ones(3, 4) + _meta(lib, 3, 4),
        "Tensor on device meta is not on the expected device cpu!",
    ),
    "cat": (
        lambda lib: lib.cat([_meta(lib, 3, 4), lib.ones(3, 4)]),
        "Tensor on device cpu is not on the expected device meta!",
    ),
    "where": (
        lambda lib: lib.where(_meta(lib, 3, 4) > 0, _meta(lib, 3, 4), lib.ones(3, 4)),
        "Tensor on device cpu is not on the expected device meta!",
    ),
    "mul": (
        lambda lib: _meta(lib, 3, 4) * lib.ones(3, 4),
        "Tensor on device cpu is not on the expected device meta!",
    ),
}


@pytest.mark.parametrize("name", sorted(MIXES))
def test_mixing_meta_and_cpu_raises_torchs_error(name, torch_mod):
    mix, message = MIXES[name]
    for lib in (ember, torch_mod):
        with pytest.raises(RuntimeError, match=message):
            mix(lib)


def test_data_dependent_shapes_raise_not_implemented(torch_mod):
    for lib in (ember, torch_mod):
        t = _meta(lib, 3, 4)
        with pytest.raises(NotImplementedError):
            t.nonzero()
        with pytest.raises(NotImplementedError):
            t[t > 0]


# --- autograd -------------------------------------------------------------------------------
def test_backward_on_meta_gives_meta_grads(torch_mod):
    grads = []
    for lib in (ember, torch_mod):
        x = lib.ones(3, 4, device="meta", requires_grad=True)
        w = lib.ones(4, 2, device="meta", requires_grad=True)
        ((x @ w).tanh() * 2).sum().backward()
        grads.append((_signature(x.grad), _signature(w.grad)))
    assert grads[0] == grads[1] == (((3, 4), "float32", "meta"), ((4, 2), "float32", "meta"))


def test_backward_through_broadcast_reduces_to_the_input_shape():
    x = ember.empty(4, device="meta", requires_grad=True)
    (x * ember.empty(3, 1, device="meta")).mean().backward()
    assert _signature(x.grad) == ((4,), "float32", "meta")


# --- modules ----------------------------------------------------------------------------------
def _mlp(lib):
    return lib.nn.Sequential(
        lib.nn.Linear(16, 32), lib.nn.ReLU(), lib.nn.Dropout(0.1), lib.nn.Linear(32, 4)
    )


def _cnn(lib):
    nn_ = lib.nn
    return nn_.Sequential(
        nn_.Conv2d(3, 8, 3, padding=1),
        nn_.BatchNorm2d(8),
        nn_.ReLU(),
        nn_.MaxPool2d(2),
        nn_.Conv2d(8, 16, 3, stride=2),
        nn_.AdaptiveAvgPool2d(1),
        nn_.Flatten(),
        nn_.Linear(16, 10),
    )


def _transformer(lib):
    return lib.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)


MODELS = {
    "mlp": (_mlp, lambda lib: lib.randn(5, 16)),
    "cnn": (_cnn, lambda lib: lib.randn(2, 3, 16, 16)),
    "transformer": (_transformer, lambda lib: lib.randn(2, 7, 32)),
}


def _run_model(lib, name):
    build, data = MODELS[name]
    with lib.device("meta"):
        model = build(lib)
        x = data(lib)
    out = model(x)
    out.float().mean().backward()
    grads = [_signature(p.grad) for p in model.parameters()]
    return _signature(out), grads, [_signature(p) for p in model.parameters()]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_built_and_run_on_meta_as_torch(name, torch_mod):
    assert _run_model(ember, name) == _run_model(torch_mod, name)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_built_and_run_on_meta(name):
    out, grads, params = _run_model(ember, name)
    assert out[2] == "meta" and all(g[2] == "meta" for g in grads) and grads == params


def test_module_with_device_argument_and_to_meta():
    layer = nn.Linear(4, 4, device="meta")
    assert layer.weight.is_meta and layer.bias.is_meta
    moved = nn.Linear(3, 2).to("meta")
    assert moved.weight.is_meta and isinstance(moved.weight, nn.Parameter)


def test_embedding_lookup_on_meta():
    with ember.device("meta"):
        emb = nn.Embedding(1000, 16)
        tokens = ember.randint(0, 1000, (4, 9))
    assert _signature(emb(tokens)) == ((4, 9, 16), "float32", "meta")


# --- memory: a meta model holds no data ----------------------------------------------------------
def test_huge_linear_forward_and_backward_use_no_memory():
    tracemalloc.start()
    try:
        layer = nn.Linear(100_000, 100_000, device="meta")  # 10^10 weights, 40 GB if real
        x = ember.randn(64, 100_000, device="meta", requires_grad=True)
        out = layer(x)
        out.sum().backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert _signature(out) == ((64, 100_000), "float32", "meta")
    assert _signature(layer.weight.grad) == ((100_000, 100_000), "float32", "meta")
    assert peak < 2_000_000  # bytes: bookkeeping only
    assert layer.weight.nbytes == 40_000_000_000  # what it would take, as torch reports


def test_huge_transformer_layer_runs_without_memory():
    tracemalloc.start()
    try:
        with ember.device("meta"):
            layer = nn.TransformerEncoderLayer(8192, 8, 32768, batch_first=True)
            emb = nn.Embedding(500_000, 8192)
            tokens = ember.randint(0, 500_000, (512, 4096))
        out = layer(emb(tokens))  # activations of 2^34 elements
        out.mean().backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert _signature(out) == ((512, 4096, 8192), "float32", "meta")
    assert _signature(emb.weight.grad) == ((500_000, 8192), "float32", "meta")
    assert peak < 5_000_000


# --- materialising: to_empty and load_state_dict(assign=True) -----------------------------------
def test_to_empty_then_reset_parameters_gives_real_values():
    with ember.device("meta"):
        model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    assert model.to_empty(device="cpu") is model
    for t in list(model.parameters()) + list(model.buffers()):
        assert t.device.type == "cpu" and not t.is_meta
    model[0].reset_parameters()
    model[1].reset_parameters()
    assert float(model[0].weight.abs().sum()) > 0
    assert ember.equal(model[1].running_var, ember.ones(4))
    assert model(ember.ones(2, 3)).shape == (2, 4)


def test_load_state_dict_assign_replaces_meta_parameters(torch_mod):
    for lib in (ember, torch_mod):
        model = lib.nn.Linear(3, 2, device="meta")
        state = {"weight": lib.randn(2, 3), "bias": lib.randn(2)}
        model.load_state_dict(state, assign=True)
        assert isinstance(model.weight, lib.nn.Parameter) and model.weight.requires_grad
        assert model.weight.device.type == "cpu"
        assert lib.equal(model.weight.detach(), state["weight"])
        frozen = lib.nn.Parameter(lib.randn(2, 3), requires_grad=False)
        model.load_state_dict({"weight": frozen, "bias": lib.randn(2)}, assign=True)
        assert model.weight is frozen and model.weight.requires_grad  # the model's flag


def test_load_state_dict_into_meta_without_assign_warns_and_stays_meta(torch_mod):
    for lib in (ember, torch_mod):
        model = lib.nn.Linear(3, 2, device="meta")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.load_state_dict({"weight": lib.randn(2, 3), "bias": lib.randn(2)})
        messages = [str(w.message) for w in caught]
        assert any(
            m.startswith(
                "for weight: copying from a non-meta parameter in the checkpoint to a "
                "meta parameter in the current model, which is a no-op."
            )
            for m in messages
        )
        assert model.weight.is_meta


# --- more layers, initialisers and optimizers ---------------------------------------------------
LAYERS = {
    "lstm": lambda lib: lib.nn.LSTM(8, 16, batch_first=True, device="meta")(
        lib.randn(2, 5, 8, device="meta")
    )[0],
    "gru": lambda lib: lib.nn.GRU(8, 16, device="meta")(lib.randn(5, 2, 8, device="meta"))[0],
    "multihead_attention": lambda lib: lib.nn.MultiheadAttention(16, 4, device="meta")(
        *(lib.randn(5, 2, 16, device="meta"),) * 3
    )[0],
    "group_norm": lambda lib: lib.nn.GroupNorm(2, 4, device="meta")(
        lib.randn(2, 4, 5, device="meta")
    ),
    "conv_transpose2d": lambda lib: lib.nn.ConvTranspose2d(4, 2, 3, stride=2, device="meta")(
        lib.randn(1, 4, 5, 5, device="meta")
    ),
    "interpolate": lambda lib: lib.nn.functional.interpolate(
        lib.randn(1, 2, 4, 4, device="meta"), scale_factor=2, mode="bilinear"
    ),
    "batch_norm_eval": lambda lib: lib.nn.BatchNorm1d(4, device="meta").eval()(
        lib.randn(3, 4, device="meta")
    ),
    "topk": lambda lib: lib.randn(3, 5, device="meta").topk(2).values,
    "sort_indices": lambda lib: lib.randn(3, 5, device="meta").sort().indices,
    "scatter_add": lambda lib: lib.zeros(5, device="meta").scatter_add(
        0, lib.zeros(2, dtype=lib.int64, device="meta"), lib.ones(2, device="meta")
    ),
    "half": lambda lib: lib.empty(3, device="meta").half(),
    "new_zeros": lambda lib: lib.empty(3, device="meta", dtype=lib.float64).new_zeros(2, 2),
    "empty_strided": lambda lib: lib.empty_strided((2, 3), (3, 1), device="meta"),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_on_meta_as_torch(name, torch_mod):
    ours = LAYERS[name](ember)
    assert ours.is_meta
    assert _signature(ours) == _signature(LAYERS[name](torch_mod))


INITS = [
    "kaiming_uniform_",
    "kaiming_normal_",
    "xavier_normal_",
    "trunc_normal_",
    "normal_",
    "orthogonal_",
    "zeros_",
    "ones_",
    "eye_",
]


@pytest.mark.parametrize("name", INITS)
def test_init_functions_on_meta_keep_it_meta(name):
    t = ember.empty(5, 4, device="meta")
    assert getattr(nn.init, name)(t) is t and t.is_meta and t.shape == (5, 4)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_optimizer_steps_on_meta_parameters(name):
    with ember.device("meta"):
        model = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.Linear(8, 2))
        x = ember.randn(4, 8)
    model(x).sum().backward()
    optimizer = getattr(ember.optim, name)(model.parameters(), lr=0.1)
    optimizer.step()
    optimizer.step()
    assert all(p.is_meta and p.shape == p.grad.shape for p in model.parameters())


def test_to_empty_onto_meta_and_deepcopy_stay_meta():
    import copy

    model = nn.Linear(3, 2).to_empty(device="meta")
    assert model.weight.is_meta and isinstance(model.weight, nn.Parameter)
    twin = copy.deepcopy(model)
    assert twin.weight.is_meta and twin.weight.shape == (2, 3)


def test_numpy_conversions_raise_torchs_errors(torch_mod):
    import numpy as np

    for lib in (ember, torch_mod):
        t = lib.empty(3, device="meta")
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
            t.numpy(force=True)
        with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
            np.asarray(t)
        with pytest.raises(TypeError, match="unsupported format string passed to Tensor"):
            f"{lib.empty((), device='meta'):.2f}"


def test_elements_of_a_meta_vector_are_meta(torch_mod):
    for lib in (ember, torch_mod):
        t = lib.empty(3, device="meta")
        assert [_signature(e) for e in t] == [((), "float32", "meta")] * 3
        assert t[1].is_meta and t.unbind(0)[2].is_meta


N = 100_000  # 10^10 elements per (N, N) tensor: 40 GB of float32 if it were real
BIG_OPS = {
    "tril": lambda: _meta(ember, N, N).tril(),
    "topk": lambda: _meta(ember, N, N).topk(3).values,
    "sort": lambda: _meta(ember, N, N).sort(1).values,
    "cumsum": lambda: _meta(ember, N, N).cumsum(1),
    "gather": lambda: _meta(ember, N, N).gather(
        1, ember.zeros(N, N, dtype=ember.int64, device="meta")
    ),
    "conv2d": lambda: F.conv2d(_meta(ember, 10, 10, N, N), _meta(ember, 4, 10, 3, 3)),
    "conv_transpose2d": lambda: F.conv_transpose2d(
        _meta(ember, 10, 10, N, N), _meta(ember, 10, 4, 3, 3)
    ),
    "interpolate": lambda: F.interpolate(
        _meta(ember, 10, 10, N, N), scale_factor=2, mode="bilinear"
    ),
    "max_pool2d": lambda: F.max_pool2d(_meta(ember, 10, 10, N, N), 3),
    "group_norm": lambda: F.group_norm(_meta(ember, 10, 10, N, N), 2),
    "cross_entropy": lambda: F.cross_entropy(
        _meta(ember, N, N), ember.zeros(N, dtype=ember.int64, device="meta")
    ),
    "einsum": lambda: ember.einsum("ij,jk->ik", _meta(ember, N, N), _meta(ember, N, N)),
    "pad": lambda: F.pad(_meta(ember, 100, N, N), (1, 1)),
    "softmax_backward": lambda: _meta(ember, N, N).requires_grad_().softmax(-1).sum().backward(),
}


@pytest.mark.parametrize("name", sorted(BIG_OPS))
def test_big_ops_on_meta_allocate_nothing(name):
    BIG_OPS[name]()  # once first: imports and caches are not the op's memory
    tracemalloc.start()
    try:
        out = BIG_OPS[name]()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out is None or out.is_meta
    assert peak < 1_000_000


def _layers(lib):
    nn_ = lib.nn
    return nn_.Sequential(
        nn_.Linear(6, 8),
        nn_.LayerNorm(8),
        nn_.PReLU(8, init=0.1),
        nn_.Embedding(10, 8),
        nn_.Conv1d(8, 4, 3),
        nn_.GroupNorm(2, 4),
        nn_.BatchNorm1d(4),
    )


def _materialised(lib):
    with lib.device("meta"):
        model = _layers(lib)
    model.to_empty(device="cpu")
    lib.manual_seed(0)
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    return model


def test_meta_then_reset_parameters_gives_the_values_of_eager_construction():
    """Building on meta draws nothing, so resetting after to_empty draws what building on the
    CPU would have drawn, layer by layer."""
    ember.manual_seed(0)
    eager = _layers(ember).state_dict()
    rebuilt = _materialised(ember).state_dict()
    assert list(rebuilt) == list(eager)
    for name, value in eager.items():
        assert rebuilt[name].device.type == "cpu"
        assert ember.equal(rebuilt[name], value), name


def test_materialised_values_as_torch(torch_mod):
    ours, theirs = _materialised(ember).state_dict(), _materialised(torch_mod).state_dict()
    for name, value in theirs.items():
        mine, expected = ours[name].reshape(-1).tolist(), value.reshape(-1).tolist()
        assert mine == pytest.approx(expected, rel=1e-6, abs=1e-7), name


def _full_transformer(lib):
    nn_ = lib.nn
    with lib.device("meta"):
        model = nn_.Transformer(32, 4, 2, 2, 64, batch_first=True)
        source, target = lib.randn(2, 10, 32), lib.randn(2, 7, 32)
        mask = nn_.Transformer.generate_square_subsequent_mask(7)
    out = model(source, target, tgt_mask=mask, tgt_is_causal=True)
    out.sum().backward()
    return (
        _signature(out),
        _signature(mask),
        _signature(model.decoder.layers[1].linear2.weight.grad),
    )


def test_encoder_decoder_transformer_with_causal_mask_on_meta(torch_mod):
    assert _full_transformer(ember) == _full_transformer(torch_mod)
    assert _full_transformer(ember)[0] == ((2, 7, 32), "float32", "meta")


def _index(lib, *shape):
    return lib.zeros(*shape, dtype=lib.int64, device="meta")


IN_PLACE = {
    "setitem_int": lambda lib, t: t.__setitem__(0, 1.0),
    "setitem_slice": lambda lib, t: t.__setitem__((slice(None), 1), _meta(lib, 3)),
    "setitem_index": lambda lib, t: t.__setitem__(_index(lib, 2), 1.0),
    "setitem_mask": lambda lib, t: t.__setitem__(_meta(lib, 3, 4) > 0, 1.0),
    "add_": lambda lib, t: t.add_(1),
    "mul_": lambda lib, t: t.mul_(_meta(lib, 4)),
    "masked_fill_": lambda lib, t: t.masked_fill_(_meta(lib, 3, 4) > 0, 0.0),
    "zero_": lambda lib, t: t.zero_(),
    "copy_": lambda lib, t: t.copy_(_meta(lib, 4)),
    "clamp_": lambda lib, t: t.clamp_(0, 1),
    "uniform_": lambda lib, t: t.uniform_(),
    "normal_": lambda lib, t: t.normal_(),
    "bernoulli_": lambda lib, t: t.bernoulli_(0.5),
    "exponential_": lambda lib, t: t.exponential_(),
    "random_": lambda lib, t: t.random_(0, 10),
    "index_fill_": lambda lib, t: t.index_fill_(0, _index(lib, 1), 0.0),
    "scatter_": lambda lib, t: t.scatter_(1, _index(lib, 3, 1), 1.0),
    "view_add_": lambda lib, t: t.t().add_(1),
    "unsqueeze_": lambda lib, t: t.unsqueeze_(0),
}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_op_on_meta_as_torch(name, torch_mod):
    results = []
    for lib in (ember, torch_mod):
        t = _meta(lib, 3, 4)
        IN_PLACE[name](lib, t)
        results.append(_signature(t))
    assert results[0] == results[1]
    assert results[0][2] == "meta"


def test_skip_init_builds_on_meta_and_draws_nothing(torch_mod):
    for lib in (ember, torch_mod):
        lib.manual_seed(5)
        expected = lib.rand(3)
        lib.manual_seed(5)
        layer = lib.nn.utils.skip_init(lib.nn.Linear, 5, 2)
        assert layer.weight.device.type == "cpu" and tuple(layer.weight.shape) == (2, 5)
        assert isinstance(layer.weight, lib.nn.Parameter)
        assert lib.equal(lib.rand(3), expected)
        assert lib.nn.utils.skip_init(lib.nn.Linear, 5, 2, device="meta").weight.is_meta
