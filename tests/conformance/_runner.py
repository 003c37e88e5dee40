"""Runs one OpInfo against torch and ember and says, per category, where they disagree.

Categories (one pytest test each per OpInfo):
  function, method, inplace, out  every sample of every supported dtype through that variant
  errors                          each ``error_inputs`` entry: ember raises torch's exception family
  error_messages                  ... and its message matches torch's ``error_regex``
  vjp                             float64 vector-Jacobian products against torch's
  jvp                             float64 forward-mode tangents (``supports_forward_ad``)

A disagreement is recorded as ``(dtype, sample index, reason)``; everything is deterministic
(torch is seeded before each sample list is built and before each call on both sides).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import math
import re
import time
import warnings

import torch
import torch.autograd.forward_ad as torch_fwad

import ember
from ember._kernels import jit
from ember.autograd import forward_ad as ember_fwad

from . import _bridge

DTYPES = (
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.complex64,
    torch.complex128,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
)
SAMPLE_CATEGORIES = ("function", "method", "inplace", "out")
ERROR_CATEGORIES = ("errors", "error_messages")
GRAD_CATEGORIES = ("vjp", "jvp")
CATEGORIES = SAMPLE_CATEGORIES + ERROR_CATEGORIES + GRAD_CATEGORIES

# assert_close's defaults, with the half types widened: ember computes them in float32 and
# rounds once, torch accumulates some reductions in the half type itself
TOLERANCES = {
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float32: (1.3e-6, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex128: (1e-7, 1e-7),
}
GRAD_TOLERANCE = (1e-6, 1e-7)

# per-op work caps, so that the whole database runs in CI's time: in float32 and float64
# (for ops without them, their first dtype) every sample up to FULL_SAMPLES, then that
# many spread evenly over the list; the first few in the other dtypes
FULL_DTYPES = (torch.float32, torch.float64)
FULL_SAMPLES = 32
SAMPLES_PER_OTHER_DTYPE = 3
GRAD_SAMPLES = 6


@functools.cache
def op_db():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db as db
    return db


def op_key(op) -> str:
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


@functools.cache
def ops_by_key() -> dict:
    return {op_key(op): op for op in op_db()}


@dataclasses.dataclass
class CategoryResult:
    checked: int = 0
    failures: list = dataclasses.field(default_factory=list)  # (dtype, index, reason)
    not_applicable: str | None = None  # why the category does not exist for this op

    def fail(self, dtype, index, reason: str) -> None:
        self.failures.append((str(dtype).split(".")[-1], index, _short(reason)))


def _short(reason: str) -> str:
    reason = " ".join(str(reason).split())
    return reason[:300]


# ----------------------------------------------------------------------------------------
# comparing results


def builtin_family(exc_type: type) -> type:
    """The first built-in class in ``exc_type``'s MRO (torch's LinAlgError: RuntimeError)."""
    for cls in exc_type.__mro__:
        if cls.__module__ == "builtins":
            return cls
    return Exception


def same_family(torch_type: type, ember_exc: BaseException) -> bool:
    if isinstance(ember_exc, _bridge.MissingInEmber):
        return False
    if type(ember_exc).__module__.split(".")[0] in ("numpy", "scipy"):
        return False  # a leaked NumPy error is never torch's
    return isinstance(ember_exc, builtin_family(torch_type))


def compare(expected, actual, compare_values: bool = True, tolerance=None) -> str | None:
    """None where ember's ``actual`` matches torch's ``expected``, else what differs."""
    if isinstance(expected, torch.Tensor):
        if not _bridge.is_ember_tensor(actual):
            return f"expected a tensor, got {type(actual).__name__}"
        if tuple(actual.shape) != tuple(expected.shape):
            return f"shape {tuple(actual.shape)} != torch's {tuple(expected.shape)}"
        if _bridge.torch_dtype(actual.dtype) != expected.dtype:
            return f"dtype {actual.dtype} != torch's {expected.dtype}"
        if not compare_values or expected.layout != torch.strided:
            return None
        got = _bridge.ember_tensor_to_torch(actual)
        want = expected.detach().resolve_conj().resolve_neg()
        rtol, atol = tolerance or TOLERANCES.get(want.dtype, (0, 0))
        try:
            torch.testing.assert_close(
                got, want, rtol=rtol, atol=atol, equal_nan=True, check_stride=False
            )
        except AssertionError as error:
            lines = [ln for ln in str(error).splitlines() if ln.strip()]
            return "values differ: " + " ".join(lines[:3])
        return None
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)):
            return f"expected a {type(expected).__name__}, got {type(actual).__name__}"
        if len(actual) != len(expected):
            return f"{len(actual)} results, torch has {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            why = compare(e, a, compare_values, tolerance)
            if why:
                return f"[{i}] {why}"
        return None
    if isinstance(expected, torch.dtype):
        return None if _bridge.torch_dtype(actual) == expected else f"{actual} != {expected}"
    if expected is None:
        return None if actual is None else f"expected None, got {type(actual).__name__}"
    if isinstance(expected, (bool, int, float, complex)):
        if _bridge.is_ember_tensor(actual) or not isinstance(actual, (bool, int, float, complex)):
            return f"expected a Python {type(expected).__name__}, got {type(actual).__name__}"
        if isinstance(expected, bool) != isinstance(actual, bool):
            return f"expected {type(expected).__name__}, got {type(actual).__name__}"
        if not compare_values:
            return None
        if isinstance(expected, float) and math.isnan(expected):
            return None if isinstance(actual, float) and math.isnan(actual) else f"{actual} != nan"
        if expected == actual or abs(complex(expected) - complex(actual)) <= 1e-5 + 1e-5 * abs(
            complex(expected)
        ):
            return None
        return f"{actual!r} != torch's {expected!r}"
    try:
        converted = _bridge.to_torch(actual)
        return None if converted == expected else f"{actual!r} != torch's {expected!r}"
    except Exception as error:  # an uncomparable value is a disagreement, not a crash
        return f"cannot compare {type(actual).__name__} with {type(expected).__name__}: {error}"


# ----------------------------------------------------------------------------------------
# calling both sides


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _call_torch(fn, sample, seed=True):
    if seed:
        torch.manual_seed(0)
    return fn(sample.input, *sample.args, **sample.kwargs)


def _call_ember(fn, converted):
    ember_input, ember_args, ember_kwargs = converted
    ember.manual_seed(0)
    return fn(ember_input, *ember_args, **ember_kwargs)


def _convert(sample):
    memo: dict = {}
    return (
        _bridge.to_ember(sample.input, memo),
        _bridge.to_ember(tuple(sample.args), memo),
        _bridge.to_ember(dict(sample.kwargs), memo),
    ), memo


def _resolve(fn):
    """(ember callable, None) or (None, why not)."""
    try:
        return _bridge.to_ember_callable(fn), None
    except _bridge.MissingInEmber as error:
        return None, f"missing in ember: {error}"


def _outcome(fn, *args, **kwargs):
    """(result, None) or (None, exception)."""
    try:
        return fn(*args, **kwargs), None
    except Exception as error:
        return None, error


def _check_pair(result: CategoryResult, dtype, index, torch_outcome, ember_outcome, **kw):
    (t_out, t_err), (e_out, e_err) = torch_outcome, ember_outcome
    result.checked += 1
    if t_err is not None:
        if e_err is None:
            result.fail(dtype, index, f"torch raised {type(t_err).__name__}, ember did not")
        elif not same_family(type(t_err), e_err):
            result.fail(
                dtype,
                index,
                f"torch raised {type(t_err).__name__}, ember {type(e_err).__name__}: {e_err}",
            )
        return
    if e_err is not None:
        result.fail(dtype, index, f"ember raised {type(e_err).__name__}: {e_err}")
        return
    why = compare(t_out, e_out, **kw)
    if why:
        result.fail(dtype, index, why)


def _samples(op, dtype, limit: int, spread: bool, requires_grad=False) -> list:
    """[(index, sample)]: the first ``limit`` samples, or (``spread``) ``limit`` of them
    evenly spaced over the whole list."""
    torch.manual_seed(0)
    with _quiet():
        generated = op.sample_inputs("cpu", dtype, requires_grad=requires_grad)
        if not spread:
            return list(enumerate(itertools.islice(generated, limit)))
        samples = list(generated)
    if len(samples) <= limit:
        return list(enumerate(samples))
    step = len(samples) / limit
    return [(int(i * step), samples[int(i * step)]) for i in range(limit)]


def _dtypes_to_run(op):
    supported = op.supported_dtypes("cpu")
    return [d for d in DTYPES if d in supported]


def _samples_to_run(op, dtype, dtypes) -> list:
    full = [d for d in dtypes if d in FULL_DTYPES] or dtypes[:1]
    if dtype in full:
        return _samples(op, dtype, FULL_SAMPLES, spread=True)
    return _samples(op, dtype, SAMPLES_PER_OTHER_DTYPE, spread=False)


def _empty_like_output(value, make):
    if isinstance(value, torch.Tensor):
        return make(value)
    if (
        isinstance(value, (tuple, list))
        and value
        and all(isinstance(v, torch.Tensor) for v in value)
    ):
        return tuple(make(v) for v in value)
    return None


def run_samples(op) -> dict[str, CategoryResult]:
    results = {c: CategoryResult() for c in SAMPLE_CATEGORIES}
    compare_values = not getattr(op, "has_nondeterministic_output", False)
    function, why_function = _resolve(op.op)
    method, why_method = (None, None)
    inplace, why_inplace = (None, None)
    if op.method_variant is None:
        results["method"].not_applicable = "no method variant"
    else:
        method, why_method = _resolve(op.method_variant)
    if op.inplace_variant is None:
        results["inplace"].not_applicable = "no in-place variant"
    else:
        inplace, why_inplace = _resolve(op.inplace_variant)
    if not op.supports_out:
        results["out"].not_applicable = "no out= variant"
    dtypes = _dtypes_to_run(op)
    if not dtypes:
        for r in results.values():
            r.not_applicable = r.not_applicable or "no dtype among those compared"
    for dtype in dtypes:
        for index, sample in _samples_to_run(op, dtype, dtypes):
            with _quiet():
                _run_one_sample(
                    op, dtype, index, sample, results, compare_values,
                    (function, why_function), (method, why_method), (inplace, why_inplace),
                )  # fmt: skip
    return results


def _ember_side(fn, why, sample, call):
    """ember's outcome for one variant, converting the sample afresh (in-place ops mutate it)."""
    if fn is None:
        return None, _bridge.MissingInEmber(why)
    try:
        converted, _ = _convert(sample)
    except _bridge.MissingInEmber as error:
        return None, error
    return _outcome(call, fn, converted)


