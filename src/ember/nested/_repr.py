"""How nested tensors print: PyTorch's ``nested_tensor([...])`` for the strided layout (each
component as a tensor prints, indented) and ``NestedTensor(size=..., offsets=...)`` for the
jagged layout."""

from __future__ import annotations


def _grad_suffix(nt, node_repr) -> str:
    fn = nt.grad_fn
    if fn is not None:
        return f", grad_fn={node_repr(fn)}"
    return ", requires_grad=True" if nt.requires_grad else ""


def _short_node(fn) -> str:
    return f"<{type(fn).__name__}>"


def nested_repr(nt) -> str:
    if nt.layout == "jagged":
        size = "(" + ", ".join(str(d) for d in nt.shape) + ")"
        return (
            f"NestedTensor(size={size}, offsets={nt._offsets!r}{_grad_suffix(nt, repr)}, "
            f"contiguous={nt.is_contiguous()})"
        )
    parts = []
    for component in nt.unbind():
        shown = component.detach()
        if nt.requires_grad:
            shown.requires_grad_(True)
        parts.append("\n".join(f"  {line}" for line in repr(shown).split("\n")))
    body = ",\n".join(parts)
    return f"nested_tensor([\n{body}\n]{_grad_suffix(nt, _short_node)})"
