"""PyTorch's remaining small functions, spelled with table ops (so they work eagerly and under
@gradc.compile, with gradients from the ops they use): NumPy-style names (absolute, divide,
multiply, subtract, not_equal, ravel, ger), predicates (isneginf, isposinf, isreal,
is_nonzero, ...), type and shape helpers (result_type, broadcast_shapes, broadcast_tensors),
elementwise forms (xlogy, sinc, fmax/fmin, float_power, logaddexp2), splits (hsplit, vsplit,
dsplit), matrix builders (block_diag, cartesian_prod, diagflat, vander, addr, vdot,
matrix_power) and index forms (take, take_along_dim, slice_scatter, select_scatter,
index_copy)."""
from __future__ import annotations

import math

import numpy as np

from . import dtypes, factories
from .arg_parser import ArgumentError, parses
from .compositions import _varargs, bind_methods, floating_operands, outer
from .ops.rules import not_implemented_for
from .autograd.node import grad_fn_named
from .autocast_state import autocast_excluded
from .ops.dispatch import apply, grad_fn_name
from .return_types import return_type
from .scatter import index_value_outside, scalar_type_name
from .tensor_api import (cat, dot, is_tensor_like, norm_dim, promote_operands, result_dtype, stack, where,
                         wrapped_number)


def absolute(x): return x.abs()
def divide(x, other, *, rounding_mode=None): return x.div(other, rounding_mode=rounding_mode)
def multiply(x, other): return x.mul(other)
def subtract(x, other, *, alpha=1): return x.sub(other, alpha=alpha)
def not_equal(x, other): return x.ne(other)
def positive(x): return +x
def ravel(x): return x.reshape(-1)
def msort(x): return x.sort(0).values
def ger(a, b): return outer(a, b)
def isneginf(x): return x == -math.inf if x.dtype.is_floating_point else x != x
def isposinf(x): return x == math.inf if x.dtype.is_floating_point else x != x
def isreal(x): return x == x if x.dtype is dtypes.bool_ else (x * 0 == 0) | (x != x) | (x.abs() == math.inf)
def is_floating_point(x): return x.dtype.is_floating_point
def is_complex(x): return False
def ndimension(x): return x.ndim


def is_nonzero(x) -> bool:
    if x.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if x.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(x.item() != 0)


def result_type(tensor, other):
    """The dtype of an arithmetic op on ``tensor`` and ``other`` (a tensor or a Python scalar)."""
    pairs = [(x.dtype, 2 if x.ndim > 0 else 1) if is_tensor_like(x) else (dtypes.scalar_dtype(x), 0)
             for x in (tensor, other)]
    return dtypes.result_type(pairs)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to, with PyTorch's error."""
    from .tensor_api import Size
    result = ()
    for i, s in enumerate(shapes):
        s = tuple(s) if isinstance(s, (tuple, list)) else (int(s),)
        n = max(len(result), len(s))
        a, b = (1,) * (n - len(result)) + tuple(result), (1,) * (n - len(s)) + s
        out = []
        for k, (p, q) in enumerate(zip(a, b)):
            if p != q and p != 1 and q != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {q} at {k - n}! Mismatching argument "
                                   f"at index {i} had {s}; but expected shape should be broadcastable to {list(a)}")
            out.append(q if p == 1 else p)
        result = tuple(out)
    return Size(result)


def broadcast_tensors(*tensors):
    tensors = _varargs(tensors)
    shape = broadcast_shapes(*[t.shape for t in tensors])
    # (a tensor already of that shape is returned as it is, as PyTorch's expand_outplace does)
    return tuple(t if tuple(t.shape) == tuple(shape) else t.expand(*shape) for t in tensors)


# ---- elementwise ----------------------------------------------------------------------------------
def float_operands(x, y):
    """Two operands (tensors, or one a Python scalar) promoted to their common floating dtype,
    as PyTorch's two-argument special functions take them (xlogy(2, y), zeta(x, 1.5))."""
    if not is_tensor_like(x):
        x = wrapped_number(y, x)
    if not is_tensor_like(y):
        y = wrapped_number(x, y)
    (x, y), _ = promote_operands([x, y], float_only=True)
    return x, y


def two_operand_op(op, node, input, other, operands=float_operands):
    """Table op ``op`` of two operands, one of which may be a Python scalar: PyTorch names the
    node ``{node}Backward1`` (scalar first) or ``{node}Backward2`` (scalar second), with one edge."""
    x, y = operands(input, other)
    if not is_tensor_like(input):
        return apply(op, x, y, _name=grad_fn_name(f"{node}Backward1", (1,)))
    if not is_tensor_like(other):
        return apply(op, x, y, _name=grad_fn_name(f"{node}Backward2", (0,)))
    return apply(op, x, y)