def _run_one_sample(op, dtype, index, sample, results, compare_values, function, method, inplace):
    kw = {"compare_values": compare_values}
    # every ember copy is taken before torch runs an in-place variant on the sample
    e_function = _ember_side(*function, sample, _call_ember)
    t_function = _outcome(_call_torch, op.op, sample)
    _check_pair(results["function"], dtype, index, t_function, e_function, **kw)

    if op.method_variant is not None:
        e_method = _ember_side(*method, sample, _call_ember)
        t_method = _outcome(_call_torch, op.method_variant, sample)
        _check_pair(results["method"], dtype, index, t_method, e_method, **kw)

    if op.supports_out and t_function[1] is None:
        _run_out(op, dtype, index, sample, results["out"], function, t_function[0], kw)

    if op.inplace_variant is not None:
        fn, why = inplace
        if fn is None:
            e_inplace = (None, _bridge.MissingInEmber(why))
            e_input = None
        else:
            try:
                converted, _ = _convert(sample)
                e_input = converted[0]
                e_inplace = _outcome(_call_ember, fn, converted)
            except _bridge.MissingInEmber as error:
                e_inplace, e_input = (None, error), None
        t_input = sample.input
        if isinstance(t_input, torch.Tensor):
            t_input = t_input.clone()
            sample_for_torch = _with_input(sample, t_input)
        else:
            sample_for_torch = sample
        t_inplace = _outcome(_call_torch, op.inplace_variant, sample_for_torch)
        _check_pair(results["inplace"], dtype, index, t_inplace, e_inplace, **kw)
        if t_inplace[1] is None and e_inplace[1] is None and isinstance(t_input, torch.Tensor):
            why = compare(t_input, e_input, compare_values)
            if why:
                results["inplace"].fail(dtype, index, "the input after the in-place op: " + why)


