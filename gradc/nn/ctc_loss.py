"""Connectionist temporal classification loss (``F.ctc_loss``, ``nn.CTCLoss``), as PyTorch's CPU
kernel computes it.

The per-sample negative log likelihood comes from the forward (alpha) recursion over the target
with blanks interleaved, in log space (NumPy, float64, rounded to the input's dtype at the end).
PyTorch's gradient is not the plain derivative of that: it is the fused formula of its kernel,
``exp(lp) - exp(log(sum_s alpha beta) + nll - lp)``, which assumes ``log_probs`` came from a
log_softmax. gradc reproduces it exactly by giving the loss the value ``nll`` and the gradient
``G`` (alpha-beta, precomputed): ``nll + sum(lp * G) - sum(lp.detach() * G)``, whose two sums
are the same floats, so the value is ``nll`` to the bit and d/d``lp`` is ``G``. As in PyTorch,
there is no double backward through it. An impossible alignment (infinite loss) without
``zero_infinity`` has a zero gradient here where PyTorch's is NaN.
"""
from __future__ import annotations

import numpy as np

from ..autograd.node import grad_fn_named

_NEG_INF = -np.inf


def _logsumexp(*xs):
    """Elementwise log(sum(exp)) of equally shaped arrays, -inf where all are -inf."""
    m = np.maximum.reduce(xs)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.where(np.isneginf(m), _NEG_INF, safe + np.log(sum(np.exp(x - safe) for x in xs)))


