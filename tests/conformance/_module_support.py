"""PyTorch's ModuleInfo / OptimizerInfo test data, converted to ember and compared with torch.

Only the conformance suites import this, and only where torch is importable. A converted value
keeps its identity structure: one torch object converts to one ember object (a parameter that a
test passes twice stays one parameter).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import re
import warnings

import numpy as np
import pytest
import torch

import ember

# Objects whose constructor arguments the converter needs (a TransformerEncoderLayer given to
# TransformerEncoder, a scheduler built by an OptimizerInfo's lambda): recorded as they are built.
_RECORDED_BASES = (torch.nn.Module, torch.optim.lr_scheduler.LRScheduler)


_recording = False


def _recording_new(cls, *args, **kwargs):
    instance = object.__new__(cls)
    if _recording:
        object.__setattr__(instance, "_conformance_constructor_args", (args, kwargs))
    return instance


# Installed for good: CPython cannot take an assigned `__new__` back off a class whose subclasses
# exist (object.__new__ then refuses their arguments), so the hook stays and records only inside
# `recording_constructor_args`.
for _base in _RECORDED_BASES:
    _base.__new__ = staticmethod(_recording_new)


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """torch on one thread while the suite runs: its tensors are tiny, and a pool of threads
    spinning on a busy 2-core machine made torch's side four times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@contextlib.contextmanager
def recording_constructor_args():
    """Remember ``(args, kwargs)`` on every torch module or scheduler built inside the block."""
    global _recording
    _recording = True
    try:
        yield
    finally:
        _recording = False


def ember_dtype(torch_dtype: torch.dtype) -> ember.dtype:
    return getattr(ember, str(torch_dtype).removeprefix("torch."))


def tensor_to_ember(tensor: torch.Tensor) -> ember.Tensor:
    """A leaf ember tensor with the values, dtype and ``requires_grad`` of ``tensor``."""
    detached = tensor.detach()
    if detached.layout == torch.sparse_coo:
        detached = detached.coalesce()
        return ember.sparse_coo_tensor(
            tensor_to_ember(detached.indices()),
            tensor_to_ember(detached.values()),
            tuple(detached.shape),
        )
    if detached.dtype in (torch.bfloat16, torch.float16):
        # NumPy has no bfloat16: carry the (exactly representable) values through float32
        converted = ember.tensor(detached.float().numpy().copy()).to(ember_dtype(detached.dtype))
    else:
        converted = ember.tensor(detached.numpy().copy())
    if tensor.requires_grad:
        converted.requires_grad_(True)
    return converted


def _ember_counterpart(obj, memo):
    """The ember object of the same name as a torch function or class (F.gelu -> ember's)."""
    name = getattr(obj, "__name__", None)
    module_name = getattr(obj, "__module__", None) or ""
    if module_name.startswith("torch.") and "." in module_name:
        ember_module_name = "ember." + module_name.removeprefix("torch.")
        with contextlib.suppress(ImportError):
            import importlib

            found = getattr(importlib.import_module(ember_module_name), name, None)
            if found is not None:
                return found
    for namespace in (ember.nn.functional, ember, ember.nn):
        found = getattr(namespace, name or "", None)
        if found is not None:
            return found
    raise NotImplementedError(f"no ember counterpart of {obj!r}")


def to_ember(value, memo=None):
    """``value`` (nested torch data, modules, dtypes, functions) with ember's objects in place."""
    if memo is None:
        memo = {}
    key = id(value)
    if key in memo:
        return memo[key][0]
    converted = _convert(value, memo)
    memo[key] = (converted, value)  # keep `value` alive so that its id stays unique
    return converted


