"""``torch.stft`` / ``torch.istft`` (and their Tensor methods) without complex dtypes.

gradc has no complex tensors, so ``stft`` gives PyTorch's ``return_complex=False`` layout (the
real and imaginary parts in a last dimension of 2, what ``torch.view_as_real`` of the complex
result is), and ``return_complex=True`` raises. ``istft`` takes that same layout (PyTorch's
takes only a complex tensor: here the real view stands for it) and returns a real signal.

Both are compositions of table ops, so they are differentiable (in the signal and in the window)
and double-differentiable: the padding, ``unfold`` into frames, the window product, and the DFT
as a matmul with a cos/sin matrix (O(n_fft^2) per frame: meant for moderate n_fft); istft's
overlap-add is a matmul with a 0/1 frame-to-sample matrix, then the division by the summed
squared window, as PyTorch's.
"""
from __future__ import annotations

import math

import numpy as np

from . import dtypes
from ._warnings import warn_at_user_code
from .tensor_api import is_tensor_like

_NO_WINDOW = ("A window was not provided. A rectangular window will be applied,which is known to cause spectral "
              "leakage. Other windows such as torch.hann_window or torch.hamming_window are recommended to reduce "
              "spectral leakage.To suppress this warning and use a rectangular window, explicitly set "
              "`window=torch.ones(n_fft, device=<device>)`.")
