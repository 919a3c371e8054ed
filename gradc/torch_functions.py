"""The rest of PyTorch's ``torch.*`` surface that has no better home, and the Tensor methods and
properties that go with it:

* top-level spellings of ``nn.functional`` functions with ``torch``'s own (ATen) signatures
  (``torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
  cudnn_enabled)``, ``torch.embedding(weight, indices, padding_idx=-1)``, losses taking an
  integer ``reduction``: 0 none, 1 mean, 2 sum), and the ``torch.X_`` in-place functions for each
  ``X_`` gradc's Tensor has;
* utilities: rsub, scalar_tensor, dtype queries (promote_types, can_cast, is_signed), isin,
  unravel_index, combinations, chain_matmul, gradient, the window functions, histogram,
  put / index_put / masked_scatter / diagonal_scatter, split_with_sizes and the unsafe splits,
  the legacy linalg spellings (svd with V, qr(some), cholesky, cholesky_solve, cholesky_inverse,
  triangular_solve, nuclear_norm, frobenius_norm), matrix_exp (table op ``linalg_matrix_exp``,
  ops/decompositions.py) and process-wide settings (threads, determinism, matmul precision);
* Tensor methods and properties for real CPU/CUDA tensors: layout, real / imag, conj and
  friends, H / mH / adjoint, new, apply_ / map_, the random fillers random_, geometric_,
  log_normal_, cauchy_, and register_post_accumulate_grad_hook.
"""
from __future__ import annotations

import math

import numpy as np

from ._warnings import warn_at_user_code
from . import dtypes, factories
from .arg_parser import ArgumentError, parses
from .autograd.node import grad_fn_named
from .return_types import return_type as _return_type
from .compositions import _varargs, bind_methods
from .ops.dispatch import apply
from .tensor_api import encode_index, is_tensor_like, norm_dim, where


def _F():
    from .nn import functional
    return functional


_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(r):
    if isinstance(r, str):
        return r
    if r not in _REDUCTIONS:
        raise ValueError(f"{r} is not a valid value for reduction")
    return _REDUCTIONS[r]


