"""The wide suite's workloads, each written once for both libraries.

A builder takes the library module ``m`` (``ember`` or ``torch``) and keyword parameters and
returns a ``Step``: ``run()`` does one timed step (a training step unless the name says
otherwise) and ``readout()`` returns the floats the loss agreement check compares: the loss,
or sums of the absolute values of outputs and gradients (which cannot cancel to zero). Inputs
come from NumPy with fixed seeds and every parameter is overwritten from NumPy (seeded by its
name), so both libraries start from the same numbers.
Nothing here imports ember in a torch process: the digits are read from ember's data file.
"""

from __future__ import annotations

import gzip
import importlib.util
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class Step:
    run: Callable[[], object]
    readout: Callable[[], list[float]]
    compiled: object = None  # ember.compile's CompiledFunction, for its replay counters


@dataclass(frozen=True)
class Workload:
    name: str
    what: str  # one line for the README and the table
    build: Callable[..., Step]
    params: dict = field(default_factory=dict)
    warmup: int = 5
    steps: int = 50
    rtol: float = 1e-4  # for the loss agreement check (float32 unless the workload says)


# ----------------------------------------------------------------------------- shared pieces


def is_ember(m) -> bool:
    return m.__name__ == "ember"


def set_parameters(m, model, seed: int = 0) -> None:
    """Overwrite every parameter from NumPy, seeded by its name: both libraries start equal."""
    with m.no_grad():
        for name, p in model.named_parameters():
            rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
            shape = tuple(p.shape)
            if len(shape) >= 2:
                bound = 1 / math.sqrt(max(1, int(np.prod(shape[1:]))))
                values = rng.uniform(-bound, bound, shape)
            elif name.endswith("weight"):  # a norm layer's scale: near one
                values = 1 + rng.uniform(-0.1, 0.1, shape)
            else:
                values = rng.uniform(-0.1, 0.1, shape)
            p.copy_(m.tensor(values, dtype=p.dtype))


def data(shape, seed: int = 1, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def labels(n: int, classes: int = 10, seed: int = 2) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, classes, n).astype(np.int64)


def maybe_compile(m, fn, compiled: bool | str):
    """``compiled=True``: ember.compile on ember's side, torch stays eager. ``"both"``: torch's
    side is ``torch.compile`` (inductor; the backward and the optimizer step as dynamo splits
    them), against ember.compile."""
    if compiled == "both" or (compiled and is_ember(m)):
        return m.compile(fn)
    return fn


def training_step(m, model, opt, forward_loss, compiled: bool | str = False) -> Step:
    """zero_grad, forward, backward, optimizer step; the loss kept for the readout."""

    def step():
        opt.zero_grad()
        loss = forward_loss()
        loss.backward()
        opt.step()
        return loss

    fn = maybe_compile(m, step, compiled)
    state = {}

    def run():
        state["loss"] = fn()

    return Step(run, lambda: [float(state["loss"].detach())], fn if fn is not step else None)


