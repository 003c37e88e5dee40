"""``export``: run the model once while every ember op call is recorded, map each outermost
call that depends on an input to ONNX nodes through ``SYMBOLICS``, then check and write the
model.

Interception reuses the profiler's mechanism (``ember.profiler._ops.Patched``): each op
function's code is swapped for a trampoline only while the export runs. Calls made inside
another op are not recorded (the outer op is one ONNX node or a small subgraph). Recurrent
modules are recorded whole, so that they become ONNX ``LSTM``/``GRU``/``RNN`` nodes with a
dynamic sequence length instead of a loop unrolled at the example's length.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import threading
import warnings

from .._tensor import Tensor
from ..profiler._ops import op_name, signature_of
from ._graph import GraphBuilder, value_info
from ._state import OnnxExporterError, TracerWarning, exporting
from ._symbolics import SYMBOLICS

DEFAULT_OPSET = 17
_RESERVED_OUTPUTS = 32  # default output names ("output_0", ...) kept free for the outputs
MIN_OPSET = 17

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_line() -> str:
    """``file:line`` of the innermost frame outside ember, where the user called the op."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        path = os.path.abspath(code.co_filename)
        # the profiler's or autocast's patched op code
        trampoline = "_ember_op" in code.co_varnames or "_ember_amp" in code.co_varnames
        if not trampoline and not path.startswith(_EMBER_DIR + os.sep):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


_canonical: dict = {}


def canonical_signatures() -> dict:
    """op name -> signature of its ``ember.ops``/``ember.nn.functional`` function, whose
    parameter names the symbolics use (Tensor methods such as ``add_(self, *args, **kwargs)``
    bind to it). Read before the ops are patched: a patched function shows the trampoline's."""
    if not _canonical:
        from ..profiler._ops import op_functions

        for fn, name in op_functions():
            module = fn.__module__
            if name not in _canonical and module.startswith(
                ("ember.ops.", "ember.nn.functional", "ember._creation")
            ):
                sig = _signature(fn)
                if sig:
                    _canonical[name] = sig
    return _canonical


def _signature(fn):
    """``fn``'s signature (False where it has none), behind any profiler or autocast patch."""
    return signature_of(fn)


def _bind(fn, name: str, args, kwargs) -> dict:
    """The call's arguments by parameter name, defaults filled in; ``self`` is ``input``."""
    sig = _signature(fn)
    loose = not sig or any(
        p.kind is p.VAR_POSITIONAL and p.name == "args" for p in sig.parameters.values()
    )
    if loose:
        sig = _canonical.get(name, sig)
    if not sig:
        return {"args": args, **kwargs}
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return {"args": args, **kwargs}
    bound.apply_defaults()
    out = dict(bound.arguments)
    if "self" in out:
        out["input"] = out.pop("self")
    return out


def _tensors_in(obj) -> list:
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors_in(o)]
    return []


class _Recorder:
    """Runs op calls, mapping the outermost ones that depend on an input to ONNX nodes."""

    def __init__(self, graph: GraphBuilder):
        self.graph = graph
        self.depth = 0
        self.thread = threading.get_ident()

    def run_op(self, entry, args, kwargs):
        fn, name = entry
        if self.depth or threading.get_ident() != self.thread:
            return fn(*args, **kwargs)
        self.depth += 1
        try:
            result = fn(*args, **kwargs)
            self._record(op_name(fn, name), fn, args, kwargs, result)
        finally:
            self.depth -= 1
        return result

    def run_module(self, module, forward, args, kwargs):
        if self.depth:
            return forward(*args, **kwargs)
        self.depth += 1
        try:
            result = forward(*args, **kwargs)
            self._record(module.mode, None, args, kwargs, result, module=module)
        finally:
            self.depth -= 1
        return result

    def _record(self, name, fn, args, kwargs, result, module=None) -> None:
        graph = self.graph
        if not (graph.is_dynamic(args) or graph.is_dynamic(kwargs)):
            return  # computed from constants only: folded, read as a constant when used
        outputs = _tensors_in(result)
        if not outputs:
            if result is not None:
                warnings.warn(
                    f"ember.onnx.export: '{name}' at {_user_line()} turned a tensor computed "
                    "from the inputs into a Python value; the exported graph keeps the path "
                    "this example took and treats the value as a constant, so it may be wrong "
                    "for other inputs",
                    TracerWarning,
                    stacklevel=2,
                )
            return
        symbolic = SYMBOLICS.get(name)
        if symbolic is None:
            raise OnnxExporterError(
                f"ember.onnx.export: op '{name}' (called at {_user_line()}) has no ONNX "
                "mapping; rewrite that line with supported ops or compute it outside the model"
            )
        bound = (
            {"module": module, "args": args, "kwargs": kwargs}
            if module is not None
            else _bind(fn, name, args, kwargs)
        )
        try:
            names = symbolic(graph, bound, result)
        except OnnxExporterError as exc:
            raise OnnxExporterError(f"{exc} (op '{name}' called at {_user_line()})") from None
        if isinstance(names, str):
            names = [names]
        if len(names) != len(outputs):
            raise OnnxExporterError(
                f"ember.onnx.export: internal error, '{name}' gave {len(names)} ONNX outputs "
                f"for {len(outputs)} results"
            )
        for tensor, value_name in zip(outputs, names):
            graph.bind(tensor, value_name)
        graph.track_aliasing(name, args, result)


def _split_args(args, kwargs):
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args) if isinstance(args, (list, tuple)) else (args,)
    if args and isinstance(args[-1], dict) and kwargs is None:
        args, kwargs = args[:-1], args[-1]
    return args, dict(kwargs or {})


