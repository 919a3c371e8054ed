"""The tensor API shared by eager tensors and tracer proxies.

Every method here is spelled in terms of table ops through ``dispatch.apply``;
a subclass only supplies storage-specific pieces (``shape``, ``dtype``,
``_scalar``, ``_assign_inplace``, conversions). So eager code, traced code
and the VJP rules of the op table all speak one API.
"""
from __future__ import annotations

import builtins
import math
from numbers import Number

import numpy as np

from ._warnings import warn_at_user_code
from .return_types import return_type
from . import dtypes
from .arg_parser import ArgumentError, bool_arg, dtype_arg, int_arg, int_list, match, parses, reparse
from .ops.dispatch import TensorLikeMeta, apply, apply_same_class, grad_fn_name
from .ops.registry import ShapeError
from .ops.rules import broadcast_shapes, not_implemented_for
from .autocast_state import autocast_excluded, float32_precision, lower_precision


class Size(tuple):
    """torch.Size: a tuple of ints with PyTorch's repr."""

    def __repr__(self) -> str:
        return f"torch.Size([{', '.join(str(int(s)) for s in self)}])"

    __str__ = __repr__

    def numel(self) -> int:
        return math.prod(self)

    def __getitem__(self, key):
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return Size(tuple(self) * n)

    __rmul__ = __mul__


T_0D_WARNING = ("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases. "
                "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp:4321.)")
MT_0D_WARNING = ("Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases. "
                 "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp:4373.)")
T_ND_WARNING = ("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it "
                "will throw an error in a future release. Consider `x.mT` to transpose batches of matrices or "
                "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor. (Triggered "
                "internally at /__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp:4314.)")


def apply_name(op_name: str) -> str:
    """The default grad_fn name of a table op (AddBackward0 for add)."""
    from .ops.registry import get
    return get(op_name).grad_fn_name({})


def _named_return(name):
    return return_type(name, ("values", "indices"))


return_types_max = _named_return("max")
return_types_min = _named_return("min")
return_types_sort = _named_return("sort")
return_types_topk = _named_return("topk")
return_types_median = _named_return("median")
return_types_nanmedian = _named_return("nanmedian")


def is_tensor_like(x) -> bool:
    return isinstance(x, TensorLikeMeta)


def _is_scalar(x) -> bool:
    return isinstance(x, (Number, np.number, np.bool_)) and not is_tensor_like(x)


def _scalar_operand(key, x) -> dict:
    """``{key: x}`` as a float attr when ``x`` is a real Python (or NumPy) number, else nothing."""
    if not _is_scalar(x) or isinstance(x, (complex, np.complexfloating)):
        return {}
    return {key: float(x)}


def _can_cast(src, dst) -> bool:
    """PyTorch's canCast for in-place results: no float into an integer or bool tensor, no
    integer into a bool tensor."""
    if src.is_floating_point:
        return dst.is_floating_point
    if src is not dtypes.bool_:
        return dst is not dtypes.bool_
    return True


_ALL_DIMS = object()        # squeeze's default (an explicit None is PyTorch's TypeError)


def norm_dim(dim: int, ndim: int) -> int:
    """``dim`` in ``range(ndim)``: PyTorch's IndexError out of range, an ``ArgumentError`` for a
    dim that is not an int (a float, a bool, None)."""
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if type(dim) is not int:
        dim = int_arg(dim)
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return int(dim) % builtins.max(ndim, 1)


def norm_dims(dim, ndim: int) -> tuple:
    """Normalise a reduction's ``dim`` argument to a sorted tuple; None means all dims."""
    if dim is None:
        return tuple(range(ndim))
    if not isinstance(dim, (tuple, list)):
        dim = (dim,)                    # (norm_dim refuses what is not an int)
    seen = set()
    for k, d in enumerate(dim):         # (PyTorch reads a bool past the first as an int)
        d = norm_dim(int(d) if k and isinstance(d, bool) else d, ndim)   # (a 0-d tensor: dims 0, -1)
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    return tuple(sorted(seen)) if ndim else ()


def _check_specified(name, x):
    if x.numel() == 0:
        from .ops.registry import EmptyReductionError
        raise EmptyReductionError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")


def reduction_dims(dim, ndim: int) -> list:
    """A reduction's dims as PyTorch reads them: None and an empty list both mean every dim."""
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    return list(norm_dims(dim, ndim))


def _shape_args(args) -> tuple:
    """Sizes given as ints or one tuple of them (an ``ArgumentError`` for any other)."""
    return int_list(args)


_OTHER = ("(Tensor other)", "(Number other)")
_TO = tuple(f"({first}bool non_blocking = False, bool copy = False, *, torch.memory_format memory_format = None)"
            for first in ("torch.device device = None, torch.dtype dtype = None, ", "torch.dtype dtype, ",
                          "Tensor tensor, "))
_CLAMP = ("(Tensor min = None, Tensor max = None)", "(Number min = None, Number max = None)")
_WHERE = ("(Tensor condition)", "(Tensor condition, Tensor input, Tensor other, *, Tensor out = None)",
          "(Tensor condition, Number self, Tensor other)", "(Tensor condition, Tensor input, Number other)",
          "(Tensor condition, Number self, Number other)")
_TENSOR_OTHER = ("(Tensor other)",)


def _method_form(name, operator, signatures=_OTHER):
    """``x.name(other)`` of an operator (``x.mul(y)`` of ``x * y``), with PyTorch's TypeError
    where the operator has no answer for ``other`` (it returns NotImplemented to Python)."""
    @parses(name, *signatures)
    def method(self, other):
        out = operator(self, other)
        if out is NotImplemented:
            raise ArgumentError(f"{name}() of {type(other).__name__}")
        return out
    method.__name__ = name
    return method


def _tensor_other(name, operator):
    """``x.name(other)`` of an op whose ``other`` PyTorch takes as a tensor only (``maximum``)."""
    def operate(self, other):
        return operator(self, other) if is_tensor_like(other) else NotImplemented
    return _method_form(name, operate, _TENSOR_OTHER)


def _number_dtype(value):
    """The dtype of a tensor PyTorch makes of a number argument (a Python float is a double)."""
    return dtypes.from_numpy(value.dtype) if isinstance(value, np.generic) else dtypes.as_dtype(type(value))


def _cast_operand(x, dt):
    """``x.to(dt)``; a 0-d float tensor cast to float16 keeps its float32 value for the ops that
    compute with it (PyTorch's float16 mul/div)."""
    out = x.to(dt)
    if dt is dtypes.float16 and x.ndim == 0 and x.dtype.is_floating_point and hasattr(out, "_wide_scalar"):
        out._wide_scalar = np.asarray(x._data, np.float32)
    return out


def wrapped_number(like, value):
    """A Python number as the 0-d tensor PyTorch's argument parser makes of it where a Tensor is
    expected (``torch.add(2, t)``): a "wrapped number", which promotes as the number would."""
    out = like._scalar(value, dtypes.scalar_dtype(value))
    out._wrapped_number = True
    return out


def result_dtype(operands, *, float_only=False):
    """PyTorch's result type of tensor-likes and Python numbers (the default float type where
    ``float_only`` and they are integers or bools)."""
    pairs = []
    for x in operands:
        if is_tensor_like(x):
            pairs.append((x.dtype, 2 if x.ndim > 0 else 0 if getattr(x, "_wrapped_number", False) else 1))
        else:
            pairs.append((dtypes.scalar_dtype(x), 0))
    dt = dtypes.result_type(pairs)
    if float_only and not dt.is_floating_point:
        dt = dtypes.default_float
    return dt


def _clamp_bounds(min, max):
    """clamp's bounds as PyTorch's parser takes them: both tensors or both numbers, where a 0-d
    tensor beside a number is its number (so it must fit self's dtype); a tensor with dimensions,
    or one that requires grad, beside a number fits no signature."""
    if not ((is_tensor_like(min) or is_tensor_like(max)) and (_is_scalar(min) or _is_scalar(max))):
        return min, max
    for b in (min, max):
        if is_tensor_like(b) and (b.ndim or b.requires_grad):     # (PyTorch's Scalar takes neither)
            raise ArgumentError("clamp(): a tensor bound beside a number")
    if all(_holds_values(b) for b in (min, max) if is_tensor_like(b)):
        return tuple(b.item() if is_tensor_like(b) else b for b in (min, max))
    # traced (no value to take): the 0-d tensor stays a tensor, promoting as the number it
    # stands for and taking no gradient, and the number becomes one beside it
    like = next(b for b in (min, max) if is_tensor_like(b))
    return tuple(_as_number_operand(b, like) for b in (min, max))


def _as_number_operand(b, like):
    """A clamp bound as a 0-d tensor that promotes as a Python number (a wrapped number)."""
    if b is None:
        return None
    t = b.detach() if is_tensor_like(b) else like._scalar(b, dtypes.scalar_dtype(b))
    t._wrapped_number = True
    return t


def promote_operands(operands, *, float_only=False, wrap_integers=True):
    """Cast tensor-likes and wrap Python scalars to PyTorch's common result dtype (an integer
    out of an integer dtype's range is taken modulo 2**bits as an arithmetic operand, and is an
    error where ``wrap_integers`` is false: where, clamp)."""
    if len(operands) == 2:            # two tensors of one dtype: nothing to promote
        a, b = operands
        if is_tensor_like(a) and is_tensor_like(b):
            dt = a.dtype
            if dt is b.dtype and (dt.is_floating_point or not float_only):
                return list(operands), dt
    like = next(x for x in operands if is_tensor_like(x))
    dt = result_dtype(operands, float_only=float_only)
    out = []
    for x in operands:
        if is_tensor_like(x):
            out.append(x if x.dtype is dt else _cast_operand(x, dt))
        else:
            out.append(like._scalar(dtypes.wrap_integer(x, dt) if wrap_integers else x, dt))
    return out, dt


def _float_or_double(dt):
    """The dtype a random kernel draws for a tensor of NumPy dtype ``dt`` (integers: double)."""
    return dt if np.dtype(dt).kind == "f" else np.float64


