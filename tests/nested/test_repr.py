"""Nested tensors print as PyTorch prints them."""

import re

import ember

from .helpers import arrays, as_nested, nested

DATA = [[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], [[6.0, 7.0, 8.0]]]


def _same(e_text: str, t_text: str) -> None:
    def norm(s):
        s = re.sub(r"j\d+", "j", s.replace("torch.", "ember."))
        return re.sub(r" object at 0x[0-9a-f]+", "", s)

    assert norm(e_text) == norm(t_text)


def test_strided_repr():
    nt = ember.nested.nested_tensor([ember.tensor(d) for d in DATA])
    assert repr(nt) == (
        "nested_tensor([\n"
        "  tensor([[0., 1., 2.],\n"
        "          [3., 4., 5.]]),\n"
        "  tensor([[6., 7., 8.]])\n"
        "])"
    )
    grad = ember.nested.nested_tensor([ember.tensor(d) for d in DATA], requires_grad=True) * 2
    assert repr(grad).endswith("]], requires_grad=True)\n], grad_fn=<MulBackward0>)")


def test_jagged_repr():
    nt = ember.nested.nested_tensor([ember.tensor(d) for d in DATA], layout=ember.jagged)
    assert re.fullmatch(
        r"NestedTensor\(size=\(2, j\d+, 3\), offsets=tensor\(\[0, 2, 3\]\), contiguous=True\)",
        repr(nt),
    )
    nt.requires_grad_()
    assert "requires_grad=True, contiguous=True)" in repr(nt)
    assert "grad_fn=<MulBackward0 object at" in repr(nt * 2)


def test_reprs_match_torch(torch_nested):
    torch = torch_nested
    for layout in ("strided", "jagged"):
        for make in (
            lambda m, layout=layout: nested(m, arrays(), layout),
            lambda m, layout=layout: nested(m, arrays(), layout, requires_grad=True),
            lambda m, layout=layout: nested(m, arrays(), layout, requires_grad=True) * 2,
            lambda m, layout=layout: m.nested.nested_tensor(
                [[1, 2], [3]], layout=getattr(m, layout)
            ),
        ):
            _same(repr(make(ember)), repr(make(torch)))
    _same(
        repr(as_nested(ember, arrays())[0].transpose(1, 2)),
        repr(as_nested(torch, arrays())[0].transpose(1, 2)),
    )
    empty = ember.nested.nested_tensor([])
    _same(repr(empty), repr(torch.nested.nested_tensor([])))
