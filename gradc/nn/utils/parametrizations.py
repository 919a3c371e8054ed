"""``torch.nn.utils.parametrizations.weight_norm``: the weight as ``g * v / ||v||`` through
``parametrize`` (``parametrizations.weight.original0`` is g, ``original1`` is v)."""
from __future__ import annotations

from ..modules import Module
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, None if self.dim == -1 else self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, None if self.dim == -1 else self.dim), weight


def weight_norm(module, name="weight", dim=0):
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module
