"""Result dtypes, values and errors against PyTorch: binary ops over every pair of dtypes, 0-d
tensors and Python numbers on either side (functional forms with a number first, add/sub with
alpha, addcmul/addcdiv, lerp, hypot, in-place ops that cannot cast, bool operands, numbers into
integer dtypes), and reductions of every dtype with their dtype= arguments."""
import operator
import warnings

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
VALUES = {"bool": [True, False, True, False], "uint8": [0, 1, 7, 200], "int8": [-7, 0, 3, -128],
          "int16": [-7, 0, 3, 300], "int32": [-7, 0, 5, -2], "int64": [-7, 0, 3, 2**40],
          "float16": [-1.5, 0.0, 2.0, float("nan")], "float32": [-7.5, 0.0, float("inf"), float("nan")],
          "float64": [-2.5, -0.0, 3.0, float("-inf")]}
SCALAR = {"bool": True, "uint8": 200, "int8": -3, "int16": 5, "int32": -2, "int64": 3, "float16": 1.5,
          "float32": -2.5, "float64": 0.5}
NUMBERS = [3, -2, 0, 2.5, True, False]


def matrix(m, dt):
    """A 4x4 tensor whose row i holds VALUES[dt][i]: against a row it pairs every two values."""
    return m.tensor([[v] * 4 for v in VALUES[dt]], dtype=getattr(m, dt))


def row(m, dt):
    return m.tensor(VALUES[dt], dtype=getattr(m, dt))


def zero_d(m, dt):
    return m.tensor(SCALAR[dt], dtype=getattr(m, dt))


