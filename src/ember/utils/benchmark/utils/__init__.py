"""The modules behind ``ember.utils.benchmark``, laid out as PyTorch lays them out, so that
``from torch.utils.benchmark.utils.common import Measurement`` also runs under ember."""