class TensorAPI(TensorLikeMeta):
    """Methods common to every tensor-like; see the module docstring."""

    # ---- to be provided by subclasses -------------------------------------------------
    # shape (Size), dtype (dtypes.dtype), _scalar(value, dtype), _assign_inplace(result, name)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return len(self.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self.shape)
        if not self.ndim:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return self.shape[norm_dim(dim, self.ndim)]

    def numel(self) -> int:
        return math.prod(self.shape)

    def nelement(self) -> int:
        return self.numel()

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    # ---- binary arithmetic ---------------------------------------------------------------
    def _binary(self, name, other, *, reverse=False, node_name=None, float_only=False, **attrs):
        if type(other) is type(self) and not reverse:    # two tensors of one class: often one dtype too
            dt = self.dtype
            if other.dtype is dt and (dt.is_floating_point or not float_only):
                return apply_same_class(name, [self, other], attrs, node_name)
        kind = type(other)
        if (kind is float or kind is int) and self.dtype.is_floating_point:
            # a Python number and a floating point tensor: the tensor's dtype (promote_operands's
            # answer, without its general search)
            number = self._scalar(other, self.dtype)
            a, b = (number, self) if reverse else (self, number)
        else:
            if not (is_tensor_like(other) or _is_scalar(other)):
                return NotImplemented
            a, b = (other, self) if reverse else (self, other)
            (a, b), _ = promote_operands([a, b], float_only=float_only)
        if reverse and node_name is None:
            # PyTorch runs 2 + x as x.__radd__(2) = add(x, 2): its node's edges are (x, None).
            node_name = grad_fn_name(apply_name(name), (1, 0))
        return apply(name, a, b, _name=node_name, **attrs)

    def _compare(self, name, other):
        if not (is_tensor_like(other) or _is_scalar(other)):
            return NotImplemented
        (a, b), _ = promote_operands([self, other])
        return apply(name, a, b)

    @parses("add", "(Tensor other, *, Number alpha = 1)")
    def add(self, other, alpha=1):
        return self._with_alpha("add", other, alpha)

    @parses("sub", "(Tensor other, *, Number alpha = 1)")
    def sub(self, other, alpha=1):
        return self._with_alpha("sub", other, alpha)

    def _with_alpha(self, name, other, alpha):
        """add/sub with PyTorch's ``alpha``: for two floating point tensors one op with an
        ``alpha`` attr (PyTorch's node, with an edge to each); otherwise ``other * alpha`` first."""
        if name == "sub":
            self._check_sub(other)
        if type(alpha) is int and alpha == 1:
            out = self._binary(name, other)
            if out is NotImplemented:
                raise ArgumentError(f"{name}() of {type(other).__name__}")
            return out
        if not (is_tensor_like(other) or _is_scalar(other)) or not _is_scalar(alpha):
            raise ArgumentError(f"{name}(): other or alpha")
        (a, b), dt = promote_operands([self, other])
        if isinstance(alpha, builtins.bool) and dt is not dtypes.bool_:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
        if isinstance(alpha, float) and not dt.is_floating_point:
            raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
        dtypes.check_fits(alpha, dt)
        if dt.is_floating_point:
            if dt is dtypes.float16:        # PyTorch's float16 add takes alpha in float16
                alpha = float(np.float16(alpha))
            return apply(name, a, b, alpha=float(alpha))
        if dt is dtypes.bool_:                # a bool result: b counts when alpha is nonzero
            return self._binary(name, other if alpha else False)
        return apply(name, a, b * alpha)      # (alpha times other in the result's dtype, as PyTorch's)

    def __add__(self, other): return self._binary("add", other)
    def __radd__(self, other): return self._binary("add", other, reverse=True)
    def _check_sub(self, other):
        """PyTorch's refusal of a bool operand of ``-`` (a Python bool is one too)."""
        other_dtype = other.dtype if is_tensor_like(other) else (
            dtypes.bool_ if isinstance(other, (builtins.bool, np.bool_)) else None)
        if dtypes.bool_ in (self.dtype, other_dtype):
            if self.dtype is other_dtype:
                raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                                   "Use the `^` or `logical_xor()` operator instead.")
            raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                               "trying to invert a mask, use the `~` or `logical_not()` operator instead.")

    def __sub__(self, other):
        self._check_sub(other)
        return self._binary("sub", other)

    def __rsub__(self, other):   # rsub(Tensor, Scalar): one edge
        self._check_sub(other)
        return self._binary("sub", other, reverse=True, node_name=grad_fn_name("RsubBackward1", (1,)))

    def __mul__(self, other): return self._binary("mul", other)
    def __rmul__(self, other): return self._binary("mul", other, reverse=True)
    def __truediv__(self, other): return self._binary("div", other, float_only=True)
    def __rtruediv__(self, other):   # PyTorch: self.reciprocal() * other
        if not (is_tensor_like(other) or _is_scalar(other)):
            return NotImplemented
        return self.reciprocal() * other

    # %, fmod and // (PyTorch's remainder, fmod, floor_divide); a Scalar other has no edge
    def __mod__(self, other):
        return self._binary("remainder", other, node_name=None if is_tensor_like(other)
                            else grad_fn_name("RemainderBackward0", (0,)))

    def __rmod__(self, other):
        if is_tensor_like(other) or not _is_scalar(other):
            return self._binary("remainder", other, reverse=True)
        (a, b), _ = promote_operands([other, self])
        return apply("remainder", a, b, scalar_self=True)
    remainder = _method_form("remainder", __mod__)

    def _fmod(self, other):
        return self._binary("fmod", other, node_name=None if is_tensor_like(other)
                            else grad_fn_name("FmodBackward0", (0,)))

    def __floordiv__(self, other): return self._binary("floor_divide", other)
    def __rfloordiv__(self, other): return self._binary("floor_divide", other, reverse=True)
    floor_divide = _method_form("floor_divide", __floordiv__)
    fmod = _method_form("fmod", _fmod)

    def _check_pow(self, exponent):
        """PyTorch's refusals of a number exponent: a negative integer one of an integer tensor, one
        out of the result type's range."""
        if isinstance(exponent, (int, np.integer)) and not isinstance(exponent, bool) \
                and not self.dtype.is_floating_point:
            if exponent < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
        if _is_scalar(exponent) and not isinstance(exponent, bool):
            # the exponent in the result's type, except a float's or a double's (kept as a double)
            dt = result_dtype([self, exponent])
            if dt not in (dtypes.float32, dtypes.float64):
                dtypes.check_fits(exponent, dt)

    def __pow__(self, other):   # pow(Tensor, Scalar) has one edge, pow(Tensor, Tensor) two
        self._check_pow(other)
        if is_tensor_like(other):
            return self._binary("pow", other, node_name="PowBackward1")
        # (the number itself goes to the op too: PyTorch's derivative of pow(Tensor, Scalar) is
        # written with the Scalar, grad * (exponent * self.pow(exponent - 1)))
        return self._binary("pow", other, node_name=grad_fn_name("PowBackward0", (0,)),
                            **_scalar_operand("exponent", other))

    def __rpow__(self, other):   # pow(Scalar, Tensor): one edge
        return self._binary("pow", other, reverse=True, node_name=grad_fn_name("PowBackward2", (1,)),
                            **_scalar_operand("base", other))

    def __matmul__(self, other): return matmul(self, other)
    def matmul(self, other): return matmul(self, other)
    def mm(self, mat2): return mm(self, mat2)
    def bmm(self, mat2): return bmm(self, mat2)
    def dot(self, other): return dot(self, other)
    def __rmatmul__(self, other): return matmul(other, self)
    def __neg__(self):
        if self.dtype is dtypes.bool_:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                               "to invert a mask, use the `~` or `logical_not()` operator instead.")
        return apply("neg", self)
    def __pos__(self):
        if self.dtype is dtypes.bool_:
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return self
    def __abs__(self): return self.abs()

    mul = _method_form("mul", __mul__, _TENSOR_OTHER)
    multiply = _method_form("multiply", __mul__)
    pow = _method_form("pow", __pow__, ("(Tensor exponent)", "(Number exponent)"))
    true_divide = _method_form("true_divide", __truediv__)

    @parses("div", "(Tensor other, *, str? rounding_mode = None)")
    def div(self, other, *, rounding_mode=None):
        if not (is_tensor_like(other) or _is_scalar(other)):
            raise ArgumentError(f"div() of {type(other).__name__}")
        if rounding_mode is None:
            return self / other
        if rounding_mode not in ("trunc", "floor"):
            raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                               f"'{rounding_mode}'")
        if not (is_tensor_like(other) or _is_scalar(other)):
            raise TypeError(f"div(): argument 'other' must be Tensor or Number, not {type(other).__name__}")
        (a, b), _ = promote_operands([self, other])
        return apply("div_rounding", a, b, mode=rounding_mode)

    divide = div
    neg = __neg__
    negative = __neg__

    atan2 = _tensor_other("atan2", lambda self, other: self._binary("atan2", other, float_only=True))
    arctan2 = _tensor_other("arctan2", lambda self, other: self._binary("atan2", other, float_only=True))

    maximum = _tensor_other("maximum", lambda self, other: self._binary("maximum", other))
    minimum = _tensor_other("minimum", lambda self, other: self._binary("minimum", other))

    # comparisons (no gradient)
    def __eq__(self, other):
        if isinstance(other, np.ndarray):     # (PyTorch compares with an array as with a tensor)
            from .factories import as_tensor
            other = as_tensor(other)
        return self._compare("eq", other)
    def __ne__(self, other): return self._compare("ne", other)
    def __lt__(self, other): return self._compare("lt", other)
    def __le__(self, other): return self._compare("le", other)
    def __gt__(self, other): return self._compare("gt", other)
    def __ge__(self, other): return self._compare("ge", other)
    eq = _method_form("eq", __eq__)
    ne = _method_form("ne", __ne__)
    lt = _method_form("lt", __lt__)
    le = _method_form("le", __le__)
    gt = _method_form("gt", __gt__)
    ge = _method_form("ge", __ge__)
    __hash__ = object.__hash__

    def _logical(self, name, other):
        a = self if self.dtype is dtypes.bool_ else self.ne(0)
        b = other if (is_tensor_like(other) and other.dtype is dtypes.bool_) else (
            other.ne(0) if is_tensor_like(other) else self._scalar(bool(other), dtypes.bool_))
        return apply(name, a, b)

    logical_and = _tensor_other("logical_and", lambda self, other: self._logical("logical_and", other))
    logical_or = _tensor_other("logical_or", lambda self, other: self._logical("logical_or", other))
    logical_xor = _tensor_other("logical_xor", lambda self, other: self._logical("ne", other))

    def logical_not(self):
        return apply("logical_not", self if self.dtype is dtypes.bool_ else self.ne(0))

    # bitwise ops of integer and bool tensors (on bool: the logical ops, which kernels fuse)
    _BOOL_BITWISE = {"bitwise_and": "logical_and", "bitwise_or": "logical_or", "bitwise_xor": "ne"}

    def _bitwise(self, name, other, reverse=False):
        if not (is_tensor_like(other) or _is_scalar(other)):
            return NotImplemented
        a, b = (other, self) if reverse else (self, other)
        (a, b), dt = promote_operands([a, b])
        if dt.is_floating_point:
            kernel = {"bitwise_left_shift": "lshift", "bitwise_right_shift": "rshift"}.get(name, name)
            raise NotImplementedError(f'"{kernel}_cpu" not implemented for \'{dt.tensor_type[:-6]}\'')
        if dt is dtypes.bool_ and name in self._BOOL_BITWISE:
            return apply(self._BOOL_BITWISE[name], a, b)
        return apply(name, a, b)

    def __and__(self, other): return self._bitwise("bitwise_and", other)
    def __or__(self, other): return self._bitwise("bitwise_or", other)
    def __xor__(self, other): return self._bitwise("bitwise_xor", other)
    def __lshift__(self, other): return self._bitwise("bitwise_left_shift", other)
    def __rshift__(self, other): return self._bitwise("bitwise_right_shift", other)
    bitwise_and = _method_form("bitwise_and", __and__)
    bitwise_or = _method_form("bitwise_or", __or__)
    bitwise_xor = _method_form("bitwise_xor", __xor__)
    bitwise_left_shift = _method_form("bitwise_left_shift", __lshift__)
    bitwise_right_shift = _method_form("bitwise_right_shift", __rshift__)
    def __rand__(self, other): return self._bitwise("bitwise_and", other, reverse=True)
    def __ror__(self, other): return self._bitwise("bitwise_or", other, reverse=True)
    def __rxor__(self, other): return self._bitwise("bitwise_xor", other, reverse=True)
    def __rlshift__(self, other): return self._bitwise("bitwise_left_shift", other, reverse=True)
    def __rrshift__(self, other): return self._bitwise("bitwise_right_shift", other, reverse=True)

    def bitwise_not(self):
        if self.dtype is dtypes.bool_:
            return self.logical_not()
        if self.dtype.is_floating_point:
            raise NotImplementedError(f'"bitwise_not_cpu" not implemented for \'{self.dtype.tensor_type[:-6]}\'')
        return apply("bitwise_not", self)

    def __invert__(self):
        if self.dtype.is_floating_point:
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        return self.bitwise_not()

    # ---- unary ---------------------------------------------------------------------------
    def _unary(self, name):
        x = self if self.dtype.is_floating_point else self.to(dtypes.default_float)
        return apply(name, x)

    def exp(self): return self._unary("exp")
    def log(self): return self._unary("log")
    def log2(self): return self._unary("log2")
    def log10(self): return self._unary("log10")
    def exp2(self): return self._unary("exp2")
    def sqrt(self): return self._unary("sqrt")
    def rsqrt(self): return self._unary("rsqrt")
    def tan(self): return self._unary("tan")
    def atan(self): return self._unary("atan")
    def asin(self): return self._unary("asin")
    def acos(self): return self._unary("acos")
    def sinh(self): return self._unary("sinh")
    def cosh(self): return self._unary("cosh")
    def asinh(self): return self._unary("asinh")
    def acosh(self): return self._unary("acosh")
    def atanh(self): return self._unary("atanh")
    arctan, arcsin, arccos, arcsinh, arccosh, arctanh = atan, asin, acos, asinh, acosh, atanh
    def log1p(self): return self._unary("log1p")
    def expm1(self): return self._unary("expm1")
    def erf(self): return self._unary("erf")
    def erfinv(self): return self._unary("erfinv")
    @float32_precision
    def inverse(self): return apply("linalg_inv", self)
    def det(self): return apply("linalg_det", self)

    def logdet(self):
        """log(det): NaN for a negative determinant, -inf for a zero one (PyTorch's)."""
        sign, logabs = apply("linalg_slogdet", self)
        return where(sign < 0, math.nan, where(sign == 0, -math.inf, logabs))

    def slogdet(self):
        from .linalg import _Slogdet_legacy
        return _Slogdet_legacy(*apply("linalg_slogdet", self))

    @float32_precision
    def pinverse(self, rcond=1e-15):
        return apply("linalg_pinv", self, atol=None, rtol=float(rcond))
    def tanh(self): return self._unary("tanh")
    def sigmoid(self): return self._unary("sigmoid")
    def sin(self): return self._unary("sin")
    def cos(self): return self._unary("cos")
    def relu(self):
        if self.dtype is dtypes.bool_:
            raise RuntimeError("Boolean inputs not supported for relu")
        return apply("relu", self)
    def abs(self):
        if self.dtype is dtypes.bool_:
            raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")
        return apply("abs", self)
    def sign(self): return apply("sign", self)
    def floor(self): return apply("floor", self._not_bool("floor_vml_cpu"))
    def ceil(self): return apply("ceil", self._not_bool("ceil_vml_cpu"))
    def trunc(self): return apply("trunc", self._not_bool("trunc_vml_cpu"))
    fix = trunc

    def _not_bool(self, kernel):
        """PyTorch's refusal of a rounding op on a bool tensor."""
        if self.dtype is dtypes.bool_:
            raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
        return self

    def frac(self):
        if not self.dtype.is_floating_point:
            raise NotImplementedError(f'"frac_cpu" not implemented for \'{self.dtype.tensor_type[:-6]}\'')
        return apply("frac", self)

    def round(self, decimals=0):
        """Half to even; with ``decimals``, rounded to that many decimal places as PyTorch does."""
        if decimals == 0:
            return apply("round", self._not_bool("round_vml_cpu"))
        if not self.dtype.is_floating_point:
            raise NotImplementedError(f'"round_cpu" not implemented for \'{self.dtype.tensor_type[:-6]}\'')
        return apply("round", self, decimals=int(decimals))
    def square(self): return self ** 2

    def reciprocal(self):
        (one, x), _ = promote_operands([1.0, self], float_only=True)
        return apply("div", one, x, _name=grad_fn_name("ReciprocalBackward0", (1,)))

    @parses("clamp", *_CLAMP)
    def clamp(self, min=None, max=None):
        return self._clamp(min, max, "ClampBackward0", "ClampBackward1")

    def _clamp(self, min, max, tensor_node, scalar_node):
        """clamp, clamp_min or clamp_max, whose nodes PyTorch names apart (ClampMinBackward1 has
        edges to self and min only)."""
        for bound in (min, max):
            if not (bound is None or is_tensor_like(bound) or _is_scalar(bound)):
                raise ArgumentError(f"clamp() bound of {type(bound).__name__}")
        min, max = _clamp_bounds(min, max)
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        if is_tensor_like(min) or is_tensor_like(max):
            given = [b for b in (min, max) if b is not None]
            ops, dt = promote_operands([self, *given])
            if dt is dtypes.bool_ and len(given) == 2:
                raise not_implemented_for("clamp_cpu", dt)
            x, bounds = ops[0], iter(ops[1:])

            def no_bound(sign):      # a constant that bounds nothing (and needs no gradient)
                if dt.is_floating_point:
                    return x._scalar(sign * float("inf"), dt)
                info = np.iinfo(dt.np) if dt.np != np.bool_ else None
                return x._scalar((info.max if sign > 0 else info.min) if info else sign > 0, dt)
            lo = next(bounds) if min is not None else no_bound(-1)
            hi = next(bounds) if max is not None else no_bound(1)
            return apply("clamp_tensor", x, lo, hi, _name=tensor_node)
        x = self
        if not x.dtype.is_floating_point and builtins.any(isinstance(b, float) for b in (min, max)):
            x = x.to(dtypes.default_float)   # PyTorch: the result type of the input and the bounds
        elif x.dtype is dtypes.bool_:
            if builtins.all(isinstance(b, bool) for b in (min, max) if b is not None):
                kernel = "clamp_scalar_cpu" if None not in (min, max) else (
                    "clamp_min_scalar_cpu" if max is None else "clamp_max_scalar_cpu")
                raise not_implemented_for(kernel, dtypes.bool_)
            x = x.to(dtypes.int64)           # bool and int bounds: int64, as PyTorch's
        for bound in (min, max):
            if bound is not None:
                dtypes.check_fits(bound, x.dtype)     # PyTorch's error for a bound the dtype cannot hold
                x._scalar(bound, x.dtype)
        min, max = (None if b is None else float(dtypes.unsigned_wrap(b, x.dtype)) for b in (min, max))
        return apply("clamp", x, min=min, max=max, _name=scalar_node)

    @parses("clip", *_CLAMP)
    def clip(self, min=None, max=None): return self.clamp(min, max)

    @parses("clamp_min", "(Tensor min)", "(Number min)")
    def clamp_min(self, min):
        return self._clamp(min, None, grad_fn_name("ClampMinBackward1", (0, 1)), "ClampMinBackward0")

    @parses("clamp_max", "(Tensor max)", "(Number max)")
    def clamp_max(self, max):
        return self._clamp(None, max, grad_fn_name("ClampMaxBackward1", (0, 2)), "ClampMaxBackward0")

    def to(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], dtypes.dtype):     # x.to(dtype): no parse
            dt, device = args[0], None
        else:
            k, given = match("to", _TO, args, kwargs)
            if k == 2:                          # another tensor's dtype and device (a number's dtype)
                other = given["tensor"]
                dt, device = (other.dtype, other.device) if is_tensor_like(other) else (_number_dtype(other), None)
            else:
                dt, device = given.get("dtype"), given.get("device")
        out = self
        if device is not None:
            out = out._to_device(device)
        if dt is not None and dtypes.as_dtype(dt) is not out.dtype:
            out = apply("cast", out, dtype=dtypes.as_dtype(dt).name, _name="ToCopyBackward0")
        return out

    def _to_device(self, device):
        return self

    def type_as(self, other): return self.to(other.dtype)
    def float(self): return self.to(dtypes.float32)
    def double(self): return self.to(dtypes.float64)
    def long(self): return self.to(dtypes.int64)
    def int(self): return self.to(dtypes.int32)
    def short(self): return self.to(dtypes.int16)
    def char(self): return self.to(dtypes.int8)
    def byte(self): return self.to(dtypes.uint8)
    def half(self): return self.to(dtypes.float16)
    def bool(self): return self.to(dtypes.bool_)

    # ---- reductions ----------------------------------------------------------------------
    @parses("sum", "(*, torch.dtype dtype = None)", "(tuple of ints[1]? dim, bool keepdim = False, *, torch.dtype dtype = None)")
    def sum(self, dim=None, keepdim=False, dtype=None):
        x = self.to(dtype_arg(dtype)) if dtype is not None else self
        if dtype is None and not x.dtype.is_floating_point:
            x = x.to(dtypes.int64)
        return _in_dtype(apply("sum", x, dims=reduction_dims(dim, self.ndim), keepdim=bool_arg(keepdim),
                               _name="SumBackward0" if dim is None else "SumBackward1"), dtype)

    def _float_reduction_input(self, what, dtype=None):
        """Self as mean-like reductions take it: in ``dtype`` where one is given (which must be
        floating point), else self, which must be."""
        if dtype is not None:
            dt = dtype_arg(dtype)
            if not dt.is_floating_point:
                raise RuntimeError(f"{what}(): could not infer output dtype. Optional dtype must be either a "
                                   f"floating point or complex dtype. Got: {dt.scalar_type}")
            return self.to(dt)
        if not self.dtype.is_floating_point:
            raise RuntimeError(f"{what}(): could not infer output dtype. Input dtype must be either a "
                               f"floating point or complex dtype. Got: {self.dtype.tensor_type[:-6]}")
        return self

    def _var_std_input(self):
        if not self.dtype.is_floating_point:
            raise RuntimeError("std and var only support floating point and complex dtypes")
        return self

    @parses("mean", "(*, torch.dtype dtype = None)", "(tuple of ints[1]? dim, bool keepdim = False, *, torch.dtype dtype = None)")
    def mean(self, dim=None, keepdim=False, dtype=None):
        x = self._float_reduction_input("mean", dtype)
        return apply("mean", x, dims=reduction_dims(dim, self.ndim), keepdim=bool_arg(keepdim),
                     _name="MeanBackward0" if dim is None else "MeanBackward1")

    @float32_precision
    @parses("prod", "(*, torch.dtype dtype = None)", "(int dim, bool keepdim = False, *, torch.dtype dtype = None)")
    def prod(self, dim=None, keepdim=False, dtype=None):
        if dtype is not None:
            x = self.to(dtype_arg(dtype))
        else:
            x = self if self.dtype.is_floating_point else self.to(dtypes.int64)
        dims = reduction_dims(None if dim is None else int_arg(dim), self.ndim)
        return apply("prod", x, dims=dims, keepdim=bool_arg(keepdim),
                     _name="ProdBackward0" if dim is None else "ProdBackward1")

    @parses("amax", "(tuple of ints[1] dim = (), bool keepdim = False)")
    def amax(self, dim=(), keepdim=False):
        return apply("amax", self, dims=self._extremum_dims("amax", dim), keepdim=bool_arg(keepdim))

    @parses("amin", "(tuple of ints[1] dim = (), bool keepdim = False)")
    def amin(self, dim=(), keepdim=False):
        return apply("amin", self, dims=self._extremum_dims("amin", dim), keepdim=bool_arg(keepdim))

    def _extremum_dims(self, name, dim):
        if self.numel() == 0 and (dim is None or isinstance(dim, (tuple, list)) and not dim):
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                               "the reduction dim with the 'dim' argument.")
        # checked here, not in the op's shape rule: the compiler's own amax over an empty dim
        # (logsumexp's shift) is fine, the user's is PyTorch's IndexError, naming the dim as given
        # and raised before a repeated dim is
        if self.numel() == 0 and self.ndim:
            from .ops.registry import EmptyReductionError
            for d in (dim if isinstance(dim, (tuple, list)) else (dim,)):
                if self.shape[norm_dim(d, self.ndim)] == 0:
                    raise EmptyReductionError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        return reduction_dims(dim, self.ndim)

    def _extremum(self, kind, dim, keepdim):
        if is_tensor_like(dim):
            return self.maximum(dim) if kind == "max" else self.minimum(dim)
        if dim is None:
            if self.numel() == 0:
                raise RuntimeError(f"{kind}(): Expected reduction dim to be specified for input.numel() == 0. "
                                   "Specify the reduction dim with the 'dim' argument.")
            return apply("amax" if kind == "max" else "amin", self, dims=list(range(self.ndim)),
                         keepdim=False, nan_shares=True, _name=f"{kind.capitalize()}Backward1")
        d = norm_dim(dim, self.ndim)
        values, indices = apply(f"{kind}_dim", self, dim=d, keepdim=bool_arg(keepdim),
                                _name=f"{kind.capitalize()}Backward0")
        cls = return_types_max if kind == "max" else return_types_min
        return cls(values, indices)

    @parses("max", "()", "(Tensor other)", "(int dim, bool keepdim = False)")
    def max(self, dim=None, keepdim=False): return self._extremum("max", dim, keepdim)

    @parses("min", "()", "(Tensor other)", "(int dim, bool keepdim = False)")
    def min(self, dim=None, keepdim=False): return self._extremum("min", dim, keepdim)

    @parses("argmax", "(int dim = None, bool keepdim = False)")
    def argmax(self, dim=None, keepdim=False):
        dim = None if dim is None else int_arg(dim)
        if self.dtype is dtypes.bool_:
            raise RuntimeError("argmax(): does not support bool input")
        if dim is None:
            _check_specified("argmax", self)
            flat = apply("argmax", self.reshape(-1), dim=0, keepdim=False)
            return flat.reshape(*[1] * self.ndim) if bool_arg(keepdim) else flat
        return apply("argmax", self, dim=norm_dim(dim, self.ndim), keepdim=bool_arg(keepdim))

    @parses("argmin", "(int dim = None, bool keepdim = False)")
    def argmin(self, dim=None, keepdim=False):
        dim = None if dim is None else int_arg(dim)
        if self.dtype is dtypes.bool_:
            raise RuntimeError("argmin(): does not support bool input")
        if dim is None:
            _check_specified("argmin", self)
            flat = apply("argmin", self.reshape(-1), dim=0, keepdim=False)
            return flat.reshape(*[1] * self.ndim) if bool_arg(keepdim) else flat
        return apply("argmin", self, dim=norm_dim(dim, self.ndim), keepdim=bool_arg(keepdim))

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """torch.norm: a matrix norm for a string ``p`` ('fro' only over more than two dims), else a
        vector norm (PyTorch's torch.functional.norm, whose errors these are)."""
        from .linalg import matrix_norm, vector_norm
        if isinstance(p, str):
            if p != "fro" or not (dim is None or isinstance(dim, int) or len(dim) <= 2):
                return matrix_norm(self, p, list(range(self.ndim)) if dim is None else dim, keepdim, dtype=dtype)
            p = 2
        return vector_norm(self, 2.0 if p is None else p, dim, keepdim, dtype=dtype)

    @parses("var", "(tuple of ints[1]? dim, bool unbiased = True, bool keepdim = False)",
            "(tuple of ints[1] dim = None, *, Number correction = None, bool keepdim = False)", "(bool unbiased = True)")
    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        correction = _correction(unbiased, correction)
        x = self._var_std_input()
        return apply("var", x, dims=reduction_dims(dim, self.ndim), correction=correction,
                     keepdim=bool_arg(keepdim), _name="VarBackward0")

    @parses("std", "(tuple of ints[1]? dim, bool unbiased = True, bool keepdim = False)",
            "(tuple of ints[1] dim = None, *, Number correction = None, bool keepdim = False)", "(bool unbiased = True)")
    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        correction = _correction(unbiased, correction)
        x = self._var_std_input()
        return apply("std", x, dims=reduction_dims(dim, self.ndim), correction=correction,
                     keepdim=bool_arg(keepdim), _name="StdBackward0")

    @parses("logsumexp", "(tuple of ints[1] dim, bool keepdim = False)")
    def logsumexp(self, dim, keepdim=False):
        x = self if self.dtype.is_floating_point else self.to(dtypes.default_float)
        if dim is None:
            raise ArgumentError("logsumexp's dim is None")
        return apply("logsumexp", x, dims=reduction_dims(dim, self.ndim), keepdim=bool_arg(keepdim))

    @parses("sort", "(*, bool? stable, int dim = -1, bool descending = False)", "(int dim = -1, bool descending = False)")
    def sort(self, dim=-1, descending=False, stable=False):
        """``stable=False`` (the default) orders equal elements as PyTorch's CPU ``std::sort`` does
        (``ops/reduce.py``: a stable sort for rows of more than 16K elements)."""
        values, indices = apply("sort", self, dim=norm_dim(dim, max(self.ndim, 1)),
                                descending=bool_arg(descending), stable=bool(stable is not None and bool_arg(stable)))
        return return_types_sort(values, indices)

    @parses("argsort", "(*, bool? stable, int dim = -1, bool descending = False)", "(int dim = -1, bool descending = False)")
    def argsort(self, dim=-1, descending=False, stable=False):
        return self.detach().sort(dim, descending, stable=stable).indices

    @parses("topk", "(int k, int dim = -1, bool largest = True, bool sorted = True)")
    def topk(self, k, dim=-1, largest=True, sorted=True):
        values, indices = apply("topk", self, k=int_arg(k), dim=norm_dim(dim, max(self.ndim, 1)),
                                largest=bool_arg(largest), sorted=bool_arg(sorted))
        return return_types_topk(values, indices)

    @parses("cumsum", "(int dim, *, torch.dtype dtype = None)")
    def cumsum(self, dim, dtype=None):
        x = self._cumulative_input("cumsum", dtype)
        return _in_dtype(apply("cumsum", x, dim=norm_dim(dim, max(self.ndim, 1)), reverse=False), dtype)

    def _cumulative_input(self, what, dtype):
        """Self in the ``dtype=`` asked for; PyTorch has no bool cumulative kernel (which a 0-d or
        empty tensor does not run)."""
        if dtype is None:
            return self
        dt = dtype_arg(dtype)
        if dt is dtypes.bool_ and self.ndim and self.numel():
            raise not_implemented_for(f"{what}_out_cpu", dt)
        return self.to(dt)

    @parses("cumprod", "(int dim, *, torch.dtype dtype = None)")
    def cumprod(self, dim, dtype=None):
        x = self._cumulative_input("cumprod", dtype)
        return _in_dtype(apply("cumprod", x, dim=norm_dim(dim, max(self.ndim, 1))), dtype)

    @parses("softmax", "(int dim, torch.dtype dtype = None)")
    def softmax(self, dim, dtype=None):
        return self._softmax("softmax", dim, dtype)

    @parses("log_softmax", "(int dim, torch.dtype dtype = None)")
    def log_softmax(self, dim, dtype=None):
        return self._softmax("log_softmax", dim, dtype)

    def _softmax(self, kernel, dim, dtype):
        """softmax/log_softmax in ``dtype`` (else self's); PyTorch has no integer or bool kernel
        (its message names the last-dim kernel for the last dim), and runs none for no elements."""
        d = norm_dim(dim, self.ndim)
        x = self.to(dtype_arg(dtype)) if dtype is not None else self
        if not x.dtype.is_floating_point:
            if x.numel() == 0:
                return x.clone()
            lastdim = "_lastdim" if d == max(self.ndim, 1) - 1 else ""
            raise NotImplementedError(f'"{kernel}{lastdim}_kernel_impl" not implemented for '
                                      f"'{x.dtype.scalar_type}'")
        return apply(kernel, x, dim=d)

    def _unary_float(self):
        return self if self.dtype.is_floating_point else self.to(dtypes.default_float)

    # ---- shape -------------------------------------------------------------------------
    def reshape(self, *shape):
        try:
            shape = _infer_shape(_shape_args(shape), self.numel(), self.shape)
        except ArgumentError:
            reparse("reshape", ("(tuple of ints shape)",), shape)
            raise
        return apply_same_class("reshape", [self], {"shape": list(shape)}, "ViewBackward0")

    def view(self, *shape):
        if len(shape) == 1 and (isinstance(shape[0], dtypes.dtype) or shape[0] in (float, int, bool)):
            if not _holds_values(self):
                from .ir.errors import TraceError
                raise TraceError("view(dtype) reinterprets a tensor's memory, which @gradc.compile does not model; "
                                   "call it outside the compiled function")
            return self._view_as_dtype(dtypes.as_dtype(shape[0]))
        try:
            _shape_args(shape)
        except ArgumentError:
            reparse("view", ("(torch.dtype dtype)", "(tuple of ints size)"), shape)
            raise
        data = getattr(self, "_data", None)
        if (isinstance(data, np.ndarray) and not data.flags.c_contiguous and data.size
                and getattr(self, "_base", None) is not None):
            # PyTorch's view never copies: a view's strides must allow the new shape.  (Only views
            # are checked: their strides are PyTorch's, while an op's result may be laid out
            # otherwise by NumPy, e.g. a reduction over a permuted tensor.)
            try:
                np.reshape(data, _infer_shape(_shape_args(shape), self.numel(), self.shape), copy=False)
            except ValueError:
                raise RuntimeError(_VIEW_INCOMPATIBLE) from None
        if not _holds_values(self):           # traced: the eager layout is known (ir.tracer)
            from .ir.tracer import _view_strides
            target = {"shape": list(_infer_shape(_shape_args(shape), self.numel(), self.shape))}
            if _view_strides(self, "reshape", target) is False:
                raise RuntimeError(_VIEW_INCOMPATIBLE)
        return self.reshape(*shape)

    def view_as(self, other): return self.view(_tensor_argument("view_as", other, 1).shape)
    def reshape_as(self, other): return self.reshape(other.shape)

    @parses("flatten", "(int start_dim = 0, int end_dim = -1)")
    def flatten(self, start_dim=0, end_dim=-1):
        s, e = norm_dim(start_dim, self.ndim), norm_dim(end_dim, self.ndim)
        if self.ndim == 0:
            return self.reshape(1)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return self
        shape = tuple(self.shape[:s]) + (math.prod(self.shape[s:e + 1]),) + tuple(self.shape[e + 1:])
        return self.reshape(shape)

    @parses("squeeze", "()", "(int dim)", "(tuple of ints dim)")
    def squeeze(self, dim=_ALL_DIMS):
        if dim is _ALL_DIMS:
            shape = [s for s in self.shape if s != 1]
            name = "SqueezeBackward0"
        else:
            dims = norm_dims(dim, self.ndim) if dim is not None else int_arg(dim)
            shape = [s for i, s in enumerate(self.shape) if not (i in dims and s == 1)]
            name = "SqueezeBackward1" if isinstance(dim, int) else "SqueezeBackward2"
        return apply_same_class("reshape", [self], {"shape": shape}, name)

    @parses("unsqueeze", "(int dim)")
    def unsqueeze(self, dim):
        d = norm_dim(dim, self.ndim + 1)
        shape = list(self.shape)
        shape.insert(d, 1)
        return apply_same_class("reshape", [self], {"shape": shape}, "UnsqueezeBackward0")

    @parses("transpose", "(int dim0, int dim1)")
    def transpose(self, dim0, dim1):
        d0, d1 = norm_dim(dim0, self.ndim), norm_dim(dim1, self.ndim)
        if self.ndim == 0:
            return apply_same_class("permute", [self], {"dims": []}, "TransposeBackward0")
        perm = list(range(self.ndim))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return apply_same_class("permute", [self], {"dims": perm}, "TransposeBackward0")

    @parses("swapaxes", "(int axis0, int axis1)")
    def swapaxes(self, axis0, axis1): return self.transpose(axis0, axis1)

    def t(self):
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return apply_same_class("permute", [self], {"dims": list(reversed(range(self.ndim)))}, "TBackward0")

    @property
    def T(self):
        if self.ndim == 0:
            warn_at_user_code(T_0D_WARNING, UserWarning)
        elif self.ndim > 2:
            warn_at_user_code(T_ND_WARNING, UserWarning)
        return apply_same_class("permute", [self], {"dims": list(reversed(range(self.ndim)))}, "PermuteBackward0")

    @property
    def mT(self):
        if self.ndim == 0:
            warn_at_user_code(MT_0D_WARNING, UserWarning)
            return self
        if self.ndim < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return self.transpose(-2, -1)

    @parses("permute", "(tuple of ints dims)")
    def permute(self, *dims):
        dims = _shape_args(dims)
        if len(dims) != self.ndim:
            raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                               f"the length of the desired ordering of dimensions i.e. input.dim() = {self.ndim} "
                               f"is not equal to len(dims) = {len(dims)}")
        perm = [norm_dim(d, self.ndim) for d in dims]
        if sorted(perm) != list(range(self.ndim)):
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        return apply_same_class("permute", [self], {"dims": perm})

    @parses("expand", "(tuple of ints size, *, bool implicit = False)")
    def expand(self, *sizes):
        sizes = _shape_args(sizes)
        have = tuple(self.shape)        # (read once: a property)
        if len(sizes) < len(have):
            raise RuntimeError(f"expand(torch.{self.dtype.tensor_type}{{{list(have)}}}, size={list(sizes)}): "
                               "the number of sizes provided "
                               f"({len(sizes)}) must be greater or equal to the number of dimensions in the tensor ({len(have)})")
        lead = len(sizes) - len(have)
        shape = list(sizes)
        for i in reversed(range(len(sizes))):       # (PyTorch checks from the last dimension)
            s, own = sizes[i], have[i - lead] if i >= lead else None
            if s == -1:
                if own is None:
                    raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                                       f"non-existing dimension {i}")
                shape[i] = own
            elif own is not None and own != 1 and own != s:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({own}) at "
                                   f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                                   f"Tensor sizes: {list(have)}")
        return apply_same_class("expand", [self], {"shape": shape})

    def expand_as(self, other): return self.expand(_tensor_argument("expand_as", other, 1).shape)

    def broadcast_to(self, shape): return self.expand(*shape)

    def sum_to_size(self, *shape):
        """Like PyTorch: sum(dims, keepdim=True), then a view when leading dims go away."""
        shape = _shape_args(shape)
        own = tuple(self.shape)
        lead = len(own) - len(shape)
        if lead < 0 or builtins.any(s not in (1, own[lead + i]) for i, s in enumerate(shape)):
            raise RuntimeError(f"size {{{', '.join(map(str, shape))}}} is not expandable to size "
                               f"{{{', '.join(map(str, own))}}}.")
        dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and own[lead + i] != 1]
        out = self
        if dims:
            if not out.dtype.is_floating_point:     # an integer or bool sum is int64, as PyTorch's
                out = out.to(dtypes.int64)
            out = apply("sum", out, dims=dims, keepdim=True, _name="SumBackward1")
        if lead:
            out = out.view(shape)
        return out

    def contiguous(self):
        """Itself when row-major, else a copy (a traced tensor knows its eager layout)."""
        from .ir.tracer import is_contiguous
        return self if is_contiguous(self) else apply("clone", self)

    def clone(self):
        return apply("clone", self)

    def detach(self):
        return apply("detach", self)

    # ---- indexing ------------------------------------------------------------------------
    def __getitem__(self, key):
        return getitem(self, key)

    def __setitem__(self, key, value):
        if not (is_tensor_like(value) or _is_scalar(value)):
            raise TypeError(f"can't assign a {'numpy.ndarray' if isinstance(value, np.ndarray) else type(value).__name__} "
                            f"to a torch.{self.dtype.tensor_type}")
        self._check_setitem_leaf(key)
        masked = self._mask_assignment(key, value)
        if masked is not None:
            self._assign_inplace(masked)
            return
        original_key = key
        key, tensors = encode_index(key, self)
        value_is_tensor = is_tensor_like(value)
        if value_is_tensor and _holds_values(value) and _holds_values(self):
            _check_no_partial_overlap(self, key, tensors, value)
        if not value_is_tensor:
            value = self._scalar(value, self.dtype)
        elif value.dtype is not self.dtype:
            value = value.to(self.dtype)
        # PyTorch's node: CopySlices when it writes through a view (an int, None or partial slice),
        # else index_put_ (IndexPutBackward0), fill_ (FillBackward3) or copy_ (CopyBackwards)
        via = self._setitem_view_node(key)
        if via is not None:
            self._check_view_write(value, via)
            name = "CopySlices"
        elif tensors:
            name = "IndexPutBackward0"
        else:
            name = "CopyBackwards" if value_is_tensor and value.ndim else "FillBackward3"
        try:
            out = apply("index_put", self, value, *tensors, key=key, _name=name)
        except (RuntimeError, IndexError, ValueError):
            if _holds_values(self):
                self._raise_setitem_error(original_key, value, advanced=bool(tensors))
            raise
        self._assign_inplace(out)

    def _raise_setitem_error(self, key, value, advanced):
        """PyTorch's error for ``self[key] = value`` that index_put refused: the key's own
        (getitem's: an index out of bounds, too many indices, a mask of another shape), else
        the value's: expanded to the indexed part (after dropping its leading size-1 dims) for
        a basic key, broadcast to it for an advanced one."""
        target = getitem(self.detach(), key)
        shape = list(value.shape)
        while len(shape) > target.ndim and shape[0] == 1:
            shape.pop(0)
        if not advanced:
            value.detach().reshape(shape).expand(*target.shape)
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(target.shape)}")

    def _mask_assignment(self, key, value):
        """Under @gradc.compile, ``x[mask] = v`` with a bool mask over x's leading dims and a value
        that broadcasts over the rest is ``where(mask, v, x)``: the same result without the
        data-dependent count of True elements that index_put's value shape needs."""
        if _holds_values(self):
            return None
        mask = key[0] if isinstance(key, tuple) and len(key) == 1 else key
        if not (is_tensor_like(mask) and mask.dtype is dtypes.bool_ and 0 < mask.ndim <= self.ndim
                and tuple(mask.shape) == tuple(self.shape[:mask.ndim])):
            return None
        rest = tuple(self.shape[mask.ndim:])
        if is_tensor_like(value):
            if value.ndim > len(rest) or tuple(value.shape) != tuple(rest[len(rest) - value.ndim:]) and any(
                    v not in (1, r) for v, r in zip(value.shape, rest[len(rest) - value.ndim:])):
                return None
            value = value if value.dtype is self.dtype else value.to(self.dtype)
        else:
            value = self._scalar(value, self.dtype)
        return where(mask.reshape(*mask.shape, *([1] * len(rest))), value, self)

    def as_strided(self, size, stride, storage_offset=None):
        """The elements of the storage at ``storage_offset + sum(i_k * stride_k)``, as PyTorch's
        (the storage is the base tensor's memory, which must be contiguous): an index of the base,
        a view of its memory eagerly, with AsStridedBackward0 history."""
        root = self._base if getattr(self, "_base", None) is not None else self
        flat = root.reshape(-1)
        offset = self.storage_offset() if storage_offset is None and _holds_values(self) else int(storage_offset or 0)
        size, stride = [int(n) for n in size], [int(n) for n in stride]
        if len(size) != len(stride):
            raise RuntimeError(f"mismatch in length of strides and shape")
        positions = np.full(size, offset, dtype=np.int64)
        for k, (n, st) in enumerate(zip(size, stride)):
            positions = positions + (np.arange(n, dtype=np.int64) * st).reshape([n] + [1] * (len(size) - k - 1))
        from .storage import check_storage_bounds
        check_storage_bounds(size, stride, offset, self.dtype.itemsize, root.numel() * self.dtype.itemsize)
        from . import factories
        index = factories.tensor(positions, dtype=dtypes.int64)
        key = [["tensor", 0]]
        out = apply("index", flat, index, key=key, _name="AsStridedBackward0")
        flat_data = getattr(flat, "_data", None)
        if _holds_values(self) and isinstance(flat_data, np.ndarray) and root._data.flags.c_contiguous:
            from .tensor import view_as_index_of
            strided = np.lib.stride_tricks.as_strided(
                flat_data[offset:], shape=size, strides=[st * flat_data.itemsize for st in stride],
                # (PyTorch refuses writes only where a zero stride repeats an element)
                writeable=bool(flat_data.flags.writeable and not any(st == 0 and n > 1 for n, st in zip(size, stride))))
            view_as_index_of(out, flat, strided, key, [index])
        return out

    def _check_setitem_leaf(self, key):
        """A leaf that requires grad reports 'a view of a leaf Variable' when PyTorch would write
        through a view."""
        if not (self.requires_grad and self.is_leaf and _grad_enabled()) or self._creation_meta is not None:
            return                        # (a view made in no_grad mode: _check_view_write's error)
        key, _ = encode_index(key, self)
        raise RuntimeError(("a view of a leaf Variable" if self._writes_through_view(key) else "a leaf Variable")
                           + " that requires grad is being used in an in-place operation.")

    def _writes_through_view(self, key) -> bool:
        """Whether PyTorch's setitem takes a view first: the encoded key has an int, a None or a
        slice that does not cover its whole dim."""
        return self._setitem_view_node(key) is not None

    def _setitem_view_node(self, key):
        """The grad_fn name of the last view PyTorch's setitem takes before it writes
        (SelectBackward0 for an int, UnsqueezeBackward0 for a None, SliceBackward0 for a slice that
        does not cover its whole dim), or None when it writes to the tensor itself."""
        name, dim = None, 0
        consumed = builtins.sum(1 for e in key if e[0] in ("int", "slice", "tensor"))
        for e in key:
            kind = e[0]
            if kind == "int":
                name = "SelectBackward0"
                dim += 1
            elif kind == "none":
                name = "UnsqueezeBackward0"
            elif kind == "slice":
                start, stop, step = e[1], e[2], e[3]
                size = self.shape[dim] if dim < self.ndim else 0
                if not (start in (None, 0) and step in (None, 1) and (stop is None or stop >= size)):
                    name = "SliceBackward0"
                dim += 1
            elif kind == "ellipsis":
                dim += self.ndim - consumed
            else:
                dim += 1
        return name

    def _check_view_write(self, result=None, via=None):
        """Refuse an in-place write to a view as PyTorch does (eager tensors: ``Tensor``)."""

    @parses("gather", "(int dim, Tensor index, *, bool sparse_grad = False)")
    def gather(self, dim, index):
        norm_dim(dim, max(self.ndim, 1))
        if not is_tensor_like(index) or index.dtype is not dtypes.int64:
            raise RuntimeError("gather(): Expected dtype int32/int64 for index")
        return apply("gather", self, index, dim=norm_dim(dim, self.ndim))

    @parses("index_select", "(int dim, Tensor index)")
    def index_select(self, dim, index):
        d = norm_dim(dim, self.ndim)
        if not is_tensor_like(index):
            raise ArgumentError("index_select's index is not a tensor")
        if is_tensor_like(index) and index.dtype is dtypes.int32:
            index = index.to(dtypes.int64)
        if not is_tensor_like(index) or index.dtype is not dtypes.int64:
            raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
        if index.ndim > 1:
            raise IndexError("index_select(): Index is supposed to be a vector")
        if index.ndim == 0:                 # a 0-d index selects a slice of size 1, as PyTorch's
            index = index.reshape(1)
        if self.ndim == 0:                  # a 0-d tensor is read as one element
            index = _check_index_values(self, index, 0, select=True)
            out = self.reshape(1).index_select(0, index)
            return apply("reshape", out, shape=[], _name="IndexSelectBackward0") if index.numel() == 1 else out
        index = _check_index_values(self, index, d, select=True)
        key = [_FULL] * d + [["tensor", 0]]
        return apply("index", self, index, key=key, _name="IndexSelectBackward0")

    @parses("select", "(int dim, int index)")
    def select(self, dim, index):
        if not self.ndim:
            raise IndexError("select() cannot be applied to a 0-dim tensor.")
        d, index = norm_dim(dim, self.ndim), int_arg(index)
        size = self.shape[d]
        if not -size <= index < size:
            raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} at "
                             f"dimension {d}")
        return apply_same_class("index", [self], {"key": [_FULL] * d + [["int", int(index)]]}, "SelectBackward0")

    def narrow_copy(self, dim, start, length):
        """A copy of ``narrow``'s slice (PyTorch's node ``NarrowCopyBackward0``)."""
        from .autograd.node import grad_fn_named
        return grad_fn_named("NarrowCopyBackward0")(lambda: self.narrow(dim, start, length).clone())()

    @parses("narrow", "(int dim, Tensor start, int length)", "(int dim, int start, int length)")
    def narrow(self, dim, start, length):
        dim, length = int_arg(dim), int_arg(length)
        if not is_tensor_like(start):
            start = int_arg(start)
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if self.ndim == 0:
            raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
        d = norm_dim(dim, self.ndim)
        size = self.shape[d]
        if start < 0:
            start += size
        if start + length > size:
            raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
        return apply_same_class("index", [self], {"key": [_FULL] * d + [["slice", int(start), int(start + length), None]]},
                                "SliceBackward0")

    @parses("where", "(Tensor condition, Tensor other)", "(Tensor condition, Number other)")
    def where(self, condition, other): return where(condition, self, other)

    def type(self, dtype=None):
        """The legacy type name (``'torch.FloatTensor'``), or a copy converted to ``dtype``."""
        if dtype is None:
            return "torch." + self.dtype.tensor_type
        if isinstance(dtype, dtypes.dtype):
            return self.to(dtype)
        if not isinstance(dtype, (str, type)):
            raise TypeError("dtype must be a type, str, or dtype object")
        name = dtype if isinstance(dtype, str) else dtype.__name__
        for prefix, device in (("torch.cuda.", "cuda"), ("torch.", None)):
            if name.startswith(prefix):
                want = next((d for d in dtypes.ALL if d.tensor_type == name[len(prefix):]), None)
                if want is not None:
                    return self.to(want) if device is None else self.to(device, want)
        raise ValueError(f"invalid type: '{name}'")

    @parses("masked_fill", "(Tensor mask, Tensor value)", "(Tensor mask, Number value)")
    def masked_fill(self, mask, value):
        if not _is_scalar(value) and not is_tensor_like(value):
            raise ArgumentError(f"masked_fill() of {type(value).__name__}")
        if not is_tensor_like(mask) or mask.dtype is not dtypes.bool_:
            raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                               + (mask.dtype.tensor_type[:-6].lower() if is_tensor_like(mask) else "None"))
        if is_tensor_like(value):
            if value.ndim != 0:
                raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                                   f"with {value.ndim} dimension(s).")
            if value.dtype is not self.dtype and self.dtype is not dtypes.bool_ and _holds_values(value):
                dtypes.check_fits(value.item(), self.dtype)     # PyTorch's error for a value the dtype cannot hold
            v = value if value.dtype is self.dtype else value.to(self.dtype)
            return apply("where", mask, v, self, _name=grad_fn_name("MaskedFillBackward1", (2, 1)))
        dtypes.check_fits(value, self.dtype)
        return apply("where", mask, self._scalar(value, self.dtype), self,
                     _name=grad_fn_name("MaskedFillBackward0", (2,)))

    # ---- in-place ------------------------------------------------------------------------
    def _inplace(self, result):
        if result is NotImplemented:
            return NotImplemented
        if result.dtype is not self.dtype:
            if not _can_cast(result.dtype, self.dtype):
                raise RuntimeError(f"result type {result.dtype.tensor_type[:-6]} can't be cast to the desired "
                                   f"output type {self.dtype.tensor_type[:-6]}")
            result = result.to(self.dtype)
        if tuple(result.shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                               f"{list(result.shape)}")
        self._assign_inplace(result)
        return self

    def _check_inplace_shape(self, other):
        """PyTorch's error for an in-place op whose operands broadcast beyond self's shape."""
        if other.shape != self.shape:
            try:
                shape = broadcast_shapes("inplace", tuple(self.shape), tuple(other.shape))
            except ShapeError:
                return                     # (the op's own error)
            if shape != tuple(self.shape):
                raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                                   f"{list(shape)}")

    def _inplace_checked(self, other, *, float_only=False):
        """``other`` for an in-place binary op on self, checked first as PyTorch checks it: the
        broadcast shape must be self's, then the operands' result type must cast to self's dtype
        (so ``bool_t //= 0`` is a cast error, not a division by zero)."""
        if is_tensor_like(other):
            self._check_inplace_shape(other)
            if other.dtype is self.dtype and (self.dtype.is_floating_point or not float_only):
                return other
        elif not _is_scalar(other):
            return other                   # (the op's own argument error)
        dt = result_dtype([self, other], float_only=float_only)
        if not _can_cast(dt, self.dtype):
            raise RuntimeError(f"result type {dt.scalar_type} can't be cast to the desired output type "
                               f"{self.dtype.scalar_type}")
        return other

    # x += y is in place, as PyTorch's (Python would otherwise rebind x to a new tensor)
    def __iadd__(self, other): return self._inplace(self._binary("add", self._inplace_checked(other)))
    def __isub__(self, other):
        self._check_sub(other)
        return self._inplace(self.__sub__(self._inplace_checked(other)))
    def __imul__(self, other): return self._inplace(self._binary("mul", self._inplace_checked(other)))
    def __itruediv__(self, other):
        return self._inplace(self.__truediv__(self._inplace_checked(other, float_only=True)))
    def __ifloordiv__(self, other): return self._inplace(self.__floordiv__(self._inplace_checked(other)))
    def __imod__(self, other): return self._inplace(self.__mod__(self._inplace_checked(other)))
    def __ipow__(self, other):
        self._check_pow(other)
        return self._inplace(self.__pow__(self._inplace_checked(other)))
    def __iand__(self, other): return self._inplace(self.__and__(self._inplace_checked(other)))
    def __ior__(self, other): return self._inplace(self.__or__(self._inplace_checked(other)))
    def __ixor__(self, other): return self._inplace(self.__xor__(self._inplace_checked(other)))
    def __ilshift__(self, other): return self._inplace(self.__lshift__(self._inplace_checked(other)))
    def __irshift__(self, other): return self._inplace(self.__rshift__(self._inplace_checked(other)))

    def _overlap_checked(self, other):
        """``other`` for an in-place op on self, refused as PyTorch refuses it when it overlaps self in part."""
        if is_tensor_like(other) and _holds_values(other) and _holds_values(self):
            _check_no_partial_overlap(self, None, [], other)
        return other

    def _overlap_and_inplace_checked(self, other, *, float_only=False):
        return self._inplace_checked(self._overlap_checked(other), float_only=float_only)

    @parses("add_", *add.signatures)
    def add_(self, other, alpha=1):
        return self._inplace(self.add(self._overlap_and_inplace_checked(other), alpha=alpha))

    @parses("sub_", *sub.signatures)
    def sub_(self, other, alpha=1):
        self._check_sub(other)
        return self._inplace(self.sub(self._overlap_and_inplace_checked(other), alpha=alpha))

    @parses("mul_", *mul.signatures)
    def mul_(self, other): return self._inplace(self.mul(self._overlap_and_inplace_checked(other)))

    @parses("div_", *div.signatures)
    def div_(self, other, *, rounding_mode=None):
        other = self._overlap_and_inplace_checked(other, float_only=rounding_mode is None)
        return self._inplace(self.div(other, rounding_mode=rounding_mode))

    @parses("pow_", *pow.signatures)
    def pow_(self, other):
        self._check_pow(other)
        return self._inplace(self.pow(self._overlap_and_inplace_checked(other)))
    @parses("clamp_", *_CLAMP)
    def clamp_(self, min=None, max=None):
        min, max = _clamp_bounds(min, max)
        self._check_clamp_inplace(min, max)
        return self._inplace(self.clamp(min, max))

    def _check_clamp_inplace(self, *bounds):
        """PyTorch's error for an in-place clamp whose number bounds make a result self cannot hold
        (worded with the C type: "... to the desired output type long int")."""
        numbers = [b for b in bounds if b is not None]
        for b in numbers:
            if is_tensor_like(b):
                self._check_inplace_shape(b)
        if numbers and builtins.all(_is_scalar(b) for b in numbers):
            dt = result_dtype([self, *numbers])
            if not _can_cast(dt, self.dtype):
                raise RuntimeError(f"result type {dt.scalar_type} can't be cast to the desired output type "
                                   f"{self.dtype.c_type}")
    def neg_(self): return self._inplace(-self)
    def exp_(self): return self._inplace(self.exp())
    def relu_(self): return self._inplace(self.relu())
    def abs_(self): return self._inplace(self.abs())
    def sqrt_(self): return self._inplace(self.sqrt())
    def rsqrt_(self): return self._inplace(self.rsqrt())
    def log_(self): return self._inplace(self.log())
    def sigmoid_(self): return self._inplace(self.sigmoid())
    def tanh_(self): return self._inplace(self.tanh())
    def sin_(self): return self._inplace(self.sin())
    def cos_(self): return self._inplace(self.cos())
    def floor_(self): return self._inplace(self.floor())
    def ceil_(self): return self._inplace(self.ceil())
    def round_(self, decimals=0): return self._inplace(self.round(decimals=decimals))
    def trunc_(self): return self._inplace(self.trunc())
    def sign_(self): return self._inplace(self.sign())
    def reciprocal_(self): return self._inplace(self.reciprocal())
    def square_(self): return self._inplace(self.square())
    @parses("clamp_min_", *clamp_min.signatures)
    def clamp_min_(self, min):
        self._check_clamp_inplace(min)
        return self._inplace(self.clamp_min(min))

    @parses("clamp_max_", *clamp_max.signatures)
    def clamp_max_(self, max):
        self._check_clamp_inplace(max)
        return self._inplace(self.clamp_max(max))
    def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
        return self._inplace(self.nan_to_num(nan, posinf, neginf))
    @parses("lerp_", "(Tensor end, Tensor weight)", "(Tensor end, Number weight)")
    def lerp_(self, end, weight):
        from .compositions import check_lerp_dtypes
        check_lerp_dtypes(self, end, weight)
        self._check_inplace_shape(end)        # (before lerp's refusal of integer dtypes, as PyTorch's)
        return self._inplace(self.lerp(end, weight))

    @parses("addcmul_", "(Tensor tensor1, Tensor tensor2, *, Number value = 1)")
    def addcmul_(self, tensor1, tensor2, *, value=1): return self._inplace(self.addcmul(tensor1, tensor2, value=value))

    @parses("addcdiv_", "(Tensor tensor1, Tensor tensor2, *, Number value = 1)")
    def addcdiv_(self, tensor1, tensor2, *, value=1): return self._inplace(self.addcdiv(tensor1, tensor2, value=value))

    def fill_diagonal_(self, fill_value, wrap=False):
        """Set the main diagonal (all dims' indices equal) to ``fill_value``; ``wrap`` restarts it
        every ``cols + 1`` rows of a tall matrix, as PyTorch's."""
        from . import factories
        n = min(self.shape)
        if self.ndim > 2 and len(set(self.shape)) != 1:
            raise RuntimeError("all dimensions of input must be of equal length")
        mask = np.zeros(tuple(self.shape), dtype=bool)
        if self.ndim == 2 and wrap and self.shape[0] > self.shape[1]:
            rows = np.arange(self.shape[0])
            keep = rows % (self.shape[1] + 1) < self.shape[1]
            mask[rows[keep], (rows % (self.shape[1] + 1))[keep]] = True
        else:
            mask[(np.arange(n),) * self.ndim] = True
        return self.masked_fill_(factories.tensor(mask, device=self.device), fill_value)

    # ---- in-place sampling (the global generator, as the factories use) ---------------------
    def _sample_(self, draw, traced, generator=None):
        """Fill with ``draw(shape)``; under ``@gradc.compile`` with ``traced(u)`` of a uniform
        (``"rand_like"``) or normal (``"randn_like"``) draw recorded in the IR instead, so each
        call draws anew (``traced`` spells the same transformation of the same stream)."""
        from . import factories
        from .autograd import grad_mode
        from .ops import dispatch
        if self.requires_grad and self.is_leaf and grad_mode.is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        if dispatch.capturing.items and self.dtype.is_floating_point:
            factories._traced_generator_error(generator)
            kind, transform = traced
            values = transform(dispatch.capturing[-1].draw(kind, tuple(self.shape), self.dtype))
        else:
            values = factories.tensor(draw(tuple(self.shape), self.dtype.np), dtype=self.dtype, device=self.device)
        with grad_mode.no_grad():
            self.copy_(values)
        return self

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        from .random_state import numpy_rng
        if a > b:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}")
        rng = numpy_rng(generator)
        return self._sample_(lambda shape, dt: rng.uniform(a, b, shape, _float_or_double(dt)),
                             ("rand_like", lambda u: u * (b - a) + a),
                             generator)

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        from .random_state import numpy_rng
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        rng = numpy_rng(generator)
        return self._sample_(lambda shape, dt: rng.normal(mean, std, shape, _float_or_double(dt)),
                             ("randn_like", lambda z: z * std + mean),
                             generator)

    def bernoulli_(self, p=0.5, *, generator=None):
        from .random_state import numpy_rng
        rng = numpy_rng(generator)
        return self._sample_(lambda shape, dt: rng.bernoulli(p, shape).astype(np.float64),
                             ("rand_like", lambda u: u < p), generator)

    def exponential_(self, lambd=1.0, *, generator=None):
        from .random_state import numpy_rng
        rng = numpy_rng(generator)
        # traced: inversion of a uniform draw (NumPy's own sampler uses another method)
        return self._sample_(lambda shape, dt: rng.exponential(1.0 / lambd, shape),
                             ("rand_like", lambda u: (-u).log1p() * (-1.0 / lambd)), generator)

    def zero_(self): return self._fill(0, "ZeroBackward0")

    @parses("fill_", "(Tensor value)", "(Number value)")
    def fill_(self, value):
        if not _is_scalar(value) and not is_tensor_like(value):
            raise ArgumentError(f"fill_() of {type(value).__name__}")
        if is_tensor_like(value):
            if value.ndim != 0:
                raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                                   "dimensions.")
            v = value if value.dtype is self.dtype else value.to(self.dtype)
            return self._inplace(apply("index_put", self, v, key=[["ellipsis"]], _name="FillBackward3"))
        return self._fill(value, "FillBackward2")

    def _fill(self, value, name):
        dtypes.check_fits(value, self.dtype)     # PyTorch's error for a value the dtype cannot hold
        if self.dtype.np.kind in "iu":
            self._scalar(value, self.dtype)
        value = float(value) if self.dtype.is_floating_point else (
            bool(value) if self.dtype is dtypes.bool_ else dtypes.unsigned_wrap(int(value), self.dtype))
        view_of = getattr(self, "_view_of", None)
        data = getattr(self, "_data", None)
        if (isinstance(data, np.ndarray) and not data.flags.writeable and view_of is not None
                and view_of[1].name == "expand"):
            # every element of an expanded view gets the same value: PyTorch fills the memory it repeats
            view_of[0]._fill(value, name)
            return self
        return self._inplace(apply("fill", self, value=value, _name=name))

    def copy_(self, src):
        """An index_put over the whole tensor, so the node has PyTorch's edges (self, src); a number
        is copied as the 0-d tensor PyTorch makes of it (cast as a tensor is: 300 into uint8 is 44)."""
        if _is_scalar(src):
            src = wrapped_number(self, src)
        if not is_tensor_like(src):
            raise TypeError("copy_(): argument 'other' (position 1) must be Tensor, not " + type(src).__name__)
        self._overlap_checked(src)
        from .ops.rules import broadcast_shapes
        if broadcast_shapes("copy_", tuple(self.shape), tuple(src.shape)) != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                               f"{list(broadcast_shapes('copy_', tuple(self.shape), tuple(src.shape)))}")
        return self._inplace(apply("index_put", self, src, key=[["ellipsis"]], _name="CopyBackwards"))

    # ---- misc ----------------------------------------------------------------------------
    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))     # PyTorch's: unbind's views (UnbindBackward0; not writable in place)


