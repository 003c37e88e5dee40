"""ember: tensors with reverse-mode automatic differentiation and the PyTorch 2.x API.

Example::
    >>> import ember as torch
    >>> x = torch.tensor([2.0], requires_grad=True)
    >>> (x ** 2).backward()
    >>> x.grad
    tensor([4.])
"""

import builtins as _builtins
import warnings as _warnings

# NumPy warns on log(0), 0/0 ... where PyTorch silently returns inf/nan: keep PyTorch's manners
# for warnings raised inside ember's kernels only.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember\.")

from . import accelerator, backends, cuda, linalg, sparse  # noqa: E402
from ._functional_aliases import *  # noqa: E402, F403  (functions through nn.functional)
from ._memory_scope import memory_scope  # noqa: E402
from ._op_namespace import *  # noqa: E402, F403  (the Tensor/op layer's functions)
from ._op_namespace import Tensor  # noqa: E402
from ._random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .amp.autocast_mode import autocast
from .amp.state import (
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    get_autocast_gpu_dtype,
    is_autocast_cache_enabled,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
    set_autocast_gpu_dtype,
)
from .fft._stft import istft, stft


def det(A: Tensor) -> Tensor:
    return linalg.det(A)


def inverse(A: Tensor) -> Tensor:
    return linalg.inv(A)


from . import _op_namespace, _out  # noqa: E402
from .version import __version__  # noqa: E402

# out= on the root's own functions that take it in PyTorch (the op layer's have theirs)
_out.install(globals(), set(_out.OUT_FUNCTIONS) - set(vars(_op_namespace)))

from .sparse import hspmm, layout, smm, sparse_coo, sparse_coo_tensor, spmm, strided  # noqa: E402

sparse.install(globals())  # sparse methods on Tensor, layouts; runs once, never per op

from ._einops import hook as _einops_hook  # noqa: E402

_einops_hook.install()  # einops finds ember's backend and layers when a program imports it

from . import autograd  # noqa: E402
from .autograd import function as _autograd_function  # noqa: E402
from .autograd import functional as _autograd_functional  # noqa: E402
from .autograd import gradcheck as _gradcheck  # noqa: E402

# torch.autograd's tools built on Tensor, hung on the autograd package from above it
autograd.Function = _autograd_function.Function
autograd.FunctionCtx = _autograd_function.FunctionCtx
autograd.once_differentiable = _autograd_function.once_differentiable
autograd.gradcheck, autograd.gradgradcheck = _gradcheck.gradcheck, _gradcheck.gradgradcheck
autograd.register_lazy_attribute("profiler", "ember.profiler")

# Debugging, data and file namespaces load on first use: `import ember` stays quick.
_LAZY = frozenset(
    {
        "amp",
        "cpu",
        "datasets",
        "distributed",
        "distributions",
        "fft",
        "func",
        "functional",
        "fx",
        "futures",
        "jit",
        "masked",
        "multiprocessing",
        "nested",
        "nn",
        "onnx",
        "optim",
        "profiler",
        "quasirandom",
        "random",
        "serialization",
        "signal",
        "types",
        "special",
        "testing",
        "utils",
        "version",
        "viz",
    }
)
_LAZY_ATTRIBUTES = {
    "vmap": "func",
    "save": "serialization",
    "load": "serialization",
    "compile": "_compile",
    "GradScaler": "amp",
    "jagged": "nested",
    "Future": "futures",
    "binomial": "_random_ops",
    "_dirichlet_grad": "_random_ops",
    "_sample_dirichlet": "_random_ops",
    "_standard_gamma": "_random_ops",
    "_standard_gamma_grad": "_random_ops",
    "native_batch_norm": "ops.normalization",
    "native_group_norm": "ops.normalization",
    "native_layer_norm": "ops.normalization",
    "gru_cell": "nn.modules.rnn_cells",
    "lstm_cell": "nn.modules.rnn_cells",
    "rnn_relu_cell": "nn.modules.rnn_cells",
    "rnn_tanh_cell": "nn.modules.rnn_cells",
}


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    if name in _LAZY_ATTRIBUTES:
        value = getattr(importlib.import_module(f".{_LAZY_ATTRIBUTES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | _LAZY | set(_LAZY_ATTRIBUTES))
