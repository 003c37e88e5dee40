"""Print sparse tensors as PyTorch does:

tensor(indices=tensor([[0, 1],
                       [2, 0]]),
       values=tensor([3., 4.]),
       size=(2, 3), nnz=2, layout=ember.sparse_coo)
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .. import _tensor_repr as dense_repr


def _body(data, indent: int) -> str:
    """An array's bracketed numbers, continuation lines indented by ``indent`` (torch's
    ``_tensor_str``); empty arrays add their size, as PyTorch does inside a sparse repr."""
    if type(data) is not np.ndarray:
        data = data.get()
    if data.size == 0:
        return f"[], size={tuple(data.shape)}"
    show = data.astype("float32") if dt.FROM_NUMPY[data.dtype] is dt.bfloat16 else data
    summarize = data.size > dense_repr.PRINT_OPTS.threshold
    if show.dtype.kind == "c":
        fmt, line_width = dense_repr._complex_formatter(show)
        return dense_repr._render(show, fmt, 0, indent, summarize, line_width)
    fmt = dense_repr._formatter(show)
    sample = dense_repr._summary_values(show) if summarize and show.ndim else show.reshape(-1)
    width = dense_repr._width(sample, fmt)
    return dense_repr._render(show, fmt, width, indent, summarize)


def _suffixes(t, shape, nnz: int) -> list:
    """The ``device=``, ``size=``, ``nnz=``, ``dtype=``, ``layout=`` and grad terms after a
    sparse tensor's arrays; ``dtype=`` is left out for the default float and complex dtypes,
    int64 and bool, as torch prints them for every sparse layout."""
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    suffixes.append(f"size={tuple(shape)}")
    suffixes.append(f"nnz={nnz}")
    d = t.dtype
    implied = d is dt.get_default_dtype() or d is dt.get_default_complex_dtype() or d is dt.int64
    if not (implied or d is dt.bool_):
        suffixes.append(f"dtype={d!r}")
    suffixes.append(f"layout={t.layout!r}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._rg:
        suffixes.append("requires_grad=True")
    return suffixes


def sparse_repr(t) -> str:
    storage = t._data
    prefix = "tensor("
    indent = len(prefix)
    indices_prefix, values_prefix = "indices=tensor(", "values=tensor("
    text = (
        prefix
        + indices_prefix
        + _body(storage.indices, indent + len(indices_prefix))
        + "),\n"
        + " " * indent
        + values_prefix
        + _body(storage.values, indent + len(values_prefix))
        + ")"
    )
    suffixes = _suffixes(t, storage.shape, storage.nnz)
    # the first suffix of a sparse tensor starts a line, the others follow on it while it
    # stays within the line width
    return dense_repr._add_suffixes(text, suffixes, indent, force_newline=True)


def compressed_repr(t) -> str:
    """A CSR/CSC/BSR/BSC tensor as torch prints it: its index arrays, values, then suffixes
    that continue the values' line while it stays within the line width."""
    prefix = "tensor("
    indent = len(prefix)
    row_major = t.layout in ("sparse_csr", "sparse_bsr")
    names = ("crow_indices", "col_indices") if row_major else ("ccol_indices", "row_indices")
    compressed, plain = t._compressed_and_plain()
    parts = []
    for name, data in zip(names + ("values",), (compressed, plain, t.values())):
        head = f"{name}=tensor("
        parts.append(head + _body(data._data, indent + len(head)) + ")")
    text = prefix + (",\n" + " " * indent).join(parts)
    suffixes = _suffixes(t, t._data.shape, t._nnz())
    return dense_repr._add_suffixes(text, suffixes, indent)