# ---- nn.functional spellings with ATen's signatures ---------------------------------------------
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _F().conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _F().conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _F().conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _F().avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def _no_stride(stride):
    return None if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else stride


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool1d(input, kernel_size, _no_stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool1d(input, kernel_size, _no_stride(stride), padding, dilation, ceil_mode, return_indices=True)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool2d(input, kernel_size, _no_stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool3d(input, kernel_size, _no_stride(stride), padding, dilation, ceil_mode)


def adaptive_avg_pool1d(input, output_size):
    return _F().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """``(values, indices)``, as ATen's adaptive_max_pool1d."""
    return tuple(_F().adaptive_max_pool1d(input, output_size, return_indices=True))


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return _F().group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _F().rms_norm(input, normalized_shape, weight, eps)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """ATen's embedding: a negative ``padding_idx`` means none (F.embedding wraps its own first)."""
    return _F().embedding(indices, weight, padding_idx=None if padding_idx < 0 else padding_idx)


def check_dropout_p(p):
    """ATen's check of a dropout probability (a RuntimeError; nn.functional raises a ValueError)."""
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {_num(p)}")


def dropout(input, p, train):
    check_dropout_p(p)
    return _F().dropout(input, p, training=train)


def dropout_(input, p, train):
    check_dropout_p(p)
    return input._inplace(_F().dropout(input, p, training=train)) if train and p > 0 else input


def celu(input, alpha=1.0):
    return _F().celu(input, alpha)


def selu(input):
    return _F().selu(input)


def prelu(input, weight):
    return _F().prelu(input, weight)


def hardshrink(input, lambd=0.5):
    return _F().hardshrink(input, lambd)


def threshold(input, threshold, value):
    return _F().threshold(input, threshold, value)


def celu_(input, alpha=1.0):
    return input._inplace(celu(input, alpha))


def selu_(input):
    return input._inplace(selu(input))


def threshold_(input, threshold, value):
    return input._inplace(_F().threshold(input, threshold, value))


def pixel_shuffle(input, upscale_factor):
    return _F().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    return _F().pixel_unshuffle(input, downscale_factor)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    return _F().cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


# (ATen's schemas give these losses reduction=Mean, but torch.* called without one reduces nothing:
# its Python binding reads the default as 0; gradc does as PyTorch 2.13 does)
def kl_div(input, target, reduction=0, *, log_target=False):
    """ATen's kl_div: reduction 1 ('mean') is the mean over every element."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # F's 'mean' warning is about F's spelling only
        return _F().kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return _F().margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return _F().binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                                 pos_weight=pos_weight)


# PyTorch's torch.X_ functions; each one gradc's Tensor has a method X_ for becomes gradc.X_(input, ...)
INPLACE_NAMES = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_",
    "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_",
    "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_",
    "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "resize_as_", "round_", "rsqrt_",
    "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_",
)


def _torch_inplace(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"gradc.{name}(input, ...) is input.{name}(...)"
    return fn


# ---- small utilities ----------------------------------------------------------------------------
@grad_fn_named(lambda input, other, alpha=1: "RsubBackward0" if is_tensor_like(other) else "RsubBackward1")
def rsub(input, other, alpha=1):
    """``other - alpha * input``."""
    return (other - input * alpha) if alpha != 1 else (other - input)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    """A 0-d tensor of ``s``, of the default float dtype unless ``dtype`` says otherwise."""
    if is_tensor_like(s):
        s = s.item()
    return factories.tensor(s, dtype=dtype or dtypes.default_float, device=device, requires_grad=requires_grad)


def is_same_size(input, other) -> bool:
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input) -> bool:
    return input.dtype not in (dtypes.bool_, dtypes.uint8)


def promote_types(type1, type2):
    return dtypes.promote(dtypes.as_dtype(type1), dtypes.as_dtype(type2))


def can_cast(from_, to) -> bool:
    """PyTorch's casting rule: no float to integer or bool, no non-bool to bool."""
    a, b = dtypes.as_dtype(from_), dtypes.as_dtype(to)
    return a.category <= b.category


def typename(obj) -> str:
    if is_tensor_like(obj):
        return "torch." + obj.dtype.tensor_type
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", "__builtin__", None) else f"{module}.{name}"


def _values(t):
    return np.asarray(t.detach().cpu().numpy()) if is_tensor_like(t) else np.asarray(t)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """A bool tensor of ``elements``'s shape (0-d for a scalar): whether each is in ``test_elements``."""
    if not (is_tensor_like(elements) or is_tensor_like(test_elements)):
        got = ", ".join(type(v).__name__ for v in (elements, test_elements))
        raise TypeError(f"isin() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        " * (Tensor elements, Tensor test_elements, *, bool assume_unique = False, bool invert = "
                        "False, Tensor out = None)\n"
                        " * (Number element, Tensor test_elements, *, bool assume_unique = False, bool invert = "
                        "False, Tensor out = None)\n"
                        " * (Tensor elements, Number test_element, *, bool assume_unique = False, bool invert = "
                        "False, Tensor out = None)\n")
    e, t = _values(elements), _values(test_elements)
    found = np.isin(e, t.reshape(-1), invert=invert)
    dev = elements.device if is_tensor_like(elements) else test_elements.device
    return factories.tensor(np.asarray(found, dtype=np.bool_), dtype=dtypes.bool_, device=dev)


def unravel_index(indices, shape):
    """The coordinates of flat ``indices`` in a tensor of ``shape`` (a tuple of int64 tensors);
    negative indices count from the end, as PyTorch's."""
    if not is_tensor_like(indices):
        indices = factories.tensor(indices)
    if indices.dtype.category != 1:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    n = math.prod(shape)
    idx = _values(indices).astype(np.int64)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise ValueError("'indices' must be in range [" + str(-n) + ", " + str(n - 1) + "]")
    idx = np.where(idx < 0, idx + n, idx)
    coords = np.unravel_index(idx, shape) if shape else ()
    return tuple(factories.tensor(np.asarray(c, dtype=np.int64), dtype=dtypes.int64, device=indices.device)
                 for c in coords)


def combinations(input, r=2, with_replacement=False):
    """Rows of ``r`` elements of 1-D ``input`` in itertools' order (an index of the input, so the
    gradient flows back)."""
    import itertools
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return factories.empty(0, dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return factories.empty(0, r, dtype=input.dtype, device=input.device)
    from .tensor_api import stack
    cols = [factories.tensor([row[k] for row in rows], dtype=dtypes.int64) for k in range(r)]
    return stack([input[c] for c in cols], dim=1)


def chain_matmul(*matrices):
    warn_at_user_code("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                      "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
                      "multiple parameters.", UserWarning)
    matrices = _varargs(matrices)
    if len(matrices) == 0:
        raise RuntimeError("chain_matmul(): Expected one or more input tensors")
    for i, m in enumerate(matrices):
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    out = matrices[0]
    for m in matrices[1:]:
        out = out @ m
    return out


# process-wide settings: recorded, and reported back as PyTorch does
_settings = {"threads": 1, "interop_threads": 1, "deterministic": False, "deterministic_warn_only": False,
             "matmul_precision": "highest"}


def get_num_threads() -> int:
    return _settings["threads"]


def set_num_threads(n):
    n = int(n)
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _settings["threads"] = n


def get_num_interop_threads() -> int:
    return _settings["interop_threads"]


def set_num_interop_threads(n):
    n = int(n)
    if n <= 0:
        raise RuntimeError("Expected positive number of threads")
    _settings["interop_threads"] = n


def use_deterministic_algorithms(mode, *, warn_only=False):
    _settings["deterministic"] = bool(mode)
    _settings["deterministic_warn_only"] = bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _settings["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _settings["deterministic_warn_only"]


def set_float32_matmul_precision(precision):
    if precision not in ("highest", "high", "medium"):
        warn_at_user_code(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                          "setFloat32MatmulPrecision call has no effect.", UserWarning)
        return
    _settings["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    return _settings["matmul_precision"]


def is_inference_mode_enabled() -> bool:
    from .autograd import grad_mode
    return grad_mode.is_inference_mode_enabled()


def get_default_device():
    from .tensor import CPU
    return CPU


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None, requires_grad=False,
                 layout=None, memory_format=None):
    if high is None:
        low, high = 0, low
    return factories.randint(low, high, tuple(input.shape), generator=generator, dtype=dtype or input.dtype,
                             device=device or input.device, requires_grad=requires_grad)


# ---- windows --------------------------------------------------------------------------------------
def _window_dtype(name, window_length, dtype):
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.default_float
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype={dt.c_type}, device=cpu, "
                           f"layout=Strided (default), requires_grad=false (default), pinned_memory=false, "
                           f"memory_format=(nullopt))")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    return dt


def _window(name, window_length, periodic, dtype, requires_grad, body):
    dt = _window_dtype(name, window_length, dtype)
    if window_length == 0:
        out = factories.empty(0, dtype=dt)
    elif window_length == 1:
        out = factories.ones(1, dtype=dt)
    else:
        n = window_length + 1 if periodic else window_length
        w = body(np.arange(n, dtype=dt.np), n, dt.np)
        out = factories.tensor(np.asarray(w[:window_length] if periodic else w, dtype=dt.np), dtype=dt)
    return out.requires_grad_() if requires_grad else out


def _hamming_body(alpha, beta):
    def body(a, n, npdt):
        w = np.cos(a * npdt.type(math.pi * 2.0 / (n - 1)))
        return w * npdt.type(-beta) + npdt.type(alpha)
    return body


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    return _window("hamming_window", window_length, periodic, dtype, requires_grad, _hamming_body(alpha, beta))


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("hann_window", window_length, periodic, dtype, requires_grad, _hamming_body(0.5, 0.5))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    def body(a, n, npdt):
        w = a * npdt.type(math.pi / (n - 1))
        return (np.cos(w * npdt.type(4)) * npdt.type(0.08) - np.cos(w * npdt.type(2)) * npdt.type(0.5)) \
            + npdt.type(0.42)
    return _window("blackman_window", window_length, periodic, dtype, requires_grad, body)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    def body(a, n, npdt):
        w = a * npdt.type(2.0 / (n - 1))
        first = ((n - 1) >> 1) + 1
        w[first:] = w[first:] * npdt.type(-1) + npdt.type(2)
        return w
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad, body)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    def body(a, n, npdt):      # in the window's dtype, as PyTorch's kernel
        from .special import i0
        alpha = npdt.type((n - 1) / 2.0)
        x = (a - alpha) / alpha
        arg = factories.tensor(npdt.type(beta) * np.sqrt(np.abs(npdt.type(1) - x * x)))
        return (i0(arg) / i0(factories.tensor(npdt.type(beta)))).numpy()
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, body)


# ---- gradient -------------------------------------------------------------------------------------
def _slice(x, d, start, stop=None):
    n = x.shape[d]
    start = start + n if start < 0 else start
    stop = n if stop is None else (stop + n if stop < 0 else stop)
    return x.narrow(d, start, max(0, stop - start))


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Second-order central differences inside, first or second order one-sided ones at the ends
    (``edge_order``), along each dim of ``dim`` (all by default); ``spacing`` is a scalar, one
    scalar per dim or one coordinate tensor per dim.  PyTorch's formulas, op for op."""
    from .tensor_api import cat
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [norm_dim(d, input.ndim) for d in dims]
    if isinstance(spacing, (list, tuple)):
        spacing = list(spacing)
        if len(spacing) != len(dims):
            if dim is None:
                raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of "
                                   f"length equal to 'self.dim() = {input.ndim}', since dim argument was not given, "
                                   f"but got a list of length {len(spacing)}")
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
                               f"dim arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
    else:
        if is_tensor_like(spacing):
            if spacing.ndim != 0:
                raise RuntimeError("torch.gradient expected spacing to be a scalar, a list of scalars or a list "
                                   "of tensors")
            spacing = spacing.item()
        spacing = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    x = input if input.dtype.is_floating_point else input.to(dtypes.default_float)
    out = []
    for d, h in zip(dims, spacing):
        f = lambda a, b=None: _slice(x, d, a, b)    # noqa: E731
        if is_tensor_like(h):
            if h.ndim != 1 or h.shape[0] != input.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same device and to have "
                                   f"the same number of elements as the input along its dim")
            shape = [1] * input.ndim
            shape[d] = -1
            dx = h[1:] - h[:-1]
            dx1, dx2 = dx[:-1], dx[1:]
            a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
            b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
            c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
            center = a * f(0, -2) + b * f(1, -1) + c * f(2)
            if edge_order == 1:
                pre = (f(1, 2) - f(0, 1)) / dx[0]
                app = (f(-1) - f(-2, -1)) / dx[-1]
            else:
                a = -(2.0 * dx[0] + dx[1]) / (dx[0] * (dx[0] + dx[1]))
                b = (dx[0] + dx[1]) / (dx[0] * dx[1])
                c = (-dx[0]) / (dx[1] * (dx[0] + dx[1]))
                pre = a * f(0, 1) + b * f(1, 2) + c * f(2, 3)
                a = dx[-1] / (dx[-2] * (dx[-1] + dx[-2]))
                b = -(dx[-1] + dx[-2]) / (dx[-1] * dx[-2])
                c = (2 * dx[-1] + dx[-2]) / (dx[-1] * (dx[-1] + dx[-2]))
                app = a * f(-3, -2) + b * f(-2, -1) + c * f(-1)
        else:
            center = (f(2) - f(0, -2)) / h / 2
            if edge_order == 1:
                pre = (f(1, 2) - f(0, 1)) / h
                app = (f(-1) - f(-2, -1)) / h
            else:
                pre = (f(0, 1) * -1.5 + f(1, 2) * 2 - f(2, 3) * 0.5) / h
                app = (f(-3, -2) * 0.5 + f(-2, -1) * -2 + f(-1) * 1.5) / h
        out.append(cat([pre, center, app], d))
    return tuple(out)