def _with_input(sample, new_input):
    from torch.testing._internal.opinfo.core import SampleInput

    return SampleInput(new_input, args=sample.args, kwargs=sample.kwargs)


def _run_out(op, dtype, index, sample, result, function, expected, kw):
    t_out = _empty_like_output(expected, lambda t: torch.zeros(t.shape, dtype=t.dtype))
    if t_out is None:
        return
    fn, why = function
    e_out_buffers = None
    if fn is None:
        e_outcome = (None, _bridge.MissingInEmber(why))
    else:
        try:
            converted, _ = _convert(sample)
            e_out_buffers = _empty_like_output(
                expected, lambda t: ember.zeros(tuple(t.shape), dtype=_bridge.ember_dtype(t.dtype))
            )
            e_outcome = _outcome(
                lambda f, c: _call_ember(lambda *a, **k: f(*a, **k, out=e_out_buffers), c),
                fn,
                converted,
            )
        except _bridge.MissingInEmber as error:
            e_outcome = (None, error)
    t_outcome = _outcome(lambda: _call_torch(lambda *a, **k: op.op(*a, **k, out=t_out), sample))
    _check_pair(result, dtype, index, t_outcome, e_outcome, **kw)
    if t_outcome[1] is None and e_outcome[1] is None:
        why = compare(t_out, e_out_buffers, kw["compare_values"])
        if why:
            result.fail(dtype, index, "the out= tensor: " + why)


