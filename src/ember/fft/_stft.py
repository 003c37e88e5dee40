"""The short-time Fourier transform and its inverse (``torch.stft`` / ``torch.istft``), built
from differentiable ember ops: padding, framing (unfold), a windowed FFT, and overlap-add."""

from __future__ import annotations

from .. import _creation
from .._tensor import Tensor
from ._functions import fft, ifft, irfft, rfft


def _window(window: Tensor | None, win_length: int, n_fft: int, like: Tensor) -> Tensor:
    """The window, zero-padded on both sides to n_fft (a window of ones by default)."""
    real_dtype = like.dtype.to_real()
    if window is None:
        window = _creation.ones(win_length, dtype=real_dtype, device=like.device)
    if window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(
            f"stft: expected a 1D window tensor of size equal to win_length={win_length}, but "
            f"got window with size {list(window.shape)}"
        )
    left = (n_fft - win_length) // 2
    if left == 0 and win_length == n_fft:
        return window
    from ..nn.functional import pad

    return pad(window, (left, n_fft - win_length - left))


def _lengths(n_fft: int, hop_length, win_length, size: int | None, op: str) -> tuple:
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if n_fft <= 0 or (size is not None and n_fft > size):
        raise RuntimeError(
            f"{op}: expected 0 < n_fft < {size}, but got n_fft={n_fft}"
            if size is not None
            else f"{op}: expected 0 < n_fft, but got n_fft={n_fft}"
        )
    if hop_length <= 0:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise RuntimeError(
            f"{op}: expected 0 < win_length <= n_fft, but got win_length={win_length}"
        )
    return hop_length, win_length


def stft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
    align_to_window: bool | None = None,
) -> Tensor:
    """Fourier transforms of windowed frames: (B?, n_fft//2 + 1, frames) for real input.

    Example::
        >>> x = ember.arange(8.0)
        >>> ember.stft(x, 4, return_complex=True).shape
        ember.Size([3, 3])
    """
    if return_complex is None:
        if not input.is_complex() and (window is None or not window.is_complex()):
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will "
                "further require that return_complex=True in a future PyTorch release."
            )
        return_complex = True
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D tensor")
    if window is None:
        import warnings

        warnings.warn(
            "A window was not provided. A rectangular window will be applied, which is known to "
            "cause spectral leakage. Other windows such as hann_window or hamming_window are "
            "recommended to reduce spectral leakage. To suppress this warning and use a "
            "rectangular window, explicitly set `window=ones(n_fft)`.",
            UserWarning,
            stacklevel=2,
        )
    batched = input.dim() == 2
    x = input if batched else input.unsqueeze(0)
    if center:
        from ..nn.functional import pad

        half = n_fft // 2
        x = pad(x.unsqueeze(1), (half, half), mode=pad_mode).squeeze(1)
    hop_length, win_length = _lengths(n_fft, hop_length, win_length, x.shape[-1], "stft")
    frames = x.unfold(-1, n_fft, hop_length)  # (B, n_frames, n_fft)
    frames = frames * _window(window, win_length, n_fft, input)
    complex_in = frames.is_complex()
    if onesided is None:
        onesided = not complex_in
    if onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spectrum = rfft(frames, dim=-1, norm=norm) if onesided else fft(frames, dim=-1, norm=norm)
    out = spectrum.transpose(-1, -2)  # (B, n_freq, n_frames)
    if not batched:
        out = out.squeeze(0)
    if not return_complex:
        from ..ops.complex import view_as_real

        return view_as_real(out)
    return out


def istft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> Tensor:
    """The inverse of ``stft`` by windowed overlap-add, divided by the summed squared window."""
    if not input.is_complex():
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft with "
            "return_complex=True."
        )
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dims, but got {input.dim()}D")
    hop_length, win_length = _lengths(n_fft, hop_length, win_length, None, "istft")
    batched = input.dim() == 3
    spec = input if batched else input.unsqueeze(0)
    n_freq, n_frames = spec.shape[-2], spec.shape[-1]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and n_fft // 2 + 1 != n_freq:
        raise RuntimeError(
            "istft: expected the frequency dimension (2nd to last) of the input tensor to match "
            f"n_fft / 2 + 1 when onesided=True, but got {n_freq}"
        )
    if return_complex and onesided:
        raise RuntimeError("cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    columns = spec.transpose(-1, -2)  # (B, n_frames, n_freq)
    if return_complex:
        frames = ifft(columns, n=n_fft, dim=-1, norm=norm)
    else:
        # ATen: a real output takes the spectrum as Hermitian, a two-sided one's first half
        if not onesided:
            columns = columns[..., : n_fft // 2 + 1]
        frames = irfft(columns, n=n_fft, dim=-1, norm=norm)
    real_like = frames if not frames.is_complex() else frames.real
    win = _window(window, win_length, n_fft, real_like)
    frames = frames * win
    total = n_fft + hop_length * (n_frames - 1)
    index = _creation.arange(n_fft, device=input.device).unsqueeze(0) + (
        _creation.arange(n_frames, device=input.device) * hop_length
    ).unsqueeze(1)
    flat_index = index.reshape(-1)
    batch = frames.shape[0]
    y = _creation.zeros(batch, total, dtype=frames.dtype, device=input.device)
    y = y.index_add(1, flat_index, frames.reshape(batch, -1))
    squared = win * win  # ATen's window.pow(2): complex for a complex window, not |w|²
    envelope = _creation.zeros(total, dtype=squared.dtype, device=input.device)
    envelope = envelope.index_add(0, flat_index, squared.expand(n_frames, n_fft).reshape(-1))
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = total - n_fft // 2 if center else total
    end_in = min(end, total)
    y = y[:, start:end_in]
    envelope = envelope[start:end_in]
    if float(envelope.abs().min()) < 1e-11:
        raise RuntimeError(f"istft(...): window overlap add min: {float(envelope.abs().min()):g}")
    y = y / envelope
    if end > total:
        from ..nn.functional import pad

        y = pad(y, (0, end - total))
    return y if batched else y.squeeze(0)


# x.stft(...) is ember.stft(x, ...): the fft namespace hangs both on Tensor (the Tensor layer,
# below it, does not import fft); the same function objects, so autocast's row applies to both
Tensor.stft = stft
Tensor.istft = istft
