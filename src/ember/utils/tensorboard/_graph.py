"""``add_graph``'s picture: one forward of a model, recorded op by op, as TensorBoard's
``GraphDef``.

The model runs once, in eval mode and without gradients, while every ember op call is
intercepted the way the profiler times them (``ember.profiler._ops.Patched``) and forward
hooks on every submodule keep the stack of modules running. Each outermost op call becomes a
node named by that stack, as PyTorch's ``add_graph`` names its nodes: ``Net/Linear[fc1]/linear``
with op ``aten::linear``, whose inputs are the nodes that made its tensor arguments (ops called
inside another op are part of it). Around the ops:

- each tensor argument of the model is an ``IO Node`` named ``input/<argument name>``;
- each tensor it returns is an ``IO Node`` named ``output/output.<i>`` (from 1);
- a parameter or buffer is a ``prim::GetAttr`` node in its module's scope
  (``Net/Linear[fc1]/weight``), any other tensor read a ``prim::Constant``.

A node's non-tensor arguments are written in its ``attr`` string (``{ dim : -1}``) and the
shapes of its outputs in ``_output_shapes``; a node's second output is ``<node>:1``.
"""

from __future__ import annotations

import inspect
import threading

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ... import nn
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...jit import TracedModule
from ...profiler._ops import Patched, op_name, signature_of

# the GraphDef producer version TensorBoard's graph plugin is given by PyTorch's writer
GRAPH_PRODUCER = 22


def _tensors_in(obj) -> list:
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in _tensors_in(item)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in _tensors_in(item)]
    return []


def _attr_text(arguments: dict) -> str:
    # PyTorch's format; single quotes confuse TensorBoard's node panel
    return str(arguments).replace("'", " ")


def _signature(fn):
    """``fn``'s signature (False where it has none)."""
    return signature_of(fn)


def _named_arguments(signature, args: tuple, kwargs: dict) -> list:
    """``(parameter name, value)`` for each argument of a call, a ``**kwargs`` spread out;
    positional names ``arg<i>`` where ``signature`` cannot bind them."""
    try:
        bound = signature.bind(*args, **kwargs).arguments if signature else None
    except TypeError:
        bound = None
    if bound is None:
        return [(f"arg{i}", a) for i, a in enumerate(args)] + list(kwargs.items())
    pairs = []
    for name, value in bound.items():
        if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            pairs.extend(value.items())
        else:
            pairs.append((name, value))
    return pairs


def _shapes(tensors: list) -> AttrValue:
    shapes = [
        TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in t.shape]) for t in tensors
    ]
    return AttrValue(list=AttrValue.ListValue(shape=shapes))


class _Recorder:
    """The nodes of one forward: runs op calls, adding a node for each outermost one."""

    def __init__(self, root: str, leaves: dict):
        self.nodes: list = []
        self.leaves = leaves  # id(tensor) -> (node name, op, attr text): inputs, parameters
        self.values: dict = {}  # id(tensor) -> the node output holding it ("node" or "node:1")
        self.kept: list = []  # the tensors named, alive so that no id is reused meanwhile
        self.taken: set = set()
        self.scopes = [root]  # the modules running, innermost last
        self.depth = 0
        self.thread = threading.get_ident()

    def add_node(self, base: str, op: str, inputs: list, outputs: list, attr: str) -> str:
        name, k = base, 0
        while name in self.taken:  # a second call in the same scope: linear.1, linear.2, ...
            k += 1
            name = f"{base}.{k}"
        self.taken.add(name)
        attrs = {"attr": AttrValue(s=attr.encode("utf-8"))}
        if outputs:
            attrs["_output_shapes"] = _shapes(outputs)
        self.nodes.append(NodeDef(name=name, op=op, input=inputs, attr=attrs))
        return name

    def value(self, tensor: Tensor) -> str:
        """The node output holding ``tensor``; a leaf node for a tensor no op made."""
        name = self.values.get(id(tensor))
        if name is None:
            base, op, attr = self.leaves.get(
                id(tensor), (f"{self.scopes[-1]}/constant", "prim::Constant", "{}")
            )
            name = self.values[id(tensor)] = self.add_node(base, op, [], [tensor], attr)
            self.kept.append(tensor)
        return name

    def run_op(self, entry, args, kwargs):
        fn, name = entry
        if self.depth or threading.get_ident() != self.thread:
            return fn(*args, **kwargs)
        self.depth += 1
        try:
            result = fn(*args, **kwargs)
        finally:
            self.depth -= 1
        outputs = _tensors_in(result)
        if outputs:  # ops that return Python values (sizes, items) are not nodes
            self._record(op_name(fn, name), fn, args, kwargs, outputs)
        return result

    def _record(self, op: str, fn, args, kwargs, outputs: list) -> None:
        inputs, attributes = [], {}
        for name, value in _named_arguments(_signature(fn), args, kwargs):
            tensors = _tensors_in(value)
            if tensors:
                inputs.extend(self.value(t) for t in tensors)
            else:
                attributes[name] = value
        node = self.add_node(
            f"{self.scopes[-1]}/{op}", f"aten::{op}", inputs, outputs, _attr_text(attributes)
        )
        for i, tensor in enumerate(outputs):  # an in-place op's output replaces its input here
            self.values[id(tensor)] = node if i == 0 else f"{node}:{i}"
            self.kept.append(tensor)

    # forward hooks of every submodule
    def enter(self, label: str):
        def hook(module, args):
            self.scopes.append(f"{self.scopes[-1]}/{label}")

        return hook

    def leave(self, module, args, output) -> None:
        if len(self.scopes) > 1:
            self.scopes.pop()


