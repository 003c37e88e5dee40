"""``symbolic_trace`` and ``Tracer``: run a module's forward on proxies and keep the graph.

Example::
    >>> import ember, ember.fx
    >>> class Net(ember.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = ember.nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return ember.relu(self.fc(x))
    >>> gm = ember.fx.symbolic_trace(Net())
    >>> print(gm.code.strip())
    def forward(self, x):
        fc = self.fc(x);  x = None
        relu = ember.relu(fc);  fc = None
        return relu
"""

from __future__ import annotations

import collections
import inspect
import math
import types
import warnings
from collections.abc import Callable
from itertools import chain
from typing import Any

from .. import nn
from .._tensor import Tensor
from ._patching import PatchSession, pop_tracer, push_tracer
from ._wrap import _wrapped_fns_to_patch, wrap
from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, has_side_effect
from .proxy import ParameterProxy, Proxy, Scope, ScopeContextManager, TracerBase, _is_plain_value

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "PHBase"]

_HAS_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


class PHBase:
    """A placeholder in ``concrete_args``: this input stays an input."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


@has_side_effect
def _assert(condition: Any, message: str) -> None:
    """``ember.fx``'s stand-in for ``torch._assert``: the guard ``concrete_args`` records."""
    if not condition:
        raise AssertionError(message)


@has_side_effect
def _assert_is_none(value: Any, message: str) -> None:
    if value is not None:
        raise AssertionError(message)


def _patch_function(fn: types.FunctionType, nargs: int) -> types.FunctionType:
    """``fn`` taking its ``*args``/``**kwargs`` as ``nargs`` plain positional parameters, so
    each can be a placeholder."""
    code = fn.__code__
    code = code.replace(
        co_argcount=nargs,
        co_posonlyargcount=0,
        co_kwonlyargcount=0,
        co_flags=code.co_flags & ~_HAS_VARSTUFF,
    )
    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


