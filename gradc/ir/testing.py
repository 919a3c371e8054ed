"""Random tensor programs for property tests of the IR, its passes and backends.

``generate_program(choose)`` builds a random straight-line program over the
tensor API -- chains of table ops (elementwise with broadcasting and Python
scalars, reductions, softmax, reshapes and permutes, indexing, matmul, cat,
max-along-dim, casts, clamp, where, in-place updates of clones, captured eager
constants) on random shapes -- and returns a ``Program``: call it on eager
tensors or hand it to the tracer (``program.trace()``); both replay the same
recorded steps, so they compute the same thing.

``choose(lo, hi)`` returns an int in ``[lo, hi]``: pass ``random.Random(s).randint``
for plain randomness, or ``lambda lo, hi: data.draw(st.integers(lo, hi))`` with
Hypothesis for shrinking. Nothing here imports Hypothesis.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import dtypes
from .tracer import ArgSpec, trace

_UNARY = ["exp", "neg", "tanh", "sigmoid", "relu", "abs", "sin", "cos", "sqrt", "log", "square", "rsqrt"]
_BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]
_SCALAR = ["add", "sub", "mul", "div", "pow"]
_REDUCE = ["sum", "mean", "amax", "amin", "prod", "logsumexp", "var", "norm"]


@dataclass
class Program:
    """A replayable random program: ``specs`` for its arguments, ``steps`` to run."""
    specs: list
    steps: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    constants: list = field(default_factory=list)

    def __call__(self, *inputs):
        pool = list(inputs)
        for step in self.steps:
            pool.append(_run_step(step, pool, self.constants))
        return tuple(pool[i] for i in self.outputs)

    def trace(self, name: str = "program"):
        return trace(self, self.specs, name=name)

    def example_inputs(self, seed: int = 0) -> list:
        """NumPy arrays for the arguments (values in [-2, 2], rounded to avoid ties in max)."""
        rng = np.random.default_rng(seed)
        return [rng.uniform(-2, 2, size=s.shape).astype(dtypes.as_dtype(s.dtype).np) for s in self.specs]

    def describe(self) -> str:
        args = ", ".join(f"{s.name}{list(s.shape)}:{dtypes.as_dtype(s.dtype).name}" for s in self.specs)
        lines = [f"program({args})"]
        for k, st in enumerate(self.steps):
            lines.append(f"  v{len(self.specs) + k} = {st}")
        lines.append(f"  return {['v%d' % i for i in self.outputs]}")
        return "\n".join(lines)


def _run_step(step, pool, constants):
    import gradc
    kind, args = step[0], step[1:]
    if kind == "unary":
        name, i = args
        return getattr(pool[i], name)()
    if kind == "binary":
        name, i, j = args
        return getattr(gradc, name)(pool[i], pool[j]) if name in ("maximum", "minimum") else \
            _binop(name, pool[i], pool[j])
    if kind == "scalar":
        name, i, c, rev = args
        return _binop(name, c, pool[i]) if rev else _binop(name, pool[i], c)
    if kind == "reduce":
        name, i, dims, keep = args
        x = pool[i]
        if name == "amax" or name == "amin":
            return getattr(x, name)(dims, keepdim=keep)
        if name == "var":
            return x.var(dims, keepdim=keep, correction=0)
        if name == "norm":
            return x.norm(2, dims, keepdim=keep)
        if name == "prod" and not isinstance(dims, int):    # (PyTorch's prod takes one dim)
            for d in sorted({d % x.dim() for d in dims}, reverse=True):
                x = x.prod(d, keepdim=keep)
            return x
        return getattr(x, name)(dims, keepdim=keep)
    if kind == "softmax":
        name, i, d = args
        return getattr(pool[i], name)(d)
    if kind == "maxdim":
        name, i, d, keep, take = args
        r = getattr(pool[i], name)(d, keepdim=keep)
        return r.values if take == 0 else r.indices.float()
    if kind == "reshape":
        i, shape = args
        return pool[i].reshape(shape)
    if kind == "permute":
        i, perm = args
        return pool[i].permute(*perm)
    if kind == "unsqueeze":
        i, d = args
        return pool[i].unsqueeze(d)
    if kind == "expand":
        i, shape = args
        return pool[i].expand(*shape)
    if kind == "index":
        i, key = args
        return pool[i][_decode_key(key)]
    if kind == "matmul":
        i, = args
        x = pool[i]
        return x @ x if x.ndim == 1 else x @ x.transpose(-1, -2)
    if kind == "cat":
        name, i, d = args
        return getattr(gradc, name)([pool[i], pool[i] * 2.0], d)
    if kind == "clamp":
        i, lo, hi = args
        return pool[i].clamp(lo, hi)
    if kind == "where":
        i, j = args
        return gradc.where(pool[i] > pool[j], pool[i], pool[j] * 0.5)
    if kind == "cast":
        i, = args
        return pool[i].double() * 1.5 if pool[i].dtype is dtypes.float32 else pool[i].float() * 1.5
    if kind == "inplace":
        i, c, key = args
        y = pool[i].clone()
        y.mul_(c)
        if key is not None:
            y[_decode_key(key)] = c
        y.add_(1.0)
        return y
    if kind == "const":
        i, k = args
        return pool[i] + gradc.tensor(constants[k])
    raise ValueError(f"unknown step {step!r}")


def _binop(name, a, b):
    if name == "add":
        return a + b
    if name == "sub":
        return a - b
    if name == "mul":
        return a * b
    if name == "div":
        return a / b
    if name == "pow":
        return a ** b
    raise ValueError(name)


def _decode_key(key):
    out = []
    for e in key:
        if e[0] == "int":
            out.append(e[1])
        elif e[0] == "slice":
            out.append(slice(e[1], e[2], e[3]))
        elif e[0] == "none":
            out.append(None)
        elif e[0] == "ellipsis":
            out.append(Ellipsis)
    return tuple(out)


# ---- generation ----------------------------------------------------------------------------
def _broadcastable(a, b) -> bool:
    try:
        np.broadcast_shapes(tuple(a), tuple(b))
        return True
    except ValueError:
        return False


def generate_program(choose, max_inputs: int = 3, max_steps: int = 8, allow_float64: bool = True) -> Program:
    """A random Program; every decision comes from ``choose(lo, hi)``."""
    import gradc
    ndim = choose(0, 3)
    base = [choose(1, 4) for _ in range(ndim)]
    specs = []
    for k in range(choose(1, max_inputs)):
        drop = choose(0, ndim)
        shape = [1 if choose(0, 3) == 0 else s for s in base[drop:]]
        dt = dtypes.float64 if allow_float64 and choose(0, 5) == 0 else dtypes.float32
        specs.append(ArgSpec(f"in{k}", tuple(shape), dt, requires_grad=choose(0, 1) == 1))
    prog = Program(specs)
    # shadow values: eager zeros with the right shapes, to decide which steps are valid
    pool = [gradc.zeros(s.shape, dtype=s.dtype) for s in specs]
    for _ in range(choose(1, max_steps)):
        step = _random_step(choose, pool, prog.constants)
        if step is None:
            continue
        pool.append(_run_step(step, pool, prog.constants))
        prog.steps.append(step)
    n = len(pool)
    outs = [n - 1]
    if choose(0, 2) == 0:
        outs.append(choose(0, n - 1))
    prog.outputs = outs
    return prog


def _random_step(choose, pool, constants):
    i = choose(0, len(pool) - 1)
    x = pool[i]
    shape, nd = tuple(x.shape), x.ndim
    kind = choose(0, 17)
    if kind <= 2:
        return ("unary", _UNARY[choose(0, len(_UNARY) - 1)], i)
    if kind <= 4:
        j = choose(0, len(pool) - 1)
        if not _broadcastable(shape, pool[j].shape):
            return ("unary", "neg", i)
        return ("binary", _BINARY[choose(0, len(_BINARY) - 1)], i, j)
    if kind == 5:
        c = [2.5, -1.0, 0.5, 3][choose(0, 3)]
        return ("scalar", _SCALAR[choose(0, len(_SCALAR) - 1)], i, c, choose(0, 1) == 1)
    if kind == 6:
        dims = sorted({choose(0, nd - 1) for _ in range(choose(1, 2))}) if nd else []
        name = _REDUCE[choose(0, len(_REDUCE) - 1)]
        if name in ("amax", "amin") and x.numel() == 0:
            name = "sum"
        if name == "logsumexp" and not dims:
            name = "sum"
        return ("reduce", name, i, dims, choose(0, 1) == 1)
    if kind == 7 and nd:
        return ("softmax", ["softmax", "log_softmax"][choose(0, 1)], i, choose(0, nd - 1))
    if kind == 8 and nd and shape[-1] > 0:
        return ("maxdim", ["max", "min"][choose(0, 1)], i, choose(0, nd - 1), choose(0, 1) == 1, choose(0, 1))
    if kind == 9:
        return ("reshape", i, [x.numel()] if choose(0, 1) else [1, *shape])
    if kind == 10 and nd >= 2:
        perm = list(range(nd))
        a, b = choose(0, nd - 1), choose(0, nd - 1)
        perm[a], perm[b] = perm[b], perm[a]
        return ("permute", i, perm)
    if kind == 11:
        return ("unsqueeze", i, choose(0, nd))
    if kind == 12 and nd and 1 in shape:
        return ("expand", i, [3 if s == 1 else s for s in shape])
    if kind == 13 and nd:
        key = []
        for s in shape:
            r = choose(0, 3)
            if r == 0 and s > 0:
                key.append(["int", choose(-s, s - 1)])
            elif r == 1:
                key.append(["slice", choose(0, max(s - 1, 0)), None, choose(1, 2)])
            elif r == 2:
                key.append(["none"])
                key.append(["slice", None, None, None])
            else:
                key.append(["slice", None, None, None])
        return ("index", i, key)
    if kind == 14 and nd:
        return ("matmul", i)
    if kind == 15 and nd:
        return ("cat", ["cat", "stack"][choose(0, 1)], i, choose(0, nd - 1))
    if kind == 16:
        r = choose(0, 2)
        lo, hi = [(-0.5, 0.5), (None, 1.0), (0.0, None)][r]
        return ("clamp", i, lo, hi)
    if kind == 17:
        j = choose(0, len(pool) - 1)
        if pool[j].dtype is not x.dtype or not _broadcastable(shape, pool[j].shape):
            return ("cast", i)
        return ("where", i, j)
    if choose(0, 1) and nd and shape[0] > 0:
        return ("inplace", i, [2.0, -0.5][choose(0, 1)], [["int", choose(0, shape[0] - 1)]])
    if choose(0, 1):
        rng = np.random.default_rng(len(constants))
        constants.append(rng.uniform(-1, 1, size=shape).astype(x.dtype.np))
        return ("const", i, len(constants) - 1)
    return ("inplace", i, 1.5, None)
