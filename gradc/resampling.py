"""Resampling spelled with table ops: adaptive average pooling, ``interpolate`` (nearest,
nearest-exact, linear, bilinear, area), the 1-D pools and pixel (un)shuffle.  Each resampling along a dim is a
fixed matrix (PyTorch's source-index formulas, built with NumPy) applied with a matmul, or an
``index_select`` for the nearest modes, so gradients come from those ops."""
from __future__ import annotations

import math

import numpy as np

from ._warnings import warn_at_user_code
from . import dtypes, factories
from .autograd.node import grad_fn_named
from .autocast_state import float32_precision


def _adaptive_bounds(n_in, n_out):
    """PyTorch's adaptive windows: [floor(i n_in / n_out), ceil((i + 1) n_in / n_out)) for each i."""
    return [((i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)) for i in range(n_out)]


def _adaptive_sizes(input, output_size, dims):
    """The output size of each of the last ``dims`` dims (an int for all; None keeps that dim)."""
    sizes = (output_size,) * dims if isinstance(output_size, int) else tuple(output_size)
    return [input.shape[input.ndim - dims + k] if n is None else n for k, n in enumerate(sizes)]


def _adaptive_matrix(n_in, n_out):
    """(n_out, n_in): row i averages adaptive window i."""
    m = np.zeros((n_out, n_in))
    for i, (a, b) in enumerate(_adaptive_bounds(n_in, n_out)):
        m[i, a:b] = 1.0 / (b - a)
    return m


def _linear_matrix(n_in, n_out, align_corners, scale_factor):
    """(n_out, n_in) linear interpolation weights: PyTorch's area_pixel source index."""
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        scale = 1.0 / scale_factor if scale_factor else n_in / n_out
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        src = scale * i if align_corners else max(scale * (i + 0.5) - 0.5, 0.0)
        i0 = min(int(src), n_in - 1)
        i1 = i0 + (1 if i0 < n_in - 1 else 0)
        lam = src - i0
        m[i, i0] += 1.0 - lam
        m[i, i1] += lam
    return m


def _nearest_index(n_in, n_out, scale_factor, exact):
    scale = 1.0 / scale_factor if scale_factor else n_in / n_out
    i = np.arange(n_out, dtype=np.float64)
    src = np.floor((i + 0.5) * scale) if exact else np.floor(i * scale)
    return np.minimum(src.astype(np.int64), n_in - 1)


def _along(x, dim, matrix):
    """``matrix`` (n_out, n_in) applied along ``dim`` of ``x``."""
    m = factories.tensor(matrix, dtype=x.dtype, device=x.device)
    moved = x.transpose(dim, -1) @ m.t()
    return moved.transpose(dim, -1)


def _adaptive_avg_pool(input, output_size, nd):
    sizes = _adaptive_sizes(input, output_size, nd)
    out = input
    for k, n in enumerate(sizes):
        dim = input.ndim - nd + k
        out = _along(out, dim, _adaptive_matrix(input.shape[dim], n))
    return out


def _check_adaptive(name, input, output_size, nd):
    """PyTorch's checks of an ``nd``-D adaptive pool's arguments, in its order, with its messages
    (the average and max pools word and order them differently); the output sizes."""
    if output_size is None:
        raise TypeError("object of type 'NoneType' has no len()")
    sizes = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    average = "avg" in name
    colon = "" if average else ":"
    if average:
        _check_adaptive_output_size(name, sizes, nd)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got{colon} {list(input.shape)}")
    checked = range(input.ndim - nd, input.ndim) if name == "adaptive_avg_pool2d" else range(1, input.ndim)
    for d in checked:
        if input.shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input.shape)} with dimension {d} being empty")
    if not average:
        _check_adaptive_output_size(name, sizes, nd)
    out = [input.shape[input.ndim - nd + k] if n is None else n for k, n in enumerate(sizes)]
    negative = [n for n in out if n < 0]
    if negative:
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative[0]}: "
                           f"{list(input.shape[:-nd]) + out}")
    return out


