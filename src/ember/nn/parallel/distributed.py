"""``nn.parallel.DistributedDataParallel``: average gradients over the ranks of a process group.

At wrap, rank 0's parameters and buffers are broadcast to every rank. Parameters are grouped into
buckets of about ``bucket_cap_mb`` in reverse registration order (the order backward produces
their gradients). A post-accumulate-grad hook on each parameter counts the bucket down; a full
bucket is copied into one flat array and a non-blocking allreduce starts on it while backward
goes on. When the last bucket has started, every bucket is waited for, divided by the world size
and written back into the ``.grad`` of its parameters. Buckets start in index order on every rank
so the collectives match across ranks.

``register_comm_hook(state, hook)`` replaces the allreduce of each bucket by ``hook(state,
GradBucket) -> Future`` (``ember.distributed.algorithms.ddp_comm_hooks``: allreduce, fp16/bf16
compression, PowerSGD). ``gradient_as_bucket_view=True`` makes each ``.grad`` a view into its
bucket's flat buffer, kept across iterations: backward accumulates straight into the bucket and
the reduced values land in ``.grad`` without copies (``zero_grad(set_to_none=True)`` drops the
views; the next backward makes them again). ``static_graph=True`` tells DDP the graph is the
same every iteration: ember then finds the unused parameters once, in the first iteration (as
``find_unused_parameters=True`` would), and marks them ready after every later forward without
walking the graph again; a parameter whose gradient arrives twice in one backward (reentrant
checkpointing) is not supported.

``join()`` (``_uneven_inputs.py``) handles uneven inputs as torch's Join.

The collectives, the watchdog and the communication-hook types are ember.distributed's, reached
through ``ember._distributed_hook``, where ember.distributed registers them when it is imported
(this layer never imports that one): a DDP needs a process group, and none exists before.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable

import numpy as np

from ... import _distributed_hook
from ..modules.module import Module
from ._buckets import Bucket, all_reduce_async, coalesced_broadcast, watched
from ._comm_hooks import check_comm_hook, comm_hook_result, run_comm_hook
from ._uneven_inputs import ACTIVE, SYNCING, UnevenInputs

_UNFINISHED_REDUCTION = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This "
    "error indicates that your module has parameters that were not used in producing loss. You "
    "can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't able "
    "to locate the output tensors in the return value of your module's `forward` function. "
    "Please include the loss function and the structure of the return value of `forward` of "
    "your module when reporting this issue (e.g. list, dict, iterable).\n"
    "Parameter indices which did not receive grad for rank {rank}: {indices}"
)


_FIRST_BUCKET_BYTES = 2**20  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES


class DistributedDataParallel(UnevenInputs, Module):
    """Data parallelism over a process group: each rank runs ``module`` on its share of a batch.

    Example::
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29500",
        ...                         world_size=2, rank=rank)
        >>> model = DistributedDataParallel(Net())
        >>> loss_fn(model(x_of_this_rank), y_of_this_rank).backward()   # grads averaged
    """

    def __init__(
        self,
        module: Module,
        device_ids=None,
        output_device=None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group=None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        delay_all_reduce_named_params=None,
        param_to_hook_all_reduce=None,
        mixed_precision=None,
        device_mesh=None,
    ):
        super().__init__()
        # ember.distributed, registered when imported: without it no process group exists
        dist = _distributed_hook.distributed()
        pg = process_group if process_group is not None else dist.default_group()
        params = []
        for p in module.parameters():
            if p.requires_grad and all(p is not q for q in params):
                params.append(p)
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any parameter "
                "that requires a gradient."
            )
        device_ids, output_device = _check_devices(params, device_ids, output_device)
        self.module = module
        self.process_group = pg
        self.device_ids = device_ids
        self.output_device = output_device
        self.device = params[0].device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = False
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 2**20)
        self._params = params
        self._check_same_shapes(pg, params)
        coalesced_broadcast(pg, params + list(module.buffers()))
        self._buckets, self._where = self._make_buckets(params)
        self._syncing = False  # a backward whose gradients must be reduced is expected
        self._joining = False  # inside join(): forwards take part in the join rounds
        self._divisor = pg.size()
        self._buffer_root = 0
        self._last_active: list[int] = []
        self._next_bucket = 0
        self._ready = [False] * len(params)
        self._hooks = [
            p.register_post_accumulate_grad_hook(self._make_hook(i)) for i, p in enumerate(params)
        ]
        self._comm_hook = None  # (hook, state) once register_comm_hook was called
        self._static_unused: list[int] | None = None  # static_graph: found in iteration 1
        self._iterations = 0  # forwards with grad that expected a synchronised backward
        if gradient_as_bucket_view:
            for bucket in self._buckets:
                bucket.make_views()
        if static_graph:
            self._set_static_graph()

    # --- setup ------------------------------------------------------------------------------

    @staticmethod
    def _check_same_shapes(pg, params) -> None:
        shapes = [tuple(p.shape) for p in params]
        everyone = [None] * pg.size()
        _distributed_hook.distributed().all_gather_object(
            everyone, shapes, group=pg
        )  # polled: a dead rank is an error here
        for rank, theirs in enumerate(everyone):
            if theirs != shapes:
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but rank {pg.rank()} has "
                    f"parameter shapes {shapes} and rank {rank} has {theirs}"
                )

    def _make_buckets(self, params):
        buckets, where, current, size = [], {}, [], 0
        order = list(reversed(range(len(params))))
        for i in order:
            p = params[i]
            if current and params[current[0]]._data.dtype != p._data.dtype:
                buckets.append(current)
                current, size = [], 0
            current.append(i)
            size += p._data.nbytes
            # as torch, a bucket closes once it reaches its cap (the last gradient in it may
            # overshoot), and the first one is small so communication starts early in backward
            cap = self.bucket_bytes_cap
            if not buckets:
                cap = min(_FIRST_BUCKET_BYTES, cap)
            if size >= cap:
                buckets.append(current)
                current, size = [], 0
        if current:
            buckets.append(current)
        made = []
        for b, indices in enumerate(buckets):
            # as torch's rebuilt buckets: parameters in the order backward makes their gradients
            bucket = Bucket(b, [params[i] for i in indices], params[indices[0]]._data.dtype)
            made.append(bucket)
            for slot, i in enumerate(indices):
                where[i] = (b, slot)
        return made, where

    # --- forward ----------------------------------------------------------------------------

    def forward(self, *inputs, **kwargs):
        from ...autograd.grad_mode import is_grad_enabled

        # an evaluation forward (no grad) leaves a pending backward's reduction alone, as torch
        grad_on = is_grad_enabled()
        if grad_on and self._syncing and any(self._ready):
            missing = [i for i, r in enumerate(self._ready) if not r]
            raise RuntimeError(
                _UNFINISHED_REDUCTION.format(rank=self.process_group.rank(), indices=missing)
            )
        if self._joining:
            self._join_round(SYNCING if grad_on and self.require_backward_grad_sync else ACTIVE)
        self._sync_buffers()
        output = self.module(*inputs, **kwargs)
        if grad_on:
            self._reset()
            self._syncing = self.require_backward_grad_sync
            if self._syncing:
                self._iterations += 1
                for i in self._unused_this_iteration(output):
                    self._mark_ready(i)
        return output

    def _unused_this_iteration(self, output) -> list[int]:
        """Indices of the parameters the autograd graph of ``output`` does not reach."""
        if self.static_graph and self._static_unused is not None:
            return self._static_unused  # the graph is static: what the first iteration found
        if not (self.find_unused_parameters or self.static_graph):
            return []
        used = _leaves_reached(output)
        unused = [i for i, p in enumerate(self._params) if id(p) not in used]
        if self.static_graph:
            self._static_unused = unused
        return unused

    def _sync_buffers(self) -> None:
        if self.broadcast_buffers and self.require_forward_param_sync:
            buffers = list(self.module.buffers())
            if buffers and self.process_group.size() > 1:
                coalesced_broadcast(self.process_group, buffers, self._buffer_root)

    def _reset(self) -> None:
        self._next_bucket = 0
        self._ready = [False] * len(self._params)
        for bucket in self._buckets:
            bucket.left = len(bucket.params)
            bucket.work = None
            if bucket.views is None:
                bucket.flat = None

    # --- backward: hooks, buckets, write-back ------------------------------------------------

    def _make_hook(self, index: int):
        def hook(param) -> None:
            if self._syncing and not self._ready[index]:
                self._mark_ready(index)

        return hook

    def _mark_ready(self, index: int) -> None:
        self._ready[index] = True
        b, _ = self._where[index]
        self._buckets[b].left -= 1
        # start buckets strictly in order so every rank issues the same collectives in turn
        while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].left == 0:
            self._start(self._buckets[self._next_bucket])
            self._next_bucket += 1
        if self._next_bucket == len(self._buckets):
            self._finish()

    def _start(self, bucket: Bucket) -> None:
        flat = bucket.new_flat()
        views = bucket.views
        for slot, (p, at) in enumerate(zip(bucket.params, bucket.offsets)):
            g = p._grad
            if views is not None and g is not None and g._data is views[slot]:
                continue  # .grad is this bucket's view: backward accumulated in place
            part = flat[at : at + p._data.size]
            if g is None:
                part[...] = 0
            else:
                part[...] = g._data.reshape(-1)
        bucket.flat = flat
        if self._comm_hook is None:
            bucket.work = all_reduce_async(flat, self.process_group)
        else:
            bucket.work = run_comm_hook(self._comm_hook, bucket, len(self._buckets))

    @watched
    def _finish(self) -> None:
        for bucket in self._buckets:
            if self._comm_hook is None:
                bucket.work.wait()
                reduced = bucket.flat
                reduced /= self._divisor
            else:  # the hook averaged (or whatever it does): its result is the gradient
                reduced = comm_hook_result(bucket.work, bucket)
            self._write_back(bucket, reduced)
            bucket.work = None
            if bucket.views is None:
                bucket.flat = None
        self._syncing = False
        self._ready = [False] * len(self._params)

    def _write_back(self, bucket: Bucket, reduced) -> None:
        """Put the reduced gradients into ``.grad`` (or the bucket views that ``.grad`` is)."""
        from ..._tensor import Tensor

        views = bucket.views
        if views is not None and reduced is not bucket.flat:
            bucket.xp.copyto(bucket.flat, reduced, casting="unsafe")
            reduced = bucket.flat
        for slot, (p, at) in enumerate(zip(bucket.params, bucket.offsets)):
            part = reduced[at : at + p._data.size].reshape(p._data.shape)
            g = p._grad
            unused_allowed = self.find_unused_parameters or self.static_graph
            if g is None and unused_allowed and not part.any():
                continue  # unused on every rank: the gradient stays None, as in torch
            if views is not None:
                if g is None or g._data is not views[slot]:
                    p.grad = Tensor._wrap(views[slot])
                else:
                    g._vc[0] += 1
            elif g is None:
                p.grad = Tensor._wrap(part.astype(p._data.dtype, copy=True))
            elif getattr(g._data.flags, "writeable", True) and g._data.dtype == part.dtype:
                bucket.xp.copyto(g._data, part)
                g._vc[0] += 1
            else:
                p.grad = Tensor._wrap(part.astype(g._data.dtype))

    # --- communication hooks -----------------------------------------------------------------

    def register_comm_hook(self, state: object, hook: Callable) -> None:
        """Reduce each bucket with ``hook(state, bucket) -> Future`` instead of an allreduce.

        The hook gets a ``dist.GradBucket`` (the flat ``buffer()`` of summed-locally gradients,
        not yet averaged) and returns a ``Future`` whose value is a tensor of the buffer's size:
        the gradients to write back into ``.grad``. It may be registered once.

        Example::
            >>> from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
            >>> ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
        """
        check_comm_hook(hook)
        if self._comm_hook is not None:
            raise RuntimeError(
                "register_comm_hook or register_builtin_comm_hook can only be called once."
            )
        self._comm_hook = (hook, state)

    def _register_builtin_comm_hook(self, comm_hook_type) -> None:
        """Register a built-in hook by ``dist.BuiltinCommHookType`` (ALLREDUCE, FP16_COMPRESS)."""
        dist = _distributed_hook.distributed()
        default_hooks, BuiltinCommHookType = dist.default_hooks, dist.BuiltinCommHookType
        hooks = {
            BuiltinCommHookType.ALLREDUCE: default_hooks.allreduce_hook,
            BuiltinCommHookType.FP16_COMPRESS: default_hooks.fp16_compress_hook,
        }
        if comm_hook_type not in hooks:
            raise ValueError(f"Unknown built-in comm hook type: {comm_hook_type!r}")
        self.register_comm_hook(self.process_group, hooks[comm_hook_type])

    def _set_static_graph(self) -> None:
        """Treat the graph as the same every iteration (what ``static_graph=True`` does).

        ember finds the unused parameters once, in the first iteration, and marks them ready at
        the end of every later forward without walking the graph again.
        """
        if self.static_graph:
            warnings.warn(
                "You've set static_graph to be True, no need to set it again.", stacklevel=2
            )
            return
        self.static_graph = True
        if self.find_unused_parameters:
            warnings.warn(
                "You passed find_unused_parameters=true to DistributedDataParallel, "
                "`_set_static_graph` will detect unused parameters automatically, so you do not "
                "need to set find_unused_parameters=true, just be sure these unused parameters "
                "will not change during training loop while calling `_set_static_graph`.",
                stacklevel=2,
            )

    def _get_ddp_logging_data(self) -> dict:
        """What this DDP was built with and has done (a subset of torch's logging data)."""
        sizes = [b.size * np.dtype(b.dtype).itemsize for b in self._buckets]
        return {
            "world_size": self.process_group.size(),
            "rank": self.process_group.rank(),
            "module_name": type(self.module).__name__,
            "device_ids": "" if not self.device_ids else ", ".join(map(str, self.device_ids)),
            "output_device": -1 if self.output_device is None else self.output_device,
            "broadcast_buffers": int(self.broadcast_buffers),
            "bucket_cap_bytes": self.bucket_bytes_cap,
            "find_unused_parameters": int(self.find_unused_parameters),
            "gradient_as_bucket_view": int(self.gradient_as_bucket_view),
            "static_graph": int(self.static_graph),
            "backend_name": self.process_group.name(),
            "iteration": self._iterations,
            "num_parameter_tensors": len(self._params),
            "total_parameter_size_bytes": sum(p._data.nbytes for p in self._params),
            "dtypes": ", ".join(sorted({str(p.dtype).replace("ember.", "") for p in self._params})),
            "bucket_sizes": ", ".join(str(n) for n in sizes),
            "comm_hook": "" if self._comm_hook is None else self._comm_hook[0].__qualname__,
            "is_multi_device_module": 0,
            "has_rebuilt_buckets": 0,
        }

    # --- user controls ----------------------------------------------------------------------

    @contextlib.contextmanager
    def no_sync(self):
        """Accumulate gradients locally; the first backward after the block averages them all.

        Example::
            >>> with ddp.no_sync():
            ...     ddp(x1).sum().backward()     # no communication
            >>> ddp(x2).sum().backward()         # averages the sum of both gradients
        """
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous


def _device_index(device) -> int:
    if isinstance(device, int):
        return device
    index = getattr(device, "index", None)
    if index is None and isinstance(device, str):
        index = int(device.split(":")[1]) if ":" in device else 0
    return 0 if index is None else int(index)


def _check_devices(params: list, device_ids, output_device) -> tuple:
    """torch's checks of ``device_ids``/``output_device``; the values DDP keeps."""
    if device_ids is not None and len(device_ids) > 1:
        raise ValueError("device_ids can only be None or contain a single element.")
    devices = {p.device for p in params}
    kinds = {d.type for d in devices}
    if len(kinds) != 1:
        raise ValueError(
            "DistributedDataParallel's input module must be on the same type of devices, but "
            f"input module parameters locate in {kinds}."
        )
    if not device_ids or kinds == {"cpu"} or len(devices) > 1:
        if device_ids or output_device:
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                f"{device_ids}, output_device {output_device}, and module parameters {devices}."
            )
        return None, None
    ids = [_device_index(d) for d in device_ids]
    return ids, _device_index(ids[0] if output_device is None else output_device)


def _leaves_reached(output) -> set:
    """``id``s of the leaf tensors the autograd graph of ``output`` leads to."""
    from ..._tensor import Tensor

    tensors, stack = [], [output]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            tensors.append(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    reached, seen = set(), set()
    nodes = [t.grad_fn for t in tensors if t.grad_fn is not None]
    for t in tensors:
        if t.grad_fn is None and t.requires_grad:
            reached.add(id(t))
    while nodes:
        node = nodes.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            reached.add(id(variable))
        for edge in getattr(node, "_edges", ()) or ():
            if edge is not None:
                nodes.append(edge[0])
    return reached
