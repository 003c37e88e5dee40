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


# --- found by the file fuzzer (tests/onnx/test_load_fuzz.py): each loaded before, and then
# computed something or failed at the first forward, where ONNX Runtime refuses the file
def _gemm_model(**attrs):
    weight = numpy_helper.from_array(np.ones((3, 4), np.float32), "w")
    node = helper.make_node("Gemm", ["x", "w"], ["y"], transB=1, **attrs)
    return [node], [_value("x", (2, 4))], [_value("y", (2, 3))], [weight]


def _with(model: bytes, edit) -> bytes:
    proto = onnx.load_from_string(model)
    edit(proto)
    return proto.SerializeToString()


def _declare(name, elem_type, shape):
    """Declare ``name`` a graph input too (as before IR version 4 every initializer was)."""
    return lambda m: m.graph.input.append(_value(name, shape, elem_type))


X24 = np.ones((2, 4), np.float32)
GEMM = _model(*_gemm_model())
FOUND_BY_FUZZING = {
    "an attribute of the wrong type": (
        _model(*_gemm_model(beta=1)),
        {"x": X24},
        "the attribute 'beta' is INT; Gemm takes FLOAT",
    ),
    "an attribute given twice": (
        _with(GEMM, lambda m: m.graph.node[0].attribute.append(helper.make_attribute("transB", 0))),
        {"x": X24},
        None,
    ),
    "input types an operator does not take together": (
        _model(
            [helper.make_node("Add", ["x", "i"], ["y"])],
            [_value("x")],
            [_value("y")],
            [numpy_helper.from_array(np.ones((2, 3), np.int64), "i")],
        ),
        {"x": X},
        "ONNX type and shape inference refuses the model",
    ),
    "a computed type that contradicts the declared one": (
        _model([helper.make_node("Relu", ["x"], ["y"])], [_value("x")], [_value("y", None, 7)]),
        {"x": X},
        "Inferred elem type differs from existing elem type",
    ),
    "shapes that cannot be multiplied": (
        _model(
            [helper.make_node("MatMul", ["x", "w"], ["y"])],
            [_value("x", (2, 4))],
            [_value("y", None)],
            [_weight("w", (8, 3))],
        ),
        {"x": X24},
        "ONNX type and shape inference refuses the model",
    ),
    "a graph input given twice": (
        _with(GEMM, lambda m: m.graph.input.append(_value("x", (2, 4)))),
        {"x": X24},
        "the graph input 'x' is given twice",
    ),
    "an IR version newer than onnx knows": (
        _with(GEMM, lambda m: setattr(m, "ir_version", onnx.IR_VERSION + 1)),
        {"x": X24},
        f"IR version {onnx.IR_VERSION + 1}",
    ),
    "an opset newer than onnx knows": (
        _with(GEMM, lambda m: setattr(m.opset_import[0], "version", 99)),
        {"x": X24},
        "imports opset 99 of the default domain",
    ),
    "a computed value declared of type 0": (
        _with(GEMM, lambda m: setattr(m.graph.output[0].type.tensor_type, "elem_type", 0)),
        {"x": X24},
        "'y' is declared a tensor of data type 0 (UNDEFINED)",
    ),
    "an initializer declared of another shape": (
        _with(GEMM, _declare("w", TensorProto.FLOAT, (4, 3))),
        {"x": X24},
        "the initializer 'w' has dims (3, 4) but is declared of shape (4, 3)",
    ),
    "an initializer declared of another type": (
        _with(GEMM, _declare("w", TensorProto.DOUBLE, (3, 4))),
        {"x": X24},
        "the initializer 'w' is FLOAT but declared DOUBLE",
    ),
}


@pytest.mark.parametrize("case", FOUND_BY_FUZZING)
def test_a_fuzzed_model_onnx_runtime_refuses_is_refused_at_load(case):
    data, feeds, words = FOUND_BY_FUZZING[case]
    with pytest.raises(ember.onnx.OnnxImportError, match="^ember.onnx.load: ") as caught:
        ember.onnx.load(data)
    assert words is None or words in str(caught.value)
    assert _ort_refuses(data, feeds)