def _extended(target, blank):
    """The target with blanks around and between its labels, and where a skip of two is allowed
    (a label differing from the one two back)."""
    ext = np.full(2 * len(target) + 1, blank, dtype=np.int64)
    ext[1::2] = target
    skip = np.zeros(len(ext), dtype=bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    return ext, skip


def _shift(a, k):
    """``a`` moved ``k`` places towards higher indices (``k`` < 0: lower), -inf filled."""
    out = np.full_like(a, _NEG_INF)
    if k > 0:
        out[k:] = a[:-k]
    else:
        out[:k] = a[-k:]
    return out


def _alpha_beta(lp, target, blank):
    """Log alpha and log beta (T, 2S+1) for one sample's log probabilities ``lp`` (T, C)."""
    ext, skip = _extended(target, blank)
    steps, width = lp.shape[0], len(ext)
    alpha = np.full((steps, width), _NEG_INF)
    beta = np.full((steps, width), _NEG_INF)
    emit = lp[:, ext]                                   # (T, 2S+1)
    alpha[0, :min(2, width)] = emit[0, :min(2, width)]
    for t in range(1, steps):
        prev = alpha[t - 1]
        alpha[t] = _logsumexp(prev, _shift(prev, 1), np.where(skip, _shift(prev, 2), _NEG_INF)) + emit[t]
    beta[-1, max(width - 2, 0):] = emit[-1, max(width - 2, 0):]
    skip_back = np.zeros(width, dtype=bool)             # (s may jump to s + 2 when s + 2 may skip)
    skip_back[:-2] = skip[2:]
    for t in range(steps - 2, -1, -1):
        nxt = beta[t + 1]
        beta[t] = _logsumexp(nxt, _shift(nxt, -1), np.where(skip_back, _shift(nxt, -2), _NEG_INF)) + emit[t]
    return ext, alpha, beta


def _sample(lp, target, blank, zero_infinity):
    """One sample's negative log likelihood and PyTorch's gradient (T, C) for its ``lp``."""
    grad = np.zeros_like(lp)
    if lp.shape[0] == 0:
        return (0.0 if zero_infinity else np.inf), grad
    ext, alpha, beta = _alpha_beta(lp, target, blank)
    nll = -_logsumexp(*alpha[-1, max(len(ext) - 2, 0):][:, None])[0]
    if np.isinf(nll):               # (PyTorch's gradient is NaN there unless zero_infinity; gradc's is 0)
        return (0.0 if zero_infinity else nll), grad
    both = alpha + beta                                 # (T, 2S+1)
    lcab = np.full(lp.shape, _NEG_INF)
    for s, c in enumerate(ext):
        lcab[:, c] = _logsumexp(lcab[:, c], both[:, s])
    grad[:] = np.exp(lp) - np.exp(lcab + nll - lp)
    return nll, grad


def _lengths(x, name):
    """A lengths argument (tensor, list or tuple) as a list of ints."""
    from ..tensor_api import is_tensor_like
    values = x.detach().numpy() if is_tensor_like(x) else np.asarray(x)
    return [int(v) for v in np.atleast_1d(values)]


def _targets(targets, target_lengths):
    """Each sample's labels: rows of a padded (N, S) tensor or pieces of a concatenated 1-D one
    (an unbatched target is the latter, of one piece)."""
    t = targets.detach().numpy()
    if t.ndim == 2:
        rows = t
        for n, length in enumerate(target_lengths):
            if length > rows.shape[1]:
                raise RuntimeError(f"Expected tensor to have size at least {length} at dimension 1, but got size "
                                   f"{rows.shape[1]} for argument #2 'targets' (while checking arguments for "
                                   "ctc_loss_allocate_outputs)")
        return [rows[n, :length] for n, length in enumerate(target_lengths)]
    if len(t) != sum(target_lengths):
        raise RuntimeError(f"Expected tensor to have size {sum(target_lengths)} at dimension 0, but got size {len(t)} "
                           "for argument #2 'targets' (while checking arguments for ctc_loss_allocate_outputs)")
    offsets = np.concatenate([[0], np.cumsum(target_lengths)])
    return [t[offsets[n]:offsets[n + 1]] for n in range(len(target_lengths))]


def _check(log_probs, input_lengths, target_lengths, blank, batch):
    classes = log_probs.shape[-1]
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    if len(input_lengths) != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(target_lengths) != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        for length in lengths:
            if length < 0:
                raise RuntimeError(f"Expected {name} to have value at least 0, but got value {length} (while "
                                   "checking arguments for ctc_loss_allocate_outputs)")
    for length in input_lengths:
        if length > log_probs.shape[0]:
            raise RuntimeError(f"Expected input_lengths to have value at most {log_probs.shape[0]}, but got value "
                               f"{length} (while checking arguments for ctc_loss_allocate_outputs)")


@grad_fn_named(lambda log_probs, *a, **k: "CtcLossBackward0", edges=lambda log_probs, *a, **k: (log_probs,))
def _ctc_per_sample(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    """The (N,) losses (a 0-d one unbatched) with PyTorch's gradient; ``log_probs`` is (T, N, C)
    or (T, C)."""
    from ..factories import tensor
    unbatched = log_probs.dim() == 2
    lp = log_probs.detach().numpy().astype(np.float64)
    lp = lp[:, None] if unbatched else lp
    batch = lp.shape[1]
    _check(log_probs, input_lengths, target_lengths, blank, batch)
    labels = _targets(targets, target_lengths)
    nll = np.zeros(batch)
    grad = np.zeros_like(lp)
    for n in range(batch):
        steps = input_lengths[n]
        nll[n], grad[:steps, n] = _sample(lp[:steps, n], labels[n], blank, zero_infinity)
    dtype = log_probs.dtype
    g = tensor((grad[:, 0] if unbatched else grad).astype(dtype.np), dtype=dtype)
    value = tensor((nll[0] if unbatched else nll).astype(dtype.np), dtype=dtype)
    reduce_dims = (0, 1) if unbatched else (0, 2)
    return value + ((log_probs * g).sum(reduce_dims) - (log_probs.detach() * g).sum(reduce_dims))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """PyTorch's ctc_loss: ``log_probs`` (T, N, C) or (T, C) log-softmaxed, targets padded
    (N, S) or concatenated (sum of target_lengths,); 'mean' divides each loss by its target
    length (at least 1) before averaging over the batch."""
    from ..factories import tensor
    from ..tensor_api import where
    inputs, lengths = _lengths(input_lengths, "input_lengths"), _lengths(target_lengths, "target_lengths")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    loss = _ctc_per_sample(log_probs, targets, inputs, lengths, blank, zero_infinity)
    if zero_infinity:
        loss = where(loss == float("inf"), tensor(0.0, dtype=loss.dtype), loss)
    if reduction == "mean":
        divisor = tensor(np.maximum(lengths, 1), dtype=loss.dtype)
        return (loss / (divisor[0] if loss.dim() == 0 else divisor)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss

