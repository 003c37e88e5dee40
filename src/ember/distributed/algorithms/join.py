"""``Join``: training on uneven inputs, where some ranks run out of data before others.

Inside ``with Join([ddp, ...]):`` each joinable's per-iteration collective is shadowed by the
ranks that have run out, until every rank has. A ``DistributedDataParallel`` joinable runs its
own ``join()`` (the same as ``with ddp.join():``); other joinables follow torch's protocol: they
call ``Join.notify_join_context(self)`` once per iteration, and their ``join_hook()``'s
``main_hook`` runs on a rank that has run out for each iteration the others still take,
``post_hook(is_last_joiner)`` once all are done.

Example::
    >>> from ember.distributed.algorithms import Join
    >>> with Join([ddp]):
    ...     for x, y in loader_of_this_rank:      # ranks may have different lengths
    ...         opt.zero_grad(); loss_fn(ddp(x), y).backward(); opt.step()
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from typing import Any

__all__ = ["Join", "JoinHook", "Joinable"]


class JoinHook:
    """What a rank that has run out does: ``main_hook`` per iteration the others take,
    ``post_hook`` once all ranks are done."""

    def main_hook(self) -> None:
        """Shadow one iteration of the ranks that still have data."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Run once every rank has joined."""


class _JoinConfig:
    __slots__ = ("enable", "throw_on_early_termination", "is_first_joinable")

    def __init__(self, enable: bool, throw: bool, first: bool):
        self.enable, self.throw_on_early_termination, self.is_first_joinable = enable, throw, first


class Joinable(ABC):
    """Something that takes part in a per-iteration collective and can be shadowed."""

    def __init__(self) -> None:
        super().__init__()
        self._join_config = _JoinConfig(False, False, False)

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The hook that shadows this joinable's collectives."""

    @property
    @abstractmethod
    def join_device(self):
        """The device of the joinable's collectives."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The process group of the joinable's collectives."""


def _is_ddp(joinable) -> bool:
    from ...nn.parallel.distributed import DistributedDataParallel

    return isinstance(joinable, DistributedDataParallel)


class Join:
    """The context manager of uneven inputs over ``joinables`` (see the module docstring).

    ``kwargs`` reach every ``join_hook`` (DDP takes ``divide_by_initial_world_size``).
    """

    def __init__(
        self,
        joinables: list,
        enable: bool = True,
        throw_on_early_termination: bool = False,
        **kwargs: Any,
    ):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        ddps = [j for j in joinables if _is_ddp(j)]
        if ddps and len(ddps) != len(joinables):
            raise NotImplementedError(
                "ember's Join takes either DistributedDataParallel modules or other joinables, "
                "not both in one context"
            )
        self._joinables = list(joinables)
        self._ddp = bool(ddps)
        self._enable = enable
        self._throw = throw_on_early_termination
        self._kwargs = kwargs
        self._stack: contextlib.ExitStack | None = None
        self._hooks = [j.join_hook(**kwargs) for j in joinables] if not ddps else []
        for i, joinable in enumerate(self._joinables):
            joinable._join_config = _JoinConfig(enable, throw_on_early_termination, i == 0)

    def __enter__(self) -> Join:
        if self._ddp:
            self._stack = contextlib.ExitStack()
            divide = self._kwargs.get("divide_by_initial_world_size", True)
            for ddp in self._joinables:
                self._stack.enter_context(ddp.join(divide, self._enable, self._throw))
        return self

    def __exit__(self, kind, value, traceback) -> bool:
        try:
            if self._ddp:
                return bool(self._stack.__exit__(kind, value, traceback))
            if not self._enable or kind is not None:
                return False
            self._shadow_until_all_joined()
            return False
        finally:
            for joinable in self._joinables:
                joinable._join_config = _JoinConfig(False, False, False)

    def _shadow_until_all_joined(self) -> None:
        first = self._joinables[0]
        is_last_joiner = True  # unless the others still had data after this rank ran out
        while _count(first, 0) > 0:
            if self._throw:
                _count(first, 1)  # the others' second allreduce: "throw"
                rank = first.join_process_group
                from ..process_group import get_rank

                raise RuntimeError(f"Rank {get_rank(rank)} exhausted all inputs.")
            for hook in self._hooks:
                hook.main_hook()
            is_last_joiner = False
        for hook in self._hooks:
            hook.post_hook(is_last_joiner)

    @staticmethod
    def notify_join_context(joinable) -> None:
        """Tell the joined ranks this one still has data (once per iteration, first joinable).

        Called by a joinable before its per-iteration collective.
        """
        config = getattr(joinable, "_join_config", None)
        if config is None or not config.enable or not config.is_first_joinable:
            return
        _count(joinable, 1)
        if config.throw_on_early_termination and _count(joinable, 0) > 0:
            raise RuntimeError(
                "Detected at least one rank that exhausted inputs. Throwing across all ranks."
            )


def _count(joinable, mine: int) -> int:
    """The sum over the ranks of ``mine`` (1 from a rank with data, 0 from a joined one)."""
    from ... import _creation
    from ..collectives import all_reduce

    count = _creation.tensor([mine], device=joinable.join_device)
    all_reduce(count, group=joinable.join_process_group)
    return int(count.item())