def _check_adaptive_output_size(name, sizes, nd):
    if len(sizes) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}" if "avg" in name
                           else f"{name}(): internal error: output_size.size() must be {nd}")
    if "avg" in name and any(n is not None and n < 0 for n in sizes):
        shown = ", ".join(str(n) for n in sizes[:2]) + "".join(f",{n}" for n in sizes[2:])    # (PyTorch's spacing)
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{shown}}}")


def _check_adaptive_1d(name, input, output_size):
    """PyTorch's checks of a 1-D adaptive pool's own arguments (it then runs the 2-D pool on
    ``input.unsqueeze(-2)``, whose checks follow); its output size."""
    if not 2 <= input.ndim <= 3:
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for {name})")
    if not isinstance(output_size, (int, tuple, list)):
        raise TypeError(f"{name}(): argument 'output_size' (position 2) must be tuple of ints, not "
                        f"{type(output_size).__name__}")
    sizes = (output_size,) if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != 1:
        raise RuntimeError(f"{name}() argument 'output_size' should contain one int (got {len(sizes)})")
    if "max" in name:
        for d in range(1, input.ndim):
            if input.shape[d] == 0:
                raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                                   f"input has sizes {list(input.shape)} with dimension {d} being empty")
    return sizes[0]


def adaptive_avg_pool1d(input, output_size):
    """PyTorch's: the 2-D pool of ``input.unsqueeze(-2)`` (SqueezeBackward1 over AdaptiveAvgPool2DBackward0)."""
    n = _check_adaptive_1d("adaptive_avg_pool1d", input, output_size)
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, n)).squeeze(-2)


@grad_fn_named("AdaptiveAvgPool2DBackward0", edges=lambda input, *a, **k: (input,))
def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg_pool(input, _check_adaptive("adaptive_avg_pool2d", input, output_size, 2), 2)


@float32_precision
@grad_fn_named("AdaptiveAvgPool3DBackward0")
def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg_pool(input, _check_adaptive("adaptive_avg_pool3d", input, output_size, 3), 3)


def _window_index(n_in, n_out):
    """(n_out, K) positions of each adaptive window, padded to the widest window K by repeating
    its last position (a repeat cannot change a max)."""
    bounds = _adaptive_bounds(n_in, n_out)
    k = max(b - a for a, b in bounds)
    return np.array([[min(a + j, b - 1) for j in range(k)] for a, b in bounds], dtype=np.int64)


def _adaptive_max_pool(input, output_size, return_indices, nd):
    """Max over each adaptive window of the last ``nd`` dims; ``return_indices``: the flat index
    (row-major over those dims) of the maximum, the first one in row-major order on ties."""
    outs = _adaptive_sizes(input, output_size, nd)
    lead = tuple(input.shape[:-nd])
    if 0 in outs:                           # an empty result: no window to take a max of
        values = input.reshape(-1)[:0].reshape(*lead, *outs)
        return (values, factories.zeros(*lead, *outs, dtype=dtypes.int64, device=input.device)) if return_indices \
            else values
    ins = tuple(input.shape[-nd:])
    idx = [_window_index(n_in, n_out) for n_in, n_out in zip(ins, outs)]
    ks = [t.shape[1] for t in idx]
    x = input
    for k, t in enumerate(idx):
        x = x.index_select(len(lead) + k, factories.tensor(t.reshape(-1), device=input.device))
    nl = len(lead)
    x = x.reshape(*lead, *[v for o, kk in zip(outs, ks) for v in (o, kk)])
    x = x.permute(*range(nl), *[nl + 2 * k for k in range(nd)], *[nl + 2 * k + 1 for k in range(nd)])
    values, arg = x.reshape(*lead, *outs, math.prod(ks)).max(-1)
    if not return_indices:
        return values
    flat = np.zeros(tuple(outs) + tuple(ks), dtype=np.int64)     # window slot -> flat position in the input
    for k, t in enumerate(idx):
        shape = [1] * (2 * nd)
        shape[k], shape[nd + k] = outs[k], ks[k]
        flat = flat * ins[k] + t.reshape(shape)
    table = factories.tensor(flat.reshape(*outs, math.prod(ks)), device=input.device)
    return values, table.expand(*lead, *outs, math.prod(ks)).gather(-1, arg.unsqueeze(-1)).squeeze(-1)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """PyTorch's: the 2-D pool of ``input.unsqueeze(-2)`` (SqueezeBackward1 over AdaptiveMaxPool2DBackward0)."""
    n = _check_adaptive_1d("adaptive_max_pool1d", input, output_size)
    out = adaptive_max_pool2d(input.unsqueeze(-2), (1, n), return_indices)
    return tuple(t.squeeze(-2) for t in out) if return_indices else out.squeeze(-2)


