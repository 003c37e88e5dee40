"""ember.nn: neural-network building blocks (the functional namespace so far)."""

from . import functional

__all__ = ["functional"]
