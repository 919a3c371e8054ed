"""Elementwise ops: arithmetic, unary math, comparisons, logic, where, clamp, cast."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .dispatch import apply
from .quiet import quiet
from .registry import ELEMENTWISE, NONDIFF, PIECEWISE_CONSTANT, PURE, NoDerivative, ShapeError, TypeInfo, defop
from .rules import (backward_op, broadcast_shapes, elementwise_rule, same_dtype, scalar_add, scalar_mul, scalar_rsub,
                    not_implemented_for, scalar_sub, unbroadcast, zero_grad)

EW = frozenset({PURE, ELEMENTWISE})


def _binary(name, forward, vjp, saves=(), bool_kernel=None, **kw):
    return defop(name, infer=elementwise_rule(bool_kernel=bool_kernel)(name), forward=quiet(forward), vjp=vjp,
                 saves=saves, traits=EW, num_inputs=2, **kw)


def _unary(name, forward, vjp, saves=(), float_only=True, traits=EW, **kw):
    return defop(name, infer=elementwise_rule(float_only=float_only)(name), forward=quiet(forward),
                 vjp=vjp, saves=saves, traits=traits, num_inputs=1, **kw)


def _shapes(ctx):
    return [t.shape for t in ctx.input_types]


# ---- binary arithmetic ------------------------------------------------------------------
# add and sub take PyTorch's optional ``alpha`` (a + alpha * b), so that x.add(y, alpha=2) is one
# AddBackward0 node with edges to x and y, as in PyTorch
def _scaled(b, alpha):
    """``alpha * b`` (arrays in the forward, tensors in the VJP), or ``b`` without an alpha."""
    return b if alpha is None else b * alpha


_binary("add", lambda a, b, alpha=None: np.add(a, _scaled(b, alpha)),
        lambda ctx, g: [unbroadcast(g[0], ctx.input_shape(0)) if ctx.needs_input_grad[0] else None,
                        unbroadcast(_scaled(g[0], ctx.attrs.get("alpha")), ctx.input_shape(1))
                        if ctx.needs_input_grad[1] else None], attr_names=("alpha",))
_binary("sub", lambda a, b, alpha=None: np.subtract(a, _scaled(b, alpha)),
        lambda ctx, g: [unbroadcast(g[0], ctx.input_shape(0)) if ctx.needs_input_grad[0] else None,
                        unbroadcast(-_scaled(g[0], ctx.attrs.get("alpha")), ctx.input_shape(1))
                        if ctx.needs_input_grad[1] else None], attr_names=("alpha",))
_binary("mul", np.multiply,
        lambda ctx, g: [unbroadcast(g[0] * ctx.input(1), ctx.input_shape(0)) if ctx.needs_input_grad[0] else None,
                        unbroadcast(g[0] * ctx.input(0), ctx.input_shape(1)) if ctx.needs_input_grad[1] else None],
        saves=("in0", "in1"))


def _div_vjp(ctx, g):
    sa, sb = _shapes(ctx)
    ga = unbroadcast(g[0] / ctx.input(1), sa) if ctx.needs_input_grad[0] else None
    gb = None
    if ctx.needs_input_grad[1]:
        # PyTorch's -g * ((a / b) / b): a / (b * b) overflows to inf / inf where b * b does
        b = ctx.input(1)
        gb = unbroadcast(-g[0] * (ctx.input(0) / b / b), sb)
    return [ga, gb]


_binary("div", np.true_divide, _div_vjp, saves=("in0", "in1"))


def _pow_vjp(ctx, g):
    """PyTorch's derivatives of pow (FunctionsManual.cpp), op for op, so that gradients taken
    with create_graph=True have PyTorch's nodes: for pow(Tensor, Scalar) (the ``exponent`` attr)
    ``grad * (exponent * self.pow(exponent - 1))``, zeros for exponent 0; for pow(Scalar, Tensor)
    (``base``) ``grad * (result * log(base))``; for two tensors
    ``where(exponent == 0, 0, grad * (exponent * self.pow(exponent - 1)))`` and
    ``grad * where((self == 0) & (exponent >= 0), 0, result * self.log())``."""
    from ..tensor_api import where
    attrs = ctx.attrs
    if "exponent" in attrs:
        e = attrs["exponent"]
        if not ctx.needs_input_grad[0]:
            return [None, None]
        return [zero_grad(g[0]) if e == 0 else g[0] * scalar_mul(ctx.input(0) ** (e - 1), e), None]
    if "base" in attrs:
        return [None, _pow_scalar_base_vjp(attrs["base"], ctx.input(1), ctx.output(0), g[0])
                if ctx.needs_input_grad[1] else None]
    a, b = ctx.input(0), ctx.input(1)
    sa, sb = _shapes(ctx)
    ga = gb = None
    if ctx.needs_input_grad[0]:
        ga = unbroadcast(where(b == 0, 0.0, g[0] * (b * a ** scalar_sub(b, 1))), sa)
    if ctx.needs_input_grad[1]:
        gb = unbroadcast(g[0] * where((a == 0) & (b >= 0), 0.0, ctx.output(0) * a.log()), sb)
    return [ga, gb]


def _pow_scalar_base_vjp(base, exponent, result, g):
    """d/db base**b = base**b * log(base); zero where base is 0 and b >= 0 (log(0) is -inf)."""
    from ..tensor_api import where
    with np.errstate(all="ignore"):
        log_base = float(np.log(np.float64(base)))
    scaled = scalar_mul(result, log_base)
    return g * (where(exponent >= 0, 0.0, scaled) if base == 0 else scaled)


def _pow_forward(a, b, exponent=None, base=None):
    """np.power, except integer powers with negative exponents, which PyTorch defines as
    1 for a base of 1, +-1 for -1 and 0 otherwise (NumPy raises). (``exponent``/``base``: the
    Python number ``b``/``a`` holds, for the VJP.)"""
    if a.dtype.kind in "iu" and b.dtype.kind in "iu" and np.any(b < 0):
        neg = b < 0
        out = np.power(a, np.where(neg, 0, b))
        odd = (np.abs(b) % 2) == 1
        small = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
        return np.where(neg, small, out).astype(np.result_type(a, b))
    if a.dtype.kind == "f":
        if exponent == -0.5 and a.dtype != np.float16:   # PyTorch's pow(Tensor, -0.5) is rsqrt: -0.0 gives -inf
            return 1 / np.sqrt(a)
        if exponent is None and b.ndim == 0:
            # a tensor exponent is C's pow elementwise: NumPy's fast path for a 0-d exponent would
            # take 0.5 as sqrt (PyTorch's for a Python number only: sqrt(-0.0) is -0.0, pow's +0.0)
            return np.power(a.reshape(-1), np.full(a.size, b, dtype=b.dtype)).reshape(a.shape)
    return np.power(a, b)


def _pow_bool_kernel(attrs):
    """pow has no bool kernel; PyTorch copies the base for an exponent 1 (True) and fills ones for 0."""
    return None if attrs.get("exponent", None) in (0, 1) else "pow"


_binary("pow", _pow_forward, _pow_vjp, saves=("in0", "in1", "out0"), attr_names=("exponent", "base"),
        bool_kernel=_pow_bool_kernel)


def _minmax_vjp(pick_first):
    def vjp(ctx, g):
        from ..tensor_api import where
        a, b = ctx.input(0), ctx.input(1)
        sa, sb = _shapes(ctx)
        # PyTorch's: where(a == b, g / 2, g), zeroed where the other operand wins outright
        # (so both operands get g where one is NaN)
        shared = where(a == b, g[0] / 2, g[0])
        ga = unbroadcast(where(pick_first(b, a), 0.0, shared), sa) if ctx.needs_input_grad[0] else None
        gb = unbroadcast(where(pick_first(a, b), 0.0, shared), sb) if ctx.needs_input_grad[1] else None
        return [ga, gb]
    return vjp


def _atan2_vjp(ctx, g):
    """d atan2(y, x) = (x dy - y dx) / (x^2 + y^2)."""
    y, x = ctx.input(0), ctx.input(1)
    sy, sx = _shapes(ctx)
    r = g[0] / (x * x + y * y)
    return [unbroadcast(r * x, sy) if ctx.needs_input_grad[0] else None,
            unbroadcast(-r * y, sx) if ctx.needs_input_grad[1] else None]


_binary("atan2", np.arctan2, _atan2_vjp, saves=("in0", "in1"))
_binary("maximum", np.maximum, _minmax_vjp(lambda a, b: a > b), saves=("in0", "in1"))
_binary("minimum", np.minimum, _minmax_vjp(lambda a, b: a < b), saves=("in0", "in1"))

# ---- unary ---------------------------------------------------------------------------------
_unary("neg", np.negative, lambda ctx, g: [-g[0]], float_only=False)
_unary("exp", np.exp, lambda ctx, g: [g[0] * ctx.output(0)], saves=("out0",))
_unary("exp2", np.exp2, lambda ctx, g: [scalar_mul(g[0] * ctx.output(0), math.log(2))], saves=("out0",))
_unary("log", np.log, lambda ctx, g: [g[0] / ctx.input(0)], saves=("in0",))
# (the unary derivatives below are spelled as derivatives.yaml writes them, so that a gradient
# taken with create_graph=True has PyTorch's nodes: a number is a Scalar operand, e.g. MulBackward1)
_unary("log2", np.log2, lambda ctx, g: [g[0] / scalar_mul(ctx.input(0), math.log(2))], saves=("in0",))
_unary("log10", np.log10, lambda ctx, g: [g[0] / scalar_mul(ctx.input(0), math.log(10))], saves=("in0",))
_unary("sqrt", np.sqrt, lambda ctx, g: [g[0] / scalar_mul(ctx.output(0), 2)], saves=("out0",))
_unary("rsqrt", lambda x: 1 / np.sqrt(x),
       lambda ctx, g: [scalar_mul(g[0], -0.5) * ctx.output(0) ** 3], saves=("out0",))
# tanh_backward(grad, result) and sigmoid_backward(grad, result): one node each under create_graph
_unary("tanh", np.tanh, lambda ctx, g: [backward_op(ctx, "TanhBackwardBackward0", lambda gy, y: gy * (1 - y * y),
                                                    g[0], ctx.output(0))], saves=("out0",))
_unary("sigmoid", lambda x: 1 / (1 + np.exp(-x)),
       lambda ctx, g: [backward_op(ctx, "SigmoidBackwardBackward0", lambda gy, y: gy * y * (1 - y),
                                   g[0], ctx.output(0))], saves=("out0",))
_unary("sin", np.sin, lambda ctx, g: [g[0] * ctx.input(0).cos()], saves=("in0",))
_unary("cos", np.cos, lambda ctx, g: [g[0] * -ctx.input(0).sin()], saves=("in0",))
_unary("tan", np.tan, lambda ctx, g: [g[0] * scalar_add(ctx.output(0) ** 2, 1)], saves=("out0",))
_unary("atan", np.arctan, lambda ctx, g: [g[0] / scalar_add(ctx.input(0) * ctx.input(0), 1)], saves=("in0",))
_unary("asin", np.arcsin, lambda ctx, g: [g[0] * scalar_add(-ctx.input(0) * ctx.input(0), 1).rsqrt()],
       saves=("in0",))
_unary("acos", np.arccos, lambda ctx, g: [g[0] * -scalar_add(-ctx.input(0) * ctx.input(0), 1).rsqrt()],
       saves=("in0",))
_unary("sinh", np.sinh, lambda ctx, g: [g[0] * ctx.input(0).cosh()], saves=("in0",))
_unary("cosh", np.cosh, lambda ctx, g: [g[0] * ctx.input(0).sinh()], saves=("in0",))
_unary("asinh", np.arcsinh, lambda ctx, g: [g[0] * scalar_add(ctx.input(0) ** 2, 1).rsqrt()], saves=("in0",))
_unary("acosh", np.arccosh, lambda ctx, g: [g[0] * scalar_sub(ctx.input(0) * ctx.input(0), 1).rsqrt()],
       saves=("in0",))
_unary("atanh", np.arctanh, lambda ctx, g: [g[0] / (1 - ctx.input(0) * ctx.input(0))], saves=("in0",))


def _where_zero(cond, g):
    from ..tensor_api import where
    return where(cond, g, 0.0)


def _zero_where(cond, g):
    """``g`` with zeros where ``cond`` holds (PyTorch's masks: a NaN input keeps its gradient)."""
    from ..tensor_api import where
    return where(cond, 0.0, g)


_unary("relu", lambda x: np.maximum(x, np.zeros((), x.dtype)),      # (threshold_backward(grad, result, 0))
       lambda ctx, g: [backward_op(ctx, "ThresholdBackwardBackward0", lambda gy, y: _zero_where(y <= 0, gy),
                                   g[0], ctx.output(0))], saves=("out0",), float_only=False)
def _silu_vjp(ctx, g):
    """PyTorch's infinitely_differentiable_silu_backward: g * s * (1 + x * (1 - s)), s = sigmoid(x)."""
    x = ctx.input(0)
    s = x.sigmoid()
    return [g[0] * s * scalar_add(x * scalar_rsub(1.0, s), 1.0)]


def _leaky_relu_vjp(ctx, g):
    from ..tensor_api import where
    return [where(ctx.input(0) > 0, g[0], g[0] * ctx.attrs["negative_slope"])]


_unary("silu", lambda x: x * (1 / (1 + np.exp(-x))), _silu_vjp, saves=("in0",), node_name="SiluBackward0")
_unary("leaky_relu", lambda x, negative_slope: np.where(x > 0, x, x * x.dtype.type(negative_slope)),
       _leaky_relu_vjp, saves=("in0",), attr_names=("negative_slope",), node_name="LeakyReluBackward0")


# ---- log1p, expm1, erf and the activations built on them -------------------------------------
_erf_f64 = np.frompyfunc(math.erf, 1, 1)


def _erf_forward(x):
    """NumPy has no erf: Python's (correctly rounded in practice), element by element in float64."""
    return np.asarray(_erf_f64(x.astype(np.float64, copy=False)), dtype=np.float64).astype(x.dtype)


SQRT1_2 = 0.7071067811865476
_TWO_OVER_SQRT_PI = 1.1283791670955126
_INV_SQRT_2PI = 0.3989422804014327
GELU_TANH_SCALE = 0.7978845608028654      # sqrt(2 / pi)
GELU_TANH_CUBIC = 0.044715

_unary("log1p", np.log1p, lambda ctx, g: [g[0] / scalar_add(ctx.input(0), 1)], saves=("in0",),
       node_name="Log1PBackward0")
_unary("expm1", np.expm1, lambda ctx, g: [g[0] * scalar_add(ctx.output(0), 1)], saves=("out0",))
_unary("erf", _erf_forward, lambda ctx, g: [scalar_mul((-ctx.input(0) ** 2).exp(), _TWO_OVER_SQRT_PI) * g[0]],
       saves=("in0",))


_erfc_f64 = np.frompyfunc(math.erfc, 1, 1)
_SQRT_PI_OVER_2 = 0.886226925452758
# Giles' single-precision erfinv ("Approximating the erfinv function", GPU Computing Gems, 2011):
# w = -log((1 - x)(1 + x)); a polynomial in w - 2.5 below w = 5, in sqrt(w) - 3 above
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erfinv_forward(x):
    """The inverse of erf, in float64 element by element: Giles' approximation (about 4e-7
    relative in float32's range), then four Newton steps on erf(y) = |x|, above 1/2 on
    log(erfc(y)) = log(1 - |x|) (1 - |x| is exact there) so the tail keeps full precision;
    +-1 give +-inf, |x| > 1 and NaN give NaN."""
    x64 = x.astype(np.float64, copy=False)
    a = np.abs(x64)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - a) * (1.0 + a))
        central, tail = w - 2.5, np.sqrt(w) - 3.0
        p = np.where(w < 5.0, np.polyval(_ERFINV_CENTRAL, central), np.polyval(_ERFINV_TAIL, tail)) * a
        ok = a < 1.0
        y = np.where(ok, p, 0.0)
        big = a > 0.5
        log_tail = np.log(1.0 - a)
        for _ in range(4):
            # Newton on erf(y) = a; above 1/2 on log(erfc(y)) = log(1 - a), nearly linear in the
            # tail, where the approximation (made for float32's range) starts furthest off
            erfc_y = np.asarray(_erfc_f64(y), np.float64)
            step = np.where(big, (np.log(erfc_y) - log_tail) * erfc_y, a - np.asarray(_erf_f64(y), np.float64))
            y = np.where(ok, y + step * _SQRT_PI_OVER_2 * np.exp(y * y), y)
        y = np.where(a == 1.0, np.inf, np.where(ok, y, np.nan))
    return (np.copysign(y, x64)).astype(x.dtype)


