"""torch.* free functions over the shared tensor API (exp(x), sum(x, dim), ...)."""
from __future__ import annotations

import builtins
import functools

from . import dtypes as _dtypes
from .arg_parser import ArgumentError, function_signatures, reparse
from .tensor_api import bmm, cat, dot, is_tensor_like, matmul, mm, stack, where, wrapped_number  # noqa: F401


# torch.add(2, t) and its kin take a Python number first: as a 0-d tensor, or (pow, remainder) as
# the reflected operator, which gives PyTorch's node (PowBackward2, remainder's none)
_SCALAR_FIRST = {"add": None, "sub": None, "mul": None, "div": None, "true_divide": None, "floor_divide": None,
                 "pow": "__rpow__", "remainder": "__rmod__", "bitwise_and": None, "bitwise_or": None,
                 "bitwise_xor": None, "bitwise_left_shift": None, "bitwise_right_shift": None}


def _method(name):
    scalar_first = name in _SCALAR_FIRST

    def fn(input, *args, out=None, **kwargs):
        if out is not None:
            return _call_with_out(name, fn, (input, *args), kwargs, out)
        if scalar_first and isinstance(input, (int, float)) and args:
            if is_tensor_like(args[0]):
                reflected = _SCALAR_FIRST[name]
                if reflected and len(args) == 1 and not kwargs:
                    return getattr(args[0], reflected)(input)
                input = wrapped_number(args[0], input)
        if not is_tensor_like(input):
            _reparse_as_function(name, input, args, kwargs)
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        try:
            return getattr(input, name)(*args, **kwargs)
        except ArgumentError:       # the method's message: PyTorch's function counts input too
            _reparse_as_function(name, input, args, kwargs)
            raise
    fn.__name__ = name
    fn.__doc__ = f"gradc.{name}(input, ...) is input.{name}(...)"
    fn._takes_out = True            # (out= handled here: no second wrapper, _accepts_out)
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
            "permute", "t", "gather", "index_select", "narrow", "narrow_copy", "select", "clone", "detach", "masked_fill",
            "numel", "sum_to_size", "swapaxes", "broadcast_to"]

for _n in _METHODS:
    globals()[_n] = _method(_n)

greater = _method("gt")
less = _method("lt")
concat = cat
concatenate = cat


def _reparse_as_function(name, input, args, kwargs):
    """Raise PyTorch's argument error for ``torch.name(input, *args)`` from the method's signatures
    (the function's have ``input`` first); nothing when the method has none to tell."""
    from .tensor_api import TensorAPI
    signatures = getattr(getattr(TensorAPI, name, None), "signatures", None)
    if signatures:
        reparse(name, function_signatures(signatures), (input, *args), kwargs)


def is_tensor(x) -> bool:
    from .tensor import Tensor
    return isinstance(x, Tensor)


def numel(x) -> int:
    return x.numel()


def _compositions():
    from . import aliases, arithmetic, arrangement, compositions, counting, scatter, special, spectral, statistics
    from . import torch_extras, torch_factories, torch_functions
    return {name: _as_function(name, getattr(module, name))
            for module in (compositions, arrangement, arithmetic, scatter, aliases, statistics, special, counting,
                           torch_functions, torch_extras, torch_factories, spectral)
            for name in module.FUNCTIONS}


def _as_function(name, fn):
    """``fn``, a function that is a Tensor method too: where its argument checks are a method's
    (``parses``), the torch.* form reports wrong arguments with ``input`` counted, as PyTorch's
    (``addcmul(): argument 'tensor1' (position 2)``)."""
    if not getattr(fn, "parsed_method", False):
        return fn
    signatures = function_signatures(fn.signatures)

    @functools.wraps(fn)
    def function(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ArgumentError:
            reparse(name, signatures, args, kwargs)
            raise
    return function


globals().update(_compositions())


# ---- out= ------------------------------------------------------------------------------------------
_OUT_RESIZE_WARNING = (
    "An output with one or more elements was resized since it had shape {old}, which does not match the required "
    "output shape {new}. This behavior is deprecated, and in a future PyTorch release outputs will not be resized "
    "unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
    "elements with t.resize_(0). (Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/Resize.cpp:30.)")


def _tensors_in(values):
    from .tensor_api import is_tensor_like
    for v in values:
        if is_tensor_like(v):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors_in(v)


def _store_out(out, result, read=False):
    """Write ``result`` into ``out`` as PyTorch's out= does: cast if the dtype allows it, resize
    (with PyTorch's warning if ``out`` had elements) when the shape differs, unless ``out`` is
    ``read``, an input of the call too, which is never resized."""
    from . import autograd
    from .tensor_api import _can_cast
    if read and tuple(out.shape) != tuple(result.shape):
        raise RuntimeError(f"output with shape {list(out.shape)} doesn't match the broadcast shape "
                           f"{list(result.shape)}")
    if result.dtype is not out.dtype and not _can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {result.dtype.tensor_type[:-6]} can't be cast to the desired output type "
                           f"{out.dtype.tensor_type[:-6]}")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel():
            from ._warnings import warn_at_user_code
            warn_at_user_code(_OUT_RESIZE_WARNING.format(old=list(out.shape), new=list(result.shape)))
        out.resize_(*result.shape)
    with autograd.no_grad():
        out.copy_(result)


def _structured(r, o, x):
    return f"Expected out tensor to have dtype {r.dtype.c_type}, but got {o.dtype.c_type} instead"


def _same_as_input(r, o, x):
    return (f"Expected the dtype for input and out to match, but got {x.dtype.scalar_type} for input's dtype and "
            f"{o.dtype.scalar_type} for out's dtype.")


