"""A nested tensor's _data refuses every array entry point with the op's name."""

import numpy as np
import pytest

import ember
from ember.nested._storage import KERNELS, NestedStorage

from .helpers import arrays, nested


def test_array_entry_points_raise_not_implemented():
    storage = NestedStorage(ember.jagged)
    for call in (
        lambda: np.exp(storage),
        lambda: np.concatenate([storage]),
        lambda: storage.shape,
        lambda: storage[0],
        lambda: storage + 1,
        lambda: KERNELS.cumsum,
    ):
        with pytest.raises(NotImplementedError, match="not supported for NestedTensor"):
            call()
    assert not hasattr(storage, "shape")  # an AttributeError too: hasattr keeps its meaning


def test_dense_op_reaching_the_data_names_the_op():
    with pytest.raises(NotImplementedError, match=r"^cumprod\(\): not supported"):
        ember.cumprod(nested(ember, arrays()), 1)
