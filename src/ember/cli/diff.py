"""``ember diff A B``: two checkpoints compared tensor by tensor.

The loop it closes: the same model in two libraries gives different numbers. Save the weights
(and gradients) after one step in both, then ``ember diff torch.pt ember.safetensors`` names the
first tensor that differs, where, and by how much. Exit code 0 when equal, 1 when they differ,
2 when a file cannot be read (``_checkpoint`` says which files) or a pair is too large to
compare (expanded along different dims: more values than the files hold).
"""

from __future__ import annotations

import argparse
import hashlib

import numpy as np

from ._arguments import UsageError, non_negative_float
from ._checkpoint import (
    as_array,
    broadcast_dims,
    distinct_numel,
    distinct_part,
    dtype_name,
    memory_limit,
    read_checkpoint,
    shape_text,
)

EXIT_EQUAL, EXIT_DIFFERENT = 0, 1


def add_parser(sub) -> None:
    p = sub.add_parser(
        "diff",
        help="compare two checkpoints tensor by tensor (safetensors and .pt, any mix)",
        description="Compare two checkpoints (safetensors, or PyTorch's .pt read with "
        "weights_only=True; one may come from PyTorch and one from ember) tensor by tensor: "
        "names only in one file (and which of them look renamed: same values under another "
        "name), shape and dtype mismatches, and for each tensor whose values differ the count, "
        "the largest absolute and relative difference (relative to B) and the first index "
        "that differs. Values are close when |a - b| <= atol + rtol * |b| (NaN equals NaN). "
        "Records expanded along the same dims (stride 0) are compared once along them. "
        "Exit code 0 when equal, 1 when they differ, 2 on a usage error or a file it cannot "
        "read or compare.",
    )
    p.add_argument("a", metavar="A", help="the first checkpoint")
    p.add_argument("b", metavar="B", help="the second checkpoint (the reference for rtol)")
    p.add_argument(
        "--rtol",
        type=non_negative_float,
        default=1e-5,
        help="relative tolerance (default 1e-5, torch.allclose's)",
    )
    p.add_argument(
        "--atol",
        type=non_negative_float,
        default=1e-8,
        help="absolute tolerance (default 1e-8, torch.allclose's)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    a, _ = read_checkpoint(args.a)
    b, _ = read_checkpoint(args.b)
    limit = memory_limit(args.a, args.b)
    lines, equal = compare(a, b, rtol=args.rtol, atol=args.atol, limit=limit)
    print(f"A: {args.a} ({_count(len(a))})")
    print(f"B: {args.b} ({_count(len(b))})")
    for line in lines:
        print(line)
    return EXIT_EQUAL if equal else EXIT_DIFFERENT


def compare(
    a: dict, b: dict, *, rtol: float, atol: float, limit: int | None = None
) -> tuple[list[str], bool]:
    """The report's lines and whether ``a`` and ``b`` (name → tensor) are equal. ``limit``:
    the most bytes (in the tensors' own dtype) one comparison may read; a pair over it raises
    ``UsageError`` (None: no limit)."""
    lines = []
    only_a = [name for name in a if name not in b]
    only_b = [name for name in b if name not in a]
    renamed = _renamed(a, b, only_a, only_b)
    for name_a, name_b in renamed.items():
        lines.append(f"renamed: {name_a} in A is {name_b} in B (same shape, dtype and values)")
    for name in only_a:
        if name not in renamed:
            lines.append(f"only in A: {name} {shape_text(a[name].shape)} {dtype_name(a[name])}")
    matched_b = set(renamed.values())
    for name in only_b:
        if name not in matched_b:
            lines.append(f"only in B: {name} {shape_text(b[name].shape)} {dtype_name(b[name])}")
    common = [name for name in a if name in b]
    same = 0
    for name in common:
        found = _compare_tensor(name, a[name], b[name], rtol, atol, limit)
        lines.extend(found)
        same += not found
    differ = len(lines) > 0
    if common:
        lines.append(f"equal: {same} of the {_count(len(common))} in both files")
    lines.append(
        "the checkpoints differ"
        if differ
        else f"the checkpoints are equal (rtol={rtol}, atol={atol})"
    )
    return lines, not differ


def _compare_tensor(name: str, ta, tb, rtol: float, atol: float, limit: int | None) -> list[str]:
    lines = []
    if tuple(ta.shape) != tuple(tb.shape):
        return [f"shape: {name} is {shape_text(ta.shape)} in A, {shape_text(tb.shape)} in B"]
    if dtype_name(ta) != dtype_name(tb):
        lines.append(
            f"dtype: {name} is {dtype_name(ta)} in A, {dtype_name(tb)} in B "
            "(values compared after conversion)"
        )
    # along the dims both repeat one value (stride 0) one position stands for all
    repeated = tuple(sorted(set(broadcast_dims(ta)) & set(broadcast_dims(tb))))
    compared = distinct_numel(ta, repeated)
    itemsize = max(ta.element_size(), tb.element_size())
    if limit is not None and compared * itemsize > limit:
        raise UsageError(
            f"{name} {shape_text(ta.shape)}: comparing it reads {compared:,} values of each "
            "file, more than the files hold (expanded along different dims, or sparse): too "
            "large to compare"
        )
    repeats = ta.numel() // max(compared, 1)
    x, y = as_array(distinct_part(ta, repeated)), as_array(distinct_part(tb, repeated))
    exact = x.dtype.kind in "biu" and y.dtype.kind in "biu"
    if exact:  # integers compare exactly: float64 would round those beyond 2**53
        close = x == y
    else:
        close = np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return lines
    wide = np.complex128 if "c" in (x.dtype.kind, y.dtype.kind) else np.float64
    xf, yf = x.astype(wide), y.astype(wide)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # only the differing elements have a size; NaN against a number has none
        gap = np.where(close, np.nan, np.abs(xf - yf))
        rel = gap / np.abs(yf)
    # an index of the compared part is the tensor's own: the repeated dims are cut to index 0
    first = tuple(int(i) for i in np.argwhere(~close)[0])
    text = (
        f"values: {name}: {int((~close).sum()) * repeats:,} of {ta.numel():,} elements differ "
        f"(rtol={rtol}, atol={atol}); {_largest('abs', gap)}, {_largest('rel', rel)}; "
        f"{'first' + _at(first) if first else 'the value'}: {_value(x[first])} in A, "
        f"{_value(y[first])} in B"
    )
    lines.append(text)
    return lines


def _largest(kind: str, gaps: np.ndarray) -> str:
    """``max abs 0.0012 at [3, 7]`` over the gaps that are numbers, ``max abs -`` if none."""
    if np.isnan(gaps).all():
        return f"max {kind} -"
    where = tuple(int(i) for i in np.unravel_index(int(np.nanargmax(gaps)), gaps.shape))
    return f"max {kind} {float(gaps[where]):.4g}{_at(where)}"


def _renamed(a: dict, b: dict, only_a: list, only_b: list) -> dict:
    """Names of A (absent from B) whose tensor is in B under another name, bit for bit."""
    by_content = {}
    for name in only_b:
        by_content.setdefault(_fingerprint(b[name]), name)
    renamed = {}
    for name in only_a:
        match = by_content.pop(_fingerprint(a[name]), None)
        if match is not None:
            renamed[name] = match
    return renamed


def _fingerprint(t) -> tuple:
    """Shape, dtype and a digest of the values: of the distinct values for an expanded
    tensor, of the indices and values stored for a sparse one (never materialised)."""
    digest = hashlib.sha256()
    if t.is_sparse:
        t = t.coalesce()
        parts, layout = [t.indices(), t.values()], "sparse"
    else:
        dims = broadcast_dims(t)
        parts, layout = [distinct_part(t, dims)], dims
    for part in parts:
        digest.update(np.ascontiguousarray(as_array(part)).tobytes())
    return (tuple(t.shape), dtype_name(t), layout, digest.hexdigest())


def _at(index: tuple) -> str:
    """`` at [3, 7]``: where an element is, as one would index it (``[49]`` in 1-D); nothing
    for the one element of a 0-d tensor."""
    return f" at [{', '.join(map(str, index))}]" if index else ""


def _value(v) -> str:
    return f"{v:.6g}" if isinstance(v, (float, np.floating)) else str(v)


def _count(n: int) -> str:
    return f"{n} tensor" if n == 1 else f"{n} tensors"
