"""Print tensors the way PyTorch does: ``tensor([1., 2.], requires_grad=True)``, under the
options ``set_printoptions`` sets (precision, summarising threshold, edge items, line width,
scientific notation), which ``ember._tensor_str`` also offers under torch's names."""

from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as _np

from . import _backend
from . import _dtype as dt


@dataclasses.dataclass
class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set how tensors print, as ``torch.set_printoptions``: ``precision`` digits after the
    point (4), more than ``threshold`` elements (1000) are summarised to ``edgeitems`` (3) at
    each end of every dimension, rows wrap at ``linewidth`` (80) characters; ``profile``
    ("default", "short", "full") sets those four first; ``sci_mode`` True or False forces or
    forbids scientific notation, None (also when left out) lets the values decide.

    >>> set_printoptions(precision=2)
    >>> set_printoptions(profile="default")
    """
    for name, value in _PROFILES.get(profile, {}).items():
        setattr(PRINT_OPTS, name, value)
    for name, value in (
        ("precision", precision),
        ("threshold", threshold),
        ("edgeitems", edgeitems),
        ("linewidth", linewidth),
    ):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current options, as keywords ``set_printoptions`` takes back."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """``set_printoptions(**kwargs)`` for the ``with`` block only."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


def _float_formatter(values):
    precision = PRINT_OPTS.precision
    fixed, scientific = f"{{:.{precision}f}}", f"{{:.{precision}e}}"
    finite = values[_np.isfinite(values)]
    absolute = _np.abs(finite)
    nonzero = absolute[absolute != 0]  # zeros do not decide fixed vs scientific (as torch)
    if nonzero.size == 0:  # zeros, nan and inf only: torch's formatter stays in int mode
        return lambda v: _special(v) or f"{v:.0f}."
    int_mode = bool(_np.all(finite == _np.ceil(finite)))
    big, small = float(nonzero.max()), float(nonzero.min())
    sci_mode = PRINT_OPTS.sci_mode
    if sci_mode is None:
        sci_mode = big / small > 1000.0 or big > 1e8 or small < 1e-4
    if sci_mode:
        return lambda v: _special(v) or scientific.format(v)
    if int_mode:
        return lambda v: _special(v) or f"{v:.0f}."
    return lambda v: _special(v) or fixed.format(v)


def _special(v) -> str | None:
    if _np.isnan(v):
        return "nan"
    if _np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def _complex_formatter(data):
    """Real and imaginary parts get a formatter and a width each, as PyTorch prints them."""
    summarize = data.size > PRINT_OPTS.threshold
    parts = []
    for part in (data.real, data.imag):
        fmt = _formatter(part)
        sample = _summary_values(part) if summarize and part.ndim else part.reshape(-1)
        parts.append((fmt, _width(sample, fmt)))
    (real_fmt, real_width), (imag_fmt, imag_width) = parts

    def fmt(v):
        imag = imag_fmt(v.imag) + "j"
        sign = "" if imag[0] in "+-" else "+"
        return real_fmt(v.real).rjust(real_width) + sign + imag

    # rows wrap as if each element took both widths plus ", " and the "j"
    return fmt, real_width + imag_width + 1


def _formatter(data):
    kind = data.dtype.kind
    if kind == "b":
        return lambda v: "True" if v else "False"
    if kind in "iu":
        return lambda v: str(int(v))
    values = _summary_values(data) if data.size > PRINT_OPTS.threshold else data.reshape(-1)
    return _float_formatter(values.astype("float64"))


def _edge_indices(n: int):
    edge = PRINT_OPTS.edgeitems
    if n > 2 * edge:
        return list(range(edge)) + list(range(n - edge, n))
    return list(range(n))


def _edges(data):
    """The items a summarised print shows (torch's ``get_summarized_data``): along every
    dimension longer than 2 * edgeitems only the first and last edgeitems, read straight from
    ``data`` without touching the rest: a 5000 x 5000 tensor costs 36 reads, not a copy."""
    if data.ndim == 0 or all(n <= 2 * PRINT_OPTS.edgeitems for n in data.shape):
        return data
    index = _np.ix_(*(_edge_indices(n) for n in data.shape))
    if not isinstance(data, _np.ndarray):  # CuPy: index on the device, copy 36 items
        xp = _backend.array_module(data)
        index = tuple(xp.asarray(i) for i in index)
    return data[index]