def _grad_enabled() -> bool:
    from .autograd.grad_mode import is_grad_enabled
    return is_grad_enabled()


def _correction(unbiased, correction):
    if correction is not None:
        if not isinstance(correction, Number) or isinstance(correction, bool):
            raise ArgumentError(f"expected a number, got {type(correction).__name__}")
        return int(correction)
    if unbiased is None:
        return 1
    return 1 if bool_arg(unbiased) else 0


def _infer_shape(shape, numel, old_shape):
    shape = list(shape)
    inferred = shape.count(-1)
    if inferred > 1:
        raise RuntimeError("only one dimension can be inferred")
    if shape and min(shape) < -1:
        k = next(k for k, s in enumerate(shape) if s < -1)
        raise RuntimeError(f"invalid shape dimension {shape[k]} at index {k} of shape {shape}")
    if inferred:
        known = -math.prod(shape)       # (the product of the others: no size is below -1)
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {shape} because the unspecified "
                               "dimension size -1 can be any value and is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[shape.index(-1)] = numel // known
    if math.prod(shape) != numel:       # (no size is negative now)
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


# ---- index encoding -----------------------------------------------------------------------
def encode_index(key, tensor):
    """Turn a Python index into a printable attr plus the list of index tensors.

    Entries: ["int", i], ["slice", start, stop, step], ["none"], ["ellipsis"],
    ["tensor", k] where k is the position of the index tensor among extra inputs.
    Python lists and NumPy arrays become index tensors.
    """
    plain = _plain_index(key)
    if plain is not None:
        return plain[0], []
    if isinstance(key, list) and _list_is_tuple_of_indices(key):
        key = tuple(key)
    if not isinstance(key, tuple):
        key = (key,)
    enc, tensors = [], []
    for k in key:
        if k is None:
            enc.append(["none"])
        elif k is Ellipsis:
            enc.append(["ellipsis"])
        elif isinstance(k, slice):
            enc.append(["slice", _opt_int(k.start), _opt_int(k.stop), _opt_int(k.step)])
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero")
        elif isinstance(k, (bool, np.bool_)):
            raise IndexError("indexing with a bare bool is not supported by gradc")
        elif isinstance(k, (int, np.integer)):
            enc.append(["int", int(k)])
        elif is_tensor_like(k) and k.ndim == 0 and k.dtype is dtypes.int64 and _holds_values(k):
            enc.append(["int", int(k.item())])      # PyTorch reads a 0-d long tensor as an int (a select)
        elif is_tensor_like(k):
            enc.append(["tensor", len(tensors)])
            tensors.append(_index_dtype(k))
        elif isinstance(k, str):            # (PyTorch reads a str as a sequence, then refuses it)
            raise TypeError("new(): invalid data type 'str'")
        elif isinstance(k, (list, np.ndarray)):
            t = tensor._index_tensor(k)
            enc.append(["tensor", len(tensors)])
            tensors.append(t)
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             f"Variables are valid indices (got {type(k).__name__})")
    return enc, tensors