# ----------------------------------------------------------------------------------------
# error inputs


def run_errors(op) -> dict[str, CategoryResult]:
    results = {c: CategoryResult() for c in ERROR_CATEGORIES}
    error_inputs = []
    if op.error_inputs_func is not None:
        torch.manual_seed(0)
        with _quiet():
            error_inputs = list(op.error_inputs("cpu"))
    if not error_inputs:
        for r in results.values():
            r.not_applicable = "no error inputs"
        return results
    function, why_function = _resolve(op.op)
    for index, error_input in enumerate(error_inputs):
        sample = error_input.sample_input
        with _quiet():
            e_outcome = _ember_side(function, why_function, sample, _call_ember)
            t_outcome = _outcome(_call_torch, op.op, sample)
        t_err = t_outcome[1]
        if t_err is None or not isinstance(t_err, error_input.error_type):
            continue  # torch itself does not raise here: nothing to hold ember to
        e_err = e_outcome[1]
        for category in ERROR_CATEGORIES:
            results[category].checked += 1
        if e_err is None:
            results["errors"].fail(
                "-", index, f"torch raises {type(t_err).__name__}, ember returns"
            )
            results["error_messages"].fail("-", index, "no error")
            continue
        if not same_family(error_input.error_type, e_err):
            results["errors"].fail(
                "-",
                index,
                f"torch raises {error_input.error_type.__name__}, "
                f"ember {type(e_err).__name__}: {e_err}",
            )
        if not re.search(error_input.error_regex, str(e_err)):
            results["error_messages"].fail(
                "-", index, f"{str(e_err)!r} does not match {error_input.error_regex!r}"
            )
    return results


# ----------------------------------------------------------------------------------------
# gradients


