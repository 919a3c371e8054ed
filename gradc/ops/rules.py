"""Shared shape/dtype rules and VJP helpers used by the op families."""
from __future__ import annotations

import math

from .. import dtypes
from .dispatch import apply, grad_fn_name
from .registry import KernelDtypeError, ShapeError, TypeInfo


def fmt_shape(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def broadcast_shapes(op: str, *shapes) -> tuple:
    if len(shapes) == 2:          # the common cases: equal shapes, or one operand 0-d
        a, b = shapes
        if a == b or not b:
            return tuple(a)
        if not a:
            return tuple(b)
    out = tuple(shapes[0]) if shapes else ()
    for s in shapes[1:]:          # pairwise, left to right, as PyTorch's TensorIterator
        out = _broadcast_pair(op, out, tuple(s), shapes)
    return out


def _broadcast_pair(op, a, b, shapes) -> tuple:
    """PyTorch's infer_size: the dims compared from the last, ``a`` the shape so far."""
    ndim = max(len(a), len(b))
    out = [1] * ndim
    for i in range(ndim - 1, -1, -1):
        offset = ndim - 1 - i
        x = a[len(a) - 1 - offset] if offset < len(a) else 1
        y = b[len(b) - 1 - offset] if offset < len(b) else 1
        if x != y and x != 1 and y != 1:
            raise ShapeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i} "
                f"(in gradc.{op} with shapes " + ", ".join(fmt_shape(t) for t in shapes) + ")")
        out[i] = y if x == 1 else x
    return tuple(out)


def same_dtype(op: str, types) -> dtypes.dtype:
    dt = types[0].dtype
    for t in types[1:]:
        if t.dtype is not dt:
            raise ShapeError(f"gradc.{op}: operands must share one dtype after promotion, got "
                             + ", ".join(str(t.dtype) for t in types))
    return dt


def elementwise_rule(out_dtype=None, float_only=False, bool_kernel=None):
    """Shape rule for a broadcasting elementwise op; the result dtype is the operands' unless given.
    ``bool_kernel`` (a name, or a function of the attrs giving one or None) is the PyTorch kernel
    that has no bool version: bool operands are refused with its error."""
    def infer(op_name):
        def rule(types, attrs):
            shape = broadcast_shapes(op_name, *(t.shape for t in types))
            dt = same_dtype(op_name, types) if out_dtype is None else out_dtype
            if float_only and not dt.is_floating_point:
                raise ShapeError(f"gradc.{op_name}: expected a floating point tensor, got {dt}")
            if bool_kernel is not None and types[0].dtype is dtypes.bool_:
                kernel = bool_kernel(attrs) if callable(bool_kernel) else bool_kernel
                if kernel:
                    raise not_implemented_for(kernel, dtypes.bool_)
            return [TypeInfo(shape, dt)]
        return rule
    return infer


def not_implemented_for(kernel: str, dt) -> KernelDtypeError:
    """PyTorch's error for an op without a kernel for ``dt``: ``"pow" not implemented for 'Bool'``."""
    return KernelDtypeError(f'"{kernel}" not implemented for \'{dt.scalar_type}\'')


def reduced_shape(shape, dims, keepdim) -> tuple:
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def check_dims(op, shape, dims):
    for d in dims:
        if not (0 <= d < max(len(shape), 1)):
            raise ShapeError(f"gradc.{op}: dim {d} out of range for a tensor of shape {fmt_shape(shape)}")


def reduction_count(shape, dims) -> int:
    return math.prod(shape[d] for d in dims) if shape else 1


# ---- VJP helpers (tensor-API level; work on eager tensors and proxies alike) ----------------
def unbroadcast(g, shape):
    """Sum a broadcast gradient back to an operand's shape, spelled as PyTorch's ``at::sum_to``
    (so the nodes recorded under create_graph=True are PyTorch's): a sum over the leading dims
    and the dims broadcast from 1, kept (SumBackward1), then a view dropping the leading dims
    (ViewBackward0); to a 0-d shape, a full sum (SumBackward0)."""
    if g.shape == shape:          # (an eager Size against a TypeInfo's tuple: the common case)
        return g
    shape = tuple(shape)
    have = tuple(g.shape)
    if have == shape:
        return g
    if not shape:
        if g.dtype.is_floating_point:     # g.sum()'s op, without its argument handling (an internal call)
            return apply("sum", g, dims=list(range(len(have))), keepdim=False, _name="SumBackward0")
        return g.sum()
    lead = len(have) - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and have[lead + i] != 1]
    if dims:
        g = apply("sum", g, dims=dims, keepdim=True, _name="SumBackward1")
    return g.reshape(shape) if lead > 0 else g


