"""dtypes: gradc's four element types, their NumPy equivalents, and type promotion."""
from __future__ import annotations

import math

import numpy as np


class dtype:
    """A tensor element type, printed as PyTorch prints it (``torch.float32``)."""

    def __init__(self, name: str, np_dtype, ir_name: str, category: int, tensor_type: str):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.ir_name = ir_name          # MLIR-style element type: f32, f64, i64, i1
        self.category = category        # 0 bool, 1 integer, 2 floating
        self.tensor_type = tensor_type  # legacy name used in error messages (FloatTensor)
        self.itemsize = self.np.itemsize

    @property
    def scalar_type(self) -> str:
        """PyTorch's ScalarType name in its messages: Float, Double, Long, Bool, ..."""
        return self.tensor_type[:-len("Tensor")]

    @property
    def c_type(self) -> str:
        """The C++ type name some PyTorch messages print: float, double, long int, ..."""
        return _C_TYPES[self.name]

    @property
    def is_floating_point(self) -> bool:
        return self.category == 2

    @property
    def is_signed(self) -> bool:
        return self.np.kind in "if"

    @property
    def is_complex(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


bool_ = dtype("bool", np.bool_, "i1", 0, "BoolTensor")
uint8 = dtype("uint8", np.uint8, "ui8", 1, "ByteTensor")
int8 = dtype("int8", np.int8, "i8", 1, "CharTensor")
int16 = dtype("int16", np.int16, "i16", 1, "ShortTensor")
int32 = dtype("int32", np.int32, "i32", 1, "IntTensor")
int64 = dtype("int64", np.int64, "i64", 1, "LongTensor")
float16 = dtype("float16", np.float16, "f16", 2, "HalfTensor")
float32 = dtype("float32", np.float32, "f32", 2, "FloatTensor")
float64 = dtype("float64", np.float64, "f64", 2, "DoubleTensor")

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)
_C_TYPES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int", "int32": "int",
            "int64": "long int", "float16": "c10::Half", "float32": "float", "float64": "double"}
# The element types the compiler (IR, kernels, @gradc.compile) handles; the others are eager only.
COMPILED = (bool_, int64, float32, float64)
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"bool": bool_, "long": int64, "int": int32, "short": int16, "half": float16, "float": float32,
                 "double": float64})
_BY_IR = {d.ir_name: d for d in COMPILED}
BY_NUMPY = {d.np: d for d in ALL}     # NumPy dtype -> gradc dtype (arrays already in one)

default_float = float32


def from_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_ir(name: str) -> dtype:
    try:
        return _BY_IR[name]
    except KeyError:
        raise ValueError(f"unknown element type '{name}' (expected one of f32, f64, i64, i1)") from None


def from_numpy(np_dtype) -> dtype:
    """Map a NumPy dtype to gradc's; other integer widths (uint16/32/64) widen to int64."""
    try:
        known = BY_NUMPY.get(np_dtype)     # a NumPy dtype object (every array's): no conversion
    except TypeError:                    # unhashable: np.dtype() below says what is wrong
        known = None
    if known is not None:
        return known
    np_dtype = np.dtype(np_dtype)
    if np_dtype in BY_NUMPY:
        return BY_NUMPY[np_dtype]
    if np_dtype.kind in "iu":
        return int64
    if np_dtype.kind == "f":
        return float64 if np_dtype.itemsize > 4 else float32
    if np_dtype.kind == "b":
        return bool_
    raise TypeError(f"can't convert np.ndarray of type {np_dtype}. The only supported types are: "
                    "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.")


def as_dtype(d) -> dtype:
    """Accept a gradc dtype, a name ('float32'), a NumPy dtype or a Python type."""
    if isinstance(d, dtype):
        return d
    if d is float:                  # (Python's float is a double, as in PyTorch)
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    if isinstance(d, str):
        return from_name(d.replace("torch.", ""))
    return from_numpy(d)


def scalar_dtype(value) -> dtype:
    """The dtype PyTorch gives a bare Python scalar."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (complex, np.complexfloating)):
        raise TypeError(f"gradc has no complex dtypes: cannot use the complex number {value!r} as a tensor "
                        "operand (PyTorch would give a complex tensor)")
    return default_float


_C_TYPE_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t"}


def wrap_integer(value, dt: dtype):
    """A Python int taken into an integer dtype as PyTorch takes an operand: modulo 2**bits
    (uint8 + (-3) adds 253; int8 == 300 compares with 44).  Beyond int64 it stays as it is."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or dt.np.kind not in "iu":
        return value
    info = np.iinfo(dt.np)
    if info.min <= value <= info.max or not np.iinfo(np.int64).min <= value <= np.iinfo(np.uint64).max:
        return value
    span = 1 << info.bits
    value = int(value) % span
    return value - span if value > info.max else value