_NO_WINDOW_ISTFT = ("A window was not provided. A rectangular window will be applied.Please provide the same window "
                    "used by stft to make the inversion lossless.To suppress this warning and use a rectangular "
                    "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
_REAL_DEPRECATED = ("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                    "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
                    "still call torch.view_as_real on the complex output to recover the old return format.")


def _type_name(t) -> str:
    return f"torch.{t.dtype.scalar_type}Tensor"


def _describe(x, n_fft, hop, win_length, window, normalized, onesided, return_complex) -> str:
    """PyTorch's stft(...) prefix of its argument errors."""
    shape = ", ".join(str(n) for n in x.shape)
    win = "None" if window is None else f"{_type_name(window)}{{[{', '.join(str(n) for n in window.shape)}]}}"
    side = "None" if onesided is None else str(int(bool(onesided)))
    return (f"stft({_type_name(x)}[{shape}], n_fft={n_fft}, hop_length={hop}, win_length={win_length}, "
            f"window={win}, normalized={int(bool(normalized))}, onesided={side}, "
            f"return_complex={int(bool(return_complex))}, align_to_window=None) : ")


def _describe_istft(spec, n_fft, hop, win_length, window, center, normalized, onesided, length) -> str:
    """PyTorch's istft(...) prefix of its argument errors, the real layout standing for the complex input."""
    complex_name = {"Double": "CPUComplexDoubleType", "Float": "CPUComplexFloatType"}.get(
        spec.dtype.scalar_type, "CPUComplexHalfType")
    shape = ", ".join(str(n) for n in spec.shape[:-1])
    win = "None" if window is None else f"{_type_name(window)}{{[{', '.join(str(n) for n in window.shape)}]}}"
    side = "None" if onesided is None else str(int(bool(onesided)))
    return (f"istft({complex_name}[{shape}], n_fft={n_fft}, hop_length={hop}, win_length={win_length}, window={win}, "
            f"center={int(bool(center))}, normalized={int(bool(normalized))}, onesided={side}, length={length}, "
            f"return_complex=0) : ")


def _dft_matrices(n_fft, n_freq, dtype):
    """cos and -sin of 2 pi k n / n_fft, shape (n_fft, n_freq), from the exact residue k n mod n_fft."""
    from .factories import tensor
    k = np.arange(n_freq)
    n = np.arange(n_fft)
    angle = 2 * math.pi * ((n[:, None] * k[None, :]) % n_fft) / n_fft
    return tensor(np.cos(angle), dtype=dtype), tensor(-np.sin(angle), dtype=dtype)


def _padded_window(window, win_length, n_fft, dtype):
    """The window (ones without one) centred in n_fft samples, as PyTorch pads it."""
    from .factories import ones
    from .nn.functional import pad
    if window is None:
        window = ones(win_length, dtype=dtype)
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        window = pad(window, (left, n_fft - win_length - left))
    return window


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """The short-time Fourier transform of a 1-D (L) or 2-D (B, L) real signal, as
    ``torch.view_as_real(torch.stft(..., return_complex=True))``: shape (B?, freq, frames, 2)."""
    from .nn.functional import pad
    if return_complex is None:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if return_complex:
        raise RuntimeError("gradc has no complex dtypes: stft(..., return_complex=True) cannot be computed; pass "
                           "return_complex=False for the real layout (..., 2), torch.view_as_real of PyTorch's result")
    if window is None:
        warn_at_user_code(_NO_WINDOW)
    warn_at_user_code(_REAL_DEPRECATED)
    hop = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    x = input if input.dtype.is_floating_point else input.to(dtypes.default_float)
    if center and x.ndim in (1, 2, 3):           # (PyTorch pads a 3-D input too, then refuses it)
        half = n_fft // 2
        batch = x.reshape(1, 1, -1) if x.ndim == 1 else x.unsqueeze(1) if x.ndim == 2 else x
        x = pad(batch, (half, half), mode=pad_mode)
        x = x.reshape(-1) if input.ndim == 1 else x.squeeze(1) if input.ndim == 2 else x
    where = _describe(x, n_fft, hop, win_length, window, normalized, onesided, return_complex)
    if x.ndim not in (1, 2):
        raise RuntimeError(where + "expected a 1D or 2D tensor")
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(where + f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(where + f"expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(where + f"expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(where + f"expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size [{', '.join(str(n) for n in window.shape)}]")
    frames = x.unfold(-1, n_fft, hop) * _padded_window(window, win_length, n_fft, x.dtype)     # (B?, T, n_fft)
    n_freq = n_fft // 2 + 1 if onesided is None or onesided else n_fft
    cos, sin = _dft_matrices(n_fft, n_freq, x.dtype)
    real, imag = frames.matmul(cos), frames.matmul(sin)                  # (B?, T, F)
    if normalized:
        real, imag = real * n_fft ** -0.5, imag * n_fft ** -0.5
    from .tensor_api import stack
    return stack([real, imag], -1).transpose(-3, -2)


def _overlap_add_matrix(n_frames, n_fft, hop, dtype):
    """(n_frames * n_fft, total) with a 1 where sample n of frame t lands: t * hop + n."""
    from .factories import tensor
    total = n_fft + hop * (n_frames - 1)
    m = np.zeros((n_frames * n_fft, total))
    rows = np.arange(n_frames * n_fft)
    m[rows, (rows // n_fft) * hop + rows % n_fft] = 1.0
    return tensor(m, dtype=dtype)


def _inverse_dft(real, imag, n_fft, onesided):
    """Real frames (..., T, n_fft) from spectra (..., T, F): irfft (one-sided: the bins between
    0 and n_fft / 2 twice, their conjugates being implied; DC's and Nyquist's imaginary parts
    dropped, as a C2R transform does) or the real part of the full inverse DFT."""
    from .factories import tensor
    n_freq = real.shape[-1]
    k = np.arange(n_freq)
    n = np.arange(n_fft)
    angle = 2 * math.pi * ((k[:, None] * n[None, :]) % n_fft) / n_fft
    weight = np.ones(n_freq)
    if onesided:
        weight[1:] = 2.0
        if n_fft % 2 == 0:
            weight[n_fft // 2] = 1.0
    cos = tensor(np.cos(angle) * weight[:, None] / n_fft, dtype=real.dtype)
    sin = tensor(-np.sin(angle) * weight[:, None] / n_fft, dtype=real.dtype)
    return real.matmul(cos) + imag.matmul(sin)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The inverse of ``stft``, from its real layout (B?, freq, frames, 2) (what ``view_as_real``
    of PyTorch's complex input is): inverse DFT of each frame, window, overlap-add, division by
    the overlap-added squared window, and the centre padding cut off (or ``length`` samples)."""
    if return_complex:
        raise RuntimeError("gradc has no complex dtypes: istft(..., return_complex=True) cannot be computed")
    if not is_tensor_like(input) or input.ndim not in (3, 4) or input.shape[-1] != 2 \
            or not input.dtype.is_floating_point:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True. (gradc has no complex dtypes: pass the real layout (..., freq, "
                           "frames, 2) that stft(..., return_complex=False) gives)")
    if window is None:
        warn_at_user_code(_NO_WINDOW_ISTFT)
    hop = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    batched = input.ndim == 4
    spec = input if batched else input.unsqueeze(0)
    n_freq, n_frames = spec.shape[1], spec.shape[2]
    onesided_arg = onesided
    onesided = n_freq != n_fft if onesided is None else onesided
    expected = n_fft // 2 + 1 if onesided else n_fft
    where = _describe_istft(input, n_fft, hop, win_length, window, center, normalized, onesided_arg, length)
    if n_freq != expected:
        rule = "n_fft / 2 + 1 when onesided=True" if onesided else "n_fft when onesided=False"
        raise RuntimeError(where + f"expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"{rule}, but got {n_freq}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(where + "expected 0 < win_length <= n_fft")
    if not 0 < hop <= win_length:
        raise RuntimeError(where + "expected 0 < hop_length <= win_length")
    spec = spec.transpose(1, 2)                                           # (B, T, F, 2)
    frames = _inverse_dft(spec[..., 0], spec[..., 1], n_fft, onesided)   # (B, T, n_fft)
    if normalized:
        frames = frames * math.sqrt(n_fft)
    w = _padded_window(window, win_length, n_fft, frames.dtype)
    frames = frames * w
    add = _overlap_add_matrix(n_frames, n_fft, hop, frames.dtype)
    signal = frames.reshape(frames.shape[0], -1).matmul(add)             # (B, total)
    envelope = (w * w).repeat(n_frames).matmul(add)                       # (total,)
    start = n_fft // 2 if center else 0
    end = signal.shape[-1] - (n_fft // 2 if center else 0) if length is None else start + length
    end = min(end, signal.shape[-1])
    low = envelope[start:end].abs().min().item() if end > start else 1.0
    if low < 1e-11:
        raise RuntimeError("istft(...) : window overlap add min: " + f"{low:g}")
    out = signal[:, start:end] / envelope[start:end]
    if length is not None and out.shape[-1] < length:
        from .nn.functional import pad
        out = pad(out, (0, length - out.shape[-1]))
    return out if batched else out.squeeze(0)


FUNCTIONS = ("stft", "istft")
METHODS = ("stft", "istft")


def _bind():
    from .compositions import bind_methods
    bind_methods(globals(), METHODS)


_bind()
