"""libstdc++'s selection and sorting algorithms, step for step, for orders that depend on them.

``torch.topk`` on the CPU picks with ``std::nth_element`` + ``std::sort`` (or
``std::partial_sort`` when k·64 <= n), none of them stable: among equal values the order
that comes out is the one these algorithms leave. ``multinomial`` without replacement
returns that order when weights tie (zero weights, drawn once the non-zero ones run out).
This module replays GCC's implementations on a Python list with a strict "comes first"
comparison ``before(x, y)``.
"""

from __future__ import annotations

from collections.abc import Callable

_THRESHOLD = 16  # GCC's _S_threshold: introsort leaves runs this short to insertion sort


def _lg(n: int) -> int:
    return n.bit_length() - 1


# --- heaps -------------------------------------------------------------------------------------
def _push_heap(a: list, first: int, hole: int, top: int, value, before: Callable) -> None:
    parent = (hole - 1) // 2
    while hole > top and before(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


def _adjust_heap(a: list, first: int, hole: int, length: int, value, before: Callable) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if before(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    _push_heap(a, first, hole, top, value, before)


def make_heap(a: list, first: int, last: int, before: Callable) -> None:
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(a, first, parent, length, a[first + parent], before)
        if parent == 0:
            return
        parent -= 1


def pop_heap(a: list, first: int, last: int, before: Callable) -> None:
    """std::pop_heap: the root goes to ``last - 1``, the rest stays a heap."""
    if last - first > 1:
        last -= 1
        value = a[last]
        a[last] = a[first]
        _adjust_heap(a, first, 0, last - first, value, before)


def sort_heap(a: list, first: int, last: int, before: Callable) -> None:
    while last - first > 1:
        pop_heap(a, first, last, before)
        last -= 1


# --- partitioning, insertion sort, introsort, introselect ------------------------------------
def _move_median_to_first(a: list, result: int, x: int, y: int, z: int, before) -> None:
    if before(a[x], a[y]):
        if before(a[y], a[z]):
            pick = y
        elif before(a[x], a[z]):
            pick = z
        else:
            pick = x
    elif before(a[x], a[z]):
        pick = x
    elif before(a[y], a[z]):
        pick = z
    else:
        pick = y
    a[result], a[pick] = a[pick], a[result]


def _unguarded_partition(a: list, first: int, last: int, pivot: int, before) -> int:
    while True:
        while before(a[first], a[pivot]):
            first += 1
        last -= 1
        while before(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _partition_pivot(a: list, first: int, last: int, before) -> int:
    mid = first + (last - first) // 2
    _move_median_to_first(a, first, first + 1, mid, last - 1, before)
    return _unguarded_partition(a, first + 1, last, first, before)


def _unguarded_linear_insert(a: list, last: int, before) -> None:
    value = a[last]
    previous = last - 1
    while before(value, a[previous]):
        a[last] = a[previous]
        last = previous
        previous -= 1
    a[last] = value


def _insertion_sort(a: list, first: int, last: int, before) -> None:
    if first == last:
        return
    for i in range(first + 1, last):
        if before(a[i], a[first]):
            value = a[i]
            a[first + 1 : i + 1] = a[first:i]
            a[first] = value
        else:
            _unguarded_linear_insert(a, i, before)


def _heap_select(a: list, first: int, middle: int, last: int, before) -> None:
    make_heap(a, first, middle, before)
    for i in range(middle, last):
        if before(a[i], a[first]):
            # std::__pop_heap(first, middle, i): a[i] takes the root's place in the heap
            value = a[i]
            a[i] = a[first]
            _adjust_heap(a, first, 0, middle - first, value, before)


def _introsort_loop(a: list, first: int, last: int, depth: int, before) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:  # std::partial_sort(first, last, last): heap sort
            _heap_select(a, first, last, last, before)
            sort_heap(a, first, last, before)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, before)
        _introsort_loop(a, cut, last, depth, before)
        last = cut


def sort(a: list, first: int, last: int, before: Callable) -> None:
    """std::sort: introsort, then one insertion sort over the nearly sorted range."""
    if first == last:
        return
    _introsort_loop(a, first, last, 2 * _lg(last - first), before)
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, before)
        for i in range(first + _THRESHOLD, last):
            _unguarded_linear_insert(a, i, before)
    else:
        _insertion_sort(a, first, last, before)


def nth_element(a: list, first: int, nth: int, last: int, before: Callable) -> None:
    """std::nth_element: introselect, finished by an insertion sort of the last short range."""
    if first == last or nth == last:
        return
    depth = 2 * _lg(last - first)
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, nth + 1, last, before)
            a[first], a[nth] = a[nth], a[first]
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, before)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(a, first, last, before)


# --- torch.topk's CPU order -------------------------------------------------------------------
def _larger(x: tuple, y: tuple) -> bool:
    return x[0] > y[0]


def topk_largest(values: list, k: int) -> list[int]:
    """The indices of torch.topk(values, k) (largest, sorted) on the CPU, ties included."""
    n = len(values)
    if k == 0:
        return []
    pairs = [(values[j], j) for j in range(n)]
    if k * 64 <= n:  # std::partial_sort: a heap of the first k, then sorted
        _heap_select(pairs, 0, k, n, _larger)
        sort_heap(pairs, 0, k, _larger)
        return [j for _, j in pairs[:k]]
    nth_element(pairs, 0, k - 1, n, _larger)
    sort(pairs, 0, k - 1, _larger)
    return [j for _, j in pairs[:k]]


# --- torch.sort / argsort's CPU order (stable=False) ------------------------------------------
def _ascending(x: tuple, y: tuple) -> bool:  # ATen's KeyValueCompAsc: NaN last
    a, b = x[0], y[0]
    return (a == a and b != b) or a < b


def _descending(x: tuple, y: tuple) -> bool:  # KeyValueCompDesc: NaN first
    a, b = x[0], y[0]
    return (a != a and b == b) or a > b


def sort_positions(values: list, descending: bool = False) -> list[int]:
    """The indices torch.sort(values, stable=False) gives on the CPU: std::sort over
    (value, index) pairs compared by value, so equal values (and NaNs) come out in the order
    introsort leaves them, not in index order."""
    pairs = [(v, j) for j, v in enumerate(values)]
    sort(pairs, 0, len(pairs), _descending if descending else _ascending)
    return [j for _, j in pairs]


def unstable_argsort(data, axis: int, descending: bool, stable_order):
    """torch's unstable CPU sort order along ``axis`` of a NumPy array, from
    ``stable_order`` (the stable argsort with torch's NaN placement): rows whose keys are all
    distinct keep it (any correct sort agrees there); rows with ties are replayed through
    std::sort, in Python, so a row of n tied values costs O(n log n) Python steps."""
    import numpy as np

    moved = np.moveaxis(data, axis, -1)
    order = np.moveaxis(stable_order, axis, -1).copy()
    rows, out = moved.reshape(-1, moved.shape[-1]), order.reshape(-1, moved.shape[-1])
    if rows.shape[-1] < 2:
        return stable_order
    ranked = np.take_along_axis(rows, out, axis=-1)
    same = ranked[:, 1:] == ranked[:, :-1]
    if ranked.dtype.kind not in "biu":  # NaNs tie with each other
        same |= (ranked[:, 1:] != ranked[:, 1:]) & (ranked[:, :-1] != ranked[:, :-1])
    for r in np.nonzero(same.any(axis=-1))[0]:
        out[r] = sort_positions(rows[r].tolist(), descending)
    return np.moveaxis(out.reshape(order.shape), -1, axis)
