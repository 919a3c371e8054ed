"""Tensor factories: tensor, ones, zeros, full, empty, arange, linspace, rand, randn,
the *_like variants, from_numpy, and the seeded random generator."""
from __future__ import annotations

import numbers

import numpy as np

from . import dtypes
from .ops import dispatch
from .tensor import Tensor, check_device
from .arg_parser import ArgumentError, bool_arg, device_arg, dtype_arg, int_arg, number_arg, parses
from .tensor_api import _shape_args as _any_shape_args


def _shape_args(size) -> tuple:
    """A factory's size arguments as a shape (an ``ArgumentError`` for a size that is not ints),
    with PyTorch's error for a negative size."""
    shape = _any_shape_args(size)
    for n in shape:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(shape)}")
    return shape


def _options(dtype, device, requires_grad):
    """The factories' dtype, device and requires_grad checked as PyTorch's parser checks them."""
    dtype_arg(dtype)
    device_arg(device)
    bool_arg(requires_grad)


# PyTorch's signatures of the factories (arg_parser)
_OPTIONS = ("torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
            "bool pin_memory = False, bool requires_grad = False")
_SIZE = f"(tuple of ints size, *, Tensor out = None, {_OPTIONS})"
_SIZE_DRAWN = (f"(tuple of ints size, *, torch.Generator? generator, Tensor out = None, {_OPTIONS})", _SIZE)
_LIKE = f"(Tensor input, *, torch.memory_format memory_format = None, {_OPTIONS})"
_LIKE_DRAWN = (f"(Tensor input, *, torch.Generator? generator, torch.memory_format memory_format = None, "
               f"{_OPTIONS})", _LIKE)
_ARANGE = (f"(Number end, *, Tensor out = None, {_OPTIONS})", f"(Number start, Number end, *, {_OPTIONS})",
           f"(Number start, Number end, Number step = 1, *, Tensor out = None, {_OPTIONS})")
_LINSPACE = tuple(f"({a} start, {b} end, int steps, *, Tensor out = None, {_OPTIONS})"
                  for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"), ("Number", "Number")))
_RANDINT = tuple(f"({ints}tuple of ints size, *, {gen}Tensor out = None, {_OPTIONS})"
                 for ints in ("int high, ", "int low, int high, ")
                 for gen in ("torch.Generator? generator, ", ""))
_EYE = (f"(int n, *, Tensor out = None, {_OPTIONS})", f"(int n, int m, *, Tensor out = None, {_OPTIONS})")
_RANDPERM = (f"(int n, *, torch.Generator? generator, Tensor out = None, {_OPTIONS})",
             f"(int n, *, Tensor out = None, {_OPTIONS})")


from .random_state import Generator, manual_seed, numpy_rng, seed  # noqa: F401  (gradc.* names)


def _finish(array, dtype, requires_grad, device):
    dev = check_device(device)
    array = np.asarray(array, dtype=dtypes.as_dtype(dtype).np if dtype is not None else None)
    t = Tensor(array if array.flags.c_contiguous else np.array(array, order="C"))
    if dev.type == "cuda":
        t = t._to_device(dev)
    if requires_grad:
        if not t.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    return t


def _infer_dtype(data):
    """PyTorch's dtype for nested Python data: the promotion of its elements' types, where a
    Python bool is bool, an int int64, a float the default float dtype, and a NumPy scalar or a
    tensor its own dtype (``[np.float64(1), 2.0]`` is float64); bool < int64 < float32 < float64."""
    found = set()

    def walk(x):
        if isinstance(x, Tensor):
            found.add(x.dtype)
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        elif isinstance(x, np.generic) and x.dtype.kind in "biuf":
            found.add(dtypes.from_numpy(x.dtype))
        elif isinstance(x, bool):
            found.add(dtypes.bool_)
        elif isinstance(x, numbers.Integral):
            found.add(dtypes.int64)
        elif isinstance(x, numbers.Real):
            found.add(dtypes.default_float)
        elif isinstance(x, str):        # (PyTorch reads a str as a sequence, then refuses it)
            raise TypeError("new(): invalid data type 'str'")
        else:
            raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")
    walk(data)
    if not found:
        return dtypes.default_float
    return max(found, key=lambda d: (d.category, d.itemsize))


def _ragged_error(data) -> Exception:
    """PyTorch's error for nested data that is not rectangular: sizes are taken from the first
    element at each depth, and every sequence is checked against them."""
    sizes, x = [], data
    while isinstance(x, (list, tuple)):
        sizes.append(len(x))
        if not x:
            break
        x = x[0]

    def check(x, dim):
        if dim == len(sizes):
            return None
        if not isinstance(x, (list, tuple)):
            return TypeError("not a sequence")
        if len(x) != sizes[dim]:
            return ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(x)})")
        for y in x:
            err = check(y, dim + 1)
            if err is not None:
                return err
        return None
    return check(data, 0) or ValueError("expected sequence of equal-length lists to build a tensor")


