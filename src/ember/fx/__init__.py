"""``ember.fx``: torch.fx on ember — trace a module into a graph, edit it, run the result.

``symbolic_trace`` runs a module's forward on ``Proxy`` values and records what happens as a
``Graph`` of ``Node`` s; a ``GraphModule`` holds the graph and a ``forward`` generated from it
as readable Python (``gm.code``). Passes edit the graph (``node.replace_all_uses_with``,
``graph.inserting_after``, ``graph.erase_node``, ``subgraph_rewriter.replace_pattern``) or
run it (``Interpreter``, ``Transformer``, ``passes.shape_prop.ShapeProp``).

Example::
    >>> import ember, ember.fx
    >>> def f(x, y):
    ...     return ember.add(x, y).relu()
    >>> gm = ember.fx.symbolic_trace(f)
    >>> for node in gm.graph.nodes:
    ...     if node.target == ember.add:
    ...         node.target = ember.mul
    >>> _ = gm.recompile()
    >>> gm(ember.tensor([2.0]), ember.tensor([3.0]))
    tensor([6.])

Differences from torch.fx: targets print with ember's public names (``ember.relu``,
``ember.nn.functional.gelu``) where torch prints ``torch.relu`` or ``torch._C._nn.gelu``,
and a traced ``F.relu(x)`` records the arguments as written (torch adds its defaults). ember
functions reach the tracer through wrappers installed for the length of a trace (see
``_patching``) rather than ``__torch_function__``.
"""

from . import passes
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from .graph import CodeGen, Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_arg
from .proxy import Proxy
from .subgraph_rewriter import replace_pattern

__all__ = [
    "symbolic_trace",
    "Tracer",
    "Graph",
    "GraphModule",
    "Node",
    "Proxy",
    "Interpreter",
    "Transformer",
    "wrap",
    "PH",
    "CodeGen",
    "replace_pattern",
    "has_side_effect",
    "map_arg",
    "passes",
]