# ---- histogram ------------------------------------------------------------------------------------
_Histogram = _return_type("histogram", ["hist", "bin_edges"])


def histogram(input, bins, *, range=None, weight=None, density=False):
    """Counts (or weights) of ``input``'s elements in ``bins`` (a count of equal bins over
    ``range``, by default the data's min and max, or a tensor of increasing edges); the last bin
    includes its right edge.  No gradient, as PyTorch's."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the same dtype, "
                           f"but got input {input.dtype.tensor_type[:-6].lower()} and bins "
                           f"{input.dtype.tensor_type[:-6].lower()}")
    data = _values(input).reshape(-1)
    w = None if weight is None else _values(weight).reshape(-1)
    if is_tensor_like(bins):
        edges = _values(bins).astype(data.dtype)
        edge_t = bins.detach().clone()
    else:
        if bins <= 0:
            raise RuntimeError("torch.histogram(): bins must be > 0, but got " + str(bins) + " for dimension 0")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif data.size:
            lo, hi = float(data.min()), float(data.max())
        else:
            lo, hi = 0.0, 0.0
        if lo > hi:
            raise RuntimeError(f"torch.histogram(): min should not exceed max, but got min {lo} max {hi}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edge_t = factories.linspace(lo, hi, bins + 1, dtype=input.dtype)
        edges = _values(edge_t)
    keep = (data >= edges[0]) & (data <= edges[-1])
    pos = np.searchsorted(edges, data[keep], side="right") - 1
    pos = np.minimum(pos, len(edges) - 2)
    hist = np.bincount(pos, weights=None if w is None else w[keep], minlength=len(edges) - 1).astype(data.dtype)
    if density:
        widths = np.diff(edges)
        hist = hist / (hist.sum() * widths)
    return _Histogram(factories.tensor(hist.astype(data.dtype), dtype=input.dtype, device=input.device), edge_t)


# ---- put / index_put / masked_scatter / diagonal_scatter ---------------------------------------------
def _check_same_dtype(name, x, src):
    if x.dtype is not src.dtype:
        raise RuntimeError(f"{name}: self and source expected to have the same dtype, but got self.dtype = "
                           f"{x.dtype.tensor_type[:-6]} and source.dtype = {src.dtype.tensor_type[:-6]}")


@grad_fn_named("PutBackward0")
def put(input, index, source, accumulate=False):
    """``input`` with its elements at flat ``index`` (negatives from the end) replaced by (or,
    with ``accumulate``, added) ``source``'s, in the row-major order of ``input``."""
    n = input.numel()
    if index.dtype is not dtypes.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {index.dtype.tensor_type[:-6]}")
    _check_same_dtype("put_()", input, source)
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    idx = _values(index).reshape(-1)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = int(idx[(idx < -n) | (idx >= n)][0])
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    idx = factories.tensor(np.where(idx < 0, idx + n, idx), dtype=dtypes.int64)
    flat = input.reshape(-1)
    src = source.reshape(-1)
    if accumulate:
        out = flat + apply("index_backward", src, idx, key=[["tensor", 0]], shape=(n,))
    else:
        out = apply("index_put", flat, src, idx, key=[["tensor", 0]])
    return out.reshape(input.shape)


