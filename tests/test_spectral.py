"""torch.stft / torch.istft (``gradc/spectral.py``) in PyTorch's real layout (..., 2) (gradc has no
complex dtypes): PyTorch's values for windows, hops, win_length, centring with each pad mode,
normalisation and one- or two-sided spectra, batched and not; istft inverting stft; gradients
in float64 (gradcheck and gradgradcheck, signal and window) equal to PyTorch's; its errors and
warnings, and the clear error for return_complex=True."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradc
from gradc.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

CASES = [
    ((64,), dict(n_fft=16)),
    ((2, 50), dict(n_fft=12, hop_length=5, win_length=10)),
    ((40,), dict(n_fft=8, center=False, normalized=True)),
    ((40,), dict(n_fft=9, pad_mode="constant", onesided=False)),
    ((33,), dict(n_fft=10, pad_mode="replicate")),
    ((3, 31), dict(n_fft=7, hop_length=3, pad_mode="circular", normalized=True)),
]


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.mark.parametrize("shape, kw", CASES)
@pytest.mark.parametrize("windowed", [False, True])
def test_stft_matches_torch(shape, kw, windowed):
    x = np.random.default_rng(1).standard_normal(shape)
    length = kw.get("win_length", kw["n_fft"])
    results = []
    for m in (torch, gradc):
        window = m.hann_window(length, dtype=m.float64) if windowed else None
        results.append(quiet(m.stft, m.tensor(x), **kw, window=window, return_complex=False).numpy())
    assert results[0].shape == results[1].shape
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12, atol=1e-12)


def test_stft_float32_and_method():
    x = np.random.default_rng(2).standard_normal(40).astype(np.float32)
    ours = quiet(gradc.tensor(x).stft, 8, window=gradc.hann_window(8), return_complex=False)
    theirs = quiet(torch.tensor(x).stft, 8, window=torch.hann_window(8), return_complex=False)
    assert str(ours.dtype) == str(theirs.dtype) == "torch.float32"
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, kw", [c for c in CASES if c[1].get("center", True)])
def test_istft_inverts_and_matches_torch(shape, kw):
    x = np.random.default_rng(3).standard_normal(shape)
    kw = {k: v for k, v in kw.items() if k != "pad_mode"}
    n = kw.get("win_length", kw["n_fft"])
    spec_t = quiet(torch.stft, torch.tensor(x), **kw, window=torch.hann_window(n, dtype=torch.float64),
                   return_complex=True)
    spec_g = quiet(gradc.stft, gradc.tensor(x), **kw, window=gradc.hann_window(n, dtype=gradc.float64),
                   return_complex=False)
    theirs = torch.istft(spec_t, **kw, window=torch.hann_window(n, dtype=torch.float64), length=shape[-1])
    ours = gradc.istft(spec_g, **kw, window=gradc.hann_window(n, dtype=gradc.float64), length=shape[-1])
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.numpy(), x, atol=1e-12)


def test_gradients_match_torch_and_gradcheck():
    x = np.random.default_rng(4).standard_normal((2, 30))
    w = np.random.default_rng(5).uniform(0.5, 1.5, 8)
    grads = []
    for m in (torch, gradc):
        xt = m.tensor(x, requires_grad=True)
        wt = m.tensor(w, requires_grad=True)
        spec = quiet(m.stft, xt, 10, hop_length=3, win_length=8, window=wt, return_complex=False)
        (spec * spec).sum().backward()
        grads.append((xt.grad.numpy(), wt.grad.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-11, atol=1e-11)

    def round_trip(signal, window):
        spec = quiet(gradc.stft, signal, 8, hop_length=2, window=window, return_complex=False)
        return gradc.istft(spec.tanh(), 8, hop_length=2, window=window)

    signal = gradc.tensor(x[0, :20], requires_grad=True)
    window = gradc.tensor(np.random.default_rng(6).uniform(0.5, 1.5, 8), requires_grad=True)
    assert gradcheck(round_trip, (signal, window))
    assert gradgradcheck(lambda s: quiet(gradc.stft, s, 6, window=window.detach()[:6], return_complex=False), (signal,))


@pytest.mark.parametrize("make", [
    lambda m: m.stft(m.arange(16.0), 8),
    lambda m: m.stft(m.arange(16.0), 32, center=False, return_complex=False),
    lambda m: m.stft(m.arange(16.0), 8, win_length=9, return_complex=False),
    lambda m: m.stft(m.arange(16.0), 8, window=m.ones(5), return_complex=False),
    lambda m: m.stft(m.arange(16.0), 8, hop_length=0, return_complex=False),
    lambda m: m.stft(m.arange(16.0).reshape(2, 2, 4), 2, return_complex=False),
], ids=["no-return_complex", "n_fft", "win_length", "window", "hop", "ndim"])
def test_errors_match_torch(make):
    with pytest.raises(Exception) as expected:
        quiet(make, torch)
    with pytest.raises(type(expected.value)) as got:
        quiet(make, gradc)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("kw", [dict(n_fft=10), dict(n_fft=8, onesided=False), dict(n_fft=8, hop_length=9),
                                dict(n_fft=8, win_length=9)], ids=["freq", "two-sided", "hop", "win_length"])
def test_istft_errors_match_torch(kw):
    window = kw.get("win_length", kw["n_fft"])
    spec = torch.stft(torch.arange(32.0), 8, window=torch.ones(8), return_complex=True)
    with pytest.raises(RuntimeError) as expected:
        torch.istft(spec, window=torch.ones(window), **kw)
    with pytest.raises(RuntimeError) as got:
        gradc.istft(gradc.tensor(torch.view_as_real(spec).numpy()), window=gradc.ones(window), **kw)
    assert str(got.value) == str(expected.value)


def test_warnings_and_complex_refusals():
    with pytest.warns(UserWarning) as record:
        gradc.stft(gradc.arange(16.0), 8, return_complex=False)
    messages = [str(w.message) for w in record]
    assert any(m.startswith("A window was not provided") for m in messages)
    assert any(m.startswith("stft with return_complex=False is deprecated") for m in messages)
    with pytest.raises(RuntimeError, match="gradc has no complex dtypes"):
        gradc.stft(gradc.arange(16.0), 8, window=gradc.ones(8), return_complex=True)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input tensor"):
        gradc.istft(gradc.ones(5, 3), 8, window=gradc.ones(8))
