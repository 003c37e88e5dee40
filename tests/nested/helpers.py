"""Build the same nested tensor in ember and in PyTorch, and compare results."""

from __future__ import annotations

import numpy as np
import pytest

import ember

SHAPES = [(2, 4), (3, 4), (1, 4)]  # a batch of three sequences of 4 features


def arrays(shapes=SHAPES, seed=0, dtype=np.float32) -> list:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def components(lib, data, requires_grad=False) -> list:
    return [lib.tensor(a, requires_grad=requires_grad) for a in data]


def nested(lib, data, layout="jagged", requires_grad=False):
    """A leaf nested tensor of ``data`` in ``lib`` (ember or torch)."""
    return lib.nested.nested_tensor(
        [lib.tensor(a) for a in data], layout=getattr(lib, layout), requires_grad=requires_grad
    )


def as_nested(lib, data, layout="jagged"):
    """(nested tensor, its leaf components) with the history kept (as_nested_tensor)."""
    leaves = components(lib, data, requires_grad=True)
    return lib.nested.as_nested_tensor(leaves, layout=getattr(lib, layout)), leaves


def to_numpy(x):
    """Nested tensors as the list of their components; tuples and lists element-wise."""
    if isinstance(x, (list, tuple)):
        return [to_numpy(v) for v in x]
    if x.is_nested:
        return [c.detach().numpy() for c in x.unbind()]
    return x.detach().numpy()


def assert_close(e, t, atol=1e-5, rtol=1e-5) -> None:
    """Same nestedness, layout and values (component by component for nested tensors)."""
    if isinstance(t, (list, tuple)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            assert_close(a, b, atol, rtol)
        return
    if not hasattr(t, "is_nested"):
        np.testing.assert_allclose(e, t, atol=atol, rtol=rtol)
        return
    assert e.is_nested == t.is_nested
    if t.is_nested:
        assert str(e.layout).split(".")[-1] == str(t.layout).split(".")[-1]
        assert e.dim() == t.dim()
        e_parts, t_parts = to_numpy(e), to_numpy(t)
        assert len(e_parts) == len(t_parts)
        for a, b in zip(e_parts, t_parts):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, atol=atol, rtol=rtol)
    else:
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(to_numpy(e), to_numpy(t), atol=atol, rtol=rtol)


def shape_text(shape) -> str:
    """A jagged shape with its nested int renumbered ``j``: ``(2, j, 4)``."""
    import re

    return re.sub(r"j\d+", "j", str(tuple(shape)))


def raises_like(torch_call, ember_call, same_message=True):
    """Both raise the same exception type (ember's message equal to torch's when asked)."""
    with pytest.raises(Exception) as want:
        torch_call()
    with pytest.raises(type(want.value)) as got:
        ember_call()
    if same_message:
        import re

        def norm(s):
            return re.sub(r"j\d+", "j", str(s)).replace("torch.", "ember.")

        assert norm(got.value) == norm(want.value)
    return got.value


__all__ = ["ember"]