def _to_nested(data):
    if isinstance(data, Tensor):
        if data._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return data._host().reshape(()).item()
    if isinstance(data, (list, tuple)):
        return [_to_nested(x) for x in data]
    if isinstance(data, np.generic):      # a Python value (exact): np.array([np.False_, 1], int64) raises
        return data.item()
    return data


ALIGNED_COPY_BYTES = 1 << 16


def _copy(array: np.ndarray, np_dtype) -> np.ndarray:
    """A C-contiguous copy; large ones start on a cache line, as compiled kernels' outputs do
    (``codegen.host_buffers``): a kernel reading a 16 MiB input 16 bytes off the line ran up
    to 10% slower here."""
    if array.size * np.dtype(np_dtype).itemsize < ALIGNED_COPY_BYTES:
        return np.array(array, dtype=np_dtype, copy=True, order="C")
    from .codegen.host_buffers import empty_aligned
    out = empty_aligned(array.shape, np_dtype)
    np.copyto(out, array, casting="unsafe")
    return out


COPY_CONSTRUCT_WARNING = ("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
                          "or sourceTensor.detach().clone().requires_grad_(True), rather than "
                          "torch.tensor(sourceTensor).")


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new leaf tensor copying ``data`` (nested lists, scalars, NumPy arrays, tensors)."""
    if isinstance(data, Tensor) or _holds_traced(data):
        from ._warnings import warn_at_user_code
        if not isinstance(data, (list, tuple)):
            warn_at_user_code(COPY_CONSTRUCT_WARNING)
        if not isinstance(data, Tensor):
            return _traced_tensor(data, dtype, requires_grad)
    return _tensor(data, dtype, device, requires_grad)


def _holds_traced(data) -> bool:
    """Whether ``data`` is, or nests, a traced tensor (``@gradc.compile``), which has no values."""
    from .tensor_api import is_tensor_like
    if isinstance(data, (list, tuple)):
        return any(_holds_traced(x) for x in data)
    return is_tensor_like(data) and not isinstance(data, Tensor)


def _traced_tensor(data, dtype, requires_grad):
    """``gradc.tensor`` of traced data, as eagerly: a copy without history (``detach``), the
    elements of nested lists stacked (each a one-element tensor or a number)."""
    from .tensor_api import is_tensor_like, stack
    if requires_grad:
        from .ir.errors import TraceError
        raise TraceError("gradc.tensor(..., requires_grad=True) of a traced tensor makes a new leaf, which "
                         "@gradc.compile does not model: take it as an argument")

    def build(x):
        if isinstance(x, (list, tuple)):
            return stack([build(y) for y in x]) if x else _tensor([])
        if not is_tensor_like(x):
            return _tensor(x)
        if x.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return x.reshape(())
    out = (data if is_tensor_like(data) else build(data)).detach().clone()
    return out if dtype is None else out.to(dtypes.as_dtype(dtype))


def _tensor(data, dtype=None, device=None, requires_grad=False):
    if isinstance(data, np.ndarray):
        dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.from_numpy(data.dtype)
        array = _copy(data, dt.np)
    elif isinstance(data, Tensor):
        dt = dtypes.as_dtype(dtype) if dtype is not None else data.dtype
        array = _copy(data._data, dt.np)
    else:
        dt = dtypes.as_dtype(dtype) if dtype is not None else _infer_dtype(data)
        nested = _to_nested(data)
        try:
            if dt.category == 1:
                array = _integer_array(nested, dt)
            elif dt is dtypes.float16:
                with np.errstate(over="ignore"):       # (beyond float16's range: inf, silently)
                    array = np.array(nested, dtype=dt.np)
            else:
                array = np.array(nested, dtype=dt.np)
        except OverflowError:
            raise dtypes.overflow_error(dt, factory=True) from None
        except (ValueError, TypeError) as e:
            if "one element" in str(e):
                raise
            if "NaN" in str(e) or "infinity" in str(e):     # NaN or inf into an integer dtype
                raise dtypes.overflow_error(dt, factory=True) from None
            raise _ragged_error(data) from None
    return _finish(array, dt, requires_grad, device)


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor) and (dtype is None or dtypes.as_dtype(dtype) is data.dtype):
        return data
    if _holds_traced(data):
        from .tensor_api import is_tensor_like
        if is_tensor_like(data):        # (as eagerly: the tensor itself, or a conversion with history)
            return data if dtype is None else data.to(dtypes.as_dtype(dtype))
        return _traced_tensor(data, dtype, False)
    return _tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``array``."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    dt = dtypes.from_numpy(array.dtype)
    if dt.np != array.dtype:
        raise TypeError(f"can't convert np.ndarray of type numpy.{array.dtype}. The only supported types are: "
                        "float64, float32, int64, and bool.")
    return Tensor(array)


def _integer_array(nested, dt):
    """Nested Python numbers as an array of the integer ``dt``, each taken as PyTorch takes it
    (``dtypes.fits``: torch.tensor([-5], dtype=torch.uint8) holds 251; -0.5 or NaN is refused)."""
    values = np.array(nested)
    if values.dtype.kind in "iu":
        if values.size and not (dtypes.fits(int(values.min()), dt) and dtypes.fits(int(values.max()), dt)):
            raise OverflowError
        return values.astype(dt.np)         # (negatives into an unsigned type: two's complement)
    if values.dtype.kind == "f":            # floats, or ints among floats: each number as it is
        flat = np.array(nested, dtype=object).ravel()
        if not all(dtypes.fits(v, dt) for v in flat):
            raise OverflowError
        return np.array([int(v) for v in flat], dtype=np.int64).reshape(values.shape).astype(dt.np)
    return np.array(nested, dtype=dt.np)


def _filled(fill, size, dtype, requires_grad, device, default=None):
    shape = _shape_args(size)
    _options(dtype, device, requires_grad)
    dt = dtypes.as_dtype(dtype) if dtype is not None else (default or dtypes.default_float)
    dtypes.check_fits(fill, dt)
    try:
        array = np.full(shape, dtypes.unsigned_wrap(fill, dt), dtype=dt.np)
    except OverflowError:
        raise dtypes.overflow_error(dt) from None
    return _finish(array, dt, requires_grad, device)


@parses("ones", _SIZE, method=False)
def ones(*size, dtype=None, device=None, requires_grad=False):
    return _filled(1, size, dtype, requires_grad, device)


@parses("zeros", _SIZE, method=False)
def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _filled(0, size, dtype, requires_grad, device)


@parses("empty", _SIZE, method=False)
def empty(*size, dtype=None, device=None, requires_grad=False):
    return _filled(0, size, dtype, requires_grad, device)


@parses("full", f"(tuple of ints size, Number fill_value, *, Tensor out = None, {_OPTIONS})", method=False)
def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    if not isinstance(size, (tuple, list)):
        raise ArgumentError("full's size is not a sequence")
    number_arg(fill_value)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    default = dtypes.scalar_dtype(fill_value)
    return _filled(fill_value, (size,), dtype, requires_grad, device, default)


def _like_device(t, device, fn):
    """The device of a ``*_like`` result: ``t``'s unless given (PyTorch's TypeError if ``t`` is not
    a tensor)."""
    from .tensor_api import is_tensor_like
    if not is_tensor_like(t):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(t).__name__}")
    return t.device if device is None else device


@parses("ones_like", *(_LIKE,), method=False)
def ones_like(t, dtype=None, device=None, requires_grad=False):
    device = _like_device(t, device, "ones_like")
    return ones(t.shape, dtype=dtype or t.dtype, device=device, requires_grad=requires_grad)


@parses("zeros_like", *(_LIKE,), method=False)
def zeros_like(t, dtype=None, device=None, requires_grad=False):
    device = _like_device(t, device, "zeros_like")
    return zeros(t.shape, dtype=dtype or t.dtype, device=device, requires_grad=requires_grad)


@parses("empty_like", *(_LIKE,), method=False)
def empty_like(t, dtype=None, device=None, requires_grad=False):
    device = _like_device(t, device, "empty_like")
    return empty(t.shape, dtype=dtype or t.dtype, device=device, requires_grad=requires_grad)


@parses("full_like", "(Tensor input, Number fill_value, *, torch.memory_format memory_format = None, "
        f"{_OPTIONS})", method=False)
def full_like(t, fill_value, dtype=None, device=None, requires_grad=False):
    device = _like_device(t, device, "full_like")
    return full(t.shape, fill_value, dtype=dtype or t.dtype, device=device, requires_grad=requires_grad)


@parses("rand_like", *_LIKE_DRAWN, method=False)
def rand_like(t, dtype=None, device=None, requires_grad=False):
    device = _like_device(t, device, "rand_like")
    return rand(t.shape, dtype=dtype or t.dtype, device=device, requires_grad=requires_grad)


@parses("randn_like", *_LIKE_DRAWN, method=False)
def randn_like(t, dtype=None, device=None, requires_grad=False):
    device = _like_device(t, device, "randn_like")
    return randn(t.shape, dtype=dtype or t.dtype, device=device, requires_grad=requires_grad)


@parses("arange", *_ARANGE, method=False)
def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    _options(dtype, device, requires_grad)
    for v in (start, step) if end is None else (start, end, step):
        number_arg(v)
    if end is None:
        start, end = 0, start
    values = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if values[2] == 0:
        raise RuntimeError("step must be nonzero")
    if (values[1] - values[0]) * values[2] < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        dtype = dtypes.default_float if any(isinstance(v, float) for v in values) else dtypes.int64
    dt = dtypes.as_dtype(dtype)
    return _finish(np.arange(*values, dtype=np.float64).astype(dt.np), dt, requires_grad, device)


def _fma(a, b, c):
    """a * b + c rounded once (float64 arrays; error-free transforms: Dekker's product, Knuth's sum)."""
    p = a * b
    split = 134217729.0              # 2**27 + 1
    ta, tb = split * a, split * b
    ah, bh = ta - (ta - a), tb - (tb - b)
    al, bl = a - ah, b - bh
    perr = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    serr = (p - (s - bb)) + (c - bb)
    return s + (serr + perr)


@parses("linspace", *_LINSPACE, method=False)
def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """PyTorch's points: ``step = (end - start) / (steps - 1)`` in the result's float type,
    ``start + step * i`` for the first half and ``end - step * (steps - 1 - i)`` for the rest,
    each a fused multiply-add as PyTorch's CPU kernel computes it (integer results: from
    start and end cast to the integer type, in float64, truncated).  NumPy's ``linspace`` differs from it in the last bit at some points."""
    _options(dtype, device, requires_grad)
    number_arg(start), number_arg(end)
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.default_float
    steps = int_arg(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    work = np.float32 if dt.np == np.float32 else np.float64
    if dt.is_floating_point:
        a, b = work(float(start)), work(float(end))
    else:                            # PyTorch casts start and end to the integer type first
        a, b = work(int(start)), work(int(end))
    if steps <= 1:
        values = np.full(steps, a, np.float64)
    else:
        step = np.float64((b - a) / work(steps - 1))
        i = np.arange(steps, dtype=np.float64)
        n = np.full(steps, step)
        values = np.where(i < steps // 2, _fma(n, i, np.full(steps, np.float64(a))),
                          _fma(-n, (steps - 1) - i, np.full(steps, np.float64(b))))
    if work is np.float32:
        values = values.astype(np.float32)
    if not dt.is_floating_point:
        values = np.trunc(values)
    return _finish(values.astype(dt.np), dt, requires_grad, device)


def _traced_generator_error(generator):
    if generator is not None:
        from .ir.errors import TraceError
        raise TraceError("generator= is not supported under @gradc.compile (compiled draws come from the default "
                           "generator, seeded by gradc.manual_seed); draw outside the compiled function")


def _random(op, sample, size, dtype, requires_grad, device, generator=None):
    shape = _shape_args(size)
    _options(dtype, device, requires_grad)
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.default_float
    if not dt.is_floating_point:
        raise RuntimeError(f"\"{sample.__name__}\" not implemented for '{dt.tensor_type[:-6]}'")
    if dispatch.capturing.items and not requires_grad:      # traced by @gradc.compile: a draw at every call
        _traced_generator_error(generator)
        return dispatch.capturing[-1].draw(op, shape, dt)
    return _finish(sample(shape, dt.np).astype(dt.np), dt, requires_grad, device)


@parses("rand", *_SIZE_DRAWN, method=False)
def rand(*size, dtype=None, device=None, requires_grad=False, generator=None):
    return _random("rand_like", lambda shape, dt: numpy_rng(generator).random(shape, dt), size, dtype, requires_grad,
                   device, generator)


@parses("randn", *_SIZE_DRAWN, method=False)
def randn(*size, dtype=None, device=None, requires_grad=False, generator=None):
    return _random("randn_like", lambda shape, dt: numpy_rng(generator).standard_normal(shape, dt), size, dtype,
                   requires_grad, device, generator)


@parses("randint", *_RANDINT, method=False)
def randint(low=None, high=None, size=(), *, generator=None, dtype=None, device=None, requires_grad=False):
    if low is None:               # randint(high=5, size=...): the parser checked that high is given
        low = 0
    elif high is None:
        low, high = 0, low
    elif isinstance(high, (tuple, list)) and size == ():      # randint(high, size)
        low, high, size = 0, low, high
    low, high = int_arg(low), int_arg(high)
    if not isinstance(size, (tuple, list)):
        raise ArgumentError("randint's size is not a sequence")
    _options(dtype, device, requires_grad)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.int64
    values = numpy_rng(generator).integers(low, high, size=_shape_args((tuple(size),)))
    return _finish(values.astype(dt.np), dt, requires_grad, device)


@parses("randperm", *_RANDPERM, method=False)
def randperm(n, *, generator=None, dtype=None, device=None):
    n = int_arg(n)
    _options(dtype, device, False)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    return _finish(numpy_rng(generator).permutation(int(n)), dtype or dtypes.int64, False, device)


# ---- sampling from given parameters (torch.normal, bernoulli, multinomial) ----------------------
def _concrete(t):
    """The values of an eager tensor, None for a traced one (``@gradc.compile``)."""
    data = getattr(t, "_data", None)
    return data if isinstance(data, np.ndarray) else None


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """``mean + std * z`` with z standard normal, broadcast over tensor ``mean``/``std`` (so the
    gradient reaches both, as PyTorch's reparametrised one does), or ``size`` samples of float
    ``mean``/``std``.  Traced by ``@gradc.compile`` as a draw at every call."""
    from .tensor_api import is_tensor_like
    if not (is_tensor_like(mean) or is_tensor_like(std)):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, float): give "
                            "a tensor mean or std, or a size")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        out = randn(size, dtype=dtype, device=device, generator=generator) * std + mean
        return out.requires_grad_() if requires_grad else out
    like = mean if is_tensor_like(mean) else std
    if is_tensor_like(std):
        values = _concrete(std)
        if values is not None and values.size and values.min() < 0:
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    from .ops.rules import broadcast_shapes
    shape = broadcast_shapes("normal", tuple(getattr(mean, "shape", ())), tuple(getattr(std, "shape", ())))
    z = randn(shape, dtype=like.dtype, device=like.device, generator=generator)
    return mean + std * z


