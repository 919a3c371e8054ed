"""``torch.nn.utils.convert_parameters``: parameters to one flat vector and back."""
from __future__ import annotations

from ...autograd import no_grad
from ...tensor import Tensor


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