@grad_fn_named("AdaptiveMaxPool2DBackward0")
def adaptive_max_pool2d(input, output_size, return_indices=False):
    sizes = _check_adaptive("adaptive_max_pool2d", input, output_size, 2)
    return _adaptive_max_pool(input, sizes, return_indices, 2)


@float32_precision
@grad_fn_named("AdaptiveMaxPool3DBackward0")
def adaptive_max_pool3d(input, output_size, return_indices=False):
    sizes = _check_adaptive("adaptive_max_pool3d", input, output_size, 3)
    return _adaptive_max_pool(input, sizes, return_indices, 3)


def _source_scale(n_in, n_out, align_corners, scale_factor):
    """PyTorch's area_pixel_compute_scale."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale_factor if scale_factor else n_in / n_out


def _cubic_matrix(n_in, n_out, align_corners, scale_factor, a=-0.75):
    """(n_out, n_in) bicubic weights: PyTorch's cubic convolution (A = -0.75) over the 4 input
    positions around the (unclamped) source index, the positions clamped to the border."""
    scale = _source_scale(n_in, n_out, align_corners, scale_factor)

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        src = scale * i if align_corners else scale * (i + 0.5) - 0.5
        i0 = min(math.floor(src), n_in - 1)
        t = min(max(src - i0, 0.0), 1.0)
        for k, w in enumerate((far(t + 1), near(t), near(1 - t), far(2 - t))):
            m[i, min(max(i0 - 1 + k, 0), n_in - 1)] += w
    return m


def _aa_matrix(n_in, n_out, align_corners, scale_factor, cubic):
    """(n_out, n_in) antialiased weights (PyTorch's _upsample_bilinear2d_aa / _bicubic2d_aa): the
    triangle (or a = -0.5 cubic) filter widened by the scale when downsampling, each row
    normalised to sum 1."""
    scale = _source_scale(n_in, n_out, align_corners, scale_factor)
    half = 2.0 if cubic else 1.0
    support = half * scale if scale >= 1.0 else half
    invscale = 1.0 / scale if scale >= 1.0 else 1.0

    def filt(x):
        x = abs(x)
        if not cubic:
            return 1.0 - x if x < 1.0 else 0.0
        if x < 1.0:
            return (1.5 * x - 2.5) * x * x + 1
        return (((x - 5) * x + 8) * x - 4) * -0.5 if x < 2.0 else 0.0
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        center = scale * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        w = np.array([filt((j + lo - center + 0.5) * invscale) for j in range(hi - lo)])
        total = w.sum()
        m[i, lo:hi] = w / total if total != 0.0 else w
    return m


_NEEDS = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}


def _interpolate_node(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                      recompute_scale_factor=None, antialias=False):
    n = input.ndim - 2
    if antialias:
        return f"Upsample{mode.capitalize()}2DAaBackward0"
    return {"nearest": f"UpsampleNearest{n}DBackward0", "nearest-exact": f"UpsampleNearestExact{n}DBackward0",
            "linear": "UpsampleLinear1DBackward0", "bilinear": "UpsampleBilinear2DBackward0",
            "trilinear": "UpsampleTrilinear3DBackward0", "bicubic": "UpsampleBicubic2DBackward0",
            "area": "AdaptiveAvgPool2DBackward0" if n == 2 else
            ("AdaptiveAvgPool3DBackward0" if n == 3 else None)}.get(mode)


@grad_fn_named(_interpolate_node, edges=lambda input, *a, **k: (input,))
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the trailing spatial dims (1, 2 or 3 of a 3-D, 4-D or 5-D input), one fixed matrix
    (or index) per dim, as PyTorch's separable kernels."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    else:
        align_corners = bool(align_corners)
    spatial = input.ndim - 2
    ins = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != spatial:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {ins} and output size of {size}. Please provide input "
                                 "tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
            outs = list(size)
        else:
            outs = [size] * spatial
        scales = [None] * spatial
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != spatial:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {ins} and scale_factor of shape {scale_factor}. "
                                 "Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in "
                                 "(s1, s2, ...,sK) format.")
            scales = list(scale_factor)
        else:
            scales = [scale_factor] * spatial
        outs = [int(math.floor(float(n) * s)) for n, s in zip(ins, scales)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor or mode == "area":
        scales = [None] * spatial
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    known = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
    if mode in _NEEDS and input.ndim != _NEEDS[mode] and input.ndim in (3, 4, 5) and mode != "bicubic":
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {_NEEDS[mode]}D input")
    if mode not in known or input.ndim not in (3, 4, 5) or (mode == "bicubic" and input.ndim != 4):
        if mode == "lanczos" and input.ndim == 4:
            raise NotImplementedError("interpolate: mode 'lanczos' is not supported in gradc")
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    x = input
    for k, (n_in, n_out, s) in enumerate(zip(ins, outs, scales)):
        dim = 2 + k
        if mode in ("nearest", "nearest-exact"):
            idx = _nearest_index(n_in, n_out, s, mode == "nearest-exact")
            x = x.index_select(dim, factories.tensor(idx, device=x.device))
        elif antialias:
            x = _along(x, dim, _aa_matrix(n_in, n_out, align_corners, s, mode == "bicubic"))
        elif mode == "bicubic":
            x = _along(x, dim, _cubic_matrix(n_in, n_out, align_corners, s))
        elif mode == "area":
            x = _along(x, dim, _adaptive_matrix(n_in, n_out))
        else:
            x = _along(x, dim, _linear_matrix(n_in, n_out, align_corners, s))
    return x


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    from .compositions import _single, avg_pool2d
    if not 2 <= input.ndim <= 3:
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for argument #1 "
                           "'self' (while checking arguments for avg_pool1d)")
    (k,), (p,) = _single(kernel_size), _single(padding)
    s = _single(stride)[0] if stride is not None and stride != () else k
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad).squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    from .compositions import _single, max_pool2d
    (k,), (p,), (d,) = _single(kernel_size), _single(padding), _single(dilation)
    if not 2 <= input.ndim <= 3 or 0 in input.shape[1:]:
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(input.shape)}")
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    s = _single(stride)[0] if stride is not None and stride != () else k
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    from .compositions import _pool_out_size
    if _pool_out_size(input.shape[-1], k, s, p, d, ceil_mode) <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: "
                           f"{_pool_out_size(input.shape[-1], k, s, p, d, ceil_mode)}")
    out = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    if return_indices:
        values, idx = out
        return values.squeeze(-2), idx.squeeze(-2)
    return out.squeeze(-2)


@grad_fn_named("PixelShuffleBackward0")
def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r): each group of r^2 channels becomes an r x r block."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


@grad_fn_named("PixelUnshuffleBackward0")
def pixel_unshuffle(input, downscale_factor):
    """pixel_shuffle's inverse: (*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    *batch, c, h, w = input.shape
    for name, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({dim})={size} is not divisible by {r}")
    n = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


# ---- grid_sample and affine_grid ------------------------------------------------------------------
_GRID_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
                 "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample "
                 "for details.")