def _tensors_in(value, found: list) -> list:
    if isinstance(value, torch.Tensor):
        found.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _tensors_in(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors_in(v, found)
    return found


def _leaves(sample) -> list:
    tensors = _tensors_in([sample.input, list(sample.args), dict(sample.kwargs)], [])
    seen, leaves = set(), []
    for t in tensors:
        if t.requires_grad and id(t) not in seen:
            seen.add(id(t))
            leaves.append(t)
    return leaves


def _differentiable(outputs, is_tensor) -> list:
    flat = []

    def walk(v):
        if is_tensor(v):
            flat.append(v)
        elif isinstance(v, (tuple, list)):
            for x in v:
                walk(x)

    walk(outputs)
    return flat


def _ember_wrapper(op):
    wrapper = op.gradcheck_wrapper
    return _bridge.to_ember_callable(wrapper)


def run_grads(op) -> dict[str, CategoryResult]:
    results = {c: CategoryResult() for c in GRAD_CATEGORIES}
    if not op.supports_autograd:
        results["vjp"].not_applicable = "no autograd support"
    if not op.supports_forward_ad:
        results["jvp"].not_applicable = "no forward AD support"
    if torch.float64 not in op.supported_backward_dtypes("cpu"):
        for r in results.values():
            r.not_applicable = r.not_applicable or "no float64 backward"
    if all(r.not_applicable for r in results.values()):
        return results
    function, why = _resolve(op.op)
    wrapper, why_wrapper = _resolve(op.gradcheck_wrapper)
    why = why or why_wrapper
    samples = _samples(op, torch.float64, GRAD_SAMPLES, spread=True, requires_grad=True)
    for index, sample in samples:
        with _quiet():
            if not results["vjp"].not_applicable:
                _run_vjp(op, index, sample, results["vjp"], function, wrapper, why)
            if not results["jvp"].not_applicable:
                _run_jvp(op, index, sample, results["jvp"], function, wrapper, why)
    return results


def _cotangents(tensors, seed: int) -> list:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(t.shape, dtype=t.dtype, generator=generator) for t in tensors]


def _torch_vjp(op, sample, leaves):
    torch.manual_seed(0)
    out = op.gradcheck_wrapper(op.op, sample.input, *sample.args, **sample.kwargs)
    out = sample.output_process_fn_grad(out)
    outs = _differentiable(out, lambda v: isinstance(v, torch.Tensor))
    differentiable = [o for o in outs if o.requires_grad]
    if not differentiable:
        return None, None
    cots = _cotangents(differentiable, 1234)
    grads = torch.autograd.grad(differentiable, leaves, cots, allow_unused=True)
    return outs, (cots, grads)


def _run_vjp(op, index, sample, result, function, wrapper, why):
    leaves = _leaves(sample)
    if not leaves:
        return
    t_outs, t_rest = _outcome(_torch_vjp, op, sample, leaves)[0] or (None, None)
    if t_outs is None:
        return  # no differentiable output, or torch raises: nothing to compare
    cots, t_grads = t_rest
    result.checked += 1
    if function is None or wrapper is None:
        result.fail("float64", index, why)
        return

    def ember_vjp():
        converted, memo = _convert(sample)
        e_leaves = [memo[id(t)] for t in leaves]
        ember.manual_seed(0)
        out = wrapper(function, converted[0], *converted[1], **converted[2])
        process = _bridge.to_ember_callable(sample.output_process_fn_grad)
        out = process(out)
        outs = _differentiable(out, _bridge.is_ember_tensor)
        if len(outs) != len(t_outs):
            raise AssertionError(f"{len(outs)} tensor outputs, torch has {len(t_outs)}")
        keep = [i for i, o in enumerate(t_outs) if o.requires_grad]
        missing = [i for i in keep if not outs[i].requires_grad]
        if missing:
            raise AssertionError(f"output {missing[0]} does not require grad (torch's does)")
        e_cots = [_bridge.to_ember(c) for c in cots]
        return ember.autograd.grad([outs[i] for i in keep], e_leaves, e_cots, allow_unused=True)

    e_grads, error = _outcome(ember_vjp)
    if error is not None:
        result.fail("float64", index, f"{type(error).__name__}: {error}")
        return
    _compare_grads(result, index, t_grads, e_grads)


def _compare_grads(result, index, t_grads, e_grads):
    for i, (t_grad, e_grad) in enumerate(zip(t_grads, e_grads, strict=True)):
        if t_grad is None and e_grad is None:
            continue
        if t_grad is None or e_grad is None:
            which = "ember" if e_grad is None else "torch"
            result.fail(
                "float64", index, f"input {i}: {which}'s gradient is None, the other's is not"
            )
            return
        why = compare(t_grad, e_grad, tolerance=GRAD_TOLERANCE)
        if why:
            result.fail("float64", index, f"input {i}: {why}")
            return


def _substitute(value, replace):
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_substitute(v, replace) for v in value)
    if isinstance(value, list):
        return [_substitute(v, replace) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, replace) for k, v in value.items()}
    return replace(value)