def put_(input, index, source, accumulate=False):
    return input._inplace(put(input, index, source, accumulate))


def _index_key(input, indices):
    if not isinstance(indices, (list, tuple)):
        raise TypeError("index_put(): argument 'indices' must be tuple of Tensors, not " + type(indices).__name__)
    return encode_index(tuple(slice(None) if i is None else i for i in indices), input)


@grad_fn_named("IndexPutBackward0")
@parses("index_put", "(tuple of Tensors indices, Tensor values, bool accumulate = False)")
def index_put(input, indices, values, accumulate=False):
    """``input`` with ``input[indices]`` set to (or, with ``accumulate``, increased by, duplicates
    adding up) ``values``."""
    if not is_tensor_like(values):
        raise ArgumentError("index_put(): values")
    key, tensors = _index_key(input, indices)
    if values.dtype is not input.dtype:      # (a value of the wrong shape is the first error)
        from .ops.index import check_put_shape
        check_put_shape(tuple(values.shape), tuple(apply("index", input.detach(), *tensors, key=key).shape))
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{input.dtype.tensor_type[:-6]} for the destination and "
                           f"{values.dtype.tensor_type[:-6]} for the source.")
    if not accumulate:
        return apply("index_put", input, values, *tensors, key=key)
    target = apply("index", input.detach(), *tensors, key=key).shape
    v = values.expand(*target) if tuple(values.shape) != tuple(target) else values
    return input + apply("index_backward", v, *tensors, key=key, shape=tuple(input.shape))