_unary("erfinv", _erfinv_forward,
       lambda ctx, g: [scalar_mul((ctx.output(0) ** 2).exp(), _SQRT_PI_OVER_2) * g[0]], saves=("out0",))


def _softplus_forward(x, beta=1.0, threshold=20.0):
    bx = x * x.dtype.type(beta)
    return np.where(bx > threshold, x, np.log1p(np.exp(bx)) / x.dtype.type(beta))


def _softplus_vjp(ctx, g):
    """PyTorch's softplus_backward: g where beta * x > threshold, else g * sigmoid(beta * x)."""
    from ..tensor_api import where

    def softplus_backward(gy, x):
        bx = x * ctx.attrs.get("beta", 1.0)
        return where(bx > ctx.attrs.get("threshold", 20.0), gy, gy * bx.sigmoid())
    return [backward_op(ctx, "SoftplusBackwardBackward0", softplus_backward, g[0], ctx.input(0))]


def _elu_vjp(ctx, g):
    from ..tensor_api import where

    def elu_backward(gy, x):
        return where(x <= 0, gy * (ctx.attrs.get("alpha", 1.0) * x.exp()), gy)   # (NaN: g, as PyTorch)
    return [backward_op(ctx, "EluBackwardBackward0", elu_backward, g[0], ctx.input(0))]


