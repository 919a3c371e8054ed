"""nn.init: in-place initialisers (run without recording gradients)."""
from __future__ import annotations

import math

from .. import factories
from ..autograd import grad_mode


def uniform_(tensor, a=0.0, b=1.0):
    with grad_mode.no_grad():
        tensor.copy_(factories.rand(tensor.shape, dtype=tensor.dtype) * (b - a) + a)
    return tensor


def normal_(tensor, mean=0.0, std=1.0):
    with grad_mode.no_grad():
        tensor.copy_(factories.randn(tensor.shape, dtype=tensor.dtype) * std + mean)
    return tensor


def zeros_(tensor):
    with grad_mode.no_grad():
        tensor.zero_()
    return tensor


def ones_(tensor):
    with grad_mode.no_grad():
        tensor.fill_(1.0)
    return tensor


def _receptive(tensor):
    return math.prod(tensor.shape[2:])


def _fan_in(tensor):
    """Input features times the kernel's size (a conv weight [out, in, kh, kw]), as PyTorch counts."""
    return tensor.shape[1] * _receptive(tensor) if tensor.ndim > 1 else tensor.shape[0]


def kaiming_uniform_(tensor, a=0.0, nonlinearity="leaky_relu"):
    gain = math.sqrt(2.0 / (1 + a * a))
    bound = gain * math.sqrt(3.0 / _fan_in(tensor))
    return uniform_(tensor, -bound, bound)


def xavier_uniform_(tensor, gain=1.0):
    fan_in, fan_out = _fan_in(tensor), tensor.shape[0] * _receptive(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)