def mlp(m, sizes, act="ReLU"):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(m.nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(getattr(m.nn, act)())
    return m.nn.Sequential(*layers)


def digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """ember's shipped digits (1797 x 64 in [0, 1], labels), read without importing ember."""
    root = Path(importlib.util.find_spec("ember").submodule_search_locations[0])
    raw = (root / "datasets" / "data" / "digits.csv.gz").read_bytes()
    table = np.loadtxt(gzip.decompress(raw).decode().splitlines(), delimiter=",")
    return (table[:, :64] / 16.0).astype(np.float32), table[:, 64].astype(np.int64)


# ----------------------------------------------------------------------------- training steps


def mlp_step(m, batch: int = 32, dtype: str = "float32", compiled: bool | str = False) -> Step:
    model = mlp(m, (784, 512, 512, 10)).to(getattr(m, dtype))
    set_parameters(m, model)
    opt = m.optim.SGD(model.parameters(), lr=0.01)
    x = m.tensor(data((batch, 784), dtype=dtype))
    y = m.tensor(labels(batch))
    loss_fn = m.nn.CrossEntropyLoss()
    return training_step(m, model, opt, lambda: loss_fn(model(x), y), compiled)


def digits_epoch(m, compiled: bool | str = False) -> Step:
    images, targets = digits_arrays()
    m.manual_seed(0)  # the shuffled order: ember's RandomSampler draws torch's permutation
    model = mlp(m, (64, 128, 10))
    set_parameters(m, model)
    opt = m.optim.SGD(model.parameters(), lr=0.05)
    dataset = m.utils.data.TensorDataset(m.tensor(images), m.tensor(targets))
    loader = m.utils.data.DataLoader(dataset, batch_size=64, shuffle=True)
    loss_fn = m.nn.CrossEntropyLoss()

    def train_step(xb, yb):
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    fn = maybe_compile(m, train_step, compiled)
    state = {}

    def epoch():
        for xb, yb in loader:
            state["loss"] = fn(xb, yb)

    compiled_fn = fn if fn is not train_step else None
    return Step(epoch, lambda: [float(state["loss"].detach())], compiled_fn)


def recurrent_step(m, cell: str = "LSTM", compiled: bool | str = False) -> Step:
    """2 layers x 128 hidden, seq 50, batch 32, input 64; the last output through a linear head."""
    rnn = getattr(m.nn, cell)(64, 128, num_layers=2, batch_first=True)
    model = m.nn.ModuleDict({"rnn": rnn, "head": m.nn.Linear(128, 10)})
    set_parameters(m, model)
    opt = m.optim.Adam(model.parameters(), lr=1e-3)
    x = m.tensor(data((32, 50, 64)))
    y = m.tensor(labels(32))
    loss_fn = m.nn.CrossEntropyLoss()

    def forward_loss():
        out, _ = model["rnn"](x)
        return loss_fn(model["head"](out[:, -1]), y)

    return training_step(m, model, opt, forward_loss, compiled)


def embedding_step(m, sparse: bool = False) -> Step:
    """Embedding(10000, 128), mean over 32 tokens, Linear(128, 10); batch 256, SGD."""
    model = m.nn.ModuleDict(
        {"emb": m.nn.Embedding(10000, 128, sparse=sparse), "head": m.nn.Linear(128, 10)}
    )
    set_parameters(m, model)
    opt = m.optim.SGD(model.parameters(), lr=0.1)
    tokens = m.tensor(np.random.default_rng(3).integers(0, 10000, (256, 32)))
    y = m.tensor(labels(256))
    loss_fn = m.nn.CrossEntropyLoss()
    forward = lambda: loss_fn(model["head"](model["emb"](tokens).mean(1)), y)
    return training_step(m, model, opt, forward)


def resnet_step(m) -> Step:
    """conv3x3+BN+ReLU stem and 2 residual blocks at 32 channels; 3x32x32, batch 64."""
    nn = m.nn

    def conv_bn(relu: bool):
        parts = [nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32)]
        return nn.Sequential(*parts, *([nn.ReLU()] if relu else []))

    stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
    blocks = nn.ModuleList([nn.Sequential(conv_bn(True), conv_bn(False)) for _ in range(2)])
    head = nn.Linear(32, 10)
    model = nn.ModuleDict({"stem": stem, "blocks": blocks, "head": head})
    set_parameters(m, model)
    opt = m.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = m.tensor(data((64, 3, 32, 32)))
    y = m.tensor(labels(64))
    loss_fn = nn.CrossEntropyLoss()

    def forward_loss():
        h = stem(x)
        for block in blocks:
            h = m.relu(h + block(h))
        return loss_fn(head(h.mean((2, 3))), y)

    return training_step(m, model, opt, forward_loss)


def conv1d_step(m) -> Step:
    """Conv1d 16->32->64, kernel 5, length 256, batch 64, mean over length, Linear(64, 10)."""
    nn = m.nn
    convs = nn.Sequential(nn.Conv1d(16, 32, 5), nn.ReLU(), nn.Conv1d(32, 64, 5), nn.ReLU())
    head = nn.Linear(64, 10)
    model = nn.ModuleDict({"convs": convs, "head": head})
    set_parameters(m, model)
    opt = m.optim.SGD(model.parameters(), lr=0.01)
    x = m.tensor(data((64, 16, 256)))
    y = m.tensor(labels(64))
    loss_fn = nn.CrossEntropyLoss()
    return training_step(m, model, opt, lambda: loss_fn(head(convs(x).mean(2)), y))


def cnn_step(m) -> Step:
    """Two conv+ReLU+maxpool layers and a linear head on 1x28x28, batch 64 (as training.py)."""
    nn = m.nn
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 5 * 5, 10),
    )
    set_parameters(m, model)
    opt = m.optim.SGD(model.parameters(), lr=0.01)
    x = m.tensor(data((64, 1, 28, 28)))
    y = m.tensor(labels(64))
    loss_fn = nn.CrossEntropyLoss()
    return training_step(m, model, opt, lambda: loss_fn(model(x), y))