_OPTIONAL_INT = (int, type(None))


def _plain_index(key):
    """``encode_index``'s entries for the commonest keys, with the number of dims they consume:
    a Python int, a slice of ints, None or ``...``, or a tuple of them; None for any other key
    (a bool, a NumPy integer, a tensor, a list, a bad step), which takes the general walk."""
    enc, consumed = [], 0
    for k in (key if type(key) is tuple else (key,)):
        t = type(k)
        if t is int:
            enc.append(["int", k])
            consumed += 1
        elif t is slice:
            start, stop, step = k.start, k.stop, k.step
            if not (type(start) in _OPTIONAL_INT and type(stop) in _OPTIONAL_INT
                    and (step is None or type(step) is int and step > 0)):
                return None
            enc.append(["slice", start, stop, step])
            consumed += 1
        elif k is None:
            enc.append(["none"])
        elif k is Ellipsis:
            enc.append(["ellipsis"])
        else:
            return None
    return enc, consumed


_LIST_AS_TUPLE_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in pytorch 2.9; "
    "use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor index, "
    "x[torch.tensor(seq)], which will result either in an error or a different result (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/autograd/python_variable_indexing.cpp:349.)")


def _check_no_partial_overlap(t, key, tensors, value):
    """PyTorch refuses a write whose source overlaps its destination in part (``x[1:] = x[:-1]``,
    ``y[1:].add_(y[:-1])``); checked, as PyTorch does, where both are dense (row- or column-major)."""
    dest, src = t._data, value._data
    if not (isinstance(dest, np.ndarray) and isinstance(src, np.ndarray)) or not np.may_share_memory(dest, src):
        return                  # (no memory in common: nothing to check, and a bad key is the write's error)
    if key is not None and not tensors:
        dest = dest[tuple(decode_index(key, []))]
    dense = lambda a: a.flags.c_contiguous or a.flags.f_contiguous     # noqa: E731
    if not (isinstance(dest, np.ndarray) and dense(dest) and dense(src) and dest.size and src.size
            and np.may_share_memory(dest, src)):
        return
    same = (dest.__array_interface__["data"][0] == src.__array_interface__["data"][0] and dest.shape == src.shape
            and dest.strides == src.strides)
    if not same:
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor refer "
                           "to a single memory location. Please clone() the tensor before performing the operation.")