def _convert(value, memo):
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return value
    if isinstance(value, torch.nn.Parameter):
        return ember.nn.Parameter(tensor_to_ember(value), requires_grad=value.requires_grad)
    if isinstance(value, torch.Tensor):
        return tensor_to_ember(value)
    if isinstance(value, torch.dtype):
        return ember_dtype(value)
    if isinstance(value, torch.device):
        return ember.device(str(value))
    if isinstance(value, torch.Size):
        return ember.Size(value)
    if isinstance(value, torch.nn.Module):
        return module_to_ember(value, memo)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(to_ember(item, memo) for item in value))
    if isinstance(value, (list, tuple)):
        return type(value)(to_ember(item, memo) for item in value)
    if isinstance(value, dict):
        return {key: to_ember(item, memo) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        ember_cls = _ember_counterpart(type(value), memo)
        fields = {f.name: to_ember(getattr(value, f.name), memo) for f in dataclasses.fields(value)}
        return ember_cls(**fields)
    if callable(value):
        return _ember_counterpart(value, memo)
    raise NotImplementedError(f"cannot convert {type(value).__name__} to ember")


def module_to_ember(module: torch.nn.Module, memo=None) -> ember.nn.Module:
    """ember's module of the same class, built with the recorded constructor arguments and
    loaded with ``module``'s state."""
    recorded = module.__dict__.get("_conformance_constructor_args")
    if recorded is None:
        raise NotImplementedError(f"{type(module).__name__} was built outside recording")
    args, kwargs = to_ember(recorded, memo)
    converted = getattr(ember.nn, type(module).__name__)(*args, **kwargs)
    converted.load_state_dict(state_to_ember(module.state_dict()))
    return converted.train(module.training)


def state_to_ember(state: dict) -> dict:
    return {name: tensor_to_ember(value) for name, value in state.items()}


# ---------------------------------------------------------------------------------------------
# Comparison: every function returns a list of mismatch descriptions (empty when all agree)


def tolerances(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for ember against torch: summation orders differ, so a little above
    torch.testing's defaults."""
    return {
        torch.float16: (2e-3, 2e-3),
        torch.bfloat16: (2e-2, 2e-2),
        torch.float32: (1e-4, 1e-5),
        torch.complex64: (1e-4, 1e-5),
    }.get(dtype, (1e-7, 1e-9))


def _to_numpy(tensor) -> np.ndarray:
    if isinstance(tensor, torch.Tensor):
        tensor = tensor.detach()
        if tensor.layout != torch.strided:
            tensor = tensor.to_dense()
        if tensor.dtype in (torch.bfloat16, torch.float16):
            tensor = tensor.float()
        return tensor.numpy()
    tensor = tensor.detach()
    if getattr(tensor, "is_sparse", False):
        tensor = tensor.to_dense()
    if tensor.dtype in (ember.bfloat16, ember.float16):
        tensor = tensor.float()
    return np.asarray(tensor.numpy())


def compare_tensor(actual, expected: torch.Tensor, where: str, rtol=None, atol=None) -> list:
    if not isinstance(actual, ember.Tensor):
        return [f"{where}: ember gives {type(actual).__name__}, torch a tensor"]
    problems = []
    if str(actual.dtype).removeprefix("ember.") != str(expected.dtype).removeprefix("torch."):
        problems.append(f"{where}: dtype {actual.dtype} != {expected.dtype}")
    if tuple(actual.shape) != tuple(expected.shape):
        return [*problems, f"{where}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"]
    default_rtol, default_atol = tolerances(expected.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    if math.isinf(atol):  # layout only: dtype and shape, checked above
        return problems
    got, want = _to_numpy(actual), _to_numpy(expected)
    if want.dtype.kind in "fc":
        close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        close = got == want
    if not np.all(close):
        bad = int(np.size(close) - np.count_nonzero(close))
        with np.errstate(all="ignore"):
            diff = np.abs(got.astype(np.complex128) - want.astype(np.complex128))
            diff = np.where(close, 0, diff)
        problems.append(
            f"{where}: {bad} of {np.size(close)} values differ (max |diff| {np.nanmax(diff):.3g})"
        )
    return problems


def no_less_accurate(actual, expected, exact, where: str) -> list:
    """Half-precision outputs: ember agrees where it is within tolerance of torch or no further
    from the float64 result ``exact`` than torch is (torch's own rounding order is not a spec)."""
    problems = []
    for index, (got, want, truth) in enumerate(
        zip(tensors_in(actual), tensors_in(expected), tensors_in(exact))
    ):
        rtol, atol = tolerances(want.dtype)
        got, want, truth = _to_numpy(got), _to_numpy(want), _to_numpy(truth).astype(np.float64)
        if got.shape != truth.shape:
            problems.append(f"{where} {index}: shape {got.shape} != {truth.shape}")
            continue
        with np.errstate(all="ignore"):
            allowed = np.abs(want - truth) + rtol * np.abs(truth) + atol
            error = np.abs(got - truth)
        ok = (error <= allowed) | np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        if not np.all(ok):
            problems.append(
                f"{where} {index}: {np.size(ok) - np.count_nonzero(ok)} values further from the "
                f"float64 result than torch's (max error {np.nanmax(np.where(ok, 0, error)):.3g})"
            )
    return problems


def compare_values(actual, expected, where: str, rtol=None, atol=None) -> list:
    """Nested outputs: tensors by value, dtype and shape; containers by type and length."""
    if isinstance(expected, torch.Tensor):
        return compare_tensor(actual, expected, where, rtol, atol)
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return [f"{where}: ember gives {_describe(actual)}, torch {_describe(expected)}"]
        problems = []
        for index, (a, e) in enumerate(zip(actual, expected)):
            problems += compare_values(a, e, f"{where}[{index}]", rtol, atol)
        return problems
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            return [f"{where}: ember gives {_describe(actual)}, torch {_describe(expected)}"]
        problems = []
        for key in expected:
            problems += compare_values(actual[key], expected[key], f"{where}[{key!r}]", rtol, atol)
        return problems
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        rel_tol = 1e-6 if rtol is None else max(rtol, 1e-6)
        abs_tol = 1e-12 if atol is None else atol
        if math.isclose(actual, expected, rel_tol=rel_tol, abs_tol=abs_tol) or (
            math.isnan(actual) and math.isnan(expected)
        ):
            return []
        return [f"{where}: {actual!r} != {expected!r}"]
    if isinstance(expected, torch.dtype):
        return [] if actual == ember_dtype(expected) else [f"{where}: {actual!r} != {expected!r}"]
    if type(actual) is not type(expected) or actual != expected:
        return [f"{where}: ember gives {actual!r}, torch {expected!r}"]
    return []


def _describe(value) -> str:
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of {len(value)}"
    if isinstance(value, dict):
        return f"dict with keys {sorted(map(str, value))}"
    return type(value).__name__


def tensors_in(value) -> list:
    """The tensors of a nested output, depth first."""
    if isinstance(value, (torch.Tensor, ember.Tensor)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in tensors_in(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in tensors_in(item)]
    return []


# ---------------------------------------------------------------------------------------------
# Expected errors (OptimizerInfo / ModuleInfo error inputs)


def check_raises(action, error_type: type, error_regex: str) -> list:
    """Run ``action``; the problems if it does not raise ``error_type`` matching ``error_regex``
    (or, for a Warning type, warn so)."""
    if issubclass(error_type, Warning):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                action()
            except Exception as error:  # noqa: BLE001 - reported as a disagreement
                return [f"raised {type(error).__name__}: {error} instead of warning"]
        for warning in caught:
            if issubclass(warning.category, error_type) and re.search(
                error_regex, str(warning.message)
            ):
                return []
        messages = [f"{w.category.__name__}: {w.message}" for w in caught]
        return [f"no {error_type.__name__} matching {error_regex!r} (warned {messages})"]
    try:
        action()
    except Exception as error:  # noqa: BLE001 - compared below
        if not isinstance(error, error_type):
            return [f"raised {type(error).__name__}: {error}; torch {error_type.__name__}"]
        if not re.search(error_regex, str(error)):
            return [f"message {str(error)!r} does not match {error_regex!r}"]
        return []
    return [f"did not raise {error_type.__name__} matching {error_regex!r}"]


# ---------------------------------------------------------------------------------------------
# Known failures: `<info name> :: <configuration id>  # reason`, one a line


def read_known_failures(path) -> dict:
    known = {}
    for line in path.read_text().splitlines():
        entry, _, reason = line.partition("#")
        entry = entry.strip()
        if not entry:
            continue
        info_name, _, config = entry.partition("::")
        known.setdefault(info_name.strip(), {})[config.strip()] = reason.strip()
    return known


def judge(info_name: str, results: dict, known: dict) -> list:
    """Lines describing what is wrong: a disagreement not listed, or a listed one that agrees."""
    listed = known.get(info_name, {})
    lines = []
    for config, problems in results.items():
        if problems and config not in listed:
            lines.append(f"{config}: " + "; ".join(problems[:6]))
        elif not problems and config in listed:
            lines.append(f"{config}: agrees now, remove it from the known failures")
    for config in listed:
        if config not in results:
            lines.append(f"{config}: listed as a known failure but no longer generated")
    return lines
