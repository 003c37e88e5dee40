"""``ember.nn.parallel``: data-parallel wrappers.

``DataParallel`` runs its module in this process (ember has one CUDA device per process in
mind, as PyTorch recommends); ``DistributedDataParallel`` needs a process group, which
``ember.distributed`` will provide.
"""

from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
