"""Graph nodes: one per recorded op (``grad_fn``), plus AccumulateGrad for leaves.

A node keeps the edges to the nodes of its inputs, the tensors its backward formula needs
(with the version each had when saved), and the shape/dtype of each of its outputs so that
the engine can reduce and check the gradients that flow into it.
"""

from __future__ import annotations

import itertools
import weakref

_sequence = itertools.count()
_new = object.__new__

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


def torch_node_name(op: str, overload: int = 0) -> str:
    """The class name torch's codegen gives the backward node of an ATen op: its name in
    title case, underscores dropped, and the overload's number (``log1p`` -> ``Log1PBackward0``,
    ``native_layer_norm`` -> ``NativeLayerNormBackward0``)."""
    return "".join(part.title() for part in op.split("_")) + f"Backward{overload}"


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` takes the hook out again."""

    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self.id = next(RemovableHandle._ids)
        self._hooks = weakref.ref(hooks) if hooks is not None else None

    def remove(self) -> None:
        hooks = self._hooks() if self._hooks is not None else None
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _HookDict(dict):
    """A dict that can be weakly referenced (so handles do not keep nodes alive)."""


def add_hook(owner_hooks: _HookDict, fn) -> RemovableHandle:
    handle = RemovableHandle(owner_hooks)
    owner_hooks[handle.id] = fn
    return handle


class Node:
    """Base of every ``grad_fn``. Subclasses define ``backward(self, grad)``.

    ``backward`` gets the gradient of the (single) output and returns one gradient per input
    (a tuple, or a bare tensor when there is one input); ``None`` stands for a zero gradient.
    """

    # Rarely used fields live on the class so that recording an op stores only what it needs.
    _edges: tuple = ()
    _saved: tuple | None = ()
    _saved_versions: tuple = ()
    _saved_out = None
    _saved_hooks = None  # index (or "result") -> (packed, unpack) of _raw_saved_*.register_hooks
    saved_fields: dict = {}  # torch's saved field -> where ember keeps it (see _saved_field)
    _meta: tuple = ()
    _pre_hooks = None
    _post_hooks = None
    _tensor_hooks = None
    _trace = None
    _backward_run = 0  # the number of the last backward that started here (explain())
    _module = None  # ((path, class name), ...) of the modules running when recorded
    _hooked = False  # any tensor hook, pre-hook or retain_grad: the engine's slow path
    _retained = None  # output_nr -> weakref of a non-leaf tensor that called retain_grad()
    metadata_ = None
    num_outputs = 1
    _fast = True  # one output, default apply, no hooks: the engine's fast path

    def __init_subclass__(cls, **kwargs):
        # A class whose Python name is ember's own (a fast path, a fused kernel) declares the
        # name torch gives the node; tools read it as type(node).__name__ (torchviz does), so
        # the class carries it, and ``python_name`` keeps the one it was defined under.
        super().__init_subclass__(**kwargs)
        cls.python_name = cls.__name__
        torch_name = cls.__dict__.get("torch_name")
        if torch_name is not None:
            cls.__name__ = cls.__qualname__ = torch_name
        # torch_saved: the fields torch's node of this name exposes as _saved_<field>; a
        # subclass that is another torch node declares its own (an empty dict: none)
        if "torch_saved" in cls.__dict__:
            cls.saved_fields = dict(cls.torch_saved)

    def __getattr__(self, name: str):
        # only reached when normal lookup fails: torch's _saved_<field> / _raw_saved_<field>
        if name.startswith("_saved_") or name.startswith("_raw_saved_"):
            raw = name.startswith("_raw_saved_")
            field = name[len("_raw_saved_") :] if raw else name[len("_saved_") :]
            source = type(self).saved_fields.get(field, _NO_FIELD)
            if source is not _NO_FIELD and (not raw or _is_tensor_source(source)):
                return SavedTensor(self, source) if raw else _saved_field(self, source)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __dir__(self):
        # as torch's nodes list themselves: the saved fields of this op, not ember's internals
        names = [n for n in super().__dir__() if n not in _INTERNAL_SAVED]
        for field, source in type(self).saved_fields.items():
            names.append("_saved_" + field)
            if _is_tensor_source(source):
                names.append("_raw_saved_" + field)
        return sorted(set(names))

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def next_functions(self) -> tuple:
        return tuple(e if e is not None else (None, 0) for e in self._edges)

    @property
    def metadata(self) -> dict:
        if self.metadata_ is None:
            self.metadata_ = {}
        return self.metadata_

    @property
    def needs_input_grad(self) -> tuple:
        return tuple(e is not None for e in self._edges)

    def needs(self, i: int) -> bool:
        return self._edges[i] is not None

    # --- saved tensors -------------------------------------------------------------
    def unpack_saved(self) -> tuple:
        """Unpack what forward saved, checking that nothing was modified in place since.

        (Not named ``saved_tensors``: on torch's nodes only a custom Function's has that, and
        tools such as torchviz tell the two apart by it.)"""
        saved = self._saved
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        versions = self._saved_versions
        for i, t in enumerate(saved):
            if versions[i] is not None and t._vc[0] != versions[i]:
                _raise_modified(self, t, versions[i])
        if self._saved_hooks is not None:
            return _unpacked_with_hooks(saved, self._saved_hooks)
        return saved

    def saved_output(self):
        """The output of this node, rebuilt so that double backward sees its graph."""
        record = self._saved_out
        if record is None:
            raise RuntimeError(FREED_MESSAGE)
        if self._saved_hooks is not None and "result" in self._saved_hooks:
            packed, unpack = self._saved_hooks["result"]
            return _checked_unpack(unpack, packed)
        return graph_output(self, record)

    def release(self) -> None:
        self._saved = None
        self._saved_out = None
        self._saved_hooks = None

    # --- hooks -----------------------------------------------------------------------
    def register_hook(self, fn) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` runs after this node computed its gradients."""
        if self._post_hooks is None:
            self._post_hooks = _HookDict()
        self._hooked = True
        self._fast = False
        return add_hook(self._post_hooks, fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """``fn(grad_outputs)`` runs before this node; it may return replacement gradients."""
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
        self._hooked = True
        self._fast = False
        return add_hook(self._pre_hooks, fn)

    def _add_tensor_hook(self, output_nr: int, fn) -> RemovableHandle:
        if self._tensor_hooks is None:
            self._tensor_hooks = _HookDict()
        self._hooked = True
        self._fast = False
        handle = RemovableHandle(self._tensor_hooks)
        self._tensor_hooks[handle.id] = (output_nr, _CheckedTensorHook(fn))
        return handle

    # --- evaluation ----------------------------------------------------------------------
    def apply(self, grads: list) -> tuple:
        out = self.backward(grads[0])
        if type(out) is not tuple:
            return (out,)
        return out

    def backward(self, grad):  # pragma: no cover - every subclass defines it
        raise NotImplementedError(f"{self.name()} has no backward formula")

    def __call__(self, *grads):
        return self.apply(list(grads))


_NO_FIELD = object()
_INTERNAL_SAVED = frozenset(("_saved", "_saved_versions", "_saved_out", "_saved_hooks"))


def _is_tensor_source(source) -> bool:
    return (
        source.__class__ is int
        or source == "result"
        or source.__class__ is tuple
        and (source[0] == "tensor")
    )


def _saved_field(node: Node, source):
    """The value of one of torch's saved fields. ``source``: an int (that saved tensor),
    "result" (the saved output), another str (that attribute of the node), ``("value", v)``
    (a constant), ``("tensor", f)`` (a tensor, ``f(node)``) or a callable of the node."""
    if source.__class__ is int:
        return node.unpack_saved()[source]
    if source == "result":
        return node.saved_output()
    if source.__class__ is str:
        return getattr(node, source, None)
    if source.__class__ is tuple:
        return source[1](node) if source[0] == "tensor" else source[1]
    return source(node)


def torch_int(value):
    """An int argument as torch's saved fields show it: int64 read back as uint64, so that
    -1 shows as 2**64 - 1 (tuples element by element)."""
    if value.__class__ is tuple or value.__class__ is list:
        return tuple(torch_int(v) for v in value)
    return value + (1 << 64) if value.__class__ is int and value < 0 else value


def _checked_unpack(unpack, packed):
    value = unpack(packed)
    if not isinstance(value, TENSOR_LAYER.Tensor):
        raise TypeError(
            "Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
            f"{type(value).__name__}"
        )
    return value


def _unpacked_with_hooks(saved: tuple, hooks: dict) -> tuple:
    return tuple(
        _checked_unpack(hooks[i][1], hooks[i][0]) if i in hooks else t for i, t in enumerate(saved)
    )


class SavedTensor:
    """``node._raw_saved_<field>``: one saved tensor, whose ``register_hooks(pack, unpack)``
    packs it now and unpacks it whenever the node reads it (torch's SavedTensor)."""

    __slots__ = ("node", "source")

    def __init__(self, node: Node, source):
        self.node, self.source = node, source

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks expects two callables (pack_hook, unpack_hook)")
        node, source = self.node, self.source
        hooks = node._saved_hooks
        if hooks is not None and source in hooks:
            raise RuntimeError(
                "SavedTensor hooks have already been set on this SavedTensor. Please check that "
                "you didn't call register_hooks() twice."
            )
        tensor = _saved_field(node, source)  # raises torch's error once the graph was freed
        if tensor is None:
            raise RuntimeError("None is forbidden")
        packed = pack_hook(tensor)
        if hooks is None:
            hooks = node._saved_hooks = {}
        hooks[source] = (packed, unpack_hook)


class _TensorLayer:
    """What the machinery needs from the Tensor layer above it, which fills it in on import
    (``ember._tensor`` the class, ``ember._creation`` and ``ember.ops.shape`` the factories):
    the machinery never imports that layer."""

    Tensor: type | None = None
    tensor = None  # ember.tensor
    zeros_like = None
    stack = None


TENSOR_LAYER = _TensorLayer()


def _tensor_class():
    return TENSOR_LAYER.Tensor


def graph_output(node: Node, saved: tuple):
    """An output of ``node`` saved as (its array, its version counter, the version it had),
    rebuilt as a tensor of the graph (so that formulas differentiate again); raises if it was
    modified in place since."""
    data, vc, version = saved
    Tensor = TENSOR_LAYER.Tensor
    if vc[0] != version:
        shown = Tensor._wrap(data)
        shown._vc = vc
        _raise_modified(node, shown, version)
    out = _new(Tensor)
    out._data = data
    out._vc = vc
    out._rg = True
    out._grad_fn = node
    return out


def _raise_modified(node: Node, t, saved_version: int) -> None:
    type_name = t.dtype.legacy_name
    where = ""
    if t._grad_fn is not None:
        where = f", which is output {t._out_nr} of {t._grad_fn.name()},"
    raise RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [ember.{type_name}Tensor {list(t.shape)}]{where} is at version "
        f"{t._vc[0]}; expected version {saved_version} instead (saved by {node.name()}). "
        "Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with ember.autograd.set_detect_anomaly(True)."
    )