def backward_op(ctx, name, fn, *args):
    """``fn(*args)``: the part of a VJP that PyTorch computes with one backward function of its
    own (``name`` is its node's, e.g. TanhBackwardBackward0 for tanh_backward(grad, result)).
    An eager gradient taken with create_graph=True records it as that one node, with an edge
    per argument (``autograd.node.formula_node``); the IR autodiff pass gets the ops of ``fn``."""
    if ctx.node_name is None:
        return fn(*args)
    from ..autograd.node import formula_node
    return formula_node(name, fn, *args)


def scalar_add(t, c):
    """``t + c`` (or ``c + t``) for a Python number ``c`` as add(Tensor, Scalar): one edge (AddBackward1)."""
    return t._binary("add", c, node_name=grad_fn_name("AddBackward1", (0,)))


def scalar_mul(t, c):
    """``t * c`` for a Python number ``c`` as PyTorch's C++ formulas spell it: mul(Tensor, Scalar),
    one edge (MulBackward1), where Python's ``t * c`` is mul(Tensor, wrapped c), MulBackward0."""
    return t._binary("mul", c, node_name=grad_fn_name("MulBackward1", (0,)))


def scalar_div(t, c):
    """``t / c`` for a Python number ``c`` as div(Tensor, Scalar): one edge (DivBackward1)."""
    return t._binary("div", c, node_name=grad_fn_name("DivBackward1", (0,)), float_only=True)


def scalar_rsub(c, t):
    """``c - t`` for a Python number ``c`` as PyTorch's C++ formulas spell it: a wrapped number
    minus the tensor, SubBackward0 with edges (None, t) (Python's ``c - t`` is RsubBackward1)."""
    return t._binary("sub", c, reverse=True, node_name="SubBackward0")


def scalar_sub(t, c):
    """``t - c`` for a Python number ``c`` as sub(Tensor, Scalar): one edge (SubBackward1)."""
    return t._binary("sub", c, node_name=grad_fn_name("SubBackward1", (0,)))


def zero_grad(g):
    """Zeros like ``g``: the gradient of a piecewise-constant op (PyTorch's ``zeros_like(grad)``;
    ``g * 0`` would turn an inf or nan incoming gradient into nan); like PyTorch's, it does not
    require grad, even in a gradient taken with create_graph=True."""
    from ..autograd import grad_mode
    with grad_mode.no_grad():       # (detached too: the autodiff pass's emitter has no grad mode)
        return apply("fill", apply("detach", g), value=0.0)


def expand_reduced(g, in_shape, dims, keepdim, *, from_scalar=False):
    """Undo a reduction's shape as PyTorch's sum_backward: the dropped dims unsqueezed back one by
    one (its unsqueeze_multiple), then an expand. ``from_scalar``: a full reduction's 0-d gradient
    is expanded as it is (PyTorch's ``grad.expand(sizes)`` for sum() and mean()). The expand is
    made even to the shape the gradient has (a reduction over size-1 dims), as PyTorch's is."""
    in_shape = tuple(in_shape)
    if not keepdim and dims and in_shape and not from_scalar:
        for d in sorted(dims):
            g = g.unsqueeze(d)
    # g.expand(in_shape)'s op, without its argument checks (in_shape is one g expands to)
    return apply("expand", g, shape=list(in_shape))


def keep_reduced(y, in_shape, dims, keepdim):
    """A reduction's output reshaped to keepdim form (for broadcasting against its input)."""
    if not keepdim and dims:
        return y.reshape(reduced_shape(in_shape, dims, True))
    return y
