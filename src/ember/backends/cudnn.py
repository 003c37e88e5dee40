"""``ember.backends.cudnn``: cuDNN is used through CuPy where CuPy has it."""

from __future__ import annotations

from ._flags import set_flags

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    from .. import _backend

    if not _backend.cuda_available():
        return False
    try:
        import cupy.cuda.cudnn  # noqa: F401
    except ImportError:
        return False
    return True


def version() -> int | None:
    if not is_available():
        return None
    import cupy.cuda.cudnn as cudnn

    return int(cudnn.getVersion())


def is_acceptable(tensor) -> bool:
    return is_available() and tensor.device.type == "cuda"


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    import sys

    return set_flags(
        sys.modules[__name__],
        enabled=enabled,
        benchmark=benchmark,
        benchmark_limit=benchmark_limit,
        deterministic=deterministic,
        allow_tf32=allow_tf32,
    )
