"""Every OptimizerInfo of PyTorch's ``optim_db`` run on ember and on torch, compared.

For each OptimizerInfo, every configuration of its ``optim_inputs_func`` on the CPU (the
CUDA-only ones torch itself leaves out there), alone and with each implementation flag it
supports on the CPU (``foreach``, ``differentiable``, ``fused``), and with each of its LR
scheduler lists: a few steps on the same small model on both sides (LBFGS through a closure;
sparse gradients where the optimizer takes them), comparing the parameters, the optimizer's
``state_dict`` and the schedulers' learning rates after every step. Its error inputs must raise
(or warn) torch's exception type with a message matching torch's regex. Disagreements are
listed with a reason in ``module_known_failures.txt``; anything else that differs fails.
"""

from __future__ import annotations

import copy
import math
import pathlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # torch.testing._internal imports it

from torch.testing._internal.common_optimizers import (  # noqa: E402
    OptimizerErrorEnum,
    optim_db,
)

import ember  # noqa: E402
from tests.conformance._module_support import (  # noqa: E402
    check_raises,
    compare_values,
    judge,
    one_torch_thread,  # noqa: F401 - an autouse fixture for this module
    read_known_failures,
    recording_constructor_args,
    to_ember,
)

KNOWN_FAILURES = read_known_failures(pathlib.Path(__file__).with_name("module_known_failures.txt"))
STEPS = 4


class Problem(Exception):
    """An ember failure inside a run: ends the run with this message."""


def _lib(side):
    return torch if side == "torch" else ember


def _make_params(optim_info, dtype, sparse: bool):
    """torch's parameters for a run; ember's are converted from them."""
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(5, 4, dtype=dtype, generator=generator)
    if dtype.is_complex:  # one complex matrix: the loss reads its real and imaginary parts
        return [torch.nn.Parameter(weight)]
    if sparse or optim_info.only_supports_sparse_grads:
        return [torch.nn.Parameter(weight)]
    if optim_info.optim_cls.__name__ == "Muon":  # Muon takes matrices only
        return [torch.nn.Parameter(weight)]
    bias = torch.randn(5, dtype=dtype, generator=generator)
    return [torch.nn.Parameter(weight), torch.nn.Parameter(bias)]


def _make_data(dtype):
    generator = torch.Generator().manual_seed(1)
    return torch.randn(3, 4, dtype=dtype, generator=generator), torch.tensor([0, 2, 4, 2])


def _loss(lib, params, data, sparse: bool):
    inputs, indices = data
    if params[0].is_complex():
        parts = lib.view_as_real(params[0])
        return (parts.tanh() ** 2).sum() + (parts[..., 0] * parts[..., 1]).sum() * 0.1
    if sparse:
        rows = lib.nn.functional.embedding(indices, params[0], sparse=True)
        return (rows.tanh() ** 2).sum()
    hidden = inputs @ params[0].T
    if len(params) > 1:
        hidden = hidden + params[1]
    return (hidden.tanh() ** 2).sum() + (params[0].sin() * 0.1).sum()


def _schedulers(lambdas, torch_optimizer, ember_optimizer):
    torch_schedulers, ember_schedulers = [], []
    for make in lambdas:
        with recording_constructor_args():
            scheduler = make(torch_optimizer)
        torch_schedulers.append(scheduler)
        args, kwargs = scheduler.__dict__["_conformance_constructor_args"]
        memo = {id(torch_optimizer): (ember_optimizer, torch_optimizer)}
        ember_args, ember_kwargs = to_ember((args, kwargs), memo)
        ember_cls = getattr(ember.optim.lr_scheduler, type(scheduler).__name__)
        ember_schedulers.append(ember_cls(*ember_args, **ember_kwargs))
    return torch_schedulers, ember_schedulers


def _guard(stage, action):
    try:
        return action()
    except Problem:
        raise
    except Exception as error:  # noqa: BLE001 - an ember failure is a disagreement
        raise Problem(f"{stage}: ember raised {type(error).__name__}: {error}") from error


