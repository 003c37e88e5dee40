"""What ``ember.onnx.load`` checks before it builds a module: what ONNX Runtime checks before
it runs a model.

Each tensor's data must match its type and shape, every name a node reads must be defined
exactly once, the graph must have outputs and no cycle, and each node must have the inputs and
attributes its operator's schema asks for. A model that fails a check raises one
``OnnxImportError`` at load, naming the node or initializer, never a KeyError at the first
forward. Nodes listed out of order are put in an order that runs, as ONNX Runtime does.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from onnx import (
    IR_VERSION,
    AttributeProto,
    TensorProto,
    defs,
    helper,
    numpy_helper,
    shape_inference,
)

from ._state import OnnxImportError

# the ONNX element types ember tensors hold (not strings, float8 or 4-bit integers)
EMBER_TYPES = frozenset(
    {
        TensorProto.FLOAT,
        TensorProto.DOUBLE,
        TensorProto.FLOAT16,
        TensorProto.BFLOAT16,
        TensorProto.COMPLEX64,
        TensorProto.COMPLEX128,
        TensorProto.INT8,
        TensorProto.INT16,
        TensorProto.INT32,
        TensorProto.INT64,
        TensorProto.UINT8,
        TensorProto.UINT16,
        TensorProto.UINT32,
        TensorProto.UINT64,
        TensorProto.BOOL,
    }
)
_COMPLEX = (TensorProto.COMPLEX64, TensorProto.COMPLEX128)


def type_name(data_type: int) -> str:
    """``FLOAT`` for 1; the number itself for a code ONNX does not define."""
    try:
        return TensorProto.DataType.Name(data_type)
    except ValueError:
        return str(data_type)


def is_onnx_type(data_type: int) -> bool:
    return data_type != TensorProto.UNDEFINED and data_type in TensorProto.DataType.values()


def check_tensor(tensor, what: str = "initializer") -> None:
    """Raise ``OnnxImportError`` unless ``tensor`` (a TensorProto) has an ONNX data type,
    non-negative dims, its data in the file, and exactly as many values as its dims ask for.
    The count is checked before anything is allocated: dims of (10**6, 10**6) with no data are
    refused, not materialised."""
    label = f"{what} '{tensor.name}'"
    if not is_onnx_type(tensor.data_type):
        raise OnnxImportError(
            f"ember.onnx.load: {label} has data type {tensor.data_type}, which ONNX does not define"
        )
    dims = tuple(tensor.dims)
    if any(d < 0 for d in dims):
        raise OnnxImportError(f"ember.onnx.load: {label} has a negative dimension in {dims}")
    if tensor.data_location == TensorProto.EXTERNAL:
        where = next((e.value for e in tensor.external_data if e.key == "location"), "?")
        raise OnnxImportError(
            f"ember.onnx.load: {label} keeps its data in the external file {where!r}, which was "
            "not read (load the model from its path, with that file beside it)"
        )
    data_type = tensor.data_type
    if data_type not in EMBER_TYPES and data_type != TensorProto.STRING:
        return  # a type ember lacks: refused where a node reads it (ember_tensor_type)
    count = math.prod(dims)
    kind = f"{type_name(data_type)} {dims}"
    if data_type != TensorProto.STRING and tensor.HasField("raw_data"):
        expected = count * helper.tensor_dtype_to_np_dtype(data_type).itemsize
        if len(tensor.raw_data) != expected:
            raise OnnxImportError(
                f"ember.onnx.load: {label} ({kind}) holds {len(tensor.raw_data)} bytes of raw "
                f"data; its type and shape need {expected}"
            )
        return
    field = helper.tensor_dtype_to_field(data_type)
    expected = count * (2 if data_type in _COMPLEX else 1)  # complex: real, imaginary
    held = len(getattr(tensor, field))
    if held != expected:
        raise OnnxImportError(
            f"ember.onnx.load: {label} ({kind}) holds {held} values in {field}; its shape needs "
            f"{expected}"
        )


def tensor_array(tensor, what: str = "initializer") -> np.ndarray:
    """A checked TensorProto's values as a NumPy array of its own (strings as ``bytes``)."""
    check_tensor(tensor, what)
    return np.array(numpy_helper.to_array(tensor))


