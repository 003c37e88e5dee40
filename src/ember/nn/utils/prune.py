"""Pruning: zero out entries or channels of a parameter through a mask, as ``torch.nn.utils.prune``.

Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, stores the binary mask as the
buffer ``<name>_mask`` and registers the pruning method as a forward pre-hook that recomputes
``module.<name> = <name>_mask * <name>_orig`` before every call, so gradients reach
``<name>_orig`` masked. Pruning the same tensor again composes the masks through a
:class:`PruningContainer`; :func:`remove` makes the pruning permanent.

Selections by magnitude match torch's CPU ``topk`` exactly, ties included (see
:func:`_topk_indices`), so the same weights give the same masks.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import numpy as np

from ..._creation import ones_like, rand, rand_like, tensor, zeros_like
from ..._tensor import Tensor
from ...ops.indexing import kthvalue
from ...ops.reduction import norm
from ..modules.module import Module
from .convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod",
    "PruningContainer",
    "Identity",
    "RandomUnstructured",
    "L1Unstructured",
    "RandomStructured",
    "LnStructured",
    "CustomFromMask",
    "identity",
    "random_unstructured",
    "l1_unstructured",
    "random_structured",
    "ln_structured",
    "global_unstructured",
    "custom_from_mask",
    "remove",
    "is_pruned",
]


class BasePruningMethod(ABC):
    """Base class of pruning methods: subclasses define ``compute_mask`` and ``PRUNING_TYPE``.

    ``PRUNING_TYPE`` says which entries a further pruning of an already pruned tensor acts on:
    ``"unstructured"`` (the unpruned entries), ``"structured"`` (the channels along ``self.dim``
    that are not entirely pruned) or ``"global"`` (all entries).

    Example::
        >>> class EveryOther(prune.BasePruningMethod):
        ...     PRUNING_TYPE = "unstructured"
        ...     def compute_mask(self, t, default_mask):
        ...         mask = default_mask.clone()
        ...         mask.view(-1)[::2] = 0
        ...         return mask
        >>> m = EveryOther.apply(ember.nn.Linear(3, 2), "weight")
    """

    PRUNING_TYPE: str
    # set by ``apply``: the name of the parameter this method prunes
    _tensor_name: str | None = None

    def __call__(self, module: Module, inputs) -> None:
        """Forward pre-hook: recompute ``module.<name>`` from ``<name>_orig`` and the mask."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for importance scores ``t``, on top of ``default_mask`` (same shape)."""

    def apply_mask(self, module: Module) -> Tensor:
        """``<name>_mask * <name>_orig``: the pruned tensor (differentiable in ``_orig``)."""
        if self._tensor_name is None:
            raise AssertionError(
                f"{type(self).__name__} has not been applied to a module: call apply() before "
                f"apply_mask() on {module}"
            )
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(
        cls, module: Module, name: str, *args, importance_scores: Tensor | None = None, **kwargs
    ) -> BasePruningMethod:
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` and install the reparametrisation.

        A method already pruning ``name`` is combined with the new one in a
        :class:`PruningContainer`. ``importance_scores`` (shape of the parameter) rank the
        entries instead of the parameter's values. Returns the hook now attached to ``module``.
        """
        method = _combine_with_existing(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        importance_scores = _scores_or_values(
            importance_scores, orig, f"parameter '{name}'", f" in {module}"
        )
        first_pruning = not isinstance(method, PruningContainer)
        if first_pruning:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first_pruning:  # give the parameter its name back
                module.register_parameter(name, module._parameters.pop(name + "_orig"))
            raise
        return method

    def prune(
        self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None
    ) -> Tensor:
        """``t`` times the mask this method computes from ``importance_scores`` (default ``t``)."""
        importance_scores = _scores_or_values(importance_scores, t, "t")
        if default_mask is None:
            default_mask = ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``module.<name>`` becomes a Parameter holding the pruned
        values; ``<name>_orig`` and ``<name>_mask`` are deleted (the forward pre-hook is not)."""
        if self._tensor_name is None:
            raise AssertionError(
                f"{type(self).__name__} has not been applied to a module: nothing to remove "
                f"from {module}"
            )
        name = self._tensor_name
        pruned = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters.pop(name + "_orig")
        orig.data = pruned.data  # same Parameter object: optimisers holding it stay valid
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


def _scores_or_values(scores: Tensor | None, values: Tensor, what: str, where: str = "") -> Tensor:
    """``scores`` to rank ``values`` by, or ``values`` themselves when None; scores of another
    shape raise (``what`` names the values in the message, ``where`` follows it)."""
    if scores is None:
        return values
    if scores.shape != values.shape:
        raise AssertionError(
            f"importance_scores of shape {tuple(scores.shape)} do not match "
            f"{what} of shape {tuple(values.shape)}{where}"
        )
    return scores


def _combine_with_existing(cls, module: Module, name: str, *args, **kwargs) -> BasePruningMethod:
    """The hook for the new pruning of ``name``: ``cls(...)`` alone, or a container holding the
    methods already pruning ``name`` followed by ``cls(...)``. The old hook is unregistered."""
    old_keys = [
        key
        for key, hook in module._forward_pre_hooks.items()
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name
    ]
    if len(old_keys) > 1:
        raise AssertionError(
            f"{len(old_keys)} pruning hooks act on '{name}' of {module}: combine them in one "
            "PruningContainer"
        )
    old_method = module._forward_pre_hooks.pop(old_keys[0]) if old_keys else None
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if old_method is None:
        return method
    if not isinstance(old_method, PruningContainer):
        old_method = PruningContainer(old_method)
    old_method.add_pruning_method(method)
    return old_method


class PruningContainer(BasePruningMethod):
    """The sequence of pruning methods applied to one tensor, in order (iterative pruning).

    Its mask is the last method's mask computed on the part of the tensor that earlier methods
    left: the unpruned entries (``"unstructured"``), the channels not entirely pruned
    (``"structured"``) or everything (``"global"``).

    Example::
        >>> m = prune.l1_unstructured(ember.nn.Linear(4, 3), "weight", amount=2)
        >>> m = prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
        >>> [type(h).__name__ for h in m._forward_pre_hooks.values()]
        ['PruningContainer']
    """

    def __init__(self, *methods: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if methods and methods[0] is not None:
            self._tensor_name = methods[0]._tensor_name
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append ``method``, which must prune the same tensor as the container."""
        if method is None:  # torch keeps None entries; they are never the last one applied
            self._pruning_methods += (method,)
            return
        if not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if self._tensor_name is None and not self._pruning_methods:
            self._tensor_name = method._tensor_name
        if self._tensor_name != method._tensor_name:
            raise ValueError(
                f"PruningContainer {self} holds methods pruning '{self._tensor_name}'; "
                f"cannot add one pruning '{method._tensor_name}'"
            )
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the last method's mask written over the part it may prune."""
        method = self._pruning_methods[-1]
        kind = getattr(method, "PRUNING_TYPE", None)
        new_mask = default_mask.to(dtype=t.dtype)
        if kind == "unstructured":
            part = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError(
                    f'{type(method).__name__} has PRUNING_TYPE "structured" but no attribute '
                    "`dim` naming the channel dimension"
                )
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(
                    f"dim {method.dim} is out of bounds for a tensor with {n_dims} dimensions"
                )
            # channels along dim that earlier pruning has not zeroed out entirely
            live_channels = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            part = (slice(None),) * dim + (live_channels,)
        elif kind == "global":
            part = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial_mask = method.compute_mask(t[part], default_mask=default_mask[part])
        new_mask[part] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: installs the reparametrisation with a mask of ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> Identity:
        return super().apply(module, name)


class _UnstructuredPruning(BasePruningMethod):
    """Prunes ``amount`` (count, or fraction if float) of the unpruned entries: those that
    ``_entries_to_prune`` picks."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _validate_amount(amount)
        self.amount = amount

    def _entries_to_prune(self, t: Tensor, n_prune: int) -> np.ndarray:
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        n_prune = _count_to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if n_prune:
            _zero_at(mask.view(-1), self._entries_to_prune(t, n_prune))
        return mask


class RandomUnstructured(_UnstructuredPruning):
    """Prunes ``amount`` (count, or fraction if float) of the unpruned entries at random."""

    def _entries_to_prune(self, t: Tensor, n_prune: int) -> np.ndarray:
        scores = _host_values(rand_like(t))
        return _topk_indices(scores, n_prune, largest=True)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float) -> RandomUnstructured:
        return super().apply(module, name, amount=amount)


class L1Unstructured(_UnstructuredPruning):
    """Prunes the ``amount`` (count, or fraction if float) unpruned entries of smallest |x|."""

    def _entries_to_prune(self, t: Tensor, n_prune: int) -> np.ndarray:
        magnitudes = np.abs(_host_values(t))
        return _topk_indices(magnitudes, n_prune, largest=False)

    @classmethod
    def apply(
        cls,
        module: Module,
        name: str,
        amount: int | float,
        importance_scores: Tensor | None = None,
    ) -> L1Unstructured:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` (count, or fraction if float) channels along ``dim`` at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _validate_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        n_channels = _channel_count(t, self.dim)
        n_prune = _count_to_prune(self.amount, n_channels)
        if n_prune == 0:
            return default_mask
        scores = rand(n_channels)
        kept = scores > kthvalue(scores, n_prune).values  # the n_prune lowest scores go
        return _channel_mask(t, self.dim, kept, default_mask)

    @classmethod
    def apply(
        cls, module: Module, name: str, amount: int | float, dim: int = -1
    ) -> RandomStructured:
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` (count, or fraction if float) channels along ``dim`` of smallest
    L\\ ``n`` norm (``n`` as ``p`` of :func:`ember.norm`: a number, ``inf``, ``'fro'``, ...)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, n, dim: int = -1) -> None:
        _validate_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        n_channels = _channel_count(t, self.dim)
        n_prune = _count_to_prune(self.amount, n_channels)
        if n_prune == 0:
            return default_mask
        dim = self.dim % t.dim()
        channel_norms = norm(t.detach(), p=self.n, dim=[d for d in range(t.dim()) if d != dim])
        kept = _topk_indices(_host_values(channel_norms), n_channels - n_prune, largest=True)
        return _channel_mask(t, dim, tensor(kept, device=t.device), default_mask)

    @classmethod
    def apply(
        cls,
        module: Module,
        name: str,
        amount: int | float,
        n,
        dim: int,
        importance_scores: Tensor | None = None,
    ) -> LnStructured:
        return super().apply(
            module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores
        )


class CustomFromMask(BasePruningMethod):
    """Prunes where the given ``mask`` (shape of the parameter) is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(
                f"mask of shape {tuple(self.mask.shape)} does not match the tensor's mask of "
                f"shape {tuple(default_mask.shape)}"
            )
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> CustomFromMask:
        return super().apply(module, name, mask=mask)


# --------------------------------------------------------------------------------------------
# The functional interface: prune in place and return the module.
# --------------------------------------------------------------------------------------------
def identity(module: Module, name: str) -> Module:
    """Install the pruning reparametrisation of ``module.<name>`` with a mask of ones.

    Example::
        >>> m = prune.identity(ember.nn.Linear(2, 3), "bias")
        >>> m.bias_mask
        tensor([1., 1., 1.])
    """
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    """Prune ``amount`` unpruned entries of ``module.<name>`` chosen at random (a count if int,
    a fraction of the entries if float).

    Example::
        >>> m = prune.random_unstructured(ember.nn.Linear(2, 3), "weight", amount=1)
        >>> int((m.weight_mask == 0).sum())
        1
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(
    module: Module, name: str, amount: int | float, importance_scores: Tensor | None = None
) -> Module:
    """Prune the ``amount`` unpruned entries of ``module.<name>`` with the smallest absolute
    value (of ``importance_scores`` when given).

    Example::
        >>> m = prune.l1_unstructured(ember.nn.Linear(2, 3), "weight", amount=0.2)
        >>> list(m.state_dict().keys())
        ['bias', 'weight_orig', 'weight_mask']
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    """Prune ``amount`` channels of ``module.<name>`` along ``dim`` chosen at random.

    Example::
        >>> m = prune.random_structured(ember.nn.Linear(5, 3), "weight", amount=3, dim=1)
        >>> int((m.weight_mask.sum(0) == 0).sum())
        3
    """
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(
    module: Module,
    name: str,
    amount: int | float,
    n,
    dim: int,
    importance_scores: Tensor | None = None,
) -> Module:
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` with the smallest
    L\\ ``n`` norm (of ``importance_scores`` when given).

    Example::
        >>> m = prune.ln_structured(ember.nn.Conv2d(5, 3, 2), "weight", amount=0.3, n=2, dim=1)
        >>> int((m.weight_mask.sum((0, 2, 3)) == 0).sum())
        2
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(
    parameters: Iterable[tuple[Module, str]],
    pruning_method: type[BasePruningMethod],
    importance_scores: dict | None = None,
    **kwargs,
) -> None:
    """Prune the ``(module, name)`` pairs of ``parameters`` together: ``pruning_method``
    (an unstructured method class, built with ``**kwargs`` such as ``amount``) ranks all their
    entries at once. ``importance_scores`` maps ``(module, name)`` to scores for that tensor.

    Example::
        >>> net = ember.nn.Sequential(ember.nn.Linear(10, 4), ember.nn.Linear(4, 1))
        >>> prune.global_unstructured(
        ...     [(net[0], "weight"), (net[1], "weight")], prune.L1Unstructured, amount=10
        ... )
        >>> int((net[0].weight == 0).sum() + (net[1].weight == 0).sum())
        10
    """
    if not isinstance(parameters, Iterable):
        raise TypeError(
            f"global_unstructured(): parameters must be an iterable of (module, name) pairs, "
            f"got {type(parameters).__name__}"
        )
    parameters = list(parameters)  # walked three times below, and may be a generator
    if importance_scores is None:
        importance_scores = {}
    if not isinstance(importance_scores, dict):
        raise TypeError(
            "global_unstructured(): importance_scores must be a dict from (module, name) to a "
            f"tensor, got {type(importance_scores).__name__}"
        )
    all_scores = parameters_to_vector(
        [
            importance_scores.get((module, name), getattr(module, name))
            for module, name in parameters
        ]
    )
    all_masks = parameters_to_vector(
        [
            getattr(module, name + "_mask")
            if hasattr(module, name + "_mask")
            else ones_like(getattr(module, name))
            for module, name in parameters
        ]
    )
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'global_unstructured() supports only "unstructured" pruning methods; '
            f"{pruning_method} has PRUNING_TYPE {method.PRUNING_TYPE!r}"
        )
    # the container prunes among the entries that are still unpruned, as for one tensor
    method._tensor_name = "global"
    final_mask = PruningContainer(method).compute_mask(all_scores, all_masks)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        count = param.numel()
        custom_from_mask(module, name, mask=final_mask[start : start + count].view_as(param))
        start += count


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` where ``mask`` is 0.

    Example::
        >>> m = prune.custom_from_mask(ember.nn.Linear(5, 3), "bias", ember.tensor([0, 1, 0]))
        >>> m.bias_mask
        tensor([0., 1., 0.])
    """
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent and drop its hook, ``<name>_orig`` and
    ``<name>_mask``; the zeros stay.

    Example::
        >>> m = prune.remove(prune.l1_unstructured(ember.nn.Linear(5, 3), "weight", 4), "weight")
        >>> list(m.state_dict().keys())
        ['bias', 'weight']
    """
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(
        f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed"
    )


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any submodule carries a pruning hook.

    Example::
        >>> m = ember.nn.Linear(5, 7)
        >>> prune.is_pruned(prune.identity(m, "weight"))
        True
    """
    return any(
        isinstance(hook, BasePruningMethod)
        for _, sub in module.named_modules()
        for hook in sub._forward_pre_hooks.values()
    )


# --------------------------------------------------------------------------------------------
# Validation and counting
# --------------------------------------------------------------------------------------------
def _validate_amount(amount) -> None:
    """``amount`` is a non-negative int (a count) or a float in [0, 1] (a fraction)."""
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if isinstance(amount, numbers.Integral):
        if amount < 0:
            raise ValueError(
                f"amount={amount} should either be a float in the range [0, 1] or a "
                "non-negative integer"
            )
    elif not 0.0 <= float(amount) <= 1.0:
        raise ValueError(
            f"amount={amount} should either be a float in the range [0, 1] or a non-negative "
            "integer"
        )


def _count_to_prune(amount: int | float, size: int) -> int:
    """How many of ``size`` units ``amount`` prunes (a fraction rounds half to even, as torch)."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(
                f"amount={amount} should be smaller than the number of parameters to prune={size}"
            )
        return int(amount)
    return round(amount * size)


def _channel_count(t: Tensor, dim: int) -> int:
    """The number of channels along ``dim``, checking that ``t`` has channels at all."""
    if t.dim() <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. Found tensor "
            f"of shape {tuple(t.shape)} with {t.dim()} dims"
        )
    if not -t.dim() <= dim < t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")
    return t.shape[dim]


def _channel_mask(t: Tensor, dim: int, channels, default_mask: Tensor) -> Tensor:
    """A structured pruning's mask: ones on ``channels`` (bool or int) along ``dim`` of ``t``,
    zeros on the other channels, times ``default_mask``."""
    mask = zeros_like(t)
    mask[(slice(None),) * (dim % t.dim()) + (channels,)] = 1
    mask *= default_mask.to(dtype=mask.dtype)
    return mask


def _host_values(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy()).reshape(-1)


def _zero_at(flat_mask: Tensor, indices: np.ndarray) -> None:
    flat_mask[tensor(indices, device=flat_mask.device)] = 0


# --------------------------------------------------------------------------------------------
# torch's CPU topk, for which k entries it selects among ties
#
# torch fills a vector of (value, index) pairs and runs std::partial_sort when k * 64 <= n,
# std::nth_element otherwise (libstdc++). Which of several equal values end up among the k
# depends on those algorithms' swaps, so when the k-th value is tied we replay them; otherwise
# the selection is unique and NumPy finds it directly.
# --------------------------------------------------------------------------------------------
def _topk_indices(values: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """The flat indices that ``torch.topk(values, k, largest=largest)`` returns on CPU, as a set
    (ascending). NaN counts as larger than every number, as in torch."""
    n = values.size
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    rank = _order_ranks(values, largest)  # rank[i] < rank[j]: entry i is selected first
    kth = np.partition(rank, k - 1)[k - 1]
    if (rank <= kth).sum() == k:  # no tie straddles the cut: the selection is unique
        return np.flatnonzero(rank <= kth)
    order = list(zip(rank.tolist(), range(n)))
    if k * 64 <= n:
        _heap_select(order, 0, k, n)
    else:
        _introselect(order, 0, k - 1, n, 2 * (n.bit_length() - 1))
    return np.sort(np.fromiter((index for _, index in order[:k]), dtype=np.int64, count=k))


def _order_ranks(values: np.ndarray, largest: bool) -> np.ndarray:
    """Dense integer ranks in selection order: equal values share a rank, NaNs come last for
    ``largest=False`` and first for ``largest=True`` (torch's comparators)."""
    values = values.astype(np.float64)
    nan = np.isnan(values)
    distinct = np.unique(values[~nan])
    rank = np.searchsorted(distinct, values).astype(np.int64)
    if largest:
        rank = len(distinct) - 1 - rank
        rank[nan] = -1
    else:
        rank[nan] = len(distinct)
    return rank


# Replays of libstdc++'s selection algorithms on a list of (rank, index) pairs, comparing ranks
# with "<" only (its comparator). Positions are absolute list indices.
def _heap_select(items: list, first: int, middle: int, last: int) -> None:
    """std::__heap_select: items[first:middle] end up holding the smallest of items[first:last]."""
    _make_heap(items, first, middle)
    for i in range(middle, last):
        if items[i][0] < items[first][0]:
            value = items[i]
            items[i] = items[first]
            _adjust_heap(items, first, 0, middle - first, value)


def _make_heap(items: list, first: int, last: int) -> None:
    length = last - first
    if length < 2:
        return
    for parent in range((length - 2) // 2, -1, -1):
        _adjust_heap(items, first, parent, length, items[first + parent])


def _adjust_heap(items: list, first: int, hole: int, length: int, value: tuple) -> None:
    """std::__adjust_heap: sift the hole down to a leaf, then push ``value`` up from there."""
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if items[first + child][0] < items[first + child - 1][0]:
            child -= 1
        items[first + hole] = items[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        items[first + hole] = items[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and items[first + parent][0] < value[0]:
        items[first + hole] = items[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    items[first + hole] = value


def _introselect(items: list, first: int, nth: int, last: int, depth_limit: int) -> None:
    """std::__introselect: quickselect on median-of-three pivots, heap select when too deep."""
    while last - first > 3:
        if depth_limit == 0:
            _heap_select(items, first, nth + 1, last)
            items[first], items[nth] = items[nth], items[first]
            return
        depth_limit -= 1
        cut = _partition_around_median(items, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(items, first, last)


def _partition_around_median(items: list, first: int, last: int) -> int:
    """std::__unguarded_partition_pivot: median of three to ``first``, then Hoare partition."""
    a, b, c = first + 1, first + (last - first) // 2, last - 1
    ka, kb, kc = items[a][0], items[b][0], items[c][0]
    if ka < kb:
        median = b if kb < kc else (c if ka < kc else a)
    else:
        median = a if ka < kc else (c if kb < kc else b)
    items[first], items[median] = items[median], items[first]
    pivot = items[first][0]
    lo, hi = first + 1, last
    while True:
        while items[lo][0] < pivot:
            lo += 1
        hi -= 1
        while pivot < items[hi][0]:
            hi -= 1
        if not lo < hi:
            return lo
        items[lo], items[hi] = items[hi], items[lo]
        lo += 1


def _insertion_sort(items: list, first: int, last: int) -> None:
    for i in range(first + 1, last):
        value = items[i]
        if value[0] < items[first][0]:
            items[first + 1 : i + 1] = items[first:i]
            items[first] = value
        else:
            j = i
            while value[0] < items[j - 1][0]:
                items[j] = items[j - 1]
                j -= 1
            items[j] = value
