"""torch.* free functions over the shared tensor API (exp(x), sum(x, dim), ...)."""
from __future__ import annotations

from .tensor_api import bmm, cat, dot, matmul, mm, stack, where  # noqa: F401


# torch.add(2, t) and its kin take a Python number first: as a 0-d tensor, or (pow, remainder) as
# the reflected operator, which gives PyTorch's node (PowBackward2, remainder's none)
_SCALAR_FIRST = {"add": None, "sub": None, "mul": None, "div": None, "true_divide": None, "floor_divide": None,
                 "pow": "__rpow__", "remainder": "__rmod__"}


def _method(name):
    scalar_first = name in _SCALAR_FIRST

    def fn(input, *args, **kwargs):
        if scalar_first and isinstance(input, (int, float)) and args:
            from .tensor_api import is_tensor_like
            if is_tensor_like(args[0]):
                reflected = _SCALAR_FIRST[name]
                if reflected and len(args) == 1 and not kwargs:
                    return getattr(args[0], reflected)(input)
                input = args[0]._scalar(input, _scalar_dtype(input))
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"gradc.{name}(input, ...) is input.{name}(...)"
    return fn


_METHODS = ["add", "sub", "mul", "div", "true_divide", "neg", "negative", "pow", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "erf", "erfinv", "inverse", "det", "logdet", "slogdet", "pinverse", "sqrt",
            "rsqrt", "tanh", "sigmoid", "relu", "sin", "cos", "tan", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh",
            "arctan", "arcsin", "arccos", "arcsinh", "arccosh", "arctanh", "atan2", "arctan2", "abs", "sign", "floor", "ceil", "round", "trunc", "fix", "frac", "remainder", "fmod",
            "floor_divide", "square", "reciprocal", "clamp", "clip",
            "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not",
            "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
            "bitwise_right_shift",
            "sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "norm", "var", "std",
            "logsumexp", "cumsum", "cumprod", "sort", "argsort", "topk", "softmax", "log_softmax", "reshape", "flatten", "squeeze", "unsqueeze", "transpose",
            "permute", "t", "gather", "index_select", "narrow", "select", "clone", "detach", "masked_fill",
            "numel", "sum_to_size", "swapaxes", "broadcast_to"]

for _n in _METHODS:
    globals()[_n] = _method(_n)

greater = _method("gt")
less = _method("lt")
concat = cat
concatenate = cat


def _scalar_dtype(value):
    from . import dtypes
    return dtypes.scalar_dtype(value)


def is_tensor(x) -> bool:
    from .tensor import Tensor
    return isinstance(x, Tensor)


def numel(x) -> int:
    return x.numel()


def _compositions():
    from . import aliases, arithmetic, arrangement, compositions, counting, scatter, special, statistics
    from . import torch_functions
    return {name: getattr(module, name)
            for module in (compositions, arrangement, arithmetic, scatter, aliases, statistics, special, counting,
                           torch_functions)
            for name in module.FUNCTIONS}


globals().update(_compositions())
