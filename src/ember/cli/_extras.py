"""The optional extras the ``ember`` command asks for, each named once.

The names are those of ``[project.optional-dependencies]`` in pyproject.toml; a message that
asks for one says ``pip install 'ember[NAME]'`` through ``install_hint``.
"""

from __future__ import annotations

ONNX = "onnx"  # onnx and onnxruntime: model.onnx, reading .onnx files
DISTRIBUTED = "distributed"  # mpi4py and mpich (its mpiexec): ember demo --nproc N


def install_hint(extra: str) -> str:
    """``pip install 'ember[onnx]'``: the command that installs ``extra``."""
    return f"pip install 'ember[{extra}]'"
