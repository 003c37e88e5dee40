"""``to_padded_tensor``: a nested tensor as one dense tensor, each component padded at the end
of every dimension (with F.pad and stack, so gradients reach the components)."""

from __future__ import annotations

import ember

from .._tensor import Tensor
from ._tensor import NestedTensor


def to_padded_tensor(input: Tensor, padding: float, output_size=None, out=None) -> Tensor:
    """The components of ``input`` padded with ``padding`` to the largest size in each dimension
    (or to ``output_size``), stacked. For the jagged layout only the ragged dimension's entry
    of ``output_size`` counts, and a smaller one truncates, as in PyTorch.

    Example::
        >>> nt = ember.nested.nested_tensor([ember.ones(1), ember.ones(2)])
        >>> ember.nested.to_padded_tensor(nt, 0.0)
        tensor([[1., 0.],
                [1., 1.]])
    """
    if not isinstance(input, NestedTensor):
        raise NotImplementedError(
            "Could not run 'aten::to_padded_tensor' with arguments from the 'CPU' backend: "
            "to_padded_tensor() needs a nested tensor, got a dense one"
        )
    components = input.unbind()
    ndim = input.dim()
    padded = [len(components)] + [
        max((c.shape[d] for c in components), default=0) for d in range(ndim - 1)
    ]
    if output_size is not None and input.layout == "jagged":
        # PyTorch's jagged kernel reads only the ragged entry (and truncates to it)
        ragged = input._ragged_idx
        padded[ragged] = int(output_size[ragged])
        axis = ragged - 1
        components = [
            c.narrow(axis, 0, padded[ragged]) if c.shape[axis] > padded[ragged] else c
            for c in components
        ]
    elif output_size is not None:
        output_size = [int(s) for s in output_size]
        if len(output_size) != ndim:
            raise RuntimeError(
                "Length of output_size does not match NestedTensor dims. Broadcasting is not "
                "supported."
            )
        if any(want < have for want, have in zip(output_size, padded)):
            raise RuntimeError(
                "Value in output_size is less than NestedTensor padded size. Truncation is not "
                "supported."
            )
        padded = output_size
    pad = ember.nn.functional.pad
    rows = []
    for c in components:
        widths = []
        for d in reversed(range(ndim - 1)):
            widths += [0, padded[d + 1] - c.shape[d]]
        rows.append(pad(c, widths, value=padding) if any(widths) else c)
    if rows:
        result = ember.stack(rows)
    else:
        result = ember.empty(0, *padded[1:], dtype=input.dtype, device=input.device)
    if padded[0] > len(rows):
        extra = ember.full(
            (padded[0] - len(rows), *padded[1:]), padding, dtype=input.dtype, device=input.device
        )
        result = ember.cat([result, extra])
    if out is not None:
        out.copy_(result)
        return out
    return result