def _transformer(m):
    # dropout 0: dropout masks come from each library's own random stream and would differ
    layer = lambda: m.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True)
    model = m.nn.ModuleDict(
        {"layers": m.nn.Sequential(layer(), layer()), "head": m.nn.Linear(128, 10)}
    )
    set_parameters(m, model)
    return model, m.tensor(data((16, 64, 128)))


def transformer_step(m, compiled: bool | str = False) -> Step:
    """2 x TransformerEncoderLayer(128, 4 heads, ff 512), seq 64, batch 16, AdamW."""
    model, x = _transformer(m)
    opt = m.optim.AdamW(model.parameters(), lr=1e-3)
    y = m.tensor(labels(16))
    loss_fn = m.nn.CrossEntropyLoss()
    forward = lambda: loss_fn(model["head"](model["layers"](x).mean(1)), y)
    return training_step(m, model, opt, forward, compiled)


def transformer_eval(m) -> Step:
    """The same two layers, eval mode, forward under no_grad (torch may take its fast path)."""
    model, x = _transformer(m)
    model.eval()
    state = {}

    def run():
        with m.no_grad():
            state["out"] = model["layers"](x)

    return Step(run, lambda: [float(state["out"].double().abs().sum())])


def hvp_step(m) -> Step:
    """Hessian-vector product of an MLP 64-128-1 (tanh) MSE loss, batch 128: grad of grad."""
    model = mlp(m, (64, 128, 1), act="Tanh")
    set_parameters(m, model)
    params = list(model.parameters())
    vectors = [m.tensor(data(tuple(p.shape), seed=10 + i)) for i, p in enumerate(params)]
    x = m.tensor(data((128, 64)))
    y = m.tensor(data((128, 1), seed=4))
    state = {}

    def run():
        loss = m.nn.functional.mse_loss(model(x), y)
        grads = m.autograd.grad(loss, params, create_graph=True)
        dot = sum((g * v).sum() for g, v in zip(grads, vectors))
        state["loss"], state["hv"] = loss, m.autograd.grad(dot, params)

    def readout():
        sums = [float(h.double().abs().sum()) for h in state["hv"]]
        return [float(state["loss"].detach()), *sums]

    return Step(run, readout)


def mlp_inference(m, batch: int = 4096, mode: str = "no_grad") -> Step:
    """MLP 784-512-512-10 forward at batch 4096 under no_grad or inference_mode."""
    model = mlp(m, (784, 512, 512, 10))
    set_parameters(m, model)
    x = m.tensor(data((batch, 784)))
    context = getattr(m, mode)
    state = {}

    def run():
        with context():
            state["out"] = model(x)

    return Step(run, lambda: [float(state["out"].double().abs().sum())])


# ----------------------------------------------------------------------------- op workloads


def _fwd_bwd(m, shape, forward) -> Step:
    """forward(x) and its backward with a fixed random output gradient; sums for the readout."""
    x = m.tensor(data(tuple(shape)), requires_grad=True)
    grad = m.tensor(data(tuple(shape), seed=5))
    state = {}

    def run():
        x.grad = None
        out = forward(x)
        out.backward(grad)
        state["out"] = out

    def readout():
        return [
            float(state["out"].detach().double().abs().sum()),
            float(x.grad.double().abs().sum()),
        ]

    return Step(run, readout)


def gelu(m, shape=(64, 512, 512), approximate: str = "none") -> Step:
    return _fwd_bwd(m, shape, lambda x: m.nn.functional.gelu(x, approximate=approximate))


def layer_norm(m, shape=(64, 512, 512)) -> Step:
    norm = m.nn.LayerNorm(shape[-1])
    set_parameters(m, norm)
    return _fwd_bwd(m, shape, norm)


def softmax(m, shape=(64, 512, 512)) -> Step:
    return _fwd_bwd(m, shape, lambda x: m.softmax(x, dim=-1))


def chain(x, ops: int):
    """``ops`` elementwise ops cycling through *1.01, +0.1, tanh, -0.05."""
    for i in range(ops):
        kind = i % 4
        if kind == 0:
            x = x * 1.01
        elif kind == 1:
            x = x + 0.1
        elif kind == 2:
            x = x.tanh()
        else:
            x = x - 0.05
    return x


