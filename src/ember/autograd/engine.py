"""The backward engine: iterative, with dependency counts and a ready queue.

It is the one place that reduces broadcast gradients to an input's shape, casts them to the
input's dtype, runs tensor and node hooks, frees saved tensors after a node has run, and
accumulates into leaves.
"""

from __future__ import annotations

import threading
from time import perf_counter_ns

from .. import _backend
from . import _cuts, _watch, anomaly
from . import grad_mode as _gm
from .node import AccumulateGrad, Node, _tensor_class, check_hook_result

_memory_root = _watch.memory_root
_retaining = threading.local()  # retain_graph of the backward pass running in this thread


def retaining_graph() -> bool:
    """Whether the backward pass now running keeps the graph (``retain_graph=True``)."""
    return getattr(_retaining, "value", False)


# Accumulation into a leaf is a read-modify-write (``grad is None`` then assign, or an
# in-place add during which NumPy releases the GIL), so threads running backward through a
# shared parameter would lose updates. A fixed set of locks striped by the leaf's id makes it
# atomic per leaf without a field on every tensor; an uncontended acquire costs ~0.1 µs.
_LEAF_LOCK_COUNT = 64
_leaf_locks = tuple(threading.Lock() for _ in range(_LEAF_LOCK_COUNT))


def accumulate_into_leaf(
    leaf, g, create_graph: bool, claimed: set | None = None, shared: bool = True
) -> None:
    """``leaf.grad += g``, PyTorch's AccumulateGrad: keep the engine's buffer when no other
    leaf's gradient (nor the caller's gradient) lives in the same memory, else copy it.

    ``claimed`` holds the memory already handed to leaves in this backward pass; ``shared``
    says ``g`` may be visible outside the engine (a hook's result or a user's tensor).
    Atomic per leaf: backward passes in several threads may share a leaf.
    """
    with _leaf_locks[(id(leaf) >> 4) % _LEAF_LOCK_COUNT]:
        _accumulate_locked(leaf, g, create_graph, claimed, shared)
    # post-accumulate hooks run outside the lock: they may run backward themselves
    _post_accumulate(leaf)


def _accumulate_locked(leaf, g, create_graph: bool, claimed, shared: bool) -> None:
    old = leaf._grad
    if old is None:
        if create_graph:
            leaf._grad = g
            return
        data = g._data
        root = _memory_root(data)
        # sparse storage says "not writeable" (accumulate out of place) but may be taken
        if (
            shared
            or claimed is None
            or id(root) in claimed
            or not (_writeable(data) or _takeable(data, claimed))
        ):
            leaf._grad = g._detach().clone()
        else:
            claimed.add(id(root))
            leaf._grad = g if g.__class__ is _plain_tensor() else g._detach()
    elif create_graph or old._rg or g._rg:
        leaf._grad = old + g
    else:
        old_data = old._data
        if _writeable(old_data) and old_data.dtype == g._data.dtype:
            old_data += g._data
            old._vc[0] += 1
        else:
            leaf._grad = old + g


def _post_accumulate(leaf) -> None:
    hooks = leaf._post_acc_hooks
    if hooks:
        for fn in list(hooks.values()):
            result = fn(leaf)
            if result is not None:  # torch checks the result as a tensor hook's, then refuses it
                check_hook_result(fn, leaf, result)
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")


_writeable = _backend.writeable


# Data that is no array (it reads "not writeable", so gradients accumulate into it out of
# place) but whose fresh gradient a leaf may take as it is, as torch steals a sparse gradient
# nobody else holds instead of cloning it: its type -> the array holding its memory. Filled
# from above: ember.sparse registers its COO storage (the values) at install.
TAKEABLE_DATA: dict = {}


def _takeable(data, claimed: set) -> bool:
    """Data of a TAKEABLE_DATA type whose memory is not memory the caller handed in."""
    memory_of = TAKEABLE_DATA.get(data.__class__)
    return memory_of is not None and id(_memory_root(memory_of(data))) not in claimed


