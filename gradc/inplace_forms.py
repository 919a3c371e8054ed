"""The in-place forms PyTorch has for its out-of-place Tensor methods (``x.erf_()``,
``x.lgamma_()``, ``x.lt_(y)``, ``x.tril_()``, ...): each is ``self._inplace(self.name(...))``, so
it follows ``_inplace``'s rules (the result must keep self's shape and cast to self's dtype,
PyTorch's errors otherwise; a leaf that requires grad refuses; the version counter moves;
grad_fn is the out-of-place op's node). Bound once, after every module has added its methods;
a form a class already defines is left alone."""
from __future__ import annotations

from .arg_parser import parses

# PyTorch's in-place Tensor methods whose out-of-place form gradc has, in addition to those
# tensor_api.py writes out
NAMES = (
    "absolute", "acos", "acosh", "addbmm", "addmm", "addmv", "addr", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "asin", "asinh", "atan", "atan2", "atanh", "baddbmm", "bitwise_and",
    "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "clip", "cosh",
    "cumprod", "cumsum", "deg2rad", "digamma", "divide", "eq", "erf", "erfc", "erfinv", "exp2", "expm1", "fix",
    "float_power", "floor_divide", "fmod", "frac", "ge", "copysign", "gcd", "heaviside", "hypot", "lcm", "ldexp",
    "nextafter", "greater", "greater_equal", "gt", "i0", "igamma", "igammac", "le", "less",
    "less_equal", "lgamma", "log10", "log1p", "log2", "logical_and", "logical_not", "logical_or", "logical_xor",
    "logit", "lt", "multiply", "mvlgamma", "ne", "negative", "not_equal", "polygamma", "rad2deg", "remainder",
    "sgn", "sinc", "sinh", "subtract", "tan", "tril", "triu", "true_divide", "xlogy",
)


# the binary ones among them, whose other operand is checked before they compute: (whether their
# result is floating point for integer operands, whether other may be a number)
BINARY = {"atan2": (True, False), "arctan2": (True, False), "copysign": (True, True), "xlogy": (True, True),
          "true_divide": (True, True), "bitwise_and": (False, True), "bitwise_or": (False, True),
          "bitwise_xor": (False, True), "bitwise_left_shift": (False, True), "bitwise_right_shift": (False, True),
          "floor_divide": (False, True), "fmod": (False, True), "remainder": (False, True), "hypot": (False, False),
          "multiply": (False, True), "gcd": (False, False), "lcm": (False, False), "nextafter": (False, False),
          "igamma": (False, False), "igammac": (False, False)}


def _inplace_form(name):
    if name in BINARY:
        float_only, takes_number = BINARY[name]

        def method(self, other, *args, **kwargs):
            if takes_number or hasattr(other, "dtype"):     # (a number where none is taken: the op's error)
                other = self._inplace_checked(other, float_only=float_only)
            return self._inplace(getattr(self, name)(other, *args, **kwargs))
        method.__name__ = name + "_"
        method.__doc__ = f"In-place ``{name}``: ``self`` becomes ``self.{name}(other, ...)``."
        return method

    def method(self, *args, **kwargs):
        return self._inplace(getattr(self, name)(*args, **kwargs))
    method.__name__ = name + "_"
    method.__doc__ = f"In-place ``{name}``: ``self`` becomes ``self.{name}(...)``."
    return method


def _parsed_inplace_form(name, base):
    """The in-place form, with the out-of-place method's argument errors in its own name."""
    method = _inplace_form(name)
    signatures = getattr(base, "signatures", None)
    return parses(name + "_", *signatures)(method) if signatures else method


def bind(classes):
    """Add each missing ``name_`` to the first class (the shared tensor API) where the
    out-of-place method exists and no class in ``classes`` defines ``name_`` already."""
    api = classes[0]
    for name in NAMES:
        if hasattr(api, name) and not any(hasattr(c, name + "_") for c in classes):
            setattr(api, name + "_", _parsed_inplace_form(name, getattr(api, name)))