def run_configuration(
    optim_info, kwargs, dtype, scheduler_lambdas=(), sparse=False, groups=False, resume=False
) -> list:
    """What differs between ember and torch over a few steps of one configuration (``groups``:
    each parameter in a group of its own, the second with its own lr and weight decay;
    ``resume``: after the second step both sides continue with new optimizers loaded with
    torch's state_dict, ember's parameters set to torch's, as from a checkpoint)."""
    sparse = sparse or optim_info.only_supports_sparse_grads
    torch_params = _make_params(optim_info, dtype, sparse)
    torch_arg = torch_params
    if groups:
        torch_arg = [{"params": [torch_params[0]]}]
        torch_arg += [{"params": [p], "lr": 0.005, "weight_decay": 0.05} for p in torch_params[1:]]
    memo: dict = {}
    ember_params = to_ember(torch_params, memo)
    ember_arg = to_ember(torch_arg, memo)
    ember_kwargs = to_ember(kwargs, memo)
    data = _make_data(dtype)
    ember_data = to_ember(data, memo)
    optim_name = optim_info.optim_cls.__name__
    try:
        torch_optimizer = optim_info.optim_cls(torch_arg, **kwargs)
    except Exception as error:  # noqa: BLE001 - then ember must refuse alike
        return check_raises(
            lambda: getattr(ember.optim, optim_name)(ember_arg, **ember_kwargs), type(error), ""
        )
    try:
        ember_optimizer = _guard(
            "construction", lambda: getattr(ember.optim, optim_name)(ember_arg, **ember_kwargs)
        )
        torch_schedulers, ember_schedulers = _guard(
            "scheduler", lambda: _schedulers(scheduler_lambdas, torch_optimizer, ember_optimizer)
        )
        problems = []
        steps = 1 if optim_name == "LBFGS" and dtype is torch.float32 else STEPS
        for step in range(steps):
            try:
                torch_loss = _step("torch", torch_optimizer, torch_params, data, sparse)
            except Exception as error:  # noqa: BLE001 - then ember must refuse alike
                return check_raises(
                    lambda: _step("ember", ember_optimizer, ember_params, ember_data, sparse),
                    type(error),
                    "",
                )
            ember_loss = _guard(
                f"step {step}",
                lambda: _step("ember", ember_optimizer, ember_params, ember_data, sparse),
            )
            for torch_scheduler, ember_scheduler in zip(torch_schedulers, ember_schedulers):
                _step_scheduler(torch_scheduler, float(torch_loss))
                _guard(
                    f"scheduler step {step}",
                    lambda s=ember_scheduler: _step_scheduler(s, float(ember_loss)),
                )
            if resume and step == 1:
                state = torch_optimizer.state_dict()
                torch_optimizer = optim_info.optim_cls(torch_arg, **kwargs)
                torch_optimizer.load_state_dict(copy.deepcopy(state))
                ember_optimizer = _guard(
                    "resume", lambda: _resumed(optim_name, ember_arg, ember_kwargs, state)
                )
                for ember_param, torch_param in zip(ember_params, torch_params):
                    with ember.no_grad():
                        ember_param.copy_(to_ember(torch_param.detach()))
            param_tol, state_tol = _tolerances(optim_name, dtype)
            problems += compare_values(
                ember_params, torch_params, f"step {step} params", *param_tol
            )
            problems += compare_values(
                _guard("state_dict", ember_optimizer.state_dict),
                torch_optimizer.state_dict(),
                f"step {step} state_dict",
                *state_tol,
            )
            for index, (t, e) in enumerate(zip(torch_schedulers, ember_schedulers)):
                problems += compare_values(
                    _guard("get_last_lr", e.get_last_lr),
                    t.get_last_lr(),
                    f"step {step} scheduler {index} lr",
                )
            if problems:
                return problems
    except Problem as problem:
        return [str(problem)]
    return []


def _resumed(optim_name, ember_arg, ember_kwargs, torch_state):
    """A new ember optimizer loaded with torch's state_dict (torch's side reloads it too: the
    load casts state to the parameters' dtype)."""
    optimizer = getattr(ember.optim, optim_name)(ember_arg, **ember_kwargs)
    optimizer.load_state_dict(to_ember(torch_state))
    return optimizer


def _tolerances(optim_name: str, dtype) -> tuple:
    """(rtol, atol) for the parameters and for the state; (None, None): the dtype's default.

    LBFGS keeps differences of successive gradients (its curvature pairs) and divides by their
    products, which amplifies the last-bit differences of two libraries' reductions: in float64
    a little, in float32 to the third digit of its state after 20 inner iterations. So float32
    LBFGS compares its state by keys, types, dtypes and shapes, and its parameters to 1e-3
    after one step (its 20 iterations); later steps start from points apart by that much."""
    if optim_name != "LBFGS":
        return (None, None), (None, None)
    if dtype in (torch.float64, torch.complex128):
        return (1e-6, 1e-7), (1e-6, 1e-7)
    return (1e-3, 1e-4), (0.0, math.inf)


def _step(side, optimizer, params, data, sparse):
    lib = _lib(side)

    def closure():
        optimizer.zero_grad()
        loss = _loss(lib, params, data, sparse)
        loss.backward()
        return loss

    if isinstance(optimizer, (torch.optim.LBFGS, ember.optim.LBFGS)):
        return optimizer.step(closure)
    loss = closure()
    optimizer.step()
    return loss


def _step_scheduler(scheduler, loss):
    if "ReduceLROnPlateau" in type(scheduler).__name__:
        scheduler.step(loss)
    else:
        scheduler.step()