def _gelu_forward(x, approximate="none"):
    if approximate == "tanh":
        c = x.dtype.type
        return c(0.5) * x * (1 + np.tanh(c(GELU_TANH_SCALE) * (x + c(GELU_TANH_CUBIC) * x * x * x)))
    x64 = x.astype(np.float64)
    return (0.5 * x64 * (1 + _erf_forward(x64 * SQRT1_2))).astype(x.dtype)


def _gelu_vjp(ctx, g):
    """PyTorch's GeluBackward0: g * (Phi(x) + x * phi(x)), or the derivative of the tanh form."""
    tanh_form = ctx.attrs.get("approximate", "none") == "tanh"
    return [backward_op(ctx, "GeluBackwardBackward0", _gelu_tanh_backward if tanh_form else _gelu_backward,
                        g[0], ctx.input(0))]


def _gelu_backward(g, x):
    cdf = 0.5 * (1 + (x * SQRT1_2).erf())
    pdf = _INV_SQRT_2PI * (-0.5 * (x * x)).exp()
    return g * (cdf + x * pdf)


def _gelu_tanh_backward(g, x):
    inner = GELU_TANH_SCALE * (x + GELU_TANH_CUBIC * (x * x * x))
    t = inner.tanh()
    d_inner = GELU_TANH_SCALE * (1 + 3 * GELU_TANH_CUBIC * (x * x))
    return g * (0.5 * (1 + t) + (0.5 * x) * (1 - t * t) * d_inner)


