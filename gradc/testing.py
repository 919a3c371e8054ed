"""``torch.testing``: ``assert_close`` and ``make_tensor``.

``assert_close`` follows PyTorch's comparison: inputs are matched pairwise through nested sequences
and mappings; ``None``, bools, numbers and tensor-likes (gradc tensors, or anything ``as_tensor``
takes when both sides are of a type) are compared with PyTorch's default tolerances per dtype
(float16: rtol 1e-3, atol 1e-5; float32: 1.3e-6, 1e-5; float64: 1e-7, 1e-7; others exact), and a
mismatch raises PyTorch's error with its message ("Tensor-likes are not close!", the mismatched
element count, the greatest absolute and relative differences with their indices, the item of a
nested input), or ``msg`` instead (a string, or a callable given the message). The values are
compared in NumPy with PyTorch's ``isclose`` rule, in the promoted dtype of the two tensors.
"""
from __future__ import annotations

import cmath
import collections.abc
import math

import numpy as np

from ._warnings import warn_at_user_code
from . import dtypes
from .tensor import Tensor

__all__ = ["assert_close", "make_tensor"]

_DTYPE_PRECISIONS = {
    dtypes.float16: (0.001, 1e-5),
    dtypes.float32: (1.3e-6, 1e-5),
    dtypes.float64: (1e-7, 1e-7),
}
_NUMBER_DTYPES = {int: dtypes.int64, float: dtypes.float64, complex: None}


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise, its message, and the item it is about."""

    def __init__(self, type_: type, msg: str, id_: tuple = ()):
        super().__init__(msg)
        self.type, self.msg, self.id = type_, msg, id_

    def to_error(self, msg=None) -> Exception:
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


def _tolerances(dtype_list, rtol, atol, id_):
    if (rtol is None) ^ (atol is None):
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                    f"but got no {'rtol' if rtol is None else 'atol'}.", id_)
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(d, (0.0, 0.0)) for d in dtype_list])
    return max(rtols), max(atols)


# ---------------------------------------------------------------------------------------- messages

def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol) -> str:
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        if idx is None:
            line = f"{kind.title()} difference: {diff}"
        else:
            line = f"Greatest {kind} difference: {diff} at index {idx}"
        return line + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_idx, atol) + diff_msg("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, rtol, atol) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None,
                         rtol)


def _tensor_mismatch_msg(actual: np.ndarray, expected: np.ndarray, matches: np.ndarray, rtol, atol) -> str:
    """PyTorch's message: differences taken in the tensors' dtype (integers as int64, their relative
    difference as float32, PyTorch's true division), over the mismatched elements only."""
    total = matches.size - int(matches.sum())
    extra = f"Mismatched elements: {total} / {matches.size} ({total / matches.size:.1%})"
    a, e, m = actual.ravel(), expected.ravel(), matches.ravel()
    if a.dtype.kind not in "fc":
        a, e = a.astype(np.int64), e.astype(np.int64)
    abs_diff = np.abs(a - e)
    abs_diff[m] = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_diff = abs_diff / np.abs(e)
    if a.dtype.kind not in "fc":
        rel_diff = rel_diff.astype(np.float32)
    rel_diff[m] = 0
    abs_idx, rel_idx = _argmax_nan_first(abs_diff), _argmax_nan_first(rel_diff)
    return _mismatch_msg("Tensor-likes", extra, abs_diff[abs_idx].item(), _unravel(abs_idx, matches.shape), atol,
                         rel_diff[rel_idx].item(), _unravel(rel_idx, matches.shape), rtol)


def _argmax_nan_first(values: np.ndarray) -> int:
    """The index ``torch.max(values, 0)`` returns: the first NaN, else the first greatest value."""
    nans = np.flatnonzero(np.isnan(values)) if values.dtype.kind == "f" else ()
    return int(nans[0]) if len(nans) else int(np.argmax(values))


def _unravel(flat_index: int, shape) -> tuple:
    return tuple(int(i) for i in np.unravel_index(flat_index, shape)) if shape else ()


# ---------------------------------------------------------------------------------------- pairs

def _compare_none(actual, expected, id_, options):
    if not (actual is None and expected is None):
        raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", id_)


def _compare_bools(actual, expected, id_, options):
    actual, expected = bool(actual), bool(expected)
    if actual is not expected:
        raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}", id_)


