"""``Fuzzer``: random benchmark configurations: parameters drawn from distributions, and
tensors of the drawn sizes, layouts and strides.

All choices come from one ``numpy.random.RandomState(seed)``, the generator PyTorch's Fuzzer
uses, and the same draw seeds ember's generator; ember's ``rand`` / ``randint`` streams are
PyTorch's, so a seed gives the same parameters and the same tensor values as under PyTorch.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import ember

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """A named parameter and the distribution it is drawn from.

    ``distribution`` is ``"loguniform"`` (an int between ``minval`` and ``maxval``, uniform in
    log space), ``"uniform"`` (integers if both bounds are ints, else floats), or a dict of
    ``{value: probability}`` (probabilities summing to one, no bounds); a value may be a
    ``ParameterAlias``. A ``strict`` parameter keeps its first draw while the Fuzzer redraws the
    others to satisfy constraints.

    Example::
        >>> import numpy as np
        >>> p = FuzzedParameter("n", minval=1, maxval=6, distribution="uniform")
        >>> 1 <= p.sample(np.random.RandomState(0)) <= 6
        True
    """

    def __init__(
        self,
        name: str,
        minval: int | float | None = None,
        maxval: int | float | None = None,
        distribution: str | dict[Any, float] | None = None,
        strict: bool = False,
    ) -> None:
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self) -> str:
        return self._name

    def sample(self, state: np.random.RandomState) -> Any:
        if self._distribution == "loguniform":
            return self._loguniform(state)
        if self._distribution == "uniform":
            return self._uniform(state)
        return self._custom_distribution(state)

    def _check_distribution(self, distribution: Any) -> Any:
        # PyTorch 2.13 inverts the normalisation test and so rejects every dict distribution;
        # this checks what its docstring states: non-negative probabilities summing to one.
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(
                    f"Unknown distribution: {distribution} (expected one of {_DISTRIBUTIONS} or "
                    "a dict of {value: probability})"
                )
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError(f"Probabilities cannot be negative: {distribution}")
        total = sum(distribution.values())
        if abs(total - 1) > 1e-5:
            raise AssertionError(f"Distribution is not normalized: probabilities sum to {total}")
        if self._minval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' must be None")
        if self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        return distribution

    def _loguniform(self, state: np.random.RandomState) -> int:
        low = np.log2(self._minval) if self._minval is not None else None
        high = np.log2(self._maxval) if self._maxval is not None else None
        value = int(2 ** state.uniform(low=low, high=high))
        if self._minval is not None and value < self._minval:
            return self._minval
        if self._maxval is not None and value > self._maxval:
            return self._maxval
        return value

    def _uniform(self, state: np.random.RandomState) -> int | float:
        if isinstance(self._minval, int) and isinstance(self._maxval, int):
            return int(state.randint(low=self._minval, high=self._maxval + 1))
        return state.uniform(low=self._minval, high=self._maxval)

    def _custom_distribution(self, state: np.random.RandomState) -> Any:
        # choose an index, not a key: NumPy would turn the keys into NumPy scalars
        keys = list(self._distribution)
        index = state.choice(np.arange(len(keys)), p=tuple(self._distribution.values()))
        return keys[index]


class ParameterAlias:
    """A parameter value that stands for another parameter's value.

    Example (``y_len`` is 1 or equal to ``x_len``, so ``x + y`` sometimes broadcasts)::
        >>> fuzzer = Fuzzer(
        ...     parameters=[
        ...         FuzzedParameter("x_len", 4, 16, distribution="uniform"),
        ...         FuzzedParameter("y_len", distribution={1: 0.5, ParameterAlias("x_len"): 0.5}),
        ...     ],
        ...     tensors=[FuzzedTensor("x", size=("x_len",)), FuzzedTensor("y", size=("y_len",))],
        ...     seed=0)
        >>> _, _, params = next(fuzzer.take(1))
        >>> params["y_len"] in (1, params["x_len"])
        True
    """

    def __init__(self, alias_to: str) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def dtype_size(dtype: ember.dtype) -> int:
    """Bytes per element of ``dtype``."""
    if dtype == ember.bool:
        return 1
    if dtype.is_floating_point or dtype.is_complex:
        return ember.finfo(dtype).bits // 8
    return ember.iinfo(dtype).bits // 8


def prod(values, base: int = 1) -> int:
    """Product in Python ints: a NumPy product of large sizes can overflow to a negative."""
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


class FuzzedTensor:
    """A tensor to generate from the drawn parameters.

    ``size`` (and ``steps``) hold ints or parameter names. With ``steps`` a larger tensor is
    made and sliced with those steps (size (4, 8), steps (1, 4): ``t[:, ::4]`` of a (4, 32)
    tensor). With probability ``1 - probability_contiguous`` the memory order is permuted.
    ``dim_parameter`` names a parameter that truncates (or pads with 1s) the size to that many
    dims. ``min_elements``, ``max_elements`` and ``max_allocation_bytes`` reject parameter
    sets. ``tensor_constructor(size=..., dtype=..., **params)`` replaces the default
    ``rand`` (floating) / ``randint(1, 127)`` (integer) allocation.

    Example::
        >>> t = FuzzedTensor("x", size=(4, 8), steps=(1, 2), probability_contiguous=1.0)
        >>> fuzzer = Fuzzer(parameters=[], tensors=[t], seed=0)
        >>> tensors, properties, _ = next(fuzzer.take(1))
        >>> tuple(tensors["x"].shape), properties["x"]["steps"]
        ((4, 8), (1, 2))
    """

    def __init__(
        self,
        name: str,
        size: tuple[str | int, ...],
        steps: tuple[str | int, ...] | None = None,
        probability_contiguous: float = 0.5,
        min_elements: int | None = None,
        max_elements: int | None = None,
        max_allocation_bytes: int | None = None,
        dim_parameter: str | None = None,
        roll_parameter: str | None = None,
        dtype: ember.dtype = ember.float32,
        cuda: bool = False,
        tensor_constructor: Callable | None = None,
    ) -> None:
        self._name = name
        self._size = size
        self._steps = steps
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = dtype
        self._cuda = cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self) -> str:
        return self._name

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs) -> ember.Tensor:
        if dtype.is_floating_point or dtype.is_complex:
            return ember.rand(size, dtype=dtype, device="cpu")
        return ember.randint(1, 127, size, dtype=dtype, device="cpu")

    def _make_tensor(self, params: dict[str, Any], state: np.random.RandomState):
        size, steps, allocation_size = self._get_size_and_steps(params)
        constructor = self._tensor_constructor or self.default_tensor_constructor
        raw_tensor = constructor(size=allocation_size, dtype=self._dtype, **params)
        if self._cuda:
            raw_tensor = raw_tensor.cuda()

        # a non-contiguous layout: copy in a permuted order, then view back in the original
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw_tensor.dim())
            raw_tensor = raw_tensor.permute(tuple(order)).contiguous()
            raw_tensor = raw_tensor.permute(tuple(np.argsort(order)))

        tensor = raw_tensor[tuple(slice(0, n * step, step) for n, step in zip(size, steps))]
        properties = {
            "numel": int(tensor.numel()),
            "order": order,
            "steps": steps,
            "is_contiguous": tensor.is_contiguous(),
            "dtype": str(self._dtype),
        }
        return tensor, properties

    def _get_size_and_steps(self, params: dict[str, Any]):
        dim = params[self._dim_parameter] if self._dim_parameter is not None else len(self._size)

        def resolve(values: tuple) -> tuple:
            values = tuple(params.get(v, v) for v in values)[:dim]
            return values + (1,) * (dim - len(values))

        size = resolve(self._size)
        steps = resolve(self._steps or ())
        allocation_size = tuple(n * step for n, step in zip(size, steps))
        return size, steps, allocation_size

    def satisfies_constraints(self, params: dict[str, Any]) -> bool:
        size, _, allocation_size = self._get_size_and_steps(params)
        num_elements = prod(size)
        if num_elements < 0:
            raise AssertionError(f"{self._name}: size {size} has a negative number of elements")
        allocation_bytes = prod(allocation_size, base=dtype_size(self._dtype))

        def above(value, limit) -> bool:
            return value is not None and limit is not None and value > limit

        return not (
            above(num_elements, self._max_elements)
            or above(self._min_elements, num_elements)
            or above(allocation_bytes, self._max_allocation_bytes)
        )


class Fuzzer:
    """Draw parameter sets, and tensors built from them, reproducibly from ``seed``.

    ``take(n)`` yields ``n`` triples ``(tensors, tensor_properties, params)``: dicts keyed by
    tensor name (the tensor; its ``numel``, ``order``, ``steps``, ``is_contiguous``,
    ``dtype``) and by parameter name. Parameter sets that fail a ``constraints`` callable
    (called with the params dict) or a tensor's limits are redrawn, up to
    1,000 times. Lists inside ``parameters`` and ``tensors`` are flattened one level.

    Example::
        >>> fuzzer = Fuzzer(
        ...     parameters=[FuzzedParameter("n", 16, 1024, distribution="loguniform")],
        ...     tensors=[FuzzedTensor("x", size=("n", "n"))],
        ...     seed=0)
        >>> for tensors, properties, params in fuzzer.take(2):
        ...     assert tensors["x"].shape == (params["n"], params["n"])
    """

    def __init__(
        self,
        parameters: list[FuzzedParameter | list[FuzzedParameter]],
        tensors: list[FuzzedTensor | list[FuzzedTensor]],
        constraints: list[Callable] | None = None,
        seed: int | None = None,
    ) -> None:
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2**32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = Fuzzer._unpack(parameters, FuzzedParameter)
        self._tensors = Fuzzer._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()

        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values, cls) -> tuple:
        nested = ([v] if isinstance(v, cls) else v for v in values)
        return tuple(itertools.chain.from_iterable(nested))

    def take(self, n: int) -> Iterator[tuple[dict, dict, dict]]:
        state = np.random.RandomState(self._seed)
        ember.manual_seed(int(state.randint(low=0, high=2**63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            tensors, tensor_properties = {}, {}
            for t in self._tensors:
                tensors[t.name], tensor_properties[t.name] = t._make_tensor(params, state)
            yield tensors, tensor_properties, params

    @property
    def rejection_rate(self) -> float:
        """The share of drawn parameter sets that were rejected so far."""
        if not self._total_generated:
            return 0.0
        return self._rejections / self._total_generated

    def _generate(self, state: np.random.RandomState) -> dict[str, Any]:
        strict_params: dict[str, Any] = {}
        for _ in range(1000):
            candidate: dict[str, Any] = {}
            for p in self._parameters:
                if p.strict and p.name in strict_params:
                    candidate[p.name] = strict_params[p.name]
                else:
                    candidate[p.name] = p.sample(state)
                    if p.strict:
                        strict_params[p.name] = candidate[p.name]
            candidate = self._resolve_aliases(candidate)

            self._total_generated += 1
            if not all(f(candidate) for f in self._constraints):
                self._rejections += 1
                continue
            if not all(t.satisfies_constraints(candidate) for t in self._tensors):
                self._rejections += 1
                continue
            return candidate
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params: dict[str, Any]) -> dict[str, Any]:
        params = dict(params)
        pending = sum(isinstance(v, ParameterAlias) for v in params.values())
        while pending:
            for key, value in params.items():
                if isinstance(value, ParameterAlias):
                    params[key] = params[value.alias_to]
            still_pending = sum(isinstance(v, ParameterAlias) for v in params.values())
            if still_pending == pending:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            pending = still_pending
        return params
