"""Build facts, as ``torch.version``: ``__version__``, ``cuda``, ``git_version``, ``debug``.

``cuda`` is the CUDA runtime version CuPy reports (``"12.4"``), or None without a usable CuPy;
it is worked out on first access so that importing this module never loads CuPy.
"""

from __future__ import annotations

from .torch_version import TorchVersion as _TorchVersion

__version__ = _TorchVersion("0.1.0")  # the one source: ember.__version__ is this object

__all__ = ["__version__", "debug", "git_version", "hip", "rocm", "xpu"]  # and cuda, on access
git_version = "Unknown"  # ember is not built from a git checkout with its hash baked in
debug = False
hip = None
rocm = None
xpu = None


def _cuda_version() -> str | None:
    from . import _backend

    cupy = _backend._load_cupy()
    if cupy is None:
        return None
    try:
        version = int(cupy.cuda.runtime.runtimeGetVersion())
    except Exception:  # noqa: BLE001 - no driver or runtime: no CUDA, as torch's CPU builds
        return None
    return f"{version // 1000}.{version % 1000 // 10}"


def __getattr__(name: str):
    if name == "cuda":
        value = _cuda_version()
        globals()["cuda"] = value
        return value
    raise AttributeError(f"module 'ember.version' has no attribute '{name}'")
