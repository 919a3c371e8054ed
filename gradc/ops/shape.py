"""Shape ops: reshape, permute, expand, cat, stack."""
from __future__ import annotations

import math

import numpy as np

from .registry import PURE, VIEW, ShapeError, TypeInfo, defop
from .rules import fmt_shape, same_dtype, zero_grad

VIEWS = frozenset({PURE, VIEW})


def _reshape_infer(types, attrs):
    t = types[0]
    shape = tuple(attrs["shape"])
    if math.prod(shape) != t.numel or any(s < 0 for s in shape):
        raise ShapeError(f"shape '{fmt_shape(shape)}' is invalid for input of size {t.numel} "
                         f"(in gradc.reshape of shape {fmt_shape(t.shape)})")
    return [TypeInfo(shape, t.dtype)]


def _inserted_ones(small, big):
    """The positions (ascending) of the size-1 dims ``big`` adds to ``small``, or None when
    ``big`` is not ``small`` with 1s inserted."""
    found, j = [], 0
    for i, s in enumerate(big):
        if j < len(small) and s == small[j]:
            j += 1
        elif s == 1:
            found.append(i)
        else:
            return None
    return found if j == len(small) else None


def _reshape_vjp(ctx, g):
    """The input's shape back, spelled as PyTorch's backward of the function the node names:
    unsqueeze's is a squeeze, squeeze's unsqueezes (its unsqueeze_to), a view's a reshape."""
    shape, gg = tuple(ctx.input_types[0].shape), g[0]
    name = ctx.node_name or ""
    if name == "UnsqueezeBackward0":
        dims = _inserted_ones(shape, tuple(gg.shape))
        if dims and len(dims) == 1:
            return [gg.squeeze(dims[0])]
    elif name.startswith("SqueezeBackward"):
        dims = _inserted_ones(tuple(gg.shape), shape)
        if dims is not None:
            for d in dims:
                gg = gg.unsqueeze(d)
            return [gg]
    return [gg.reshape(shape)]


defop("reshape", infer=_reshape_infer, forward=lambda x, shape: x.reshape(tuple(shape)),   # (np.reshape's work, no wrapper)
      vjp=_reshape_vjp, traits=VIEWS,
      attr_names=("shape",), node_name="ViewBackward0")


def _permute_infer(types, attrs):
    t = types[0]
    dims = list(attrs["dims"])
    if sorted(dims) != list(range(t.ndim)):
        raise ShapeError(f"gradc.permute: dims {dims} are not a permutation of the {t.ndim} dims of "
                         f"shape {fmt_shape(t.shape)}")
    return [TypeInfo(tuple(t.shape[d] for d in dims), t.dtype)]


def _permute_vjp(ctx, g):
    """The inverse permutation, spelled as the forward was (PyTorch's ``grad.t()`` for t and
    ``grad.transpose(dim0, dim1)`` for transpose)."""
    dims = list(ctx.attrs["dims"])
    if ctx.node_name == "TBackward0":
        return [g[0].t()]
    if ctx.node_name == "TransposeBackward0":
        swapped = [i for i, d in enumerate(dims) if d != i] or [0, 0]
        return [g[0].transpose(*swapped)]
    inverse = [dims.index(i) for i in range(len(dims))]
    return [g[0].permute(*inverse)]


defop("permute", infer=_permute_infer, forward=lambda x, dims: x.transpose(tuple(dims)),
      vjp=_permute_vjp, traits=VIEWS, attr_names=("dims",), node_name="PermuteBackward0")


def _expand_infer(types, attrs):
    t = types[0]
    shape = tuple(attrs["shape"])
    lead = len(shape) - t.ndim
    if lead < 0 or any(s not in (1, shape[lead + i]) for i, s in enumerate(t.shape)):
        raise ShapeError(f"gradc.expand: shape {fmt_shape(t.shape)} cannot be expanded to {fmt_shape(shape)}")
    return [TypeInfo(shape, t.dtype)]