def ember_tensor_type(data_type: int, label: str) -> None:
    """Raise unless ember tensors hold ``data_type`` (``label`` says whose type it is)."""
    if data_type not in EMBER_TYPES:
        raise OnnxImportError(
            f"ember.onnx.load: {label} has type {type_name(data_type)}, which ember tensors "
            "cannot hold"
        )


def describe(node, index: int) -> str:
    """``node 'conv1' (Conv)``, or ``node #3 (Conv)`` for one without a name."""
    if node.name:
        return f"node '{node.name}' ({node.op_type})"
    return f"node #{index} ({node.op_type})"


_AUTO_PADS = (b"NOTSET", b"SAME_UPPER", b"SAME_LOWER", b"VALID")


def check_schema(node, index: int, opset: int) -> None:
    """The node's input and output counts, required inputs and attributes against its
    operator's schema in ``opset`` (ONNX Runtime refuses the same)."""
    where = describe(node, index)
    try:
        schema = defs.get_schema(node.op_type, opset, "")
    except defs.SchemaError:
        raise OnnxImportError(
            f"ember.onnx.load: {where}: ONNX has no operator {node.op_type} in opset {opset}"
        ) from None
    for kind, given, low, high in (
        ("inputs", len(node.input), schema.min_input, schema.max_input),
        ("outputs", len(node.output), schema.min_output, schema.max_output),
    ):
        if not low <= given <= high:
            allowed = str(low) if low == high else f"{low} to {high}"
            kind = kind if given != 1 else kind[:-1]
            raise OnnxImportError(
                f"ember.onnx.load: {where} has {given} {kind}; {node.op_type}-"
                f"{schema.since_version} takes {allowed} (in opset {opset})"
            )
    for position, name in enumerate(node.input):
        formal = schema.inputs[min(position, len(schema.inputs) - 1)]
        if not name and formal.option != defs.OpSchema.FormalParameterOption.Optional:
            raise OnnxImportError(
                f"ember.onnx.load: {where}: input {position} ({formal.name}) is required but "
                "the node leaves it empty"
            )
    # a name that is not UTF-8 comes as bytes: decoded, it names no attribute of the schema
    given = {a.name if isinstance(a.name, str) else repr(a.name) for a in node.attribute}
    if len(given) < len(node.attribute):
        twice = next(
            a.name
            for i, a in enumerate(node.attribute)
            if a.name in {b.name for b in node.attribute[:i]}
        )
        raise OnnxImportError(f"ember.onnx.load: {where}: the attribute '{twice}' is given twice")
    unknown = sorted(given - set(schema.attributes))
    if unknown:
        raise OnnxImportError(
            f"ember.onnx.load: {where}: {node.op_type} has no attribute '{unknown[0]}'"
        )
    for attribute in node.attribute:
        expected = schema.attributes[attribute.name].type
        if attribute.type != expected:  # ONNX Runtime: "Mismatched attribute type"
            given_type = AttributeProto.AttributeType.Name(attribute.type)
            raise OnnxImportError(
                f"ember.onnx.load: {where}: the attribute '{attribute.name}' is "
                f"{given_type}; {node.op_type} takes {expected.name}"
            )
        wide = attribute.type == AttributeProto.INT and not -(2**31) <= attribute.i < 2**31
        if wide and attribute.name != "value_int":
            # ONNX Runtime keeps the low 32 bits of axis, keepdims...: -2**49 - 1 runs as -1
            raise OnnxImportError(
                f"ember.onnx.load: {where}: the attribute '{attribute.name}' is {attribute.i}, "
                "out of the 32-bit range"
            )
        if attribute.name == "auto_pad" and attribute.s not in _AUTO_PADS:
            raise OnnxImportError(
                f"ember.onnx.load: {where}: auto_pad {attribute.s!r} is none of "
                + ", ".join(p.decode() for p in _AUTO_PADS)
            )
    for name, attribute in schema.attributes.items():
        if attribute.required and name not in given:
            raise OnnxImportError(
                f"ember.onnx.load: {where}: the required attribute '{name}' is missing"
            )