_unary("log_sigmoid", lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))),
       lambda ctx, g: [backward_op(ctx, "LogSigmoidBackwardBackward0", lambda gy, x: gy * (-x).sigmoid(),
                                   g[0], ctx.input(0))], saves=("in0",), node_name="LogSigmoidBackward0")
_unary("softplus", _softplus_forward, _softplus_vjp, saves=("in0",), attr_names=("beta", "threshold"),
       node_name="SoftplusBackward0")
_unary("elu", lambda x, alpha=1.0: np.where(x > 0, x, x.dtype.type(alpha) * np.expm1(x)), _elu_vjp, saves=("in0",),
       attr_names=("alpha",), node_name="EluBackward0")
_unary("gelu", _gelu_forward, _gelu_vjp, saves=("in0",), attr_names=("approximate",), node_name="GeluBackward0")
_unary("abs", np.abs, lambda ctx, g: [g[0] * ctx.input(0).sgn()], saves=("in0",), float_only=False)
def _sign_forward(x):
    """PyTorch's sign, (0 < x) - (x < 0): NaN and -0.0 give +0.0 (NumPy's sign keeps both)."""
    if x.dtype == np.bool_:
        return x.copy()
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


_unary("sign", _sign_forward, lambda ctx, g: [zero_grad(g[0])], float_only=False, traits=EW | {PIECEWISE_CONSTANT})


