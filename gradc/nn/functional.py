"""nn.functional: losses and activations spelled with the shared tensor API
(so they work eagerly and under @gradc.compile alike).

Activations with a node of their own in PyTorch (silu, softplus, gelu, ...) are table ops.
The losses are compositions of table ops: their values and gradients are PyTorch's, but
their ``grad_fn`` graph is that of the composition (l1_loss's is PyTorch's too:
MeanBackward0 <- AbsBackward0 <- SubBackward0; mse_loss records MulBackward0 where PyTorch
records one MseLossBackward0)."""
from __future__ import annotations

import math

from .._warnings import warn_at_user_code
from ..arg_parser import check
from ..autograd.node import grad_fn_named
from ..autocast_state import autocast_excluded, float32_precision, lower_precision
from ..compositions import (avg_pool2d, avg_pool3d, conv1d, conv2d, conv3d, conv_transpose1d,  # noqa: F401
                            conv_transpose2d, conv_transpose3d, fold, max_pool2d, max_pool3d, pad, unfold)
from ..resampling import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d,  # noqa: F401
                          adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d, affine_grid, avg_pool1d,
                          fractional_max_pool2d, fractional_max_pool3d,
                          grid_sample, interpolate,
                          max_pool1d, pixel_shuffle, pixel_unshuffle)


# The tensors PyTorch's node for a function has an edge to (grad_fn_named's ``edges``)
def _input_target(input, target, *args, **kwargs):
    return (input, target)


def _input_weight_bias(input, *args, weight=None, bias=None, **kwargs):
    """(input, weight, bias) of layer_norm(input, normalized_shape, weight, bias, eps) and
    group_norm(input, num_groups, weight, bias, eps), given by position or by name."""
    if len(args) > 1:
        weight = args[1]
    if len(args) > 2:
        bias = args[2]
    return (input, weight, bias)


def _native(name, signature, args, fits):
    """PyTorch's TypeError where the native function ``name`` (one ``signature``) that its Python
    function hands ``args`` to refuses one of them; ``fits``: the caller's quick test, that they do."""
    if not fits:
        check(name, (signature,), args)


def _is_int(value) -> bool:
    return type(value) is int


def _is_float(value) -> bool:
    return type(value) in (float, int)


def _optional_tensor(value) -> bool:
    from ..tensor_api import is_tensor_like
    return value is None or is_tensor_like(value)


@lower_precision
def linear(x, weight, bias=None):
    """x @ weight.t() + bias as PyTorch's graph has it: one AddmmBackward0 (edges to bias, x and
    weight.t()) for a matrix with a bias, MmBackward0 without; other ranks folded to a matrix and
    viewed back (ViewBackward0 with a bias; UnsafeViewBackward0 without, SqueezeBackward4 for a
    vector)."""
    from ..aliases import broadcast_shapes
    from ..ops.dispatch import apply
    _native("linear", "(Tensor input, Tensor weight, Tensor? bias = None)", (x, weight, bias),
            _optional_tensor(weight) and weight is not None and _optional_tensor(bias))
    if x.ndim == 0 or weight.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {x.ndim}D and "
                           f"{weight.ndim}D")
    wt = weight.t()
    if weight.ndim != 2:
        y = x @ wt
        return y if bias is None else _add_bias(y, bias, x, weight)
    if x.ndim == 2:
        return x.mm(wt) if bias is None else _addmm_bias(bias, x, wt, weight)
    shape = list(x.shape[:-1]) + [weight.shape[0]]
    if bias is not None and bias.ndim != 1:     # PyTorch: matmul, then an in-place add of the bias
        y = x @ wt
        if tuple(broadcast_shapes(y.shape, bias.shape)) != tuple(y.shape):
            raise RuntimeError(f"output with shape {list(y.shape)} doesn't match the broadcast shape "
                               f"{list(broadcast_shapes(y.shape, bias.shape))}")
        return y + bias
    if bias is not None:
        return _addmm_bias(bias, x.reshape(-1, x.shape[-1]), wt, weight).view(shape)
    if x.ndim == 1:
        return apply("reshape", x.unsqueeze(0).mm(wt), shape=shape, _name="SqueezeBackward4")
    return apply("reshape", x.reshape(-1, x.shape[-1]).mm(wt), shape=shape, _name="UnsafeViewBackward0")


@grad_fn_named("AddmmBackward0", edges=lambda bias, x, wt, weight: (bias, x, wt))
def _addmm_bias(bias, x, wt, weight):
    return _add_bias(x.mm(wt), bias, x, weight)


def _add_bias(y, bias, x, weight):
    try:
        return y + bias
    except RuntimeError:          # PyTorch's addmm expands the bias to (rows, out_features) and says so
        rows = math.prod(x.shape[:-1]) if x.ndim > 1 else 1
        bias.expand(rows, weight.shape[0])
        raise


def honours_inplace(fn):
    """``inplace=True`` for a function written out of place: it runs on a copy of the input (its
    saved tensors stay intact) and the result is written into the input, which is returned, under
    the result's node name, as PyTorch's in-place activations and dropouts do."""
    import functools
    import inspect
    signature = inspect.signature(fn)
    first = next(iter(signature.parameters))

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        if not bound.arguments.get("inplace", False):
            return fn(*args, **kwargs)
        x = bound.arguments[first]
        bound.arguments["inplace"] = False
        bound.arguments[first] = copy = x.clone()
        out = fn(*bound.args, **bound.kwargs)
        if out is copy:                 # nothing to do (a dropout not training)
            return x
        name = type(out.grad_fn).__name__ if out.grad_fn is not None else None
        written = x._inplace(out)
        return _rename_node(written, name) if name else written
    return wrapper


def relu(x, inplace=False):
    return x.relu_() if inplace else x.relu()


@honours_inplace
def silu(x, inplace=False):
    from ..ops.dispatch import apply
    return apply("silu", x if x.dtype.is_floating_point else x.float())


def leaky_relu(x, negative_slope=0.01, inplace=False):
    from ..ops.dispatch import apply
    _native("leaky_relu", "(Tensor input, Number negative_slope = 0.01)", (x, negative_slope),
            _is_float(negative_slope))
    if inplace:
        return leaky_relu_(x, negative_slope)
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
    _native("elu", "(Tensor input, Number alpha = 1, Number scale = 1, Number input_scale = 1)", (x, alpha),
            _is_float(alpha))
    if inplace:
        return elu_(x, alpha)
    return _float_activation("elu", "elu_cpu", x, alpha=float(alpha))


def gelu(x, approximate="none"):
    if not isinstance(approximate, str):
        check("gelu", ("(Tensor input, *, str approximate = 'none')",), (x,), {"approximate": approximate})
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _float_activation("gelu", "GeluKernelImpl", x, approximate=approximate)


def logsigmoid(x):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), without overflow or softplus's threshold."""
    return _float_activation("log_sigmoid", "log_sigmoid_cpu", x)


def tanh(x):
    return x.tanh()


def sigmoid(x):
    return x.sigmoid()


def _softmax_dim(name, ndim, dim):
    """PyTorch's implicit dim (0 for 0-, 1- and 3-d inputs, else 1), with its warning."""
    if dim is not None:
        return dim
    dim = 0 if ndim in (0, 1, 3) else 1
    warn_at_user_code(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                      "as an argument.", UserWarning)
    return dim


