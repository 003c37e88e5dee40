"""Ops without a nested kernel raise NotImplementedError (a RuntimeError) naming the op."""

import pytest

import ember

from .helpers import arrays, nested

UNSUPPORTED = {
    "cumsum": lambda x: ember.cumsum(x, -1),
    "cumsum method": lambda x: x.cumsum(-1),
    "sort": lambda x: x.sort(),
    "stack": lambda x: ember.stack([x, x]),
    "max": lambda x: x.max(),
}


@pytest.mark.parametrize("layout", ["strided", "jagged"])
@pytest.mark.parametrize("name", UNSUPPORTED)
def test_unsupported_op_names_itself_and_nested_tensor(layout, name):
    nt = nested(ember, arrays(), layout)
    with pytest.raises(NotImplementedError) as info:
        UNSUPPORTED[name](nt)
    assert isinstance(info.value, RuntimeError)
    op = name.split()[0]
    assert str(info.value).startswith(f"{op}(): not supported for NestedTensor ({layout} layout)")


def test_saving_is_refused_naming_save(tmp_path):
    with pytest.raises(NotImplementedError, match=r"^save\(\): not supported for NestedTensor"):
        ember.save(nested(ember, arrays()), tmp_path / "nt.pt")


def test_slicing_is_refused_with_the_index_named():
    with pytest.raises(
        NotImplementedError, match=r"indexing with \(slice\(None, None, None\), 0\)"
    ):
        nested(ember, arrays())[:, 0]


def test_module_without_a_nested_kernel_raises_a_runtime_error():
    with pytest.raises(RuntimeError):
        ember.nn.Conv1d(4, 4, 1)(nested(ember, arrays()))
    with pytest.raises(RuntimeError, match="doesn't support sizes"):
        ember.nn.Conv1d(4, 4, 1)(nested(ember, arrays(), "strided"))


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_error_types_match_torch(torch_nested, layout):
    torch = torch_nested
    for call in (lambda m, x: m.cumsum(x, -1), lambda m, x: x.sort()):
        with pytest.raises(NotImplementedError):
            call(torch, nested(torch, arrays(), layout))
        with pytest.raises(NotImplementedError):
            call(ember, nested(ember, arrays(), layout))
