"""``ember.utils.benchmark``: PyTorch's benchmarking tools (``torch.utils.benchmark``).

``Timer`` times a statement and returns a ``Measurement`` (median, IQR, significant
figures, a repr as PyTorch prints it); ``Compare`` lays many Measurements out as PyTorch's
tables; ``Fuzzer`` draws benchmark configurations and tensors, reproducibly from a seed.
Instruction counting (``Timer.collect_callgrind``, ``CallgrindStats``) needs valgrind and
PyTorch's C++ bindings, and C++ statements (``language="cpp"``) need LibTorch: ember has
neither.

Example::
    >>> import ember as torch
    >>> import torch.utils.benchmark as benchmark  # doctest: +SKIP
    >>> benchmark = torch.utils.benchmark
    >>> x = torch.ones(64, 64)
    >>> results = [
    ...     benchmark.Timer("x @ x", globals={"x": x}, label="matmul", description="64",
    ...                     num_threads=n).blocked_autorange(min_run_time=0.01)
    ...     for n in (1, 2)]
    >>> table = str(benchmark.Compare(results))
    >>> table.splitlines()[0].strip("[-] ")
    'matmul'
"""

from .utils.common import (
    Measurement,
    TaskSpec,
    ordered_unique,
    select_unit,
    set_torch_threads,
    trim_sigfig,
    unit_to_english,
)
from .utils.compare import Colorize, Compare
from .utils.fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from .utils.sparse_fuzzer import FuzzedSparseTensor
from .utils.timer import Language, Timer, timer

__all__ = [
    "Colorize",
    "Compare",
    "FuzzedParameter",
    "FuzzedSparseTensor",
    "FuzzedTensor",
    "Fuzzer",
    "Language",
    "Measurement",
    "ParameterAlias",
    "TaskSpec",
    "Timer",
    "ordered_unique",
    "select_unit",
    "set_torch_threads",
    "timer",
    "trim_sigfig",
    "unit_to_english",
]
