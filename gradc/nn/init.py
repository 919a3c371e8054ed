"""nn.init: in-place initialisers (run without recording gradients), with PyTorch's gains,
fan computations, errors and ``generator=`` arguments."""
from __future__ import annotations

import math

import numpy as np

from .._warnings import warn_at_user_code
from .. import factories
from ..autograd import grad_mode

_LINEAR_LIKE = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                "sigmoid")


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (PyTorch's table)."""
    if nonlinearity in _LINEAR_LIKE:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan_in(tensor):
    """Input features times the kernel's size (a conv weight [out, in, kh, kw]), as PyTorch counts."""
    return _calculate_fan_in_and_fan_out(tensor)[0]


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _no_op_for_empty(tensor) -> bool:
    if 0 in tuple(tensor.shape):
        warn_at_user_code("Initializing zero-element tensors is a no-op")
        return True
    return False


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """``tensor.uniform_(a, b)``: PyTorch's numbers for the same seed."""
    with grad_mode.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """``tensor.normal_(mean, std)``: PyTorch's numbers for the same seed."""
    with grad_mode.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal(mean, std) truncated to [a, b] by rejection, as PyTorch 2.13 draws it (the same
    numbers for the same seed): when [a, b] holds more than 30% of the mass, normal draws with
    the ones outside redrawn; otherwise uniform candidates in [a, b], each accepted when the
    log of a uniform draw is below its log density relative to the peak."""
    from ..tensor_api import where
    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0
    if mean < a - 2 * std or mean > b + 2 * std:
        warn_at_user_code("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                          "be incorrect.")
    with grad_mode.no_grad():
        if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
            lo, hi = tensor.new_tensor(a).item(), tensor.new_tensor(b).item()
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                outside = (result < lo) | (result > hi)
                if not outside.any():
                    break
                result = where(outside, factories.empty_like(result).normal_(mean, std, generator=generator), result)
            if result is not tensor:
                tensor.copy_(result)
            return tensor
        log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2

        def log_density_gap(c):
            return c.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)
        accept = factories.empty_like(tensor)
        tensor.uniform_(a, b, generator=generator)
        candidates = log_density_gap(tensor.clone())
        pending = accept.uniform_(generator=generator).log_().gt(candidates)
        result = tensor
        while pending.any():
            candidates.uniform_(a, b, generator=generator)
            result = where(pending, candidates, result)
            log_density_gap(candidates)
            pending = where(pending, accept.uniform_(generator=generator).log_().gt(candidates), pending)
        if result is not tensor:
            tensor.copy_(result)
    return tensor


def constant_(tensor, val):
    with grad_mode.no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor):
    with grad_mode.no_grad():
        tensor.zero_()
    return tensor


def ones_(tensor):
    with grad_mode.no_grad():
        tensor.fill_(1.0)
    return tensor


def eye_(tensor):
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with grad_mode.no_grad():
        tensor.copy_(factories.tensor(np.eye(*tensor.shape), dtype=tensor.dtype))
    return tensor


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if _no_op_for_empty(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if _no_op_for_empty(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal draw, signs fixed by R's diagonal."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = factories.randn(rows, cols, dtype=tensor.dtype, generator=generator).numpy().astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with grad_mode.no_grad():
        tensor.copy_(factories.tensor(q.reshape(tuple(tensor.shape)) * gain, dtype=tensor.dtype))
    return tensor
