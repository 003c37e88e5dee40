"""File fuzzing of ``ember.onnx.load`` against ONNX Runtime.

Random mutations of three valid models (an MLP and a CNN exported by ember, and a graph of shape
and indexing ops built with ``onnx.helper``): raw bytes of the file, and structured mutations of
the ModelProto (initializers' dims, data and data type; nodes' inputs, outputs, operator types,
attributes and order; the graph's inputs, outputs and opset). Each mutated file is loaded by
ember and run once on the valid input, and run by ONNX Runtime on the same input, each library in
a child process with its address space capped. Every case must end in one of:

- both run, with equal values, dtypes and shapes;
- ember refuses at load with ``OnnxImportError`` where ONNX Runtime refuses the file (at session
  creation or at the run), or where ember lacks what the file uses (an operator, a type);
- both refuse the run (a shape that only the run shows), ember with a ``RuntimeError``.

Never another exception (KeyError, IndexError, a NumPy error), never a value ONNX Runtime does not
compute, never a run ONNX Runtime refuses. A sample of the files also goes through ``ember
inspect`` and ``ember diff``: exit code 0, 1 or 2, and for 2 one line on stderr. Seeds are fixed:
a failure names its case, and ``mutated_model(family, seed)`` rebuilds it.
"""

from __future__ import annotations

import copy
import functools
import os
import pickle
import random
import subprocess
import sys

import numpy as np
import pytest

from ..serialization.test_fuzz import _mutate

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

# 150 per family by default; EMBER_FUZZ_CASES=2000 for a longer run (seeds 0..N-1)
CASES_PER_FAMILY = int(os.environ.get("EMBER_FUZZ_CASES", "150"))
MEMORY_CAP = 3 << 30  # bytes of address space for each child (the valid models need < 1 MB)
CLI_EVERY = 5  # every fifth case also goes through `ember inspect` and `ember diff`

_EMBER_CHILD = r"""
import contextlib, io, os, pickle, resource, sys, tempfile, warnings
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
result_fd = os.dup(1)
os.dup2(2, 1)
warnings.simplefilter("ignore")
import numpy as np
import ember
from ember import cli
from ember.onnx import OnnxImportError
sys.setrecursionlimit(1000)
cases = pickle.load(sys.stdin.buffer)
folder = tempfile.mkdtemp()
outcomes = []
for case in cases:
    name, blob, feeds = case["name"], case["blob"], case["feeds"]
    outcome = {"name": name}
    try:
        model = ember.onnx.load(blob)
    except OnnxImportError as exc:
        outcome.update(status="refused", detail=str(exc)[:300])
    except BaseException as exc:
        outcome.update(status="ESCAPED at load", detail=f"{type(exc).__name__}: {str(exc)[:300]}")
    else:
        try:
            with ember.no_grad():
                result = model(*[ember.from_numpy(a) for a in feeds.values()])
            result = result if isinstance(result, tuple) else (result,)
            outcome.update(status="ran", outputs=[np.asarray(r.detach().numpy()) for r in result])
        except RuntimeError as exc:
            outcome.update(status="run refused", detail=f"{type(exc).__name__}: {str(exc)[:300]}")
        except BaseException as exc:
            detail = f"{type(exc).__name__}: {str(exc)[:300]}"
            outcome.update(status="ESCAPED at run", detail=detail)
    if case["cli"] is not None:
        path = os.path.join(folder, "mutated.onnx")
        with open(path, "wb") as f:
            f.write(blob)
        for argv in (["inspect", path], ["diff", path, case["cli"]]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = cli.main(argv)
            lines = err.getvalue().strip().splitlines()
            if code not in (0, 1, 2) or (code == 2 and len(lines) != 1):
                outcome.setdefault("cli", []).append(f"{argv[0]}: exit {code}: {lines[-3:]}")
    outcomes.append(outcome)
with os.fdopen(result_fd, "wb") as results:
    pickle.dump(outcomes, results)
"""

