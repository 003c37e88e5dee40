"""``fx.wrap``: the registry of module-level functions kept as single calls when traced."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

# (id(globals), name) -> globals of the module that called wrap(name)
_wrapped_fns_to_patch: dict[tuple[int, str], dict[str, Any]] = {}


def wrap(fn_or_name: str | Callable[..., Any]):
    """Keep a module-level function as one ``call_function`` node instead of tracing into it
    (a "leaf function"). Call at the top level of the module that defines the function, with
    the function or its name, or use it as a decorator.

    Example::
        >>> def clamp_to_range(x, limit):
        ...     return x.clamp(-limit, limit) if limit > 0 else x
        >>> _ = wrap("clamp_to_range")
    """
    if callable(fn_or_name):
        fn_name = fn_or_name.__name__
    elif isinstance(fn_or_name, str):
        fn_name = fn_or_name
    else:
        raise RuntimeError(
            "Unsupported type for global function! Must be either a callable or string name"
        )
    caller = inspect.currentframe().f_back
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(caller.f_globals), fn_name)] = caller.f_globals
    return fn_or_name