def _expand_forward(x, shape):
    """``x`` broadcast to ``shape``: read-only where elements repeat (PyTorch refuses a write
    there), a writable view of ``x`` where none does (only new or kept size-1 dims), as PyTorch's."""
    shape = tuple(shape)
    # the broadcast view made directly on x's memory, at half np.broadcast_to's cost or less (a 0-d
    # x is in every full sum's and mean's backward)
    if not x.ndim:
        out = np.ndarray(shape, x.dtype, buffer=x, strides=(0,) * len(shape))
        if out.size != 1 or not x.flags.writeable:
            out.flags.writeable = False
        return out
    # strides as PyTorch's (inferExpandGeometry): x's own on the kept dims (size-1 too), 0 on the
    # expanded ones; a new leading dim of size 1 continues the next dim's (size * stride), 0 otherwise
    lead = len(shape) - x.ndim
    strides = [st if n == s else 0 for n, s, st in zip(x.shape, shape[lead:], x.strides)]
    for i in reversed(range(lead)):
        strides.insert(0, shape[i + 1] * strides[0] if shape[i] == 1 else 0)
    strides = tuple(strides)
    if x.flags.c_contiguous and x.size:
        out = np.ndarray(shape, x.dtype, buffer=x, strides=strides)
        if out.size != x.size or not x.flags.writeable:
            out.flags.writeable = False
        return out
    np.broadcast_to(x, shape)           # (its error for shapes that do not broadcast)
    out = np.lib.stride_tricks.as_strided(x, shape, strides, writeable=x.flags.writeable)
    if out.size != x.size:
        out.flags.writeable = False
    return out


defop("expand", infer=_expand_infer, forward=_expand_forward,
      vjp=lambda ctx, g: [g[0].sum_to_size(ctx.input_types[0].shape)], traits=VIEWS,
      attr_names=("shape",), node_name="ExpandBackward0")


def _cat_infer(types, attrs):
    d = attrs["dim"]
    dt = same_dtype("cat", types)
    zero_d = next((i for i, t in enumerate(types) if t.ndim == 0), None)
    if zero_d is not None:
        raise ShapeError(f"zero-dimensional tensor (at position {zero_d}) cannot be concatenated")
    ref = next((t for t in types if t.shape != (0,)), types[0])
    total = 0
    for i, t in enumerate(types):
        if t.shape == (0,):
            continue
        if t.ndim != ref.ndim:
            raise ShapeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {t.ndim}")
        bad = next((k for k, (a, b) in enumerate(zip(t.shape, ref.shape)) if k != d and a != b), None)
        if bad is not None:
            raise ShapeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                             f"{ref.shape[bad]} but got size {t.shape[bad]} for tensor number {i} in the list.")
        total += t.shape[d]
    shape = list(ref.shape)
    shape[d] = total
    return [TypeInfo(tuple(shape), dt)]


def _cat_vjp(ctx, g):
    d = ctx.attrs["dim"]
    grads, start = [], 0
    for t in ctx.input_types:
        if t.shape == (0,):     # (a legacy empty input: PyTorch's zeros({0}), no grad_fn)
            grads.append(zero_grad(g[0].reshape(-1).narrow(0, 0, 0)))
            continue
        n = t.shape[d]
        grads.append(g[0].narrow(d, start, n))
        start += n
    return grads


defop("cat", infer=_cat_infer, forward=lambda *xs, dim: np.concatenate(
          [x for x in xs if x.shape != (0,)] or [xs[0]], axis=dim),
      vjp=_cat_vjp, num_inputs=None, attr_names=("dim",), node_name="CatBackward0")


def _stack_infer(types, attrs):
    dt = same_dtype("stack", types)
    for i, t in enumerate(types):
        if t.shape != types[0].shape:
            raise ShapeError(f"stack expects each tensor to be equal size, but got {fmt_shape(types[0].shape)} "
                             f"at entry 0 and {fmt_shape(t.shape)} at entry {i}")
    shape = list(types[0].shape)
    shape.insert(attrs["dim"], len(types))
    return [TypeInfo(tuple(shape), dt)]


defop("stack", infer=_stack_infer, forward=lambda *xs, dim: np.stack(xs, axis=dim),
      vjp=lambda ctx, g: [g[0].select(ctx.attrs["dim"], i) for i in range(len(ctx.input_types))],
      num_inputs=None, attr_names=("dim",), node_name="StackBackward0")
