"""src/ember/onnx/_load_checks.py: ember.onnx.load refuses at load, with one OnnxImportError
naming the problem, every model ONNX Runtime refuses (never a KeyError at the first forward),
and loads the models ONNX Runtime runs."""

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _value(name, shape=(2, 3), elem_type=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem_type, shape)


def _model(nodes, inputs, outputs, initializers=(), opset=17) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model.SerializeToString()


def _weight(name="w", shape=(2, 3), fill=1.0):
    return numpy_helper.from_array(np.full(shape, fill, np.float32), name)


def _ort_refuses(data: bytes, feeds: dict) -> bool:
    """Whether ONNX Runtime refuses the model, at load or at the first run."""
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.log_severity_level = 4  # its refusals are what is tested, not noise in the log
    try:
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        session.run(None, feeds)
    except Exception:  # noqa: BLE001 - onnxruntime's own exception types
        return True
    return False


X = np.ones((2, 3), np.float32)
SEQUENCE = np.ones((3, 2, 4), np.float32)
IMAGE = np.ones((1, 2, 5, 5), np.float32)


def _lstm(**attrs):
    weights = [
        numpy_helper.from_array(np.ones((1, 20, 4), np.float32), "W"),
        numpy_helper.from_array(np.ones((1, 20, 5), np.float32), "R"),
    ]
    node = helper.make_node("LSTM", ["x", "W", "R"], ["y"], **attrs)
    return _model([node], [_value("x", (3, 2, 4))], [_value("y", None)], weights)


def _initializer(**fields):
    return TensorProto(name="w", **fields)


def _add_w(w):
    return _model([helper.make_node("Add", ["x", "w"], ["y"])], [_value("x")], [_value("y")], [w])


