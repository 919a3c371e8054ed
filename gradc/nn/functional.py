"""nn.functional: losses and activations spelled with the shared tensor API
(so they work eagerly and under @gradc.compile alike)."""
from __future__ import annotations


def linear(x, weight, bias=None):
    y = x @ weight.t()
    return y + bias if bias is not None else y


def relu(x):
    return x.relu()


def silu(x, inplace=False):
    from ..ops.dispatch import apply
    return apply("silu", x if x.dtype.is_floating_point else x.float())


def leaky_relu(x, negative_slope=0.01, inplace=False):
    from ..ops.dispatch import apply
    return apply("leaky_relu", x, negative_slope=float(negative_slope))


def _float_activation(name, kernel, x, **attrs):
    """A table activation on a floating point tensor; PyTorch's error for an integer one."""
    from ..ops.dispatch import apply
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{x.dtype.tensor_type[:-6]}\'')
    return apply(name, x, **attrs)


def softplus(x, beta=1.0, threshold=20.0):
    return _float_activation("softplus", "softplus_cpu", x, beta=float(beta), threshold=float(threshold))


def elu(x, alpha=1.0, inplace=False):
    return _float_activation("elu", "elu_cpu", x, alpha=float(alpha))


def gelu(x, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _float_activation("gelu", "GeluKernelImpl", x, approximate=approximate)


def tanh(x):
    return x.tanh()


def sigmoid(x):
    return x.sigmoid()


def softmax(x, dim=None):
    return x.softmax(-1 if dim is None else dim)


def log_softmax(x, dim=None):
    return x.log_softmax(-1 if dim is None else dim)


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def mse_loss(input, target, reduction="mean"):
    if tuple(input.shape) != tuple(target.shape):
        import warnings
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", UserWarning, stacklevel=2)
    d = input - target
    return _reduce(d * d, reduction)


def nll_loss(log_probs, target, reduction="mean"):
    if log_probs.ndim != 2 or target.ndim != 1:
        raise ValueError(f"nll_loss expects (N, C) log-probabilities and (N,) targets, got "
                         f"{list(log_probs.shape)} and {list(target.shape)}")
    picked = log_probs.gather(1, target.unsqueeze(1)).squeeze(1)
    return _reduce(-picked, reduction)


def cross_entropy(input, target, reduction="mean"):
    return nll_loss(input.log_softmax(1), target, reduction)