_ORT_CHILD = r"""
import os, pickle, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
result_fd = os.dup(1)
os.dup2(2, 1)  # ONNX Runtime's own messages go to stdout: keep them out of the results
import numpy as np
import onnxruntime as ort
options = ort.SessionOptions()
options.log_severity_level = 4
outcomes = []
for case in pickle.load(sys.stdin.buffer):
    try:
        session = ort.InferenceSession(case["blob"], options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        outcomes.append({"status": "refused", "detail": str(exc)[:300]})
        continue
    try:
        outputs = session.run(None, case["feeds"])
    except Exception as exc:
        outcomes.append({"status": "run refused", "detail": str(exc)[:300]})
        continue
    outcomes.append({"status": "ran", "outputs": [np.asarray(o) for o in outputs]})
with os.fdopen(result_fd, "wb") as results:
    pickle.dump(outcomes, results)
"""


# --- the valid models ----------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _valid_models() -> dict:
    """name -> (ModelProto, feeds): the models every mutation starts from."""
    import io

    import ember

    ember.manual_seed(0)
    nn = ember.nn
    exported = {}
    mlp = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax(-1))
    cnn = nn.Sequential(
        nn.Conv2d(1, 2, 3, padding=1),
        nn.BatchNorm2d(2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(8, 3),
    )
    for name, module, shape in (("mlp", mlp, (2, 4)), ("cnn", cnn, (1, 1, 4, 4))):
        module.eval()
        f = io.BytesIO()
        ember.onnx.export(module, (ember.randn(*shape),), f, input_names=["x"], output_names=["y"])
        feeds = {"x": np.random.default_rng(1).standard_normal(shape).astype(np.float32)}
        exported[name] = (onnx.load_from_string(f.getvalue()), feeds)
    exported["shapes"] = (
        _shape_ops_model(),
        {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4)},
    )
    return exported