def softmax(x, dim=None, _stacklevel=3, dtype=None):
    return x.softmax(_softmax_dim("softmax", x.ndim, dim), dtype=dtype)


def log_softmax(x, dim=None, _stacklevel=3, dtype=None):
    return x.log_softmax(_softmax_dim("log_softmax", x.ndim, dim), dtype=dtype)


def softmin(x, dim=None, _stacklevel=3, dtype=None):
    return (-x).softmax(_softmax_dim("softmin", x.ndim, dim), dtype=dtype)


# ---- piecewise and smooth activations as compositions (values and gradients are PyTorch's,
# boundaries included; PyTorch records one node for most, e.g. HardtanhBackward0) ----------------
@grad_fn_named("HardtanhBackward0", edges=lambda x, *a, **k: (x,))
def hardtanh(x, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(x, min_val, max_val) whose gradient passes strictly inside (min_val, max_val)."""
    from ..tensor_api import where
    if inplace:
        return hardtanh_(x, min_val, max_val)
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    # PyTorch's mask: zero where x <= min_val or x >= max_val (a NaN keeps its gradient)
    return where((x <= min_val) | (x >= max_val), x.clamp(min_val, max_val).detach(), x)


def relu6(x, inplace=False):
    return hardtanh(x, 0.0, 6.0, inplace)


@honours_inplace
@grad_fn_named("HardsigmoidBackward0", edges=lambda x, *a, **k: (x,))
def hardsigmoid(x, inplace=False):
    """relu6(x + 3) / 6: gradient 1/6 strictly inside (-3, 3) (a NaN gets none, as PyTorch's)."""
    from ..tensor_api import where
    y = x + 3.0
    return where((y > 0.0) & (y < 6.0), y, y.clamp(0.0, 6.0).detach()) / 6.0


@honours_inplace
@grad_fn_named("HardswishBackward0", edges=lambda x, *a, **k: (x,))
def hardswish(x, inplace=False):
    """0 up to -3, x from 3 on, x (x + 3) / 6 between (PyTorch's gradient: 0, 1, x / 3 + 1/2)."""
    from ..tensor_api import where
    inside = where(x < 3.0, x, 0.0)     # (a NaN, not inside, must not reach the product's gradient)
    return where(x <= -3.0, x * 0.0, where(x < 3.0, inside * (inside + 3.0) / 6.0, x))   # NaN: gradient 1


@honours_inplace
@grad_fn_named("MishBackward0", edges=lambda x, *a, **k: (x,))
def mish(x, inplace=False):
    return x * softplus(x).tanh()


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


@grad_fn_named("EluBackward0")
def _selu(x):
    return SELU_SCALE * elu(x, SELU_ALPHA)


def selu(x, inplace=False):
    return selu_(x) if inplace else _selu(x)


@grad_fn_named(lambda x, alpha=1.0, inplace=False: None if inplace else "CeluBackward0",
               edges=lambda x, *a, **k: (x,))
def celu(x, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1)), which is alpha * elu(x / alpha)."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    if inplace:
        return celu_(x, alpha)
    return alpha * elu(x / alpha)


@grad_fn_named("GluBackward0", edges=lambda x, *a, **k: (x,))
def glu(x, dim=-1):
    n = x.shape[dim]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % x.ndim} is size {n}")
    a, b = x.chunk(2, dim)
    return a * b.sigmoid()


def softsign(x):
    return x / (1 + x.abs())


def tanhshrink(x):
    return x - x.tanh()


@grad_fn_named(lambda x, threshold, value, inplace=False: None if inplace else "ThresholdBackward0",
               edges=lambda x, *a, **k: (x,))
def threshold(x, threshold, value, inplace=False):
    from ..tensor_api import where
    if inplace:
        return threshold_(x, threshold, value)
    if not x.dtype.is_floating_point:       # an integer tensor keeps its dtype, as PyTorch's
        return where(x <= threshold, x._scalar(value, x.dtype), x)
    return where(x <= threshold, x * 0.0 + value, x)                 # (NaN: kept, with its gradient)


@grad_fn_named("HardshrinkBackward0", edges=lambda x, *a, **k: (x,))
def hardshrink(x, lambd=0.5):
    from ..tensor_api import where
    return where((x >= -lambd) & (x <= lambd), x * 0.0, x)


@grad_fn_named("SoftshrinkBackward0", edges=lambda x, *a, **k: (x,))
def softshrink(x, lambd=0.5):
    from ..tensor_api import where
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return where((x >= -lambd) & (x <= lambd), x * 0.0, where(x > lambd, x - lambd, x + lambd))


@lower_precision
@grad_fn_named("PreluKernelBackward0", edges=lambda x, weight: (x, weight))
def prelu(x, weight):
    """x where x > 0, weight * x elsewhere; one weight, or one per channel (dim 1)."""
    from ..tensor_api import where
    w = weight
    if weight.numel() > 1:
        if x.ndim < 2 or x.shape[1] != weight.numel():
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {x.shape[1] if x.ndim > 1 else 1}.")
        w = weight.reshape([1, weight.numel()] + [1] * (x.ndim - 2))
    return where(x > 0, x, w * x)


def _check_param_dtypes(input, *params, bias=None):
    """PyTorch's CPU norms take parameters of the input's float type only: its errors for others
    (a float64 input with float32 parameters, a float32 one with float64 parameters; a float64
    ``bias`` alone, layer_norm's, gives another message)."""
    dt = input.dtype
    if any(p is not None and p.dtype != dt for p in params + (bias,)) and dt.name == "float64":
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    if any(p is not None and p.dtype != dt for p in params):
        raise RuntimeError(f"mixed dtype (CPU): expect parameter to have scalar type of {dt.tensor_type[:-6]}")
    if bias is not None and bias.dtype != dt:
        raise RuntimeError(f"expected scalar type {dt.tensor_type[:-6]} but found {bias.dtype.tensor_type[:-6]}")


def _trailing_dims(input, normalized_shape, star="*, ", **params) -> tuple:
    """The (negative) dims of ``normalized_shape`` at the end of ``input``, PyTorch's error if
    they are not there (``star``: how its message writes the leading dims: layer_norm's
    ``[*, 4]``, rms_norm's ``[*4]``) or if a parameter (weight=, bias=) has another shape."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    for name, t in params.items():
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(ns)}")
    if not ns or len(ns) > input.ndim or tuple(input.shape[input.ndim - len(ns):]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[{star}{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    return tuple(range(-len(ns), 0))


def _moments(x, dims):
    """(mean, x - mean, biased variance) over ``dims``, kept as size-1 dims."""
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    return mean, centered, (centered * centered).mean(dims, keepdim=True)


@grad_fn_named("NativeLayerNormBackward0", edges=_input_weight_bias)
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over the trailing ``normalized_shape`` dims (biased variance),
    then ``* weight + bias``: a composition that ``@gradc.compile`` fuses into one row kernel
    (PyTorch records one NativeLayerNormBackward0 node)."""
    _native("layer_norm", "(Tensor input, tuple of ints normalized_shape, Tensor? weight = None, Tensor? bias = "
            "None, float eps = 1e-05, bool cudnn_enable = True)", (input, normalized_shape, weight, bias, eps),
            isinstance(normalized_shape, (tuple, list)) and all(_is_int(n) for n in normalized_shape)
            and _is_float(eps))
    dims = _trailing_dims(input, normalized_shape, weight=weight, bias=bias)
    _check_param_dtypes(input, weight, bias=bias)
    _, centered, var = _moments(input, dims)
    y = centered * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight
    return y + bias if bias is not None else y


