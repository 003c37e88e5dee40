"""ember.utils.data: datasets, samplers and the DataLoader."""

from .dataloader import DataLoader, default_collate, default_convert
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def get_worker_info():
    """None: ember's DataLoader loads in the main process."""
    return None
