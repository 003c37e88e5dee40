"""``ember.multiprocessing``: the standard ``multiprocessing`` module, with ember tensors sent
between processes through shared memory (as ``torch.multiprocessing``).

Everything of ``multiprocessing`` is here (``Process``, ``Queue``, ``SimpleQueue``,
``JoinableQueue``, ``Pool``, ``Manager``, ``get_context``, ``set_start_method`` ...); importing
this module registers ember's tensor reductions with ``multiprocessing``'s pickler, so a tensor
put on any queue or given to a ``Process`` under ``spawn`` or ``forkserver`` reaches the other
process as a view of the same memory (under ``fork`` the child inherits the mapping itself).
``share_memory_()`` / ``Module.share_memory()`` move data there ahead of time, which Hogwild
training needs: every process updates the one copy of the weights.

Example::
    >>> import ember.multiprocessing as mp
    >>> model.share_memory()
    >>> workers = [mp.Process(target=train, args=(model,)) for _ in range(2)]
"""

import multiprocessing
from multiprocessing import *  # noqa: F403

from .. import _shared_memory
from .reductions import init_reductions
from .spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = [
    "set_sharing_strategy",
    "get_sharing_strategy",
    "get_all_sharing_strategies",
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "SpawnContext",
    "spawn",
    "start_processes",
    *multiprocessing.__all__,
]


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how tensors moved to shared memory from now on are handed to other processes:
    ``"file_descriptor"`` (the default: an anonymous segment, its descriptor duplicated into
    the receiver) or ``"file_system"`` (a named segment in ``/dev/shm``, counted per use)."""
    strategies = get_all_sharing_strategies()
    if new_strategy not in strategies:
        raise AssertionError(
            f"invalid sharing strategy {new_strategy!r}, expected one of {strategies}"
        )
    _shared_memory.strategy = new_strategy


def get_sharing_strategy() -> str:
    """The strategy ``share_memory_`` uses now."""
    return _shared_memory.strategy


def get_all_sharing_strategies() -> set:
    """The strategies this system supports."""
    return set(_shared_memory.ALL_STRATEGIES)


init_reductions()
