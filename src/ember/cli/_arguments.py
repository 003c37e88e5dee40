"""How the ``ember`` command reads its arguments: one-line usage errors and checked values."""

from __future__ import annotations

import argparse
import math


class UsageError(Exception):
    """A mistake in how ``ember`` was called: one line on stderr, exit code 2, no traceback.

    ``command`` names who reports it (``ember demo``); the message says what was wrong and
    what to do instead.
    """

    def __init__(self, message: str, command: str | None = None):
        super().__init__(message)
        self.command = command


class Parser(argparse.ArgumentParser):
    """argparse with its errors raised as one-line ``UsageError`` s instead of usage + exit."""

    def error(self, message: str):
        raise UsageError(f"{message} (see `{self.prog} --help`)", command=self.prog)


def positive_int(text: str) -> int:
    """A whole number ≥ 1 (epochs, batch size)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (learning rate)."""
    value = _finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number ≥ 0 (tolerances)."""
    value = _finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def seed(text: str) -> int:
    """A random seed: a whole number in [-2**63, 2**64), what a 64-bit generator takes."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not -(2**63) <= value < 2**64:
        raise argparse.ArgumentTypeError(f"must be in [-2**63, 2**64), got {value}")
    return value


def folder(text: str) -> str:
    """A folder path, not empty (an empty one would silently mean the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty; give a folder, such as ember-demo")
    return text


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value