def _torch_jvp(op, sample, leaves, tangents):
    by_id = {id(t): tg for t, tg in zip(leaves, tangents, strict=True)}
    with torch_fwad.dual_level():

        def replace(v):
            if isinstance(v, torch.Tensor) and id(v) in by_id:
                return torch_fwad.make_dual(v.detach(), by_id[id(v)])
            return v

        inp = _substitute(sample.input, replace)
        args = _substitute(tuple(sample.args), replace)
        kwargs = _substitute(dict(sample.kwargs), replace)
        torch.manual_seed(0)
        out = op.gradcheck_wrapper(op.op, inp, *args, **kwargs)
        out = sample.output_process_fn_grad(out)
        outs = _differentiable(out, lambda v: isinstance(v, torch.Tensor))
        return [torch_fwad.unpack_dual(o).tangent for o in outs]


def _run_jvp(op, index, sample, result, function, wrapper, why):
    leaves = _leaves(sample)
    if not leaves:
        return
    tangents = _cotangents(leaves, 4321)
    t_tangents, t_err = _outcome(_torch_jvp, op, sample, leaves, tangents)
    if t_err is not None or not any(t is not None for t in t_tangents):
        return
    result.checked += 1
    if function is None or wrapper is None:
        result.fail("float64", index, why)
        return

    def ember_jvp():
        converted, memo = _convert(sample)
        by_id = {
            id(memo[id(t)]): _bridge.to_ember(tg) for t, tg in zip(leaves, tangents, strict=True)
        }
        with ember_fwad.dual_level():

            def replace(v):
                if _bridge.is_ember_tensor(v) and id(v) in by_id:
                    return ember_fwad.make_dual(v.detach(), by_id[id(v)])
                return v

            inp = _substitute(converted[0], replace)
            args = _substitute(converted[1], replace)
            kwargs = _substitute(converted[2], replace)
            ember.manual_seed(0)
            out = wrapper(function, inp, *args, **kwargs)
            out = _bridge.to_ember_callable(sample.output_process_fn_grad)(out)
            outs = _differentiable(out, _bridge.is_ember_tensor)
            return [ember_fwad.unpack_dual(o).tangent for o in outs]

    e_tangents, error = _outcome(ember_jvp)
    if error is not None:
        result.fail("float64", index, f"{type(error).__name__}: {error}")
        return
    if len(e_tangents) != len(t_tangents):
        result.fail("float64", index, f"{len(e_tangents)} outputs, torch has {len(t_tangents)}")
        return
    _compare_grads(result, index, t_tangents, e_tangents)


# ----------------------------------------------------------------------------------------
# one op, all categories (cached: the pytest tests of one op share one run)

_GROUPS = {"samples": run_samples, "errors": run_errors, "grads": run_grads}
_GROUP_OF = {
    **{c: "samples" for c in SAMPLE_CATEGORIES},
    **{c: "errors" for c in ERROR_CATEGORIES},
    **{c: "grads" for c in GRAD_CATEGORIES},
}
_CACHE: dict = {}
TIMES: dict = {}
USERS_MIN_WORK = 1 << 16  # ember._kernels.jit.MIN_WORK's default


def result_for(key: str, category: str) -> CategoryResult:
    group = _GROUP_OF[category]
    cached = _CACHE.get((key, group))
    if cached is None:
        op = ops_by_key()[key]
        start = time.perf_counter()
        # as users run ember: tests/conftest.py sends even tiny tensors to the compiled
        # kernels, which would make pytest's results differ from the report's
        min_work, jit.MIN_WORK = jit.MIN_WORK, USERS_MIN_WORK
        try:
            cached = _GROUPS[group](op)
        except Exception as error:  # a harness crash on one op must not stop the others
            cached = {c: CategoryResult() for c, g in _GROUP_OF.items() if g == group}
            for r in cached.values():
                r.checked += 1
                r.fail("-", "-", f"harness: {type(error).__name__}: {error}")
        finally:
            jit.MIN_WORK = min_work
            _bridge.forget_rebound_wrappers()  # they hold the op's samples alive
        TIMES[(key, group)] = time.perf_counter() - start
        _CACHE[(key, group)] = cached
    return cached[category]
