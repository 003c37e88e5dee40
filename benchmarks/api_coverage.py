"""How much of PyTorch's public surface ember has, per namespace.

Run with torch importable (the CPU wheel is enough)::

    uv run python benchmarks/api_coverage.py            # the table
    uv run python benchmarks/api_coverage.py --missing  # and every missing name
    uv run python benchmarks/api_coverage.py --json

A torch name counts as present when ember has an attribute of the same name in the matching
namespace. The top level is split by kind: ``torch`` counts its functions, ``torch:classes``
its classes, ``torch:constants`` its plain values (dtypes, layouts, memory formats, ``pi``) and
``torch:modules`` its submodules (ember's lazy ones count: ``hasattr`` loads them).
Names ember leaves out on purpose are listed, with the reason, in
``benchmarks/api_omissions.txt`` (one ``namespace pattern  # reason`` per line, patterns in
fnmatch syntax); they are reported apart and do not count against coverage.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib
import inspect
import json
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

OMISSIONS = Path(__file__).with_name("api_omissions.txt")


def _public(obj, keep) -> list[str]:
    names = []
    for name in dir(obj):
        if name.startswith("_"):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = getattr(obj, name)
        except Exception:
            continue
        if keep(value):
            names.append(name)
    return sorted(names)


def _is_function(value) -> bool:
    return callable(value) and not inspect.isclass(value) and not inspect.ismodule(value)


def _is_class(value) -> bool:
    return inspect.isclass(value)


def _anything(value) -> bool:
    return True


def _is_constant(value) -> bool:
    """A plain value: dtypes, layouts, memory formats, numbers (``pi``), ``newaxis``."""
    return not callable(value) and not inspect.ismodule(value)


def _is_own_module(value) -> bool:
    """A submodule of torch itself (not a standard-library module torch happens to import)."""
    return inspect.ismodule(value) and value.__name__.startswith("torch.")


# namespace label -> (torch module path, ember module path, which public names count)
NAMESPACES = {
    "torch": ("torch", "ember", _is_function),
    "torch:classes": ("torch", "ember", _is_class),
    "torch:constants": ("torch", "ember", _is_constant),
    "torch:modules": ("torch", "ember", _is_own_module),
    "Tensor": ("torch.Tensor", "ember.Tensor", _anything),
    "nn": ("torch.nn", "ember.nn", _is_class),
    "nn.functional": ("torch.nn.functional", "ember.nn.functional", _is_function),
    "nn.init": ("torch.nn.init", "ember.nn.init", _is_function),
    "nn.utils": ("torch.nn.utils", "ember.nn.utils", _is_function),
    "optim": ("torch.optim", "ember.optim", _is_class),
    "optim.lr_scheduler": ("torch.optim.lr_scheduler", "ember.optim.lr_scheduler", _is_class),
    "linalg": ("torch.linalg", "ember.linalg", _is_function),
    "fft": ("torch.fft", "ember.fft", _is_function),
    "special": ("torch.special", "ember.special", _is_function),
    "distributions": ("torch.distributions", "ember.distributions", _is_class),
    "autograd": ("torch.autograd", "ember.autograd", _anything),
    "cuda": ("torch.cuda", "ember.cuda", _is_function),
    "amp": ("torch.amp", "ember.amp", _anything),
    "utils.data": ("torch.utils.data", "ember.utils.data", _is_class),
}


def _resolve(path: str):
    module_path, _, attr = path.rpartition(".")
    try:
        return importlib.import_module(path)
    except ImportError:
        if not module_path:
            return None
        try:
            return getattr(importlib.import_module(module_path), attr)
        except (ImportError, AttributeError):
            return None


def load_omissions(path: Path = OMISSIONS) -> dict[str, list[tuple[str, str]]]:
    """namespace -> [(pattern, reason)] from the checked-in list."""
    omissions: dict[str, list[tuple[str, str]]] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        rule, sep, reason = text.partition("#")
        parts = rule.split()
        if len(parts) != 2 or not sep or not reason.strip():
            raise ValueError(f"{path}:{number}: expected 'namespace pattern  # reason': {line!r}")
        omissions.setdefault(parts[0], []).append((parts[1], reason.strip()))
    return omissions


@dataclass
class Coverage:
    namespace: str
    present: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.present) + len(self.missing) + len(self.omitted)

    @property
    def percent(self) -> float:
        counted = len(self.present) + len(self.missing)
        return 100.0 * len(self.present) / counted if counted else 100.0


def measure(omissions: dict | None = None) -> list[Coverage]:
    omissions = load_omissions() if omissions is None else omissions
    results = []
    for label, (torch_path, ember_path, keep) in NAMESPACES.items():
        torch_obj = _resolve(torch_path)
        if torch_obj is None:
            continue
        ember_obj = _resolve(ember_path)
        cov = Coverage(label)
        rules = omissions.get(label, [])
        for name in _public(torch_obj, keep):
            if ember_obj is not None and hasattr(ember_obj, name):
                cov.present.append(name)
            elif any(fnmatch.fnmatchcase(name, pattern) for pattern, _ in rules):
                cov.omitted.append(name)
            else:
                cov.missing.append(name)
        results.append(cov)
    return results


def table(results: list[Coverage]) -> str:
    lines = [
        "| namespace | torch names | ember has | left out on purpose | missing | coverage |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for cov in results:
        lines.append(
            f"| {cov.namespace} | {cov.total} | {len(cov.present)} | {len(cov.omitted)} | "
            f"{len(cov.missing)} | {cov.percent:.0f} % |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="list every missing name")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("api_coverage: torch is not importable; install the CPU wheel", file=sys.stderr)
        return 2
    results = measure()
    if args.json:
        print(json.dumps([vars(c) | {"percent": round(c.percent, 1)} for c in results], indent=1))
        return 0
    print(f"ember vs torch {torch.__version__}\n")
    print(table(results))
    if args.missing:
        for cov in results:
            if cov.missing:
                print(f"\n{cov.namespace} ({len(cov.missing)} missing):")
                print("  " + " ".join(cov.missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