@grad_fn_named("NativeGroupNormBackward0", edges=_input_weight_bias)
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each of ``num_groups`` groups of channels (dim 1) over its channels and spatial
    dims (biased variance), then ``* weight + bias`` per channel."""
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but "
                               f"got {name} of shape {list(t.shape)} and input of shape {list(input.shape)}")
    _check_param_dtypes(input, weight, bias=bias)
    _, centered, var = _moments(input.reshape(n, num_groups, -1), -1)
    y = (centered * (var + eps).rsqrt()).reshape(*input.shape)
    shape = [1, c] + [1] * (input.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    return y + bias.reshape(shape) if bias is not None else y


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the trailing ``normalized_shape`` dims, times ``weight``;
    ``eps`` defaults to the dtype's machine epsilon, as PyTorch's."""
    dims = _trailing_dims(input, normalized_shape, "*", weight=weight)
    if eps is None:
        import numpy as np
        eps = float(np.finfo(input.dtype.np).eps)
    y = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return y * weight if weight is not None else y


@float32_precision
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log(target) - input) pointwise (0 where target is 0), or with ``log_target``
    exp(target) * (target - input); ``batchmean`` divides the sum by the batch size."""
    from ..tensor_api import where
    if log_target:
        loss = target.exp() * (target - input)
    else:
        from ..aliases import xlogy
        loss = xlogy(target, target) - target * input       # (NaN for a negative target, as PyTorch's)
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    if reduction == "mean":
        warn_at_user_code("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          UserWarning)
    return _reduce(loss, reduction)


@lower_precision
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q k^T * scale + bias) v over the last two dims: ``scale`` defaults to
    1/sqrt(q.size(-1)); ``is_causal`` masks keys after each query (top-left aligned); a bool
    ``attn_mask`` keeps where True, a float one is added.  ``dropout_p`` > 0 follows
    ``dropout`` (a fresh mask per call, compiled too).  ``enable_gqa`` repeats key/value heads to the query's."""
    import math

    from ..tensor_api import where
    L, S = query.shape[-2], key.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if enable_gqa and key.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key, value = key.repeat_interleave(rep, -3), value.repeat_interleave(rep, -3)
    scores = (query @ key.transpose(-2, -1)) * scale
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        from .. import factories
        keep = factories.ones(L, S, dtype=scores.dtype).tril() > 0
        scores = where(keep, scores, -math.inf)
    elif attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            scores = where(attn_mask, scores, -math.inf)
        else:
            scores = scores + attn_mask
    attn = scores.softmax(-1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p)
    return attn @ value


@grad_fn_named("NormBackward1")
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of ``x1 - x2 + eps`` over the last dim (PyTorch adds eps to the difference)."""
    return (x1 - x2 + eps).norm(p, dim=-1, keepdim=keepdim)


@float32_precision
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


@float32_precision
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(min=0), reduction)


def _batch_norm_edges(input, running_mean, running_var, weight=None, bias=None, *args, **kwargs):
    return (input, weight, bias)


@grad_fn_named("NativeBatchNormBackward0", edges=_batch_norm_edges)
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    """Normalise each channel (dim 1) over the batch and spatial dims: with the batch's mean and
    biased variance when ``training`` (then ``running_mean``/``running_var``, if given, move
    towards the batch's mean and unbiased variance by ``momentum``, in place), else with the
    running statistics; then ``* weight + bias`` per channel.  A composition (PyTorch records
    one NativeBatchNormBackward0).  Under ``@gradc.compile`` the update of the running statistics
    is recorded as an in-place write of the compiled function and carried out at each call."""
    if input.ndim < 2:
        raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
    _not_differentiable("native_batch_norm", running_mean=running_mean, running_var=running_var)
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    _check_param_dtypes(input, running_mean, running_var, weight, bias)
    shape = [1, c] + [1] * (input.ndim - 2)
    dims = [0] + list(range(2, input.ndim))
    if training:
        count = input.numel() // c if c else 0
        if count == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"torch.Size([{', '.join(str(d) for d in input.shape)}])")
        mean, centered, var = _moments(input, dims)
        if running_mean is not None or running_var is not None:
            from ..autograd import no_grad
            with no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(mean.detach().reshape(c) * momentum)
                if running_var is not None:
                    unbiased = var.detach().reshape(c) * (count / (count - 1))
                    running_var.mul_(1 - momentum).add_(unbiased * momentum)
        y = centered * (var + eps).rsqrt()
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be defined in "
                               "evaluation mode")
        y = (input - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(shape)
    return y + bias.reshape(shape) if bias is not None else y


@honours_inplace
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p): ``input * mask``
    (PyTorch's MulBackward0 with no edge to the mask); the input itself when not training or p == 0.
    The mask comes from ``gradc.rand`` (a ``rand_like`` draw, ``ops/random.py``, when traced), so
    under ``@gradc.compile`` each call draws a new one and backward uses the mask its forward drew."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    _native("dropout", "(Tensor input, float p, bool train)", (input, p, training), isinstance(training, bool))
    if not training or p == 0:
        return input
    from .. import dtypes, factories
    # PyTorch's CPU dropout: a bernoulli(1 - p) mask (a double uniform below 1 - p: the same
    # stream as PyTorch's; gradc.rand records a rand_like draw when compiled) divided by 1 - p
    keep = factories.rand(tuple(input.shape), dtype=dtypes.float64, device=input.device) < 1.0 - p
    mask = keep.to(input.dtype) / (1.0 - p) if p < 1 else keep.to(input.dtype)
    return input * mask


def one_hot(tensor, num_classes=-1):
    """int64 ``tensor.shape + (num_classes,)``: 1 at each value's position (``num_classes`` -1: max + 1)."""
    from .. import dtypes, factories
    _native("one_hot", "(Tensor input, int num_classes = -1)", (tensor, num_classes), _is_int(num_classes))
    if tensor.dtype is not dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    data = getattr(tensor, "_data", None)          # eager tensors only: a tracer proxy has no values
    if data is not None and data.size:
        if data.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = int(data.max()) + 1
        elif data.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    if num_classes < 0:
        raise RuntimeError("one_hot: num_classes must be given when the values are not known (compiled code)"
                           if data is None else "Can not infer total number of classes from empty tensor.")
    if data is None:           # traced: the compare would silently give a zero row for a bad value
        from ..ops.dispatch import apply
        tensor = apply("check_index", tensor, size=int(num_classes), dim=tensor.ndim, what="class")
    return (tensor.unsqueeze(-1) == factories.arange(num_classes, device=tensor.device)).long()


def _torch_type_name(x):
    from ..tensor import Tensor
    return "<class 'torch.Tensor'>" if isinstance(x, Tensor) else str(type(x))


def _check_lookup(input, weight, name):
    """PyTorch's errors of embedding and embedding_bag for a weight that is not a matrix and for
    indices that are not integers."""
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if input.dtype.is_floating_point or input.dtype.name == "bool":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got torch.{input.dtype.tensor_type} instead (while checking arguments "
                           f"for {name})")


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums / means / maxima of bags of ``weight``'s rows: a 2-D ``input`` one bag a row, a 1-D one
    cut at ``offsets``.  A composition: the rows looked up (``embedding``, so max_norm and
    scale_grad_by_freq as there) laid out as (bags, longest bag) and reduced with the entries at
    ``padding_idx`` left out; an empty bag gives zeros.  The bag layout is read from the indices'
    values (eager only).  Recorded as PyTorch's EmbeddingBagBackward0."""
    import numpy as np
    from .. import factories
    from ..tensor_api import where
    _check_lookup(input, weight, "embedding_bag")
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type "
                             f"{_torch_type_name(offsets)}")
        starts = np.arange(input.shape[0]) * input.shape[1]
        include_last_offset = False
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = offsets.numpy().astype(np.int64)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if sparse:
        raise NotImplementedError("gradc: embedding_bag(sparse=True) is not supported (gradc has no sparse gradients)")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{n} through {n - 1}, but got "
                               f"{padding_idx}")
        padding_idx = padding_idx + n if padding_idx < 0 else padding_idx
    idx = input.reshape(-1).long()
    data = idx.numpy()
    total = data.shape[0]
    bad = np.flatnonzero((data < 0) | (data >= n))
    if bad.size:
        raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be "
                           f"{data[bad[0]]}")        # (PyTorch's float64 / max-mode message)
    if input.ndim == 1 and starts.size:
        if starts[0] != 0:
            raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                               f"position 0. However, got {starts[0]}\n[ torch.LongTensor{{}} ]")
        if starts[-1] > total:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {total} but got offsets[-1] of "
                               f"{starts[-1]}")
    if include_last_offset:         # (the last bag runs to the input's end, as PyTorch's kernels read it)
        starts = starts[:-1]
    ends = np.append(starts[1:], total)[:starts.size]
    lengths = np.maximum(ends - starts, 0)
    width = max(int(lengths.max()) if lengths.size else 0, 1)
    pos = starts[:, None] + np.arange(width)[None, :]
    valid = np.arange(width)[None, :] < lengths[:, None]
    pos = np.where(valid, pos, 0)
    if total:
        valid &= data[pos] != (-1 if padding_idx is None else padding_idx)
    else:
        valid &= False

    def body():
        dtype = weight.dtype
        rows = embedding(idx, weight, None, max_norm, norm_type, scale_grad_by_freq)     # (total, D)
        if per_sample_weights is not None:
            rows = rows * per_sample_weights.reshape(-1).unsqueeze(-1)
        if total == 0:
            return factories.zeros(len(lengths), weight.shape[1], dtype=dtype)
        mask = factories.tensor(valid)
        dense = rows[factories.tensor(pos)]                                         # (bags, width, D)
        if mode == "max":
            picked = where(mask.unsqueeze(-1), dense, -math.inf).max(1).values
            return where(mask.any(1).unsqueeze(-1), picked, 0.0)
        summed = where(mask.unsqueeze(-1), dense, 0.0).sum(1)
        if mode == "sum":
            return summed
        count = factories.tensor(np.maximum(valid.sum(1), 1).astype(np.dtype(dtype.name)), dtype=dtype)
        return summed / count.unsqueeze(-1)

    return grad_fn_named("EmbeddingBagBackward0")(body)()