def chain_step(m, shape=(1000,), ops: int = 50) -> Step:
    x = m.tensor(data(tuple(shape)), requires_grad=True)
    state = {}

    def run():
        x.grad = None
        out = chain(x, ops).sum()
        out.backward()
        state["out"] = out

    return Step(run, lambda: [float(state["out"].detach()), float(x.grad.double().abs().sum())])


def random_factory(m, what: str = "randn", n: int = 10**6) -> Step:
    """One call of ``randn(n)``, ``randperm(n)`` or ``rand(n)`` on the default generator."""
    m.manual_seed(0)
    factory = getattr(m, what)
    state = {}

    def run():
        state["out"] = factory(n)

    return Step(run, lambda: [float(state["out"][:16].double().sum())])


def recurrent_inference(m, cell: str = "LSTM") -> Step:
    """nn.<cell>(64, 128, num_layers=2, batch_first) forward under no_grad; seq 50, batch 32."""
    rnn = getattr(m.nn, cell)(64, 128, num_layers=2, batch_first=True)
    with m.no_grad():
        for name, p in rnn.named_parameters():
            rng = np.random.default_rng(len(name))
            p.copy_(m.tensor(rng.uniform(-0.088, 0.088, tuple(p.shape)).astype(np.float32)))
    x = m.tensor(data((32, 50, 64)))
    state = {}

    def run():
        with m.no_grad():
            state["out"], _ = rnn(x)

    return Step(run, lambda: [float(state["out"].double().sum())])


def conv2d_step(m) -> Step:
    """One Conv2d(32, 32, 3, padding=1) forward and backward on 64 x 32 x 32 x 32."""
    conv = m.nn.Conv2d(32, 32, 3, padding=1, bias=False)
    set_parameters(m, conv)  # both libraries from the same weights, so the readouts agree
    x = m.tensor(data((64, 32, 32, 32)), requires_grad=True)

    def run():
        conv.zero_grad()
        x.grad = None
        conv(x).square().mean().backward()

    return Step(run, lambda: [float(conv.weight.grad.double().abs().sum())])


# ----------------------------------------------------------------------------- the table


def _table(*workloads: Workload) -> dict[str, Workload]:
    return {w.name: w for w in workloads}


