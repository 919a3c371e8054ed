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
    y = x + 2
    loss = np.mean(y * y * 2, dtype=np.float32)
    gx = y * np.float32(4.0 / x.size)
    return loss, (gx,)


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
    e = np.exp(logits - m)
    s = e.sum(1, keepdims=True)
    lse = np.log(s) + m
    rows = np.arange(logits.shape[0])
    loss = np.mean(lse[:, 0] - logits[rows, labels])
    g = e / s
    g[rows, labels] -= 1
    g *= np.float32(1.0 / logits.shape[0])
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
    xc = x - mu
    var = (xc * xc).mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(var + np.float32(1e-5))
    xhat = xc * rstd
    y = xhat * gamma + beta
    loss = (y * y).sum()
    gy = 2 * y
    gbeta = gy.sum(0)
    ggamma = (gy * xhat).sum(0)
    gxhat = gy * gamma
    gx = rstd * (gxhat - gxhat.mean(-1, keepdims=True) - xhat * (gxhat * xhat).mean(-1, keepdims=True))
    del n
    return loss, (gx, ggamma, gbeta)


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
