"""``torch.nn.utils.parametrizations``: ``weight_norm`` (the weight as ``g * v / ||v||``;
``parametrizations.weight.original0`` is g, ``original1`` is v) and ``spectral_norm`` (the weight
over its largest singular value, estimated by power iteration in training; the vectors ``_u``,
``_v`` start from PyTorch's normal draws and 15 iterations)."""
from __future__ import annotations

from ..modules import Module
from . import parametrize
from ...autograd import no_grad
from .spectral_norm import _default_dim, normalized_normal, weight_matrix
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


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            with no_grad():
                self.register_buffer("_u", normalized_normal(weight_mat, h, eps))
                self.register_buffer("_v", normalized_normal(weight_mat, w, eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if weight.ndim <= 1:
            raise AssertionError(f"Expected weight to have more than 1 dimension, got {weight.ndim}")
        return weight_matrix(weight, self.dim)

    @no_grad()
    def _power_method(self, weight_mat, n_power_iterations):
        from ..functional import normalize
        for _ in range(n_power_iterations):
            self._u.copy_(normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
            self._v.copy_(normalize(weight_mat.H.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        from ..functional import normalize
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        return weight / u.vdot(weight_mat.mv(v))

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    from ...tensor import Tensor
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, _default_dim(module, dim), eps))
    return module