def _plain_tensor():
    return _tensor_class()


def _invalid_gradient(node: Node, index: int, grad, shape) -> RuntimeError:
    return RuntimeError(
        f"Function {node.name()} returned an invalid gradient at index {index} - got "
        f"{list(grad.shape)} but expected shape compatible with {list(shape)}"
    )


def _graph_order(root_nodes: list) -> list:
    """All nodes reachable from the roots, each listed after every node that feeds it."""
    deps: dict = {}
    stack = list(root_nodes)
    seen = set(stack)
    while stack:
        node = stack.pop()
        for edge in node._edges:
            if edge is not None:
                nxt = edge[0]
                deps[nxt] = deps.get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    order = []
    ready = [n for n in seen if n not in deps]
    while ready:
        node = ready.pop()
        order.append(node)
        for edge in node._edges:
            if edge is not None:
                nxt = edge[0]
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    ready.append(nxt)
    return order


def _count_dependencies(root_nodes: list, needed: set | None) -> dict:
    """How many edges lead into each node reachable from the roots (without recursion)."""
    deps: dict = {}
    roots = set(root_nodes)
    stack = list(root_nodes)
    get = deps.get
    while stack:
        for edge in stack.pop()._edges:
            if edge is None:
                continue
            nxt = edge[0]
            if needed is not None and nxt not in needed:
                continue
            count = get(nxt)
            if count is None:
                deps[nxt] = 1
                if nxt not in roots:  # a root is on the stack already
                    stack.append(nxt)
            else:
                deps[nxt] = count + 1
    return deps


def _needed_nodes(root_nodes: list, capture_nodes: set) -> set:
    """Nodes that lie on a path from a root to a captured input (the rest need not run)."""
    return _needed_and_dependencies(root_nodes, capture_nodes)[0]


def _needed_and_dependencies(root_nodes: list, capture_nodes: set) -> tuple:
    """The needed nodes (``_needed_nodes``) and how many edges between them lead into each
    (``_count_dependencies`` over them), from one depth-first walk without recursion.

    A node is settled once every node its edges lead to is (the graph has no cycles, so a
    node seen before is settled already): it is needed when captured or when an edge leads
    to a needed node, and each such edge counts for its target. One walk, not three (the
    graph's order, the needed nodes, then their dependencies).
    """
    needed: set = set()
    deps: dict = {}
    seen: set = set()
    stack: list = []
    for root in root_nodes:
        if root not in seen:
            seen.add(root)
            stack.append((root, iter(root._edges)))
            _settle(stack, seen, needed, deps, capture_nodes)
    return needed, deps


def _settle(stack: list, seen: set, needed: set, deps: dict, capture_nodes: set) -> None:
    """Walk from the node on ``stack`` until everything below it is settled."""
    get = deps.get
    while stack:
        node, edges = stack[-1]
        for edge in edges:
            if edge is not None:
                nxt = edge[0]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, iter(nxt._edges)))
                    break
        else:
            stack.pop()
            is_needed = node in capture_nodes
            for edge in node._edges:
                if edge is not None:
                    nxt = edge[0]
                    if nxt in needed:  # then node is needed too
                        is_needed = True
                        deps[nxt] = get(nxt, 0) + 1
            if is_needed:
                needed.add(node)


