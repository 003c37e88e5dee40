"""Names in a graph: unique node names, and how a call target is spelled in printouts and code.

ember's functions live in implementation modules (``ember.ops.activation.relu``) but users
know them by their public path (``ember.relu``, ``ember.nn.functional.gelu``). Printouts and
generated code use the public path, so ``gm.code`` reads as the code a user would write, with
``ember`` where torch's reads ``torch``.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import keyword
import math
import re
import types
from typing import Any, NamedTuple

import ember

# A candidate name: an identifier, optionally ending in _<number>.
_NAME = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_ILLEGAL_CHARS = re.compile("[^0-9a-zA-Z_]+")
_CAMEL_HUMP = re.compile(r"(?<=[a-z])([A-Z])")


class _CustomBuiltin(NamedTuple):
    """A name every generated forward can use, and how a saved module imports it."""

    import_str: str
    obj: object


def _custom_builtins() -> dict[str, _CustomBuiltin]:
    return {
        "inf": _CustomBuiltin("from math import inf", math.inf),
        "nan": _CustomBuiltin("from math import nan", math.nan),
        "NoneType": _CustomBuiltin("NoneType = type(None)", type(None)),
        "ember": _CustomBuiltin("import ember", ember),
        "device": _CustomBuiltin("from ember import device", ember.device),
    }


CUSTOM_BUILTINS = _custom_builtins()

# Names a generated value must not take: keywords, Python builtins and the custom builtins
# (unless the object named is that very builtin).
_ILLEGAL_NAMES: dict[str, object] = {k: object() for k in keyword.kwlist}
_ILLEGAL_NAMES.update(builtins.__dict__)
_ILLEGAL_NAMES.update({name: b.obj for name, b in CUSTOM_BUILTINS.items()})


def snake_case(s: str) -> str:
    """``pascalCase`` -> ``pascal_case``, ``ALL_CAPS`` -> ``all_caps``."""
    return _CAMEL_HUMP.sub(r"_\1", s).lower()


def is_magic(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


class _Namespace:
    """Unique names for objects: each object one name, each name used once, no builtin
    shadowed (``pow`` becomes ``pow_1``), ``add, add_1, add_2`` for repeats."""

    def __init__(self) -> None:
        self._obj_to_name: dict[object, str] = {}
        self._used_names: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: object | None) -> str:
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _NAME.match(candidate)
        if match is None:
            candidate = _ILLEGAL_CHARS.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _NAME.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if _ILLEGAL_NAMES.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name: str, obj: object) -> None:
        existing = self._obj_to_name.setdefault(obj, name)
        if existing is not name:
            raise RuntimeError(f"object {obj!r} already has the name {existing!r}")

    def rename_object(self, obj: object, name: str) -> None:
        self._obj_to_name[obj] = name
        self._used_names.add(name)


# --- public paths of ember's functions ------------------------------------------------------
_PUBLIC_NAMESPACES = (
    "ember",
    "ember.nn.functional",
    "ember.linalg",
    "ember.special",
    "ember.fft",
    "ember.fx",
)
_public_paths: dict[int, tuple[object, str]] | None = None


class TracingWrapper:
    """Base of the wrappers fx puts over ember's functions during a trace (``_patching``):
    node targets and printed names see through them to the function."""

    _fx_original: Any


def unwrap_recording(obj: Any) -> Any:
    """The ember function behind a tracing wrapper, else ``obj``."""
    return obj._fx_original if isinstance(obj, TracingWrapper) else obj


def _build_public_paths() -> dict[int, tuple[object, str]]:
    paths: dict[int, tuple[object, str]] = {}
    for module_name in _PUBLIC_NAMESPACES:
        module = importlib.import_module(module_name)
        for name, value in list(vars(module).items()):
            if name.startswith("_") or not callable(value):
                continue
            value = unwrap_recording(value)
            paths.setdefault(id(value), (value, f"{module_name}.{name}"))
    return paths


def public_path(func: object) -> str | None:
    """``'ember.relu'`` for ember's relu: the first public namespace that holds ``func``."""
    global _public_paths
    if _public_paths is None:
        _public_paths = _build_public_paths()
    entry = _public_paths.get(id(func))
    return entry[1] if entry is not None and entry[0] is func else None


def qualified_name(func: Any) -> str:
    """How ``func`` is written in code: ``getattr``, ``ember.relu``, ``_operator.abs``,
    ``__main__.my_function``."""
    func = unwrap_recording(func)
    name = func.__name__
    if getattr(builtins, name, None) is func:
        return name
    path = public_path(func)
    if path is not None:
        return path
    if name == "<lambda>":
        try:
            name = inspect.getsource(func).split("=")[0].strip()
        except Exception as e:
            raise RuntimeError("Unable to represent lambda") from e
    module = getattr(func, "__module__", None)
    if module is None:
        raise RuntimeError(f"cannot find module for {func}")
    return f"{module}.{name}"


def pretty_print_target(target: Any) -> str:
    """``builtins.getattr``, ``operator.add``, ``ember.relu`` or the string target itself."""
    if isinstance(target, str):
        return target
    target = unwrap_recording(target)
    module = getattr(target, "__module__", None)
    name = getattr(target, "__name__", None)
    if name is not None:
        if module == "builtins":
            return f"builtins.{name}"
        if module == "_operator":
            return f"operator.{name}"
    return qualified_name(target)


def _resolves_to(path: str, obj: object) -> bool:
    """Whether the dotted ``path`` (starting at ``ember``) reaches ``obj``."""
    value: Any = ember
    for atom in path.split(".")[1:]:
        try:
            value = getattr(value, atom)
        except AttributeError:
            return False
    return unwrap_recording(value) is obj


def ember_path(obj: Any) -> str | None:
    """The dotted path from ``ember`` to ``obj`` when it is one of ember's own objects that
    generated code can name directly (``ember.relu``), else None."""
    if isinstance(obj, types.ModuleType):
        return None
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str) or not (module == "ember" or module.startswith("ember.")):
        return None
    try:
        path = qualified_name(obj)
    except RuntimeError:
        return None
    return path if path.startswith("ember.") and _resolves_to(path, obj) else None