@grad_fn_named("EmbeddingBackward0")
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by the integer ``input`` (shape ``input.shape + weight.shape[1:]``),
    one ``index`` op recorded as PyTorch's EmbeddingBackward0; the rows at ``padding_idx`` get no
    gradient (they pass through a detached copy there).  ``max_norm``: the rows looked up are first
    renormalised in place in ``weight`` (PyTorch's embedding_renorm_, eager only);
    ``scale_grad_by_freq``: each position's gradient divided by its index's count in ``input``."""
    from ..ops.dispatch import apply
    from ..tensor_api import where
    _native("embedding", "(Tensor weight, Tensor indices, int padding_idx = -1, bool scale_grad_by_freq = False, "
            "bool sparse = False)", (weight, input), _optional_tensor(weight) and weight is not None)
    _check_lookup(input, weight, "embedding")
    if sparse:
        raise NotImplementedError("gradc: embedding(sparse=True) is not supported (gradc has no sparse gradients)")
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0 and padding_idx < -n:
            raise AssertionError("Padding_idx must be within num_embeddings")
    data = getattr(input, "_data", None)          # eager tensors only: a tracer proxy has no values
    if data is not None and data.size and (data.max() >= n or data.min() < 0):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    out = apply("index", weight, input, key=[["tensor", 0]], _name="EmbeddingBackward0")
    if scale_grad_by_freq:
        from .. import factories
        if data is not None:
            flat = data.reshape(-1)
            values, inverse, counts = __import__("numpy").unique(flat, return_inverse=True, return_counts=True)
            count = factories.tensor(counts[inverse].reshape(data.shape), dtype=out.dtype, device=out.device)
        else:                     # traced: each position's count by comparing every pair of positions
            flat = input.reshape(-1)
            count = (flat.unsqueeze(1) == flat.unsqueeze(0)).sum(1).reshape(*input.shape).to(out.dtype)
        frozen = out.detach()
        out = frozen + (out - frozen) * (1.0 / count).unsqueeze(-1)      # the value unchanged, the gradient scaled
    if padding_idx is not None:
        row = padding_idx + n if padding_idx < 0 else padding_idx
        out = where((input == row).unsqueeze(-1), out.detach(), out)
    return out


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """PyTorch's embedding_renorm_: each distinct row of ``weight`` looked up whose ``norm_type``
    norm exceeds ``max_norm`` is scaled in place by max_norm / (norm + 1e-7), without history."""
    import numpy as np
    from .. import factories
    from ..autograd.grad_mode import no_grad
    data = getattr(input, "_data", None)
    if data is None or getattr(weight, "_data", None) is None:
        from ..ir.errors import TraceError
        raise TraceError("embedding with max_norm under @gradc.compile: PyTorch renormalises the looked-up rows "
                           "of the weight in place; gradc does that eagerly only (call it outside the compiled "
                           "function, or renormalise the weight before)")
    n = weight.shape[0]
    rows = np.unique(np.where(np.asarray(data) < 0, np.asarray(data) + n, np.asarray(data)).reshape(-1))
    if rows.size == 0:
        return
    with no_grad():
        idx = factories.tensor(rows, device=weight.device)
        picked = weight.index_select(0, idx)
        norms = picked.norm(norm_type, 1).numpy().astype(np.float64)
        scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        if (norms > max_norm).any():
            weight[idx] = picked * factories.tensor(scale, dtype=weight.dtype, device=weight.device).unsqueeze(1)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(||input||_p along dim, eps)."""
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along dim, as PyTorch 2 computes it."""
    from ..aliases import broadcast_tensors
    x1, x2 = broadcast_tensors(x1, x2)          # normalised after broadcasting, as PyTorch's
    return ((x1 / x1.norm(2, dim, keepdim=True).clamp(min=eps))
            * (x2 / x2.norm(2, dim, keepdim=True).clamp(min=eps))).sum(dim)


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


@float32_precision
@grad_fn_named("MseLossBackward0", edges=_input_target)
def mse_loss(input, target, reduction="mean"):
    from .. import dtypes
    from ..tensor_api import result_dtype
    input, target = _broadcast_pair(input, target)
    if (input.dtype is dtypes.bool_) != (target.dtype is dtypes.bool_):
        # (PyTorch's kernel computes in the promoted type, where `-` refuses a bool operand)
        dt = result_dtype([input, target])
        input, target = input.to(dt), target.to(dt)
    d = input - target
    return _reduce(d * d, reduction)


def _warn_size_mismatch(input, target):
    if tuple(input.shape) != tuple(target.shape):
        warn_at_user_code(f"Using a target size ({target.shape}) that is different to the input size "
                          f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
                          "Please ensure they have the same size.", UserWarning)


def _broadcast_pair(input, target):
    """PyTorch's mse/l1/smooth_l1 losses broadcast input and target first (with the warning), so a
    0-d operand promotes as a tensor with dims: mse_loss(float32 [n], float64 0-d) is float64."""
    _warn_size_mismatch(input, target)
    if tuple(input.shape) == tuple(target.shape):
        return input, target
    from ..aliases import broadcast_tensors
    return broadcast_tensors(input, target)


@float32_precision
def l1_loss(input, target, reduction="mean"):
    input, target = _broadcast_pair(input, target)
    return _reduce((input - target).abs(), reduction)


@float32_precision
@grad_fn_named(lambda input, target, reduction="mean", beta=1.0: "SmoothL1LossBackward0" if beta else None,
               edges=_input_target)
def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta = 0: l1_loss)."""
    input, target = _broadcast_pair(input, target)
    _native("smooth_l1_loss", "(Tensor input, Tensor target, int reduction = 1, float beta = 1.0)",
            (input, target, 1, beta), _is_float(beta))
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return l1_loss(input, target, reduction)
    from ..tensor_api import where
    d = (input - target).abs()
    return _reduce(where(d < beta, (0.5 / beta) * (d * d), d - 0.5 * beta), reduction)


@float32_precision
@grad_fn_named("HuberLossBackward0", edges=_input_target)
def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| <= delta, else delta (|d| - 0.5 delta)."""
    _warn_size_mismatch(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    from ..tensor_api import where
    d = (input - target).abs()
    return _reduce(where(d <= delta, 0.5 * (d * d), delta * (d - 0.5 * delta)), reduction)


@float32_precision
@grad_fn_named("BinaryCrossEntropyWithLogitsBackward0", edges=_input_target)
def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """PyTorch's stable form: (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x)."""
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    _not_differentiable("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    sp = softplus(-input)
    if pos_weight is not None:
        sp = (1 + (pos_weight - 1) * target) * sp
    loss = (1 - target) * input + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@float32_precision
@grad_fn_named("BinaryCrossEntropyBackward0", edges=_input_target)
def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """-(t log p + (1 - t) log(1 - p)), each log clamped at -100 as PyTorch's."""
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    _not_differentiable("binary_cross_entropy", weight=weight)
    from ..ops.dispatch import apply
    from ..tensor_api import promote_operands
    (p, t), _ = promote_operands([input, target])
    loss = apply("binary_cross_entropy", p, t)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _not_differentiable(function: str, **arguments):
    """PyTorch's ``check_no_requires_grad``: with grad mode on, an argument the function has no
    derivative for (a loss's class weights, batch norm's running statistics) may not require
    grad.  ``function`` is the name PyTorch's error gives (its native function's)."""
    from ..autograd import grad_mode
    if not grad_mode.is_grad_enabled():
        return
    for name, t in arguments.items():
        if t is not None and getattr(t, "requires_grad", False):
            raise RuntimeError(f"The function '{function}' is not differentiable with respect to argument '{name}'. "
                               "This input cannot have requires_grad True.")


def _check_class_weight(weight, c):
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != c):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")


def _class_targets(input, target, weight, ignore_index):
    """Check ``target`` as class indices for ``input`` ((N, C, d1, ...) or unbatched (C,)), with
    PyTorch's errors; an eager target is checked for classes out of range too."""
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    c = input.shape[1] if input.ndim > 1 else input.shape[0]
    if input.ndim <= 2 and target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.dtype.name != "int64":
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype.tensor_type[:-6]}")
    if input.ndim == 2 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if input.ndim > 2:
        want = [input.shape[0]] + list(input.shape[2:])
        if list(target.shape) != want:
            raise RuntimeError(f"Expected target size {want}, got {list(target.shape)}")
    _not_differentiable("nll_loss_forward" if input.ndim <= 2 else "nll_loss2d_forward", weight=weight)
    _check_class_weight(weight, c)
    data = getattr(target, "_data", None)          # eager tensors only: a tracer proxy has no values
    if data is not None:
        import numpy as np
        bad = ((data < 0) | (data >= c)) & (data != ignore_index)
        if np.any(bad):
            raise IndexError(f"Target {int(data[bad].flat[0])} is out of bounds.")


