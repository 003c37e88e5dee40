"""Exception classes that PyTorch exposes at top level."""

from __future__ import annotations


class OutOfMemoryError(RuntimeError):
    """Raised when a device allocation fails (``torch.OutOfMemoryError``)."""


OutOfMemoryError.__module__ = "ember"


class AcceleratorError(RuntimeError):
    """Raised when an accelerator (GPU) reports an error (``torch.AcceleratorError``)."""


AcceleratorError.__module__ = "ember"
