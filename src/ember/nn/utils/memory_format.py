"""Conv weight memory formats: ember keeps every tensor row-major, so these change nothing."""

from __future__ import annotations

from ..modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def convert_conv2d_weight_memory_format(module: Module, memory_format) -> Module:
    """Return ``module``: ember has one memory layout, so values and results are unchanged."""
    return module


def convert_conv3d_weight_memory_format(module: Module, memory_format) -> Module:
    """Return ``module``: ember has one memory layout, so values and results are unchanged."""
    return module