# ---- rounding: piecewise constant, so a zero gradient (PyTorch's FloorBackward0, ...); an
# integer tensor is returned as it is (as a copy); round is half to even, as PyTorch's
def _rounding(name, fn):
    _unary(name, lambda x: fn(x) if x.dtype.kind == "f" else x.copy(), lambda ctx, g: [zero_grad(g[0])],
           float_only=False, traits=EW | {PIECEWISE_CONSTANT})


_rounding("floor", np.floor)
_rounding("ceil", np.ceil)
_rounding("trunc", np.trunc)


def _round_forward(x, decimals=0):
    """Half to even; with ``decimals``, PyTorch's nearbyint(x * 10**d) / 10**d (for d < 0,
    nearbyint(x / 10**-d) * 10**-d), in the tensor's dtype."""
    if x.dtype.kind != "f":
        return x.copy()
    if not decimals:
        return np.rint(x)
    scale = x.dtype.type(10.0 ** abs(decimals))
    return np.rint(x * scale) / scale if decimals > 0 else np.rint(x / scale) * scale


_unary("round", _round_forward, lambda ctx, g: [zero_grad(g[0])], float_only=False,
       traits=EW | {PIECEWISE_CONSTANT}, attr_names=("decimals",),
       node_name=lambda a: "RoundBackward1" if a.get("decimals") else "RoundBackward0")
_unary("frac", lambda x: x - np.trunc(x), lambda ctx, g: [g[0]])


# ---- remainder, fmod, floor_divide (PyTorch's %, fmod, //) ----------------------------------
# Pure but not elementwise for the fuser: an exact fmod needs libm, which the kernels do not
# call, so compiled code runs these NumPy references as steps of their own. PyTorch raises
# ZeroDivisionError for an integer divisor of 0; float divisors of 0 give inf/nan quietly.
def _check_integer_divisor(b):
    if b.dtype.kind in "iu" and not np.all(b):
        raise RuntimeError("ZeroDivisionError")


def _remainder_forward(a, b, scalar_self=False):
    """Python's modulo (the result takes the divisor's sign), computed as PyTorch does for
    floats: fmod, then the divisor added where the signs differ.  ``scalar_self``: a number
    divided by a tensor (``2 % t``), which PyTorch cannot differentiate."""
    _check_integer_divisor(b)
    if a.dtype.kind != "f":
        return np.remainder(a, b)
    mod = np.fmod(a, b)
    return np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)


def _fmod_forward(a, b):
    _check_integer_divisor(b)
    return np.fmod(a, b)


def _floor_divide_forward(a, b):
    _check_integer_divisor(b)
    return np.floor_divide(a, b)       # CPython's floor division, PyTorch's algorithm too


def _remainder_vjp(ctx, g):
    """d/da = 1, d/db = -floor(a / b) (PyTorch's ``self.div(other, rounding_mode="floor")``: piecewise
    constant, so its own gradient is zero, but under create_graph=True it requires grad);
    PyTorch's remainder(Scalar, Tensor) has no derivative."""
    if ctx.attrs.get("scalar_self"):
        raise NoDerivative("derivative for aten::remainder is not implemented")
    return _rounded_quotient_vjp(ctx, g, "floor")


def _fmod_vjp(ctx, g):
    """d/da = 1, d/db = -trunc(a / b) (PyTorch's ``self.div(other, rounding_mode="trunc")``)."""
    return _rounded_quotient_vjp(ctx, g, "trunc")


def _rounded_quotient_vjp(ctx, g, mode):
    sa, sb = _shapes(ctx)
    ga = unbroadcast(g[0], sa) if ctx.needs_input_grad[0] else None
    gb = (unbroadcast(-g[0] * apply("div_rounding", ctx.input(0), ctx.input(1), mode=mode), sb)
          if ctx.needs_input_grad[1] else None)
    return [ga, gb]


def _floor_divide_vjp(ctx, g):
    raise NoDerivative("derivative for aten::floor_divide is not implemented")


def _div_rounding_forward(a, b, mode):
    """torch.div(a, b, rounding_mode=mode): 'floor' as //, 'trunc' toward zero (C's integer
    division; for floats trunc(a / b))."""
    _check_integer_divisor(b)
    if mode == "floor":
        return np.floor_divide(a, b)
    if a.dtype.kind == "f":
        return np.trunc(a / b)
    q = np.floor_divide(a, b)
    return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))


def _div_rounding_vjp(ctx, g):
    """Piecewise constant: zero gradients (PyTorch's DivBackward2 with a rounding mode)."""
    sa, sb = _shapes(ctx)
    return [unbroadcast(zero_grad(g[0]), sa) if ctx.needs_input_grad[0] else None,
            unbroadcast(zero_grad(g[0]), sb) if ctx.needs_input_grad[1] else None]


_DIVISION = frozenset({PURE})
defop("remainder", infer=elementwise_rule(bool_kernel="remainder_cpu")("remainder"), forward=quiet(_remainder_forward),
      vjp=_remainder_vjp, saves=("in0", "in1"), traits=_DIVISION, num_inputs=2, attr_names=("scalar_self",),
      node_name=lambda a: "NotImplemented" if a.get("scalar_self") else "RemainderBackward1")