@parses("copysign", "(Tensor other)", "(Number other)")
def copysign(input, other):
    """|input| with the sign of ``other`` (-0.0 counts as negative), as a float tensor."""
    if not (is_tensor_like(other) or isinstance(other, (int, float, np.number))):
        raise ArgumentError(f"copysign() of {type(other).__name__}")
    x, y = float_operands(input, other)
    if not is_tensor_like(other):
        return apply("copysign", x, y, _name=grad_fn_name("CopysignBackward1", (0,)))
    return apply("copysign", x, y)


@parses("nextafter", "(Tensor other)")
def nextafter(input, other):
    """The next float after ``input`` towards ``other``, in their common floating point dtype."""
    if not is_tensor_like(other):
        raise ArgumentError("nextafter(): other")
    x, y, _ = floating_operands("nextafter_cpu", input, other)
    return apply("nextafter", x, y)


def _incomplete_gamma(op, input, other):
    """The regularized incomplete gamma ``op`` of two tensors, in their common floating dtype
    (PyTorch has no integer kernel: ``"igamma_cpu" not implemented for 'Long'``)."""
    if not is_tensor_like(other):
        raise ArgumentError(f"{op}(): other")
    a, x, _ = floating_operands(f"{op}_cpu", input, other)
    return apply(op, a, x)


@parses("igamma", "(Tensor other)")
def igamma(input, other):
    """The regularized lower incomplete gamma function P(input, other)."""
    return _incomplete_gamma("igamma", input, other)


