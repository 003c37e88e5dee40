"""AdaptiveLogSoftmaxWithLoss: the adaptive softmax of Grave et al. (2016) for large vocabularies.

Frequent classes (the shortlist) are scored by the head directly; each rarer cluster of classes
gets one head logit and a smaller projection of its own, so a sample pays only for the clusters
its target lives in.
"""

from __future__ import annotations

from collections import namedtuple

from ... import _creation
from ...ops.elementwise import where
from ...ops.shape import cat
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities of ``target`` under an adaptive softmax, and their negative mean.

    Example::
        >>> asm = ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4])
        >>> out, loss = asm(ember.randn(3, 8), ember.tensor([1, 5, 9]))
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs,
        div_value: float = 4.0,
        head_bias: bool = False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an "
                "increasing order, where each value is between 1 and n_classes-1"
            )
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = dict(device=device, dtype=dtype)
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(in_features, hidden, bias=False, **kw),
                    Linear(hidden, size, bias=False, **kw),
                )
            )

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for to_hidden, to_output in self.tail:
            to_hidden.reset_parameters()
            to_output.reset_parameters()

    def forward(self, input_, target_):
        if target_.dim() == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError(
                    "Input and target should have the same size in the batch dimension."
                )
            if input_.dim() != 2:
                raise RuntimeError(
                    "1D target tensor expects 2D input tensors, but found inputs with size "
                    f"{input_.shape}"
                )
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(
                    "0D target tensor expects 1D input tensors, but found inputs with size "
                    f"{input_.shape}"
                )
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel() and (
            int(target.min().item()) < 0 or int(target.max().item()) >= self.n_classes
        ):
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{target.min().item()}, {target.max().item()}] were found. "
            )
        # the head scores a shortlisted target directly, any other its cluster's logit
        head_index = target
        output = None
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            inside = (target >= low) & (target < high)
            head_index = head_index.masked_fill(inside, self.shortlist_size + i)
            rows = inside.nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            cluster = F.log_softmax(self.tail[i](input.index_select(0, rows)), 1)
            picked = cluster.gather(1, (target.index_select(0, rows) - low).unsqueeze(1))
            zeros = _creation.zeros(target.shape[0], dtype=picked.dtype, device=picked.device)
            part = zeros.index_add(0, rows, picked.reshape(-1))
            output = part if output is None else output + part
        head = F.log_softmax(self.head(input), 1)
        picked_head = head.gather(1, head_index.unsqueeze(1)).reshape(-1)
        output = picked_head if output is None else output + picked_head
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input, head_output):
        head = F.log_softmax(head_output, 1)
        parts = [head[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), 1)
            parts.append(cluster + head[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input):
        """Log-probabilities of every class, (N, n_classes)."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most probable class of each sample (argmax of ``log_prob``)."""
        head_output = self.head(input)
        best = head_output.argmax(1)
        outside = best >= self.shortlist_size
        if not bool(outside.any()):
            return best
        full = self._full_log_prob(input, head_output).argmax(1)
        return where(outside, full, best)