def run_order(nodes: list, defined: set) -> list[int]:
    """Indices of ``nodes`` in an order in which each runs after the nodes it reads from (the
    file's own order where that works). ``defined``: the graph's inputs and initializers.
    Raises for a name defined twice, a name read that nothing defines, and a cycle."""
    producer: dict = {}
    for index, node in enumerate(nodes):
        for name in node.output:
            if not name:
                continue
            if name in defined or name in producer:
                raise OnnxImportError(
                    f"ember.onnx.load: {describe(node, index)}: '{name}' is defined twice ("
                    + (
                        "it is also a graph input or an initializer)"
                        if name in defined
                        else f"{describe(nodes[producer[name]], producer[name])} defines it too)"
                    )
                )
            producer[name] = index
    waiting = [0] * len(nodes)
    readers: dict = {}
    for index, node in enumerate(nodes):
        for name in dict.fromkeys(node.input):
            if not name or name in defined:
                continue
            if name not in producer:
                raise OnnxImportError(
                    f"ember.onnx.load: {describe(node, index)} reads '{name}', which is not a "
                    "graph input, an initializer or an output of a node"
                )
            waiting[index] += 1
            readers.setdefault(name, []).append(index)
    ready = [index for index, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        index = heapq.heappop(ready)
        order.append(index)
        for name in nodes[index].output:
            for reader in readers.get(name, ()):
                waiting[reader] -= 1
                if waiting[reader] == 0:
                    heapq.heappush(ready, reader)
    if len(order) < len(nodes):
        stuck = [describe(nodes[i], i) for i, count in enumerate(waiting) if count]
        shown = ", ".join(stuck[:4]) + (f" and {len(stuck) - 4} more" if len(stuck) > 4 else "")
        raise OnnxImportError(
            f"ember.onnx.load: the graph is not acyclic: {shown} never get their inputs (a "
            "node reads, directly or through others, what it computes)"
        )
    return order


def live_nodes(nodes: list, order: list[int], outputs: list[str]) -> tuple[set, set]:
    """The indices of the nodes the graph's ``outputs`` need (ONNX Runtime does not run the
    others either), and every name those nodes and the outputs read."""
    needed = set(outputs)
    live = set()
    for index in reversed(order):
        node = nodes[index]
        if any(name in needed for name in node.output if name):
            live.add(index)
            needed.update(name for name in node.input if name)
    return live, needed


def check_outputs(graph, defined: set, nodes: list) -> None:
    if not graph.output:
        raise OnnxImportError("ember.onnx.load: the graph has no outputs")
    produced = {name for node in nodes for name in node.output if name}
    for output in graph.output:
        if output.name not in defined and output.name not in produced:
            raise OnnxImportError(
                f"ember.onnx.load: graph output '{output.name}' is not a graph input, an "
                "initializer or an output of a node"
            )


def check_versions(ir_version: int, opset: int) -> None:
    """An IR version and opset this onnx package defines (ONNX Runtime refuses newer ones)."""
    if ir_version > IR_VERSION:
        raise OnnxImportError(
            f"ember.onnx.load: the model has IR version {ir_version}; the onnx package reads "
            f"IR versions up to {IR_VERSION}"
        )
    newest = defs.onnx_opset_version()
    if not 1 <= opset <= newest:
        raise OnnxImportError(
            f"ember.onnx.load: the model imports opset {opset} of the default domain; the onnx "
            f"package knows opsets 1 to {newest}"
        )


def check_inputs(graph) -> None:
    """Each graph input named once (ONNX Runtime refuses a name given twice)."""
    seen = set()
    for value in graph.input:
        if value.name in seen:
            raise OnnxImportError(f"ember.onnx.load: the graph input '{value.name}' is given twice")
        seen.add(value.name)


def declared_input(value) -> tuple:
    """``(elem_type, dims)`` a graph input declares: 0 for no type, None for a dim that may
    be any size (a symbolic or missing one), dims None where no shape is declared."""
    if not value.type.HasField("tensor_type"):
        return 0, None
    declared = value.type.tensor_type
    if not declared.HasField("shape"):
        return declared.elem_type, None
    dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in declared.shape.dim)
    return declared.elem_type, dims