def run_backward(
    roots: list,
    root_grads: list,
    retain_graph: bool,
    create_graph: bool,
    captures: dict | None = None,
    accumulate: bool = True,
) -> dict:
    """Propagate ``root_grads`` from the ``roots`` edges ``(node, output_nr)``.

    ``captures`` maps node -> list of (output_nr, key): the gradient arriving at that output is
    returned under ``key`` instead of (or, for leaves, as well as) being propagated further.
    """
    buffers: dict = {}
    for (node, nr), g in zip(roots, root_grads):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node.num_outputs
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    root_nodes = list(buffers)
    _cuts.state.backward_runs += 1
    for node in root_nodes:  # explain() tells a graph that ran backward from one that did not
        node._backward_run = _cuts.state.backward_runs
    if captures is None:
        deps = _count_dependencies(root_nodes, None)
    else:
        needed, deps = _needed_and_dependencies(root_nodes, set(captures))
        root_nodes = [n for n in root_nodes if n in needed]
    ready = [n for n in root_nodes if n not in deps]
    captured: dict = {}
    # memory handed to leaves' .grad in this pass; the caller's gradients count as taken
    claimed = {id(_memory_root(g._data)) for g in root_grads}
    check_anomaly = anomaly.state.enabled
    timed = _watch.watch.timing
    has_captures = captures is not None
    state = _gm.state
    previous_mode = state.enabled
    state.enabled = create_graph
    previous_retain = retaining_graph()
    _retaining.value = retain_graph
    # formulas read saved tensors that require grad with grad mode off: not a user's cut
    _cuts.state.quiet += 1
    slow_always = check_anomaly or timed
    deps_get, buffers_get, ready_append = deps.get, buffers.get, ready.append
    leaves_ready: list = []
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            edges = node._edges
            if node._fast and not slow_always and not (has_captures and node in captures):
                # the common node: one output, no hooks, the formula called directly
                if grads is None or grads[0] is None:
                    in_grads = None
                else:
                    # ember's own formulas (a formula may leave off trailing Nones); user
                    # Functions take the checked path
                    in_grads = node.backward(grads[0])
                    if in_grads.__class__ is not tuple:
                        in_grads = (in_grads,)
            else:
                if grads is None:
                    grads = [None] * node.num_outputs
                start = 0
                if timed:
                    for observer in _watch.watch.observers:
                        observer.node_started(node)
                    start = perf_counter_ns()
                in_grads = _run_node(
                    node,
                    grads,
                    create_graph,
                    accumulate,
                    captures,
                    captured,
                    check_anomaly,
                    claimed,
                )
                if timed:
                    _node_ran(node, start)
                if in_grads is _DONE:
                    continue
            if not retain_graph:
                if node._saved:
                    node._saved = None
                if node._saved_out is not None:
                    node._saved_out = None
            if in_grads is None:
                in_grads = _NO_GRADS * len(edges)
            elif len(in_grads) != len(edges):
                in_grads = _one_per_edge(node, in_grads)
            for edge, g in zip(edges, in_grads):
                if edge is None:
                    continue
                nxt = edge[0]
                left = deps_get(nxt)
                if left is None:
                    continue
                if g is not None:
                    nr = edge[1]
                    shape, dt = nxt._meta[nr]
                    data = g._data
                    if data.shape != shape:
                        try:
                            g = g.sum_to_size(shape)
                        except RuntimeError:
                            index = next(i for i, x in enumerate(in_grads) if x is g)
                            raise _invalid_gradient(node, index, g, shape) from None
                    if data.dtype is not dt and data.dtype != dt:
                        if data.dtype.kind == "c" and dt.kind != "c":
                            g = g.real
                        g = g.to(_dtype_of(dt))
                    buf = buffers_get(nxt)
                    if buf is None:
                        if nxt.num_outputs == 1:
                            buffers[nxt] = [g]
                        else:
                            buf = buffers[nxt] = [None] * nxt.num_outputs
                            buf[nr] = g
                    else:
                        current = buf[nr]
                        buf[nr] = g if current is None else current + g
                if left == 1:
                    del deps[nxt]
                    if nxt.__class__ is AccumulateGrad:
                        leaves_ready.append(nxt)
                    else:
                        ready_append(nxt)
                else:
                    deps[nxt] = left - 1
            if leaves_ready:
                # a leaf's gradient is accumulated as soon as it is complete, before the
                # rest of the graph runs, as torch's engine orders AccumulateGrad first: hooks
                # then fire in torch's order and DDP can start a bucket's all-reduce early
                ready.extend(leaves_ready)
                leaves_ready.clear()
    finally:
        state.enabled = previous_mode
        _retaining.value = previous_retain
        _cuts.state.quiet -= 1
    return captured


