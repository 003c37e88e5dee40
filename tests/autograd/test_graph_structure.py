"""The autograd graph as torch builds it: node class names, inputs in torch's order and arity
(``None`` where torch has none, ``AccumulateGrad`` at leaves), saved fields (``_saved_*``,
``_raw_saved_*`` with ``register_hooks``), the node API users touch, and torchviz's drawing."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import warnings
from pathlib import Path

import pytest

import ember
from tests.autograd._graph_programs import PROGRAMS, signature

# torch 2.13's graphs of the programs (``signature`` of each output's grad_fn, written by
# torch): ember's must equal them where torch is not installed, and torch's own where it is.
EXPECTED = json.loads((Path(__file__).parent / "torch_graphs.json").read_text())


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graph_matches_torchs_recorded_graph(name):
    assert signature(PROGRAMS[name](ember).grad_fn) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graph_matches_torch(torch_mod, name):
    torch_mod.manual_seed(0)
    assert signature(PROGRAMS[name](ember).grad_fn) == signature(PROGRAMS[name](torch_mod).grad_fn)


def test_linear_without_input_grad_is_addmm_of_bias_none_and_transposed_weight():
    layer = ember.nn.Linear(4, 3)
    node = layer(ember.randn(2, 4)).grad_fn
    (bias, _), (nothing, nr), (t, _) = node.next_functions
    assert type(node).__name__ == node.name() == "AddmmBackward0"
    assert (nothing, nr) == (None, 0)
    assert bias.variable is layer.bias
    assert type(t).__name__ == "TBackward0" and t.next_functions[0][0].variable is layer.weight


def test_accumulate_grad_node_is_shared_by_every_use_of_a_leaf():
    w = ember.randn(3, requires_grad=True)
    y = w * 2 + w.exp()
    first = y.grad_fn.next_functions[0][0].next_functions[0][0]
    second = y.grad_fn.next_functions[1][0].next_functions[0][0]
    assert first is second and first.variable is w
    assert type(first).__name__ == "AccumulateGrad"
    assert first.name() == "torch::autograd::AccumulateGrad"  # as torch names it


def _saved_summary(node, torch_like) -> dict:
    """``_saved_*`` fields of a node: tensors by shape, other values by repr."""
    out = {}
    for attr in dir(node):
        if attr.startswith("_raw_saved_"):
            out[attr] = "raw"
        elif attr.startswith("_saved_"):
            value = getattr(node, attr)
            if isinstance(value, torch_like.Tensor):
                out[attr] = ("tensor", tuple(value.shape))
            else:
                out[attr] = repr(value)
    return out


def _nodes(root) -> list:
    seen, order, stack = set(), [], [root]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        order.append(node)
        stack.extend(fn for fn, _ in reversed(node.next_functions))
    return order


SAVED_PROGRAMS = [
    "binary",
    "numbers",
    "matrix_products",
    "views",
    "squeezes",
    "joins",
    "mlp",
    "cnn",
]


@pytest.mark.parametrize("name", SAVED_PROGRAMS)
def test_saved_fields_match_torch(torch_mod, name):
    torch_mod.manual_seed(0)
    mine = [_saved_summary(n, ember) for n in _nodes(PROGRAMS[name](ember).grad_fn)]
    theirs = [_saved_summary(n, torch_mod) for n in _nodes(PROGRAMS[name](torch_mod).grad_fn)]
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs):
        # torch saves sizes and strides of addmm/mm operands too; ember shows the tensors
        b = {k: v for k, v in b.items() if not re.search(r"_sym_(sizes|strides)$", k) or k in a}
        assert a == b


def test_saved_fields_of_a_linear_layer():
    layer = ember.nn.Linear(4, 3)
    x = ember.randn(2, 4, requires_grad=True)
    node = layer(x).grad_fn
    assert node._saved_mat1 is x
    assert tuple(node._saved_mat2.shape) == (4, 3)
    assert (node._saved_alpha, node._saved_beta) == (1, 1)
    names = [n for n in dir(node) if n.startswith("_saved_") or n.startswith("_raw_saved_")]
    assert names == [
        "_raw_saved_mat1",
        "_raw_saved_mat2",
        "_saved_alpha",
        "_saved_beta",
        "_saved_mat1",
        "_saved_mat2",
    ]
    relu = ember.relu(layer(x))
    assert ember.equal(relu.grad_fn._saved_result, relu)
    with pytest.raises(AttributeError):
        relu.grad_fn._saved_self  # noqa: B018 - torch's ReluBackward0 saves only its result


def test_saved_fields_are_gone_after_backward_with_torchs_error():
    x = ember.randn(3, requires_grad=True)
    y = x * x
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.grad_fn._saved_self  # noqa: B018


def test_saved_field_raises_after_an_inplace_change():
    x = ember.randn(3, requires_grad=True)
    a = x * 1
    y = a.sin()
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.grad_fn._saved_self  # noqa: B018


def test_negative_dims_read_back_as_torch_shows_them():
    a = ember.randn(2, 1, 3, requires_grad=True)
    assert a.squeeze(-2).grad_fn._saved_dim == 2**64 - 2
    assert a.unsqueeze(0).grad_fn._saved_dim == 0
    t = ember.tensor([0, 1])
    node = ember.nn.functional.nll_loss(ember.randn(2, 3, requires_grad=True), t).grad_fn
    assert node._saved_ignore_index == 2**64 - 100 and node._saved_reduction == 1


def test_raw_saved_tensor_hooks_pack_now_and_unpack_in_backward():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.pow(2)
    calls = []

    def pack(t):
        calls.append("pack")
        return t.detach() * 10  # what backward gets back is what unpack makes of this

    def unpack(packed):
        calls.append("unpack")
        return packed / 10

    y.grad_fn._raw_saved_self.register_hooks(pack, unpack)
    assert calls == ["pack"]
    y.sum().backward()
    assert calls == ["pack", "unpack"]
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_raw_saved_result_hooks_and_their_errors():
    x = ember.randn(4, requires_grad=True)
    y = x.exp()
    seen = []
    y.grad_fn._raw_saved_result.register_hooks(lambda t: seen.append(t) or t, lambda t: t)
    assert len(seen) == 1 and ember.equal(seen[0], y)
    with pytest.raises(RuntimeError, match="already been set"):
        y.grad_fn._raw_saved_result.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(TypeError):
        x.sin().grad_fn._raw_saved_self.register_hooks(1, 2)
    z = x.cos()
    z.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: 3)
    with pytest.raises(TypeError, match="unpack_hook"):
        z.sum().backward()


def test_node_api_users_touch():
    x = ember.randn(3, requires_grad=True)
    y = x.exp().sum()
    node = y.grad_fn
    assert node.name() == "SumBackward0" and node.metadata == {}
    node.metadata["step"] = 1
    assert y.grad_fn.metadata == {"step": 1}
    calls = []
    node.register_prehook(lambda grads: calls.append("pre"))
    node.register_hook(lambda grad_inputs, grad_outputs: calls.append("post"))
    y.backward()
    assert calls == ["pre", "post"]
    assert not hasattr(node, "saved_tensors")  # only a custom Function's node has it


# --- torchviz --------------------------------------------------------------------------------
def _torchviz_dot_for(library):
    """torchviz's ``dot`` module with ``torch`` bound to ``library`` (``import ember as torch``
    for a tool that imports torch itself); skips where torchviz or graphviz is missing."""
    pytest.importorskip("graphviz")
    spec = importlib.util.find_spec("torchviz")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torchviz is not installed")
    path = spec.submodule_search_locations[0] + "/dot.py"
    names = ("torch", "torch.autograd")
    before = {n: sys.modules.get(n) for n in names}
    sys.modules["torch"], sys.modules["torch.autograd"] = library, library.autograd
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # torchviz imports distutils
            module_spec = importlib.util.spec_from_file_location(
                f"_torchviz_dot_{library.__name__}", path
            )
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
    finally:
        for n, m in before.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m
    return module


def _normalised_dot(source: str) -> list:
    """DOT lines with node ids (Python object ids) renumbered in order of appearance."""
    ids: dict = {}

    def number(match):
        return "n" + str(ids.setdefault(match.group(0), len(ids)))

    return [re.sub(r"\b\d{6,}\b", number, line) for line in source.splitlines()]


def _mlp(m):
    m.manual_seed(0)
    model = m.nn.Sequential(m.nn.Linear(4, 8), m.nn.ReLU(), m.nn.Linear(8, 3))
    loss = m.nn.functional.cross_entropy(model(m.randn(2, 4)), m.tensor([0, 2]))
    return loss, dict(model.named_parameters())


def _cnn(m):
    m.manual_seed(0)
    model = m.nn.Sequential(
        m.nn.Conv2d(1, 4, 3, padding=1),
        m.nn.BatchNorm2d(4),
        m.nn.ReLU(),
        m.nn.MaxPool2d(2),
        m.nn.Flatten(),
        m.nn.Linear(16, 3),
    )
    loss = m.nn.functional.cross_entropy(model(m.randn(2, 1, 4, 4)), m.tensor([0, 2]))
    return loss, dict(model.named_parameters())


def _transformer(m):
    m.manual_seed(0)
    layer = m.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    return layer(m.randn(2, 3, 8)).sum(), dict(layer.named_parameters())


MODELS = {"mlp": _mlp, "cnn": _cnn, "transformer": _transformer}
# (model, show_saved): the transformer's attention node does not show torch's saved output and
# logsumexp (ember's fused kernel keeps the softmax instead)
DRAWINGS = [
    (m, s) for m in sorted(MODELS) for s in (False, True) if (m, s) != ("transformer", True)
]


@pytest.mark.parametrize("model,show_saved", DRAWINGS)
def test_torchviz_draws_embers_graph_as_torchs(torch_mod, model, show_saved):
    ember_dot = _torchviz_dot_for(ember)
    torch_dot = _torchviz_dot_for(torch_mod)
    drawings = []
    for library, dot in ((ember, ember_dot), (torch_mod, torch_dot)):
        loss, params = MODELS[model](library)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = dot.make_dot(loss, params=params, show_saved=show_saved)
        drawings.append(_normalised_dot(graph.source))
    mine, theirs = drawings
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs):
        assert a == b


def test_torchviz_draws_an_mlp_with_parameter_names():
    dot = _torchviz_dot_for(ember)
    loss, params = _mlp(ember)
    source = dot.make_dot(loss, params=params).source
    for label in ("AddmmBackward0", "TBackward0", "ReluBackward0", "NllLossBackward0"):
        assert label in source
    assert "0.weight\n (8, 4)" in source and "2.bias\n (3)" in source
    assert len(re.findall(r"AccumulateGrad", source)) == 4
