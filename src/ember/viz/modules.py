"""``track_modules``: tag each graph node with the nn.Module whose forward recorded it, so that
``make_dot`` can group the picture into one cluster per module."""

from __future__ import annotations

from ..autograd import _watch
from ..autograd.node import AccumulateGrad


class track_modules(_watch.Observer):
    """While open, forward hooks on every submodule of ``model`` keep a stack of the modules
    running, and every node recorded is tagged with it (``node._module``: a tuple of
    ``(path, class name)`` from the outermost submodule in).

    Example::
        >>> with ember.viz.track_modules(model):
        ...     loss = loss_fn(model(x), y)
        >>> dot = ember.viz.make_dot(loss, params=dict(model.named_parameters()), max_depth=1)
    """

    def __init__(self, model):
        self.model = model
        self._stack: list = [()]
        self._handles: list = []

    def __enter__(self) -> track_modules:
        for path, module in self.model.named_modules():
            if not path:
                continue  # the model itself: every node is inside it
            entry = (path, type(module).__name__)
            self._handles.append(module.register_forward_pre_hook(self._enter_hook(entry)))
            self._handles.append(module.register_forward_hook(self._leave_hook))
        _watch.add(self)
        return self

    def __exit__(self, *exc) -> bool:
        _watch.remove(self)
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        del self._stack[1:]
        return False

    def _enter_hook(self, entry):
        def hook(module, args):
            self._stack.append(self._stack[-1] + (entry,))

        return hook

    def _leave_hook(self, module, args, output):
        if len(self._stack) > 1:
            self._stack.pop()

    def node_created(self, node, out, saved) -> None:
        where = self._stack[-1]
        if not where:
            return
        node._module = where
        for edge in node._edges:
            # a parameter's leaf belongs to the module that first uses it
            if edge is not None and edge[0].__class__ is AccumulateGrad:
                if edge[0]._module is None:
                    edge[0]._module = where
