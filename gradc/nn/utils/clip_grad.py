"""``torch.nn.utils.clip_grad``: the total norm of tensors, scaling gradients to a norm, and
clamping them to a value (the foreach and per-tensor paths compute the same numbers)."""
from __future__ import annotations

import math
import types

from ..._warnings import warn_at_user_code
from ...autograd import no_grad
from ...tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type`` norm of the tensors' norms (their norm as one vector)."""
    from ... import factories
    from ...tensor_api import stack
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return factories.tensor(0.0)
    norms = [t.detach().abs().amax() if math.isinf(norm_type) else t.detach().norm(norm_type) for t in tensors]
    total = stack(norms).amax() if math.isinf(norm_type) else stack(norms).norm(norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    return total


@no_grad()
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients in place by ``min(max_norm / (total_norm + 1e-6), 1)``."""
    grads = _grads(parameters)
    if not grads:
        return
    coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.to(g.dtype))


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients in place so that their total ``norm_type`` norm is at most
    ``max_norm`` (``get_total_norm`` then ``clip_grads_with_norm_``); returns the total norm
    before clipping, as PyTorch does."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        was_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if was_generator and not parameters:
            warn_at_user_code("`parameters` is an empty generator, no gradient clipping will occur.", UserWarning)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated spelling of ``clip_grad_norm_``."""
    warn_at_user_code("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                      "`torch.nn.utils.clip_grad_norm_`.", FutureWarning)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    for g in _grads(parameters):
        g.clamp_(-float(clip_value), float(clip_value))
