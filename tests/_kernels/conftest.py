"""Every test here runs a compiled kernel (most compare it with the NumPy path): with the
kernels off (``EMBER_JIT=0``, or numba not installed) they skip, and the rest of the suite
covers the NumPy paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from ember._kernels import jit

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    if jit.enabled():
        return
    skip = pytest.mark.skip(reason="compiled kernels are off (EMBER_JIT=0 or no numba)")
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(skip)
