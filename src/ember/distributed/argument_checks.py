"""The checks a collective makes of its arguments before it communicates.

A rank that passes a wrong root or a list of the wrong length must fail alone and at once, not
enter MPI with a call its peers never match. The exception types and key phrases are PyTorch's:
``TypeError``/``ValueError`` where torch's Python wrappers check (``Invalid function argument``,
``Invalid usage of tensors with different dtypes``, ``Can't specify both group_rank and
global_rank``), ``RuntimeError`` where its gloo backend does (``invalid root rank: 5``,
``invalid output tensor list``, ``invalid tensor size``, ``Incorrect output list size``).
"""

from __future__ import annotations

from .._tensor import Tensor


def check_single_tensor(param, name: str) -> None:
    if not isinstance(param, Tensor):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor but "
            f"got {type(param)} instead."
        )


def check_tensor_list(param, name: str) -> None:
    if not isinstance(param, list):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type "
            f"List[torch.Tensor] but got {type(param)} instead."
        )
    if not all(isinstance(p, Tensor) for p in param):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type "
            f"List[torch.Tensor] but got {type(param)} with elements of type "
            f"{[type(p) for p in param]}."
        )


def _comparable(dtype) -> str:
    # as torch's _ensure_all_tensors_same_dtype: complex64 may meet float32 (torch means "a
    # complex tensor and its element type", but maps complex128 to itself)
    name = str(dtype).rsplit(".", 1)[-1]
    return "float32" if name == "complex64" else name


def ensure_same_dtype(*tensors) -> None:
    """Every tensor (or list of tensors) of the call has one dtype."""
    first = None
    for item in tensors:
        for t in item if isinstance(item, list) else (item,):
            if first is None:
                first = t.dtype
            elif _comparable(t.dtype) != _comparable(first):
                raise ValueError(
                    f"Invalid usage of tensors with different dtypes: found {first} and {t.dtype}"
                )


def group_rank(pg, global_rank, group_rank_, what: str, default: int | None = None) -> int:
    """The group rank of a ``src``/``dst`` given as a global rank or as ``group_src``/``group_dst``,
    checked to be one of the group's ranks; ``default`` (a global rank) where neither is given."""
    rank = canonical_rank(pg, global_rank, group_rank_, default)
    check_root(pg, rank, what)
    return rank


def canonical_rank(pg, global_rank, group_rank_, default: int | None = None) -> int:
    """As ``group_rank`` without the range check (torch checks the range after other things)."""
    if global_rank is None and group_rank_ is None:
        global_rank = default  # torch's root 0 of gather, scatter and the object collectives
    if group_rank_ is not None:
        if global_rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        return group_rank_
    if global_rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    return pg.group_rank(global_rank)


def check_root(pg, rank: int, what: str, role: str = "root") -> None:
    size = pg.size()
    if not (isinstance(rank, int) and 0 <= rank < size):
        raise RuntimeError(
            f"{what}: invalid {role} rank: {rank} (a group of {size} ranks has ranks 0 to "
            f"{size - 1})"
        )


def check_not_self(pg, rank: int, role: str) -> None:
    if pg.rank() == rank:
        raise ValueError(
            f"Invalid {role} rank: {role} rank should not be the same as the rank of the current "
            "process."
        )


def _shape(t) -> str:
    return "(" + ", ".join(str(n) for n in t.shape) + ")"


def check_sizes(tensors: list, expected, what: str) -> None:
    """Every tensor of ``tensors`` has ``expected``'s shape."""
    for i, t in enumerate(tensors):
        if tuple(t.shape) != tuple(expected.shape):
            raise RuntimeError(
                f"{what}: invalid tensor size at index {i} (expected {_shape(expected)}, got "
                f"{_shape(t)})"
            )


def check_list_length(tensors: list, size: int, what: str, which: str) -> None:
    """``gather``'s output list or ``scatter``'s input list has one tensor per rank."""
    if len(tensors) != size:
        kind = which.capitalize()
        raise RuntimeError(
            f"{what}: Incorrect {which} list size {len(tensors)}. {kind} list size should be "
            f"{size}, same as size of the process group."
        )


def validate_list_for_rank(my_rank: int, root: int, tensors, name: str, role: str) -> None:
    """The list of ``gather``/``scatter`` is given on the root rank and on no other."""
    if my_rank == root:
        if not tensors:
            raise ValueError(f"Argument ``{name}`` must be specified on {role} rank.")
    elif tensors:
        raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{role} ranks.")


def check_numel(bigger, smaller, size: int, what: str) -> None:
    """``bigger`` holds ``size`` times as many elements as ``smaller``, of the same dtype."""
    if bigger.dtype != smaller.dtype:
        raise RuntimeError(
            f"{what}: invalid tensor type: {bigger.dtype} and {smaller.dtype} (the input and "
            "output must have one dtype)"
        )
    if bigger.numel() != smaller.numel() * size:
        raise RuntimeError(
            f"{what}: invalid tensor size: {bigger.numel()} elements where world_size ({size}) "
            f"times {smaller.numel()} = {smaller.numel() * size} were expected"
        )
