"""A catalogue of kernels ("test programs") run on the CPU and assembled for the GPU by the tests."""
from gradc.codegen.kernel_ir import KernelBuilder, build_matmul


def elementwise_chain(dtype="f32", n=1000):
    kb = KernelBuilder(f"chain_{dtype}", (n,))
    x = kb.load(kb.input("x", dtype, (n,)))
    y = kb.load(kb.input("y", dtype, (n,)))
    v = kb.op("add", kb.op("mul", kb.op("tanh", x), kb.op("sigmoid", y)), kb.op("exp", kb.op("neg", x)))
    v = kb.op("div", v, kb.op("add", kb.op("sqrt", kb.op("abs", y)), 1.0))
    v = kb.op("add", v, kb.op("mul", kb.op("sin", x), kb.op("cos", y)))
    v = kb.op("add", v, kb.op("log", kb.op("add", kb.op("abs", x), 0.5)))
    v = kb.op("maximum", kb.op("minimum", v, kb.op("rsqrt", kb.op("add", kb.op("abs", x), 1.0))), -3.0)
    v = kb.op("add", v, kb.op("pow", kb.op("add", kb.op("abs", y), 0.1), x))
    kb.store(kb.output("o", dtype, (n,)), kb.op("clamp", kb.op("relu", v), min=0.0, max=10.0))
    return kb.build()


def broadcast_transpose(dtype="f64", m=37, n=53):
    kb = KernelBuilder(f"bcast_tr_{dtype}", (m, n))
    at = kb.load(kb.input("a", dtype, (n, m)), broadcast_from_shape=(m, n), strides=(1, m))
    r = kb.load(kb.input("row", dtype, (n,)))
    c = kb.load(kb.input("col", dtype, (m, 1)))
    kb.store(kb.output("o", dtype, (m, n)), kb.op("where", kb.op("gt", at, r), kb.op("mul", at, c), r))
    return kb.build()


def ints_and_bools(n=101):
    kb = KernelBuilder("ints_bools", (n,))
    a = kb.load(kb.input("a", "i64", (n,)))
    b = kb.load(kb.input("b", "i64", (n,)))
    m = kb.load(kb.input("m", "i1", (n,)))
    s = kb.op("add", kb.op("mul", a, b), kb.op("maximum", a, b))
    p = kb.op("pow", a, kb.op("clamp", b, min=0, max=5))
    kb.store(kb.output("s", "i64", (n,)), kb.op("where", m, kb.op("sub", s, kb.op("sign", a)), kb.op("neg", p)))
    c = kb.op("logical_or", kb.op("logical_and", kb.op("lt", a, b), kb.op("logical_not", m)), kb.op("eq", a, b))
    kb.store(kb.output("c", "i1", (n,)), c)
    f = kb.op("cast", kb.op("add", kb.op("cast", a, dtype="f32"), 0.5), dtype="i64")
    kb.store(kb.output("f", "i64", (n,)), kb.op("add", f, kb.op("cast", m, dtype="i64")))
    return kb.build()


def rounding(dtype="f32", n=500):
    """floor, ceil, round (half to even, and to 2 decimals), trunc and frac, and integers through them;
    silu and leaky_relu."""
    kb = KernelBuilder(f"rounding_{dtype}", (n,))
    x = kb.op("mul", kb.load(kb.input("x", dtype, (n,))), 3.0)
    v = kb.op("add", kb.op("floor", x), kb.op("mul", kb.op("ceil", x), 2.0))
    v = kb.op("add", v, kb.op("mul", kb.op("round", x), 3.0))
    v = kb.op("add", v, kb.op("mul", kb.op("trunc", x), 5.0))
    v = kb.op("add", v, kb.op("mul", kb.op("frac", x), 7.0))
    v = kb.op("add", v, kb.op("mul", kb.op("silu", x), kb.op("leaky_relu", x, negative_slope=0.25)))
    kb.store(kb.output("o", dtype, (n,)), kb.op("add", v, kb.op("round", x, decimals=2)))
    i = kb.op("cast", x, dtype="i64")
    kb.store(kb.output("i", "i64", (n,)), kb.op("add", kb.op("floor", i), kb.op("round", i)))
    return kb.build()


def smooth_activations(dtype="f32", n=500):
    """log1p, expm1 and erf, and the activations built on them: softplus (two thresholds),
    logsigmoid, elu and gelu (erf and tanh forms)."""
    kb = KernelBuilder(f"smooth_{dtype}", (n,))
    x = kb.op("mul", kb.load(kb.input("x", dtype, (n,))), 4.0)
    v = kb.op("add", kb.op("log1p", kb.op("abs", x)), kb.op("mul", kb.op("expm1", x), 0.5))
    v = kb.op("add", v, kb.op("erf", x))
    v = kb.op("add", v, kb.op("softplus", x, beta=1.0, threshold=20.0))
    v = kb.op("add", v, kb.op("mul", kb.op("softplus", x, beta=2.0, threshold=3.0), 3.0))
    v = kb.op("add", v, kb.op("mul", kb.op("elu", x, alpha=0.5), 5.0))
    v = kb.op("add", v, kb.op("mul", kb.op("log_sigmoid", kb.op("mul", x, 10.0)), 0.25))
    v = kb.op("add", v, kb.op("mul", kb.op("gelu", x, approximate="none"), 7.0))
    kb.store(kb.output("o", dtype, (n,)), kb.op("add", v, kb.op("gelu", x, approximate="tanh")))
    return kb.build()