class Tracer(TracerBase):
    """Records a module's (or function's) forward as a ``Graph``; ``symbolic_trace(m)`` is
    ``Tracer().trace(m)`` wrapped in a ``GraphModule``.

    Subclass to change what is recorded: ``is_leaf_module`` (which submodules stay one
    ``call_module`` node), ``call_module``, ``create_proxy``/``create_node``,
    ``create_arg``, ``getattr``.

    Example::
        >>> import ember, ember.fx
        >>> class KeepEverything(ember.fx.Tracer):
        ...     def is_leaf_module(self, m, qualified_name):
        ...         return True
    """

    def __init__(
        self,
        autowrap_modules: tuple[types.ModuleType, ...] = (math,),
        autowrap_functions: tuple[Callable[..., Any], ...] = (),
        param_shapes_constant: bool = False,
    ) -> None:
        super().__init__()
        self._autowrap_function_ids: set[int] = {
            id(value)
            for name, value in chain.from_iterable(m.__dict__.items() for m in autowrap_modules)
            if not name.startswith("_") and callable(value)
        }
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search: list[types.ModuleType] = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict[nn.Module, str] | None = None
        self.root_module_name = ""
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.num_calls: dict[str, int] = {}
        self.node_name_to_scope: dict[str, tuple[str, type]] = {}
        self._parameter_proxy_cache: dict[str, Proxy] = {}
        self._session: PatchSession | None = None
        self._qualname_counter: dict[str, int] = collections.defaultdict(int)

    def get_fresh_qualname(self, prefix: str) -> str:
        """``prefix<N>`` not yet an attribute of the root."""
        qualname = f"{prefix}0"
        if not hasattr(self.root, qualname):
            self._qualname_counter[prefix] = 0
            return qualname
        i = self._qualname_counter[prefix]
        while True:
            qualname = f"{prefix}{i}"
            i += 1
            if not hasattr(self.root, qualname):
                break
        self._qualname_counter[prefix] = i
        return qualname

    def create_arg(self, a: Any) -> Argument:
        """As ``TracerBase.create_arg``, and: a parameter, buffer or submodule of the root
        becomes a ``get_attr`` node; any other tensor is stored on the root as
        ``_tensor_constant<N>`` and fetched with ``get_attr``."""
        if isinstance(a, nn.Parameter):
            for name, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", name, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            for name, b in self.root.named_buffers():
                if a is b:
                    return self.create_node("get_attr", name, (), {})
        elif isinstance(a, nn.Module):
            for name, m in self.root.named_modules():
                if a is m:
                    return self.create_node("get_attr", name, (), {})
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            args = tuple(self.create_arg(elem) for elem in a)
            return self.create_node("call_function", a.__class__, args, {})
        if isinstance(a, Tensor):
            qualname = self.tensor_attrs.get(a)
            if not qualname:
                qualname = self.get_fresh_qualname("_tensor_constant")
                self.tensor_attrs[a] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        """Whether ``m`` stays one ``call_module`` node: ember's own layers do (except
        ``Sequential``, whose children are recorded); your modules are traced through."""
        return m.__module__.startswith("ember.nn") and not isinstance(m, nn.Sequential)

    def path_of_module(self, mod: nn.Module) -> str:
        """``mod``'s dotted path in the root (``"layer1.conv"``)."""
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for name, m in self.root.named_modules():
            if mod is m:
                return name
        raise NameError("module is not installed as a submodule")

    def call_module(
        self, m: nn.Module, forward: Callable[..., Any], args: tuple, kwargs: dict
    ) -> Any:
        """A leaf module becomes a ``call_module`` node; others run ``forward`` on the proxies."""
        module_qualified_name = self.path_of_module(m)
        with ScopeContextManager(self.scope, Scope(module_qualified_name, type(m))) as scope:
            num_calls = self.num_calls.get(module_qualified_name, 0)
            module_key = f"{scope.module_path}@{num_calls}" if num_calls > 0 else scope.module_path
            self.module_stack[module_key] = (module_qualified_name, scope.module_type)
            self.num_calls[module_qualified_name] = num_calls + 1
            if not self.is_leaf_module(m, module_qualified_name):
                ret_val = forward(*args, **kwargs)
            else:
                ret_val = self.create_proxy("call_module", module_qualified_name, args, kwargs)
            self.module_stack.popitem(last=True)
        return ret_val

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        """What reading ``module.attr`` gives while tracing: the root's parameters (and
        buffers, with ``proxy_buffer_attributes``) become one cached ``get_attr`` proxy."""

        def proxy_for(collection) -> Proxy | None:
            for name, p in collection:
                if attr_val is p:
                    if name not in parameter_proxy_cache:
                        factory = None
                        if self.param_shapes_constant:

                            def factory(node, name=name):
                                return ParameterProxy(self, node, name, attr_val)

                        kwargs = {}
                        if "proxy_factory_fn" in inspect.signature(self.create_proxy).parameters:
                            kwargs["proxy_factory_fn"] = factory
                        parameter_proxy_cache[name] = self.create_proxy(
                            "get_attr", name, (), {}, **kwargs
                        )
                    return parameter_proxy_cache[name]
            return None

        if isinstance(attr_val, nn.Parameter):
            found = proxy_for(self.root.named_parameters())
            if found is not None:
                return found
        if self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            found = proxy_for(self.root.named_buffers())
            if found is not None:
                return found
        return attr_val

    def _module_call(
        self, mod: nn.Module, original_call: Callable[..., Any], args: tuple, kwargs: dict
    ) -> Any:
        """``mod(*args)`` while tracing (the patched ``Module.__call__`` lands here)."""

        def forward(*args: Any, **kwargs: Any) -> Any:
            return original_call(mod, *args, **kwargs)

        forward_globals = getattr(getattr(mod, "forward", mod), "__globals__", None)
        if forward_globals is not None and self._session is not None:
            self._session.patch_globals(forward_globals, self._autowrap_function_ids)
        return self.call_module(mod, forward, args, kwargs)

    def create_args_for_root(
        self,
        root_fn: Callable[..., Any],
        is_module: bool,
        concrete_args: dict | tuple | None = None,
    ):
        """Placeholders for ``root_fn``'s parameters (``*args``/``**kwargs`` too)."""
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        names_iter = iter(co.co_varnames)
        args: list[Any] = []
        skip_arg_idx = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip_arg_idx = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)
        arg_names = [next(names_iter) for _ in range(skip_arg_idx, total_args)]
        if isinstance(concrete_args, tuple):
            if len(arg_names) != len(concrete_args):
                raise RuntimeError(
                    f"Tracing expected {len(arg_names)} arguments but got "
                    f"{len(concrete_args)} concrete arguments"
                )
            concrete_args = dict(zip(arg_names, concrete_args))
        args.extend(
            self._proxy_placeholder(name, concrete_args, sig, fn_for_analysis) for name in arg_names
        )
        if co.co_kwonlyargcount > 0 or co.co_flags & _HAS_VARSTUFF:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(
                    self._proxy_placeholder(
                        "*" + next(names_iter), concrete_args, sig, fn_for_analysis
                    )
                )
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(
                    self._proxy_placeholder(
                        "**" + next(names_iter), concrete_args, sig, fn_for_analysis
                    )
                )
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _proxy_placeholder(
        self, name: str, concrete_args: dict | None, sig: inspect.Signature, fn: Callable[..., Any]
    ) -> Any:
        if concrete_args is not None and name in concrete_args:
            value = concrete_args[name]
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
            if _contains_ph(value) and not isinstance(value, PHBase):
                raise NotImplementedError(
                    f"concrete_args[{name!r}] holds PH inside a structure: ember.fx does not "
                    "flatten structured inputs; pass the structure's tensors as separate arguments"
                )
            out = self.create_proxy("placeholder", f"{name}_1", default, {})
            if isinstance(value, PHBase):
                if value is not PH:
                    _transfer_attrs(value, out.node)
                return out
            if _is_plain_value(value) and value is not None and value is not ...:
                message = f"{name} has been specialized to have value {value} but got another value"
                self.create_proxy("call_function", _assert, (out == value, message), {})
            elif value is None:
                message = f"{name} has been specialized to have value None but got another value"
                self.create_proxy("call_function", _assert_is_none, (out, message), {})
            else:
                warnings.warn(
                    f"Was not able to add assertion to guarantee correct input {name} to "
                    "specialized function. It is up to the user to make sure that your inputs "
                    "match the inputs you specialized the function with.",
                    stacklevel=3,
                )
            return value
        if name[0] == "*":
            default: tuple = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy(
            "placeholder", name, default, {}, type_expr=fn.__annotations__.get(name)
        )

    def trace(
        self, root: nn.Module | Callable[..., Any], concrete_args: dict[str, Any] | None = None
    ) -> Graph:
        """Record ``root``'s forward (or the function ``root``) as a Graph.

        ``concrete_args`` fixes inputs to values (``{"flag": False}``), removing branches on
        them; the graph keeps the input and asserts it has that value.
        """
        if isinstance(root, nn.Module):
            self.root = root
            if not hasattr(type(root), self.traced_func_name):
                raise RuntimeError(
                    f"traced_func_name={self.traced_func_name} doesn't exist in "
                    f"{type(root).__name__}"
                )
            fn = getattr(type(root), self.traced_func_name)
            self.root_module_name = root._get_name()
            self.submodule_paths = {mod: name for name, mod in root.named_modules()}
        else:
            self.root = nn.Module()
            fn = root
        self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
        if hasattr(fn, "__code__"):
            code = fn.__code__
            self.graph._co_fields = {
                "co_name": code.co_name,
                "co_filename": code.co_filename,
                "co_firstlineno": code.co_firstlineno,
            }
        self.tensor_attrs: dict[Tensor, str] = {}
        self._collect_tensor_attrs(self.root, [])
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"can only trace Python functions and modules, got {type(fn).__name__}")
        fn_globals = fn.__globals__
        self._parameter_proxy_cache = {}
        with PatchSession() as session:
            self._session = session
            session.install_ember()
            session.patch_wrapped(_wrapped_fns_to_patch)
            session.patch_globals(fn_globals, self._autowrap_function_ids)
            for module in self._autowrap_search:
                session.patch_globals(module.__dict__, self._autowrap_function_ids)
            fn, args = self.create_args_for_root(fn, isinstance(root, nn.Module), concrete_args)
            push_tracer(self)
            try:
                result = fn(*args)
            finally:
                pop_tracer()
                self._session = None
            annotations = getattr(inspect.unwrap(fn), "__annotations__", {})
            self.create_node(
                "output",
                "output",
                (self.create_arg(result),),
                {},
                type_expr=annotations.get("return"),
            )
        self.submodule_paths = None
        return self.graph

    def _collect_tensor_attrs(self, module: nn.Module, prefix: list[str]) -> None:
        for k, v in module.__dict__.items():
            if isinstance(v, Tensor):
                self.tensor_attrs[v] = ".".join(prefix + [k])
        for k, v in module.named_children():
            self._collect_tensor_attrs(v, prefix + [k])