def _shape_ops_model():
    """A graph of shape, indexing and reduction ops with integer initializers and attributes."""
    inits = [
        numpy_helper.from_array(np.array([4, 6], np.int64), "shape"),
        numpy_helper.from_array(np.array([0, 2, 3], np.int64), "index"),
        numpy_helper.from_array(np.array([1], np.int64), "axes"),
        numpy_helper.from_array(np.array([0, 1], np.int64), "starts"),
        numpy_helper.from_array(np.array([2, 5], np.int64), "ends"),
        numpy_helper.from_array(np.full((1, 6), 0.5, np.float32), "scale"),
    ]
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
        helper.make_node("Reshape", ["t", "shape"], ["r"]),
        helper.make_node("Gather", ["r", "index"], ["g"], axis=0),
        helper.make_node("Mul", ["g", "scale"], ["m"]),
        helper.make_node("Slice", ["m", "starts", "ends"], ["s"]),
        helper.make_node("ReduceMean", ["s", "axes"], ["mean"], keepdims=1),
        helper.make_node("Concat", ["s", "mean"], ["c"], axis=1),
        helper.make_node("Cast", ["c"], ["y"], to=TensorProto.DOUBLE),
        helper.make_node("ArgMax", ["c"], ["arg"], axis=1, keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "shapes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 3, 4))],
        [
            helper.make_tensor_value_info("y", TensorProto.DOUBLE, None),
            helper.make_tensor_value_info("arg", TensorProto.INT64, None),
        ],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


# --- mutations -----------------------------------------------------------------------------
_OPS = [
    "Add", "Mul", "Relu", "Gemm", "MatMul", "Conv", "Reshape", "Transpose", "Softmax", "Cast",
    "Gather", "Slice", "Concat", "Identity", "MaxPool", "BatchNormalization", "ReduceMean",
    "Flatten", "Squeeze", "Unsqueeze", "Expand", "Split", "LSTM", "Where", "Pad", "Constant",
    "NoSuchOp", "Div", "Pow", "Clip", "ArgMax", "Tile", "ConstantOfShape", "Shape", "Range",
]  # fmt: skip
_INTERESTING_INTS = [-(2**62), -5, -2, -1, 0, 1, 2, 3, 5, 7, 2**31, 2**62]


def _value_names(graph) -> list:
    names = [i.name for i in graph.input] + [t.name for t in graph.initializer]
    return names + [o for node in graph.node for o in node.output] + ["", "nowhere"]


def _mutate_initializer(graph, rng: random.Random) -> None:
    tensor = rng.choice(graph.initializer)
    how = rng.randrange(9)
    if how == 0:  # one dim changed, added or removed
        dims = list(tensor.dims)
        choice = rng.randrange(3)
        if choice == 0 and dims:
            dims[rng.randrange(len(dims))] = rng.choice(_INTERESTING_INTS)
        elif choice == 1:
            dims.insert(rng.randrange(len(dims) + 1), rng.choice([1, 1, 2, 0]))
        elif dims:
            del dims[rng.randrange(len(dims))]
        tensor.ClearField("dims")
        tensor.dims.extend(dims)
    elif how == 1:  # the raw bytes mutated (values change, or the length)
        tensor.raw_data = _mutate(tensor.raw_data, rng)
    elif how == 2:  # another data type over the same bytes
        tensor.data_type = rng.choice([*range(0, 24), 999, -1])
    elif how == 3:  # the same values in the typed field instead of raw_data
        values = numpy_helper.to_array(tensor)
        typed = helper.make_tensor(tensor.name, tensor.data_type, values.shape, values.ravel())
        if rng.random() < 0.5 and len(values.ravel()):  # one value too few or too many
            field = helper.tensor_dtype_to_field(typed.data_type)
            values_field = getattr(typed, field)
            if rng.random() < 0.5:
                values_field.append(values_field[0])
            else:
                del values_field[-1]
        tensor.CopyFrom(typed)
    elif how == 4:  # values that are hard on every kernel
        values = numpy_helper.to_array(tensor).copy()
        if values.size:
            flat = values.reshape(-1)
            if values.dtype.kind == "f":
                flat[rng.randrange(flat.size)] = rng.choice([np.nan, np.inf, -np.inf, 0.0, 1e30])
            else:
                flat[rng.randrange(flat.size)] = rng.choice(_INTERESTING_INTS[1:-2] + [-100, 100])
            tensor.CopyFrom(numpy_helper.from_array(values, tensor.name))
    elif how == 5:  # renamed: to a name nothing reads, or to another value's name
        tensor.name = rng.choice(_value_names(graph) + ["renamed"])
    elif how == 6:  # gone
        graph.initializer.remove(tensor)
    elif how == 7:  # given twice, the second with other data
        twin = graph.initializer.add()
        twin.CopyFrom(tensor)
        twin.raw_data = _mutate(tensor.raw_data, rng)
    else:  # kept outside the file
        tensor.data_location = TensorProto.EXTERNAL
        entry = tensor.external_data.add()
        entry.key, entry.value = "location", rng.choice(["weights.bin", "../../etc/passwd"])


def _random_attribute(rng: random.Random, name: str):
    kind = rng.randrange(5)
    if kind == 0:
        return helper.make_attribute(name, rng.choice(_INTERESTING_INTS))
    if kind == 1:
        return helper.make_attribute(name, rng.choice([0.0, -1.0, 1e-5, float("nan"), 2.5]))
    if kind == 2:
        return helper.make_attribute(
            name, [rng.choice([-1, 0, 1, 2, 3]) for _ in range(rng.randrange(6))]
        )
    if kind == 3:
        return helper.make_attribute(name, rng.choice(["SAME_UPPER", "VALID", "reflect", "", "x"]))
    return helper.make_attribute(
        name, numpy_helper.from_array(np.array([rng.randrange(-3, 5)], np.int64))
    )


def _mutate_node(graph, rng: random.Random) -> None:
    node = rng.choice(graph.node)
    how = rng.randrange(9)
    if how == 0 and node.input:  # an input taken from another value, emptied or dropped
        at = rng.randrange(len(node.input))
        if rng.random() < 0.2:
            del node.input[at]
        else:
            node.input[at] = rng.choice(_value_names(graph))
    elif how == 1:  # one input more
        node.input.append(rng.choice(_value_names(graph)))
    elif how == 2:  # an output renamed, added or removed
        choice = rng.randrange(3)
        if choice == 0:
            node.output[rng.randrange(len(node.output))] = rng.choice(_value_names(graph))
        elif choice == 1:
            node.output.append(rng.choice(["extra", *_value_names(graph)]))
        else:
            del node.output[-1]
    elif how == 3:  # another operator
        node.op_type = rng.choice(_OPS)
    elif how == 4 and node.attribute:  # an attribute removed
        del node.attribute[rng.randrange(len(node.attribute))]
    elif how == 5:  # an attribute (the node's own or its schema's) given a random value
        names = [a.name for a in node.attribute]
        try:
            names += list(onnx.defs.get_schema(node.op_type, 17).attributes)
        except onnx.defs.SchemaError:
            pass
        name = rng.choice(names or ["axis"])
        kept = [a for a in node.attribute if a.name != name]
        node.ClearField("attribute")
        node.attribute.extend([*kept, _random_attribute(rng, name)])
    elif how == 6:  # nodes out of order, one gone or one twice
        nodes = list(graph.node)
        choice = rng.randrange(3)
        if choice == 0:
            rng.shuffle(nodes)
        elif choice == 1:
            nodes.remove(node)
        else:
            nodes.insert(rng.randrange(len(nodes) + 1), copy.deepcopy(node))
        graph.ClearField("node")
        graph.node.extend(nodes)
    elif how == 7:  # another domain
        node.domain = rng.choice(["com.microsoft", "ai.onnx", "ai.onnx.ml", "nowhere"])
    else:  # an unknown attribute
        node.attribute.append(helper.make_attribute(rng.choice(["foo", "axis", "alpha"]), 1))


def _mutate_graph(model, rng: random.Random) -> None:
    graph = model.graph
    how = rng.randrange(7)
    if how == 0:  # an output removed, renamed or added
        choice = rng.randrange(3)
        if choice == 0 and graph.output:
            del graph.output[rng.randrange(len(graph.output))]
        elif choice == 1 and graph.output:
            graph.output[rng.randrange(len(graph.output))].name = rng.choice(_value_names(graph))
        else:
            graph.output.append(
                helper.make_value_info(rng.choice(_value_names(graph)), onnx.TypeProto())
            )
    elif how == 1:  # an output's declared type or shape changed
        declared = rng.choice(graph.output).type.tensor_type
        if rng.random() < 0.5:
            declared.elem_type = rng.choice([1, 6, 7, 9, 11, 0])
        else:
            declared.shape.Clear()
            for _ in range(rng.randrange(4)):
                declared.shape.dim.add().dim_value = rng.choice([1, 2, 3, 8])
    elif how == 2:  # the input's declared type or shape changed
        declared = graph.input[0].type.tensor_type
        if rng.random() < 0.3:
            declared.elem_type = rng.choice([6, 7, 10, 11])
        else:
            dims = declared.shape.dim
            dims[rng.randrange(len(dims))].dim_value = rng.choice([1, 2, 3, 5])
    elif how == 3:  # another opset
        model.opset_import[0].version = rng.choice([1, 6, 7, 9, 11, 13, 14, 18, 21, 23, 30])
    elif how == 4:  # another IR version
        model.ir_version = rng.choice([0, 1, 3, 4, 7, 10, 11, 99])
    elif how == 5:  # an input more, or an initializer named like the input
        if rng.random() < 0.5:
            graph.input.append(helper.make_tensor_value_info("extra", TensorProto.FLOAT, [2]))
        else:
            graph.initializer.append(
                numpy_helper.from_array(np.ones((2,), np.float32), graph.input[0].name)
            )
    else:  # a value_info that contradicts the graph
        target = rng.choice([o for n in graph.node for o in n.output])
        graph.value_info.append(helper.make_tensor_value_info(target, rng.choice([6, 7, 9]), [7]))


FAMILIES = ["onnx-bytes", "onnx-initializers", "onnx-nodes", "onnx-graph"]


def mutated_model(family: str, seed: int) -> tuple[bytes, dict, str]:
    """The mutated file of case ``seed`` in ``family``, its feeds and the base model's name."""
    rng = random.Random(f"{family}-{seed}")
    base = rng.choice(sorted(_valid_models()))
    model, feeds = _valid_models()[base]
    if family == "onnx-bytes":
        return _mutate(model.SerializeToString(), rng), feeds, base
    model = copy.deepcopy(model)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        try:
            if family == "onnx-initializers" and len(model.graph.initializer):
                _mutate_initializer(model.graph, rng)
            elif family == "onnx-nodes" and len(model.graph.node):
                _mutate_node(model.graph, rng)
            elif family == "onnx-graph":
                _mutate_graph(model, rng)
        except Exception:  # noqa: BLE001 - onnx cannot read a tensor mutated before
            pass
    return model.SerializeToString(), feeds, base


# --- running and judging -------------------------------------------------------------------
def _run_child(script: str, cases: list) -> list:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", script, str(MEMORY_CAP)],
        input=pickle.dumps(cases),
        capture_output=True,
        timeout=1800,  # 5,000 cases of a family take about 10 min on a busy 2-core machine
        env=env,
    )
    assert done.returncode == 0, f"a fuzz child died ({done.returncode}): {done.stderr[-3000:]!r}"
    return pickle.loads(done.stdout)