_VIEW_INCOMPATIBLE = ("view size is not compatible with input tensor's size and stride (at least one dimension spans "
                      "across two contiguous subspaces). Use .reshape(...) instead.")


def _in_dtype(result, dtype):
    """An integer accumulation (done in int64) in the ``dtype=`` asked for, wrapping as PyTorch's."""
    if dtype is None or result.dtype is dtypes.as_dtype(dtype):
        return result
    return result.to(dtype)


def _tensor_argument(name, value, position, arg="other"):
    """PyTorch's TypeError for a non-tensor where a tensor argument is required."""
    if not is_tensor_like(value):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not {type(value).__name__}")
    return value


def _holds_values(t) -> bool:
    """An eager tensor (whose values can be read), not one being traced by @gradc.compile: of
    dispatch priority 1, as ``dispatch`` tells them apart (tracer proxies have 2). (An import of
    Tensor here, on every call, cost more than a small view op's own work.)"""
    return isinstance(t, TensorLikeMeta) and type(t)._dispatch_priority == 1


def _list_is_tuple_of_indices(key) -> bool:
    """PyTorch's (and old NumPy's) rule: a short list holding a tensor, a sequence, a slice, ``...``
    or None is a tuple of indices (``x[[0, [1, 2]]]`` is ``x[0, [1, 2]]``), not one index; PyTorch
    warns that this is deprecated, and so does gradc."""
    if len(key) >= 32 or not builtins.any(is_tensor_like(k) or isinstance(k, (list, tuple, slice, np.ndarray))
                                           or k is None or k is Ellipsis for k in key):
        return False
    warn_at_user_code(_LIST_AS_TUPLE_WARNING)
    return True