def trigonometry(dtype="f64", n=400):
    """tan, atan, atan2, asin, acos, sinh, cosh, asinh, acosh, atanh, log2, log10 and exp2 (inputs kept
    in their domains)."""
    kb = KernelBuilder(f"trig_{dtype}", (n,))
    x = kb.load(kb.input("x", dtype, (n,)))
    y = kb.load(kb.input("y", dtype, (n,)))
    unit = kb.op("div", x, kb.op("add", kb.op("abs", x), 1.0))          # in (-1, 1)
    v = kb.op("add", kb.op("tan", x), kb.op("atan", kb.op("mul", x, 3.0)))
    v = kb.op("add", v, kb.op("atan2", x, y))
    v = kb.op("add", v, kb.op("add", kb.op("asin", unit), kb.op("mul", kb.op("acos", unit), 2.0)))
    v = kb.op("add", v, kb.op("add", kb.op("sinh", x), kb.op("cosh", y)))
    v = kb.op("add", v, kb.op("add", kb.op("asinh", x), kb.op("acosh", kb.op("add", kb.op("abs", y), 1.0))))
    v = kb.op("add", v, kb.op("add", kb.op("log2", kb.op("abs", y)), kb.op("log10", kb.op("abs", x))))
    kb.store(kb.output("o", dtype, (n,)), kb.op("add", v, kb.op("add", kb.op("atanh", unit), kb.op("exp2", x))))
    return kb.build()


def reduce_program(kind, dtype, space, axes):
    kb = KernelBuilder(f"red_{kind}_{dtype}_{'x'.join(map(str, space))}_{''.join(map(str, axes))}", space)
    x = kb.load(kb.input("x", dtype, space))
    r = kb.reduce(kind, kb.op("mul", x, 0.5), axes)
    out_shape = tuple(n for k, n in enumerate(space) if k not in axes)
    kb.store(kb.output("o", dtype, out_shape), r)
    return kb.build()


def softmax(dtype="f32", n=64, m=1000, log=False):
    kb = KernelBuilder(f"{'log' if log else ''}softmax_{dtype}_{m}", (n, m))
    x = kb.load(kb.input("x", dtype, (n, m)))
    mx = kb.reduce("max", x, (1,))
    z = kb.op("sub", x, mx)
    s = kb.reduce("sum", kb.op("exp", z), (1,))
    y = kb.op("sub", z, kb.op("log", s)) if log else kb.op("div", kb.op("exp", z), s)
    kb.store(kb.output("out", dtype, (n, m)), y)
    return kb.build()


def layernorm(dtype="f32", n=33, m=700):
    kb = KernelBuilder(f"layernorm_{dtype}", (n, m))
    x = kb.load(kb.input("x", dtype, (n, m)))
    w = kb.load(kb.input("w", dtype, (m,)))
    bias = kb.load(kb.input("b", dtype, (m,)))
    mean = kb.reduce("mean", x, (1,))
    xc = kb.op("sub", x, mean)
    var = kb.reduce("mean", kb.op("mul", xc, xc), (1,))
    rstd = kb.op("rsqrt", kb.op("add", var, 1e-5))
    kb.store(kb.output("y", dtype, (n, m)), kb.op("add", kb.op("mul", kb.op("mul", xc, rstd), w), bias))
    kb.store(kb.output("rstd", dtype, (n, 1)), rstd)
    return kb.build()


def layernorm_grad(dtype="f32", n=33, m=700):
    """A layernorm's backward in one kernel: dx needs row reductions (inner), the gamma/beta
    gradients are column sums (accumulations over axis 0), and a scalar sums a per-row value."""
    kb = KernelBuilder(f"layernorm_grad_{dtype}", (n, m))
    x = kb.load(kb.input("x", dtype, (n, m)))
    g = kb.load(kb.input("g", dtype, (n, m)))
    w = kb.load(kb.input("w", dtype, (m,)))
    xc = kb.op("sub", x, kb.reduce("mean", x, (1,)))
    rstd = kb.op("rsqrt", kb.op("add", kb.reduce("mean", kb.op("mul", xc, xc), (1,)), 1e-5))
    xhat = kb.op("mul", xc, rstd)
    gw = kb.op("mul", g, w)
    a = kb.reduce("mean", gw, (1,))
    b = kb.reduce("mean", kb.op("mul", gw, xhat), (1,))
    dx = kb.op("mul", kb.op("sub", kb.op("sub", gw, a), kb.op("mul", xhat, b)), rstd)
    kb.store(kb.output("dx", dtype, (n, m)), dx)
    kb.store(kb.output("dw", dtype, (m,)), kb.reduce("sum", kb.op("mul", g, xhat), (0,)), index=(0, 1))
    kb.store(kb.output("db", dtype, (1, m)), kb.reduce("sum", g, (0,)), index=(0, 1))
    kb.store(kb.output("s", dtype, ()), kb.reduce("sum", rstd, (0,)), index=(0, 0))
    return kb.build()