def _compare_numbers(actual, expected, id_, options):
    rtol, atol = options["tolerances"]
    if options["check_dtype"] and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", id_)
    if actual == expected:
        return
    if options["equal_nan"] and cmath.isnan(actual) and cmath.isnan(expected):
        return
    abs_diff = abs(actual - expected)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_mismatch_msg(actual, expected, rtol, atol), id_)


def _attribute_mismatch(name, actual_value, expected_value, id_):
    return _Mismatch(AssertionError,
                     f"The values for attribute '{name}' do not match: {actual_value} != {expected_value}.", id_)


def _compare_tensors(actual, expected, id_, options):
    rtol, atol = options["tolerances"]
    if actual.shape != expected.shape:
        raise _attribute_mismatch("shape", actual.shape, expected.shape, id_)
    if options["check_stride"] and actual.stride() != expected.stride():
        raise _attribute_mismatch("stride()", actual.stride(), expected.stride(), id_)
    if options["check_device"] and actual.device != expected.device:
        raise _attribute_mismatch("device", actual.device, expected.device, id_)
    if options["check_dtype"] and actual.dtype != expected.dtype:
        raise _attribute_mismatch("dtype", actual.dtype, expected.dtype, id_)
    a, e = _values_in_common_dtype(actual, expected)
    matches = _isclose(a, e, rtol, atol, options["equal_nan"])
    if matches.all():
        return
    if a.shape == ():
        msg = _scalar_mismatch_msg(a.item(), e.item(), rtol, atol)
    else:
        msg = _tensor_mismatch_msg(a, e, matches, rtol, atol)
    raise _Mismatch(AssertionError, msg, id_)


def _values_in_common_dtype(actual, expected):
    from .torch_functions import promote_types
    dtype = promote_types(actual.dtype, expected.dtype)
    return tuple(t.detach().cpu().to(dtype).numpy() for t in (actual, expected))


def _isclose(a: np.ndarray, e: np.ndarray, rtol, atol, equal_nan) -> np.ndarray:
    """PyTorch's ``isclose``: equal, or finite and ``|a - e| <= atol + rtol * |e|`` (NaNs equal with ``equal_nan``)."""
    if a.dtype.kind not in "fc":
        if rtol == 0 and atol == 0:
            return a == e
        a, e = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _as_tensor_pair(actual, expected, allow_subclasses):
    """(actual, expected) as gradc tensors, or None when they are no tensor-likes (PyTorch's rule:
    one's type must be a subclass of the other's)."""
    from .factories import as_tensor
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        return None
    if not allow_subclasses and type(actual) is not type(expected):
        return None
    try:
        return tuple(x if isinstance(x, Tensor) else as_tensor(x) for x in (actual, expected))
    except Exception:
        return None


def _is_number(x) -> bool:
    return isinstance(x, (int, float, complex, np.number)) and not isinstance(x, (bool, np.bool_))


def _make_pair(actual, expected, id_, options):
    """(compare function, actual, expected, id, its options) for two inputs that are not sequences or
    mappings: the first of PyTorch's pair types (None, bool, number, tensor-like) that takes them;
    tolerances are resolved here, so a lone ``rtol`` or ``atol`` fails before any value is compared."""
    if actual is None or expected is None:
        return _compare_none, actual, expected, id_, options
    if all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
        return _compare_bools, actual, expected, id_, options
    if _is_number(actual) and _is_number(expected):
        actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
        kinds = [_NUMBER_DTYPES[type(x)] for x in (actual, expected)]
        return _compare_numbers, actual, expected, id_, {**options, "tolerances": _tolerances(
            kinds, options["rtol"], options["atol"], id_)}
    tensors = _as_tensor_pair(actual, expected, options["allow_subclasses"])
    if tensors is None:
        raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                                   f"{type(expected)}.", id_)
    tolerances = _tolerances([t.dtype for t in tensors], options["rtol"], options["atol"], id_)
    return _compare_tensors, *tensors, id_, {**options, "tolerances": tolerances}


