"""``ember inspect FILE``: a checkpoint's tensors with their statistics, as a table or JSON."""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

from ._checkpoint import (
    as_array,
    broadcast_dims,
    distinct_numel,
    distinct_part,
    dtype_name,
    read_checkpoint,
    shape_text,
    size_text,
)

# elements converted to float64 at a time: a summary's memory stays near 32 MiB per tensor
_CHUNK = 1 << 22


def add_parser(sub) -> None:
    p = sub.add_parser(
        "inspect",
        help="list a checkpoint's tensors with statistics (safetensors or PyTorch .pt)",
        description="List each tensor of a checkpoint (safetensors, or PyTorch's .pt/.pth read "
        "with weights_only=True: no code from the file runs): name, shape, dtype, bytes, "
        "min/max/mean/std of its finite values (std with no Bessel correction; |x| for "
        "complex), and how many NaN and inf it holds; then the totals. An expanded record "
        "(stride 0, as expand() makes) is summarised over its distinct values, never "
        "materialised. Exit code 2 for a file it cannot read.",
    )
    p.add_argument("file", help="the checkpoint")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    tensors, others = read_checkpoint(args.file)
    rows = [tensor_stats(name, t) for name, t in tensors.items()]
    totals = {
        "tensors": len(rows),
        "elements": sum(r["numel"] for r in rows),
        "bytes": sum(r["bytes"] for r in rows),
        "nan": sum(r["nan"] for r in rows),
        "inf": sum(r["inf"] for r in rows),
    }
    if args.json:
        report = {"file": args.file, "tensors": rows, "totals": totals, "other_values": others}
        print(json.dumps(report, indent=2, default=repr))
    else:
        print(_table(args.file, rows, totals, others))
    return 0


def tensor_stats(name: str, t) -> dict:
    """One tensor's row: name, shape, dtype, numel, bytes, nan, inf, min/max/mean/std of its
    finite values (None when it has none) and ``broadcast_dims``. Read in chunks of
    ``_CHUNK`` elements; an expanded tensor (stride 0 along ``broadcast_dims``) is read once
    along those dims, each value standing for as many as the dims repeat it (so min, max,
    mean and std are its own); a sparse one as its stored values and the zeros around them."""
    t = t.detach().cpu()
    dims = broadcast_dims(t)
    moments = _Moments()
    if t.is_sparse:
        values = t.coalesce().values()
        for chunk in _chunks(values):
            moments.add(as_array(chunk))
        moments.add_zeros(t.numel() - values.numel())
        repeats = 1
    else:
        for chunk in _chunks(distinct_part(t, dims)):
            moments.add(as_array(chunk))
        repeats = t.numel() // max(distinct_numel(t, dims), 1)
    row = {
        "name": name,
        "shape": list(t.shape),
        "dtype": dtype_name(t),
        "numel": t.numel(),
        "bytes": t.numel() * t.element_size(),
        "min": None,
        "max": None,
        "mean": None,
        "std": None,
        "nan": moments.nan * repeats,
        "inf": moments.inf * repeats,
        "broadcast_dims": list(dims),
    }
    if moments.count:
        row.update(
            min=moments.min,
            max=moments.max,
            mean=moments.mean,
            std=math.sqrt(moments.squares / moments.count),
        )
    return row


def _chunks(t):
    """Views of ``t`` of at most ``_CHUNK`` elements (a row of more is split further)."""
    if t.numel() <= _CHUNK or t.dim() == 0:
        yield t
        return
    row = t.numel() // t.shape[0]
    if row > _CHUNK:
        for i in range(t.shape[0]):
            yield from _chunks(t[i])
        return
    step = _CHUNK // row
    for start in range(0, t.shape[0], step):
        yield t[start : start + step]


class _Moments:
    """Count, min, max, mean and sum of squared deviations of the finite values added a chunk
    at a time (Chan, Golub and LeVeque's pairwise update), and the NaN and inf counts."""

    __slots__ = ("count", "min", "max", "mean", "squares", "nan", "inf")

    def __init__(self) -> None:
        self.count, self.mean, self.squares, self.nan, self.inf = 0, 0.0, 0.0, 0, 0
        self.min, self.max = math.inf, -math.inf

    def add(self, values: np.ndarray) -> None:
        if values.dtype.kind == "c":
            values = np.abs(values)
        values = values.astype(np.float64, copy=False).reshape(-1)
        self.nan += int(np.isnan(values).sum())
        self.inf += int(np.isinf(values).sum())
        finite = values[np.isfinite(values)]
        if finite.size:
            mean = float(finite.mean())
            self.min = min(self.min, float(finite.min()))
            self.max = max(self.max, float(finite.max()))
            self._merge(finite.size, mean, float(((finite - mean) ** 2).sum()))

    def add_zeros(self, count: int) -> None:
        if count:
            self.min, self.max = min(self.min, 0.0), max(self.max, 0.0)
            self._merge(count, 0.0, 0.0)

    def _merge(self, count: int, mean: float, squares: float) -> None:
        total = self.count + count
        delta = mean - self.mean
        self.mean += delta * count / total
        self.squares += squares + delta * delta * self.count * count / total
        self.count = total


_COLUMNS = ("name", "shape", "dtype", "bytes", "min", "max", "mean", "std", "nan", "inf")


def _table(path: str, rows: list, totals: dict, others: dict) -> str:
    cells = [_COLUMNS] + [tuple(_cell(column, row) for column in _COLUMNS) for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_COLUMNS))]
    lines = [f"{path}:"]
    for line in cells:
        # the name and dtype read left to right, the numbers line up on the right
        lines.append(
            "  ".join(
                text.ljust(width) if column in ("name", "shape", "dtype") else text.rjust(width)
                for column, text, width in zip(_COLUMNS, line, widths)
            ).rstrip()
        )
    nonfinite = (
        f", {totals['nan']} NaN, {totals['inf']} inf" if totals["nan"] or totals["inf"] else ""
    )
    lines.append(
        f"total: {totals['tensors']} tensor{'' if totals['tensors'] == 1 else 's'}, "
        f"{totals['elements']:,} elements, {size_text(totals['bytes'])}{nonfinite}"
    )
    expanded = [row["name"] for row in rows if row["broadcast_dims"]]
    if expanded:
        lines.append(
            f"expanded (stride 0, summarised over their distinct values): {', '.join(expanded)}"
        )
    if others:
        shown = ", ".join(
            f"{name}={_short(repr(value))}" for name, value in list(others.items())[:8]
        )
        more = f" and {len(others) - 8} more" if len(others) > 8 else ""
        lines.append(f"other values: {shown}{more}")
    return "\n".join(lines)


def _cell(column: str, row: dict) -> str:
    value = row[column]
    if column == "shape":
        return shape_text(value)
    if column == "bytes":
        return f"{value:,}"
    if column in ("min", "max", "mean", "std"):
        return "-" if value is None else f"{value:.4g}"
    return str(value)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