def _impl_variants(optim_info):
    """The implementation flags torch runs on the CPU for this optimizer."""
    variants = []
    if "foreach" in optim_info.supported_impls:
        variants += [{"foreach": False}, {"foreach": True}]
    if "differentiable" in optim_info.supported_impls:
        variants.append({"differentiable": True})
    if "fused" in optim_info.supported_impls and "cpu" in optim_info.supports_fused_on:
        variants.append({"fused": True})
    return variants


def _configurations(optim_info):
    """(configuration id, thunk giving its problems)."""
    for dtype in (torch.float64, torch.float32):
        dtype_name = str(dtype).removeprefix("torch.")
        for index, optim_input in enumerate(optim_info.optim_inputs_func("cpu", dtype)):
            name = f"{dtype_name}-{index}-{optim_input.desc}"
            kwargs = optim_input.kwargs
            yield name, lambda k=kwargs, d=dtype: run_configuration(optim_info, k, d)
            if dtype is not torch.float64:
                continue
            for variant in _impl_variants(optim_info):
                flag = ",".join(f"{key}={value}" for key, value in variant.items())
                merged = {**kwargs, **variant}
                yield (
                    f"{name}-{flag}",
                    lambda k=merged, d=dtype: run_configuration(optim_info, k, d),
                )
            yield (
                f"{name}-resumed-from-torch-state",
                lambda k=kwargs, d=dtype: run_configuration(optim_info, k, d, resume=True),
            )
            for s_index, lambdas in enumerate(optim_info.scheduler_inputs):
                yield (
                    f"{name}-schedulers{s_index}",
                    lambda k=kwargs, d=dtype, s=lambdas: run_configuration(optim_info, k, d, s),
                )
    if optim_info.supports_param_groups and optim_info.optim_cls.__name__ != "Muon":
        yield (
            "float64-0-param-groups",
            lambda: run_configuration(optim_info, {}, torch.float64, groups=True),
        )
    if optim_info.supports_complex:
        for index, optim_input in enumerate(optim_info.optim_inputs_func("cpu", torch.complex128)):
            yield (
                f"complex128-{index}-{optim_input.desc}",
                lambda k=optim_input.kwargs: run_configuration(optim_info, k, torch.complex128),
            )
    if optim_info.supports_sparse or optim_info.only_supports_sparse_grads:
        kwargs, lambdas = optim_info.metadata_for_sparse
        yield (
            "float64-sparse-grads",
            lambda: run_configuration(optim_info, kwargs, torch.float64, lambdas, sparse=True),
        )
    error_inputs = optim_info.optim_error_inputs_func("cpu", torch.float32)
    for index, error_input in enumerate(error_inputs):
        desc = error_input.optimizer_error_input.desc
        yield f"error-{index}-{desc}", lambda e=error_input: run_error_input(optim_info, e)


def run_error_input(optim_info, error_input) -> list:
    optim_input = error_input.optimizer_error_input
    params = optim_input.params
    if params is None:
        params = _make_params(optim_info, torch.float32, sparse=False)
    memo: dict = {}
    ember_params = to_ember(params, memo)
    _copy_grads(params, ember_params, memo)
    ember_kwargs = to_ember(optim_input.kwargs, memo)
    ember_cls = getattr(ember.optim, optim_info.optim_cls.__name__)
    if error_input.error_on == OptimizerErrorEnum.CONSTRUCTION_ERROR:
        action = lambda: ember_cls(ember_params, **ember_kwargs)  # noqa: E731
    else:
        try:
            optimizer = ember_cls(ember_params, **ember_kwargs)
        except Exception as error:  # noqa: BLE001
            return [f"construction: ember raised {type(error).__name__}: {error}"]
        action = optimizer.step
    return check_raises(action, error_input.error_type, error_input.error_regex)


def _copy_grads(params, ember_params, memo):
    """Gradients the error inputs set on torch's tensors, set on ember's too."""
    torch_tensors = [p for p in _flat(params) if isinstance(p, torch.Tensor)]
    for tensor in torch_tensors:
        if tensor.grad is not None:
            to_ember(tensor, memo).grad = to_ember(tensor.grad, memo)


def _flat(params):
    if isinstance(params, torch.Tensor):
        return [params]
    if isinstance(params, dict):
        return _flat(params.get("params", []))
    if isinstance(params, (list, tuple)):
        return [t for item in params for t in _flat(item)]
    return []


@pytest.mark.parametrize("optim_info", optim_db, ids=lambda info: info.name)
def test_optimizer_info_agrees_with_torch(optim_info):
    results = {config: thunk() for config, thunk in _configurations(optim_info)}
    lines = judge(optim_info.name, results, KNOWN_FAILURES)
    assert not lines, f"{optim_info.name}: {len(lines)} of {len(results)} configurations\n" + (
        "\n".join(lines[:40])
    )