def _summary_values(data):
    """The values that decide a summarised print's format, flattened."""
    return _edges(data).reshape(-1)


def _render(data, fmt, width, indent, summarize, line_width=None, shape=None):
    """``data`` printed; ``shape`` is the tensor's when ``data`` holds only its ``_edges``."""
    if data.ndim == 0:
        return fmt(data.item()).rjust(width)
    shape = data.shape if shape is None else shape
    n, edge = data.shape[0], PRINT_OPTS.edgeitems
    if summarize and shape[0] > 2 * edge:
        idx = list(range(edge)) + [None] + list(range(n - edge, n))
    else:
        idx = list(range(n))
    if data.ndim == 1:
        if idx == [None]:  # edgeitems=0
            return "[...]"
        # PyTorch marks the elided middle of a row with " ..." (one space more than ", ")
        items = [" ..." if i is None else fmt(data[i].item()).rjust(width) for i in idx]
        per_line = max(1, (PRINT_OPTS.linewidth - indent) // ((line_width or width) + 2))
        lines = [", ".join(items[k : k + per_line]) for k in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    parts = [
        "..."
        if i is None
        else _render(data[i], fmt, width, indent + 1, summarize, line_width, shape[1:])
        for i in idx
    ]
    sep = "," + "\n" * (data.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def _width(sample, fmt) -> int:
    """PyTorch pads to the widest nonzero finite value; nan, inf and zeros do not count."""
    if sample.dtype.kind == "f":
        sample = sample[_np.isfinite(sample) & (sample != 0)]
    elif sample.dtype.kind in "iu":
        sample = sample[sample != 0]
    return max((len(fmt(v.item())) for v in sample), default=1)


def tensor_repr(t) -> str:
    if t.device.type == "meta":
        return _meta_repr(t)
    data = t._data
    shape, size = data.shape, data.size
    summarize = size > PRINT_OPTS.threshold
    if summarize:
        data = _edges(data)  # before any copy: the rest is never read
    if type(data) is not _np.ndarray:
        data = data.get()
    prefix = "tensor("
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    d = t.dtype
    if size == 0:
        body = "[]"
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
    else:
        if not PRINT_OPTS.edgeitems:  # no values shown: the shape is
            suffixes.append(f"size={tuple(shape)}")
        # ``show`` holds every value the print reads: all of them, or the edges of each dim
        show = data.astype("float32") if d is dt.bfloat16 else data
        if show.dtype.kind == "c":
            fmt, line_width = _complex_formatter(show)
            body = _render(show, fmt, 0, len(prefix), summarize, line_width, shape)
        else:
            fmt = _formatter(show)
            width = _width(show.reshape(-1), fmt)
            body = _render(show, fmt, width, len(prefix), summarize, None, shape)
    default_float = dt.get_default_dtype()
    default_complex = dt.get_default_complex_dtype()
    # an empty tensor has no values to tell its dtype by: every dtype but the default float
    # is shown (as torch)
    shown_anyway = size == 0 and d is not default_float
    if shown_anyway or not (
        d is default_float or d is default_complex or d is dt.int64 or d is dt.bool_
    ):
        suffixes.append(f"dtype={d!r}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._rg:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, len(prefix))


def _meta_repr(t) -> str:
    """A meta tensor has no values: ``tensor(..., device='meta', size=(3, 4))``, as torch."""
    suffixes = ["device='meta'", f"size={tuple(t._data.shape)}"]
    if t.dtype is not dt.get_default_dtype():
        suffixes.append(f"dtype={t.dtype!r}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._rg:
        suffixes.append("requires_grad=True")
    return _add_suffixes("tensor(...", suffixes, len("tensor("))


def _add_suffixes(text: str, suffixes: list, indent: int, force_newline: bool = False) -> str:
    """torch's ``_add_suffixes``: a suffix that would pass the 80-column line starts a line
    (with ``force_newline``, the first one does anyway)."""
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1  # torch's count, one more than the columns
    for suffix in suffixes:
        if force_newline or last_line + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
            force_newline = False
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    parts.append(")")
    return "".join(parts)