def _dims(shape, axes) -> list:
    """ONNX dims: ints, or the symbolic names for the dynamic ``axes`` ({axis: name})."""
    return [axes.get(i, d) for i, d in enumerate(shape)]


def _axes_names(name: str, spec) -> dict:
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return {int(k): str(v) for k, v in spec.items()}
    return {int(a): f"{name}_dynamic_axes_{int(a) + 1}" for a in spec}


def build_model(
    model,
    args,
    kwargs=None,
    input_names=None,
    output_names=None,
    dynamic_axes=None,
    opset_version=None,
    export_params=True,
):
    """The checked ``onnx.ModelProto`` of ``model`` run on ``args``."""
    import onnx
    from onnx import helper

    from ..autograd.grad_mode import no_grad
    from ..profiler._ops import Patched

    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= newest:
        raise ValueError(
            f"ember.onnx.export: opset_version {opset} is not supported; use {MIN_OPSET} to "
            f"{newest} (the newest the installed onnx {onnx.__version__} knows)"
        )
    args, kwargs = _split_args(args, kwargs)
    dynamic_axes = dynamic_axes or {}

    params: dict = {}
    modules = []
    if hasattr(model, "named_parameters"):
        for pname, p in model.named_parameters():
            params.setdefault(id(p), pname)
        for bname, b in model.named_buffers():
            if b is not None:
                params.setdefault(id(b), bname)
        modules = list(model.modules())
    graph = GraphBuilder(opset, params)

    inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    input_names = list(input_names or [])
    if len(input_names) > len(inputs):
        raise ValueError(
            f"ember.onnx.export: {len(input_names)} input_names for {len(inputs)} tensor inputs"
        )
    default = ["input"] if len(inputs) == 1 else [f"input_{i}" for i in range(len(inputs))]
    input_names += default[len(input_names) :]
    graph_inputs = []
    for tensor, name in zip(inputs, input_names):
        graph._used_names.add(name)
        if id(tensor) in graph.names:  # the same tensor passed twice
            continue
        graph.bind(tensor, name)
        axes = _axes_names(name, dynamic_axes.get(name))
        graph_inputs.append(value_info(name, tensor._data.dtype, _dims(tensor.shape, axes)))
    if not export_params:
        for tensor_id, pname in params.items():
            tensor = next(t for t in (*model.parameters(), *model.buffers()) if id(t) == tensor_id)
            graph._used_names.add(pname)
            graph.bind(tensor, pname)
            graph_inputs.append(value_info(pname, tensor._data.dtype, list(tensor.shape)))

    # output names are claimed before any node is named, so no value takes one of them
    graph._used_names.update(output_names or ())
    graph._used_names.update(["output", *(f"output_{i}" for i in range(_RESERVED_OUTPUTS))])
    recorder = _Recorder(graph)
    canonical_signatures()
    from ..nn.modules.rnn import RNNBase

    wrapped = []
    for m in modules:
        if isinstance(m, RNNBase) and "forward" not in m.__dict__:
            object.__setattr__(m, "forward", _module_forward(recorder, m, m.forward))
            wrapped.append(m)
    exporting.append(True)
    patched = Patched(recorder.run_op)
    try:
        with no_grad():
            result = model(*args, **kwargs)
    finally:
        patched.restore()
        exporting.pop()
        for m in wrapped:
            del m.__dict__["forward"]

    outputs = _tensors_in(result if not isinstance(result, dict) else list(result.values()))
    if not outputs:
        raise OnnxExporterError("ember.onnx.export: the model returned no tensors")
    output_names = list(output_names or [])
    default = ["output"] if len(outputs) == 1 else [f"output_{i}" for i in range(len(outputs))]
    output_names += default[len(output_names) :]
    graph_outputs = []
    any_dynamic = bool(dynamic_axes)
    for tensor, name in zip(outputs, output_names):
        graph._used_names.add(name)
        graph.nodes.append(helper.make_node("Identity", [graph.value(tensor)], [name]))
        if name in dynamic_axes:
            shape = _dims(tensor.shape, _axes_names(name, dynamic_axes[name]))
        elif any_dynamic:
            shape = [None] * tensor.dim()
        else:
            shape = list(tensor.shape)
        graph_outputs.append(value_info(name, tensor._data.dtype, shape))

    onnx_graph = helper.make_graph(
        graph.nodes, type(model).__name__, graph_inputs, graph_outputs, graph.initializers
    )
    onnx_model = helper.make_model(
        onnx_graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="ember"
    )
    onnx_model.ir_version = min(onnx_model.ir_version, 10)  # readable by ONNX Runtime 1.20+
    try:
        onnx.checker.check_model(onnx_model)
        onnx_model = onnx.shape_inference.infer_shapes(onnx_model, strict_mode=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise OnnxExporterError(f"ember.onnx.export: the exported graph is invalid: {exc}") from exc
    return onnx_model


def _module_forward(recorder, module, forward):
    def recorded_forward(*args, **kwargs):
        return recorder.run_module(module, forward, args, kwargs)

    return recorded_forward


def write_model(onnx_model, f) -> None:
    """Write to a file object, or to a path atomically (a temporary file renamed over it)."""
    data = onnx_model.SerializeToString()
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".ember-onnx-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    elif isinstance(f, io.TextIOBase):
        raise TypeError("ember.onnx.export: f must be a path or a binary file object")
    else:
        f.write(data)


__all__ = ["build_model", "write_model"]
