"""``ember.distributed`` as the layers below it reach it.

``nn.SyncBatchNorm``, ``nn.parallel.DistributedDataParallel`` and
``utils.data.DistributedSampler`` sit where PyTorch has them, in the namespaces layer, but talk
to process groups, which belong to the systems layer. A lower layer never imports a higher one,
so ``ember.distributed`` puts the functions they call here when it is imported
(``ember/distributed/_registered.py``). Until then no process group can exist, and an empty
slot means what an uninitialised default group means.

Example::
    >>> from ember import _distributed_hook
    >>> dist = _distributed_hook.DISTRIBUTED  # None until ember.distributed is imported
"""

from __future__ import annotations

NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)

DISTRIBUTED = None  # ember.distributed._registered, once ember.distributed is imported


def distributed():
    """The functions ember.distributed registered; where it was never imported (so no process
    group exists) torch's error for a missing default group."""
    if DISTRIBUTED is None:
        raise ValueError(NOT_INITIALIZED)
    return DISTRIBUTED


def is_available() -> bool:
    """True when mpi4py (the MPI engine under ember.distributed) can be imported."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True
