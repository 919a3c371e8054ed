"""W1-W5: the benchmark workloads, each as (inputs, gradc/torch/jax loss, hand-written NumPy fwd+bwd).

Every workload returns float32 inputs from a seeded generator and the names of the
arguments whose gradients are taken. The NumPy versions are written by hand the way
a careful engineer would (one pass per step, no autograd).
"""
from __future__ import annotations

import numpy as np


def w1_inputs(rng):
    return {"x": rng.standard_normal(2 ** 22).astype(np.float32)}, ["x"]


def w1_loss(x):
    return ((x + 2) * (x + 2) * 2).mean()


def w1_numpy(x):
    y = x + 2                                  # the one full-size temporary, reused as the gradient
    loss = np.float32(2.0 / x.size) * np.dot(y, y)
    y *= np.float32(4.0 / x.size)
    return loss, (y,)


def w2_inputs(rng):
    f = lambda *s: (rng.standard_normal(s) * 0.05).astype(np.float32)  # noqa: E731
    return {"x": f(256, 1024), "W1": f(1024, 1024), "b1": f(1024), "W2": f(1024, 10), "b2": f(10),
            "t": f(256, 10)}, ["W1", "b1", "W2", "b2"]


def w2_loss(x, W1, b1, W2, b2, t):
    return (((x @ W1 + b1).tanh() @ W2 + b2 - t) ** 2).mean()


def w2_numpy(x, W1, b1, W2, b2, t):
    h = np.tanh(x @ W1 + b1)
    d = h @ W2 + b2 - t
    loss = np.mean(d * d)
    gd = d * np.float32(2.0 / d.size)
    gW2 = h.T @ gd
    gb2 = gd.sum(0)
    gh = (gd @ W2.T) * (1 - h * h)
    gW1 = x.T @ gh
    gb1 = gh.sum(0)
    return loss, (gW1, gb1, gW2, gb2)


def w3_inputs(rng):
    return {"logits": rng.standard_normal((4096, 1024)).astype(np.float32),
            "labels": rng.integers(0, 1024, 4096).astype(np.int64)}, ["logits"]


def w3_loss(logits, labels):
    picked = logits.gather(1, labels.unsqueeze(1)).squeeze(1)
    return (logits.logsumexp(1) - picked).mean()


def w3_numpy(logits, labels):
    m = logits.max(1, keepdims=True)
    g = np.subtract(logits, m)                 # one full-size buffer, reused for exp and the gradient
    np.exp(g, out=g)
    s = g.sum(1, keepdims=True)
    rows = np.arange(logits.shape[0])
    loss = np.mean(np.log(s[:, 0]) + m[:, 0] - logits[rows, labels])
    g *= np.float32(1.0 / logits.shape[0]) / s
    g[rows, labels] -= np.float32(1.0 / logits.shape[0])
    return loss, (g,)


def w4_inputs(rng):
    return {"x": rng.standard_normal((4096, 1024)).astype(np.float32),
            "gamma": rng.standard_normal(1024).astype(np.float32),
            "beta": rng.standard_normal(1024).astype(np.float32)}, ["x", "gamma", "beta"]


def w4_loss(x, gamma, beta):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    y = (x - mu) / (var + 1e-5).sqrt() * gamma + beta
    return (y * y).sum()


def w4_numpy(x, gamma, beta):
    n = x.shape[-1]
    mu = x.mean(-1, keepdims=True)
    xhat = x - mu                              # full-size buffers: xhat, y, g (reused in place)
    rstd = 1 / np.sqrt(np.einsum("ij,ij->i", xhat, xhat)[:, None] / n + np.float32(1e-5))
    xhat *= rstd
    y = xhat * gamma
    y += beta
    loss = np.einsum("ij,ij->", y, y)
    y *= 2                                     # y is now dL/dy
    gbeta = y.sum(0)
    ggamma = np.einsum("ij,ij->j", y, xhat)
    y *= gamma                                 # dL/dxhat
    a = y.mean(-1, keepdims=True)
    b = np.einsum("ij,ij->i", y, xhat)[:, None] / n
    xhat *= b
    y -= a
    y -= xhat
    y *= rstd                                  # dL/dx
    return loss, (y, ggamma, gbeta)


def w5_inputs(rng):
    return {"inp": np.ones((2, 2), np.float32), "w1": np.float32(2.0).reshape(()).copy(),
            "w2": np.array(3.0, np.float32), "w3": np.array(4.0, np.float32)}, ["inp", "w1", "w2", "w3"]


def w5_loss(inp, w1, w2, w3):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    l4 = l2 * l3
    return l4.mean()


def w5_numpy(inp, w1, w2, w3):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    loss = np.mean(l2 * l3)
    g4 = np.float32(1.0 / inp.size)
    g2 = g4 * l3
    g3 = g4 * l2
    g1 = g2 + g3 * w3
    return loss, ((g1 * w1), (g1 * inp).sum(), g2.sum(), (g3 * l1).sum())


WORKLOADS = {
    "W1 chain": (w1_inputs, w1_loss, w1_numpy, 2 ** 22 * 4 * 2),
    "W2 mlp": (w2_inputs, w2_loss, w2_numpy, None),
    "W3 softmax-xent": (w3_inputs, w3_loss, w3_numpy, 4096 * 1024 * 4 * 2),
    "W4 layernorm": (w4_inputs, w4_loss, w4_numpy, 4096 * 1024 * 4 * 2),
    "W5 tiny": (w5_inputs, w5_loss, w5_numpy, None),
}