def _median_values(r, o, x):
    return (f"Expected tensor for 'values' to have the same type as tensor for argument #2 'self'; but type "
            f"torch.{o.dtype.tensor_type} does not equal torch.{r.dtype.tensor_type} (while checking arguments for "
            "median)")


def _median_indices(r, o, x):
    return (f"Expected tensor for argument #1 'indices' to have scalar type Long; but got torch.{o.dtype.tensor_type} "
            "instead (while checking arguments for median)")


def _mode_output(what):
    def message(r, o, x):
        return f"expected scalar type '{r.dtype.scalar_type}' but got '{o.dtype.scalar_type}' for {what} output"
    return message


def _cumulative_extremum(r, o, x):
    return f"expected scalar_type {r.dtype.scalar_type} but found {o.dtype.scalar_type}"


_KTHVALUE_OUT = (lambda r, o, x: "output values must be of same type as input",
                 lambda r, o, x: "output indices must be of scalar type Long")
# PyTorch's ops whose out= must have the result's dtype exactly (no cast), with their messages:
# per output, in the order PyTorch checks them (median checks its indices first)
_EXACT_OUT = {
    **{n: (_structured, _structured) for n in ("max", "min", "sort", "topk", "aminmax", "argmax", "argmin", "msort")},
    "amax": (_same_as_input,), "amin": (_same_as_input,),
    "kthvalue": _KTHVALUE_OUT,
    "mode": (_mode_output("values"), _mode_output("indices")),
    "median": (_median_values, _median_indices), "nanmedian": (_median_values, _median_indices),
    "cummax": (_cumulative_extremum,) * 2, "cummin": (_cumulative_extremum,) * 2,
}
_CHECK_INDICES_FIRST = ("median", "nanmedian")
# ... and those that compute in the out= tensor's dtype (PyTorch's sum(x, out=o) is sum(x, dtype=o.dtype))
_OUT_DTYPE_ACCUMULATES = ("sum", "prod", "cumsum", "cumprod")


def _check_out_dtypes(name, result, out, inputs):
    """PyTorch's error for an out= tensor of another dtype than the result's, for the ops that
    allow no cast (``_EXACT_OUT``)."""
    from .tensor_api import _can_cast
    rules = _EXACT_OUT.get(name)
    if name in ("max", "min") and not isinstance(out, (tuple, list)):
        if len(inputs) == 1 and not _can_cast(result.dtype, out.dtype):     # max()/min() of all elements
            raise RuntimeError("Expected canCast( typeMetaToScalarType(self.dtype()), "
                               "typeMetaToScalarType(out.dtype())) to be true, but got false.  (Could this error "
                               "message be improved?  If so, please report an enhancement request to PyTorch.)")
        return      # (else max/min of two tensors: cast into out= as other ops are)
    if rules is None:
        return
    results, outs = (tuple(result), tuple(out)) if isinstance(out, (tuple, list)) else ((result,), (out,))
    positions = builtins.range(builtins.min(len(outs), len(results), len(rules)))     # (range, min: torch's here)
    for i in (reversed(positions) if name in _CHECK_INDICES_FIRST else positions):
        if outs[i].dtype is not results[i].dtype:
            raise RuntimeError(rules[i](results[i], outs[i], inputs[0] if inputs else results[i]))


# functions that end in PyTorch's cat: most check out='s dtype before their shapes, stack after
_CAT_NAMES = ("cat", "concat", "concatenate", "hstack", "vstack", "dstack", "column_stack", "row_stack")


def _check_cat_out(dtype, out):
    """PyTorch's cat (which the stacks call) refuses an ``out`` its inputs' type cannot be cast to
    with a TypeError of its own, not out='s usual RuntimeError."""
    from .tensor_api import _can_cast
    if dtype is not out.dtype and not _can_cast(dtype, out.dtype):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                        f"{out.dtype.tensor_type[:-6]}")


def _call_with_out(name, fn, args, kwargs, out):
    """``fn(*args, **kwargs)`` written into ``out`` (a tensor or a tuple of them), which is returned;
    refused when an argument requires grad, as PyTorch refuses it."""
    from .autograd.grad_mode import is_grad_enabled
    inputs = list(_tensors_in(list(args) + list(kwargs.values())))
    if is_grad_enabled() and builtins.any(t.requires_grad for t in inputs + list(_tensors_in([out]))):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if kwargs.get("dtype") is None and is_tensor_like(out) and (
            name in _OUT_DTYPE_ACCUMULATES
            or name == "mean" and out.dtype.is_floating_point and inputs and inputs[0].dtype.is_floating_point):
        kwargs = {**kwargs, "dtype": out.dtype}
    if name in _CAT_NAMES and inputs:                   # before cat's shape checks
        _check_cat_out(functools.reduce(_dtypes.promote, [t.dtype for t in inputs]), out)
    result = fn(*args, **kwargs)
    if name == "stack":                                 # after stack's shape checks
        _check_cat_out(result.dtype, out)
    if isinstance(result, tuple) and is_tensor_like(out):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}")
    _check_out_dtypes(name, result, out, inputs)
    if isinstance(out, (tuple, list)):
        for o, r in zip(out, result):
            _store_out(o, r, read=builtins.any(t is o for t in inputs))
        return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
    _store_out(out, result, read=builtins.any(t is out for t in inputs))
    return out


def _accepts_out(fn, name):
    """``fn`` with PyTorch's ``out=`` keyword (``_call_with_out``)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        return _call_with_out(name, fn, args, kwargs, out)
    return wrapper


for _name, _fn in list(globals().items()):
    if (callable(_fn) and not _name.startswith("_") and not isinstance(_fn, type) and not hasattr(_fn, "_takes_out")
            and _name not in ("is_tensor", "numel", "annotations", "builtins")):
        globals()[_name] = _accepts_out(_fn, _name)