def test_the_attribute_given_twice_is_named():
    data = FOUND_BY_FUZZING["an attribute given twice"][0]
    with pytest.raises(ember.onnx.OnnxImportError, match="the attribute 'transB' is given twice"):
        ember.onnx.load(data)


def test_an_initializer_given_twice_is_refused_as_ambiguous():
    # ONNX Runtime warns it uses the last copy; in an exported MLP it computes with the first
    data = _with(GEMM, lambda m: m.graph.initializer.append(_weight("w", (3, 4), fill=2.0)))
    with pytest.raises(ember.onnx.OnnxImportError, match="the initializer 'w' is given twice"):
        ember.onnx.load(data)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(onnx.load_from_string(data))


def test_an_axis_beyond_32_bits_is_refused_not_wrapped():
    # ONNX Runtime keeps the low 32 bits: -2**49 - 1 runs as axis -1
    node = helper.make_node("Softmax", ["x"], ["y"], axis=-(2**49) - 1)
    data = _model([node], [_value("x")], [_value("y")])
    with pytest.raises(ember.onnx.OnnxImportError, match="out of the 32-bit range"):
        ember.onnx.load(data)


def test_shapes_declared_for_outputs_and_values_may_contradict_inference_as_in_ort():
    # ONNX Runtime only warns about a declared shape it cannot merge, and runs the model; so
    # does an output with no type at all and the domain name "ai.onnx"
    def edit(m):
        m.graph.output[0].type.tensor_type.shape.dim[0].dim_value = 7
        m.graph.value_info.append(_value("y", (5, 5, 5)))
        m.graph.output.append(helper.make_value_info("x", onnx.TypeProto()))
        m.graph.node[0].domain = "ai.onnx"

    data = _with(GEMM, edit)
    ours = ember.onnx.load(data)(ember.from_numpy(X24))
    theirs = _ort_outputs(data, {"x": X24})
    np.testing.assert_allclose(ours[0].detach().numpy(), theirs[0], rtol=1e-6)
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1])


def test_a_feed_is_checked_against_the_declared_type_and_dims_as_in_ort():
    model = ember.onnx.load(GEMM)
    with pytest.raises(RuntimeError, match=r"input 'x' has shape \(3, 4\); the model declares"):
        model(ember.ones(3, 4))
    with pytest.raises(RuntimeError, match="input 'x' is ember.float64; the model declares FLOAT"):
        model(ember.ones(2, 4, dtype=ember.float64))
    assert _ort_refuses(GEMM, {"x": np.ones((3, 4), np.float32)})
    assert _ort_refuses(GEMM, {"x": np.ones((2, 4), np.float64)})
    assert model([[1.0] * 4] * 2).shape == (2, 3)  # a list is converted to the declared type


def test_a_symbolic_dim_takes_any_size():
    data = _with(
        GEMM,
        lambda m: setattr(m.graph.input[0].type.tensor_type.shape.dim[0], "dim_param", "batch"),
    )
    data = _with(data, lambda m: m.graph.output[0].type.tensor_type.shape.dim[0].Clear())
    assert ember.onnx.load(data)(ember.ones(5, 4)).shape == (5, 3)


def test_gemm_refuses_a_bias_that_broadcasts_only_both_ways_as_ort_does():
    # C broadcasts to (M, N) one way only: (2, 1) does for (2, 3); (2,) does not
    for shape, runs in (((2, 1), True), ((2,), False), ((1, 2, 3), False)):
        bias = numpy_helper.from_array(np.ones(shape, np.float32), "c")
        node = helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1)
        weight = numpy_helper.from_array(np.ones((3, 4), np.float32), "w")
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
        data = _model([node], [x], [_value("y", None)], [weight, bias])
        try:
            model = ember.onnx.load(data)
        except ember.onnx.OnnxImportError:  # found by inference where the file allows it
            assert not runs and _ort_refuses(data, {"x": X24})
            continue
        if runs:
            ours = model(ember.from_numpy(X24)).detach().numpy()
            np.testing.assert_allclose(ours, _ort_outputs(data, {"x": X24})[0])
        else:
            with pytest.raises(RuntimeError, match="Gemm: the bias of shape"):
                model(ember.from_numpy(X24))
            assert _ort_refuses(data, {"x": X24})