def _node_ran(node, start: int) -> None:
    end = perf_counter_ns()
    for observer in _watch.watch.observers:
        observer.node_ran(node, start, end)


_NO_GRADS = (None,)  # times the edge count: the gradients of a node that got none
_DONE = object()  # _run_node's answer for a node that ends the path (a leaf's AccumulateGrad)


def _one_per_edge(node: Node, in_grads: tuple) -> tuple:
    """A formula's gradients, one per edge: extra ones dropped, missing ones None where the
    edge is None (a formula may leave those off); a missing one for a live edge is a bug."""
    edges = node._edges
    if len(in_grads) > len(edges):
        return in_grads[: len(edges)]
    if any(edge is not None for edge in edges[len(in_grads) :]):
        raise _wrong_count(node, in_grads)
    return in_grads + _NO_GRADS * (len(edges) - len(in_grads))


def _wrong_count(node: Node, in_grads) -> RuntimeError:
    return RuntimeError(
        f"function {node.name()} returned an incorrect number of gradients "
        f"(expected {len(node._edges)}, got {len(in_grads)})"
    )


def _run_node(node, grads, create_graph, accumulate, captures, captured, check_anomaly, claimed):
    """Everything but the common case: hooks, captures, leaves, anomaly mode, Functions."""
    hooked = node._hooked
    from_hook = False
    if hooked:
        before = list(grads)
        grads = _run_pre_hooks(node, grads, create_graph)
        from_hook = any(a is not b for a, b in zip(before, grads))
    if captures is not None and node in captures:
        for nr, key in captures[node]:
            captured[key] = grads[nr]
    if node.__class__ is AccumulateGrad:
        if accumulate and (captures is None or node in captures):
            leaf = node._variable()
            g = grads.pop()
            if leaf is not None and g is not None:
                accumulate_into_leaf(leaf, g, create_graph, claimed, shared=from_hook)
        return _DONE
    edges = node._edges
    if all(g is None for g in grads):
        return None
    if check_anomaly:
        in_grads = anomaly.apply_checked(node, grads)
    else:
        in_grads = node.apply(grads)
    if len(in_grads) != len(edges):
        raise _wrong_count(node, in_grads)
    if hooked and node._post_hooks:
        for fn in list(node._post_hooks.values()):
            replaced = fn(in_grads, tuple(grads))
            if replaced is not None:
                in_grads = tuple(replaced)
    return in_grads


def _dtype_of(np_dtype):
    from .._dtype import FROM_NUMPY

    return FROM_NUMPY[np_dtype]


def _run_pre_hooks(node: Node, grads: list, create_graph: bool) -> list:
    """Tensor hooks, then node pre-hooks, then retain_grad, in PyTorch's order."""
    if node._tensor_hooks:
        for nr, fn in list(node._tensor_hooks.values()):
            if grads[nr] is not None:
                replaced = fn(grads[nr])
                if replaced is not None:
                    grads[nr] = replaced
    if node._pre_hooks:
        for fn in list(node._pre_hooks.values()):
            replaced = fn(tuple(grads))
            if replaced is not None:
                grads = list(replaced)
    if node._retained:
        _store_retained(node._retained, grads, create_graph)
    return grads


def _store_retained(retained: dict, grads: list, create_graph: bool) -> None:
    for nr, ref in retained.items():
        t = ref()
        g = grads[nr]
        if t is None or g is None:
            continue
        if t._grad is None:
            t._grad = g if create_graph else g._detach().clone()
        else:
            t._grad = t._grad + g