def _equal(ours: list, theirs: list) -> str | None:
    """Why ember's outputs differ from ONNX Runtime's; None if they agree."""
    if len(ours) != len(theirs):
        return f"{len(ours)} outputs, ONNX Runtime {len(theirs)}"
    for index, (a, b) in enumerate(zip(ours, theirs)):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output {index}: {a.dtype}{a.shape}, ONNX Runtime {b.dtype}{b.shape}"
        if a.dtype.kind in "fc":
            # from an inf weight, ember's im2col may give NaN (inf * 0 at the padding) where
            # ONNX Runtime's convolution gives inf: both mean the same broken value
            nonfinite = (np.isnan(a) & ~np.isfinite(b)) | (np.isnan(b) & ~np.isfinite(a))
            a, b = np.where(nonfinite, np.nan, a), np.where(nonfinite, np.nan, b)
            close = np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
        else:
            close = np.array_equal(a, b)
        if not close:
            return f"output {index}: values differ: {a.ravel()[:6]} vs {b.ravel()[:6]}"
    return None


# what ember may refuse although ONNX Runtime runs it: what it lacks, and an initializer given
# twice (ONNX's checker refuses it; ONNX Runtime computes with the first or the last copy,
# depending on the graph, so no choice would give its values)
_EMBER_LACKS = ("has no ember mapping", "cannot hold", "ember runs the default ONNX domain")
_REFUSED_ON_PURPOSE = ("is given twice", "out of the 32-bit range")  # ORT keeps 32 bits


