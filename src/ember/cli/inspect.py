"""``ember inspect FILE``: a checkpoint's tensors with their statistics, as a table or JSON."""

from __future__ import annotations

import argparse
import json

import numpy as np

from ._checkpoint import as_array, dtype_name, read_checkpoint, shape_text


def add_parser(sub) -> None:
    p = sub.add_parser(
        "inspect",
        help="list a checkpoint's tensors with statistics (safetensors or PyTorch .pt)",
        description="List each tensor of a checkpoint (safetensors, or PyTorch's .pt/.pth read "
        "with weights_only=True: no code from the file runs): name, shape, dtype, bytes, "
        "min/max/mean/std of its finite values (std with no Bessel correction; |x| for "
        "complex), and how many NaN and inf it holds; then the totals.",
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
    """One tensor's row: name, shape, dtype, numel, bytes, nan, inf, and min/max/mean/std of
    its finite values (None when it has none)."""
    values = as_array(t)
    if values.dtype.kind == "c":
        values = np.abs(values)
    values = values.astype(np.float64, copy=False)
    finite_mask = np.isfinite(values)
    finite = values[finite_mask]
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
        "nan": int(np.isnan(values).sum()),
        "inf": int(np.isinf(values).sum()),
    }
    if finite.size:
        row.update(
            min=float(finite.min()),
            max=float(finite.max()),
            mean=float(finite.mean()),
            std=float(finite.std()),
        )
    return row


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
        f"{totals['elements']:,} elements, {_size(totals['bytes'])}{nonfinite}"
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


def _size(count: int) -> str:
    units = ("bytes", "KiB", "MiB", "GiB", "TiB")
    size, step = float(count), 0
    while size >= 1024 and step < len(units) - 1:
        size, step = size / 1024, step + 1
    return f"{count} bytes" if step == 0 else f"{size:.1f} {units[step]}"
