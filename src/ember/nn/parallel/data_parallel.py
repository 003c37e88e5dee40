"""``nn.DataParallel`` as a thin single-process wrapper.

PyTorch's DataParallel splits each batch over several GPUs driven from one process; PyTorch
itself recommends DistributedDataParallel instead. ember's wrapper keeps the interface
(``.module``, ``device_ids``, ``output_device``, the ``module.`` prefix of state_dict keys) and
runs the wrapped module on the whole batch.
"""

from __future__ import annotations

from ..modules.module import Module


class DataParallel(Module):
    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
