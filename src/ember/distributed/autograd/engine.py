"""The distributed backward pass.

On each worker a piece of the pass runs with ember's own engine, from roots with their
gradients: the losses on the worker that calls ``backward``; on the others, the tensors a
recorded send carried, with the gradients the receiving worker computed for them. A piece
computes the gradients of every leaf it reaches. A leaf that was received in a message (a
recv) is no parameter: its gradient is sent back to the worker that sent the tensor, which runs
the piece from that send. Other leaves' gradients are added up in the context.

This is torch's "FAST mode": each piece runs as soon as its gradients arrive, without waiting
for others that might reach the same nodes; by linearity the sums are the same. Every piece
keeps the graph, because another piece may run through the same nodes; once all are done,
``retain_graph=False`` frees what the pass went through on every worker it reached, so a
second pass raises torch's "backward through the graph a second time". ``backward`` returns
once every piece, on every worker, has finished, and raises the first error any of them
raised.
"""

from __future__ import annotations

from ember.autograd.node import AccumulateGrad

from ... import _op_namespace as ember
from ... import futures
from ..rpc import _autograd_contexts as contexts
from ..rpc.agent import Deferred, current_agent
from ..rpc.rref import register_distributed_backward


def backward(context_id: int, roots: list, retain_graph: bool = False) -> None:
    """Run the backward pass of ``roots`` (scalar tensors) through the RPC calls recorded in
    context ``context_id``, on every worker they reach; gradients go into the contexts.

    Without ``retain_graph`` the graph it went through is freed on every worker afterwards.

    Example::
        >>> with dist_autograd.context() as context_id:
        ...     loss = rpc.rpc_sync("worker1", ember.add, args=(t1, t2)).sum()
        ...     dist_autograd.backward(context_id, [loss])
    """
    found = contexts.retrieve_context(context_id)
    roots = list(roots)
    if not roots:
        raise RuntimeError("No tensors provided for gradient computation.")
    for index, root in enumerate(roots):
        if not isinstance(root, ember.Tensor):
            raise TypeError(f"roots must be tensors, got {type(root).__name__} at index {index}")
        if not root.requires_grad:
            raise RuntimeError("requires_grad not set on root")
        if root.numel() != 1:
            raise RuntimeError(
                f"The root tensor at index {index} of shape {list(root.shape)} is not a scalar, "
                "all roots need to be scalar"
            )
    grads = [ember.ones_like(root) for root in roots]
    reached = _all_of(_run_piece(found, roots, grads)).wait()
    if not retain_graph:
        _release_graph(context_id, roots)
        if reached:
            agent = current_agent()
            others = [w for w in reached if w != agent.rank]
            _all_of([agent.send(w, _release_graph, (context_id,)) for w in others]).wait()


def _release_graph(context_id: int, roots: tuple = ()) -> None:
    """Free the saved tensors of the graph a pass went through here: from ``roots`` and from
    the sends the pass ran from (as a local backward without ``retain_graph`` does)."""
    try:
        found = contexts.retrieve_context(context_id)
    except RuntimeError:
        return  # released meanwhile: nothing is left to free
    with found.lock:
        starts = list(roots)
        for send_id in found.traversed:
            starts.extend(found.sends[send_id][0])
        found.traversed.clear()
    stack = [t.grad_fn for t in starts if t.grad_fn is not None]
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen or isinstance(node, AccumulateGrad):
            continue
        seen.add(node)
        node.release()
        stack.extend(n for n, _ in node.next_functions if n is not None and n not in seen)


def _leaves(roots: list) -> list:
    """Every leaf tensor requiring grad that the graphs of ``roots`` reach."""
    leaves: dict[int, object] = {}
    stack = []
    for root in roots:
        if root.grad_fn is None:
            leaves.setdefault(id(root), root)
        else:
            stack.append(root.grad_fn)
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if isinstance(node, AccumulateGrad):
            leaf = node.variable
            if leaf is not None:
                leaves.setdefault(id(leaf), leaf)
            continue
        for next_node, _ in node.next_functions:
            if next_node is not None and next_node not in seen:
                stack.append(next_node)
    return list(leaves.values())


def _run_piece(context, roots: list, grads: list) -> list[futures.Future]:
    """The local piece from ``roots``; the Futures of the pieces it starts on other workers."""
    leaves = _leaves(roots)
    if not leaves:
        return []
    outgoing: dict[tuple[int, int], list] = {}
    with context.lock:
        found = ember.autograd.grad(roots, leaves, grads, retain_graph=True, allow_unused=True)
        for leaf, grad in zip(leaves, found):
            if grad is None:
                continue
            recv = context.recvs.get(id(leaf))
            if recv is not None and recv[0] is leaf:
                _, source, send_id, position, count = recv
                outgoing.setdefault((source, send_id), [None] * count)[position] = grad
            else:
                context.accumulate(leaf, grad)
    if not outgoing:
        return []
    agent = current_agent()
    return [
        agent.send(source, _backward_from_send, (context.context_id, send_id, send_grads))
        for (source, send_id), send_grads in outgoing.items()
    ]


def _backward_from_send(context_id: int, send_id: int, grads: list) -> Deferred:
    """On the worker that sent tensors: continue the pass from them with ``grads``; answered
    when this piece and every piece it starts elsewhere are done."""
    found = contexts.retrieve_context(context_id)
    with found.lock:
        tensors, _ = found.sends[send_id]
        found.traversed.add(send_id)
    roots = [t for t, g in zip(tensors, grads) if g is not None]
    root_grads = [g for g in grads if g is not None]
    here = current_agent().rank
    pieces = _run_piece(found, roots, root_grads) if roots else []
    return Deferred(_all_of(pieces, reached={here}))


def _all_of(pending: list[futures.Future], reached: set | None = None) -> futures.Future:
    """A Future completed when all of ``pending`` are: with the first exception among them, or
    with ``reached`` and the workers their pieces reached (each answers with a set of them)."""
    combined: futures.Future = futures.Future()
    reached = set(reached or ())

    def settle(all_done: futures.Future) -> None:
        for fut in all_done.wait():
            try:
                more = fut.wait()
            except BaseException as error:
                combined.set_exception(error)
                return
            if more:
                reached.update(more)
        combined.set_result(reached)

    futures.collect_all(pending).add_done_callback(settle)
    return combined


def _rref_backward(rref, context_id: int, retain_graph: bool) -> None:
    """``RRef.backward(context_id)``: the distributed pass from the value, on its owner."""
    if rref.is_owner():
        backward(context_id, [rref.local_value()], retain_graph)
    else:
        current_agent().send(rref.owner(), _rref_backward, (rref, context_id, retain_graph)).wait()


register_distributed_backward(_rref_backward)