@parses("igammac", "(Tensor other)")
def igammac(input, other):
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P(input, other)."""
    return _incomplete_gamma("igammac", input, other)


@parses("heaviside", "(Tensor values)")
def heaviside(input, values):
    """0 below zero, 1 above, ``values`` at zero; no derivative (PyTorch's error on backward)."""
    if not is_tensor_like(values):
        raise ArgumentError("heaviside(): values")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return apply("heaviside", input, values)


def _integer_op(name):
    @parses(name, "(Tensor other)")
    def fn(input, other):
        if not is_tensor_like(other):
            raise ArgumentError(f"{name}(): other")
        (a, b), dt = promote_operands([input, other])
        if dt.category != 1:            # (their common dtype: bool with an integer is that integer)
            raise not_implemented_for(f"{name}_cpu", dt)
        return apply(name, a, b)
    fn.__name__ = name
    fn.__doc__ = f"The elementwise {name} of integer tensors (non-negative)."
    return fn


gcd = _integer_op("gcd")
lcm = _integer_op("lcm")


@parses("ldexp", "(Tensor other)")
@grad_fn_named("LdexpBackward0")
def ldexp(input, other):
    """input * 2^other in the operands' common floating dtype, differentiable in both (other:
    input 2^other log 2). As PyTorch's: a floating input scales exactly by an integer exponent
    (ldexp(1e-38, 200) is finite, ldexp(0., 1000) is 0; a bool one is refused); otherwise the
    input is multiplied by 2^other, computed in other's floating dtype or the default one."""
    if not is_tensor_like(other):
        raise ArgumentError("ldexp(): other")
    if other.dtype.is_floating_point or not input.dtype.is_floating_point:
        return input * (2.0 ** other)
    if other.dtype is dtypes.bool_:
        raise not_implemented_for("ldexp_cpu_exp", other.dtype)
    dt = result_dtype([input, other], float_only=True)
    # the exponent as C's int (2**40 is 0), scaling exactly in float64 by two powers of two
    # (each within float64's range: beyond +-2000 every result has over- or underflowed anyway)
    e = other.to(dtypes.int32).clamp(-2000, 2000).double()
    half = (e / 2).trunc()
    return (input.double() * (2.0 ** half) * (2.0 ** (e - half))).to(dt)


def frexp(input):
    """(mantissa, exponent): input = mantissa * 2^exponent, 0.5 <= |mantissa| < 1 (0, inf and NaN
    keep their value with exponent 0); the exponent is int32, and only the mantissa has a
    gradient, grad / 2^exponent (PyTorch's FrexpBackward0). Eager only: the exponent is data."""
    import numpy as np
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    data = getattr(input, "_data", None)
    if data is None:
        from .ir.errors import TraceError
        raise TraceError("frexp under @gradc.compile: its int32 exponent has no compiled dtype; compute it "
                           "outside the compiled function")
    _, exponent = np.frexp(input._host())
    scale = factories.tensor(np.ldexp(np.ones_like(exponent, dtype=input.dtype.np), -exponent), device=input.device)
    mantissa = _frexp_mantissa(input, scale)
    result = return_type("frexp", ("mantissa", "exponent"))
    return result(mantissa, factories.tensor(exponent.astype(np.int32), dtype=dtypes.int32, device=input.device))


@grad_fn_named("FrexpBackward0")
def _frexp_mantissa(input, scale):
    return input * scale


def greater_equal(x, other): return x.ge(other)
def less_equal(x, other): return x.le(other)
def greater(x, other): return x.gt(other)
def less(x, other): return x.lt(other)


def xlogy(x, y):
    """x * log(y), 0 where x == 0 (NaN where y is NaN): a table op with PyTorch's gradients."""
    return two_operand_op("xlogy", "Xlogy", x, y)


@grad_fn_named("SincBackward0")
def sinc(x):
    """sin(pi x) / (pi x), 1 at 0 (with gradient 0 there)."""
    x = x if x.dtype.is_floating_point else x.to(dtypes.default_float)
    zero = x == 0
    px = where(zero, 1.0, x) * math.pi
    return where(zero, 1.0, px.sin() / px)


def _nan_ignoring(a, b, first_wins):
    (a, b), _ = promote_operands([a, b])
    if not a.dtype.is_floating_point:
        return where(first_wins(a, b), a, b)
    return where(first_wins(a, b) | (b != b), a, b)       # PyTorch's masks: ties go to a


def _tensor_other(b):
    if not is_tensor_like(b):
        raise ArgumentError(f"a {type(b).__name__} for a tensor")


@parses("fmax", "(Tensor other)")
@grad_fn_named("FmaxBackward0")
def fmax(a, b):
    _tensor_other(b)
    return _nan_ignoring(a, b, lambda p, q: p >= q)


@parses("fmin", "(Tensor other)")
@grad_fn_named("FminBackward0")
def fmin(a, b):
    _tensor_other(b)
    return _nan_ignoring(a, b, lambda p, q: p <= q)


def float_power(x, exponent):
    x = x.to(dtypes.float64) if is_tensor_like(x) else x
    exponent = exponent.to(dtypes.float64) if is_tensor_like(exponent) else float(exponent)
    if not is_tensor_like(x):
        return exponent._scalar(float(x), dtypes.float64) ** exponent
    return x ** exponent


@parses("logaddexp2", "(Tensor other)")
def logaddexp2(a, b):
    """log2(2^a + 2^b), of floating point operands (float16 at float32, rounded once)."""
    from .compositions import _logaddexp, rounded_once
    if not is_tensor_like(b):
        raise ArgumentError("logaddexp2(): other")
    a, b, dt = floating_operands("logaddexp2_cpu", a, b)
    ln2 = math.log(2.0)
    return rounded_once(lambda a, b: _logaddexp(a * ln2, b * ln2) / ln2, (a, b), dt)


# ---- splits and matrix builders ------------------------------------------------------------------
def _split_along(name, x, sections, dim, min_ndim):
    from .arrangement import tensor_split
    if x.ndim < min_ndim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_ndim} dimension, but got a tensor "
                           f"with {x.ndim} dimensions!")
    if isinstance(sections, int) and (sections == 0 or x.shape[dim] % sections):
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                           f"{x.shape[dim]} is not divisible by the split_size {sections}!")
    return tensor_split(x, sections, dim)


def hsplit(x, sections): return _split_along("hsplit", x, sections, 0 if x.ndim == 1 else 1, 1)
def vsplit(x, sections): return _split_along("vsplit", x, sections, 0, 2)
def dsplit(x, sections): return _split_along("dsplit", x, sections, 2, 3)


def block_diag(*tensors):
    """The tensors (0-d as 1x1, 1-D as one row) along the diagonal of a zero matrix."""
    from .compositions import pad
    blocks = [t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1 else t for t in tensors]
    for i, b in enumerate(blocks):
        if b.ndim != 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{b.ndim} dimensions")
    if not blocks:
        return factories.zeros(0, 0)
    blocks, _ = promote_operands(blocks)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        rows.append(pad(b, (left, width - left - b.shape[1])))
        left += b.shape[1]
    return cat(rows, 0)


def cartesian_prod(*tensors):
    from .compositions import meshgrid
    tensors = _varargs(tensors)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def diagflat(x, offset=0):
    from .arrangement import diag
    return diag(x.reshape(-1), offset)


