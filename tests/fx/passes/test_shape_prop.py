"""ember.fx.passes.shape_prop.ShapeProp (src/ember/fx/passes/shape_prop.py)."""

import ember
import ember.fx as fx
import ember.nn as nn
from ember.fx.passes.shape_prop import ShapeProp, TensorMetadata


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        y = self.conv(x).flatten(1)
        return y.argmax(dim=1), y.double().chunk(2, dim=1), y.shape


def test_shape_prop_records_shapes_dtypes_and_layout():
    gm = fx.symbolic_trace(Net())
    out = ShapeProp(gm).propagate(ember.randn(2, 3, 6, 6))
    meta = {n.name: n.meta for n in gm.graph.nodes}
    x_meta = meta["x"]["tensor_meta"]
    assert isinstance(x_meta, TensorMetadata)
    assert (
        x_meta.shape == (2, 3, 6, 6) and x_meta.dtype == ember.float32 and not x_meta.requires_grad
    )
    assert x_meta.stride == (108, 36, 6, 1) and x_meta.memory_format == ember.contiguous_format
    conv = meta["conv"]["tensor_meta"]
    assert conv.shape == (2, 4, 4, 4) and conv.requires_grad
    assert meta["argmax"]["tensor_meta"].dtype == ember.int64
    chunks = meta["chunk"]["tensor_meta"]
    assert [c.shape for c in chunks] == [(2, 32), (2, 32)] and chunks[0].dtype == ember.float64
    assert meta["conv"]["type"] is ember.Tensor and meta["chunk"]["type"] is tuple
    assert "tensor_meta" not in meta["getattr_1"] and meta["getattr_1"]["type"] is ember.Size
    assert out[2] == (2, 64)