defop("fmod", infer=elementwise_rule(bool_kernel="fmod_cpu")("fmod"), forward=quiet(_fmod_forward), vjp=_fmod_vjp,
      saves=("in0", "in1"), traits=_DIVISION, num_inputs=2, node_name="FmodBackward1")
defop("floor_divide", infer=elementwise_rule(bool_kernel="div_floor_cpu")("floor_divide"),
      forward=quiet(_floor_divide_forward), vjp=_floor_divide_vjp, traits=_DIVISION, num_inputs=2,
      node_name="NotImplemented")
defop("div_rounding", infer=elementwise_rule(bool_kernel=lambda a: f"div_{a['mode']}_cpu")("div_rounding"),
      forward=quiet(_div_rounding_forward), vjp=_div_rounding_vjp, traits=_DIVISION | {PIECEWISE_CONSTANT}, num_inputs=2, attr_names=("mode",),
      node_name="DivBackward2")


def _clamp_forward(x, min=None, max=None):
    out = x
    if min is not None:
        out = np.maximum(out, np.asarray(min, x.dtype))
    if max is not None:
        out = np.minimum(out, np.asarray(max, x.dtype))
    return out


def _clamp_vjp(ctx, g):
    x = ctx.input(0)
    lo, hi = ctx.attrs.get("min"), ctx.attrs.get("max")
    mask = None
    if lo is not None:
        mask = x >= lo
    if hi is not None:
        mask = (x <= hi) if mask is None else mask & (x <= hi)
    return [_where_zero(mask, g[0])]


_unary("clamp", _clamp_forward, _clamp_vjp, saves=("in0",), float_only=False, attr_names=("min", "max"))


# clamp with tensor bounds: clamp_tensor(x, lo, hi) = minimum(maximum(x, lo), hi). A bound the
# caller left out is an infinite constant, which needs no gradient, so the node's edges are
# PyTorch's ClampBackward0 edges (x, min or None, max or None). Gradients follow PyTorch's
# clamp_backward and clamp_backward_min_max: x keeps the gradient where lo <= x <= hi (ties
# included); lo gets it where x < lo < hi, hi where x > hi or hi < lo.
def _clamp_tensor_vjp(ctx, g):
    x, lo, hi = (ctx.input(i) for i in range(3))
    shapes = _shapes(ctx)
    grads = [None, None, None]
    if ctx.needs_input_grad[0]:
        grads[0] = unbroadcast(_where_zero((x >= lo) & (x <= hi), g[0]), shapes[0])
    if ctx.needs_input_grad[1]:
        grads[1] = unbroadcast(_where_zero((x < lo) & (lo < hi), g[0]), shapes[1])
    if ctx.needs_input_grad[2]:
        grads[2] = unbroadcast(_where_zero((x > hi) | (hi < lo), g[0]), shapes[2])
    return grads


defop("clamp_tensor", infer=elementwise_rule()("clamp_tensor"),
      forward=quiet(lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)), vjp=_clamp_tensor_vjp,
      saves=("in0", "in1", "in2"), traits=EW, num_inputs=3, node_name="ClampBackward0")

# ---- copies and casts ------------------------------------------------------------------------
_unary("clone", lambda x: np.array(x, copy=True), lambda ctx, g: [g[0]], float_only=False,
       node_name="CloneBackward0")


def _cast_infer(types, attrs):
    return [TypeInfo(types[0].shape, dtypes.from_name(attrs["dtype"]))]


def _cast_vjp(ctx, g):
    src = ctx.input_types[0].dtype
    if not src.is_floating_point:
        return [None]
    return [g[0].to(src)]


defop("cast", infer=_cast_infer, forward=quiet(lambda x, dtype: x.astype(dtypes.from_name(dtype).np)),
      vjp=_cast_vjp, traits=EW, attr_names=("dtype",), node_name="ToCopyBackward0")


def _round_half_vjp(ctx, g):
    from .dispatch import apply
    return [apply("round_half", g[0])]


# float16 emulated in compiled code (autocast under @gradc.compile, ``ir/tracer.py``): float32 values
# rounded to the nearest float16, where eager code would hold a float16 tensor
defop("round_half", infer=elementwise_rule(float_only=True)("round_half"),
      forward=quiet(lambda x: x.astype(np.float16).astype(x.dtype)), vjp=_round_half_vjp, traits=EW, num_inputs=1)


def _fill_infer(types, attrs):
    return [types[0]]


defop("fill", infer=_fill_infer, forward=lambda x, value: np.full_like(x, value),
      vjp=lambda ctx, g: [zero_grad(g[0])], traits=EW, attr_names=("value",), node_name="FillBackward0")

defop("detach", infer=_fill_infer, forward=lambda x: x, traits=frozenset({PURE, NONDIFF}),
      node_name="DetachBackward0")

# ---- comparisons and logic (no gradient) -----------------------------------------------------
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}
for _name, _fn in _CMP.items():
    defop(_name, infer=elementwise_rule(out_dtype=dtypes.bool_)(_name), forward=quiet(_fn),
          traits=frozenset({PURE, ELEMENTWISE, NONDIFF}), num_inputs=2)


def _bool_rule(name, n):
    def infer(types, attrs):
        for t in types:
            if t.dtype is not dtypes.bool_:
                raise ShapeError(f"gradc.{name}: expected bool operands, got {t.dtype}")
        return [TypeInfo(broadcast_shapes(name, *(t.shape for t in types)), dtypes.bool_)]
    return infer


