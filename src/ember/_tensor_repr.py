"""Print tensors the way PyTorch does: ``tensor([1., 2.], requires_grad=True)``."""

from __future__ import annotations

import numpy as _np

from . import _dtype as dt

_EDGE_ITEMS = 3
_THRESHOLD = 1000


def _float_formatter(values):
    finite = values[_np.isfinite(values)]
    if finite.size == 0:
        return lambda v: _special(v) or f"{v:.4f}"
    absolute = _np.abs(finite)
    int_mode = bool(_np.all(finite == _np.ceil(finite)))
    nonzero = absolute[absolute != 0]  # zeros do not decide fixed vs scientific (as torch)
    big = float(nonzero.max()) if nonzero.size else 0.0
    small = float(nonzero.min()) if nonzero.size else 1.0
    if int_mode:
        if big / max(small, 1e-300) > 1000.0 or big > 1e8:
            return lambda v: _special(v) or f"{v:.4e}"
        return lambda v: _special(v) or f"{v:.0f}."
    if big / max(small, 1e-300) > 1000.0 or big > 1e8 or small < 1e-4:
        return lambda v: _special(v) or f"{v:.4e}"
    return lambda v: _special(v) or f"{v:.4f}"


def _special(v) -> str | None:
    if _np.isnan(v):
        return "nan"
    if _np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def _complex_formatter(data):
    """Real and imaginary parts get a formatter and a width each, as PyTorch prints them."""
    summarize = data.size > _THRESHOLD
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
    values = data.astype("float64").reshape(-1)
    if values.size > _THRESHOLD:
        values = _summary_values(data.astype("float64"))
    return _float_formatter(values)


def _summary_values(data):
    if data.ndim == 0:
        return data.reshape(-1)
    if data.shape[0] > 2 * _EDGE_ITEMS:
        parts = [data[:_EDGE_ITEMS], data[-_EDGE_ITEMS:]]
    else:
        parts = [data]
    return (
        _np.concatenate(
            [
                _summary_values(p[i]) if p.ndim > 1 else p.reshape(-1)
                for p in parts
                for i in range(len(p))
            ]
        )
        if data.ndim > 1
        else (_np.concatenate([p.reshape(-1) for p in parts]))
    )


def _render(data, fmt, width, indent, summarize, line_width=None):
    if data.ndim == 0:
        return fmt(data.item()).rjust(width)
    n = data.shape[0]
    if summarize and n > 2 * _EDGE_ITEMS:
        idx = list(range(_EDGE_ITEMS)) + [None] + list(range(n - _EDGE_ITEMS, n))
    else:
        idx = list(range(n))
    if data.ndim == 1:
        # PyTorch marks the elided middle of a row with " ..." (one space more than ", ")
        items = [" ..." if i is None else fmt(data[i].item()).rjust(width) for i in idx]
        per_line = max(1, (80 - indent) // ((line_width or width) + 2))
        lines = [", ".join(items[k : k + per_line]) for k in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    parts = [
        "..." if i is None else _render(data[i], fmt, width, indent + 1, summarize, line_width)
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
    data = t._data
    if type(data) is not _np.ndarray:
        data = data.get()
    prefix = "tensor("
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    d = t.dtype
    if data.size == 0:
        body = "[]"
        if data.ndim != 1:
            suffixes.insert(0, f"size={tuple(data.shape)}")
    else:
        show = data.astype("float32") if d is dt.bfloat16 else data
        summarize = data.size > _THRESHOLD
        if show.dtype.kind == "c":
            fmt, line_width = _complex_formatter(show)
            body = _render(show, fmt, 0, len(prefix), summarize, line_width)
        else:
            fmt = _formatter(show)
            sample = _summary_values(show) if summarize and show.ndim else show.reshape(-1)
            width = _width(sample, fmt)
            body = _render(show, fmt, width, len(prefix), summarize)
    default_float = dt.get_default_dtype()
    default_complex = dt.get_default_complex_dtype()
    # empty tensors show every dtype but the default float and int64 (as torch)
    shown_anyway = data.size == 0 and d is not default_float and d is not dt.int64
    if shown_anyway or not (
        d is default_float or d is default_complex or d is dt.int64 or d is dt.bool_
    ):
        suffixes.append(f"dtype={d!r}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._rg:
        suffixes.append("requires_grad=True")
    tail = "".join(", " + s for s in suffixes)
    return f"{prefix}{body}{tail})"