def test_reshape_refuses_a_shape_that_is_not_1d_as_ort_does():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    shape = helper.make_tensor_value_info("s", TensorProto.INT64, None)
    data = _model([helper.make_node("Reshape", ["x", "s"], ["y"])], [x, shape], [_value("y", None)])
    model = ember.onnx.load(data)
    with pytest.raises(
        RuntimeError, match=r"Reshape: the shape input must be 1-D, not of shape \(1, 2\)"
    ):
        model(ember.from_numpy(X), ember.tensor([[3, 2]]))
    with pytest.raises(RuntimeError, match="copies a dim"):
        model(ember.from_numpy(X), ember.tensor([6, 1, 0]))
    assert _ort_refuses(data, {"x": X, "s": np.array([[3, 2]])})
    assert _ort_refuses(data, {"x": X, "s": np.array([6, 1, 0])})
    assert model(ember.from_numpy(X), ember.tensor([0, 3, 1])).shape == (2, 3, 1)


def _run_both(nodes, inputs, outputs, initializers, feeds):
    data = _model(nodes, inputs, outputs, initializers, opset=18)
    model = ember.onnx.load(data)
    return data, model, [ember.from_numpy(v) for v in feeds.values()]


def test_gather_out_of_bounds_is_a_runtime_error_naming_the_node_as_ort_refuses():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    index = numpy_helper.from_array(np.array([0, 7], np.int64), "i")
    node = helper.make_node("Gather", ["x", "i"], ["y"], name="pick")
    data, model, args = _run_both([node], [x], [_value("y", None)], [index], {"x": X})
    with pytest.raises(
        RuntimeError, match=r"Gather: index 7 is out of bounds; it must be within \[-2, 1\]"
    ):
        model(*args)
    assert _ort_refuses(data, {"x": X})


def test_argmax_and_argmin_treat_nan_as_ort_does():
    # ONNX Runtime keeps the first value and moves on to a later one only when it compares
    # greater (less): a NaN first wins, a NaN later is passed over; torch would pick any NaN
    x = np.array([[2.0, 4.0, np.nan, 2.5], [np.nan, 1.0, 3.0, -1.0]], np.float32)
    node = helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0)
    low = helper.make_node("ArgMin", ["x"], ["z"], axis=1, keepdims=0)
    outputs = [_value("y", None, TensorProto.INT64), _value("z", None, TensorProto.INT64)]
    data, model, args = _run_both([node, low], [_value("x", (2, 4))], outputs, [], {"x": x})
    ours = [t.tolist() for t in model(*args)]
    assert ours == [t.tolist() for t in _ort_outputs(data, {"x": x})] == [[1, 0], [0, 0]]


def test_reduce_mean_of_nothing_is_zero_as_in_ort():
    x = np.ones((2, 0), np.float32)
    axes = numpy_helper.from_array(np.array([1], np.int64), "a")
    node = helper.make_node("ReduceMean", ["x", "a"], ["y"])
    data, model, args = _run_both(
        [node], [_value("x", (2, 0))], [_value("y", None)], [axes], {"x": x}
    )
    ours = model(*args).numpy()
    np.testing.assert_array_equal(ours, _ort_outputs(data, {"x": x})[0])
    np.testing.assert_array_equal(ours, np.zeros((2, 1), np.float32))


