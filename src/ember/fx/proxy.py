"""``Proxy``: the stand-in values that flow through a program while it is traced.

Whatever a program does to a proxy becomes a node: operators (``x + 1`` is
``operator.add``), method calls (``x.view(-1)`` is ``call_method``), attribute reads
(``x.shape`` is ``getattr``), and ember functions called on it (``ember.relu(x)``; see
``_patching``). What a proxy cannot know — its value — it refuses to guess: using one in
``if``, ``len`` or a ``for`` loop raises, since the recorded graph could not replay it.
"""

from __future__ import annotations

import collections
import copy
import dis
import enum
import inspect
import operator
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from .. import _backend, _dtype, _memory_format
from .._tensor import Tensor
from ._codegen import MAGIC_METHODS, REFLECTABLE_MAGIC_METHODS
from .graph import Graph
from .node import Argument, Node, Target, has_side_effect

__all__ = [
    "TracerBase",
    "GraphAppendingTracer",
    "TraceError",
    "Proxy",
    "Attribute",
    "ParameterProxy",
    "Scope",
    "ScopeContextManager",
]


class TraceError(ValueError):
    """A traced program did something its graph could not replay (control flow on a traced
    value, iteration over one)."""


class Scope:
    """The module path and type of the module whose forward is being traced."""

    def __init__(self, module_path: str, module_type: Any) -> None:
        self.module_path = module_path
        self.module_type = module_type


class ScopeContextManager:
    """Sets a tracer's scope to ``current_scope`` for a ``with`` block."""

    def __init__(self, scope: Scope, current_scope: Scope) -> None:
        self._previous = copy.copy(scope)
        scope.module_path = current_scope.module_path
        scope.module_type = current_scope.module_type
        self._scope = scope

    def __enter__(self) -> Scope:
        return self._scope

    def __exit__(self, *args: object) -> None:
        self._scope.module_path = self._previous.module_path
        self._scope.module_type = self._previous.module_type


def _is_plain_value(a: Any) -> bool:
    """Values a node may hold as they are: numbers, strings, dtypes, devices, None, ..."""
    return (
        a is None
        or a is ...
        or isinstance(a, (str, int, float, bool, complex, enum.Enum))
        or isinstance(a, (_dtype.dtype, _backend.device, _memory_format.memory_format))
    )


class TracerBase:
    """Makes nodes and proxies in ``self.graph``; ``Tracer`` and ``GraphAppendingTracer``
    build on it."""

    graph: Graph
    record_stack_traces: bool = False
    trace_asserts: bool = False
    proxy_buffer_attributes: bool = False
    traced_func_name: str = "forward"
    scope: Scope
    module_stack: collections.OrderedDict
    node_name_to_scope: dict[str, tuple[str, type]]

    def create_node(
        self,
        kind: str,
        target: Target,
        args: tuple[Argument, ...],
        kwargs: dict[str, Argument],
        name: str | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        """Insert a node; override to check or change what gets recorded."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        self.node_name_to_scope[node.name] = (self.scope.module_path, self.scope.module_type)
        if self.module_stack:
            node.meta["nn_module_stack"] = copy.copy(self.module_stack)
        if self.record_stack_traces and not node.stack_trace:
            node.stack_trace = self._user_stack_trace()
        return node

    def _user_stack_trace(self) -> str:
        frames = traceback.extract_stack()
        for i, frame in enumerate(frames):
            if frame.name == self.traced_func_name:
                frames = frames[i:]
                break
        here = __file__.rsplit("/", 1)[0]
        user = [f for f in frames if not f.filename.startswith(here)]
        return "".join(traceback.StackSummary.from_list(user).format()).strip()

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(
        self,
        kind: str,
        target: Target,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        name: str | None = None,
        type_expr: Any | None = None,
        proxy_factory_fn: Callable[[Node], Proxy] | None = None,
    ) -> Proxy:
        """A node for this call (its proxies become node arguments) wrapped in a Proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Argument:
        """Lower a value seen as an argument into what a node stores: proxies become their
        nodes, containers are walked, plain values stay."""
        if isinstance(a, Proxy):
            return a.node
        if hasattr(type(a), "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            items = tuple(self.create_arg(elem) for elem in a)
            if type(a) is tuple:
                return items
            return type(a)(*items) if hasattr(a, "_fields") else type(a)(items)  # Size stays a Size
        if isinstance(a, list):
            return [self.create_arg(elem) for elem in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError(
                        "Keys for dictionaries used as an argument cannot contain a Node. "
                        f"Got key: {k}"
                    )
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if _is_plain_value(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        """Called when a proxy is used as a truth value (``if``, ``while``, ``and``)."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy) -> Iterator:
        """Called when a proxy is iterated over."""
        raise TraceError(
            "Proxy object cannot be iterated. This can be attempted when the Proxy is used in a "
            "loop or as a *args or **kwargs function argument. See the torch.fx docs on "
            "pytorch.org for a more detailed explanation of what types of control flow can be "
            "traced, and check out the Proxy docstring for help troubleshooting Proxy iteration "
            "errors"
        )

    def keys(self, obj: Proxy) -> Proxy:
        """Called for ``**proxy``; records ``proxy.keys()``."""
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph, for building graphs from proxies.

    Example::
        >>> import ember.fx
        >>> g = ember.fx.Graph()
        >>> tracer = ember.fx.proxy.GraphAppendingTracer(g)
        >>> x = ember.fx.Proxy(g.placeholder("x"), tracer)
        >>> _ = g.output((x * 2).node)
    """

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.node_name_to_scope = {}


@has_side_effect
def assert_fn(x: Any) -> None:
    """What a traced ``assert`` statement records (``trace_asserts``)."""
    if not x:
        raise AssertionError("Assertion failed")


class Proxy:
    """A value being traced: a ``Node`` and the tracer that records what is done to it.

    Proxies cannot be iterated, measured with ``len`` or tested with ``if``. Move such code
    into a function marked with ``ember.fx.wrap`` (it is then recorded as one call), or make
    the decision static (``concrete_args``, a loop over a hyperparameter with ``x[i]``).
    """

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k in _tensor_internals():
            raise TraceError(
                f"a function fx does not record received a traced value (it read Tensor.{k}). "
                "fx records the functions of ember, ember.nn.functional, ember.linalg, "
                "ember.special and ember.fft called through those namespaces (or imported from "
                "them into the traced module), Tensor methods, and functions marked with "
                "ember.fx.wrap: call it through one of these, or wrap it"
            )
        return Attribute(self, k)

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, d: dict) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo: dict) -> Proxy:
        new = Proxy.__new__(type(self))
        for k, v in self.__dict__.items():
            try:
                new.__dict__[k] = copy.deepcopy(v, memo)
            except Exception:
                new.__dict__[k] = copy.copy(v)
        return new

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        # `a, b = proxy` unpacks a known number of values: record a[0], a[1].
        frame = inspect.currentframe().f_back
        instruction = _instruction_at(frame)
        if instruction is not None and instruction.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(instruction.argval))
        return self.tracer.iter(self)

    def __abs__(self) -> Proxy:
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self) -> bool:
        if self.tracer.trace_asserts and _is_assert_test(inspect.currentframe().f_back):
            self.tracer.create_proxy("call_function", assert_fn, (self,), {})
            return True
        return self.tracer.to_bool(self)

    def keys(self) -> Proxy:
        return self.tracer.keys(self)

    def __len__(self) -> int:
        raise RuntimeError(
            "'len' is not supported in symbolic tracing by default. If you want this call to be "
            "recorded, please call ember.fx.wrap('len') at module scope"
        )


