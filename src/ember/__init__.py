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

from ._functional_aliases import *  # noqa: E402, F403  (functions through nn.functional)
from ._layout import (  # noqa: E402
    layout,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    strided,
)
from ._op_namespace import *  # noqa: E402, F403  (the Tensor/op layer's functions)
from ._op_namespace import Tensor  # noqa: E402
from ._random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state


def det(A: Tensor) -> Tensor:
    from . import linalg

    return linalg.det(A)


def inverse(A: Tensor) -> Tensor:
    from . import linalg

    return linalg.inv(A)


from . import _op_namespace, _out  # noqa: E402

# out= on the root's own functions that take it in PyTorch (the op layer's have theirs)
_out.install(globals(), set(_out.OUT_FUNCTIONS) - set(vars(_op_namespace)))

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

from . import _tensor_methods, random  # noqa: E402


class _CudaOnFirstUse:
    """``ember.cuda`` in ``ember.random.DEVICE_RANDOM`` until it loads (it then registers
    itself): ``fork_rng`` still saves the CUDA generators of a program that never named
    ``ember.cuda``."""

    def __getattr__(self, name: str):
        from . import cuda

        return getattr(cuda, name)


random.DEVICE_RANDOM.setdefault("cuda", _CudaOnFirstUse())


def _load_sparse() -> None:
    from . import sparse  # noqa: F401 - its import gives dense tensors their side of the API


def _load_stft() -> None:
    from .fft import _stft  # noqa: F401 - attaches Tensor.stft and Tensor.istft


# Tensor attributes of families that load on first use (each family attaches them at import)
_tensor_methods.attach_on_first_use(
    """to_dense to_sparse to_sparse_coo coalesce indices _indices values _values is_coalesced
    _nnz sparse_dim dense_dim to_sparse_csr to_sparse_csc to_sparse_bsr to_sparse_bsc
    is_sparse_csr""".split(),
    _load_sparse,
)
_tensor_methods.attach_on_first_use(["stft", "istft"], _load_stft)

# Debugging, data and file namespaces load on first use: `import ember` stays quick.
_LAZY = frozenset(
    {
        "_tensor_str",
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
    "__version__": "version",
}

# Namespaces and names `import ember` loaded eagerly until issue 32 (a plain
# `ember.tensor(...)` program needs none of them): they load on first use too, and
# `from ember import *` still gives them.
_MOVED_NAMESPACES = frozenset(
    "accelerator amp backends cuda fft linalg sparse torch_version version".split()
)
_MOVED_ATTRIBUTES = {
    "memory_scope": "_memory_scope",
    "autocast": "amp.autocast_mode",
    **dict.fromkeys(
        """autocast_decrement_nesting autocast_increment_nesting clear_autocast_cache
        get_autocast_cpu_dtype get_autocast_dtype get_autocast_gpu_dtype
        is_autocast_cache_enabled is_autocast_cpu_enabled is_autocast_enabled
        set_autocast_cache_enabled set_autocast_cpu_dtype set_autocast_cpu_enabled
        set_autocast_dtype set_autocast_enabled set_autocast_gpu_dtype""".split(),
        "amp.state",
    ),
    "stft": "fft._stft",
    "istft": "fft._stft",
    **dict.fromkeys(
        """sparse_coo_tensor sparse_compressed_tensor sparse_csr_tensor sparse_csc_tensor
        sparse_bsr_tensor sparse_bsc_tensor spmm smm hspmm""".split(),
        "sparse",
    ),
}
_LAZY |= _MOVED_NAMESPACES
_LAZY_ATTRIBUTES.update(_MOVED_ATTRIBUTES)


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
    if name in _op_namespace._FIRST_USE:
        value = getattr(_op_namespace, name)
        globals()[name] = value
        return value
    if name == "__all__":  # `from ember import *`: the public names, those that moved included
        public = {n for n in globals() if not n.startswith("_")}
        return sorted(public | _MOVED_NAMESPACES | set(_MOVED_ATTRIBUTES) | _FIRST_USE_OPS)
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


_FIRST_USE_OPS = frozenset(_op_namespace._FIRST_USE)


def __dir__():
    return sorted(set(globals()) | _LAZY | set(_LAZY_ATTRIBUTES) | _FIRST_USE_OPS)


def _load_first_use_names() -> None:
    """Load every name that waits for its first use (not the namespaces): for code that reads
    the namespaces' dicts rather than their attributes (``ember.fx``'s tracer patches them)."""
    for name in (*_MOVED_ATTRIBUTES, *_FIRST_USE_OPS):
        __getattr__(name)
    _load_sparse()
    _load_stft()