@parses("index_put_", "(tuple of Tensors indices, Tensor values, bool accumulate = False)")
def index_put_(input, indices, values, accumulate=False):
    return input._inplace(index_put(input, indices, values, accumulate))


@grad_fn_named("MaskedScatterBackward0")
def masked_scatter(input, mask, source):
    """``input`` with the positions where ``mask`` (bool, broadcast to ``input``) is True taken
    from ``source``'s elements in order."""
    if mask.dtype is not dtypes.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype.tensor_type[:-6]}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{input.dtype.tensor_type[:-6]} and {source.dtype.tensor_type[:-6]}")
    from .ops.rules import broadcast_shapes
    shape = tuple(broadcast_shapes("masked_scatter", tuple(input.shape), tuple(mask.shape)))
    m = mask.expand(*shape) if tuple(mask.shape) != shape else mask
    x = input.expand(*shape) if tuple(input.shape) != shape else input
    mv = _values(m)
    count = int(mv.sum())
    if count > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    pos = np.cumsum(mv.reshape(-1)) - 1
    pos = np.clip(pos, 0, max(source.numel() - 1, 0)).reshape(shape)
    if source.numel() == 0:
        return x.clone() if x is input else x + 0
    taken = source.reshape(-1)[factories.tensor(pos, dtype=dtypes.int64)]
    return where(m, taken, x)


def masked_scatter_(input, mask, source):
    return input._inplace(masked_scatter(input, mask, source))


@grad_fn_named("DiagonalScatterBackward0")
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """``input`` with its diagonal (as ``input.diagonal(offset, dim1, dim2)``) replaced by ``src``."""
    from .compositions import diagonal_index
    d1, d2 = norm_dim(dim1, input.ndim), norm_dim(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    target = diagonal_index(input.detach(), offset, d1, d2, as_view=False, name=None).shape
    if tuple(src.shape) != tuple(target):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(target)}")
    rest = [d for d in range(input.ndim) if d not in (d1, d2)]
    n = target[-1]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    rows = factories.tensor([r0 + k for k in range(n)], dtype=dtypes.int64)
    cols = factories.tensor([c0 + k for k in range(n)], dtype=dtypes.int64)
    perm = rest + [d1, d2]
    y = input.permute(*perm)
    key, tensors = encode_index((Ellipsis, rows, cols), y)
    out = apply("index_put", y, src.to(input.dtype), *tensors, key=key)
    inverse = [perm.index(k) for k in range(input.ndim)]
    return out.permute(*inverse)


# ---- splits ---------------------------------------------------------------------------------------
def split_with_sizes(input, split_sizes, dim=0):
    from .compositions import split
    out = split(input, list(split_sizes), dim)
    return _renamed(out, "SplitWithSizesBackward0")


def unsafe_split(input, split_size, dim=0):
    from .compositions import split
    return _unsafe(split(input, split_size, dim), "UnsafeSplitBackward0")


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    from .compositions import split
    return _unsafe(split(input, list(split_sizes), dim), "UnsafeSplitWithSizesBackward0")


def unsafe_chunk(input, chunks, dim=0):
    from .compositions import chunk
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    return _unsafe(chunk(input, chunks, dim), "UnsafeSplitBackward0")


def _renamed(outs, name):
    from .autograd.node import OpNode, node_class
    for t in outs:
        node = getattr(t, "_grad_fn", None)
        if isinstance(node, OpNode):
            node.__class__ = node_class(name)
    return outs