_UINT8_INDEX_WARNING = ("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead. "
                        "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/IndexingUtils.h:37.)")


def _index_dtype(k):
    """An index tensor as the index op takes it: int64 or bool (int32 widened, a uint8 mask read
    as bool with PyTorch's deprecation warning)."""
    dt = k.dtype
    if dt is dtypes.int64 or dt is dtypes.bool_:
        return k
    if dt is dtypes.int32:
        return k.to(dtypes.int64)
    if dt is dtypes.uint8:
        warn_at_user_code(_UINT8_INDEX_WARNING)
        return k != 0
    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def _opt_int(v):
    return None if v is None else int(v)


def decode_index(key, index_arrays):
    """The NumPy index for an encoded key (inverse of encode_index)."""
    out = []
    for e in key:
        kind = e[0]
        if kind == "none":
            out.append(None)
        elif kind == "ellipsis":
            out.append(Ellipsis)
        elif kind == "slice":
            out.append(slice(e[1], e[2], e[3]))
        elif kind == "int":
            out.append(e[1])
        elif kind == "tensor":
            out.append(index_arrays[e[1]])
        else:
            raise ValueError(f"bad index entry {e!r}")
    return tuple(out)


_FULL = ["slice", None, None, None]


def _check_index_values(x, index, dim, select=False):
    """Bounds of integer index values, with PyTorch's messages; ``index`` itself, or for a traced
    index of index_select (no values while tracing) the index after a ``check_index`` op, which
    raises them when the compiled code runs."""
    data = getattr(index, "_data", None)
    if data is None and select:
        return apply("check_index", index, size=x.shape[dim] if x.ndim else 1, dim=dim, what="select")
    if data is None or data.size == 0:
        return index
    size = x.shape[dim] if x.ndim else 1
    bad = data[((data < 0) if select else (data < -size)) | (data >= size)]   # (index_select takes no negatives)
    if bad.size:
        if select and dim == 1:         # (PyTorch's kernel for dim 1 has its own message)
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={int(bad.flat[0])} axis_dim={size}")
        if select:
            raise IndexError("index out of range in self")
        raise IndexError(f"index {int(bad.flat[0])} is out of bounds for dimension {dim} with size {size}")
    return index