defop("logical_and", infer=_bool_rule("logical_and", 2), forward=np.logical_and,
      traits=frozenset({PURE, ELEMENTWISE, NONDIFF}), num_inputs=2)
defop("logical_or", infer=_bool_rule("logical_or", 2), forward=np.logical_or,
      traits=frozenset({PURE, ELEMENTWISE, NONDIFF}), num_inputs=2)
defop("logical_not", infer=_bool_rule("logical_not", 1), forward=np.logical_not,
      traits=frozenset({PURE, ELEMENTWISE, NONDIFF}), num_inputs=1)


# ---- bitwise (integer and bool operands; PyTorch's &, |, ^, ~, <<, >>) -------------------------
# Pure, not elementwise for the fuser (the kernels have no integer bit ops): compiled code runs
# the NumPy reference as a step of its own.  The tensor API sends bool & and | to the logical ops.
def _bitwise_rule(name, bool_kernel=None):
    def infer(types, attrs):
        shape = broadcast_shapes(name, *(t.shape for t in types))
        dt = same_dtype(name, types)
        if dt.is_floating_point:
            raise ShapeError(f"gradc.{name}: expected integer or bool operands, got {dt}")
        if bool_kernel and dt is dtypes.bool_:
            raise not_implemented_for(bool_kernel, dt)
        return [TypeInfo(shape, dt)]
    return infer


_BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
            "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift}
_SHIFT_KERNELS = {"bitwise_left_shift": "lshift_cpu", "bitwise_right_shift": "rshift_cpu"}   # (no bool shifts)
for _name, _fn in _BITWISE.items():
    defop(_name, infer=_bitwise_rule(_name, _SHIFT_KERNELS.get(_name)), forward=quiet(_fn),
          traits=frozenset({PURE, NONDIFF}), num_inputs=2)
defop("bitwise_not", infer=_bitwise_rule("bitwise_not"), forward=np.invert, traits=frozenset({PURE, NONDIFF}),
      num_inputs=1)
# gcd and lcm of integer tensors (lcm of 0 and anything is 0, both non-negative, as PyTorch's)
def _gcd_forward(a, b):
    """PyTorch's gcd: Euclid's algorithm on |a| and |b| with C's remainder, |x| wrapping for an
    integer type's lowest value (gcd(int8 -128, 5) is -1, as PyTorch's)."""
    a, b = (np.array(x) for x in np.broadcast_arrays(np.abs(a), np.abs(b)))
    while np.any(a != 0):
        nonzero = a != 0
        a, b = np.where(nonzero, np.fmod(b, np.where(nonzero, a, 1)), 0).astype(a.dtype), np.where(nonzero, a, b)
    return b