_INT_RANGES = {}


def _int_range(dt: dtype):
    found = _INT_RANGES.get(dt)
    if found is None:
        info = np.iinfo(dt.np)
        found = _INT_RANGES[dt] = (int(info.min), int(info.max))
    return found


def fits(value, dt: dtype) -> bool:
    """Whether PyTorch takes the number ``value`` into the integer type ``dt`` (c10's overflows):
    an integer within its range, or for an unsigned type down to minus its maximum (as two's
    complement: -5 into uint8 is 251); a float within the range (not NaN, -0.5 not into uint8)."""
    low, high = _int_range(dt)
    if isinstance(value, (float, np.floating)):
        return low <= value <= high            # (False for NaN)
    return (-high if low == 0 else low) <= value <= high


def check_fits(value, dt: dtype):
    """PyTorch's error for a number a fill, a bound or a scalar argument cannot hold in ``dt``
    (c10's checked conversion): an integer type as ``fits`` says, a finite float beyond a floating
    type's range (1e5 into float16); infinities, NaN into a float type, bools and integers beyond
    64 bits (the caller's own error) pass."""
    if dt is bool_ or isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return
    if dt.is_floating_point:
        if math.isfinite(value) and abs(value) > float(np.finfo(dt.np).max):
            raise overflow_error(dt)
    elif (isinstance(value, (float, np.floating)) or -2**63 <= value < 2**64) and not fits(value, dt):
        raise overflow_error(dt)


def unsigned_wrap(value, dt: dtype):
    """``value`` as an unsigned ``dt`` holds it: a negative integer PyTorch accepts (``fits``)
    becomes its two's complement; anything else is returned as it is."""
    if dt.np.kind == "u" and isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) \
            and -_int_range(dt)[1] <= value < 0:
        return int(value) + _int_range(dt)[1] + 1
    return value


def overflow_error(dt: dtype, *, factory=False) -> RuntimeError:
    """PyTorch's error for a value that a fill or a factory cannot store in ``dt``."""
    c_name = dt.name if factory else _C_TYPE_NAMES.get(dt.name, dt.c_type)
    return RuntimeError(f"value cannot be converted to type {c_name} without overflow")


def promote(a: dtype, b: dtype) -> dtype:
    """Promotion between two tensors of equal standing (both dimensioned, or both 0-d): the higher
    category, then the wider type; uint8 with int8 gives int16, as PyTorch's table."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if {a, b} == {uint8, int8}:
        return int16
    if uint8 in (a, b):
        return b if a is uint8 else a
    return a if a.itemsize >= b.itemsize else b


def result_type(operands) -> dtype:
    """PyTorch's result_type over (dtype, rank_class) pairs.

    rank_class is 2 for a tensor with dimensions, 1 for a 0-d tensor, 0 for a Python scalar.
    A lower class only changes the result when it is of a higher category (float beats int);
    a Python float then gives the default float type.
    """
    by_class = {}
    for d, cls in operands:
        by_class[cls] = d if cls not in by_class else promote(by_class[cls], d)
    best = None
    for cls in sorted(by_class, reverse=True):
        d = by_class[cls]
        if best is None:
            best = d
        elif d.category > best.category:
            best = d if cls > 0 else (default_float if d.category == 2 else d)
    return best


class finfo:
    """PyTorch's ``torch.finfo(dtype)``: the limits of a floating point dtype (the default float
    dtype when none is given), with PyTorch's fields and printed form."""

    def __init__(self, type=None):
        dt = default_float if type is None else as_dtype(type)
        if not dt.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = np.finfo(dt.np)
        self.bits, self.dtype = info.bits, dt.name
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -info.precision      # (NumPy rounds it to the type: 0.0010004 in float16)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """PyTorch's ``torch.iinfo(dtype)``: the limits of an integer dtype."""

    def __init__(self, type):
        dt = as_dtype(type)
        if dt.is_floating_point or dt is bool_:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                            "'torch.iinfo'")
        info = np.iinfo(dt.np)
        self.bits, self.dtype, self.min, self.max = info.bits, dt.name, int(info.min), int(info.max)

    def __repr__(self):
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"