def judge(ember_outcome: dict, ort_outcome: dict) -> str | None:
    """Why a case fails (None when ember behaved as promised)."""
    ours, theirs = ember_outcome["status"], ort_outcome["status"]
    if ours.startswith("ESCAPED"):
        return f"{ours}: {ember_outcome['detail']}"
    if ember_outcome.get("cli"):
        return f"the CLI: {ember_outcome['cli']}"
    if theirs == "ran":
        if ours == "ran":
            return _equal(ember_outcome["outputs"], ort_outcome["outputs"])
        allowed = _EMBER_LACKS + _REFUSED_ON_PURPOSE
        if ours == "refused" and any(w in ember_outcome["detail"] for w in allowed):
            return None
        return f"ember {ours} ({ember_outcome['detail']}) what ONNX Runtime runs"
    if "NOT_IMPLEMENTED" in ort_outcome["detail"]:
        return None  # ONNX Runtime lacks a kernel (Gemm of opset 6): nothing to compare with
    if ours == "ran":
        return f"ember ran what ONNX Runtime {theirs} ({ort_outcome['detail']})"
    if ours == "run refused" and theirs == "refused":
        return f"ember refused at the run ({ember_outcome['detail']}), ONNX Runtime at load"
    return None


def _cases(family: str, seeds) -> list:
    cli_reference = None
    cases = []
    for seed in seeds:
        blob, feeds, base = mutated_model(family, seed)
        feeds = _feeds_for(blob, feeds)
        cases.append(
            {"name": f"{family}:{seed} ({base})", "blob": blob, "feeds": feeds, "cli": None}
        )
        if seed % CLI_EVERY == 0:
            cases[-1]["cli"] = cli_reference = cli_reference or _reference_file()
    return cases


