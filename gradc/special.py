"""``torch.special``: the special functions under their ``special`` names (``gradc.special.erf``),
and the ones PyTorch also has at the top level and as Tensor methods (lgamma, digamma,
polygamma, mvlgamma, erfc, i0). The table ops behind them are in ``ops/special.py``."""
from __future__ import annotations

import math

from .aliases import float_operands, igamma, igammac, sinc, two_operand_op, xlogy  # noqa: F401  (special.sinc, special.xlogy)
from .arithmetic import logit  # noqa: F401  (special.logit is torch.logit)
from .arg_parser import ArgumentError, parses
from .autograd.node import grad_fn_named
from .tensor_api import is_tensor_like
from .ops.dispatch import apply
from .ops.bessel import FUNCTIONS as BESSEL_FUNCTIONS
from .ops.polynomials import POLYNOMIALS


def _float(x):
    from . import dtypes
    return x if x.dtype.is_floating_point else x.to(dtypes.default_float)


def erf(x): return x.erf()
def erfc(x): return apply("erfc", _float(x))
def erfcx(x): return apply("erfcx", _float(x))
def erfinv(x): return x.erfinv()
def expm1(x): return x.expm1()
def log1p(x): return x.log1p()
def exp2(x): return x.exp2()
def expit(x): return x.sigmoid()
def round(x, decimals=0): return x.round(decimals=decimals)  # noqa: A001
def logsumexp(x, dim, keepdim=False): return x.logsumexp(dim, keepdim)
def softmax(x, dim, dtype=None): return x.softmax(dim, dtype=dtype)
def log_softmax(x, dim, dtype=None): return x.log_softmax(dim, dtype=dtype)
def gammaln(x): return apply("lgamma", _float(x))
def lgamma(x): return apply("lgamma", _float(x))
def digamma(x): return apply("digamma", _float(x))
def entr(x): return apply("entr", _float(x))
def ndtri(x): return apply("ndtri", _float(x))
def log_ndtr(x): return apply("log_ndtr", _float(x))
def i0(x): return apply("i0", _float(x))
def i0e(x): return apply("i0e", _float(x))
def i1(x): return apply("i1", _float(x))
def i1e(x): return apply("i1e", _float(x))


psi = digamma


def polygamma(n, x):
    """The n-th derivative of digamma (``torch.polygamma(n, input)``: n first)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return apply("polygamma", _float(x), n=n)


def _polygamma_method(self, n):
    return polygamma(n, self)


@grad_fn_named("PolygammaBackward1")
def _polygamma_inplace(self, n):
    return self._inplace(polygamma(n, self))


@grad_fn_named("MvlgammaBackward0")
def multigammaln(x, p):
    """log of the multivariate gamma function of dimension p: sum_j lgamma(x - j/2), j < p,
    plus p (p - 1) / 4 log(pi)."""
    from .factories import arange
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _float(x)
    shifts = arange(p, dtype=x.dtype) * -0.5
    return apply("lgamma", x.unsqueeze(-1) + shifts).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


mvlgamma = multigammaln


def zeta(input, other):
    """The Hurwitz zeta function sum_k (other + k)^-input; differentiable in ``other`` only."""
    return two_operand_op("zeta", "SpecialZeta", input, other)


def xlog1py(input, other):
    """input * log1p(other), 0 where input == 0 (unless other is NaN)."""
    return two_operand_op("xlog1py", "SpecialXlog1Py", input, other)


def ndtr(x):
    """The standard normal CDF, spelled as PyTorch's: (1 + erf(x / sqrt 2)) / 2."""
    x = _float(x)
    return (1 + (x * 0.7071067811865476).erf()) * 0.5


@parses("special_gammainc", "(Tensor input, Tensor other)", method=False)
def gammainc(input, other):
    """The regularized lower incomplete gamma function (``torch.igamma``)."""
    if not (is_tensor_like(input) and is_tensor_like(other)):
        raise ArgumentError("special_gammainc()")
    return igamma(input, other)


@parses("special_gammaincc", "(Tensor input, Tensor other)", method=False)
def gammaincc(input, other):
    """The regularized upper incomplete gamma function (``torch.igammac``)."""
    if not (is_tensor_like(input) and is_tensor_like(other)):
        raise ArgumentError("special_gammaincc()")
    return igammac(input, other)


def _polynomial(name):
    """``torch.special.{name}(input, n)``: either operand may be a Python number; no gradient."""
    def polynomial(input, n):
        x, degree = float_operands(input, n)
        return apply(name, x, degree)
    polynomial.__name__ = polynomial.__qualname__ = name
    return polynomial


def _bessel(name):
    """``torch.special.{name}(input)``: integer inputs as the default float dtype; no gradient."""
    def function(input):
        return apply(name, _float(input))
    function.__name__ = function.__qualname__ = name
    return function


for _name in POLYNOMIALS:
    globals()[_name] = _polynomial(_name)
for _name in BESSEL_FUNCTIONS:
    globals()[_name] = _bessel(_name)


def _install():
    """Tensor methods and their in-place forms for the functions PyTorch also has on Tensor."""
    from .compositions import bind_methods
    methods = {"erfc": erfc, "lgamma": lgamma, "digamma": digamma, "polygamma": _polygamma_method,
               "mvlgamma": mvlgamma, "i0": i0}
    bind_methods(methods, tuple(methods))
    bind_methods({"polygamma_": _polygamma_inplace}, ("polygamma_",))


_install()
FUNCTIONS = ("erfc", "lgamma", "digamma", "polygamma", "mvlgamma", "i0")
