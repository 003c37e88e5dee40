"""Instance normalisation layers: InstanceNorm1d/2d/3d (each sample and channel on its own)."""

from __future__ import annotations

import warnings

from ...ops.normalization import instance_norm
from .normalization import _BatchNorm


class _InstanceNorm(_BatchNorm):
    # the spatial dims, and the input dims _check_input_dim accepts: (C, *spatial), (N, C, *spatial)
    _spatial, _allowed_dims = 1, (2, 3)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._spatial - 1
        channels = input.shape[feature_dim]
        if channels != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match num_features "
                    f"({self.num_features}), but got: {channels}."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You can silence "
                "this warning by not passing in num_features, which is not used because "
                "affine=False",
                stacklevel=2,
            )
        unbatched = input.dim() == self._spatial + 1
        x = input.unsqueeze(0) if unbatched else input
        use_input_stats = self.training or not self.track_running_stats
        momentum = 0.1 if self.momentum is None else self.momentum
        out = instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_input_stats,
            momentum,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Normalise each (sample, channel) of (N, C, L) or (C, L) input over L."""

    _spatial, _allowed_dims = 1, (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Normalise each (sample, channel) of (N, C, H, W) or (C, H, W) input over H, W."""

    _spatial, _allowed_dims = 2, (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Normalise each (sample, channel) of (N, C, D, H, W) input over D, H, W."""

    _spatial, _allowed_dims = 3, (4, 5)
