"""Random and hand-written test programs shared by the pass tests."""
from __future__ import annotations

import numpy as np

import gradc
from gradc.ir.tracer import ArgSpec, trace

UNARY = [lambda x: x.exp() * 0.1, lambda x: x.tanh(), lambda x: x.sigmoid(), lambda x: (x * x + 1).log(),
         lambda x: (x * x + 1).sqrt(), lambda x: x.sin(), lambda x: -x, lambda x: x * 3.0, lambda x: x + 2.0,
         lambda x: x.relu(), lambda x: (x * x + 1).rsqrt(), lambda x: x.cos()]
BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b, lambda a, b: a / (b * b + 1),
          lambda a, b: gradc.maximum(a, b), lambda a, b: gradc.where(a > b, a, b * 2)]
REDUCE = [lambda x: x.sum(), lambda x: x.mean(), lambda x: (x * x).sum(-1).mean(), lambda x: x.amax(),
          lambda x: x.logsumexp(-1).sum(), lambda x: x.softmax(-1).pow(2).sum(), lambda x: x.var(-1).sum(),
          lambda x: x.norm()]


def random_program(rng, n_ops=6):
    """A random scalar-valued function of two (broadcast-compatible) inputs, as Python."""
    shape = tuple(int(s) for s in rng.integers(1, 4, size=rng.integers(1, 3)))
    other = shape[rng.integers(0, len(shape)):] if rng.random() < 0.5 else shape
    plan = []
    for _ in range(n_ops):
        if rng.random() < 0.5:
            plan.append(("u", int(rng.integers(len(UNARY)))))
        else:
            plan.append(("b", int(rng.integers(len(BINARY)))))
    red = int(rng.integers(len(REDUCE)))

    def program(x, y):
        v = x
        for kind, k in plan:
            v = UNARY[k](v) if kind == "u" else BINARY[k](v, y)
        return REDUCE[red](v)
    return program, [shape, other]


def trace_program(program, shapes, requires_grad=True, dtype=gradc.float64):
    specs = [ArgSpec(f"a{i}", s, dtype, requires_grad) for i, s in enumerate(shapes)]
    return trace(program, specs, name="prog")


def eager_grads(program, arrays, create_graph=False):
    xs = [gradc.tensor(a, requires_grad=True) for a in arrays]
    out = program(*xs)
    grads = gradc.autograd.grad(out, xs, create_graph=create_graph, allow_unused=True)
    return out, grads, xs


def mlp(x, w1, w2):
    return ((x @ w1).tanh() @ w2).sum()


def chain(x):
    return ((x + 2) * (x + 2) * 2).mean()


def finite_differences(f, arrays, eps=1e-6):
    """Central differences of the scalar ``f(arrays)`` with respect to each array."""
    grads = []
    for k, a in enumerate(arrays):
        num = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            hi = [x.copy() for x in arrays]
            lo = [x.copy() for x in arrays]
            hi[k][i] += eps
            lo[k][i] -= eps
            num[i] = (f(hi) - f(lo)) / (2 * eps)
        grads.append(num)
    return grads
