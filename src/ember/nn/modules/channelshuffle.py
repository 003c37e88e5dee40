"""ChannelShuffle: interleave the channels of groups (ShuffleNet)."""

from __future__ import annotations

from ...ops.resample import channel_shuffle
from .module import Module


class ChannelShuffle(Module):
    """Reorder (N, g·k, *) channels as if viewed (N, g, k, *) and read (N, k, g, *)."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
