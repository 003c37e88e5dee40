"""DDP communication hooks: ``default_hooks`` (allreduce, fp16/bf16 compression), PowerSGD.

``DDPCommHookType.ALLREDUCE.value(model=ddp, state=process_group)`` registers a hook by name,
as torch's ``register_ddp_comm_hook(DDPCommHookType.FP16_COMPRESS, ddp)`` does.
"""

from __future__ import annotations

import enum
from functools import partial

from . import default_hooks
from . import default_hooks as default
from . import powerSGD_hook as powerSGD

__all__ = ["DDPCommHookType", "default", "default_hooks", "powerSGD", "register_ddp_comm_hook"]


# partials become members by themselves before Python 3.11; from 3.13 they must be marked
_member = getattr(enum, "member", lambda value: value)


def _ddp_comm_hook_wrapper(comm_hook, model, state) -> None:
    model.register_comm_hook(state, comm_hook)


def _powerSGD_comm_hook_wrapper(
    comm_hook, model, state, matrix_approximation_rank: int, start_powerSGD_iter: int = 1_000
) -> None:
    """Register PowerSGD with its state built around ``state`` (a process group)."""
    powerSGD_state = powerSGD.PowerSGDState(
        process_group=state,
        matrix_approximation_rank=matrix_approximation_rank,
        start_powerSGD_iter=start_powerSGD_iter,
    )
    model.register_comm_hook(powerSGD_state, comm_hook)


class DDPCommHookType(enum.Enum):
    """The hooks of ``ddp_comm_hooks`` by name; ``.value(model=..., state=...)`` registers one."""

    ALLREDUCE = _member(partial(_ddp_comm_hook_wrapper, comm_hook=default.allreduce_hook))
    FP16_COMPRESS = _member(partial(_ddp_comm_hook_wrapper, comm_hook=default.fp16_compress_hook))
    BF16_COMPRESS = _member(partial(_ddp_comm_hook_wrapper, comm_hook=default.bf16_compress_hook))
    POWER_SGD = _member(
        partial(
            _powerSGD_comm_hook_wrapper,
            comm_hook=powerSGD.powerSGD_hook,
            matrix_approximation_rank=1,
        )
    )
    POWER_SGD_RANK2 = _member(
        partial(
            _powerSGD_comm_hook_wrapper,
            comm_hook=powerSGD.powerSGD_hook,
            matrix_approximation_rank=2,
        )
    )


def register_ddp_comm_hook(comm_hook_type: DDPCommHookType, model, state=None) -> None:
    """Register the hook named by ``comm_hook_type`` on the DDP ``model``."""
    comm_hook_type.value(model=model, state=state)
