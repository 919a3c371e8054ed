"""``torch.nn.utils.spectral_norm`` / ``remove_spectral_norm`` (the hook-based API): the weight
``w`` is kept as ``w_orig`` with buffers ``w_u``, ``w_v`` (power-iteration vectors, drawn with
``normal_`` like PyTorch's, so the same seed gives the same ones), and a forward pre-hook sets
``w = w_orig / sigma``, ``sigma = u . (W v)``, after ``n_power_iterations`` steps in training.

Not ported: PyTorch's state-dict metadata hook (``spectral_norm`` version) and the load hook
that converts version-0 checkpoints (which stored ``w`` and no ``w_v``).
"""
from __future__ import annotations

from ...autograd import no_grad


def weight_matrix(weight, dim):
    """``weight`` as a matrix with dimension ``dim`` as its rows (the rest flattened)."""
    if dim != 0:
        weight = weight.permute(dim, *[d for d in range(weight.dim()) if d != dim])
    return weight.reshape(weight.size(0), -1)


def normalized_normal(like, n, eps):
    """A unit vector of ``n`` standard normal draws (``new_empty(n).normal_(0, 1)``), as PyTorch
    starts its power iteration."""
    from ..functional import normalize
    return normalize(like.new_empty(n).normal_(0, 1), dim=0, eps=eps)


class SpectralNorm:
    """The forward pre-hook that recomputes the weight (PyTorch's class of the same name)."""
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name, self.dim, self.eps = name, dim, eps
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations

    def reshape_weight_to_matrix(self, weight):
        return weight_matrix(weight, self.dim)

    def compute_weight(self, module, do_power_iteration):
        from ..functional import normalize
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(weight_mat.t().mv(u), dim=0, eps=self.eps))
                    u.copy_(normalize(weight_mat.mv(v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def remove(self, module):
        from ..parameter import Parameter
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        object.__delattr__(module, self.name)           # (the computed weight, a plain attribute)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = normalized_normal(weight, h, fn.eps)
            v = normalized_normal(weight, w, fn.eps)
        del module._parameters[name]
        module.register_parameter(name + "_orig", weight)
        object.__setattr__(module, name, weight.data)
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def _default_dim(module, dim):
    """``dim`` or, when None, 1 for a transposed convolution (its output channels) and 0 otherwise."""
    from ..modules import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
    if dim is not None:
        return dim
    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    SpectralNorm.apply(module, name, n_power_iterations, _default_dim(module, dim), eps)
    return module


def remove_spectral_norm(module, name="weight"):
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