WORKLOADS = _table(
    Workload("mlp-b32", "MLP 784-512-512-10 SGD step, batch 32", mlp_step, {"batch": 32}, 10, 200),
    Workload("mlp-b512", "MLP 784-512-512-10 SGD step, batch 512", mlp_step, {"batch": 512}),
    Workload(
        "mlp-f64",
        "MLP 784-512-512-10 SGD step, batch 32, float64",
        mlp_step,
        {"batch": 32, "dtype": "float64"},
        10,
        100,
        rtol=1e-9,
    ),
    Workload("digits-epoch", "digits MLP 64-128-10, one epoch, batch 64", digits_epoch, {}, 2, 20),
    Workload("cnn", "small CNN step (2 convs, maxpool), batch 64 x 1x28x28", cnn_step, {}, 3, 30),
    Workload("lstm", "LSTM 2x128, seq 50, batch 32, Adam step", recurrent_step, {"cell": "LSTM"}),
    Workload("gru", "GRU 2x128, seq 50, batch 32, Adam step", recurrent_step, {"cell": "GRU"}),
    Workload("rnn", "RNN tanh 2x128, seq 50, batch 32, Adam step", recurrent_step, {"cell": "RNN"}),
    Workload(
        "embedding",
        "Embedding(10000, 128) + mean + Linear, 256 x 32 tokens, SGD",
        embedding_step,
        {"sparse": False},
    ),
    Workload(
        "embedding-sparse",
        "the same with Embedding(sparse=True)",
        embedding_step,
        {"sparse": True},
    ),
    Workload(
        "resnet",
        "ResNet-style: stem + 2 residual blocks, 32 ch, 3x32x32, batch 64, SGD momentum",
        resnet_step,
        {},
        3,
        20,
    ),
    Workload("conv1d", "Conv1d 16->32->64 k5, length 256, batch 64, SGD", conv1d_step, {}, 3, 30),
    Workload(
        "transformer",
        "2 x TransformerEncoderLayer(128, 4, 512), seq 64, batch 16, AdamW step",
        transformer_step,
        {},
        3,
        30,
    ),
    Workload(
        "transformer-eval",
        "the same two layers, eval forward under no_grad",
        transformer_eval,
        {},
        3,
        50,
    ),
    Workload("gelu", "F.gelu exact forward+backward", gelu, {"shape": [64, 512, 512]}, 2, 10),
    Workload(
        "gelu-tanh",
        "F.gelu(approximate='tanh') forward+backward",
        gelu,
        {"shape": [64, 512, 512], "approximate": "tanh"},
        2,
        10,
    ),
    Workload(
        "layernorm", "LayerNorm(512) forward+backward", layer_norm, {"shape": [64, 512, 512]}, 2, 10
    ),
    Workload(
        "softmax", "softmax(dim=-1) forward+backward", softmax, {"shape": [64, 512, 512]}, 2, 10
    ),
    *(
        Workload(
            f"chain50-{label}",
            f"50-op elementwise chain on {n:,} element{'s' * (n > 1)}, forward+backward",
            chain_step,
            {"shape": [n], "ops": 50},
            10,
            200 if n <= 100_000 else 50,
        )
        for label, n in (("1", 1), ("1e3", 1000), ("1e5", 100_000), ("1e6", 1_000_000))
    ),
    Workload(
        "chain100-1000x1000",
        "100-op elementwise chain on (1000, 1000), forward+backward",
        chain_step,
        {"shape": [1000, 1000], "ops": 100},
        2,
        10,
    ),
    Workload("hvp", "Hessian-vector product, MLP 64-128-1 tanh, batch 128", hvp_step, {}, 10, 100),
    *(
        Workload(
            f"mlp-infer-b4096-{mode}",
            f"MLP 784-512-512-10 forward, batch 4096, {mode}",
            mlp_inference,
            {"batch": 4096, "mode": mode},
            3,
            30,
        )
        for mode in ("no_grad", "inference_mode")
    ),
    Workload("randn-1e6", "randn(10**6) float32, default generator", random_factory, {}, 3, 30),
    Workload("randperm-1e6", "randperm(10**6)", random_factory, {"what": "randperm"}, 3, 30),
    Workload("rand-1e7", "rand(10**7)", random_factory, {"what": "rand", "n": 10**7}, 2, 10),
    Workload(
        "lstm-infer",
        "LSTM 2x128, seq 50, batch 32, no_grad forward",
        recurrent_inference,
        {},
        5,
        50,
    ),
    Workload(
        "gru-infer",
        "GRU 2x128, seq 50, batch 32, no_grad forward",
        recurrent_inference,
        {"cell": "GRU"},
        5,
        50,
    ),
    Workload("conv2d-32", "Conv2d 32->32 3x3 fwd+bwd, 64 x 32x32x32", conv2d_step, {}, 3, 15),
    Workload(
        "compiled-mlp-b32",
        "MLP b32 step, ember.compile vs torch eager",
        mlp_step,
        {"batch": 32, "compiled": True},
        10,
        200,
    ),
    Workload(
        "compiled-digits-epoch",
        "digits epoch, ember.compile vs torch eager",
        digits_epoch,
        {"compiled": True},
        2,
        20,
    ),
    Workload(
        "compiled-lstm",
        "LSTM step, ember.compile vs torch eager",
        recurrent_step,
        {"cell": "LSTM", "compiled": True},
    ),
    Workload(
        "compiled-transformer",
        "transformer step, ember.compile vs torch eager",
        transformer_step,
        {"compiled": True},
        3,
        30,
    ),
    # ember.compile against torch.compile: the warm-up takes inductor's first calls (seconds;
    # benchmarks/compile_warmup.py times them)
    Workload(
        "inductor-mlp-b32",
        "MLP b32 step, ember.compile vs torch.compile",
        mlp_step,
        {"batch": 32, "compiled": "both"},
        10,
        200,
    ),
    Workload(
        "inductor-digits-epoch",
        "digits epoch, ember.compile vs torch.compile",
        digits_epoch,
        {"compiled": "both"},
        3,
        20,
    ),
    Workload(
        "inductor-lstm",
        "LSTM step, ember.compile vs torch.compile",
        recurrent_step,
        {"cell": "LSTM", "compiled": "both"},
        5,
        50,
    ),
    Workload(
        "inductor-transformer",
        "transformer step, ember.compile vs torch.compile",
        transformer_step,
        {"compiled": "both"},
        5,
        30,
    ),
)