def _grid_source(coord, size, padding_mode, align_corners):
    """PyTorch's grid_sampler_compute_source_index: the normalised [-1, 1] coordinate as a pixel
    position, clipped (border) or reflected then clipped (reflection)."""
    from .tensor_api import where
    coord = (coord + 1) / 2 * (size - 1) if align_corners else ((coord + 1) * size - 1) / 2
    if padding_mode == "reflection":
        low, high = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        if low == high:
            return coord * 0.0
        lo, span = low / 2, (high - low) / 2
        d = (coord - lo).abs()
        flips = (d / span).floor()
        extra = d - flips * span
        even = (flips - 2 * (flips / 2).floor()) == 0
        coord = where(even, extra + lo, span - extra + lo)
    if padding_mode in ("border", "reflection"):
        coord = coord.clamp(0, size - 1)
    return coord


@float32_precision
@grad_fn_named("GridSampler2DBackward0")
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, H, W) at ``grid`` (N, Ho, Wo, 2: x then y in [-1, 1]) bilinearly or at
    the nearest pixel (half to even); zeros, border or reflection outside.  Each corner is a
    ``gather`` of the flattened image and its weight a function of the grid, so the gradients
    with respect to the input and the grid are PyTorch's."""
    from .tensor_api import where
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warn_at_user_code(_GRID_WARNING)
        align_corners = False
    if mode == "bicubic" or input.ndim != 4:
        raise NotImplementedError("gradc: grid_sample supports 4-D inputs with mode 'bilinear' or 'nearest'")
    if grid.ndim != 4 or grid.shape[0] != input.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
                           f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != 2:
        raise RuntimeError("grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes "
                           f"{list(grid.shape)}")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    ix = _grid_source(grid[..., 0], w, padding_mode, align_corners)
    iy = _grid_source(grid[..., 1], h, padding_mode, align_corners)
    flat = input.reshape(n, c, h * w)

    def corner(yi, xi):
        """(N, C, Ho, Wo): the input at integer (y, x) positions, zero outside."""
        valid = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        idx = (yi.clamp(0, h - 1) * w + xi.clamp(0, w - 1)).reshape(n, 1, ho * wo).expand(n, c, ho * wo)
        vals = flat.gather(2, idx).reshape(n, c, ho, wo)
        return where(valid.unsqueeze(1), vals, 0.0)
    if mode == "nearest":       # no gradient to the grid, but a zero one (as PyTorch's) through an unpicked branch
        picked = corner(iy.detach().round().long(), ix.detach().round().long())
        return where(factories.ones((), dtype=dtypes.bool_, device=input.device), picked, (ix + iy).unsqueeze(1))
    x0, y0 = ix.detach().floor(), iy.detach().floor()
    tx, ty = (ix - x0).unsqueeze(1), (iy - y0).unsqueeze(1)
    x0, y0 = x0.long(), y0.long()
    x1, y1 = x0 + 1, y0 + 1
    return (corner(y0, x0) * ((1 - tx) * (1 - ty)) + corner(y0, x1) * (tx * (1 - ty))
            + corner(y1, x0) * ((1 - tx) * ty) + corner(y1, x1) * (tx * ty))


