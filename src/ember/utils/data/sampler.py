"""Samplers: the order in which a DataLoader visits a map-style dataset."""

from __future__ import annotations

import itertools


class Sampler:
    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation each epoch (or ``num_samples`` draws with replacement)."""

    def __init__(self, data_source, replacement: bool = False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got "
                f"num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        from ... import _dtype as dt
        from ..._creation import empty, randint, randperm
        from ..._random import Generator

        n = len(self.data_source)
        generator = self.generator
        own_generator = generator is None
        if own_generator:
            # as torch: a fresh generator seeded by one int64 draw from the default one, so the
            # order equals torch's for the same manual_seed
            seed = int(empty((), dtype=dt.int64).random_().item())
            generator = Generator()
            generator.manual_seed(seed)
        if self.replacement:
            for _ in range(self.num_samples // 32):  # torch draws in blocks of 32
                yield from randint(0, n, (32,), generator=generator).tolist()
            yield from randint(0, n, (self.num_samples % 32,), generator=generator).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=generator).tolist()
        # torch draws one more permutation for the remainder even when it is empty; only a
        # caller's generator can tell (its state moves on), a fresh one is dropped here
        if self.num_samples % n or not own_generator:
            yield from randperm(n, generator=generator).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    def __init__(self, indices, generator=None):
        self.indices = list(indices)
        self.generator = generator

    def __iter__(self):
        from ..._creation import randperm

        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size``."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        # islice takes a batch's indices in C (as torch's BatchSampler), not one append each
        indices, size = iter(self.sampler), self.batch_size
        while True:
            batch = list(itertools.islice(indices, size))
            if len(batch) < size:
                if batch and not self.drop_last:
                    yield batch
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probability proportional to ``weights``."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        from ... import _dtype as dt
        from ..._creation import as_tensor

        weights_tensor = as_tensor(weights, dtype=dt.float64)
        if weights_tensor.dim() != 1:
            raise ValueError(
                "weights should be a 1d sequence but given weights have shape "
                f"{tuple(weights_tensor.shape)}"
            )
        self.weights = weights_tensor
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self):
        from ..._creation import multinomial

        draw = multinomial(
            self.weights, self.num_samples, self.replacement, generator=self.generator
        )
        yield from draw.tolist()

    def __len__(self) -> int:
        return self.num_samples