def row_and_column_sums(dtype="f64", space=(6, 5, 40)):
    """Row sums of a 3-d value (inner axis 2) beside its sums over axis 0 (accumulation): axes
    0 and 1 are contiguous but must not merge, since only axis 0 accumulates."""
    kb = KernelBuilder(f"row_col_sums_{dtype}", space)
    x = kb.load(kb.input("x", dtype, space))
    e = kb.op("mul", x, kb.reduce("max", x, (2,)))
    kb.store(kb.output("rows", dtype, space[:2]), kb.reduce("sum", e, (2,)))
    kb.store(kb.output("cols", dtype, space[1:]), kb.reduce("sum", e, (0,)), index=(0, space[2], 1))
    return kb.build()


def count_above_row_mean(n=7, m=33):
    """An integer accumulation: per column, how many elements exceed their row's mean."""
    kb = KernelBuilder("count_above", (n, m))
    x = kb.load(kb.input("x", "f32", (n, m)))
    above = kb.op("gt", x, kb.reduce("mean", x, (1,)))
    kb.store(kb.output("counts", "i64", (m,)), kb.reduce("sum", above, (0,)), index=(0, 1))
    kb.store(kb.output("mask", "i1", (n, m)), above)
    return kb.build()


def mse(dtype="f32", shape=(64, 31)):
    kb = KernelBuilder(f"mse_{dtype}", shape)
    x = kb.load(kb.input("x", dtype, shape))
    w = kb.load(kb.input("w", dtype, shape[-1:]))
    y = kb.load(kb.input("y", dtype, shape))
    d = kb.op("sub", kb.op("tanh", kb.op("mul", x, w)), y)
    kb.store(kb.output("loss", dtype, ()), kb.reduce("mean", kb.op("pow", d, 2.0), (0, 1)))
    return kb.build()


def bool_any_count(space=(16, 100)):
    kb = KernelBuilder("any_count", space)
    x = kb.load(kb.input("x", "f64", space))
    pos = kb.op("gt", x, 0.5)
    kb.store(kb.output("cnt", "i64", space[:1]), kb.reduce("sum", pos, (1,)))
    kb.store(kb.output("any", "i1", space[:1]), kb.reduce("max", pos, (1,)))
    kb.store(kb.output("imax", "i64", space[:1]), kb.reduce("max", kb.op("cast", kb.op("mul", x, 100.0),
                                                                          dtype="i64"), (1,)))
    return kb.build()


def matmul_relu_bias(dtype="f32", M=20, N=30, K=40):
    def epi(kb, acc, axes):
        bias = kb.load(kb.input("bias", dtype, (N,)), index=(0, 1, 0))
        return kb.op("relu", kb.op("add", acc, bias))
    return build_matmul(f"linear_relu_{dtype}", (M, K), (K, N), dtype, epilogue=epi)


def programs():
    """name -> Kernel"""
    ks = [elementwise_chain("f32"), elementwise_chain("f64"), broadcast_transpose("f32"),
          broadcast_transpose("f64"), ints_and_bools(), softmax("f32"), softmax("f64", log=True),
          softmax("f32", n=300, m=16), layernorm("f32"), layernorm("f64"), mse("f32"), mse("f64"),
          layernorm_grad("f32"), layernorm_grad("f64"), row_and_column_sums("f64"), row_and_column_sums("f32"),
          count_above_row_mean(), rounding("f32"), rounding("f64"),
          smooth_activations("f32"), smooth_activations("f64"), trigonometry("f32"), trigonometry("f64"),
          bool_any_count(), matmul_relu_bias("f32"), matmul_relu_bias("f64"),
          build_matmul("bmm_f32", (3, 17, 9), (3, 9, 33), "f32"),
          build_matmul("mm_t_f64", (12, 8), (8, 10), "f64", a_strides=(1, 12)),
          build_matmul("mv_f32", (5, 7), (7,), "f32")]
    for kind in ("sum", "max", "min", "prod", "mean"):
        for dtype in ("f32", "f64"):
            ks.append(reduce_program(kind, dtype, (6, 300), (1,)))
            ks.append(reduce_program(kind, dtype, (40, 5, 3), (0, 2)))
    ks.append(reduce_program("sum", "f32", (1 << 16,), (0,)))
    return {k.name: k for k in ks}
