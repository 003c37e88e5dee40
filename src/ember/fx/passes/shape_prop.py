"""``ShapeProp``: run a graph on example inputs and record each node's tensor metadata.

Example::
    >>> import ember, ember.fx
    >>> from ember.fx.passes.shape_prop import ShapeProp
    >>> gm = ember.fx.symbolic_trace(lambda x: x.sum(dim=0))
    >>> _ = ShapeProp(gm).propagate(ember.ones(2, 3))
    >>> [tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes]
    [(2, 3), (3,), (3,)]
"""

from __future__ import annotations

import traceback
from typing import Any, NamedTuple

from ... import _memory_format
from ..._dtype import dtype
from ..._tensor import Size, Tensor
from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    """What a pass may want to know about a tensor without holding it."""

    shape: Size
    dtype: dtype
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: _memory_format.memory_format | None
    is_quantized: bool
    qparams: dict[str, Any]


def _extract_tensor_metadata(result: Tensor) -> TensorMetadata:
    memory_format = None
    for candidate in (
        _memory_format.contiguous_format,
        _memory_format.channels_last,
        _memory_format.channels_last_3d,
    ):
        try:
            if result.is_contiguous(memory_format=candidate):
                memory_format = candidate
                break
        except (RuntimeError, ValueError):  # channels_last asks for 4-d, channels_last_3d 5-d
            continue
    return TensorMetadata(
        result.shape,
        result.dtype,
        result.requires_grad,
        result.stride(),
        memory_format,
        False,  # ember has no quantized tensors
        {},
    )


class ShapeProp(Interpreter):
    """Runs the graph on real inputs (``propagate(*args)``) and stores, for every node whose
    value holds tensors, ``node.meta['tensor_meta']`` (a ``TensorMetadata``, or a structure
    of them for tuple results), and ``node.meta['type']``, the Python type of the value.
    """

    def run_node(self, n: Node) -> Any:
        try:
            result = super().run_node(n)
        except Exception as e:
            traceback.print_exc()
            raise RuntimeError(
                f"ShapeProp error for: node={n.format_node()} with meta={n.meta}"
            ) from e

        found_tensor = False

        def extract(obj: Any) -> Any:
            nonlocal found_tensor
            if isinstance(obj, Tensor):
                found_tensor = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the graph on ``args``, annotating every node; returns the graph's result."""
        return super().run(*args)