def _lcm_forward(a, b):
    """PyTorch's lcm: |a / gcd * b| computed in C's int and then wrapped to the type, 0 where the
    gcd is 0."""
    g = _gcd_forward(a, b)
    wide = np.where(g == 0, 1, g).astype(np.int64)
    return np.where(g == 0, 0, np.abs(a.astype(np.int64) // wide * b.astype(np.int64))).astype(g.dtype)


defop("gcd", infer=_bitwise_rule("gcd"), forward=quiet(_gcd_forward), traits=frozenset({PURE, NONDIFF}),
      num_inputs=2)
defop("lcm", infer=_bitwise_rule("lcm"), forward=quiet(_lcm_forward), traits=frozenset({PURE, NONDIFF}),
      num_inputs=2)


# ---- copysign, nextafter, heaviside -----------------------------------------------------------
def _copysign_vjp(ctx, g):
    """PyTorch's: sign(x) sign(result) for x (0 at x == 0), zeros for the sign's source."""
    sa, sb = _shapes(ctx)
    ga = unbroadcast(g[0] * (ctx.input(0).sign() * ctx.output(0).sign()), sa) if ctx.needs_input_grad[0] else None
    gb = unbroadcast(zero_grad(g[0]), sb) if ctx.needs_input_grad[1] else None
    return [ga, gb]


def _nextafter_vjp(ctx, g):
    """PyTorch's: the gradient passes to x unchanged, zeros to the direction."""
    sa, sb = _shapes(ctx)
    return [unbroadcast(g[0], sa) if ctx.needs_input_grad[0] else None,
            unbroadcast(zero_grad(g[0]), sb) if ctx.needs_input_grad[1] else None]


def _heaviside_vjp(ctx, g):
    raise NoDerivative("derivative for aten::heaviside is not implemented")


def _heaviside_forward(x, values):
    return np.where(x == 0, values, (x > 0).astype(x.dtype)).astype(x.dtype)


defop("copysign", infer=elementwise_rule(float_only=True)("copysign"), forward=quiet(np.copysign),
      vjp=_copysign_vjp, saves=("in0", "out0"), traits=frozenset({PURE}), num_inputs=2)
defop("nextafter", infer=elementwise_rule(float_only=True)("nextafter"), forward=quiet(np.nextafter),
      vjp=_nextafter_vjp, traits=frozenset({PURE}), num_inputs=2)
defop("heaviside", infer=elementwise_rule()("heaviside"), forward=quiet(_heaviside_forward),
      vjp=_heaviside_vjp, traits=frozenset({PURE}), num_inputs=2, node_name="NotImplemented")


# ---- where -----------------------------------------------------------------------------------
def _where_infer(types, attrs):
    c, a, b = types
    if c.dtype is not dtypes.bool_:
        raise ShapeError(f"gradc.where: condition must be bool, got {c.dtype}")
    if a.dtype is not b.dtype:
        raise ShapeError(f"gradc.where: branches must share a dtype, got {a.dtype} and {b.dtype}")
    return [TypeInfo(broadcast_shapes("where", c.shape, a.shape, b.shape), a.dtype)]


def _where_vjp(ctx, g):
    from ..tensor_api import where
    c = ctx.input(0)
    _, sa, sb = _shapes(ctx)
    ga = unbroadcast(where(c, g[0], 0.0), sa) if ctx.needs_input_grad[1] else None
    gb = unbroadcast(where(c, 0.0, g[0]), sb) if ctx.needs_input_grad[2] else None
    return [None, ga, gb]


defop("where", infer=_where_infer, forward=np.where, vjp=_where_vjp, saves=("in0",), traits=EW,
      num_inputs=3, differentiable_inputs=(1, 2))


# ---- constants (IR only; eager tensors hold their data) -------------------------------------
def _constant_infer(types, attrs):
    return [TypeInfo(tuple(attrs["shape"]), dtypes.from_name(attrs["dtype"]))]


def constant_array(value, shape, dtype) -> np.ndarray:
    """A constant's value (one number, or nested lists) at its shape; an empty value is written
    ``[]`` whatever its shape, e.g. (0, 1)."""
    array = np.asarray(value, dtype=dtypes.from_name(dtype).np)
    if array.size == 0:
        return np.zeros(tuple(shape), array.dtype)
    return np.broadcast_to(array, tuple(shape))


def _constant_forward(value, shape, dtype):
    return constant_array(value, shape, dtype).copy()


defop("constant", infer=_constant_infer, forward=_constant_forward,
      traits=frozenset({PURE, NONDIFF, "constant"}), num_inputs=0, attr_names=("value", "shape", "dtype"))


# ---- backward_error: a gradient eager autograd could not compute (IR only) --------------------
# The autodiff pass emits it as the gradient of an op PyTorch has no derivative for (its VJP raised
# NoDerivative) or whose saved tensor the function modified in place (ir.saved_versions). Its
# operand is the cotangent, so it runs only in the backward: the error comes when backward
# reaches the op, as eagerly.
def _backward_error_infer(types, attrs):
    return [TypeInfo(tuple(attrs["shape"]), dtypes.from_name(attrs["dtype"]))]


def _backward_error_forward(g, shape, dtype, message):
    raise RuntimeError(message)


defop("backward_error", infer=_backward_error_infer, forward=_backward_error_forward,
      traits=frozenset({PURE, NONDIFF}), attr_names=("shape", "dtype", "message"))


# ---- iota: the index along one dim (IR only; the decompose pass builds one-hot masks with it) --
def _iota_infer(types, attrs):
    shape = tuple(attrs["shape"])
    if not 0 <= attrs["dim"] < len(shape):
        raise ShapeError(f"gradc.iota: dim {attrs['dim']} out of range for shape {list(shape)}")
    return [TypeInfo(shape, dtypes.int64)]


def _iota_forward(shape, dim):
    shape = tuple(shape)
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return np.broadcast_to(np.arange(shape[dim], dtype=np.int64).reshape(view), shape).copy()


defop("iota", infer=_iota_infer, forward=_iota_forward, traits=frozenset({PURE, NONDIFF, ELEMENTWISE}),
      num_inputs=0, attr_names=("shape", "dim"))


# ---- binary cross-entropy: a loss with PyTorch's clamped logs and gradient -------------------------
def _bce_forward(p, t):
    """-(t log p + (1 - t) log(1 - p)) per element, each log clamped at -100 as PyTorch's."""
    if np.any((p < 0) | (p > 1)):
        raise RuntimeError("all elements of input should be between 0 and 1")
    with np.errstate(all="ignore"):
        return -(t * np.maximum(np.log(p), -100) + (1 - t) * np.maximum(np.log1p(-p), -100))


_BCE_EPSILON = float(np.float32(1e-12))     # PyTorch's EPSILON, a float constant even for doubles


def _bce_vjp(ctx, g):
    """PyTorch's binary_cross_entropy_backward: g (p - t) / max(p (1 - p), 1e-12), finite where p
    is 0 or 1; its own derivative is taken as if the max were p (1 - p) (PyTorch's double backward
    does not mask it).  For the target, g (log(1 - p) - log p), unclamped as PyTorch's."""
    p, t = ctx.input(0), ctx.input(1)
    sp, st = _shapes(ctx)
    gp = gt = None
    if ctx.needs_input_grad[0]:
        q = p * (1 - p)
        denominator = q + (q.clamp(min=_BCE_EPSILON) - q).detach()
        gp = unbroadcast(g[0] * (p - t) / denominator, sp)
    if ctx.needs_input_grad[1]:
        gt = unbroadcast(g[0] * ((-p).log1p() - p.log()), st)
    return [gp, gt]


_binary("binary_cross_entropy", _bce_forward, _bce_vjp, saves=("in0", "in1"),
        node_name="BinaryCrossEntropyBackward0")