def _check_declarations(graph, produced: set, ir_version: int) -> None:
    """What ONNX Runtime checks of declared types besides inference: no tensor declared of
    type 0 where a value comes in or is computed, and an initializer's declared type and shape
    where it declares one: as a graph input, and before IR version 4 (where initializers are
    graph inputs too) as a value_info or a graph output. It ignores the other declarations."""
    constants = {t.name: t for t in graph.initializer}
    first_outputs = list({value.name: value for value in reversed(graph.output)}.values())
    declarations = [(value, True) for value in graph.input]
    declarations += [(value, False) for value in (*first_outputs, *graph.value_info)]
    for value, is_input in declarations:
        if not value.type.HasField("tensor_type"):
            continue
        declared = value.type.tensor_type
        constant = constants.get(value.name)
        if not declared.elem_type and (value.name in produced or constant is None):
            raise OnnxImportError(
                f"ember.onnx.load: '{value.name}' is declared a tensor of data type 0 (UNDEFINED)"
            )
        if constant is None or value.name in produced:
            continue
        if not is_input and ir_version >= 4:
            continue
        if declared.elem_type and declared.elem_type != constant.data_type:
            raise OnnxImportError(
                f"ember.onnx.load: the initializer '{value.name}' is "
                f"{type_name(constant.data_type)} but declared {type_name(declared.elem_type)}"
            )
        dims = [d.dim_value if d.HasField("dim_value") else None for d in declared.shape.dim]
        if declared.HasField("shape") and (
            len(dims) != len(constant.dims)
            or any(d is not None and d != c for d, c in zip(dims, constant.dims))
        ):
            shape = tuple("?" if d is None else d for d in dims)
            raise OnnxImportError(
                f"ember.onnx.load: the initializer '{value.name}' has dims "
                f"{tuple(constant.dims)} but is declared of shape {shape}".replace("'?'", "?")
            )


def check_types(model, order: list[int]):
    """ONNX's type and shape inference over ``model``, strict, as ONNX Runtime runs it when it
    builds a session. Input types that break an operator's type constraints, a computed type
    that contradicts a declared one, shapes that cannot meet (a MatMul of (2, 4) and (8, 3))
    raise ``OnnxImportError``.

    Declared shapes of outputs and intermediate values are left out first: ONNX Runtime only
    warns when they contradict what it infers, and runs the model. So are the later
    declarations of an output listed twice (ONNX Runtime reads the first). So is the domain name
    ``ai.onnx``, which ONNX Runtime reads as the default domain and inference does not. The
    nodes are inferred in ``order`` (``run_order``'s), since inference reads them in turn. Run
    after the node checks, whose messages say more."""
    probe = type(model)()
    probe.CopyFrom(model)
    # before IR version 4 inference reads only the initializers listed as inputs too; ONNX
    # Runtime reads them all
    probe.ir_version = max(probe.ir_version, 4)
    nodes = list(probe.graph.node)
    probe.graph.ClearField("node")
    probe.graph.node.extend(nodes[index] for index in order)
    for node in probe.graph.node:
        if node.domain == "ai.onnx":
            node.domain = ""
    produced = {name for node in probe.graph.node for name in node.output}
    _check_declarations(model.graph, produced, model.ir_version)
    for values in (probe.graph.output, probe.graph.value_info):
        seen = set()
        for value in list(values):
            # nothing to check: no type at all, or an output no node computes (ONNX Runtime
            # returns an initializer or an input as it is, whatever the output declares)
            untyped = value.type.WhichOneof("value") is None
            again = values is probe.graph.output and value.name in seen
            if untyped or value.name not in produced or again:
                values.remove(value)
            elif value.type.HasField("tensor_type"):
                value.type.tensor_type.ClearField("shape")
            seen.add(value.name)
    try:
        shape_inference.infer_shapes(probe, check_type=True, strict_mode=True)
    except Exception as exc:  # noqa: BLE001 - onnx's InferenceError, ValidationError and others
        detail = " ".join(str(exc).split())
        raise OnnxImportError(
            f"ember.onnx.load: ONNX type and shape inference refuses the model: {detail}"
        ) from None


def known_ranks(model, initializer_dims: dict) -> dict:
    """The rank of every value whose rank the file declares or ONNX shape inference finds
    (name -> rank); values of unknown rank are absent. ``initializer_dims``: name -> dims."""
    ranks = {name: len(dims) for name, dims in initializer_dims.items()}
    try:
        inferred = shape_inference.infer_shapes(model).graph
    except Exception:  # noqa: BLE001 - lenient here; check_types refuses what must be refused
        inferred = model.graph
    for info in (*inferred.input, *inferred.value_info, *inferred.output):
        tensor_type = info.type.tensor_type
        if info.type.HasField("tensor_type") and tensor_type.HasField("shape"):
            ranks.setdefault(info.name, len(tensor_type.shape.dim))
    return ranks