def bernoulli(input, p=None, *, generator=None):
    """1 with probability ``input`` (or ``p``) per element, in ``input``'s dtype."""
    probs = input if p is None else full_like(input, p)
    values = _concrete(probs)
    if values is not None and values.size and (values.min() < 0 or values.max() > 1):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    u = rand_like(probs) if generator is None else rand(probs.shape, dtype=probs.dtype, generator=generator)
    return (u < probs.detach()).to(input.dtype)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices drawn from the rows of ``input`` (unnormalised probabilities), int64 (eager only:
    how many distinct categories a row has depends on its values)."""
    values = _concrete(input)
    if values is None:
        from .ir.errors import TraceError
        raise TraceError("gradc.multinomial is not supported under @gradc.compile (its result depends on the "
                           "probabilities' values); draw it outside the compiled function")
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    rows = values.reshape(-1, values.shape[-1]).astype(np.float64)
    if not np.all(np.isfinite(rows)) or rows.min() < 0:
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if not replacement and num_samples > rows.shape[1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if np.any(rows.sum(1) <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    out = numpy_rng(generator).multinomial_rows(values.reshape(rows.shape), int(num_samples), replacement,
                                                values.dtype)
    return tensor(out.reshape(values.shape[:-1] + (num_samples,)), device=input.device)
