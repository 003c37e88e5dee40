"""ember._scratch: large buffers handed out again only once nobody holds them."""

import numpy as np

from ember._scratch import ScratchPool


def test_pool_reuses_a_buffer_only_once_it_is_free():
    pool = ScratchPool()
    first = pool.empty((512, 1024), np.float32)
    second = pool.empty((512, 1024), np.float32)
    assert first is not second  # `first` is still held
    view = second[1:]
    del second
    third = pool.empty((512, 1024), np.float32)
    assert third is not view.base  # a view keeps its buffer busy
    address = first.__array_interface__["data"][0]
    del first
    again = pool.empty((512, 1024), np.float32)
    assert again.__array_interface__["data"][0] == address


def test_small_arrays_are_not_pooled():
    pool = ScratchPool()
    a = pool.empty((4, 4), np.float64)
    del a
    assert pool._bytes == 0
