"""swap_in_optimizer_params_and_state: run an optimizer on other parameters and state (for
tracing a step, or stepping a copy) without disturbing the live ones."""

from __future__ import annotations

import contextlib
from collections import defaultdict

from .._tensor import Tensor

_NAME = "swap_in_optimizer_params_and_state"


def _check_state(state) -> dict:
    if not isinstance(state, dict):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed "
            f"parameter ids to per-param state dicts, got {type(state).__name__}."
        )
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids."
        )
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(
            f"{_NAME} requires per-parameter optimizer state entries to be dictionaries."
        )
    return state


def _check_group(index: int, live: dict, incoming) -> list:
    if not isinstance(incoming, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = incoming.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] entries "
            "keyed by packed parameter ids."
        )
    if len(live["params"]) != len(ids):
        raise RuntimeError(
            f"swapin_optim_state param group {index} has a different number of params than the "
            "live optimizer param group."
        )
    only_incoming = [k for k in incoming if k not in live]
    only_live = [k for k in live if k not in incoming]
    if only_incoming or only_live:
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match "
            f"the live optimizer group keys for group {index}. Keys only in swap-in: "
            f"{only_incoming}. Keys only in live: {only_live}."
        )
    return ids


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(
    optimizer, swapin_parameters: dict, swapin_optim_state: dict
):
    """Within the block, ``optimizer`` steps ``swapin_parameters`` (a dict of tensors in the
    order of the optimizer's parameters) with the state and group options of
    ``swapin_optim_state`` (shaped like ``optimizer.state_dict()``); in-place updates reach
    those tensors, and the live parameters, state and options come back on exit.

    Example::

        >>> copies = {n: p.detach().clone() for n, p in model.named_parameters()}
        >>> with swap_in_optimizer_params_and_state(opt, copies, copy.deepcopy(opt.state_dict())):
        ...     opt.step()  # updates the copies, not the model
    """
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _check_state(swapin_optim_state.get("state"))
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of param-group "
            f"dicts, got {type(groups).__name__}."
        )
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError(
            "swapin_optim_state has a different number of parameter groups than the live optimizer."
        )
    tensors = list(swapin_parameters.values())
    plan, offset, seen = [], 0, set()
    for index, (live, incoming) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _check_group(index, live, incoming)
        seen.update(ids)
        if offset + len(ids) > len(tensors):
            raise RuntimeError(
                f"{_NAME} requires the explicit parameter state to match optimizer.param_groups "
                "ordering."
            )
        plan.append((live, incoming, tensors[offset : offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter "
            f"ids from param_groups[*]['params']; got extra keys {extra!r}."
        )

    live_state = optimizer.state
    # shallow copies keep the live ``params`` lists themselves, which callers may hold
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = defaultdict(dict)
        for live, incoming, params in plan:
            live["params"] = params
            live.update({k: v for k, v in incoming.items() if k != "params"})
            for p, i in zip(params, incoming["params"]):
                # a shallow copy: in-place tensor updates reach the caller's state dict,
                # new entries stay local to the block
                swapped[p] = dict(state.get(i, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = live_state