def _contains_ph(value: Any) -> bool:
    if isinstance(value, PHBase):
        return True
    if isinstance(value, (tuple, list)):
        return any(_contains_ph(v) for v in value)
    if isinstance(value, dict):
        return any(_contains_ph(v) for v in value.values())
    return False


def _transfer_attrs(fr: object, to: object) -> None:
    for attr_name in dir(fr):
        attr_val = getattr(fr, attr_name)
        if not callable(attr_val) and not attr_name.startswith("__") and not hasattr(to, attr_name):
            setattr(to, attr_name, attr_val)


def symbolic_trace(
    root: nn.Module | Callable[..., Any], concrete_args: dict[str, Any] | None = None
) -> GraphModule:
    """Trace ``root`` (a module or a function) into a ``GraphModule`` whose ``code`` is the
    recorded forward.

    ``concrete_args`` specializes inputs: ``symbolic_trace(f, concrete_args={"b": False})``
    traces ``f`` with ``b`` fixed to False, so ``if b:`` branches disappear.

    Example::
        >>> import ember, ember.fx
        >>> def f(x, use_relu):
        ...     return ember.relu(x) if use_relu else x
        >>> gm = ember.fx.symbolic_trace(f, concrete_args={"use_relu": True})
        >>> gm(ember.tensor([-1.0, 2.0]), True)
        tensor([0., 2.])
    """
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
