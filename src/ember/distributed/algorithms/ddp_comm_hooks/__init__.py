"""DDP communication hooks: ``default_hooks`` (allreduce, fp16/bf16 compression).

``DDPCommHookType.ALLREDUCE.value(model=ddp, state=process_group)`` registers a hook by name,
as torch's ``register_ddp_comm_hook(DDPCommHookType.FP16_COMPRESS, ddp)`` does.
"""

from __future__ import annotations

import enum
from functools import partial

from . import default_hooks
from . import default_hooks as default

__all__ = ["DDPCommHookType", "default", "default_hooks", "register_ddp_comm_hook"]


# partials become members by themselves before Python 3.11; from 3.13 they must be marked
_member = getattr(enum, "member", lambda value: value)


def _ddp_comm_hook_wrapper(comm_hook, model, state) -> None:
    model.register_comm_hook(state, comm_hook)


class DDPCommHookType(enum.Enum):
    """The hooks of ``ddp_comm_hooks`` by name; ``.value(model=..., state=...)`` registers one."""

    ALLREDUCE = _member(partial(_ddp_comm_hook_wrapper, comm_hook=default.allreduce_hook))
    FP16_COMPRESS = _member(partial(_ddp_comm_hook_wrapper, comm_hook=default.fp16_compress_hook))
    BF16_COMPRESS = _member(partial(_ddp_comm_hook_wrapper, comm_hook=default.bf16_compress_hook))


def register_ddp_comm_hook(comm_hook_type: DDPCommHookType, model, state=None) -> None:
    """Register the hook named by ``comm_hook_type`` on the DDP ``model``."""
    comm_hook_type.value(model=model, state=state)
