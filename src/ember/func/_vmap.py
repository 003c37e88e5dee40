"""vmap: ``func`` mapped over a dimension of its inputs, pytrees of them, with torch.func's
``in_dims``/``out_dims`` prefixes and ``randomness`` modes.

ember has no batching rules: vmap runs ``func`` once per slice and stacks the results, which is
right for any function (in-place updates of unbatched state aside: they happen once per slice)
and as fast as a Python loop. Random ops go through ``_random.generator.resolve_generator``,
which calls the hook set here while a vmap runs: 'error' raises there; 'same' replays each
generator's state from the first slice's start, so every slice draws the same numbers;
'different' lets the stream run on, so each slice draws its own.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from contextlib import contextmanager

from .._random import generator as _generator
from .._tensor import Tensor
from ..ops.shape import stack
from ..utils._pytree import _broadcast_to_and_flatten, tree_flatten, tree_unflatten

_RANDOMNESS = ("error", "different", "same")


def check_randomness_arg(randomness: str) -> None:
    if randomness not in _RANDOMNESS:
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. Got "
            f"{randomness}"
        )


class _Level:
    """One running vmap's randomness mode, and for 'same' the generators' states at the
    first slice's start (replayed at the first draw of each later slice)."""

    def __init__(self, randomness: str):
        self.randomness = randomness
        self.start_states: dict = {}  # generator -> its state before the first slice drew
        self.replayed: set = set()  # generators restored in the current slice

    def next_slice(self) -> None:
        self.replayed.clear()

    def before_draw(self, gen) -> None:
        if self.randomness == "error":
            raise RuntimeError(
                "vmap: called random operation while in randomness error mode. Please either "
                "use the 'same' or 'different' randomness flags on vmap or perform the "
                "randomness operation out of vmap"
            )
        if self.randomness != "same" or gen in self.replayed:
            return
        self.replayed.add(gen)
        state = self.start_states.get(gen)
        if state is None:
            self.start_states[gen] = gen.get_state()
        else:
            gen.set_state(state)


_local = threading.local()


def _levels() -> list:
    levels = getattr(_local, "levels", None)
    if levels is None:
        levels = _local.levels = []
    return levels


def _before_draw(gen) -> None:
    for level in list(_levels()):  # outermost first: an outer replay comes before an inner one
        level.before_draw(gen)


@contextmanager
def watch_randomness(randomness: str):
    """Random draws inside follow ``randomness`` (for one run of a function); yields the
    level, whose ``next_slice()`` starts another run."""
    level = _Level(randomness)
    levels = _levels()
    levels.append(level)
    previous = _generator.draw_hook
    _generator.draw_hook = _before_draw
    try:
        yield level
    finally:
        levels.remove(level)
        _generator.draw_hook = previous


def _name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def vmap(
    func: Callable,
    in_dims=0,
    out_dims=0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """``func`` mapped over dimension ``in_dims`` of its inputs, the results stacked at
    ``out_dims``. ``in_dims`` is an int, or a tuple with one entry per argument, each an int,
    None (not mapped) or a pytree matching that argument (``({"w": 0, "b": None}, 0)``);
    ``out_dims`` likewise for the output. ``randomness`` is 'error' (a random op inside
    raises), 'same' (every slice draws the same values) or 'different'.

    Example::
        >>> xs = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> ember.func.vmap(lambda p, x: (p["w"] * x).sum(), in_dims=(None, 0))(
        ...     {"w": ember.tensor([1.0, -1.0])}, xs)
        tensor([-1., -1.])
    """
    check_randomness_arg(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        size, flat_in_dims, flat_args, args_spec = _batched_inputs(in_dims, args, func)
        if size == 0:
            raise ValueError(
                f"vmap({_name(func)}, ...): ember's vmap runs the function once per slice and "
                "cannot map over a dimension of size 0"
            )
        results = []
        with watch_randomness(randomness) as level:
            for i in range(size):
                level.next_slice()
                sliced = [
                    a if d is None else a.select(d, i) for a, d in zip(flat_args, flat_in_dims)
                ]
                results.append(func(*tree_unflatten(sliced, args_spec), **kwargs))
        return _stack_outputs(results, out_dims, func)

    return wrapped


def _batched_inputs(in_dims, args: tuple, func) -> tuple:
    """(batch size, one in_dim per leaf of args, the leaves, args' structure), as torch checks
    them."""
    name = _name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
            "(potentially nested) tuple matching the structure of inputs, got: "
            f"{type(in_dims)}."
        )
    if not args:
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
            "trying to vmap over a function with no inputs. The latter is unsupported."
        )
    flat_args, args_spec = tree_flatten(args)
    flat_in_dims = _broadcast_to_and_flatten(in_dims, args_spec)
    if flat_in_dims is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with "
            f"the structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but "
            f"inputs has structure {args_spec}."
        )
    for i, (arg, dim) in enumerate(zip(flat_args, flat_in_dims)):
        if dim is None:
            continue
        if not isinstance(dim, int):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for an input "
                "but in_dim must be either an integer dimension or None."
            )
        if not isinstance(arg, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for an input "
                f"but the input is of type {type(arg)}. We cannot vmap over non-Tensor "
                "arguments, please use None as the respective in_dim"
            )
        if not -arg.dim() <= dim < arg.dim():
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for some "
                f"input, but that input is a Tensor of dimensionality {arg.dim()} so expected "
                f"in_dim to satisfy -{arg.dim()} <= in_dim < {arg.dim()}."
            )
        flat_in_dims[i] = dim % arg.dim()
    sizes = [a.shape[d] for a, d in zip(flat_args, flat_in_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return sizes[0], flat_in_dims, flat_args, args_spec


def _check_out_dims(out_dims, func) -> None:
    leaves = [out_dims] if isinstance(out_dims, int) else tree_flatten(out_dims)[0]
    for dim in leaves:
        if dim is not None and not isinstance(dim, int):
            raise ValueError(
                f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                "None or a python collection of ints representing where in the outputs the "
                "vmapped dimension should appear."
            )


def _stack_outputs(results: list, out_dims, func):
    """The slices' outputs, each leaf stacked at its out_dim (or, for None, the one value all
    slices returned)."""
    name = _name(func)
    flat_first, out_spec = tree_flatten(results[0])
    if isinstance(results[0], Tensor):  # torch accepts out_dims=(d,) for a single tensor
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_dims = list(out_dims)
        elif out_dims is None or isinstance(out_dims, int):
            flat_dims = [out_dims]
        else:
            flat_dims = None
    else:
        flat_dims = _broadcast_to_and_flatten(out_dims, out_spec)
    if flat_dims is None:
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
            f"the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} "
            f"but outputs has structure {out_spec}."
        )
    per_slice = [tree_flatten(r)[0] for r in results]
    outputs = []
    for k, dim in enumerate(flat_dims):
        values = [leaves[k] for leaves in per_slice]
        if dim is None:
            if isinstance(values[0], Tensor) and not all(
                v is values[0] or v.equal(values[0]) for v in values[1:]
            ):
                raise ValueError(
                    f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim "
                    "is None"
                )
            outputs.append(values[0])
            continue
        if not isinstance(values[0], Tensor):
            raise ValueError(
                f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                f"{type(values[0])}. Did you mean to set out_dims= to None for output?"
            )
        outputs.append(stack(values, dim))
    return tree_unflatten(outputs, out_spec)
