"""``torch.nn.utils.stateless``: the deprecated home of ``functional_call`` (now ``gradc.func``)."""
from __future__ import annotations

from ..._warnings import warn_at_user_code


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``gradc.func.functional_call`` with PyTorch's deprecation warning."""
    from ...func import functional_call as _functional_call
    warn_at_user_code("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be "
                      "removed in a future version of PyTorch. Please use `torch.func.functional_call` instead which "
                      "is a drop-in replacement.", FutureWarning)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