def _as_arguments(input_to_model) -> tuple:
    """The positional arguments of the traced call, as ``torch.jit.trace`` takes them: a tensor
    or a dict is one argument, a tuple is the arguments, another iterable is made a tuple."""
    if input_to_model is None:
        return ()
    if isinstance(input_to_model, (Tensor, dict)):
        return (input_to_model,)
    return tuple(input_to_model)


def _input_leaves(model, args: tuple) -> dict:
    forward = model.forward if isinstance(model, nn.Module) else model
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError):
        signature = False
    leaves: dict = {}
    for name, value in _named_arguments(signature, args, {}):
        tensors = _tensors_in(value)
        for j, tensor in enumerate(tensors):
            label = name if len(tensors) == 1 and value is tensor else f"{name}.{j}"
            leaves.setdefault(id(tensor), (f"input/{label}", "IO Node", ""))
    return leaves


def _module_scopes(model, root: str) -> dict:
    """Module path -> scope name: ``""`` -> ``Net``, ``"fc1"`` -> ``Net/Linear[fc1]``."""
    scopes = {"": root}
    for path, module in model.named_modules():
        if path:
            parent, _, attribute = path.rpartition(".")
            scopes[path] = f"{scopes[parent]}/{type(module).__name__}[{attribute}]"
    return scopes


def _state_leaves(model, scopes: dict) -> dict:
    leaves: dict = {}
    named = [*model.named_parameters(), *model.named_buffers()]
    for qualified, tensor in named:
        if tensor is None:
            continue
        path, _, attribute = qualified.rpartition(".")
        attr = _attr_text({"name": attribute})
        leaves.setdefault(id(tensor), (f"{scopes[path]}/{attribute}", "prim::GetAttr", attr))
    return leaves


def graph(model, args=None, verbose: bool = False, use_strict_trace: bool = True) -> tuple:
    """``(GraphDef, RunMetadata)`` of one forward of ``model`` on ``args`` (see the module's
    docstring for the node names). ``use_strict_trace`` is accepted for PyTorch's signature;
    ember's recording has no strict mode to relax.

    Example::
        >>> graph_def, _ = graph(nn.Sequential(nn.Linear(4, 2)), ember.randn(3, 4))
        >>> [n.name for n in graph_def.node][-2:]
        ['Sequential/Linear[0]/linear', 'output/output.1']
    """
    if isinstance(model, TracedModule):  # ember.jit.trace's result: draw what it recorded
        model = model._callable()
    args = _as_arguments(args)
    is_module = isinstance(model, nn.Module)
    root = type(model).__name__ if is_module else getattr(model, "__name__", "Function")
    leaves = _input_leaves(model, args)
    hooks = []
    if is_module:
        leaves.update(_state_leaves(model, _module_scopes(model, root)))
    recorder = _Recorder(root, leaves)
    if is_module:
        for path, module in model.named_modules():
            if path:
                label = f"{type(module).__name__}[{path.rpartition('.')[2]}]"
                hooks.append(module.register_forward_pre_hook(recorder.enter(label)))
                hooks.append(module.register_forward_hook(recorder.leave))
        was_training = model.training
        model.train(False)
    patched = Patched(recorder.run_op)
    try:
        with no_grad():
            result = model(*args)
    finally:
        patched.restore()
        for handle in hooks:
            handle.remove()
        if is_module:
            model.train(was_training)

    outputs = _tensors_in(result)
    for i, tensor in enumerate(outputs):
        recorder.add_node(
            f"output/output.{i + 1}", "IO Node", [recorder.value(tensor)], [tensor], ""
        )
    nodes = recorder.nodes
    if verbose:
        for node in nodes:
            print(
                f"{node.name} = {node.op}({', '.join(node.input)}) {node.attr['attr'].s.decode()}"
            )
    on_gpu = any(t.device.type == "cuda" for t in outputs)
    device = "/device:GPU:0" if on_gpu else "/device:CPU:0"
    stats = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(device=device)]))
    return GraphDef(node=nodes, versions=VersionDef(producer=GRAPH_PRODUCER)), stats


def onnx_graph(path) -> GraphDef:
    """The ``GraphDef`` of an ONNX model file (needs the ``onnx`` package): its inputs and
    outputs as ``Variable`` nodes (with dtype and shape), each ONNX node named by its first
    output, with its attributes in ``parameters``."""
    import onnx

    onnx_graph_proto = onnx.load(path).graph
    nodes = []
    for value in [*onnx_graph_proto.input, *onnx_graph_proto.output]:
        tensor_type = value.type.tensor_type
        shape = TensorShapeProto(
            dim=[TensorShapeProto.Dim(size=d.dim_value) for d in tensor_type.shape.dim]
        )
        attrs = {"dtype": AttrValue(type=tensor_type.elem_type), "shape": AttrValue(shape=shape)}
        nodes.append(NodeDef(name=value.name, op="Variable", input=[], attr=attrs))
    for node in onnx_graph_proto.node:
        parameters = ", ".join(
            " = ".join(str(field[1]) for field in attribute.ListFields())
            for attribute in node.attribute
        )
        nodes.append(
            NodeDef(
                name=node.output[0],
                op=node.op_type,
                input=node.input,
                attr={"parameters": AttrValue(s=parameters.encode("utf-8"))},
            )
        )
    return GraphDef(node=nodes, versions=VersionDef(producer=GRAPH_PRODUCER))