def _check_advanced_bounds(cur, advanced):
    """PyTorch checks index values while it walks the broadcast indices element by element, and
    names an index tensor's dimension by its place among the index tensors (a k-dim mask counts k)."""
    checks, ordinal = [], 0
    for d, t in advanced:
        if t.dtype is dtypes.bool_:
            ordinal += t.ndim
            continue
        data = getattr(t, "_data", None)
        if data is not None:
            checks.append((ordinal, cur.shape[d], data))
        ordinal += 1
    if not checks:
        return
    try:
        arrays = np.broadcast_arrays(*[c[2] for c in checks])
    except ValueError:
        return
    bad = np.stack([((a < -size) | (a >= size)).reshape(-1) for (_, size, _), a in zip(checks, arrays)])
    if bad.size and bad.any():
        element = int(np.argmax(bad.any(axis=0)))
        k = int(np.argmax(bad[:, element]))
        ordinal, size, _ = checks[k]
        value = int(arrays[k].reshape(-1)[element])
        raise IndexError(f"index {value} is out of bounds for dimension {ordinal} with size {size}")


def getitem(x, key):
    """``x[key]`` as PyTorch evaluates it: the basic entries left to right, each its own view
    (SelectBackward0 for an int, SliceBackward0 for a slice, UnsqueezeBackward0 for None; a
    full slice inside a tuple is skipped), then one advanced index (IndexBackward0) over all
    index tensors and masks, or an alias (AliasBackward0) when nothing else happened."""
    if type(key) is int:            # x[i], the commonest index: one select (out of range: the walk's error)
        shape = x.shape
        if shape and -shape[0] <= key < shape[0]:
            return apply_same_class("index", [x], {"key": [["int", key]]}, "SelectBackward0")
    single = type(key) is not tuple
    plain = _plain_index(key)
    if plain is not None:           # (ints, slices, None and ...: no tensors, bools or widths to work out)
        (enc, consumed), tensors, bools = plain, (), {}
    else:
        if isinstance(key, list) and _list_is_tuple_of_indices(key):
            key = tuple(key)
        single = not isinstance(key, tuple)
        items = [key] if single else list(key)
        bools = {}
        for i, k in enumerate(items):   # PyTorch: a Python bool is None plus a one-element mask on the new dim
            if isinstance(k, (bool, np.bool_)):
                bools[i] = x._index_tensor([bool(k)])
                items[i] = None
        enc, tensors = encode_index(tuple(items), x)
        width = [e[0] in ("int", "slice") and 1 or (
            (tensors[e[1]].ndim if tensors[e[1]].dtype is dtypes.bool_ else 1) if e[0] == "tensor" else 0)
            for e in enc]
        consumed = builtins.sum(width)
    if x.ndim == 0 and single and enc and enc[0][0] in ("int", "slice") and not is_tensor_like(key):
        kind = enc[0][0]            # (PyTorch's own words for a 0-d tensor: for an int or slice not in a tuple)
        if kind == "int" and enc[0][1] != 0:
            raise IndexError(f"index {enc[0][1]} is out of bounds for dimension 0 with size 0")
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                         "C++ to convert a 0-dim tensor to a number" if kind == "int"
                         else "slice() cannot be applied to a 0-dim tensor.")
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    cur, dim, seen_ellipsis = x, 0, False
    advanced = []
    for i, e in enumerate(enc):
        kind = e[0]
        if kind == "int":
            size = cur.shape[dim]
            if not -size <= e[1] < size:
                raise IndexError(f"index {e[1]} is out of bounds for dimension {i} with size {size}")
            cur = apply_same_class("index", [cur], {"key": [_FULL] * dim + [e]}, "SelectBackward0")
        elif kind == "slice":
            start, stop, step = e[1], e[2], e[3]
            full = start in (None, 0) and step in (None, 1) and (stop is None or stop >= cur.shape[dim])
            if single or not full:
                cur = apply_same_class("index", [cur], {"key": [_FULL] * dim + [e]}, "SliceBackward0")
            dim += 1
        elif kind == "none":
            cur = apply_same_class("index", [cur], {"key": [_FULL] * dim + [e]}, "UnsqueezeBackward0")
            if i in bools:
                advanced.append((dim, bools[i]))
            dim += 1
        elif kind == "ellipsis":
            n = 0 if seen_ellipsis else x.ndim - consumed
            seen_ellipsis = True
            dim += n
        else:
            advanced.append((dim, tensors[e[1]]))
            dim += width[i]
    if advanced:
        # PyTorch's order of checks: masks, then broadcasting of the indices, then their bounds
        for d, t in advanced:
            if t.dtype is dtypes.bool_:
                want = tuple(cur.shape[d:d + t.ndim])
                if tuple(t.shape) != want:
                    j = next((j for j, (a, b) in enumerate(zip(t.shape, want)) if a != b), 0)
                    raise IndexError(f"The shape of the mask {list(t.shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {list(cur.shape)} at index {d + j}")
        shapes = []
        for _, t in advanced:
            data = getattr(t, "_data", None)
            if t.dtype is not dtypes.bool_:
                shapes.append(tuple(t.shape))
            elif data is not None:
                shapes.append((int(np.count_nonzero(data)),))
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                             + ", ".join(str(list(sh)) for sh in shapes)) from None
        if cur.numel():
            _check_advanced_bounds(cur, advanced)
        key, pos = [], 0
        for k, (d, t) in enumerate(advanced):
            key += [_FULL] * (d - pos) + [["tensor", k]]
            pos = d + (t.ndim if t.dtype is dtypes.bool_ else 1)
        return apply("index", cur, *[t for _, t in advanced], key=key, _name="IndexBackward0")
    if cur is x:
        return apply_same_class("index", [x], {"key": [["ellipsis"]]}, "AliasBackward0")
    return cur