def _feeds_for(blob: bytes, feeds: dict) -> dict:
    """The valid input for the graph inputs of ``blob`` that are not initializers, in their
    order: the base model's where the name is its, zeros of the declared type and shape (an
    unknown dim as 1) for an input a mutation added."""
    try:
        graph = onnx.load_from_string(blob).graph
    except Exception:  # noqa: BLE001 - not a model: every runtime refuses it anyway
        return feeds
    constants = {t.name for t in graph.initializer}
    given = {}
    for value in graph.input:
        if value.name in constants or value.name in given:
            continue
        if value.name in feeds:
            given[value.name] = feeds[value.name]
            continue
        declared = value.type.tensor_type
        try:
            dtype = helper.tensor_dtype_to_np_dtype(declared.elem_type)
        except Exception:  # noqa: BLE001 - an undefined type: feed float32
            dtype = np.float32
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in declared.shape.dim]
        given[value.name] = np.zeros([min(max(d, 0), 8) for d in shape], dtype)
    return given


@functools.lru_cache(maxsize=1)
def _reference_file() -> str:
    """A valid model on disk, the other side of `ember diff`."""
    import tempfile

    path = os.path.join(tempfile.mkdtemp(), "reference.onnx")
    onnx.save(_valid_models()["mlp"][0], path)
    return path


def run_family(family: str, seeds) -> list:
    """(case name, why it failed or None, ember's status, ONNX Runtime's status) per case."""
    cases = _cases(family, seeds)
    ours = _run_child(_EMBER_CHILD, cases)
    theirs = _run_child(_ORT_CHILD, [{"blob": c["blob"], "feeds": c["feeds"]} for c in cases])
    return [(a["name"], judge(a, b), a["status"], b["status"]) for a, b in zip(ours, theirs)]


@pytest.mark.parametrize("family", FAMILIES)
def test_mutated_onnx_files_load_as_onnx_runtime_runs_them_or_are_refused(family):
    results = run_family(family, range(CASES_PER_FAMILY))
    failures = [(name, why) for name, why, *_ in results if why]
    assert not failures, failures[:10]
    statuses = {(ours, theirs) for _, _, ours, theirs in results}
    # the mutations reach past the first check: some files run, others are refused
    assert ("ran", "ran") in statuses
    assert ("refused", "refused") in statuses


def test_the_unmutated_models_run_as_onnx_runtime_runs_them():
    cases = [
        {"name": name, "blob": model.SerializeToString(), "feeds": feeds, "cli": _reference_file()}
        for name, (model, feeds) in sorted(_valid_models().items())
    ]
    ours = _run_child(_EMBER_CHILD, cases)
    theirs = _run_child(_ORT_CHILD, [{"blob": c["blob"], "feeds": c["feeds"]} for c in cases])
    assert [o["status"] for o in ours] == ["ran"] * 3
    assert [judge(a, b) for a, b in zip(ours, theirs)] == [None] * 3
