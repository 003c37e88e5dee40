"""DataLoader(num_workers > 0): worker processes as torch runs them, checked against torch."""

import glob
import mmap
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info
from ember.utils.data._shared_batch import SHM_DIR

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shared memory")


@pytest.fixture(autouse=True)
def _hard_timeout():
    """No test here may hang: SIGALRM turns a stuck wait into a failure after 20 s."""

    def expire(signum, frame):
        raise TimeoutError("test_dataloader_workers: test ran past its 20 s limit")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _segments():
    return glob.glob(os.path.join(SHM_DIR, f"ember-dl-{os.getpid()}-*"))


class Squares(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return ember.full((2,), float(i * i)), i


class Seeds(Dataset):
    """What a worker sees: its info, and one draw from each seeded generator."""

    def __init__(self, torch_mod=None):
        self.torch = torch_mod

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = self.torch.utils.data.get_worker_info() if self.torch else get_worker_info()
        rand = self.torch.rand(1).item() if self.torch else ember.rand(1).item()
        return [info.id, info.num_workers, info.seed, rand, random.random(), np.random.rand()]


class Failing(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            raise ValueError("sample 3 is broken")
        return i


class Pids(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return os.getpid()


class Range(IterableDataset):
    """0..n-1, split between workers through get_worker_info as torch's docs show."""

    def __init__(self, n, shard=True):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


def test_batches_arrive_in_sampler_order_as_without_workers():
    with_workers = list(DataLoader(Squares(), batch_size=3, num_workers=2))
    without = list(DataLoader(Squares(), batch_size=3))
    assert len(with_workers) == len(without) == 4
    for (xw, iw), (x0, i0) in zip(with_workers, without):
        assert type(xw) is ember.Tensor and xw.dtype == ember.float32
        assert xw.tolist() == x0.tolist() and iw.tolist() == i0.tolist()
    assert _segments() == []
    assert len(iter(DataLoader(Squares(), batch_size=3, num_workers=1))) == 4


def test_shuffle_with_generator_matches_torch_with_and_without_workers(torch_mod):
    data = list(range(20))
    order = [
        b.tolist()
        for b in DataLoader(
            data, batch_size=5, shuffle=True, generator=ember.Generator().manual_seed(7)
        )
    ]
    workers = [
        b.tolist()
        for b in DataLoader(
            data,
            batch_size=5,
            shuffle=True,
            num_workers=2,
            generator=ember.Generator().manual_seed(7),
        )
    ]
    torch_order = [
        b.tolist()
        for b in torch_mod.utils.data.DataLoader(
            data, batch_size=5, shuffle=True, generator=torch_mod.Generator().manual_seed(7)
        )
    ]
    assert order == workers == torch_order


def test_worker_info_and_seeds_match_torch_workers(torch_mod):
    ember.manual_seed(3)
    ours = list(DataLoader(Seeds(), batch_size=None, num_workers=2))
    torch_mod.manual_seed(3)
    theirs = list(
        torch_mod.utils.data.DataLoader(
            Seeds(torch_mod), batch_size=None, num_workers=2, multiprocessing_context="fork"
        )
    )
    assert [r[:3] for r in ours] == [r[:3] for r in theirs]
    assert [r[0] for r in ours] == [0, 1, 0, 1]
    np.testing.assert_allclose([r[3:] for r in ours], [r[3:] for r in theirs], rtol=0, atol=0)
    assert get_worker_info() is None


def test_worker_init_fn_runs_in_each_worker_before_loading():
    def init(worker_id):
        info = get_worker_info()
        info.dataset.n = 100 + worker_id  # each worker's own copy

    class Sized(Dataset):
        n = 0

        def __len__(self):
            return 4

        def __getitem__(self, i):
            return self.n

    got = [b.item() for b in DataLoader(Sized(), num_workers=2, worker_init_fn=init)]
    assert got == [100, 101, 100, 101]


def test_iterable_dataset_workers_shard_through_get_worker_info():
    batches = list(DataLoader(Range(10), batch_size=2, num_workers=2))
    values = sorted(v for b in batches for v in b.tolist())
    assert values == list(range(10))
    # without sharding each worker iterates its own full copy, as torch does
    doubled = [int(v) for v in DataLoader(Range(5, shard=False), batch_size=None, num_workers=2)]
    assert sorted(doubled) == sorted(list(range(5)) * 2)
    assert doubled[:4] == [0, 0, 1, 1]  # worker 0, worker 1, worker 0, ...


def test_iterable_dataset_drop_last_per_worker_as_torch(torch_mod):
    ours = [b.tolist() for b in DataLoader(Range(7), batch_size=2, num_workers=2, drop_last=True)]

    class TorchRange(torch_mod.utils.data.IterableDataset):
        def __iter__(self):
            info = torch_mod.utils.data.get_worker_info()
            return iter(range(info.id, 7, info.num_workers))

    theirs = [
        b.tolist()
        for b in torch_mod.utils.data.DataLoader(
            TorchRange(), batch_size=2, num_workers=2, drop_last=True
        )
    ]
    assert ours == theirs


def test_exception_in_worker_names_the_worker_and_keeps_the_traceback():
    loader = DataLoader(Failing(), batch_size=2, num_workers=2)
    with pytest.raises(ValueError, match="Caught ValueError in DataLoader worker process 1") as e:
        list(loader)
    assert "Original Traceback (most recent call last)" in str(e.value)
    assert 'raise ValueError("sample 3 is broken")' in str(e.value)
    assert "ValueError: sample 3 is broken" in str(e.value)


def test_killed_worker_raises_within_seconds():
    class Killer(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            if i == 5:
                os.kill(os.getpid(), signal.SIGKILL)
            return i

    start = time.monotonic()
    with pytest.raises(
        RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"
    ):
        list(DataLoader(Killer(), batch_size=2, num_workers=2))
    assert time.monotonic() - start < 5


def test_timeout_raises_torch_message():
    class Slow(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            time.sleep(1)
            return i

    it = iter(DataLoader(Slow(), num_workers=1, timeout=0.3))
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(it)
    assert time.monotonic() - start < 0.9
    del it


def test_invalid_settings_raise_as_torch(torch_mod):
    cases = [
        dict(num_workers=-1),
        dict(prefetch_factor=2),
        dict(persistent_workers=True),
        dict(timeout=-1),
        dict(num_workers=1, prefetch_factor=-1),
        dict(multiprocessing_context="fork"),
        dict(num_workers=1, multiprocessing_context="nope"),
    ]
    for kwargs in cases:
        with pytest.raises(Exception) as theirs:
            torch_mod.utils.data.DataLoader([1, 2], **kwargs)
        with pytest.raises(type(theirs.value)) as ours:
            DataLoader([1, 2], **kwargs)
        assert str(ours.value) == str(theirs.value), kwargs
    assert DataLoader([1], num_workers=2).prefetch_factor == 2
    with pytest.raises(AssertionError, match="prefetch_factor must be greater than 0"):
        iter(DataLoader([1], num_workers=1, prefetch_factor=0))


def test_more_workers_than_cpus_warns_as_torch(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    with pytest.warns(UserWarning, match="This DataLoader will create 2 worker processes in total"):
        assert [b.item() for b in DataLoader([5, 6], num_workers=2)] == [5, 6]


def test_persistent_workers_keep_their_processes_across_epochs():
    loader = DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True)
    first = sorted({p for b in loader for p in b.tolist()})
    second = sorted({p for b in loader for p in b.tolist()})
    assert first == second and len(first) == 2 and os.getpid() not in first
    partial = iter(loader)
    next(partial)  # an unfinished epoch: the next one still starts from the beginning
    assert len(list(loader)) == 3
    workers = loader._iterator._workers
    del loader, partial
    import gc

    gc.collect()
    assert all(not w.is_alive() and w.exitcode is not None for w in workers)
    assert _segments() == []


def test_batches_cross_through_shared_memory_and_workers_exit_when_dropped():
    big = TensorDataset(ember.arange(4 * 256 * 256, dtype=ember.float32).reshape(4, 256, 256))
    it = iter(DataLoader(big, batch_size=2, num_workers=2))
    (batch,) = next(it)
    assert type(batch) is ember.Tensor and batch.shape == (2, 256, 256)
    base = batch.numpy()
    while base is not None and not isinstance(base, mmap.mmap):
        base = base.base
    assert isinstance(base, mmap.mmap), "the batch should view the shared segment"
    assert batch[1, 0, 0].item() == 256 * 256
    workers = it._workers
    del it
    assert all(not w.is_alive() for w in workers)  # shut down when the iterator was dropped
    assert _segments() == []  # the prefetched batch nobody took is gone too
    assert batch.sum().item() == float(np.arange(2 * 256 * 256, dtype=np.float64).sum())


def test_non_leaf_tensor_requiring_grad_cannot_leave_a_worker():
    class Graph(Dataset):
        def __len__(self):
            return 1

        def __getitem__(self, i):
            return ember.ones(2, requires_grad=True) * 2

    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        list(DataLoader(Graph(), num_workers=1))


def test_pin_memory_is_accepted_and_warns_without_accelerator():
    loader = DataLoader(Squares(), batch_size=5, num_workers=1, pin_memory=True)
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true"):
        batches = list(loader)
    assert [i.tolist() for _, i in batches] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]


def test_spawned_workers_get_tensor_datasets_through_shared_memory():
    ds = TensorDataset(ember.arange(6.0), ember.arange(6))
    loader = DataLoader(ds, batch_size=3, num_workers=1, multiprocessing_context="spawn")
    assert [x.tolist() for x, _ in loader] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert _segments() == []


def _exited(pid):
    """The process is gone or a zombie waiting for a reaper that is not ours."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_exit_and_clean_up_when_the_main_process_is_killed(tmp_path):
    script = tmp_path / "killed_main.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, signal, time
            import ember
            from ember.utils.data import DataLoader, Dataset
            class Slow(Dataset):
                def __len__(self):
                    return 100
                def __getitem__(self, i):
                    time.sleep(0.05)
                    return ember.ones(1000)
            it = iter(DataLoader(Slow(), batch_size=2, num_workers=2))
            next(it)
            print([os.getpid()] + [w.pid for w in it._workers], flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=15)
    assert done.returncode == -signal.SIGKILL, done.stderr
    main_pid, *worker_pids = eval(done.stdout.strip())
    deadline = time.monotonic() + 5
    while not all(_exited(pid) for pid in worker_pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_exited(pid) for pid in worker_pids)
    assert glob.glob(os.path.join(SHM_DIR, f"ember-dl-{main_pid}-*")) == []


def test_interpreter_exits_with_persistent_workers_alive(tmp_path):
    script = tmp_path / "exit_with_workers.py"
    script.write_text(
        textwrap.dedent(
            """
            import os
            import ember
            from ember.utils.data import DataLoader, TensorDataset
            ds = TensorDataset(ember.arange(100.0))
            loader = DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True)
            it = iter(loader)
            next(it)
            print([os.getpid()] + [w.pid for w in it._workers], flush=True)
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=15)
    assert done.returncode == 0, done.stderr
    main_pid, *worker_pids = eval(done.stdout.strip())
    assert all(_exited(pid) for pid in worker_pids)
    assert glob.glob(os.path.join(SHM_DIR, f"ember-dl-{main_pid}-*")) == []
