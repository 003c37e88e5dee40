"""Stochastic weight averaging and EMA of models: AveragedModel, SWALR, update_bn."""

from __future__ import annotations

import itertools
import math
from copy import deepcopy

from .. import _creation, _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from .lr_scheduler.base import LRScheduler, _format_param

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )


def get_ema_multi_avg_fn(decay: float = 0.999):
    """In-place EMA over lists of tensors: ``ema = decay·ema + (1 - decay)·current``."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_params, current_params, num_averaged) -> None:
        for ema, current in zip(ema_params, current_params):
            if ema.is_floating_point() or ema.is_complex():
                ema.lerp_(current, 1 - decay)
            else:
                ema.copy_(ema * decay + current * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """In-place running mean over lists of tensors: ``avg += (current - avg) / (n + 1)``."""

    @no_grad()
    def swa_update(averaged_params, current_params, num_averaged) -> None:
        n = float(num_averaged)
        for averaged, current in zip(averaged_params, current_params):
            if averaged.is_floating_point() or averaged.is_complex():
                averaged.lerp_(current, 1 / (n + 1))
            else:
                averaged.add_(current - averaged, alpha=1.0 / (n + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """EMA of one tensor, returned (not in place)."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """Running mean of one tensor, returned (not in place)."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and, with ``use_buffers``, buffers) hold the
    running average (SWA, default) or the EMA (``multi_avg_fn=get_ema_multi_avg_fn()``) of
    the weights passed to ``update_parameters``.

    Example::

        >>> swa_model = AveragedModel(model)
        >>> for epoch in range(10):
        ...     train(model)
        ...     swa_model.update_parameters(model)
    """

    def __init__(
        self,
        model: Module,
        device=None,
        avg_fn=None,
        multi_avg_fn=None,
        use_buffers: bool = False,
    ):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _creation.tensor(0, dtype=_dtype.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average (the first call copies them)."""
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        averaged_list, current_list = [], []
        first = int(self.n_averaged.item()) == 0
        for averaged, current in zip(mine, theirs):
            current = current.detach().to(averaged.device)
            averaged_list.append(averaged.detach())
            current_list.append(current)
            if first:
                averaged.detach().copy_(current)
        if not first:
            on_cuda = bool(averaged_list) and averaged_list[0].device.type == "cuda"
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(averaged_list, current_list, self.n_averaged)
            elif self.avg_fn is None and on_cuda:
                get_swa_multi_avg_fn()(averaged_list, current_list, self.n_averaged)
            else:
                # PyTorch's CPU path: one tensor at a time, which also truncates integer
                # buffers back to their dtype
                avg_fn = self.avg_fn or get_swa_avg_fn()
                for averaged, current in zip(averaged_list, current_list):
                    averaged.copy_(avg_fn(averaged, current, self.n_averaged))
        if not self.use_buffers:
            # buffers (e.g. batch-norm statistics) are copied, not averaged
            for mine_b, theirs_b in zip(self.module.buffers(), model.buffers()):
                mine_b.detach().copy_(theirs_b.detach().to(mine_b.device))
        self.n_averaged += 1


def _reset_running_stats(module) -> None:
    reset = getattr(module, "reset_running_stats", None)
    if reset is not None:
        reset()
        return
    if module.running_mean is not None:
        module.running_mean.zero_()
        module.running_var.fill_(1)
    if getattr(module, "num_batches_tracked", None) is not None:
        module.num_batches_tracked.zero_()


@no_grad()
def update_bn(loader, model: Module, device=None) -> None:
    """Recompute every batch-norm's running statistics as the plain mean over ``loader``
    (one pass, in training mode); inputs may be tensors or (input, ...) tuples.

    Example::

        >>> update_bn(train_loader, swa_model)
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            _reset_running_stats(module)
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None  # cumulative average over the loader's batches
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's rate to ``swa_lr`` over ``anneal_epochs`` (cos or linear), then
    hold it.

    Example::

        >>> swa_scheduler = SWALR(optimizer, swa_lr=0.05, anneal_epochs=5)
    """

    def __init__(
        self,
        optimizer,
        swa_lr,
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ):
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t: float) -> float:
        if self._anneal_strategy == "cos":
            return (1 - math.cos(math.pi * t)) / 2
        return t

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        # invert lr = alpha·swa_lr + (1 - alpha)·lr0 for lr0
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        self._warn_if_called_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        groups = self.optimizer.param_groups
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]
