"""src/ember/onnx/_module.py: ember.onnx.load loads what ONNX Runtime runs: initializers
under any name (Module attribute names, names that differ only in punctuation) and nodes listed
out of order, with ONNX Runtime's outputs; state_dict keys are the ONNX names."""

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

X = np.arange(6, dtype=np.float32).reshape(2, 3)


def _value(name, shape=(2, 3)):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _model(nodes, initializers) -> bytes:
    graph = helper.make_graph(nodes, "g", [_value("x")], [_value("y")], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString()


def _constant(name: str, fill: float):
    return numpy_helper.from_array(np.full((2, 3), fill, np.float32), name)


def _run_both(data: bytes) -> tuple:
    """(ember's output, ONNX Runtime's output or None without it) for the input X."""
    got = ember.onnx.load(data)(ember.from_numpy(X)).detach().numpy()
    try:
        import onnxruntime as ort
    except ImportError:
        return got, None
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return got, session.run(None, {"x": X})[0]


@pytest.mark.parametrize(
    "name",
    ["forward", "keys", "training", "state_dict", "_modules", "__class__", "initializers", "0"],
)
def test_an_initializer_named_like_a_module_attribute_loads_and_computes(name):
    data = _model([helper.make_node("Mul", ["x", name], ["y"])], [_constant(name, 2.0)])
    got, expected = _run_both(data)
    np.testing.assert_array_equal(got, X * 2)
    if expected is not None:
        np.testing.assert_array_equal(got, expected)
    model = ember.onnx.load(data)
    assert list(model.state_dict()) == [f"initializers.{name}"]
    assert callable(model.forward) and model.training is True  # the attributes are untouched


def test_names_differing_only_in_punctuation_stay_distinct_tensors():
    # y = x * a.b + a_b - a/b + a  with four different constants
    nodes = [
        helper.make_node("Mul", ["x", "a.b"], ["t1"]),
        helper.make_node("Add", ["t1", "a_b"], ["t2"]),
        helper.make_node("Sub", ["t2", "a/b"], ["t3"]),
        helper.make_node("Add", ["t3", "a"], ["y"]),
    ]
    inits = [
        _constant("a.b", 2.0),
        _constant("a_b", 3.0),
        _constant("a/b", 5.0),
        _constant("a", 7.0),
    ]
    data = _model(nodes, inits)
    got, expected = _run_both(data)
    np.testing.assert_array_equal(got, X * 2 + 3 - 5 + 7)
    if expected is not None:
        np.testing.assert_array_equal(got, expected)
    model = ember.onnx.load(data)
    keys = model.state_dict().keys()
    assert sorted(keys) == sorted(f"initializers.{n}" for n in ("a.b", "a_b", "a/b", "a"))
    assert {n: float(model.initializers[n][0, 0]) for n in model.initializers} == {
        "a.b": 2.0,
        "a_b": 3.0,
        "a/b": 5.0,
        "a": 7.0,
    }
    assert len(list(model.parameters())) == 4


def test_state_dict_keys_are_the_onnx_names_and_load_back():
    nodes = [helper.make_node("Mul", ["x", "features.0.weight"], ["y"])]
    data = _model(nodes, [_constant("features.0.weight", 2.0)])
    model = ember.onnx.load(data)
    state = model.state_dict()
    assert list(state) == ["initializers.features.0.weight"]
    assert (
        model.get_parameter("initializers.features.0.weight")
        is (model.initializers["features.0.weight"])
    )
    state["initializers.features.0.weight"] = ember.full((2, 3), 4.0)
    model.load_state_dict(state, assign=True)
    np.testing.assert_array_equal(model(ember.from_numpy(X)).detach().numpy(), X * 4)


def test_nodes_listed_out_of_order_run_in_an_order_that_works():
    nodes = [
        helper.make_node("Relu", ["b"], ["y"]),
        helper.make_node("Neg", ["a"], ["b"]),
        helper.make_node("Add", ["x", "w"], ["a"]),
    ]
    data = _model(nodes, [_constant("w", -10.0)])
    got, expected = _run_both(data)
    np.testing.assert_array_equal(got, np.maximum(-(X - 10), 0))
    if expected is not None:
        np.testing.assert_array_equal(got, expected)


def test_gradients_reach_every_initializer_whatever_its_name():
    nodes = [
        helper.make_node("Mul", ["x", "forward"], ["t"]),
        helper.make_node("Add", ["t", "a.b"], ["y"]),
    ]
    model = ember.onnx.load(_model(nodes, [_constant("forward", 2.0), _constant("a.b", 1.0)]))
    model(ember.from_numpy(X)).sum().backward()
    np.testing.assert_array_equal(model.initializers["forward"].grad.numpy(), X)
    np.testing.assert_array_equal(model.initializers["a.b"].grad.numpy(), np.ones((2, 3)))
