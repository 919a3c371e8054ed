"""``torch.nn.utils``: gradient clipping and flattening parameters to one vector."""
from __future__ import annotations

import math

from ...autograd import no_grad
from ...tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients in place so that their total ``norm_type`` norm (the norm of the
    per-tensor norms) is at most ``max_norm`` (scale ``max_norm / (norm + 1e-6)``, capped at 1);
    returns the total norm before clipping, as PyTorch does."""
    from ... import factories
    from ...tensor_api import stack
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return factories.tensor(0.0)
    norms = [g.detach().abs().amax() if math.isinf(norm_type) else g.detach().norm(norm_type) for g in grads]
    total = stack(norms).amax() if math.isinf(norm_type) else stack(norms).norm(norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.to(g.dtype))
    return total


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    for g in _grads(parameters):
        g.clamp_(-float(clip_value), float(clip_value))


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated (a new tensor in the autograd graph)."""
    from ...tensor_api import cat
    return cat([p.reshape(-1) for p in parameters])


@no_grad()
def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of ``vec`` into the parameters, in place."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    start = 0
    for p in parameters:
        n = p.numel()
        p.copy_(vec[start:start + n].reshape(p.shape))
        start += n


from . import rnn  # noqa: E402  (torch.nn.utils.rnn)
from .weight_norm import remove_weight_norm, weight_norm  # noqa: E402,F401
from . import parametrizations, parametrize  # noqa: E402,F401
