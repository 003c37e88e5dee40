"""How ember's functions, Tensor methods and ``nn.Module`` calls reach the tracer.

torch hands a ``Proxy`` to the tracer through ``__torch_function__``. ember's functions have
no such dispatch (it would cost every call), so while a trace runs fx puts recording
wrappers in their place, as torch's own tracer does for ``math`` functions and ``fx.wrap``:

- the public functions of ``ember``, ``ember.nn.functional``, ``ember.linalg``,
  ``ember.special`` and ``ember.fft`` (and names in the traced code's globals bound to them):
  called with a proxy among their arguments they record a ``call_function`` node of the
  original function, otherwise they just call it;
- ``Tensor`` methods and operators, so that a real tensor meeting a proxy
  (``self.buffer + x``, ``pe.expand_as(x)``) records a ``call_method`` node;
- ``nn.Module.__call__`` and ``__getattr__``, so the tracer sees submodule calls and turns
  parameters into ``get_attr`` nodes.

The wrappers are installed on entry to the first trace and removed when the last one in any
thread ends (reference counts under a lock), so concurrent traces share them safely. Other
threads calling ember meanwhile get the original behaviour: a wrapper without a proxy in
its arguments calls straight through, and the module hooks act only in the thread tracing.
A wrapper compares equal to the function it wraps, so passes written as
``node.target == ember.relu`` work inside a trace or a ``Transformer`` too.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import threading
import types
from collections.abc import Callable
from typing import Any

from .. import nn
from .._tensor import Tensor
from ._naming import TracingWrapper
from .proxy import Proxy

_NAMESPACES = ("ember", "ember.nn.functional", "ember.linalg", "ember.special", "ember.fft")
# Functions that answer about the Python object rather than compute on a tensor.
_NOT_RECORDED = frozenset({"is_tensor", "is_storage"})
# Tensor operators and the method name torch records for them.
_TENSOR_OPERATORS = {
    "__add__": "add",
    "__sub__": "sub",
    "__mul__": "mul",
    "__truediv__": "div",
    "__floordiv__": "__floordiv__",
    "__mod__": "remainder",
    "__pow__": "pow",
    "__matmul__": "matmul",
    "__eq__": "eq",
    "__ne__": "ne",
    "__lt__": "lt",
    "__le__": "le",
    "__gt__": "gt",
    "__ge__": "ge",
    "__and__": "__and__",
    "__or__": "__or__",
    "__xor__": "__xor__",
    "__lshift__": "__lshift__",
    "__rshift__": "__rshift__",
    "__getitem__": "__getitem__",
}


def find_proxy(obj: Any) -> Proxy | None:
    """The first Proxy inside ``obj`` (walking tuples, lists, dicts and slices), or None."""
    if isinstance(obj, Proxy):
        return obj
    if isinstance(obj, (tuple, list)):
        for item in obj:
            found = find_proxy(item)
            if found is not None:
                return found
    elif isinstance(obj, dict):
        for item in obj.values():
            found = find_proxy(item)
            if found is not None:
                return found
    elif isinstance(obj, slice):
        return find_proxy((obj.start, obj.stop, obj.step))
    return None


def _find_proxy_in(args: tuple, kwargs: dict) -> Proxy | None:
    found = find_proxy(args)
    return found if found is not None else find_proxy(kwargs)


class _Recording(TracingWrapper):
    """An ember function that records a ``call_function`` node when given a proxy."""

    def __init__(self, original: Callable[..., Any]) -> None:
        self._fx_original = original
        functools.update_wrapper(self, original)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy_in(args, kwargs)
        if proxy is None:
            return self._fx_original(*args, **kwargs)
        return proxy.tracer.create_proxy("call_function", self._fx_original, args, kwargs)

    def __eq__(self, other: object) -> bool:
        return other is self or other is self._fx_original

    def __hash__(self) -> int:
        return hash(self._fx_original)

    def __repr__(self) -> str:
        return repr(self._fx_original)


_method_wrappers: dict[tuple[str, int], Callable[..., Any]] = {}  # made once per method


def _tensor_method(
    name: str, recorded_name: str, original: Callable[..., Any]
) -> Callable[..., Any]:
    cached = _method_wrappers.get((name, id(original)))
    if cached is not None and cached.__wrapped__ is original:
        return cached

    def method(self, *args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy_in(args, kwargs)
        if proxy is None:
            return original(self, *args, **kwargs)
        return proxy.tracer.create_proxy("call_method", recorded_name, (self,) + args, kwargs)

    functools.update_wrapper(method, original)
    method._fx_patched = True
    _method_wrappers[(name, id(original))] = method
    return method


def wrapped_function(original: Callable[..., Any]) -> Callable[..., Any]:
    """A free function marked with ``fx.wrap`` (or auto-wrapped, like ``math.sqrt``): one
    ``call_function`` node when a proxy is among its arguments."""

    @functools.wraps(original)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy_in(args, kwargs)
        if proxy is None:
            return original(*args, **kwargs)
        result = proxy.tracer.create_proxy("call_function", original, args, kwargs)
        result.node.meta["is_wrapped"] = True
        return result

    wrapped._fx_patched = True
    return wrapped


# --- the active tracer of each thread -----------------------------------------------------------
_thread_state = threading.local()


def current_tracer() -> Any:
    stack = getattr(_thread_state, "tracers", None)
    return stack[-1] if stack else None


def push_tracer(tracer: Any) -> None:
    if not hasattr(_thread_state, "tracers"):
        _thread_state.tracers = []
    _thread_state.tracers.append(tracer)


def pop_tracer() -> None:
    _thread_state.tracers.pop()


def _module_call(original: Callable[..., Any]) -> Callable[..., Any]:
    def __call__(module, *args: Any, **kwargs: Any) -> Any:
        tracer = current_tracer()
        if tracer is None:
            return original(module, *args, **kwargs)
        return tracer._module_call(module, original, args, kwargs)

    __call__._fx_patched = True
    return __call__


def _module_getattr(original: Callable[..., Any]) -> Callable[..., Any]:
    def __getattr__(module, name: str) -> Any:
        value = original(module, name)
        tracer = current_tracer()
        if tracer is None:
            return value
        return tracer.getattr(name, value, tracer._parameter_proxy_cache)

    __getattr__._fx_patched = True
    return __getattr__


# --- installing and removing, counted ---------------------------------------------------------
_lock = threading.RLock()
# (id(container), name) -> [count, container, name, original value or _ABSENT, is_class]
_installed: dict[tuple[int, str], list] = {}
_ABSENT = object()
_recordings: dict[int, _Recording] = {}  # id(original) -> its wrapper, made once


def _recording_for(original: Callable[..., Any]) -> _Recording:
    wrapper = _recordings.get(id(original))
    if wrapper is None or wrapper._fx_original is not original:
        wrapper = _recordings[id(original)] = _Recording(original)
    return wrapper


def _is_patched(value: Any) -> bool:
    return isinstance(value, _Recording) or getattr(value, "_fx_patched", False)


class PatchSession:
    """The wrappers one trace needs; ``close()`` gives them back."""

    def __init__(self) -> None:
        self._keys: list[tuple[int, str]] = []
        self._visited: set[int] = set()

    def __enter__(self) -> PatchSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _acquire(
        self, container: Any, name: str, make: Callable[[Any], Any], is_class: bool
    ) -> None:
        key = (id(container), name)
        with _lock:
            entry = _installed.get(key)
            if entry is not None:
                entry[0] += 1
                self._keys.append(key)
                return
            space = container.__dict__ if is_class else container
            original = space.get(name, _ABSENT)
            if original is _ABSENT:  # fx.wrap("len"): a builtin, patched into the globals
                original_fn = getattr(builtins, name)
            elif _is_patched(original):
                return  # wrapped by a session this one does not count with
            else:
                original_fn = original
            replacement = make(original_fn)
            if is_class:
                setattr(container, name, replacement)
            else:
                container[name] = replacement
            _installed[key] = [1, container, name, original, is_class]
            self._keys.append(key)

    def close(self) -> None:
        with _lock:
            while self._keys:
                key = self._keys.pop()
                entry = _installed[key]
                entry[0] -= 1
                if entry[0]:
                    continue
                del _installed[key]
                _, container, name, original, is_class = entry
                if is_class:
                    setattr(container, name, original)
                elif original is _ABSENT:
                    container.pop(name, None)
                else:
                    container[name] = original

    # --- what a trace patches -----------------------------------------------------------------
    def install_ember(self) -> None:
        """Recording wrappers for ember's namespaces and Tensor methods, and the module hooks."""
        with _lock:  # a wrapper seen here stays installed until this session counts it
            importlib.import_module("ember")._load_first_use_names()  # names loaded on first use
            for module_name in _NAMESPACES:
                namespace = vars(importlib.import_module(module_name))
                for name, value in list(namespace.items()):
                    if (id(namespace), name) in _installed or _recordable(name, value):
                        self._acquire(namespace, name, _recording_for, is_class=False)
            for name, value in list(vars(Tensor).items()):
                if name in _TENSOR_OPERATORS:
                    recorded = _TENSOR_OPERATORS[name]
                elif not name.startswith("_") and isinstance(value, types.FunctionType):
                    recorded = name
                else:
                    continue
                self._acquire(
                    Tensor, name, functools.partial(_tensor_method, name, recorded), is_class=True
                )
            self._acquire(nn.Module, "__call__", _module_call, is_class=True)
            self._acquire(nn.Module, "__getattr__", _module_getattr, is_class=True)

    def patch_globals(self, frame_dict: dict[str, Any], autowrap_ids: set[int]) -> None:
        """In a traced function's globals: names bound to ember functions (``from ember
        import relu``) and to auto-wrapped functions (``math.sqrt``)."""
        if id(frame_dict) in self._visited:
            return
        self._visited.add(id(frame_dict))
        with _lock:
            for name, value in list(frame_dict.items()):
                if (id(frame_dict), name) in _installed:
                    self._acquire(frame_dict, name, wrapped_function, is_class=False)  # counts
                elif name.startswith("_") or not callable(value) or _is_patched(value):
                    continue
                elif id(value) in autowrap_ids:
                    self._acquire(frame_dict, name, wrapped_function, is_class=False)
                elif id(value) in _recordings and _recordings[id(value)]._fx_original is value:
                    self._acquire(frame_dict, name, _recording_for, is_class=False)

    def patch_wrapped(self, registry: dict[tuple[int, str], dict[str, Any]]) -> None:
        """The functions registered with ``fx.wrap``."""
        with _lock:
            for (_, name), frame_dict in list(registry.items()):
                if name in frame_dict or hasattr(builtins, name):  # else: since deleted
                    self._acquire(frame_dict, name, wrapped_function, is_class=False)


def _recordable(name: str, value: Any) -> bool:
    if name.startswith("_") or name in _NOT_RECORDED or isinstance(value, type):
        return False
    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType, functools.partial))