def vander(x, N=None, increasing=False):
    """Columns x^0 .. x^(N-1) (decreasing unless ``increasing``); integer x gives int64."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if not x.dtype.is_floating_point:
        x = x.to(dtypes.int64)
    powers = [x ** k if k else x * 0 + 1 for k in range(n)]
    if not increasing:
        powers.reverse()
    return stack(powers, 1) if powers else factories.empty(x.shape[0], 0, dtype=x.dtype)


@autocast_excluded
@grad_fn_named("AddrBackward0")
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    from .compositions import beta_scaled
    return beta_scaled(input, beta) + alpha * ger(vec1, vec2)


def vdot(a, b):
    return dot(a, b)


def matrix_power(A, n):
    """A @ A @ ... (n times) by repeated squaring; n = 0 the identity, n < 0 powers of the inverse."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1]} matrices")
    if n == 0:
        from .arrangement import eye
        eye = eye(A.shape[-1], dtype=A.dtype)
        return A * 0 + eye
    if n < 0:
        from .linalg import inv
        A, n = inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


# ---- index forms ---------------------------------------------------------------------------------
@grad_fn_named("TakeBackward0")
def take(x, index):
    if not is_tensor_like(index) or index.dtype is not dtypes.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {scalar_type_name(index)}")
    n = x.numel()
    bad = index_value_outside(index, -n, n)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return x.reshape(-1)[index]


def take_along_dim(x, indices, dim=None):
    if dim is None:
        return x.reshape(-1).gather(0, indices.reshape(-1))
    if x.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {x.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    d = norm_dim(dim, x.ndim)
    xs, ix = list(x.shape), list(indices.shape)     # broadcast against each other but along dim
    xs[d] = ix[d] = 1
    shape = list(broadcast_shapes(xs, ix))
    xs, ix = list(shape), list(shape)
    xs[d], ix[d] = x.shape[d], indices.shape[d]
    return x.expand(*xs).gather(d, indices.expand(*ix))


def _scatter_into(input, src, key):
    out = input.clone()
    out[key] = src
    return out


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    d = norm_dim(dim, input.ndim)
    return _scatter_into(input, src, (slice(None),) * d + (slice(start, end, step),))


def select_scatter(input, src, dim, index):
    d = norm_dim(dim, input.ndim)
    return _scatter_into(input, src, (slice(None),) * d + (int(index),))


def _check_index_copy(x, dim, index, source):
    """PyTorch's checks of index_copy's operands, in its order, with its messages."""
    if index.ndim >= 2:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    n = index.numel()
    if source.ndim == 0 and n != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element (got {n})")
    if source.ndim != x.ndim and source.ndim and x.ndim:
        raise IndexError("index_copy_(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({source.ndim}), destination dimensionality ({x.ndim})")
    if index.dtype is not dtypes.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {scalar_type_name(index)}")
    if source.dtype is not x.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{scalar_type_name(x)} and (source) {scalar_type_name(source)}")
    sliced = [[k for j, k in enumerate(t.shape) if j != dim] for t in (x, source)]
    if sliced[0] != sliced[1]:
        raise RuntimeError("index_copy_(): Source/destination tensor must have same slice shapes. Destination slice "
                           f"shape: {' '.join(map(str, sliced[0]))} at dimension {dim} and source slice shape: "
                           f"{' '.join(map(str, sliced[1]))} at dimension 0.")
    if source.ndim and n != source.shape[dim]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) "
                         f"({source.shape[dim]})")
    size = x.shape[dim] if x.ndim else 1
    bad = index_value_outside(index, 0, size)
    if bad is not None:
        raise IndexError(f"index_copy_(): index {bad} is out of bounds for dimension {dim} with size {size}")


def index_copy(input, dim, index, source):
    d = norm_dim(dim, max(input.ndim, 1))
    _check_index_copy(input, d, index, source)
    return _scatter_into(input, source, (slice(None),) * d + (index,))


def _index_copy_(self, dim, index, source):
    d = norm_dim(dim, max(self.ndim, 1))
    _check_index_copy(self, d, index, source)
    self[(slice(None),) * d + (index,)] = source
    return self


METHODS = ("absolute", "divide", "multiply", "subtract", "not_equal", "positive", "ravel", "ger", "isneginf", "isposinf",
           "isreal", "is_nonzero", "ndimension", "xlogy", "sinc", "fmax", "fmin", "float_power", "logaddexp2", "hsplit",
           "vsplit", "dsplit", "diagflat", "addr", "vdot", "matrix_power", "take", "take_along_dim", "slice_scatter",
           "select_scatter", "index_copy", "msort", "copysign", "nextafter", "igamma", "igammac", "heaviside", "gcd", "lcm", "ldexp",
           "frexp", "greater_equal", "less_equal", "greater", "less")
FUNCTIONS = tuple(m for m in METHODS if m != "ndimension") + (
    "is_floating_point", "is_complex", "result_type", "broadcast_shapes", "broadcast_tensors", "block_diag",
    "cartesian_prod", "vander")
bind_methods(globals(), METHODS)
bind_methods({"index_copy_": _index_copy_}, ("index_copy_",))
