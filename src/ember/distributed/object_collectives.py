"""Collectives of picklable Python objects (these do pickle, as PyTorch's do).

Each object is pickled into bytes; as in PyTorch, the sizes go first and the bytes after (padded
to the largest where all ranks send), each as a non-blocking MPI op waited for by
``ember.distributed.watchdog.wait`` (so a dead peer raises ``DistBackendError`` here too, as in
the tensor collectives).
"""

from __future__ import annotations

import pickle

import numpy as np

from . import argument_checks as checks
from .collectives import _group, _mpi, _peer
from .watchdog import wait

_OBJECT_TAG = 0x6F626A  # keeps object messages apart from tensor messages with the default tag


def _pickled(obj) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL), np.uint8)


def _unpickled(data: np.ndarray):
    return pickle.loads(data.tobytes())


def _padded(mine: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """This rank's bytes padded to the largest of ``sizes`` (as torch pads: one fixed-size
    gather is faster than a variable-size one)."""
    padded = np.zeros(int(sizes.max()), np.uint8)
    padded[: mine.size] = mine
    return padded


def _offsets(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


def _check_long_enough(object_list: list, size: int, name: str) -> None:
    # torch assigns object_list[i] for every rank i, which fails on a shorter list
    if len(object_list) < size:
        raise IndexError(
            f"list assignment index out of range: {name} has {len(object_list)} items, fewer "
            f"than the {size} ranks of the group"
        )


def all_gather_object(object_list: list, obj, group=None) -> None:
    """``object_list[i]`` becomes rank i's ``obj`` on every rank."""
    pg = _group(group)
    if pg is None:
        return
    n = pg.size()
    _check_long_enough(object_list, n, "object_list")
    mine = _pickled(obj)
    sizes = np.empty(n, np.int64)
    wait(pg, [pg.comm.Iallgather(np.array([mine.size], np.int64), sizes)], "all_gather_object")
    padded = _padded(mine, sizes)
    data = np.empty((n, padded.size), np.uint8)
    request = pg.comm.Iallgather(padded, data)
    wait(pg, [request], "all_gather_object", keep=(padded, data))
    for i, size in enumerate(sizes):
        object_list[i] = _unpickled(data[i, :size])


def broadcast_object_list(
    object_list: list, src=None, group=None, device=None, group_src=None
) -> None:
    """Replace ``object_list``'s items with rank ``src``'s, on every rank."""
    pg = _group(group)
    if pg is None:
        return
    root = checks.group_rank(pg, src, group_src, "broadcast_object_list", default=0)
    payload = _pickled(list(object_list)) if pg.rank() == root else None
    size = np.array([0 if payload is None else payload.size], np.int64)
    wait(pg, [pg.comm.Ibcast(size, root)], "broadcast_object_list")
    if payload is None:
        payload = np.empty(int(size[0]), np.uint8)
    wait(pg, [pg.comm.Ibcast(payload, root)], "broadcast_object_list", keep=payload)
    if pg.rank() != root:
        object_list[:] = _unpickled(payload)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    """Collect every rank's ``obj`` into ``object_gather_list`` on rank ``dst``."""
    pg = _group(group)
    if pg is None:
        return
    root = checks.canonical_rank(pg, dst, group_dst, default=0)
    checks.validate_list_for_rank(pg.rank(), root, object_gather_list, "gather_list", "destination")
    checks.check_root(pg, root, "gather_object")
    is_root = pg.rank() == root
    if is_root:
        _check_long_enough(object_gather_list, pg.size(), "object_gather_list")
    mine = _pickled(obj)
    # every rank needs the largest size to pad to, so the sizes go to all (as in torch)
    sizes = np.empty(pg.size(), np.int64)
    wait(pg, [pg.comm.Iallgather(np.array([mine.size], np.int64), sizes)], "gather_object")
    padded = _padded(mine, sizes)
    data = np.empty((pg.size(), padded.size), np.uint8) if is_root else None
    request = pg.comm.Igather(padded, data, root)
    wait(pg, [request], "gather_object", keep=(padded, data))
    if is_root:
        for i, size in enumerate(sizes):
            object_gather_list[i] = _unpickled(data[i, :size])


def scatter_object_list(
    scatter_object_output_list: list,
    scatter_object_input_list=None,
    src=None,
    group=None,
    group_src=None,
) -> None:
    """Give rank i the object ``scatter_object_input_list[i]`` of rank ``src`` (into
    ``scatter_object_output_list[0]``)."""
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError(
            "Expected argument scatter_object_output_list to be a list of size at least 1."
        )
    pg = _group(group)
    if pg is None:
        return
    root = checks.group_rank(pg, src, group_src, "scatter_object_list", default=0)
    sizes = data = into = None
    if pg.rank() == root:
        items = list(scatter_object_input_list or [])
        checks.check_list_length(items, pg.size(), "scatter_object_list", "input")
        parts = [_pickled(item) for item in items]
        sizes = np.array([p.size for p in parts], np.int64)
        data = np.concatenate(parts)
        into = [data, (sizes, _offsets(sizes)), _mpi().BYTE]
    size = np.empty(1, np.int64)
    wait(pg, [pg.comm.Iscatter(sizes, size, root)], "scatter_object_list", keep=sizes)
    mine = np.empty(int(size[0]), np.uint8)
    wait(pg, [pg.comm.Iscatterv(into, mine, root)], "scatter_object_list", keep=(data, mine))
    scatter_object_output_list[0] = _unpickled(mine)


def send_object_list(object_list: list, dst=None, group=None, device=None, group_dst=None):
    """Send the (picklable) items of ``object_list`` to rank ``dst``."""
    pg = _group(group)
    if pg is None:
        return
    peer = _peer(pg, dst, group_dst, "send")
    payload = _pickled(list(object_list))
    size = np.array([payload.size], np.int64)
    requests = [
        pg.comm.Isend(size, peer, _OBJECT_TAG),
        pg.comm.Isend(payload, peer, _OBJECT_TAG + 1),
    ]
    wait(pg, requests, "send_object_list", keep=(size, payload))


def recv_object_list(object_list: list, src=None, group=None, device=None, group_src=None):
    """Fill ``object_list`` with the items rank ``src`` (any when None) sent; returns the sender."""
    pg = _group(group)
    if pg is None:
        return -1
    MPI = _mpi()
    source = _peer(pg, src, group_src, "recv")
    size, status = np.empty(1, np.int64), MPI.Status()
    wait(pg, [pg.comm.Irecv(size, source, _OBJECT_TAG)], "recv_object_list", [status], size)
    sender = status.Get_source()  # the rest comes from the same rank, even with src=None
    payload = np.empty(int(size[0]), np.uint8)
    request = pg.comm.Irecv(payload, sender, _OBJECT_TAG + 1)
    wait(pg, [request], "recv_object_list", keep=payload)
    items = _unpickled(payload)
    object_list[: len(items)] = items
    return pg._ranks[sender]
