"""The ONNX graph being built during an export: values, constants, nodes.

A tensor the model computed from its inputs has a name in ``names``; any other tensor a
mapped op reads (a parameter, a buffer, a constant made in ``forward``) becomes an
initializer the first time it is read, so values that do not depend on the inputs are folded
into constants.
"""

from __future__ import annotations

import numpy as np

from onnx import helper, numpy_helper

from .._tensor import Tensor
from ._state import OnnxExporterError


class GraphBuilder:
    """Nodes and initializers of one export; ``value(t)`` names a tensor for a node input."""

    def __init__(self, opset: int, param_names: dict):
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.names: dict = {}  # id(tensor) -> ONNX value name, for tensors computed from inputs
        self.keep_alive: list = []  # tensors whose ids are in ``names`` must not be freed
        self._param_names = param_names  # id(parameter) -> its state_dict name
        self._constants: dict = {}  # id(tensor) -> initializer name
        self._used_names: set = set()
        self.views: dict = {}  # id(base) -> views of it made by recorded ops
        self.stale: dict = {}  # id(tensor) -> the in-place op that changed it through an alias

    # --- names ------------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = hint.replace("/", "_") or "value"
        name, i = base, 0
        while name in self._used_names:
            i += 1
            name = f"{base}_{i}"
        self._used_names.add(name)
        return name

    def bind(self, tensor: Tensor, name: str) -> None:
        self.names[id(tensor)] = name
        self.keep_alive.append(tensor)

    def track_aliasing(self, op_name: str, args, result) -> None:
        """Remember views; after an in-place op, mark the tensors that share its memory, so
        that reading them (whose ONNX value did not change) raises instead of being wrong."""
        if not isinstance(result, Tensor):
            return
        if any(result is a for a in args):  # in place
            base = result._base
            if base is not None:
                self.stale[id(base)] = op_name
                siblings = self.views.get(id(base), ())
            else:
                siblings = self.views.get(id(result), ())
            for view in siblings:
                if view is not result:
                    self.stale[id(view)] = op_name
        elif result._base is not None:
            self.views.setdefault(id(result._base), []).append(result)

    def is_dynamic(self, obj) -> bool:
        """Whether ``obj`` (a tensor, or a list/tuple/dict holding some) depends on an input."""
        if isinstance(obj, Tensor):
            return id(obj) in self.names
        if isinstance(obj, (list, tuple)):
            return any(self.is_dynamic(o) for o in obj)
        if isinstance(obj, dict):
            return any(self.is_dynamic(o) for o in obj.values())
        return False

    # --- values -----------------------------------------------------------------------------
    def const(self, array, hint: str = "const") -> str:
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def ints(self, values, hint: str = "ints") -> str:
        return self.const(np.asarray(list(values), dtype=np.int64), hint)

    def value(self, tensor: Tensor) -> str:
        """The name of ``tensor`` in the graph, adding it as an initializer if it is constant."""
        changed_by = self.stale.get(id(tensor))
        if changed_by is not None:
            raise OnnxExporterError(
                f"ember.onnx.export: a tensor is read after '{changed_by}' changed it in place "
                "through a view (or changed its base); ONNX values cannot alias, so write that "
                "step out of place (torch.cat, torch.where, index_put)"
            )
        name = self.names.get(id(tensor))
        if name is not None:
            return name
        name = self._constants.get(id(tensor))
        if name is None:
            hint = self._param_names.get(id(tensor), "const")
            name = self.const(host_array(tensor), hint)
            self._constants[id(tensor)] = name
            self.keep_alive.append(tensor)
        return name

    def operand(self, x, dtype) -> str:
        """A tensor cast to ``dtype`` if needed, or a Python number as a ``dtype`` scalar."""
        if isinstance(x, Tensor):
            name = self.value(x)
            if np.dtype(x._data.dtype) != np.dtype(dtype):
                name = self.cast(name, dtype)
            return name
        return self.const(np.asarray(x, dtype=dtype), "scalar")

    # --- nodes ------------------------------------------------------------------------------
    def node(self, op_type: str, inputs, n_outputs: int = 1, **attributes):
        """Append one node; its output name (or list of names when ``n_outputs != 1``)."""
        outputs = [self.fresh(op_type) for _ in range(n_outputs)]
        attributes = {k: v for k, v in attributes.items() if v is not None}
        self.nodes.append(
            helper.make_node(
                op_type, list(inputs), outputs, name=self.fresh("n_" + op_type), **attributes
            )
        )
        return outputs[0] if n_outputs == 1 else outputs

    def cast(self, name: str, dtype) -> str:
        return self.node("Cast", [name], to=helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))

    def reduce(self, op_type: str, name: str, axes, keepdims: bool) -> str:
        """``Reduce*`` over ``axes`` (None: all); axes moved from attribute to input in opset 18."""
        keep = int(bool(keepdims))
        if axes is None:
            return self.node(op_type, [name], keepdims=keep)
        axes = [int(a) for a in axes]
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.node(op_type, [name, self.ints(axes, "axes")], keepdims=keep)
        return self.node(op_type, [name], axes=axes, keepdims=keep)

    def reshape(self, name: str, shape) -> str:
        return self.node("Reshape", [name, self.ints(shape, "shape")])

    def unsqueeze(self, name: str, axes) -> str:
        return self.node("Unsqueeze", [name, self.ints(axes, "axes")])


def dtype_of(tensor):
    """A traced tensor's array dtype."""
    return tensor._data.dtype


def ndim_of(tensor) -> int:
    return tensor._data.ndim


def positive_axis(dim, ndim: int) -> int:
    """``dim`` counted from the front (ONNX attributes want no negative axes)."""
    dim = int(dim)
    return dim + ndim if dim < 0 else dim


def host_array(tensor) -> np.ndarray:
    """A tensor's values as a NumPy array (copied from the GPU for a CUDA tensor)."""
    data = tensor._data
    return data if isinstance(data, np.ndarray) else data.get()


def elem_type(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def value_info(name: str, dtype, shape):
    return helper.make_tensor_value_info(name, elem_type(dtype), shape)


__all__ = ["GraphBuilder", "OnnxExporterError", "elem_type", "host_array", "value_info"]
