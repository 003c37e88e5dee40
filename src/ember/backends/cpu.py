"""``ember.backends.cpu``: what the CPU offers ember's NumPy kernels."""

from __future__ import annotations

from .. import _backend


def get_cpu_capability() -> str:
    """The widest SIMD extension NumPy's kernels dispatch to here ("AVX512", "AVX2", "DEFAULT")."""
    features = _backend.cpu_features()
    if features.get("AVX512F") and features.get("AVX512BW"):
        return "AVX512"
    if features.get("AVX2"):
        return "AVX2"
    if features.get("ASIMD"):
        return "NEON"
    return "DEFAULT"
