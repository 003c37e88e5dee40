"""Every ModuleInfo of PyTorch's ``module_db`` run on ember and on torch, compared.

For each ModuleInfo, dtype (float32, float64 and the others it lists that ember has) and mode
(train, and eval where the ModuleInfo says they differ), every configuration of its
``module_inputs_func``: the fresh state_dict's keys, shapes and dtypes; ember's module loaded
with torch's state; forward outputs and buffers after forward (both sides seeded alike); and in
float32 and float64 the gradients of inputs and parameters for one random cotangent. Half
precision agrees where ember is within tolerance of torch or no further than torch from the
float64 result (torch's rounding order is not a spec). Error inputs must raise
torch's exception type with a message matching torch's regex. Disagreements are listed with a
reason in ``module_known_failures.txt``; anything else that differs fails.
"""

from __future__ import annotations

import copy
import pathlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # torch.testing._internal imports it

from torch.testing._internal.common_modules import ModuleErrorEnum, module_db  # noqa: E402

import ember  # noqa: E402
from tests.conformance._module_support import (  # noqa: E402
    check_raises,
    compare_tensor,
    compare_values,
    judge,
    no_less_accurate,
    one_torch_thread,  # noqa: F401 - an autouse fixture for this module
    read_known_failures,
    recording_constructor_args,
    state_to_ember,
    tensors_in,
    to_ember,
)

KNOWN_FAILURES = read_known_failures(pathlib.Path(__file__).with_name("module_known_failures.txt"))

# float32 and float64 run every configuration; the other dtypes a ModuleInfo lists (float16,
# bfloat16, complex) about this many of its configurations, evenly spread: they repeat the
# float32 ones at another precision, and LinearCrossEntropyLoss alone has 857.
LOW_PRECISION_SAMPLE = 24
LOW_PRECISION = (torch.float16, torch.bfloat16)
GRADIENT_DTYPES = (torch.float32, torch.float64)


def _dtypes(module_info) -> list:
    dtypes = [torch.float32, torch.float64]
    for dtype in module_info.dtypes:
        if dtype not in dtypes and hasattr(ember, str(dtype).removeprefix("torch.")):
            dtypes.append(dtype)
    return dtypes


def _inputs(module_info, dtype, training, error_inputs=False):
    torch.manual_seed(0)
    make = module_info.module_error_inputs_func if error_inputs else module_info.module_inputs_func
    with recording_constructor_args():
        return list(
            make(
                module_info,
                device="cpu",
                dtype=dtype,
                requires_grad=dtype in GRADIENT_DTYPES,
                training=training,
            )
        )


def _state_layout(module, lazy: bool) -> dict:
    layout = {}
    for name, value in module.state_dict().items():
        uninitialized = lazy and "Uninitialized" in type(value).__name__
        dtype_name = None if uninitialized else str(value.dtype).split(".")[-1]
        layout[name] = None if uninitialized else (tuple(value.shape), dtype_name)
    return layout


def _construct(module_info, module_input, dtype, memo):
    args, kwargs = module_input.constructor_input.args, module_input.constructor_input.kwargs
    ember_args, ember_kwargs = to_ember((args, kwargs), memo)
    torch.manual_seed(1)
    with recording_constructor_args():
        torch_module = module_info.module_cls(*args, **kwargs).to(dtype)
    ember.manual_seed(1)
    ember_cls = getattr(ember.nn, module_info.module_cls.__name__)
    ember_module = ember_cls(*ember_args, **ember_kwargs).to(to_ember(dtype))
    return torch_module, ember_module


def _forward_inputs(module_input, memo):
    forward = module_input.forward_input
    args, kwargs = (forward.args, forward.kwargs) if forward is not None else ((), {})
    return args, kwargs, to_ember((args, kwargs), memo)


def _stage(problems: list, stage: str, action):
    """Run one ember step; an exception becomes a problem (and None)."""
    try:
        return action()
    except Exception as error:  # noqa: BLE001 - every ember failure is a disagreement
        problems.append(f"{stage}: ember raised {type(error).__name__}: {error}")
        return None