def _base_axis(steps, align_corners, like):
    if steps <= 1:
        return factories.zeros(max(steps, 0), dtype=like.dtype, device=like.device)
    pts = np.linspace(-1.0, 1.0, steps)
    if not align_corners:
        pts = pts * (steps - 1) / steps
    return factories.tensor(pts, dtype=like.dtype, device=like.device)


@grad_fn_named("AffineGridGeneratorBackward0")
def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps ``theta`` (N, 2, 3)
    (or (N, 3, 4)): the base grid of normalised coordinates (x, y[, z], 1) times theta^T."""
    if align_corners is None:
        warn_at_user_code(_GRID_WARNING)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.ndim != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = list(size)[-2:]
    elif len(size) == 5:
        if theta.ndim != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = list(size)[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warn_at_user_code("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                          "align_corners=True. This is not an intended use case of affine_grid. See the documentation of "
                          "affine_grid for details.")
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    from .tensor_api import stack
    nd = len(spatial)
    axes = [_base_axis(s, align_corners, theta) for s in spatial]       # (D,) H, W
    coords = []
    for k in range(nd):                     # x varies along the last dim, y the one before, ...
        s = spatial[nd - 1 - k]
        view = [1] * nd
        view[nd - 1 - k] = s
        coords.append(axes[nd - 1 - k].reshape(*view).expand(*spatial))
    coords.append(factories.ones(tuple(spatial), dtype=theta.dtype, device=theta.device))
    base = stack(coords, -1).reshape(1, math.prod(spatial), nd + 1)
    out = base @ theta.transpose(1, 2)
    return out.reshape(size[0], *spatial, nd)


# ---- fractional max pooling ----------------------------------------------------------------------
def _fractional_starts(samples, n_in, n_out, k, dt):
    """PyTorch's window starts (ATen's generate_intervals), one row per plane: computed in the
    input's float type, as ATen computes them, so the truncations agree."""
    starts = np.empty((samples.shape[0], n_out), dtype=np.int64)
    if n_out > 1:
        alpha = dt.type(n_in - k) / dt.type(n_out - 1)
        s = samples.astype(dt)[:, None]
        i = np.arange(n_out - 1).astype(dt)[None, :]
        starts[:, :-1] = ((i + s) * alpha).astype(np.int64) - (s * alpha).astype(np.int64)
    if n_out > 0:
        starts[:, -1] = n_in - k
    return starts