def _unsafe(outs, name):
    """The outputs of unsafe_split/unsafe_chunk, renamed ``name``: PyTorch's share the input's
    memory but autograd does not see them as views (no base, a version counter of their own), so
    an in-place write to one is allowed and recorded as on any tensor."""
    from .tensor import NO_EDGE, Tensor, new_counter
    for t in outs:
        if isinstance(t, Tensor) and t._base is not None:
            t._base = t._view_of = t._creation_meta = None
            t._version_counter = new_counter()
            if t._leaf_edge is NO_EDGE:        # made in no_grad mode: not a view, so no grad
                t._requires_grad, t._leaf_edge = False, None
    return _renamed(outs, name)


# ---- legacy linalg spellings ------------------------------------------------------------------------
_Svd = _return_type("svd", ["U", "S", "V"])
_Qr = _return_type("qr", ["Q", "R"])
_TriangularSolve = _return_type("triangular_solve", ["solution", "cloned_coefficient"])


def _warn(message):
    warn_at_user_code(message, UserWarning)


def svd(input, some=True, compute_uv=True):
    """``(U, S, V)`` with ``V`` (not ``Vh``); ``some=False`` gives square U and V; without
    ``compute_uv`` U and V are zeros (full-sized) and only S is differentiable."""
    from . import linalg
    if not compute_uv:
        m, n = input.shape[-2:]
        S = linalg.svdvals(input)
        batch = tuple(input.shape[:-2])
        return _Svd(factories.zeros(*batch, m, m, dtype=input.dtype, device=input.device), S,
                    factories.zeros(*batch, n, n, dtype=input.dtype, device=input.device))
    U, S, Vh = linalg.svd(input, full_matrices=not some)
    return _Svd(U, S, Vh.transpose(-2, -1))


def qr(input, some=True):
    from . import linalg
    Q, R = linalg.qr(input, "reduced" if some else "complete")
    return _Qr(Q, R)


def cholesky(input, upper=False):
    from . import linalg
    return _named(linalg.cholesky(input, upper=upper), "CholeskyBackward0")


def _named(t, name):
    from .autograd.node import OpNode, node_class
    node = getattr(t, "_grad_fn", None)
    if isinstance(node, OpNode):
        node.__class__ = node_class(name)
    return t


def _matrix_check(name, t):
    if t.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {'' if name != 'cholesky_solve' else ''}A must have at "
                           f"least 2 dimensions.")


@grad_fn_named("CholeskySolveBackward0")
def cholesky_solve(B, L, upper=False):
    """The solution X of (L L^T) X = B from the Cholesky factor (upper: U^T U)."""
    from . import linalg
    if B.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions instead")
    if L.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {L.ndim} dimensions instead")
    A = L.transpose(-2, -1) @ L if upper else L @ L.transpose(-2, -1)     # (all of L, as PyTorch's gradient)
    return linalg.solve(A, B)


@grad_fn_named("CholeskyInverseBackward0")
def cholesky_inverse(L, upper=False):
    """inv(L L^T) (upper: inv(U^T U)), differentiated through all of L, as PyTorch's."""
    from . import linalg
    if L.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    return linalg.inv(L.transpose(-2, -1) @ L if upper else L @ L.transpose(-2, -1))


@grad_fn_named("TriangularSolveBackward0")
def _triangular_solution(b, A, upper, transpose, unitriangular):
    from . import linalg
    M = A.transpose(-2, -1) if transpose else A
    return linalg.solve_triangular(M, b, upper=(upper != transpose), unitriangular=unitriangular)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """``(solution, cloned_coefficient)``: the solution of A X = b (A^T X = b with ``transpose``)
    using A's upper (or lower) triangle, and a copy of A."""
    if b.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
                           f"{b.ndim} dimensions instead")
    if A.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has "
                           f"{A.ndim} dimensions instead")
    X = _triangular_solution(b, A, upper, transpose, unitriangular)
    from .ops.rules import broadcast_shapes
    batch = tuple(broadcast_shapes("triangular_solve", tuple(b.shape[:-2]), tuple(A.shape[:-2])))
    coeff = A.expand(*batch, *A.shape[-2:]).clone() if batch != tuple(A.shape[:-2]) else A.clone()
    return _TriangularSolve(X, coeff)


def nuclear_norm(input, dim=(-2, -1), keepdim=False):
    from . import linalg
    return linalg.matrix_norm(input, "nuc", dim=tuple(dim), keepdim=keepdim)


@grad_fn_named("NormBackward1")
def frobenius_norm(input, dim, keepdim=False):
    from . import linalg
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dim) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions instead.")
    return linalg.vector_norm(input, 2, dim=dim, keepdim=keepdim)


def adjoint(input):
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return input.transpose(-2, -1)


def matrix_exp(input):
    return apply("linalg_matrix_exp", input)