def outcome(m, fn):
    """What ``fn(m)`` gives, comparable across torch and gradc (``same``): dtype, shape and values
    of each result, or the error's builtin type and first line."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(m)
    except Exception as e:          # (the error is the outcome compared: its builtin types and first line)
        return ("error", frozenset(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins"),
                str(e).split("\n")[0])
    rs = r if isinstance(r, tuple) else (r,)
    return tuple((str(x.dtype), tuple(x.shape), np.asarray(x.tolist())) for x in rs)


def same(want, got) -> bool:
    """Equal outcomes: the same error, or the same dtypes and shapes with values equal (NaN where
    NaN; floats within 1e-6, float16 within about two ulps: PyTorch accumulates some float16
    reductions in float16, gradc in float32)."""
    if want[0] == "error" or got[0] == "error":      # (gradc's error may be of more types than torch's)
        return want[0] == got[0] and want[1] <= got[1] and want[2] == got[2]
    if len(want) != len(got):
        return False
    for (dt, shape, a), (dt2, shape2, b) in zip(want, got):
        if (dt, shape) != (dt2, shape2):
            return False
        if a.dtype.kind == "f" or b.dtype.kind == "f":
            close = np.isclose(a.astype(float), b.astype(float), rtol=2e-3 if "16" in dt else 1e-6, atol=0,
                               equal_nan=True)
            if not close.all():
                return False
        elif not np.array_equal(a, b):
            return False
    return True


def mismatches(cases):
    """The (label, torch's, gradc's) outcomes that differ among ``cases`` (label, fn)."""
    out = []
    for label, fn in cases:
        want, got = outcome(torch, fn), outcome(gradc, fn)
        if not same(want, got):
            out.append((label, want, got))
    return out


def operand_pairs():
    """(label, left, right) over tensors of every dtype (4x4, 0-d) against tensors (row, 0-d) and numbers."""
    lefts = [(f"{dt}[4,4]", lambda m, dt=dt: matrix(m, dt)) for dt in DTYPES]
    lefts += [(f"{dt}()", lambda m, dt=dt: zero_d(m, dt)) for dt in DTYPES]
    rights = [(f"{dt}[4]", lambda m, dt=dt: row(m, dt)) for dt in DTYPES]
    rights += [(f"{dt}()", lambda m, dt=dt: zero_d(m, dt)) for dt in DTYPES]
    rights += [(repr(v), lambda m, v=v: v) for v in NUMBERS]
    return [(f"{la}, {lb}", a, b) for la, a in lefts for lb, b in rights]


NUMBER_FIRST = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "bitwise_and", "bitwise_or",
                "bitwise_xor", "bitwise_left_shift", "eq", "fmod", "atan2"]


@pytest.mark.parametrize("name", NUMBER_FIRST)
def test_functions_with_a_number_first_promote_it_as_a_number(name):
    # torch.mul(3, uint8 0-d) is uint8: the number is a "wrapped number", not a 0-d int64 tensor
    cases = [(f"{name}({v!r}, {dt}{kind})", lambda m, v=v, dt=dt, make=make: getattr(m, name)(v, make(m, dt)))
             for v in NUMBERS for dt in DTYPES for kind, make in (("()", zero_d), ("[4]", row))]
    assert mismatches(cases) == []


OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
             "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_, "|": operator.or_,
             "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift, "==": operator.eq, "<": operator.lt,
             ">=": operator.ge}


@pytest.mark.parametrize("symbol", OPERATORS)
def test_operators_over_every_pair_of_dtypes_and_numbers(symbol):
    op = OPERATORS[symbol]
    cases = [(f"{label}: {symbol}", lambda m, a=a, b=b: op(a(m), b(m))) for label, a, b in operand_pairs()]
    cases += [(f"{label}: reflected {symbol}", lambda m, a=a, b=b: op(b(m), a(m)))
              for label, a, b in operand_pairs() if label.split(", ")[1][0].isdigit() or "True" in label
              or "False" in label or "-" in label.split(", ")[1]]
    assert mismatches(cases) == []


BOOL_REFUSED = ["floor_divide", "remainder", "fmod", "pow", "bitwise_left_shift", "bitwise_right_shift"]


@pytest.mark.parametrize("name", BOOL_REFUSED)
def test_ops_without_a_bool_kernel_refuse_bool_operands(name):
    # bool // True, True % b, b << True: PyTorch's "not implemented for 'Bool'"; a bool with an
    # integer still promotes (b // 2 is int64)
    cases = [(f"{name}({a}, {b})", lambda m, a=a, b=b: getattr(m, name)(a(m), b(m)))
             for a in (lambda m: row(m, "bool"), lambda m: zero_d(m, "bool"))
             for b in (lambda m: row(m, "bool"), lambda m: zero_d(m, "bool"), lambda m: True, lambda m: False,
                       lambda m: 2, lambda m: row(m, "uint8"))]
    cases += [(f"{name}(True, bool)", lambda m: getattr(m, name)(True, row(m, "bool")))]
    assert mismatches(cases) == []


@pytest.mark.parametrize("call", ["torch.div(b, b, rounding_mode='trunc')", "torch.div(b, True, rounding_mode='floor')",
                                  "torch.clamp(b, b, b)", "torch.clamp(b, min=b)", "b.clamp(max=True)",
                                  "torch.clamp_min(b, True)", "b.clamp(True, False)", "b ** True", "b ** False",
                                  "b - True", "torch.tensor([1, 2], dtype=torch.uint8) - False",
                                  "torch.sub(b, True, alpha=2)", "b.sub_(True)"])
def test_bool_refusals_name_pytorchs_kernel(call):
    def run(m):
        return eval(call, {"torch": m, "b": m.tensor([True, False])})
    assert same(outcome(torch, run), outcome(gradc, run))


PAIRWISE = {
    "add(alpha=2)": lambda m, a, b: m.add(a, b, alpha=2), "sub(alpha=-3)": lambda m, a, b: m.sub(a, b, alpha=-3),
    "addcmul": lambda m, a, b: m.addcmul(a, b, b, value=2), "addcdiv": lambda m, a, b: m.addcdiv(a, b, b, value=2),
    "addcmul(value=0.5)": lambda m, a, b: m.addcmul(a, b, a, value=0.5),
    "addcdiv(a, a, b)": lambda m, a, b: m.addcdiv(a, a, b),
}


@pytest.mark.parametrize("name", PAIRWISE)
def test_alpha_and_value_scale_in_the_result_dtype(name):
    # uint8 + int8 * 2 is int16 arithmetic (200 + 2 * -128 = -56, not 200 + 0); addcmul of a uint8
    # input with bool factors is uint8; bool addcmul and integer addcdiv are refused
    f = PAIRWISE[name]
    cases = [(f"{name}: {label}", lambda m, a=a, b=b: f(m, a(m), b(m))) for label, a, b in operand_pairs()]
    assert mismatches(cases) == []


INPLACE = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
           "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "&=": operator.iand,
           "|=": operator.ior, "^=": operator.ixor, "<<=": operator.ilshift, ">>=": operator.irshift,
           "add_": lambda a, b: a.add_(b), "sub_": lambda a, b: a.sub_(b), "mul_": lambda a, b: a.mul_(b),
           "div_": lambda a, b: a.div_(b), "div_(floor)": lambda a, b: a.div_(b, rounding_mode="floor"),
           "remainder_": lambda a, b: a.remainder_(b), "fmod_": lambda a, b: a.fmod_(b),
           "floor_divide_": lambda a, b: a.floor_divide_(b), "bitwise_and_": lambda a, b: a.bitwise_and_(b),
           "atan2_": lambda a, b: a.atan2_(b), "copysign_": lambda a, b: a.copysign_(b),
           "hypot_": lambda a, b: a.hypot_(b), "true_divide_": lambda a, b: a.true_divide_(b)}


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_ops_check_shape_then_cast_before_computing(name):
    # bool //= 0 is "result type Long can't be cast to the desired output type Bool" (not a
    # division by zero); a 0-d self with a [4] other is the shape error first; bool -= x the bool error
    op = INPLACE[name]

    def run(m, a, b):
        x = a(m)
        result = op(x, b(m))
        return result, x
    cases = [(f"{label}: {name}", lambda m, a=a, b=b: run(m, a, b)) for label, a, b in operand_pairs()]
    assert mismatches(cases) == []


@pytest.mark.parametrize("call", ["torch.hypot(i, i)", "torch.hypot(i, f)", "torch.hypot(h, i)", "torch.hypot(b, b)",
                                  "torch.hypot(f, 3)", "f.hypot(3)", "f.hypot_(True)", "torch.hypot(f, nan_inf)",
                                  "torch.hypot(nan_inf, f)", "torch.hypot(h, h * 7)"])
def test_hypot_promotes_without_turning_integers_into_floats(call):
    def run(m):
        env = {"torch": m, "i": m.tensor([3, -7]), "f": m.tensor([4.0, 1.5]), "b": m.tensor([True, False]),
               "h": m.tensor([-1.5, 2.0], dtype=m.float16),
               "nan_inf": m.tensor([float("nan"), float("inf")])}
        return eval(call, env)
    assert same(outcome(torch, run), outcome(gradc, run))


SCALAR_INTO = ["torch.where(c, x, v)", "torch.where(c, v, x)", "torch.clamp(x, v)", "x.clamp(max=v)", "x.fill_(v)",
               "x.masked_fill(c, v)", "x ** v", "x.pow_(v)", "x == v", "x + v", "torch.full((2,), v, dtype=x.dtype)",
               "torch.tensor([v, 3], dtype=x.dtype)", "torch.tensor(v, dtype=x.dtype)",
               "torch.tensor([[v], [1.5]], dtype=x.dtype)", "x.index_fill(0, torch.tensor([0]), v)",
               "x.new_full((2,), v)", "torch.full_like(x, v)", "x.add(x, alpha=v)", "x.sub(1, alpha=v)"]


@pytest.mark.parametrize("expr", SCALAR_INTO)
@pytest.mark.parametrize("dt", ["uint8", "int8", "int16", "bool", "int64", "float16"])
def test_python_numbers_into_integer_dtypes_as_pytorch_takes_them(dt, expr):
    # c10's overflows: an unsigned type takes down to minus its maximum as two's complement
    # (where(c, uint8, -2) holds 254; clamp's bound -2 is 254), not below; a float NaN is refused;
    # 2**40 does not fit float16 for a fill, a bound or alpha, but does as an operand (inf)
    def run(m, v):
        env = {"torch": m, "x": m.tensor([1, 200 if dt == "uint8" else 2], dtype=getattr(m, dt)),
               "c": m.tensor([True, False]), "v": v}
        return eval(expr, env)
    cases = [(f"{expr} v={v!r}", lambda m, v=v: run(m, v))
             for v in (-2, -255, -256, 300, -129, 2**40, 3, 0.5, -0.5, float("nan"), True)]
    assert mismatches(cases) == []


FLOATING_PAIRS = {
    "lerp(a, b, 0.5)": lambda m, a, b: m.lerp(a, b, 0.5), "lerp(a, b, 0.25)": lambda m, a, b: m.lerp(a, b, 0.25),
    "lerp(a, b, b)": lambda m, a, b: m.lerp(a, b, b), "a.lerp_(b, 0.75)": lambda m, a, b: a.lerp_(b, 0.75),
    "lerp(a, a * 2, b)": lambda m, a, b: m.lerp(a, a * 2, b), "xlogy": lambda m, a, b: m.xlogy(a, b),
    "copysign": lambda m, a, b: m.copysign(a, b), "xlogy_": lambda m, a, b: a.xlogy_(b),
}


@pytest.mark.parametrize("name", FLOATING_PAIRS)
def test_floating_functions_of_two_operands(name):
    # lerp: PyTorch's two-sided formula (lerp(x, inf, 0.5) is NaN), no integer kernels, a 0-d
    # weight of any dtype; xlogy/copysign take a Python float as a number (float16 0-d stays float16)
    f = FLOATING_PAIRS[name]
    cases = [(f"{name}: {label}", lambda m, a=a, b=b: f(m, a(m), b(m))) for label, a, b in operand_pairs()]
    assert mismatches(cases) == []


REDUCTION_INPUTS = {
    "values": lambda m, dt: m.tensor([VALUES[dt], VALUES[dt][1:] + VALUES[dt][:1]], dtype=getattr(m, dt)),
    "0-d": zero_d, "empty": lambda m, dt: m.zeros(0, 3, dtype=getattr(m, dt)),
}
REDUCTIONS = ["sum", "prod", "mean", "nansum", "nanmean", "std", "var", "max", "min", "amax", "amin", "argmax",
              "argmin", "any", "all", "cumsum", "cumprod", "logsumexp", "norm", "median", "nanmedian",
              "count_nonzero"]
TAKE_DTYPE = ["sum", "prod", "mean", "nansum", "nanmean", "cumsum", "cumprod", "norm"]


def reduction_calls(name):
    yield "", lambda m, x: getattr(m, name)(x)
    yield "(0)", lambda m, x: getattr(m, name)(x, 0)
    if name in ("cumsum", "cumprod", "count_nonzero"):
        yield ".method(-1)", lambda m, x: getattr(x, name)(-1)
    else:
        yield ".method(dim=-1, keepdim=True)", lambda m, x: getattr(x, name)(dim=-1, keepdim=True)
    if name in TAKE_DTYPE:
        for dt in DTYPES:
            if name in ("cumsum", "cumprod"):
                yield f"(0, dtype={dt})", lambda m, x, dt=dt: getattr(m, name)(x, 0, dtype=getattr(m, dt))
            else:
                yield f"(dtype={dt})", lambda m, x, dt=dt: getattr(m, name)(x, dtype=getattr(m, dt))


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_of_every_dtype(name):
    # mean/nanmean refuse an integer dtype=, cumsum a bool one; median has no bool kernel and
    # refuses an empty dim; norm refuses a narrowing dtype=; aminmax of nothing has no identity
    cases = [(f"{name}{label} of {dt} {kind}", lambda m, dt=dt, make=make, call=call: call(m, make(m, dt)))
             for dt in DTYPES for kind, make in REDUCTION_INPUTS.items() for label, call in reduction_calls(name)]
    assert mismatches(cases) == []


@pytest.mark.parametrize("call", ["torch.aminmax(torch.zeros(0))", "torch.aminmax(torch.zeros(0, 3), dim=0)",
                                  "torch.aminmax(torch.zeros(0, 3), dim=1)", "torch.median(torch.tensor(True), 0)",
                                  "torch.nanmedian(torch.zeros(2, 0), 1)"])
def test_empty_and_bool_extrema(call):
    def run(m):
        return eval(call, {"torch": m})
    assert same(outcome(torch, run), outcome(gradc, run))


MORE_PAIRS = {name: f for name, f in {
    "logaddexp": lambda m, a, b: m.logaddexp(a, b), "logaddexp2": lambda m, a, b: m.logaddexp2(a, b),
    "nextafter": lambda m, a, b: m.nextafter(a, b), "gcd": lambda m, a, b: m.gcd(a.abs(), b.abs()),
    "lcm": lambda m, a, b: m.lcm(a, b), "heaviside": lambda m, a, b: m.heaviside(a, b),
    "isclose": lambda m, a, b: m.isclose(a, b), "dist": lambda m, a, b: m.dist(a, b),
    "masked_fill": lambda m, a, b: a.masked_fill(m.ones(a.shape, dtype=m.bool), b),
    "index_put_": lambda m, a, b: a.reshape(-1).index_put_((m.tensor([0]),), b),
}.items()}


@pytest.mark.parametrize("name", MORE_PAIRS)
def test_more_functions_of_two_operands(name):
    # logaddexp/logaddexp2/nextafter promote without making integers floats (then refuse them);
    # gcd/lcm take bool with an integer; isclose: an infinity is close to nothing finite, integers
    # do not wrap; dist refuses integers and sums float16 at float32; a Python number where a
    # tensor is expected is PyTorch's argument error
    f = MORE_PAIRS[name]
    cases = [(f"{name}: {label}", lambda m, a=a, b=b: f(m, a(m), b(m))) for label, a, b in operand_pairs()
             if not (name == "index_put_" and label.split(", ")[0].endswith("()"))]
    assert mismatches(cases) == []


@pytest.mark.parametrize("call", ["torch.tensor([True]).relu()", "+torch.tensor([True])", "torch.positive(torch.tensor([True]))",
                                  "torch.nextafter(torch.tensor([1.0, 0.0], dtype=torch.float16), torch.tensor([2.0, -1.0], dtype=torch.float16))"])
def test_bool_unary_refusals_and_float16_nextafter(call):
    def run(m):
        return eval(call, {"torch": m})
    assert same(outcome(torch, run), outcome(gradc, run))


@pytest.mark.parametrize("call", ["b.clamp_(3)", "b.clamp_min_(3)", "b.clamp_max_(3)", "b.clamp_(min=i)",
                                  "i.clamp_(2.5)", "i.clamp_min_(2.5)", "i.clamp_(max=2.5)", "b.clamp_(3, 4)",
                                  "b.clamp_(True)", "i.clamp_(min=torch.tensor([1.5, 2.0]))", "i.clamp_(1, 1)"])
def test_inplace_clamp_cast_errors_word_the_type_as_pytorch(call):
    def run(m):
        return eval(call, {"torch": m, "b": m.tensor([True, False]), "i": m.tensor([1, 2])})
    assert same(outcome(torch, run), outcome(gradc, run))


@pytest.mark.parametrize("call", ["torch.maximum(z, r, out=z)", "torch.add(r, o, out=o)", "torch.add(r2, r2, out=r2)",
                                  "torch.add(r, r, out=z)", "torch.mul(z, r, out=torch.zeros(3, dtype=torch.int64))",
                                  "torch.add(r, f, out=z)"])
def test_out_that_is_an_input_is_not_resized(call):
    # PyTorch resizes an out= tensor (with a warning) unless it is one of the call's inputs
    def run(m):
        env = {"torch": m, "z": m.tensor(0), "r": m.tensor([1, 2]), "o": m.tensor([5]), "r2": m.tensor([3, 4]),
               "f": m.tensor([1.5, 2.5])}
        return eval(call, env)
    assert same(outcome(torch, run), outcome(gradc, run))


@pytest.mark.parametrize("call", ["x.copy_(3)", "x.copy_(True)", "i.copy_(2.7)", "u.copy_(-1)", "u.copy_(300)",
                                  "x.copy_('a')", "z[0]", "z.__setitem__(0, 2.0)", "z[0:1]", "z[None, 0]",
                                  "z.__setitem__(0, x)", "z.__setitem__(torch.tensor([0]), x)",
                                  "z.index_put_((torch.tensor([0]),), torch.tensor(2.0))",
                                  "torch.tensor([[1.0]]).index_put_((torch.tensor([0]),) * 3, torch.tensor(2.0))",
                                  "b.clamp_min_(i)", "z.clamp_min_(x)", "z.clamp_(x, x)"])
def test_copy_of_a_number_and_errors_of_0d_indexing(call):
    # copy_ takes a number as the 0-d tensor PyTorch makes of it (300 into uint8 is 44); 0-d
    # tensors refuse an int or a slice index in PyTorch's words; in-place clamp checks the shape first
    def run(m):
        env = {"torch": m, "x": m.tensor([1.0, 2.0]), "i": m.tensor([1, 2]), "u": m.tensor([1, 2], dtype=m.uint8),
               "z": m.tensor(1.0), "b": m.tensor(True)}
        return eval(call, env)
    assert same(outcome(torch, run), outcome(gradc, run))


UNARY = ["angle", "sgn", "signbit", "abs", "neg", "sign", "sqrt", "exp", "round", "floor", "frac", "reciprocal",
         "square", "sigmoid", "bitwise_not", "logical_not", "isnan", "isinf", "relu", "positive", "nan_to_num",
         "exp2", "log1p", "deg2rad", "float", "long", "bool", "half", "byte"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_of_every_dtype(name):
    # the result dtype (integers and bools into the default float for the floating functions),
    # NaN and infinities, and bool refusals (relu, +, abs, ...), as PyTorch's
    cases = [(f"{name}({dt}{kind})", lambda m, dt=dt, make=make: getattr(make(m, dt), name)())
             for dt in DTYPES for kind, make in (("[4,4]", matrix), ("()", zero_d))]
    if not isinstance(getattr(torch, name, None), (torch.dtype, type(None))):      # (torch.float is a dtype)
        cases.append((f"torch.{name}", lambda m: getattr(m, name)(row(m, "float32"))))
    assert mismatches(cases) == []


@pytest.mark.parametrize("call", ["torch.ldexp(f, torch.tensor([200, 1000, -2]))", "torch.ldexp(f, b)",
                                  "torch.ldexp(f, torch.tensor([200.0, 1000.0, -2.0]))",
                                  "torch.ldexp(f.half(), torch.tensor([2, 3, -2]))", "torch.ldexp(f, 2)",
                                  "torch.ldexp(torch.tensor([3, 2, 0]), h)", "torch.ldexp(i, i)", "torch.ldexp(b, b)",
                                  "torch.ldexp(i, b)", "torch.ldexp(torch.tensor([0, 1, 2]), torch.tensor([200, 3, 1]))",
                                  "torch.ldexp(f, torch.tensor([2**40, 2**31 + 3, -(2**35)]))", "f.ldexp(i)",
                                  "torch.ldexp(torch.tensor([-7.5, 0.0, 1.0]), h)"])
def test_ldexp_scales_exactly_by_an_integer_exponent_of_a_float(call):
    # a floating input and an integer exponent: C's ldexp with an int exponent (0 * 2^1000 is 0,
    # 1e-38 * 2^200 finite, 2**40 is 0); otherwise input * 2^other (0 * 2^200 is NaN)
    def run(m):
        env = {"torch": m, "f": m.tensor([1e-38, 0.0, 3.0]), "b": m.tensor([True, False, True]),
               "i": m.tensor([3, -7, 0]), "h": m.tensor([-1.5, 0.5, 2.0], dtype=m.float16)}
        return eval(call, env)
    assert same(outcome(torch, run), outcome(gradc, run))


@pytest.mark.parametrize("call", ["torch.clamp(x, r, 3)", "torch.clamp(x, z, 3)", "torch.clamp(x, u, 2)",
                                  "x.clamp_(u, 2.5)", "x.clamp_(z, 3)", "torch.clamp(x, b, 2.5)", "torch.clamp(x, z, z)",
                                  "torch.clamp(f, z, 3)", "f.clamp_(z, 2.5)", "torch.clamp(i8, u, 3)"])
def test_clamp_with_a_tensor_and_a_number_bound(call):
    # PyTorch's parser: a 0-d tensor beside a number bound is a number (which must fit the
    # input's dtype); a tensor with dimensions beside a number fits no signature
    def run(m):
        env = {"torch": m, "x": m.tensor([[1, 5], [-3, 2]]), "r": m.tensor([0, 1]), "z": m.tensor(1),
               "u": m.tensor(200, dtype=m.uint8), "b": m.tensor(True), "f": m.tensor([0.5, 4.0]),
               "i8": m.tensor([1, 2], dtype=m.int8)}
        return eval(call, env)
    assert same(outcome(torch, run), outcome(gradc, run))


@pytest.mark.parametrize("call", ["torch.lerp(3, t)", "torch.lerp(t, t)", "t.lerp(t)", "torch.median(t, dtype=torch.int32)",
                                  "torch.cummax(t)", "t.cummax()", "torch.median(t, 0, dtype=torch.int32)"])
def test_arguments_that_do_not_bind_get_pytorchs_message(call):
    # (a decorator's helper failing to bind them is the call's argument error too)
    def run(m):
        return eval(call, {"torch": m, "t": m.tensor([1.0, 2.0])})
    assert same(outcome(torch, run), outcome(gradc, run))


@pytest.mark.parametrize("call", ["x ** -0.5", "x.half() ** -0.5", "x ** torch.tensor(0.5, dtype=torch.float64)",
                                  "x.half() ** torch.tensor(0.5, dtype=torch.float16)", "x ** 0.5", "x.half() ** 2.5",
                                  "2.5 ** x.half()", "x.half() ** x.half()"])
def test_pow_special_values_as_pytorch(call):
    # pow(x, -0.5) is rsqrt for float and double (-0.0 gives -inf) but not float16; a tensor
    # exponent 0.5 is C's pow (+0.0 for -0.0), a Python 0.5 sqrt (-0.0)
    def run(m):
        return eval(call, {"torch": m, "x": m.tensor([-0.0, 1.0, 2.0, -3.0, float("-inf"), 0.3], dtype=m.float64)})
    want, got = outcome(torch, run), outcome(gradc, run)
    assert same(want, got)
    numbers = ~np.isnan(want[0][2])           # (the signs of zeros and infinities; a NaN's is no value's)
    assert np.array_equal(np.signbit(want[0][2])[numbers], np.signbit(got[0][2])[numbers])