def _fractional_table(samples, ins, outs, ks, dt):
    """(planes, prod(outs), prod(ks)) flat positions (row-major over the pooled dims) of each
    window's elements."""
    planes, nd = samples.shape[0], len(ins)
    table = np.zeros((planes,) + tuple(outs) + tuple(ks), dtype=np.int64)
    for d in range(nd):
        starts = _fractional_starts(samples[:, d], ins[d], outs[d], ks[d], dt)
        shape = [planes] + [1] * (2 * nd)
        shape[1 + d] = outs[d]
        offsets = [1] * (1 + 2 * nd)
        offsets[1 + nd + d] = ks[d]
        table = table * ins[d] + starts.reshape(shape) + np.arange(ks[d]).reshape(offsets)
    return table.reshape(planes, math.prod(outs), math.prod(ks))


def _fractional_max_pool(name, input, kernel_size, output_size, output_ratio, return_indices, samples, nd):
    from .compositions import _ntuple
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    ins, ks = tuple(input.shape[-nd:]), _ntuple(kernel_size, nd)
    if output_size is None:
        ratio = _ntuple(output_ratio, nd)
        outs = tuple(int(n * r) for n, r in zip(ins, ratio))
    else:
        outs = _ntuple(output_size, nd)
    where = f"{name}()" if nd == 2 else f"{name}_out()"
    for dim, n_in, n_out, k in zip(("time", "height", "width")[3 - nd:], ins, outs, ks):
        if n_out + k - 1 > n_in:
            raise RuntimeError(f"{where}: pool {dim} {k} too large relative to input {dim} {n_in}")
    lead = tuple(input.shape[:-nd])
    if samples is None:
        batch = 1 if input.ndim == nd + 1 else input.shape[0]
        samples = factories.rand(batch, input.shape[-nd - 1], nd, dtype=input.dtype, device=input.device)
    elif samples.shape[1] != input.shape[-nd - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    elif samples.dtype is not input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    dt = np.dtype(input.dtype.np) if input.dtype.is_floating_point else np.dtype(np.float64)
    drawn = samples.detach().numpy().reshape(-1, nd)[:, ::-1] if nd == 2 else \
        samples.detach().numpy().reshape(-1, nd)          # (ATen: W's sample first in 2-D, T, H, W in 3-D)
    table = factories.tensor(_fractional_table(drawn, ins, outs, ks, dt), device=input.device)
    planes = table.shape[0]
    windows = input.reshape(planes, math.prod(ins)).gather(1, table.reshape(planes, -1))
    values, arg = windows.reshape(planes, math.prod(outs), math.prod(ks)).max(-1)
    values = values.reshape(*lead, *outs)
    if not return_indices:
        return values
    return values, table.gather(-1, arg.unsqueeze(-1)).reshape(*lead, *outs)


@float32_precision
@grad_fn_named("FractionalMaxPool2DBackward0")
def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Max over pseudo-random windows (PyTorch's intervals from one sample in [0, 1) per plane and
    dim: the same windows as PyTorch's for the same ``_random_samples``)."""
    return _fractional_max_pool("fractional_max_pool2d", input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples, 2)


@grad_fn_named("FractionalMaxPool3DBackward0")
def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional_max_pool("fractional_max_pool3d", input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples, 3)