# ---- Tensor methods and properties ------------------------------------------------------------------
class _Layout:
    """``torch.strided``: the only layout gradc's tensors have."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"

    def __reduce__(self):
        return "strided"


strided = _Layout("strided")


def is_complex(input) -> bool:
    return False


def is_conj(input) -> bool:
    return False


def is_neg(input) -> bool:
    return False


def is_inference(input) -> bool:
    """Whether ``input`` was made in inference mode (PyTorch's inference tensors)."""
    counter = getattr(input, "_version_counter", None)
    return bool(getattr(counter, "inference", False))


def conj(input):
    return input


def resolve_conj(input):
    return input


def resolve_neg(input):
    return input


def conj_physical(input):
    return input.clone()


def real(input):
    return input


def imag(input):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def get_device(input) -> int:
    return -1 if input.device.type == "cpu" else (input.device.index or 0)


def _new(self, *args, **kwargs):
    """``Tensor.new``: ``new(*sizes)`` an uninitialised tensor, ``new(data)`` a copy of a list,
    ``new(tensor)`` that tensor, ``new()`` an empty one; of self's dtype and device."""
    from .tensor_api import Size
    if kwargs.get("dtype") is not None or kwargs.get("device") is not None:
        dt = kwargs.get("dtype") or self.dtype
    else:
        dt = self.dtype
    dev = kwargs.get("device") or self.device
    if not args:
        return factories.empty(0, dtype=dt, device=dev)
    if len(args) == 1 and is_tensor_like(args[0]):
        if args[0].dtype is not self.dtype:
            raise TypeError(f"expected {self.dtype} (got {args[0].dtype})")
        return args[0]
    if len(args) == 1 and isinstance(args[0], Size):
        return factories.empty(*args[0], dtype=dt, device=dev)
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return factories.empty(*args, dtype=dt, device=dev)
    if len(args) == 1:
        return factories.tensor(args[0], dtype=dt, device=dev)
    raise TypeError("new() received an invalid combination of arguments")


def _apply_(self, callable):
    """Each element replaced by ``callable(element)`` (CPU, no gradient), in place."""
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    from .tensor import check_inference_write
    check_inference_write(self)
    if self.requires_grad:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use var.detach().apply_() instead.")
    data = self._data
    flat = data.reshape(-1) if data.flags.c_contiguous else data.ravel()
    vals = np.asarray([callable(v.item()) for v in flat]).reshape(data.shape) if flat.size else data
    data[...] = vals.astype(data.dtype) if flat.size else data
    self._version_counter.value += 1
    return self


def _map_(self, tensor, callable):
    """``self[i] = callable(self[i], tensor[i])`` with ``tensor`` broadcast to self (CPU, no grad)."""
    if self.device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    from .tensor import check_inference_write
    check_inference_write(self)
    if self.requires_grad:
        raise RuntimeError("Can't call map_() on Variable that requires grad. Use var.detach().map_() instead.")
    other = np.broadcast_to(_values(tensor), self.shape)
    data = self._data
    out = [callable(a.item(), b.item()) for a, b in zip(data.reshape(-1), other.reshape(-1))]
    if out:
        data[...] = np.asarray(out).reshape(data.shape).astype(data.dtype)
    self._version_counter.value += 1
    return self


def _dtype_range(dt):
    if dt is dtypes.bool_:
        return 0, 2
    if dt.is_floating_point:
        return 0, 2 ** {16: 11, 32: 24, 64: 53}[dt.itemsize * 8] + 1
    info = np.iinfo(dt.np)
    return 0, int(info.max) + 1


def _random_(self, from_=None, to=None, *, generator=None):
    """Integers uniform in [from, to) (``random_(to)``: [0, to); ``random_()``: [0, the dtype's
    largest exactly representable integer + 1])."""
    from .random_state import numpy_rng
    rng = numpy_rng(generator)
    if from_ is None and to is None:
        lo, hi = _dtype_range(self.dtype)
    elif to is None:
        lo, hi = 0, from_
    else:
        lo, hi = from_, to
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
    return self._sample_(lambda shape, dt: rng.integers(lo, hi, shape).astype(np.float64), None, generator) \
        if self.dtype.is_floating_point else self._sample_(lambda shape, dt: rng.integers(lo, hi, shape), None,
                                                          generator)


def _geometric_(self, p, *, generator=None):
    from .random_state import numpy_rng
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    rng = numpy_rng(generator)
    return self._sample_(lambda shape, dt: rng.geometric(p, shape), None, generator)


def _num(v) -> str:
    """A number as PyTorch's messages print it (-1 for -1.0)."""
    return f"{v:g}"


def _floating_only(self, kernel):
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{self.dtype.tensor_type[:-6]}'")


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    from .random_state import numpy_rng
    _floating_only(self, "log_normal_cpu")
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
    rng = numpy_rng(generator)
    return self._sample_(lambda shape, dt: rng.log_normal(mean, std, shape), None, generator)


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    from .random_state import numpy_rng
    _floating_only(self, "cauchy_cpu")
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(sigma)}")
    rng = numpy_rng(generator)
    return self._sample_(lambda shape, dt: rng.cauchy(median, sigma, shape), None, generator)