def run_configuration(module_info, module_input, dtype, training) -> list:
    """What differs between ember and torch on one configuration (empty when they agree)."""
    problems: list = []
    memo: dict = {}
    try:
        built = _construct(module_info, module_input, dtype, memo)
    except Exception as error:  # noqa: BLE001
        return [f"construction: {type(error).__name__}: {error}"]
    torch_module, ember_module = built
    lazy = module_info.is_lazy
    torch_layout = _state_layout(torch_module, lazy)
    ember_layout = _stage(problems, "state_dict", lambda: _state_layout(ember_module, lazy))
    if ember_layout is not None and ember_layout != torch_layout:
        problems.append(f"fresh state_dict: ember {ember_layout} != torch {torch_layout}")
    args, kwargs, (ember_args, ember_kwargs) = _forward_inputs(module_input, memo)
    if lazy:
        with torch.no_grad():
            torch_module(*args, **kwargs)
        with ember.no_grad():
            _stage(problems, "lazy forward", lambda: ember_module(*ember_args, **ember_kwargs))
        ember_layout = _stage(problems, "state_dict", lambda: _state_layout(ember_module, lazy))
        torch_layout = _state_layout(torch_module, lazy)
        if ember_layout is not None and ember_layout != torch_layout:
            problems.append(f"state_dict after forward: ember {ember_layout} != {torch_layout}")
    if problems:
        return problems
    state = state_to_ember(torch_module.state_dict())
    if _stage(problems, "load_state_dict", lambda: ember_module.load_state_dict(state)) is None:
        return problems
    torch_module.train(training)
    ember_module.train(training)

    torch.manual_seed(2)
    try:
        torch_output = torch_module(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - then ember must refuse the same way
        return check_raises(lambda: ember_module(*ember_args, **ember_kwargs), type(error), "")
    ember.manual_seed(2)
    ember_output = _stage(problems, "forward", lambda: ember_module(*ember_args, **ember_kwargs))
    if problems:
        return problems
    output_problems = compare_values(ember_output, torch_output, "output")
    if output_problems and dtype in LOW_PRECISION:
        exact = _float64_output(torch_module, args, kwargs)
        output_problems = no_less_accurate(ember_output, torch_output, exact, "output")
    problems += output_problems
    ember_buffers = dict(ember_module.named_buffers())
    for name, buffer in torch_module.named_buffers():
        if name not in ember_buffers:
            problems.append(f"buffer {name}: missing in ember")
        elif buffer is not None:
            problems += compare_tensor(ember_buffers[name], buffer, f"buffer {name}")
    if dtype in GRADIENT_DTYPES and not problems:
        problems += _compare_gradients(
            torch_module, ember_module, (args, kwargs), (ember_args, ember_kwargs),
            torch_output, ember_output,
        )  # fmt: skip
    return problems


def _float64_output(torch_module, args, kwargs):
    """torch's output with the module, inputs and buffers in float64: the exact result that
    half-precision outputs are judged against."""
    upcast = copy.deepcopy(torch_module).double()

    def to_double(value):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value.detach().double()
        if isinstance(value, (list, tuple)):
            return type(value)(to_double(item) for item in value)
        if isinstance(value, dict):
            return {key: to_double(item) for key, item in value.items()}
        return value

    torch.manual_seed(2)
    with torch.no_grad():
        return upcast(*to_double(args), **to_double(kwargs))


def _compare_gradients(torch_module, ember_module, torch_in, ember_in, torch_out, ember_out):
    problems = []
    ember_params = dict(ember_module.named_parameters())
    torch_wrt, ember_wrt, names = [], [], []
    for index, (t, e) in enumerate(zip(tensors_in(torch_in), tensors_in(ember_in))):
        if t.requires_grad:
            torch_wrt.append(t)
            ember_wrt.append(e)
            names.append(f"input {index}")
    for name, param in torch_module.named_parameters():
        if param.requires_grad and name in ember_params:
            torch_wrt.append(param)
            ember_wrt.append(ember_params[name])
            names.append(f"parameter {name}")
    torch_outs, ember_outs = [], []
    for index, (t, e) in enumerate(zip(tensors_in(torch_out), tensors_in(ember_out))):
        if t.requires_grad:
            if not e.requires_grad:
                problems.append(f"output tensor {index} does not require grad in ember")
                continue
            torch_outs.append(t)
            ember_outs.append(e)
    if problems or not torch_outs or not torch_wrt:
        return problems
    generator = torch.Generator().manual_seed(3)
    cotangents = [torch.randn(t.shape, dtype=t.dtype, generator=generator) for t in torch_outs]
    torch_grads = torch.autograd.grad(torch_outs, torch_wrt, cotangents, allow_unused=True)
    ember_grads = _stage(
        problems,
        "backward",
        lambda: ember.autograd.grad(ember_outs, ember_wrt, to_ember(cotangents), allow_unused=True),
    )
    if ember_grads is None:
        return problems
    for name, got, want in zip(names, ember_grads, torch_grads):
        if want is None:
            if got is not None and bool((got != 0).any()):
                problems.append(f"grad of {name}: torch None, ember nonzero")
        elif got is None:
            problems.append(f"grad of {name}: ember None")
        else:
            # float32 gradients sum longer chains of rounded terms (CTC's alphas and betas,
            # attention's softmax): absolute 1e-4 there, the forward's tolerances otherwise
            atol = 1e-4 if want.dtype is torch.float32 else None
            problems += compare_tensor(got, want, f"grad of {name}", atol=atol)
    return problems


def run_error_input(module_info, error_input) -> list:
    module_input = error_input.module_error_input
    args, kwargs = module_input.constructor_input.args, module_input.constructor_input.kwargs
    memo: dict = {}
    ember_args, ember_kwargs = to_ember((args, kwargs), memo)
    ember_cls = getattr(ember.nn, module_info.module_cls.__name__)
    if error_input.error_on == ModuleErrorEnum.CONSTRUCTION_ERROR:
        action = lambda: ember_cls(*ember_args, **ember_kwargs)  # noqa: E731
    else:
        problems: list = []
        module = _stage(problems, "construction", lambda: ember_cls(*ember_args, **ember_kwargs))
        if module is None:
            return problems
        _, _, (forward_args, forward_kwargs) = _forward_inputs(module_input, memo)
        action = lambda: module(*forward_args, **forward_kwargs)  # noqa: E731
    return check_raises(action, error_input.error_type, error_input.error_regex)


def _configurations(module_info):
    """(configuration id, thunk giving its problems) for every configuration run."""
    for dtype in _dtypes(module_info):
        dtype_name = str(dtype).removeprefix("torch.")
        modes = (True, False) if module_info.train_and_eval_differ else (True,)
        for training in modes:
            module_inputs = _inputs(module_info, dtype, training)
            stride = 1
            if dtype not in (torch.float32, torch.float64):
                stride = max(1, len(module_inputs) // LOW_PRECISION_SAMPLE)
            for index in range(0, len(module_inputs), stride):
                module_input = module_inputs[index]
                mode = "train" if training else "eval"
                config = f"{dtype_name}-{mode}-{index}-{module_input.desc or 'default'}"
                yield config, (lambda m=module_input, d=dtype, t=training: (m, d, t))
    if module_info.module_error_inputs_func is not None:
        for index, error_input in enumerate(_inputs(module_info, torch.float32, True, True)):
            desc = error_input.module_error_input.desc or error_input.error_regex[:40]
            yield f"error-{index}-{desc}", error_input


@pytest.mark.parametrize("module_info", module_db, ids=lambda info: info.formatted_name)
def test_module_info_agrees_with_torch(module_info):
    results = {}
    for config, payload in _configurations(module_info):
        if callable(payload):
            module_input, dtype, training = payload()
            results[config] = run_configuration(module_info, module_input, dtype, training)
        else:
            results[config] = run_error_input(module_info, payload)
    lines = judge(module_info.name, results, KNOWN_FAILURES)
    assert not lines, f"{module_info.name}: {len(lines)} of {len(results)} configurations\n" + (
        "\n".join(lines[:40])
    )