# ---- free functions (torch.* spellings) -------------------------------------------------
def _first_tensor(*xs):
    """The first tensor among ``xs`` (or in a list among them)."""
    for x in xs:
        if is_tensor_like(x):
            return x
        if isinstance(x, (list, tuple)):
            for y in x:
                if is_tensor_like(y):
                    return y
    raise TypeError("expected at least one Tensor argument")


def where(condition, input=None, other=None):
    if input is None and other is None:          # where(condition) is nonzero(condition, as_tuple=True)
        from .scatter import nonzero
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() missing 1 required positional argument: 'other'" if input is not None
                        else "where() missing 1 required positional argument: 'input'")
    for v in (condition, input, other):
        if not (is_tensor_like(v) or _is_scalar(v)):
            try:
                raise ArgumentError(f"where() of {type(v).__name__}")
            except ArgumentError:
                reparse("where", _WHERE, (condition, input, other))
                raise
    like = _first_tensor(input, other, condition)
    if not is_tensor_like(condition):
        condition = like._scalar(bool(condition), dtypes.bool_)
    elif condition.dtype is dtypes.uint8:       # PyTorch reads a uint8 condition as bool
        condition = condition != 0
    elif condition.dtype is not dtypes.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with "
                           f"dtype {condition.dtype.tensor_type[:-6]}")
    if is_tensor_like(input) or is_tensor_like(other):
        (a, b), _ = promote_operands([input, other], wrap_integers=False)
    else:                                        # two scalars: PyTorch's dtype of the pair
        dt = dtypes.result_type([(dtypes.scalar_dtype(input), 0), (dtypes.scalar_dtype(other), 0)])
        a, b = like._scalar(input, dt), like._scalar(other, dt)
    return apply("where", condition, a, b)


@lower_precision
def matmul(a, b):
    if not (is_tensor_like(a) and is_tensor_like(b)):
        raise TypeError("matmul(): argument 'other' must be Tensor")
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
    _check_same_dtype(a, b)
    if a.dtype is dtypes.bool_:             # PyTorch has no bool kernel, and names the one it tried
        kernel = ("dot" if b.ndim == 1 else "addmm_impl_cpu_") if a.ndim == 1 else (
            "addmv_impl_cpu" if b.ndim == 1 else "addmm_impl_cpu_" if a.ndim == 2 and b.ndim == 2 else "bmm")
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    if a.ndim == 1 and b.ndim == 1:
        name = "DotBackward0"
    elif a.ndim == 2 and b.ndim == 2:
        name = "MmBackward0"
    elif a.ndim == 2 and b.ndim == 1:
        name = "MvBackward0"
    elif a.ndim == 1 and b.ndim == 2:   # PyTorch: unsqueeze(0), mm, squeeze
        out = apply("matmul", a.unsqueeze(0), b, _name="MmBackward0")
        return apply("reshape", out, shape=[out.shape[-1]], _name="SqueezeBackward4")
    else:
        name = "UnsafeViewBackward0"
    return apply("matmul", a, b, _name=name)




def _check_same_dtype(a, b):
    """Matrix products do not promote: PyTorch's error for mixed dtypes, as its kernel words it
    (dot, addmv, mm or bmm, chosen by the operands' ranks)."""
    if a.dtype is b.dtype:
        return
    ta, tb = a.dtype.tensor_type[:-6], b.dtype.tensor_type[:-6]
    if a.ndim == 1 and b.ndim == 1:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {ta} and {tb}")
    if b.ndim == 1:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {tb}, {ta}, and {tb}")
    if b.ndim == 2:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype.c_type} != "
                           f"{b.dtype.c_type}")
    raise RuntimeError(f"expected scalar type {ta} but found {tb}")


@lower_precision
def mm(input, mat2):
    if not (is_tensor_like(input) and is_tensor_like(mat2)):
        raise TypeError("mm(): argument 'mat2' must be Tensor")
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return matmul(input, mat2)


@lower_precision
def bmm(input, mat2):
    if not (is_tensor_like(input) and is_tensor_like(mat2)):
        raise TypeError("bmm(): argument 'mat2' must be Tensor")
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _check_same_dtype(input, mat2)
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    return apply("matmul", input, mat2, _name="BmmBackward0")


@autocast_excluded
def dot(input, other):
    if not (is_tensor_like(input) and is_tensor_like(other)):
        raise TypeError("dot(): argument 'tensor' must be Tensor")
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return matmul(input, other)


def tensor_sequence(fn, tensors) -> list:
    """``tensors`` (cat's, stack's argument) as a list, with PyTorch's TypeErrors for anything but
    a tuple or list in its place (a tensor, a generator) and for an element that is not a tensor."""
    if not isinstance(tensors, (tuple, list)):
        what = "Tensor" if is_tensor_like(tensors) else type(tensors).__name__
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not {what}")
    tensors = list(tensors)
    for k, t in enumerate(tensors):
        if not is_tensor_like(t):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got {type(t).__name__}")
    return tensors


@parses("cat", "(tuple of Tensors tensors, int dim = 0, *, Tensor out = None)", method=False)
def cat(tensors, dim=0):
    tensors = tensor_sequence("cat", tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    tensors, _ = promote_operands(tensors)
    d = norm_dim(dim, tensors[0].ndim)
    return apply("cat", *tensors, dim=d)


@parses("stack", "(tuple of Tensors tensors, int dim = 0, *, Tensor out = None)", method=False)
def stack(tensors, dim=0):
    tensors = tensor_sequence("stack", tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    tensors, _ = promote_operands(tensors)
    d = norm_dim(dim, tensors[0].ndim + 1)
    return apply("stack", *tensors, dim=d)