# (model, feeds, words the error must contain): each is a file ONNX Runtime refuses
REFUSED = {
    "missing initializer": (
        _model([helper.make_node("Add", ["x", "w"], ["y"])], [_value("x")], [_value("y")]),
        {"x": X},
        "reads 'w', which is not a graph input, an initializer or an output of a node",
    ),
    "cycle": (
        _model(
            [
                helper.make_node("Add", ["x", "b"], ["a"], name="add"),
                helper.make_node("Relu", ["a"], ["b"], name="relu"),
                helper.make_node("Neg", ["a"], ["y"], name="neg"),
            ],
            [_value("x")],
            [_value("y")],
        ),
        {"x": X},
        "the graph is not acyclic: node 'add' (Add), node 'relu' (Relu), node 'neg' (Neg)",
    ),
    "node reading its own output": (
        _model([helper.make_node("Add", ["x", "y"], ["y"])], [_value("x")], [_value("y")]),
        {"x": X},
        "not acyclic: node #0 (Add)",
    ),
    "output never produced": (
        _model([helper.make_node("Relu", ["x"], ["y"])], [_value("x")], [_value("z")]),
        {"x": X},
        "graph output 'z' is not a graph input, an initializer or an output of a node",
    ),
    "empty graph": (_model([], [], []), {}, "the graph has no outputs"),
    "graph without outputs": (
        _model([helper.make_node("Relu", ["x"], ["y"])], [_value("x")], []),
        {"x": X},
        "the graph has no outputs",
    ),
    "LSTM without hidden_size": (
        _lstm(),
        {"x": SEQUENCE},
        "node #0 (LSTM): the attribute hidden_size is missing",
    ),
    "LSTM with hidden_size 0": (_lstm(hidden_size=0), {"x": SEQUENCE}, "hidden_size is 0"),
    "Conv weight of the wrong rank": (
        _model(
            [helper.make_node("Conv", ["x", "k"], ["y"], name="conv")],
            [_value("x", (1, 2, 5, 5))],
            [_value("y", None)],
            [numpy_helper.from_array(np.ones((3, 2, 3), np.float32), "k")],
        ),
        {"x": IMAGE},
        "node 'conv' (Conv): its input 'x' has rank 4 but its weight 'k' has rank 3",
    ),
    "unknown data type": (
        _add_w(_initializer(data_type=999, dims=[2, 3], raw_data=bytes(24))),
        {"x": X},
        "initializer 'w' has data type 999, which ONNX does not define",
    ),
    "undefined data type": (
        _add_w(_initializer(data_type=TensorProto.UNDEFINED, dims=[2, 3])),
        {"x": X},
        "initializer 'w' has data type 0",
    ),
    "dims without data": (
        _add_w(_initializer(data_type=TensorProto.FLOAT, dims=[2, 3])),
        {"x": X},
        "initializer 'w' (FLOAT (2, 3)) holds 0 values in float_data; its shape needs 6",
    ),
    "short raw data": (
        _add_w(_initializer(data_type=TensorProto.FLOAT, dims=[2, 3], raw_data=bytes(8))),
        {"x": X},
        "holds 8 bytes of raw data; its type and shape need 24",
    ),
    "negative dimension": (
        _add_w(_initializer(data_type=TensorProto.FLOAT, dims=[-1, 3])),
        {"x": X},
        "initializer 'w' has a negative dimension in (-1, 3)",
    ),
    "a name defined twice": (
        _model(
            [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])],
            [_value("x")],
            [_value("y")],
        ),
        {"x": X},
        "node #1 (Neg): 'y' is defined twice (node #0 (Relu) defines it too)",
    ),
    "a required attribute missing": (
        _model([helper.make_node("Concat", ["x", "x"], ["y"])], [_value("x")], [_value("y")]),
        {"x": X},
        "node #0 (Concat): the required attribute 'axis' is missing",
    ),
    "an unknown attribute": (
        _model([helper.make_node("Relu", ["x"], ["y"], foo=1)], [_value("x")], [_value("y")]),
        {"x": X},
        "Relu has no attribute 'foo'",
    ),
    "too few inputs": (
        _model([helper.make_node("Add", ["x"], ["y"])], [_value("x")], [_value("y")]),
        {"x": X},
        "node #0 (Add) has 1 input; Add-14 takes 2 (in opset 17)",
    ),
    "a required input left empty": (
        _model([helper.make_node("Mul", ["x", ""], ["y"])], [_value("x")], [_value("y")]),
        {"x": X},
        "input 1 (B) is required but the node leaves it empty",
    ),
    "Cast to an unknown type": (
        _model([helper.make_node("Cast", ["x"], ["y"], to=999)], [_value("x")], [_value("y")]),
        {"x": X},
        "Cast to 999, which is not an ONNX data type",
    ),
    "a tensor attribute without data": (
        _model(
            [
                helper.make_node(
                    "Constant",
                    [],
                    ["y"],
                    value=TensorProto(name="c", data_type=TensorProto.FLOAT, dims=[10**6, 10**6]),
                )
            ],
            [],
            [_value("y", None)],
        ),
        {},
        "the tensor in attribute 'value' of node #0 (Constant) 'c' (FLOAT (1000000, 1000000)) "
        "holds 0 values",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_model_onnx_runtime_refuses_is_refused_at_load_with_one_clear_error(case):
    data, feeds, words = REFUSED[case]
    with pytest.raises(ember.onnx.OnnxImportError) as caught:
        ember.onnx.load(data)
    assert words in str(caught.value)
    assert str(caught.value).startswith("ember.onnx.load: ")
    assert isinstance(caught.value, ValueError)  # the file is wrong
    assert isinstance(caught.value, ember.onnx.OnnxExporterError)  # ember's ONNX error
    assert _ort_refuses(data, feeds)


def test_conv_of_unknown_input_rank_loads_and_refuses_the_wrong_rank_when_run():
    # as ONNX Runtime: the file declares no rank for x, so only running it shows the mismatch
    data = _model(
        [helper.make_node("Conv", ["x", "k"], ["y"])],
        [_value("x", None)],
        [_value("y", None)],
        [numpy_helper.from_array(np.ones((3, 2, 3), np.float32), "k")],
    )
    model = ember.onnx.load(data)
    with pytest.raises(RuntimeError, match=r"input has shape \(1, 2, 5, 5\) and the weight"):
        model(ember.ones(1, 2, 5, 5))
    assert model(ember.ones(1, 2, 5)).shape == (1, 3, 3)


def test_a_broken_file_is_an_import_error_not_a_protobuf_one():
    with pytest.raises(ember.onnx.OnnxImportError, match="cannot read the ONNX model"):
        ember.onnx.load(b"\x08\x07\x12\xff\xff\xff")


def _ort_outputs(data: bytes, feeds: dict) -> list:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def test_an_unused_string_initializer_is_left_out_as_onnx_runtime_drops_it():
    strings = helper.make_tensor("labels", TensorProto.STRING, [2], [b"cat", b"dog"])
    data = _model(
        [
            helper.make_node("Identity", ["labels"], ["unused"]),
            helper.make_node("Neg", ["x"], ["y"]),
        ],
        [_value("x")],
        [_value("y")],
        [strings],
    )
    model = ember.onnx.load(data)
    np.testing.assert_array_equal(model(ember.from_numpy(X)).numpy(), -X)
    assert "labels" not in model.initializers
    np.testing.assert_array_equal(_ort_outputs(data, {"x": X})[0], -X)
    read = _model(
        [helper.make_node("Identity", ["labels"], ["y"])],
        [],
        [_value("y", None, TensorProto.STRING)],
        [strings],
    )
    with pytest.raises(ember.onnx.OnnxImportError, match="'labels' has type STRING"):
        ember.onnx.load(read)


def test_an_empty_graph_that_returns_its_input_runs():
    data = _model([], [_value("x")], [_value("x")])
    np.testing.assert_array_equal(ember.onnx.load(data)(ember.from_numpy(X)).numpy(), X)
    np.testing.assert_array_equal(_ort_outputs(data, {"x": X})[0], X)


def test_uint16_initializers_load_as_ember_uint16():
    values = helper.make_tensor("u", TensorProto.UINT16, [3], [1, 2, 65535])
    node = helper.make_node("Cast", ["u"], ["y"], to=TensorProto.INT64)
    data = _model([node], [], [_value("y", None, TensorProto.INT64)], [values])
    model = ember.onnx.load(data)
    assert model.initializers["u"].dtype == ember.uint16
    assert model().tolist() == [1, 2, 65535] == _ort_outputs(data, {})[0].tolist()