def _nll_node_name(input, target=None, weight=None, size_average=None, ignore_index=-100, reduce=None,
                   reduction="mean"):
    """NllLossBackward0; for inputs with dims beyond (N, C) PyTorch's 2-D kernel, whose unreduced
    result other than 4-D is viewed back to the target's shape."""
    if input.ndim <= 2:
        return "NllLossBackward0"
    return "ViewBackward0" if reduction == "none" and input.ndim != 4 else "NllLoss2DBackward0"


@float32_precision
@grad_fn_named(_nll_node_name, edges=lambda input, *args, **kwargs: (input,) if input.ndim <= 2 else None)
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n], ...] per element, times ``weight[target]``; targets equal to
    ``ignore_index`` count for nothing; ``mean`` divides by the sum of the counted weights
    (PyTorch's NLLLoss: (N, C), (N, C, d1, ...) and unbatched (C,) inputs)."""
    from ..tensor_api import where
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _native("nll_loss_nd", "(Tensor input, Tensor target, Tensor? weight = None, int reduction = 1, int ignore_index "
            "= -100)", (input, target, weight, 1, ignore_index), _is_int(ignore_index) and _optional_tensor(weight))
    _class_targets(input, target, weight, ignore_index)
    class_dim = 1 if input.ndim > 1 else 0
    ignored = target == ignore_index
    safe = where(ignored, 0, target)
    if getattr(target, "_data", None) is None:      # traced: PyTorch's error when the compiled code runs
        from ..ops.dispatch import apply
        safe = apply("check_index", safe, size=input.shape[class_dim], dim=class_dim, what="target")
    picked = input.gather(class_dim, safe.unsqueeze(class_dim)).squeeze(class_dim)
    w = (weight[safe] if weight is not None else picked.new_ones(())).to(input.dtype)
    w = where(ignored, 0.0, w)
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return _weighted_mean(loss.sum(), w.expand(tuple(loss.shape)).sum())


def _weighted_mean(total, count):
    """total / count, NaN when nothing was counted (every target ignored) but with a zero
    gradient there, as PyTorch's NLLLoss: dividing by the zero count would give 0 * inf."""
    from ..tensor_api import where
    empty = count == 0
    return total / where(empty, 1, count) + where(empty, float("nan"), 0.0).to(total.dtype)


def _cross_entropy_node_name(input, target, *args, label_smoothing=0.0, reduction="mean", **kwargs):
    """PyTorch's grad_fn of cross_entropy: the NLL node for class indices without smoothing; for
    class probabilities the mean's division by the batch size (DivBackward1) or the negation."""
    if target.dtype.is_floating_point:
        return "DivBackward1" if reduction == "mean" else "NegBackward0"
    return _nll_node_name(input, reduction=reduction) if not label_smoothing else None


@float32_precision
@grad_fn_named(_cross_entropy_node_name)
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """``nll_loss(log_softmax(input))`` for class-index targets; for a ``target`` of the
    input's shape, class probabilities: ``-(target * log_softmax(input) * weight)`` summed
    over the classes.  ``label_smoothing`` mixes in the uniform distribution as PyTorch's."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _native("cross_entropy_loss", "(Tensor input, Tensor target, Tensor? weight = None, int reduction = 1, int "
            "ignore_index = -100, float label_smoothing = 0.0)", (input, target, weight, 1, ignore_index,
                                                                  label_smoothing),
            _is_int(ignore_index) and _is_float(label_smoothing) and _optional_tensor(weight))
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 1 if input.ndim > 1 else 0
    logp = input.log_softmax(class_dim)
    c = input.shape[class_dim]
    shape = [1] * input.ndim
    shape[class_dim] = c
    if tuple(target.shape) == tuple(input.shape):            # class probabilities
        if not target.dtype.is_floating_point:
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                               f"{target.dtype.tensor_type[:-6]}")
        _check_class_weight(weight, c)
        t = target * (1 - label_smoothing) + label_smoothing / c if label_smoothing > 0 else target
        terms = logp * t
        if weight is not None:
            terms = terms * weight.reshape(shape)
        if reduction == "none":
            return -terms.sum(class_dim)
        if reduction == "sum":
            return -terms.sum()
        return -terms.sum() / (input.numel() // c if c else 0)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return nll
    from ..tensor_api import where
    ignored = target == ignore_index
    smooth = -(logp * weight.reshape(shape)).sum(class_dim) if weight is not None else -logp.sum(class_dim)
    smooth = where(ignored, 0.0, smooth)
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = smooth.sum()
    elif weight is not None:
        w = where(ignored, 0.0, weight[where(ignored, 0, target)])
        ret = _weighted_mean(smooth.sum(), w.sum())
    else:
        ret = _weighted_mean(smooth.sum(), (~ignored).sum())
    return (1 - label_smoothing) * nll + ret * (label_smoothing / c)


# ==== more layers and losses PyTorch users reach for (compositions of table ops) ==================
def _rename_node(t, name):
    """Show ``t``'s grad_fn (a node this call made) under PyTorch's ``name``."""
    from ..autograd.node import OpNode, _CompositeNode, composite_class, node_class
    node = getattr(t, "_grad_fn", None)
    if isinstance(node, OpNode):
        node.__class__ = node_class(name)
    elif isinstance(node, _CompositeNode):
        node.__class__ = composite_class(name)
    return t


def _check_reduction(reduction, suffix="is not a valid value for reduction"):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} {suffix}")


# ---- in-place activations (``x`` becomes the activation; PyTorch's in-place node names) ----------
def relu_(input):
    return input.relu_()


def elu_(input, alpha=1.0):
    return _rename_node(input._inplace(elu(input, alpha)), "EluBackward1")


def leaky_relu_(input, negative_slope=0.01):
    return _rename_node(input._inplace(leaky_relu(input, negative_slope)), "LeakyReluBackward1")


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _rename_node(input._inplace(hardtanh(input, min_val, max_val)), "HardtanhBackward0")


def threshold_(input, threshold, value):
    return _rename_node(input._inplace(_threshold(input, threshold, value)), "ThresholdBackward1")


def selu_(input):
    return _rename_node(input._inplace(_selu(input.clone())), "EluBackward1")      # (the clone keeps elu's
                                                                                 # saved input unchanged)


def celu_(input, alpha=1.0):
    return _rename_node(input._inplace(celu(input.clone(), alpha)), "CeluBackward1")


_threshold = threshold


def _rrelu_out(input, lower, upper, training):
    from ..ops import apply
    from ..tensor_api import where
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    slope = apply("rand_like", input.detach()) * (upper - lower) + lower      # U(lower, upper) per element
    return where(input <= 0, input * slope, input)


@grad_fn_named("RreluWithNoiseBackward0")
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: ``x`` where x > 0, else ``a * x`` with ``a`` drawn per element
    from U(lower, upper) when ``training``; when not, the fixed slope (lower + upper) / 2."""
    if inplace:
        return rrelu_(input, lower, upper, training)
    return _rrelu_out(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    src = input.clone() if training else input          # (the product saves its input)
    return _rename_node(input._inplace(_rrelu_out(src, lower, upper, training)), "RreluWithNoiseBackward1")


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1) (``-log(Exp(1))``, from a ``rand_like``
    draw of gradc's generator, so compiled code draws the numbers eager code does); ``hard``: the one-hot of the argmax in the forward, the soft sample's gradient
    (``y_hard - y_soft.detach() + y_soft``)."""
    from .. import factories
    from ..ops import apply
    if not logits.dtype.is_floating_point:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {logits.dtype.tensor_type[:-6]}")
    u = apply("rand_like", logits.detach())          # one draw, eager and compiled alike
    gumbels = -((-u).log1p().neg().log())            # -log(Exp(1)), the exponential by inversion
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = factories.zeros_like(logits.detach()).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ---- dropout variants --------------------------------------------------------------------------
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _channel_uniform(input):
    """U[0, 1) draws of shape (N, C, 1, ...): one per channel."""
    from ..ops import apply
    return apply("rand_like", input.detach()[(slice(None), slice(None)) + (slice(0, 1),) * (input.ndim - 2)])


def _feature_mask(input, p):
    """A keep mask (1 / (1 - p) where kept) of shape (N, C, 1, ...): whole channels dropped."""
    keep = (_channel_uniform(input) >= p).to(input.dtype)
    return keep * (1.0 / (1.0 - p)) if p < 1 else keep


def _feature_dropout(input, p, training):
    if not training or p == 0 or input.numel() == 0:
        return input
    return input * _feature_mask(input, p)


@honours_inplace
def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of an (N, C, L) or unbatched (C, L) input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 2 and training and p != 0:
        return _feature_dropout(input.unsqueeze(0), p, training).squeeze(0)
    return _feature_dropout(input, p, training)


def _warn_dropout_dims(name, ndim, want, spatial):
    if ndim not in want:
        warn_at_user_code(f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an error "
                          f"in a future release. To retain the behavior and silence this warning, please use dropout "
                          f"instead. Note that {name} exists to provide channel-wise dropout on inputs with {spatial} "
                          f"spatial dimensions, a channel dimension, and an optional batch dimension (i.e. {want[0]}D or "
                          f"{want[1]}D inputs).", UserWarning)


@honours_inplace
def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (dim 1) of an (N, C, H, W) input with probability ``p`` (a 3-D input
    is taken as (N, C, L), with PyTorch's warning)."""
    _check_p(p)
    _warn_dropout_dims("dropout2d", input.ndim, (3, 4), 2)
    if input.ndim == 3:
        warn_at_user_code("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                          "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                          "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                          "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                          "dropout1d instead.", UserWarning)
    return _feature_dropout(input, p, training)


@honours_inplace
def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of an (N, C, D, H, W) or unbatched (C, D, H, W) input."""
    _check_p(p)
    _warn_dropout_dims("dropout3d", input.ndim, (4, 5), 3)
    if input.ndim == 4 and training and p != 0:
        return _feature_dropout(input.unsqueeze(0), p, training).squeeze(0)
    return _feature_dropout(input, p, training)


_ALPHA_DROPOUT_ALPHA = 1.7580993408473766      # SELU's scale * alpha


def _alpha_dropout(input, p, training, feature):
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    from ..ops import apply
    if p == 1:
        return input * input.new_zeros(())
    if feature:
        keep = (_channel_uniform(input) >= p).to(input.dtype)
    else:
        keep = (apply("rand_like", input.detach()) >= p).to(input.dtype)
    alpha = _ALPHA_DROPOUT_ALPHA
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    b = (keep - 1) * (alpha * a) + alpha * a * p
    return input * (keep * a) + b


@honours_inplace
def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's self-normalisation: dropped elements become -alpha', then an
    affine map restores mean and variance.  The input itself when not training."""
    return _alpha_dropout(input, p, training, False)


@honours_inplace
def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """``alpha_dropout`` of whole channels (dim 1)."""
    return _alpha_dropout(input, p, training, True)


# ---- normalisation, pooling, shuffling ------------------------------------------------------------
@grad_fn_named(lambda input, *a, **k: "ViewBackward0")
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) over its spatial dims (biased variance), then ``* weight +
    bias`` per channel; with ``use_input_stats`` the running statistics (if given) move by
    ``momentum`` towards the batch average of the instances' mean and unbiased variance, else
    they normalise."""
    if use_input_stats and math.prod(input.shape[2:]) == 1:         # (a 1-D input too, as PyTorch's)
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"torch.Size([{', '.join(str(d) for d in input.shape)}])")
    if input.ndim < 2:
        raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
    _not_differentiable("native_batch_norm", running_mean=running_mean, running_var=running_var)
    n, c = input.shape[0], input.shape[1]
    shape = [1, c] + [1] * (input.ndim - 2)
    dims = tuple(range(2, input.ndim))
    if use_input_stats:
        for name, t in (("running_mean", running_mean), ("running_var", running_var)):
            if t is not None and t.numel() != c:
                raise RuntimeError(f"{name} should contain {n * c} elements not {t.numel() * n}")
        _check_param_dtypes(input, running_mean, running_var, weight, bias)
        mean, centered, var = _moments(input, dims)
        if running_mean is not None or running_var is not None:
            from ..autograd import no_grad
            with no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(mean.detach().reshape(n, c).mean(0) * momentum)
                if running_var is not None:
                    count = math.prod(input.shape[2:])
                    unbiased = var.detach().reshape(n, c).mean(0) * (count / (count - 1))
                    running_var.mul_(1 - momentum).add_(unbiased * momentum)
        y = centered * (var + eps).rsqrt()
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        y = (input - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(shape)
    return y + bias.reshape(shape) if bias is not None else y


@autocast_excluded
@grad_fn_named(lambda input1, input2, weight, bias=None: "AddBackward0" if bias is not None else "ViewBackward0")
def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] (+ bias[o])."""
    from ..compositions import einsum
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        for i in range(input1.ndim - 1):
            if input1.shape[i] != input2.shape[i]:
                raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                                   f"{input1.shape[i]} and {input2.shape[i]}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be three-dimensional, but got {weight.ndim}D weight")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {weight.shape[2]}")
    y = einsum("...i,oij,...j->...o", input1, weight, input2)
    return y + bias if bias is not None else y


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of input^2 over ``size`` neighbouring channels) ^ beta, the
    window zero-padded by size // 2 before and (size - 1) // 2 after each channel."""
    from ..compositions import pad
    if input.ndim < 3:
        raise ValueError("Expected 3D or higher dimensionality" + " " * 26 +      # (PyTorch's spacing)
                         f"input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    c = input.shape[1]
    sq = input * input
    padded = pad(sq.movedim(1, -1), (size // 2, (size - 1) // 2)).movedim(-1, 1)
    total = padded.narrow(1, 0, c)
    for j in range(1, size):
        total = total + padded.narrow(1, j, c)
    div = (total / size * alpha + k) ** beta
    return input / div


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p) ^ (1/p) (PyTorch's: an avg_pool1d of x^p times the window)."""
    from ..resampling import avg_pool1d, max_pool1d
    if norm_type == math.inf:
        return max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride if stride is not None else kernel_size, 0, ceil_mode)
    ks = kernel_size[0] if isinstance(kernel_size, (tuple, list)) else kernel_size
    return (out.sign() * out.abs().relu()).mul(ks).pow(1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    from ..compositions import _pair, avg_pool2d, max_pool2d
    kw, kh = _pair(kernel_size)
    if norm_type == math.inf:
        return max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kw * kh).pow(1.0 / norm_type)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    from ..compositions import _triple, avg_pool3d, max_pool3d
    kd, kw, kh = _triple(kernel_size)
    if norm_type == math.inf:
        return max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kd * kw * kh).pow(1.0 / norm_type)


@grad_fn_named("ChannelShuffleBackward0")
def channel_shuffle(input, groups):
    """(N, C, *) with the channels in ``groups`` groups interleaved: (g, C/g) -> (C/g, g)."""
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    n, rest = input.shape[0], list(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


@grad_fn_named("PdistBackward0")
def pdist(input, p=2):
    """The p-norm distance between each pair of rows i < j of an (N, M) input, (N (N - 1) / 2,)."""
    import numpy as np

    from .. import factories
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = np.triu_indices(input.shape[0], 1)
    if len(i) == 0:
        return input.new_zeros((0,))
    rows = factories.tensor(i, device=input.device), factories.tensor(j, device=input.device)
    return (input.index_select(0, rows[0]) - input.index_select(0, rows[1])).norm(p, dim=-1)


# ---- max_unpool and the *_with_indices spellings --------------------------------------------------
def _unpool_size(input, kernel_size, stride, padding, output_size, n):
    from ..compositions import _pair, _single, _triple
    t = {1: _single, 2: _pair, 3: _triple}[n]
    k, p = t(kernel_size), t(padding)
    s = t(stride) if stride is not None and stride != () else k
    default = [(input.shape[input.ndim - n + d] - 1) * s[d] + k[d] - 2 * p[d] for d in range(n)]
    if output_size is None:
        return default
    out = list(output_size)
    if len(out) == n + 2 or (len(out) == n + 1 and input.ndim == n + 1):
        out = out[-n:]
    if len(out) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a "
                         f"length of '{len(out)}'")
    for d in range(n):
        lo, hi = default[d] - s[d], default[d] + s[d]
        if not lo < out[d] < hi:
            raise ValueError(f'invalid output_size "{tuple(out)}" (dim {d} must be between {lo} and {hi})')
    return out


@float32_precision
@grad_fn_named("MaxUnpool2DBackward0")
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool2d: each value of ``input`` placed at its flat index of ``indices``
    in a zero (H_out, W_out) plane."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


@float32_precision
@grad_fn_named("MaxUnpool3DBackward0")
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool3d: each value placed at its flat index in a zero (D, H, W) volume."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n):
    from .. import factories
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"Input to max_unpooling{n}d should be a {n + 1}d or {n + 2}d Tensor, but got a tensor "
                           f"with {input.ndim} dimensions.")
    if indices.dtype.name != "int64":
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype.tensor_type[:-6]}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    sizes = _unpool_size(input, kernel_size, stride, padding, output_size, n)
    volume = math.prod(sizes)
    lead = list(input.shape[:-n])
    flat_in, flat_idx = input.flatten(-n), indices.flatten(-n)
    data = getattr(indices, "_data", None)
    if data is not None and data.size and (data.min() < 0 or data.max() >= volume):
        bad = int(data[(data < 0) | (data >= volume)].flat[0])
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, sizes))})")
    zeros = factories.zeros(*lead, volume, dtype=input.dtype, device=input.device)
    # an index repeated (overlapping windows) holds one value, and each input element takes the output's
    # gradient at its index (a gather): scatter_add's gradient, with scatter's value
    placed = zeros.scatter_add(-1, flat_idx, flat_in)
    out = placed - (placed - zeros.scatter(-1, flat_idx, flat_in.detach())).detach()
    return out.reshape(*lead, *sizes)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    from ..compositions import _single
    (k,), (p,) = _single(kernel_size), _single(padding)
    s = _single(stride)[0] if stride is not None and stride != () else k
    (lo,) = _unpool_size(input, k, s, p, output_size, 1)
    out = max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), (k, 1), (s, 1), (p, 0), (lo, 1))
    return out.squeeze(-1)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    from ..compositions import max_pool2d
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    from ..resampling import max_pool1d
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    from ..compositions import max_pool3d
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    from ..resampling import adaptive_max_pool3d
    return adaptive_max_pool3d(input, output_size, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    from ..resampling import adaptive_max_pool1d
    return adaptive_max_pool1d(input, output_size, True)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    from ..resampling import fractional_max_pool2d
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    from ..resampling import fractional_max_pool3d
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    from ..resampling import adaptive_max_pool2d
    return adaptive_max_pool2d(input, output_size, True)


# ---- losses ------------------------------------------------------------------------------------------
@float32_precision
@grad_fn_named("SoftMarginLossBackward0")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), as PyTorch computes it (into a tensor of the input's shape:
    a target that broadcasts to more is PyTorch's error; no gradient for the target)."""
    _check_reduction(reduction)
    _not_differentiable("soft_margin_loss", target=target)
    from ..ops.rules import broadcast_shapes
    shape = broadcast_shapes("soft_margin_loss", tuple(input.shape), tuple(target.shape))
    if shape != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape {list(shape)}")
    return _reduce((-target * input).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t logsigmoid(x) + (1 - t) logsigmoid(-x)) (times ``weight``), averaged over the classes."""
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    return _reduce(loss, reduction)


def _margin_targets(input, target, name):
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0) or (input.ndim < 2 and input.numel() == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")


@float32_precision
@grad_fn_named("MultiMarginLossBackward0")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """sum over classes i != y of max(0, margin - x[y] + x[i]) ^ p (times ``weight[y]``), over C."""
    from .. import factories
    from ..tensor_api import where
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    _not_differentiable("multi_margin_loss", weight=weight)
    _margin_targets(input, target, "multi_margin_loss")
    unbatched = input.ndim < 2
    x = input.reshape(1, -1) if unbatched else input
    n, c = x.shape
    y = target.reshape(-1)
    if y.ndim != 1 or y.shape[0] != n:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(target.shape)}. Input has "
                           f"shape {list(input.shape)}.")
    data = getattr(y, "_data", None)
    if data is not None and data.size and (data.min() < 0 or data.max() >= c):
        raise RuntimeError("target out of range")
    xy = x.gather(1, y.unsqueeze(1))
    z = (x - xy + margin).clamp(min=0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[y].unsqueeze(1)
    others = y.unsqueeze(1) != factories.arange(c, device=x.device)
    loss = where(others, z, z * 0.0).sum(1) / c
    if unbatched and reduction == "none":
        loss = loss.reshape(target.shape) if target.ndim == 0 else loss
    return _reduce(loss, reduction)


@float32_precision
@grad_fn_named("MultilabelMarginLossBackward0")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """For each target class j (``target``'s leading entries up to the first -1) and each class
    i that is not a target: max(0, 1 - (x[j] - x[i])), summed and divided by C."""
    from .. import factories
    _check_reduction(reduction)
    _margin_targets(input, target, "multilabel_margin_loss")
    unbatched = input.ndim < 2
    x = input.reshape(1, -1) if unbatched else input
    t = target.reshape(1, -1) if unbatched else target
    if tuple(t.shape) != tuple(x.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    data = getattr(t, "_data", None)
    c = x.shape[1]
    if data is not None and data.size and (data.min() < -1 or data.max() >= c):
        raise RuntimeError("multilabel_margin_loss: target index out of range")
    valid = (t < 0).long().cumsum(1) == 0                                   # (N, K): before the first -1
    classes = factories.arange(c, device=x.device)
    is_target = ((t.unsqueeze(-1) == classes) & valid.unsqueeze(-1)).any(1)     # (N, C)
    xt = x.gather(1, t.clamp(min=0))                                         # (N, K)
    z = (1 - xt.unsqueeze(-1) + x.unsqueeze(1)).clamp(min=0)                 # (N, K, C)
    mask = (valid.unsqueeze(-1) & ~is_target.unsqueeze(1)).to(x.dtype)
    loss = (z * mask).sum((1, 2)) / c
    if unbatched and reduction == "none":
        loss = loss.reshape(())
    return _reduce(loss, reduction)


@float32_precision
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, margin - x) where target is not 1, plus x where target is not -1 (PyTorch's rule)."""
    from ..tensor_api import where
    _check_reduction(reduction)
    zeros = input * 0.0
    loss = where(target != 1, (margin - input).clamp(min=0), zeros) + where(target != -1, input, zeros)
    return _reduce(loss, reduction)


@float32_precision
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos where target is 1, max(0, cos - margin) where it is -1 (PyTorch's EPSILON = 1e-12
    in the squared norms)."""
    from ..tensor_api import where
    _check_reduction(reduction)
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.ndim != target.ndim + 1 or input2.ndim != target.ndim + 1:
        raise RuntimeError(f"{target.ndim}D target tensor expects {target.ndim + 1}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    d = input1.ndim - 1
    dot = (input1 * input2).sum(d)
    mag = ((input1 * input1).sum(d) + 1e-12) * ((input2 * input2).sum(d) + 1e-12)
    cos = dot / mag.sqrt()
    zeros = cos * 0.0
    loss = where(target == 1, 1 - cos, zeros) + where(target == -1, (cos - margin).clamp(min=0), zeros)
    return _reduce(loss, reduction)


@float32_precision
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(x) - t x (``log_input``) or x - t log(x + eps), plus Stirling's t log t - t +
    log(2 pi t) / 2 where t > 1 with ``full``."""
    from ..tensor_api import where
    _check_reduction(reduction)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """(log(max(var, eps)) + (input - target)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2 with
    ``full``); the clamp passes the gradient as if absent, as PyTorch's (a no-grad clamp_)."""
    from ..tensor import Tensor
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.detach() * 0.0 + var
    else:
        data = getattr(var, "_data", None)
        if data is not None and (data < 0).any():
            raise ValueError("var has negative entry/entries")
    if isinstance(var, Tensor) and tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(b for a, b in zip(input.shape, var.shape) if a != b) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    var = var + (var.detach().clamp(min=eps) - var.detach())
    d = input - target
    loss = 0.5 * (var.log() + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """max(0, d(a, p) - d(a, n) + margin) for a distance function (default pairwise_distance);
    ``swap`` uses min(d(a, n), d(p, n))."""
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative "
                           f"{dims[2]}D inputs")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp(min=0), reduction)


from .ctc_loss import ctc_loss  # noqa: E402,F401  (its own module: NumPy alpha-beta recursion)