def _hook_name(hook) -> str:
    return getattr(hook, "__name__", "<unknown>")


def check_hook_result(hook, original, result) -> None:
    """PyTorch's check of what a tensor hook returned: a tensor of the gradient's type,
    device and size, else an error naming the hook (not the node the gradient flows into)."""
    if not isinstance(result, TENSOR_LAYER.Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
    if result.dtype != original.dtype or result.device.type != original.device.type:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has changed the type of value "
            f"(was {original.type()} got {result.type()})"
        )
    if result.shape != original.shape:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")


class _CheckedTensorHook:
    """A ``register_hook`` function whose replacement gradient is checked before use."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, grad):
        result = self.fn(grad)
        if result is not None:
            check_hook_result(self.fn, grad, result)
        return result


class AccumulateGrad(Node):
    """The node at a leaf that requires grad: gradients arriving here go into ``leaf.grad``."""

    _fast = False

    def __init__(self, leaf):
        self._variable = weakref.ref(leaf)
        self._meta = ((leaf._data.shape, leaf._data.dtype),)

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"  # torch's; its class is AccumulateGrad

    @property
    def variable(self):
        return self._variable()

    def backward(self, grad):  # the engine accumulates; a direct call does the same
        from .engine import accumulate_into_leaf

        leaf = self._variable()
        if leaf is not None and grad is not None:
            accumulate_into_leaf(leaf, grad, create_graph=False)
        return ()