def test_axes_and_starts_that_are_not_1d_are_refused_as_ort_does():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    axes = numpy_helper.from_array(np.array([[1]], np.int64), "a")
    starts = numpy_helper.from_array(np.array([[0]], np.int64), "s")
    ends = numpy_helper.from_array(np.array([2], np.int64), "e")
    for node, inits, words in (
        (helper.make_node("ReduceMean", ["x", "a"], ["y"]), [axes], "the axes input must be 1-D"),
        (helper.make_node("Slice", ["x", "s", "e"], ["y"]), [starts, ends], "the starts input"),
    ):
        data, model, args = _run_both([node], [x], [_value("y", None)], inits, {"x": X})
        with pytest.raises(RuntimeError, match=words):
            model(*args)
        assert _ort_refuses(data, {"x": X})


def test_an_output_listed_twice_is_checked_by_its_first_declaration_as_in_ort():
    outputs = [_value("y", None, TensorProto.DOUBLE), _value("y", None, TensorProto.FLOAT)]
    data = _model([helper.make_node("Relu", ["x"], ["y"])], [_value("x")], outputs)
    with pytest.raises(ember.onnx.OnnxImportError, match="Inferred elem type differs"):
        ember.onnx.load(data)
    assert _ort_refuses(data, {"x": X})
    outputs.reverse()
    data = _model([helper.make_node("Relu", ["x"], ["y"])], [_value("x")], outputs)
    ours = ember.onnx.load(data)(ember.from_numpy(X))
    assert [t.tolist() for t in ours] == [t.tolist() for t in _ort_outputs(data, {"x": X})]


def test_an_attribute_name_that_is_not_utf8_is_refused():
    data = _model(
        [helper.make_node("Relu", ["x"], ["y"], zzzz=1)], [_value("x")], [_value("y")]
    ).replace(b"zzzz", b"\xff\xfe\xfd\xfc")
    with pytest.raises(ember.onnx.OnnxImportError, match="Relu has no attribute"):
        ember.onnx.load(data)
    assert _ort_refuses(data, {"x": X})


@pytest.mark.parametrize(
    "node, words",
    [
        (
            helper.make_node("ArgMax", ["x"], ["y"], keepdims=2**31),
            "the attribute 'keepdims' is 2147483648, out of the 32-bit range",
        ),
        (
            helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1, 1], auto_pad="SAME"),
            "auto_pad b'SAME' is none of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
        ),
        (
            helper.make_node("Transpose", ["x"], ["y"], perm=[1]),
            "perm [1] is not a permutation of 0 to 0",
        ),
        (
            helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0, 2]),
            "perm [1, 0, 2] orders 3 dims; the input has 4",
        ),
    ],
)
def test_attributes_onnx_runtime_refuses_at_load_are_refused(node, words):
    # ONNX Runtime runs keepdims=2**31 as its low 32 bits (0): ember refuses instead
    data = _model([node], [_value("x", (1, 2, 5, 5))], [_value("y", None)])
    with pytest.raises(ember.onnx.OnnxImportError, match="^ember.onnx.load: ") as caught:
        ember.onnx.load(data)
    assert words in str(caught.value)
    assert node.op_type == "ArgMax" or _ort_refuses(data, {"x": IMAGE})


def test_clip_refuses_bounds_of_more_than_one_value_as_ort_does():
    low = numpy_helper.from_array(np.zeros((2,), np.float32), "low")
    node = helper.make_node("Clip", ["x", "low"], ["y"])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    data = _model([node], [x], [_value("y", None)], [low])
    with pytest.raises(RuntimeError, match=r"Clip: min must hold one value, not a tensor of shape"):
        ember.onnx.load(data)(ember.from_numpy(X))
    assert _ort_refuses(data, {"x": X})


def test_an_ir3_model_is_type_checked_with_its_initializers():
    # before IR 4, inference reads only initializers listed as inputs; ONNX Runtime all of them
    data = _with(
        GEMM, lambda m: setattr(m.graph.input[0].type.tensor_type.shape.dim[1], "dim_value", 1)
    )
    data = _with(data, lambda m: setattr(m, "ir_version", 3))
    with pytest.raises(ember.onnx.OnnxImportError, match="inference refuses the model"):
        ember.onnx.load(data)
    assert _ort_refuses(data, {"x": np.ones((2, 1), np.float32)})