_TENSOR_INTERNALS: frozenset[str] | None = None


def _tensor_internals() -> frozenset[str]:
    """Private attributes of ember's Tensor: only ember's own kernels read them, so a proxy
    asked for one has reached a function that is not recorded."""
    global _TENSOR_INTERNALS
    if _TENSOR_INTERNALS is None:
        private = {k for k in vars(Tensor) if k.startswith("_") and not k.startswith("__")}
        _TENSOR_INTERNALS = frozenset(private | {"_data", "_vc"})
    return _TENSOR_INTERNALS


def _instruction_at(frame) -> dis.Instruction | None:
    if frame is None:
        return None
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset == frame.f_lasti:
            return instruction
    return None


def _is_assert_test(frame) -> bool:
    """Whether ``frame`` is evaluating the condition of an ``assert`` statement."""
    if frame is None:
        return False
    instructions = list(dis.get_instructions(frame.f_code))
    for i, instruction in enumerate(instructions):
        if instruction.offset == frame.f_lasti:
            following = instructions[i + 1 : i + 3]
            return instruction.opname.startswith("POP_JUMP") and any(
                f.opname == "LOAD_ASSERTION_ERROR" for f in following
            )
    return False


class Attribute(Proxy):
    """``proxy.name``: becomes a ``getattr`` node only when used as a value, and a
    ``call_method`` node when called (``x.view(-1)`` records no getattr)."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        if self._node is None:
            self._node = self.tracer.create_proxy(
                "call_function", getattr, (self.root, self.attr), {}
            ).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A parameter's proxy that answers shape questions (``shape``, ``size()``, ``dim()``,
    ``numel()``) from the real parameter, so code branching on them traces."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param: Any) -> None:
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self, dim: int | None = None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def _define_operator(method: str) -> None:
    target = getattr(operator, method)

    def impl(*args: Any, **kwargs: Any) -> Proxy:
        return args[0].tracer.create_proxy("call_function", target, args, kwargs)

    impl.__name__ = method
    setattr(Proxy, f"__{method.strip('_')}__", impl)


def _define_reflected_operator(method: str) -> None:
    target = getattr(operator, method)

    def impl(self: Proxy, lhs: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", target, (lhs, self), {})

    name = f"__r{method.strip('_')}__"
    impl.__name__ = name
    setattr(Proxy, name, impl)


# "div" names Python 2's operator; the table keeps it for printing old graphs only.
for _method in MAGIC_METHODS:
    if hasattr(operator, _method):
        _define_operator(_method)
for _method in REFLECTABLE_MAGIC_METHODS:
    if hasattr(operator, _method):
        _define_reflected_operator(_method)
