"""Process-wide switches PyTorch programs set: determinism, matmul precision, inter-op threads,
warn-always, denormal flushing.

ember's kernels are deterministic (NumPy and OpenBLAS reduce in a fixed order for a given
thread count), so ``use_deterministic_algorithms`` changes nothing but is remembered and
reported back, as programs check it.
"""

from __future__ import annotations

_state = {
    "deterministic": False,
    "warn_only": False,
    "float32_matmul_precision": "highest",
    "interop_threads": None,
    "warn_always": False,
}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    _state["deterministic"] = bool(mode)
    _state["warn_only"] = bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    modes = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in modes:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`, but "
                f"got {debug_mode}"
            )
        debug_mode = modes[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}"
        )
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


def set_float32_matmul_precision(precision: str) -> None:
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision: {precision}; expected one of highest, high, medium")
    _state["float32_matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """ember's CPU GEMMs are always full float32 ("highest")."""
    return _state["float32_matmul_precision"]


def get_num_interop_threads() -> int:
    from ._backend import get_num_threads

    value = _state["interop_threads"]
    return value if value is not None else get_num_threads()


def set_num_interop_threads(num: int) -> None:
    if not isinstance(num, int) or num <= 0:
        raise RuntimeError(f"Expected positive number of threads, got {num}")
    _state["interop_threads"] = num


def init_num_threads() -> None:
    """Accepted for compatibility: ember's thread pools start on first use."""


def set_warn_always(b: bool) -> None:
    _state["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    return _state["warn_always"]


def set_flush_denormal(mode: bool) -> bool:
    """NumPy cannot switch the CPU's denormal mode: returns False, as PyTorch does on CPUs
    without the instruction."""
    return False


__all__ = [
    "are_deterministic_algorithms_enabled",
    "get_deterministic_debug_mode",
    "get_float32_matmul_precision",
    "get_num_interop_threads",
    "init_num_threads",
    "is_deterministic_algorithms_warn_only_enabled",
    "is_warn_always_enabled",
    "set_deterministic_debug_mode",
    "set_float32_matmul_precision",
    "set_flush_denormal",
    "set_num_interop_threads",
    "set_warn_always",
    "use_deterministic_algorithms",
]
