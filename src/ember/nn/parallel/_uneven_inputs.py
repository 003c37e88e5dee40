"""DDP on uneven inputs: ``join()``, as torch's Join.

Inside ``join()`` every forward starts with a small allgather saying which ranks still have
data. A rank that ran out answers those rounds from the context's exit and shadows the others'
collectives (the buffer broadcast and one allreduce of zeros, or the comm hook's collectives, per
bucket) until no rank is left; then the last rank to join broadcasts its parameters.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ... import _distributed_hook
from ._buckets import Bucket, all_reduce_async, coalesced_broadcast, watched
from ._comm_hooks import comm_hook_result, run_comm_hook

JOINED, ACTIVE, SYNCING = 0, 1, 2  # a rank's answer in a join round


class UnevenInputs:
    """The ``join()`` part of DistributedDataParallel (a mixin: it uses DDP's state)."""

    @contextlib.contextmanager
    def join(
        self,
        divide_by_initial_world_size: bool = True,
        enable: bool = True,
        throw_on_early_termination: bool = False,
    ):
        """Train on uneven inputs: a rank out of data shadows the others until all are done.

        Inside the block every forward tells the other ranks this one still has data. On leaving
        the block a rank answers for itself with "joined" and takes part in the others'
        allreduces with zero gradients until every rank has left; then all ranks take the
        parameters of the last rank to leave. Gradients are divided by the world size
        (``divide_by_initial_world_size=True``, torch's default) or by the number of ranks that
        still had data. ``throw_on_early_termination=True`` makes every rank raise as soon as one
        runs out instead.

        Example::
            >>> with ddp.join():
            ...     for x, y in loader_of_this_rank:      # ranks may have different lengths
            ...         opt.zero_grad(); loss_fn(ddp(x), y).backward(); opt.step()
        """
        if not enable:
            yield
            return
        self._joining = True
        self._last_active = []
        self._divide_by_world = divide_by_initial_world_size
        self._throw_early = throw_on_early_termination
        failed = False
        try:
            yield
        except BaseException:
            failed = True  # the others cannot be shadowed by a rank that is failing
            raise
        finally:
            try:
                if not failed:
                    self._shadow_until_all_joined()
            finally:
                self._joining = False
                self._divisor = self.process_group.size()
                self._buffer_root = 0

    def join_hook(self, **kwargs):
        """The ``JoinHook`` of this module for ``ember.distributed.algorithms.Join``.

        ``divide_by_initial_world_size`` (default True) as in ``join()``.
        """
        hook = _distributed_hook.distributed().JoinHook()
        hook.divide_by_initial_world_size = kwargs.get("divide_by_initial_world_size", True)
        return hook

    @property
    def join_device(self):
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

    @watched
    def _join_round(self, state: int) -> list[int]:
        """Every rank's state this round (``JOINED``, ``ACTIVE`` or ``SYNCING``)."""
        pg = self.process_group
        mine = np.array([state], np.int8)
        states = np.empty(pg.size(), np.int8)
        # polled, so that a rank that died surfaces here as a catchable DistBackendError
        _distributed_hook.distributed().wait(
            pg, [pg.comm.Iallgather(mine, states)], "DDP join", keep=(mine, states)
        )
        active = [r for r, s in enumerate(states) if s != JOINED]
        if self._throw_early and len(active) < pg.size():
            raise RuntimeError(
                "Detected at least one rank that exhausted inputs. Throwing across all ranks."
            )
        if active:
            self._last_active = active
            # as torch, buffers come from the highest rank that still has data
            self._buffer_root = active[-1]
            self._divisor = pg.size() if self._divide_by_world else len(active)
        return [int(s) for s in states]

    def _shadow_reduction(self) -> None:
        """Take part in the others' bucket reductions with zero gradients."""
        if self._comm_hook is not None:  # the hook's collectives, on zeros
            for bucket in self._buckets:
                shadow = Bucket(bucket.index, bucket.params, bucket.dtype)
                shadow.flat = bucket.xp.zeros(bucket.size, bucket.dtype)
                comm_hook_result(run_comm_hook(self._comm_hook, shadow, len(self._buckets)), shadow)
            return
        works = [
            all_reduce_async(b.xp.zeros(b.size, b.dtype), self.process_group) for b in self._buckets
        ]
        for work in works:
            work.wait()

    @watched
    def _shadow_until_all_joined(self) -> None:
        while True:
            states = self._join_round(JOINED)
            if all(s == JOINED for s in states):
                break
            self._sync_buffers()
            if any(s == SYNCING for s in states):
                self._shadow_reduction()
        # the ranks may have drifted (a divisor that is not the world size): take the last one's
        last = self._last_active[-1] if self._last_active else 0
        coalesced_broadcast(self.process_group, self._params + list(self.module.buffers()), last)