def _register_post_accumulate_grad_hook(self, hook):
    """``hook(tensor)`` runs after the leaf's ``.grad`` has been accumulated in a backward pass."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    node = self._grad_edge()[0]
    return node.register_hook(lambda grad_inputs, grad_outputs: hook(self))


def _output_nr(self) -> int:
    return self._output_nr


def _H(self):
    if self.ndim == 0:
        warn_at_user_code("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning)
        return self
    if self.ndim != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor."
                           + (" For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""))
    return self.transpose(0, 1)


def _mH(self):
    if self.ndim == 0:
        warn_at_user_code("Tensor.mH is deprecated on 0-D tensors. Consider using x.conj(). (Triggered internally at "
                          "/__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp:4382.)", UserWarning)
        return self
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {self.ndim}-D "
                           f"tensor.")
    return self.transpose(-2, -1)


def _bernoulli_method(self, p=None, *, generator=None):
    return factories.bernoulli(self, p, generator=generator)


def _multinomial_method(self, num_samples, replacement=False, *, generator=None):
    return factories.multinomial(self, num_samples, replacement, generator=generator)


PROPERTIES = {
    "layout": lambda self: strided,
    "is_cpu": lambda self: self.device.type == "cpu",
    "output_nr": _output_nr,
    "name": lambda self: getattr(self, "_variable_name", None),     # (set by autograd.Variable(name=))
    "real": real,
    "imag": imag,
    "H": _H,
    "mH": _mH,
}

_SPECIAL_METHODS = {
    "new": _new, "apply_": _apply_, "map_": _map_, "random_": _random_, "geometric_": _geometric_,
    "log_normal_": _log_normal_, "cauchy_": _cauchy_,
    "register_post_accumulate_grad_hook": _register_post_accumulate_grad_hook,
    "bernoulli": _bernoulli_method, "multinomial": _multinomial_method,
}

METHODS = ("is_same_size", "is_signed", "is_complex", "is_conj", "is_neg", "is_inference", "conj", "resolve_conj",
           "resolve_neg", "conj_physical", "get_device", "put", "put_", "index_put", "index_put_", "masked_scatter",
           "masked_scatter_", "diagonal_scatter", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes",
           "unsafe_chunk", "svd", "qr", "cholesky", "cholesky_solve", "cholesky_inverse", "triangular_solve",
           "adjoint", "matrix_exp", "hardshrink", "prelu", "histogram", "nuclear_norm")

FUNCTIONS = (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "max_pool3d", "avg_pool1d", "max_pool1d", "max_pool1d_with_indices",
    "max_pool2d", "adaptive_avg_pool1d", "adaptive_max_pool1d", "batch_norm", "layer_norm", "group_norm",
    "rms_norm", "embedding", "dropout", "dropout_", "celu", "celu_", "selu", "selu_", "prelu", "hardshrink",
    "threshold", "threshold_", "pixel_shuffle", "pixel_unshuffle", "cosine_similarity", "pairwise_distance",
    "kl_div", "margin_ranking_loss", "binary_cross_entropy_with_logits",
    "rsub", "scalar_tensor", "is_same_size", "is_signed", "promote_types", "can_cast", "typename", "isin",
    "unravel_index", "combinations", "chain_matmul", "get_num_threads", "set_num_threads",
    "get_num_interop_threads", "set_num_interop_threads", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
    "set_float32_matmul_precision", "get_float32_matmul_precision", "is_inference_mode_enabled",
    "get_default_device", "randint_like", "hamming_window", "hann_window", "blackman_window", "bartlett_window",
    "kaiser_window", "gradient", "histogram", "put", "index_put", "index_put_", "masked_scatter",
    "diagonal_scatter", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk", "svd",
    "qr", "cholesky", "cholesky_solve", "cholesky_inverse", "triangular_solve", "nuclear_norm", "frobenius_norm",
    "adjoint", "matrix_exp", "strided", "is_conj", "is_neg", "is_inference", "conj", "resolve_conj",
    "resolve_neg", "conj_physical", "real", "imag", "get_device",
)


def _bind():
    from .tensor_api import TensorAPI
    bind_methods(globals(), METHODS)
    for name, fn in _SPECIAL_METHODS.items():
        if not hasattr(TensorAPI, name):
            setattr(TensorAPI, name, fn)
    for name, fn in PROPERTIES.items():
        if not hasattr(TensorAPI, name):
            setattr(TensorAPI, name, property(fn))


_bind()


def inplace_functions(tensor_class) -> dict:
    """``gradc.X_`` for each of PyTorch's ``torch.X_`` whose method ``tensor_class`` has (bound
    once every module has added its methods)."""
    return {name: _torch_inplace(name) for name in INPLACE_NAMES
            if hasattr(tensor_class, name) and name not in globals()}