def _is_sequence(x) -> bool:
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _pairs(actual, expected, id_=()):
    """The (actual, expected, id) leaves of two nested inputs; a length or key mismatch raises."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                            id_)
        return [p for i in range(len(actual)) for p in _pairs(actual[i], expected[i], (*id_, i))]
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            missing, additional = sorted(expected_keys - actual_keys), sorted(actual_keys - expected_keys)
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                                            f"Missing keys in the actual mapping: {missing}\n"
                                            f"Additional keys in the actual mapping: {additional}", id_)
        try:
            keys = sorted(actual_keys)
        except Exception:
            keys = list(actual_keys)
        return [p for k in keys for p in _pairs(actual[k], expected[k], (*id_, k))]
    return [(actual, expected, id_)]


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Assert that ``actual`` and ``expected`` are close (``torch.testing.assert_close``)."""
    __tracebackhide__ = True
    options = {"allow_subclasses": allow_subclasses, "rtol": rtol, "atol": atol, "equal_nan": equal_nan,
               "check_device": check_device, "check_dtype": check_dtype, "check_stride": check_stride}
    try:
        pairs = [_make_pair(a, e, id_, options) for a, e, id_ in _pairs(actual, expected)]
    except _Mismatch as mismatch:
        raise mismatch.to_error() from None
    for compare, a, e, id_, pair_options in pairs:
        try:
            compare(a, e, id_, pair_options)
        except _Mismatch as mismatch:
            raise mismatch.to_error(msg) from None


# ---------------------------------------------------------------------------------------- make_tensor

def _low_high(dtype, low, high, lowest_inclusive, highest_exclusive, default_low, default_high):
    """``low``/``high`` (or the dtype's defaults) checked and clamped to what ``dtype`` can hold."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(value, float) and math.isnan(value) for value in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low!r} and high={high!r}")
    if low == high and dtype.is_floating_point:
        warn_at_user_code("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is deprecated "
                          "since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.", FutureWarning)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest_inclusive or low >= highest_exclusive:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest_inclusive}, {highest_exclusive})")
    low = min(max(low, lowest_inclusive), highest_exclusive)
    high = min(max(high, lowest_inclusive), highest_exclusive)
    if not dtype.is_floating_point:
        return math.ceil(low), math.ceil(high)
    return low, high


def _drawn_values(shape, dtype, device, low, high):
    from .factories import empty, randint
    if dtype is dtypes.bool_:
        low, high = _low_high(dtype, low, high, 0, 2, 0, 2)
        return randint(low, high, shape, device=device, dtype=dtype)
    if not dtype.is_floating_point:
        info = dtypes.iinfo(dtype)
        low, high = _low_high(dtype, low, high, info.min, info.max + (1 if dtype is not dtypes.int64 else 0), -9, 10)
        return randint(low, high, shape, device=device, dtype=dtype)
    finfo = dtypes.finfo(dtype)
    low, high = _low_high(dtype, low, high, finfo.min, finfo.max, -9, 9)
    result = empty(shape, device=device, dtype=dtype)
    if high - low >= finfo.max:
        return result.uniform_(low / 2, high / 2).mul_(2)
    return result.uniform_(low, high)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` drawn uniformly from ``[low, high)`` (``torch.testing.make_tensor``; the
    defaults per dtype are PyTorch's: bool [0, 2), unsigned [0, 10), signed [-9, 10), float [-9, 9)).
    gradc has no memory formats: a ``memory_format`` raises ``NotImplementedError``."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous!r} and memory_format={memory_format!r}")
    if requires_grad and not dtype.is_floating_point:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")
    if memory_format is not None:
        raise NotImplementedError("gradc.testing.make_tensor: gradc tensors have no memory formats")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    result = _drawn_values(shape, dtype, device, low, high)
    if noncontiguous:
        result = result[..., 1::2]
    if exclude_zero:
        result[result == 0] = dtypes.finfo(dtype).tiny if dtype.is_floating_point else 1
    if dtype.is_floating_point:
        result.requires_grad = requires_grad
    return result
