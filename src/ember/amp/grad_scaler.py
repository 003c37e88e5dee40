"""``GradScaler``: loss scaling for float16 training, with the skip-and-back-off schedule.

The loss is multiplied by a scale before backward so that small float16 gradients do not
flush to zero; ``unscale_`` divides the gradients back and notes whether any is inf/NaN;
``step`` skips the optimizer when one was; ``update`` halves the scale after a skipped step and
doubles it after ``growth_interval`` clean ones.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

import numpy as _np

from .. import _backend
from .._tensor import Tensor


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


_FIX = (
    "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the "
    "iteration."
)


class GradScaler:
    """Scale losses and unscale gradients for mixed-precision training.

    Example::
        >>> scaler = ember.amp.GradScaler("cpu")
        >>> for x, y in loader:
        ...     optimizer.zero_grad()
        ...     with ember.autocast("cpu"):
        ...         loss = loss_fn(model(x), y)
        ...     scaler.scale(loss).backward()
        ...     scaler.step(optimizer)
        ...     scaler.update()
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            from .. import cuda

            if not cuda.is_available():
                warnings.warn(
                    "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                    stacklevel=2,
                )
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._scale: Tensor | None = None  # created on the first scale(), on the loss's device
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker: Tensor | None = None
        self._per_optimizer_states: dict = defaultdict(_refresh_per_optimizer_state)

    # --- scale -------------------------------------------------------------------------------

    def _lazy_init_scale_growth_tracker(self, device) -> None:
        from .. import _creation
        from .. import _dtype as dt

        self._scale = _creation.full((), self._init_scale, dtype=dt.float32, device=device)
        self._growth_tracker = _creation.full(
            (), self._init_growth_tracker, dtype=dt.int32, device=device
        )

    def _check_scale_growth_tracker(self, funcname: str) -> tuple:
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + _FIX)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + _FIX)
        return self._scale, self._growth_tracker

    def scale(self, outputs):
        """``outputs`` (a tensor, or lists/tuples/iterables of them) times the current scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)

        def apply_scale(value):
            if isinstance(value, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(value.device)
                return value * self._scale.to(device=value.device)
            if isinstance(value, (list, tuple)):
                return type(value)(apply_scale(v) for v in value)
            if hasattr(value, "__iter__") and not isinstance(value, (str, bytes)):
                return map(apply_scale, value)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    # --- unscale_ / step / update ------------------------------------------------------------

    def _unscale_grads_(self, optimizer, inv_scale: float, allow_fp16: bool) -> dict:
        """Multiply every gradient by ``inv_scale`` in place; {device: 1.0 if any is inf/NaN}."""
        found: dict = {}
        grads = []
        for group in optimizer.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if not allow_fp16 and grad._data.dtype == _np.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                grads.append(grad)
        for grad in grads:
            data = grad._data
            xp = _backend.array_module(data)
            device = str(grad.device)
            bad = not bool(xp.isfinite(data).all())
            found[device] = found.get(device, False) or bad
            # a new array rather than in place: a gradient may be a read-only broadcast view;
            # half types are multiplied in float32, as PyTorch's kernel does
            grad._data = (data.astype(_np.float32, copy=False) * _np.float32(inv_scale)).astype(
                data.dtype, copy=False
            )
            grad._vc[0] += 1
        from .. import _creation

        return {d: _creation.tensor(1.0 if bad else 0.0, device=d) for d, bad in found.items()}

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale (in place), once per step, noting
        whether any is inf/NaN; call it before clipping or inspecting gradients."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in float64, rounded to float32, as PyTorch computes it
        inv_scale = float(_np.float32(1.0 / float(self._scale.item())))
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state: dict, *args, **kwargs):
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done) and run ``optimizer.step`` unless a gradient is inf/NaN.

        Returns what ``optimizer.step`` returned, or None when the step was skipped.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Set the scale for the next iteration: ``new_scale`` if given, otherwise back off
        after an inf/NaN and grow after ``growth_interval`` clean steps in a row."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale._data[...] = new_scale
            else:
                reason = (
                    "new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                    "torch.FloatTensor with requires_grad=False."
                )
                if not isinstance(new_scale, Tensor) or new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                scale._data[...] = new_scale.to(device=scale.device)._data.reshape(())
        else:
            found_infs = [
                found_inf.item()
                for state in self._per_optimizer_states.values()
                for found_inf in state["found_inf_per_device"].values()
            ]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            _update_scale_(scale, tracker, sum(found_infs), self)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # --- accessors ---------------------------------------------------------------------------

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker.item())

    def get_init_scale(self) -> float:
        return self._init_scale

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker ({} when
        disabled), PyTorch's keys."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled "
                "instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale._data[...] = state_dict["scale"]
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker._data[...] = state_dict["_growth_tracker"]

    def _found_inf_per_device(self, optimizer) -> dict:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]


def _update_scale_(scale: Tensor, tracker: Tensor, found_inf: float, scaler: GradScaler) -> None:
    """Back off after an inf/NaN; grow after ``growth_interval`` clean steps (float32 scale)."""
    current = float(scale._data)
    if found_inf:
        scale._data[...] = current * scaler._backoff_factor
        tracker._data[...] = 0
        return
    successful = int(tracker._data) + 1
    if successful == scaler._growth_interval:
        grown = _np.float32(current * scaler._growth_factor)
        if _np.isfinite(grown):
            scale._data[...] = grown
        tracker._data[...] = 0
    else:
        tracker._data[...] = successful
