"""Edge cases where gradc once disagreed with PyTorch silently or raised where PyTorch computes:
empty dim lists, norms of order -inf, every target ignored, bool clamps, Python ints outside an
integer dtype's range, var/std with more correction than elements, einsum's sublist form, NaN
extrema, nanmedian, pooling's ceil_mode/count_include_pad/divisor_override, pixel (un)shuffle.

Each case is an expression run with ``m = torch`` and ``m = gradc``; values, dtypes, the grad_fn
name and the gradients of the float inputs must agree (errors: type and message).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")

X = [[3.0, -0.5], [2.0, 4.0]]


def _run(m, setup, expr):
    ns = {"m": m, "X": X, "NAN": float("nan")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(setup, ns)
        out = eval(expr, ns)
        leaves = [v for v in ns.values() if isinstance(v, m.Tensor) and v.requires_grad]
        grads = []
        if leaves and isinstance(out, m.Tensor) and out.requires_grad:
            grads = [g.numpy() for g in m.autograd.grad(out.sum(), leaves, allow_unused=False)]
    return out, grads


def _same(t, g):
    assert str(g.dtype) == str(t.dtype), (g.dtype, t.dtype)
    assert tuple(g.shape) == tuple(t.shape)
    np.testing.assert_allclose(g.detach().numpy().astype(float), t.detach().numpy().astype(float),
                               rtol=1e-12, atol=1e-12)
    if t.grad_fn is not None or g.grad_fn is not None:
        assert type(g.grad_fn).__name__ == type(t.grad_fn).__name__


CASES = [
    # reductions over an empty dim list reduce every dim (any/all reduce none)
    ("x = m.tensor(X, dtype=m.float64, requires_grad=True)", "x.sum(())"),
    ("x = m.tensor(X, dtype=m.float64, requires_grad=True)", "x.sum(dim=[])"),
    ("x = m.tensor(X, dtype=m.float64, requires_grad=True)", "x.mean(())"),
    ("x = m.tensor(X, dtype=m.float64, requires_grad=True)", "m.sum(x, dim=[], keepdim=True)"),
    ("x = m.tensor(X, dtype=m.float64, requires_grad=True)", "x.amax(dim=[])"),
    # (values only: PyTorch's var/std backward reads the empty list as no dims, giving inf)
    ("x = m.tensor(X, dtype=m.float64, requires_grad=True)", "x.var(dim=[]).detach()"),
    ("x = m.tensor(X, dtype=m.float64, requires_grad=True)", "x.std(()).detach()"),
    ("x = m.tensor(X, dtype=m.float64, requires_grad=True)", "x.norm(dim=())"),
    ("x = m.tensor(X, dtype=m.float64, requires_grad=True)", "m.linalg.vector_norm(x, dim=())"),
    ("x = m.tensor(X, dtype=m.float64)", "x.any(dim=())"),
    ("x = m.tensor([[1., 0.]], dtype=m.float64)", "x.all(dim=[])"),
    ("u = m.tensor([[3, 0], [2, 4]], dtype=m.uint8)", "u.any()"),
    ("u = m.tensor([[3, 0], [2, 4]], dtype=m.uint8)", "u.all(1)"),
    ("u = m.tensor([[3, 0], [2, 4]], dtype=m.uint8)", "u.all(dim=())"),
    # norms of order -inf: the smallest magnitude, its gradient to it (ties share)
    ("x = m.tensor(X, dtype=m.float64, requires_grad=True)", "x.norm(p=float('-inf'))"),
    ("x = m.tensor([[3., -0.5], [0.5, 4.]], dtype=m.float64, requires_grad=True)", "x.norm(float('-inf'), 1)"),
    ("x = m.tensor([[3., -0.5], [0.5, -0.5]], dtype=m.float64, requires_grad=True)",
     "m.linalg.vector_norm(x, float('-inf'))"),
    ("x = m.tensor([[3., -0.5], [2., 4.]], dtype=m.float64, requires_grad=True)", "m.linalg.vector_norm(x, -1.5)"),
    # cross entropy when every target is ignored: NaN, and zero gradients
    ("l = m.tensor(X, dtype=m.float64, requires_grad=True); t = m.tensor([-100, -100])",
     "m.nn.functional.cross_entropy(l, t)"),
    ("l = m.tensor(X, dtype=m.float64, requires_grad=True); t = m.tensor([-100, -100])",
     "m.nn.functional.cross_entropy(l, t, label_smoothing=0.1)"),
    ("l = m.tensor(X, dtype=m.float64, requires_grad=True); t = m.tensor([-100, -100])",
     "m.nn.functional.cross_entropy(l, t, weight=m.tensor([1., 2.], dtype=m.float64), label_smoothing=0.2)"),
    ("l = m.tensor(X, dtype=m.float64, requires_grad=True); t = m.tensor([1, -100])",
     "m.nn.functional.cross_entropy(l, t, label_smoothing=0.1)"),
    ("l = m.tensor(X, dtype=m.float64, requires_grad=True); t = m.tensor([2, 2])",
     "m.nn.functional.nll_loss(l.log_softmax(1), t, ignore_index=2)"),
    # clamp of a bool tensor with int bounds is int64
    ("b = m.tensor([True, False])", "b.clamp(0, 2)"),
    ("b = m.tensor([True, False])", "b.clamp(max=0)"),
    ("b = m.tensor([True, False])", "b.clamp(0.5)"),
    # Python ints outside an integer dtype's range wrap as operands (comparisons too)
    ("u = m.tensor([1, 200], dtype=m.uint8)", "u + (-3)"),
    ("u = m.tensor([1, 200], dtype=m.uint8)", "u * 300"),
    ("u = m.tensor([1, 200], dtype=m.uint8)", "u - 256"),
    ("u = m.tensor([1, 200], dtype=m.uint8)", "u // -3"),
    ("u = m.tensor([1, 200], dtype=m.uint8)", "u % 300"),
    ("u = m.tensor([1, 200], dtype=m.uint8)", "u.eq(-1)"),
    ("i = m.tensor([1, -100], dtype=m.int8)", "i == 300"),
    ("i = m.tensor([1, -100], dtype=m.int8)", "i < 300"),
    ("i = m.tensor([1, -100], dtype=m.int8)", "i > -300"),
    ("i = m.tensor([1, 5], dtype=m.int32)", "i + 2 ** 40"),
    ("i = m.tensor([1, 5], dtype=m.int32)", "i * 2 ** 33"),
    ("i = m.tensor([1, 5], dtype=m.int16)", "i - 70000"),
    # var/std with a correction beyond the reduced count (PyTorch's unclamped backward)
    ("x = m.tensor([[1., 2.], [3., 5.]], dtype=m.float64, requires_grad=True)", "x.std(1, correction=3)"),
    ("x = m.tensor([[1., 2.], [3., 5.]], dtype=m.float64, requires_grad=True)", "x.std(1, correction=2)"),
    ("x = m.tensor([[1., 2.], [3., 5.]], dtype=m.float64, requires_grad=True)", "x.std(0, correction=5, keepdim=True)"),
    ("x = m.tensor([[1., 2.], [3., 5.]], dtype=m.float64, requires_grad=True)", "x.var(1, correction=3)"),
    ("x = m.tensor([[1., 2.], [3., 5.]], dtype=m.float64, requires_grad=True)", "x.var(1, correction=2)"),
    ("x = m.tensor([[1., 1.], [3., 5.]], dtype=m.float64, requires_grad=True)", "x.std(1)"),
    ("x = m.tensor([[1., 2.], [3., 5.]], dtype=m.float64, requires_grad=True)", "x.std(correction=1)"),
    # einsum's sublist form
    ("a = m.arange(6.).reshape(2, 3).requires_grad_(); b = m.arange(12.).reshape(3, 4)",
     "m.einsum(a, [0, 1], b, [1, 2], [0, 2])"),
    ("a = m.arange(6.).reshape(2, 3).requires_grad_(); b = m.arange(12.).reshape(3, 4)",
     "m.einsum(a, [0, 1], b, [1, 2])"),
    ("a = m.arange(6.).reshape(2, 3).requires_grad_(); b = m.arange(12.).reshape(3, 4)",
     "m.einsum(a, [Ellipsis, 1], b, [1, 2], [Ellipsis, 2])"),
    ("a = m.arange(6.).reshape(2, 3).requires_grad_()", "m.einsum(a, [0, 1], [1])"),
    # a NaN extremum: amax/amin give the slice a NaN gradient, max()/min() share it among the NaNs
    ("x = m.tensor([[1., NAN, NAN], [2., 5., 5.]], dtype=m.float64, requires_grad=True)", "x.amax(1)"),
    ("x = m.tensor([[1., NAN, NAN], [2., 5., 5.]], dtype=m.float64, requires_grad=True)", "x.amin(1)"),
    ("x = m.tensor([[1., NAN, NAN], [2., 5., 5.]], dtype=m.float64, requires_grad=True)", "x.amax()"),
    ("x = m.tensor([[1., NAN, NAN], [2., 5., 5.]], dtype=m.float64, requires_grad=True)", "x.max()"),
    ("x = m.tensor([[1., NAN, NAN], [2., 5., 5.]], dtype=m.float64, requires_grad=True)", "x.min()"),
    ("x = m.tensor([[1., 3., 3.], [2., 5., 5.]], dtype=m.float64, requires_grad=True)", "x.amax(1)"),
    # nanmedian (the index of an all-NaN slice is left out: PyTorch's is unspecified)
    ("x = m.tensor([[1., NAN, 3., .5], [2., NAN, 5., 7.]], dtype=m.float64, requires_grad=True)", "x.nanmedian()"),
    ("x = m.tensor([[1., NAN, 3., .5], [2., NAN, 5., 7.]], dtype=m.float64, requires_grad=True)",
     "m.nanmedian(x, 1).values"),
    ("x = m.tensor([[1., NAN, 3., .5], [2., NAN, 5., 7.]], dtype=m.float64, requires_grad=True)",
     "m.nanmedian(x, 1, keepdim=True).indices"),
    ("x = m.tensor([[1., NAN, 3., .5], [2., NAN, 5., 7.]], dtype=m.float64, requires_grad=True)",
     "x.nanmedian(0).values"),
    ("x = m.tensor([3, 1, 2, 7])", "x.nanmedian()"),
    # pools: ceil_mode, count_include_pad=False, divisor_override
    ("x = m.arange(25.).reshape(1, 1, 5, 5).to(m.float64).requires_grad_()",
     "m.nn.functional.max_pool2d(x, 2, ceil_mode=True)"),
    ("x = m.arange(49.).reshape(1, 7, 7).to(m.float64).requires_grad_()",
     "m.nn.functional.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)"),
    ("x = m.arange(25.).reshape(1, 1, 5, 5).to(m.float64).requires_grad_()",
     "m.nn.functional.max_pool2d(x, 2, stride=2, ceil_mode=True, return_indices=True)[1]"),
    ("x = m.arange(25.).reshape(1, 1, 5, 5).to(m.float64).requires_grad_()",
     "m.nn.functional.avg_pool2d(x, 2, padding=1, count_include_pad=False)"),
    ("x = m.arange(25.).reshape(1, 1, 5, 5).to(m.float64).requires_grad_()",
     "m.nn.functional.avg_pool2d(x, 2, ceil_mode=True)"),
    ("x = m.arange(25.).reshape(1, 1, 5, 5).to(m.float64).requires_grad_()",
     "m.nn.functional.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)"),
    ("x = m.arange(30.).reshape(1, 1, 5, 6).to(m.float64).requires_grad_()",
     "m.nn.functional.avg_pool2d(x, (3, 2), stride=(2, 3), padding=1, ceil_mode=True)"),
    ("x = m.arange(25.).reshape(1, 1, 5, 5).to(m.float64).requires_grad_()",
     "m.nn.functional.avg_pool2d(x, 3, stride=2, padding=1, divisor_override=2)"),
    ("x = m.arange(14.).reshape(1, 2, 7).to(m.float64).requires_grad_()",
     "m.nn.functional.avg_pool1d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)"),
    ("x = m.arange(14.).reshape(1, 2, 7).to(m.float64).requires_grad_()",
     "m.nn.functional.max_pool1d(x, 2, ceil_mode=True)"),
    ("x = m.arange(25.).reshape(1, 1, 5, 5).to(m.float64).requires_grad_()",
     "m.nn.AvgPool2d(2, ceil_mode=True, count_include_pad=False)(x)"),
    # binary cross-entropy at p = 0 and 1: PyTorch's finite (clamped) gradient
    ("p = m.tensor([0., 1., 0., 1., .5], dtype=m.float64, requires_grad=True); t = m.tensor([1., 0., 0., 1., 1.], "
     "dtype=m.float64)", "m.nn.functional.binary_cross_entropy(p, t)"),
    ("p = m.tensor([0., 1., .3, .6], dtype=m.float64, requires_grad=True); t = m.tensor([1., 0., .2, .6], "
     "dtype=m.float64)", "m.nn.functional.binary_cross_entropy(p, t, weight=m.tensor([1., 2., 3., 4.], "
     "dtype=m.float64), reduction='sum')"),
    # beta = 0 ignores the input of addmm and its kin (NaN included); its gradient is zero
    ("M = m.tensor([[NAN, 1.], [2., 3.]], dtype=m.float64, requires_grad=True); "
     "A = m.ones(2, 3, dtype=m.float64, requires_grad=True); B = m.ones(3, 2, dtype=m.float64)",
     "m.addmm(M, A, B, beta=0, alpha=2)"),
    ("M = m.tensor([[NAN, 1.], [2., 3.]], dtype=m.float64, requires_grad=True); "
     "A = m.ones(1, 2, 3, dtype=m.float64, requires_grad=True); B = m.ones(1, 3, 2, dtype=m.float64)",
     "m.baddbmm(M[None], A, B, beta=0)"),
    ("M = m.tensor([[NAN, 1.], [2., 3.]], dtype=m.float64, requires_grad=True); "
     "A = m.ones(1, 2, 3, dtype=m.float64, requires_grad=True); B = m.ones(1, 3, 2, dtype=m.float64)",
     "m.addbmm(M, A, B, beta=0)"),
    ("v = m.tensor([NAN, 1.], dtype=m.float64, requires_grad=True); A = m.ones(2, 3, dtype=m.float64)",
     "m.addmv(v, A, m.ones(3, dtype=m.float64), beta=0)"),
    ("M = m.tensor([[NAN, 1.], [2., 3.]], dtype=m.float64, requires_grad=True)",
     "m.addr(M, m.ones(2, dtype=m.float64), m.ones(2, dtype=m.float64), beta=0)"),
    ("M = m.tensor([[5., 1.], [2., 3.]], dtype=m.float64, requires_grad=True); "
     "A = m.ones(2, 3, dtype=m.float64, requires_grad=True); B = m.ones(3, 2, dtype=m.float64)",
     "m.addmm(M, A, B, beta=0.5)"),
    # a list holding sequences, tensors or slices is a tuple of indices (PyTorch warns); int32 and
    # uint8 index tensors; a 0-d index_select keeps its dim
    ("x = m.arange(12.).reshape(3, 4).to(m.float64).requires_grad_()", "x[[[0, 1], [1, 2]]]"),
    ("x = m.arange(12.).reshape(3, 4).to(m.float64).requires_grad_()", "x[[m.tensor(0), m.tensor(2)]]"),
    ("x = m.arange(12.).reshape(3, 4).to(m.float64).requires_grad_()", "x[[slice(0, 2), 1]]"),
    ("x = m.arange(12.).reshape(3, 4).to(m.float64).requires_grad_()", "x[[0, [1, 2]]]"),
    ("x = m.arange(12.).reshape(3, 4).to(m.float64).requires_grad_()", "x[[None, 1]]"),
    ("x = m.arange(12.).reshape(3, 4).to(m.float64).requires_grad_()", "x[[0, 2]]"),
    ("x = m.arange(12.).reshape(3, 4).to(m.float64).requires_grad_()", "x[m.tensor([2, 0], dtype=m.int32)]"),
    ("x = m.arange(12.).reshape(3, 4).to(m.float64).requires_grad_()", "x[m.tensor([1, 0, 1], dtype=m.uint8)]"),
    ("x = m.arange(12.).reshape(3, 4).to(m.float64).requires_grad_()", "x.index_select(0, m.tensor(1))"),
    ("x = m.arange(12.).reshape(3, 4).to(m.float64).requires_grad_()", "x.index_select(1, m.tensor(2))"),
    # unique keeps NaNs apart; nonzero of 0-d tensors
    ("x = m.tensor([1., NAN, NAN, 1.])", "m.unique(x)"),
    ("x = m.tensor([1., NAN, NAN, 1.])", "m.unique(x, return_counts=True)[1]"),
    ("x = m.tensor([1., NAN, NAN, 1.])", "m.unique(x, return_inverse=True)[1]"),
    ("x = m.tensor(5)", "x.nonzero()"),
    ("x = m.tensor(0)", "x.nonzero()"),
    ("x = m.tensor(5)", "x.nonzero(as_tuple=True)[0]"),
    # empty tensors: reductions over a nonempty dim, softmax over an empty one
    ("x = m.zeros(0, 3, dtype=m.float64, requires_grad=True)", "x.amin(1)"),
    ("x = m.zeros(0, 3, dtype=m.float64, requires_grad=True)", "x.logsumexp(0)"),
    ("x = m.zeros(0, 3, dtype=m.float64, requires_grad=True)", "x.softmax(0)"),
    ("x = m.zeros(0, 3, dtype=m.float64, requires_grad=True)", "x.log_softmax(1)"),
    # add/sub's alpha with integer and bool results
    ("", "m.tensor([True]).add(True, alpha=2)"),
    ("", "m.tensor([True, False]).add(m.tensor([True, True]), alpha=0)"),
    ("", "m.tensor([1, 2]).add(m.tensor([True, False]), alpha=3)"),
    ("", "m.tensor([1, 2]).add(1.5, alpha=2.5)"),
    # a number first: torch.pow(2, t) and its kin; flip with several ints; 0-d dims
    ("t = m.tensor([1., 2.], dtype=m.float64, requires_grad=True)", "m.pow(2, t)"),
    ("t = m.tensor([1., 2.], dtype=m.float64, requires_grad=True)", "m.pow(2.5, t)"),
    ("t = m.tensor([1, 2])", "m.pow(2, t)"),
    ("t = m.tensor([1., 2.], dtype=m.float64, requires_grad=True)", "m.sub(2, t)"),
    ("t = m.tensor([1., 2.], dtype=m.float64, requires_grad=True)", "m.add(2, t, alpha=3)"),
    ("t = m.tensor([1., 2.], dtype=m.float64, requires_grad=True)", "m.div(2, t)"),
    ("t = m.tensor([1., 2.], dtype=m.float64, requires_grad=True)", "m.mul(2, t)"),
    ("x = m.arange(6.).reshape(2, 3).to(m.float64).requires_grad_()", "x.flip(0, 1)"),
    ("x = m.arange(6.).reshape(2, 3).to(m.float64).requires_grad_()", "m.flip(x, (1,))"),
    ("x = m.tensor(2., dtype=m.float64, requires_grad=True)", "x.sum(-1)"),
    ("x = m.tensor(2., dtype=m.float64, requires_grad=True)", "x.transpose(0, -1)"),
    ("x = m.arange(3.).to(m.float64).requires_grad_()", "x.repeat(2, 2)"),
    # PyTorch's node names of compositions
    ("x = m.ones(3, dtype=m.float64, requires_grad=True)", "m.nn.functional.celu(x * 0.5 - 1, 2.0)"),
    ("x = m.ones(2, 3, dtype=m.float64, requires_grad=True)", "m.nn.functional.prelu(x - 1.5, m.ones(3, dtype=m.float64))"),
    ("x = m.ones(2, 2, 3, dtype=m.float64, requires_grad=True)",
     "m.nn.functional.linear(x, m.ones(4, 3, dtype=m.float64), m.ones(4, dtype=m.float64))"),
    ("x = m.ones(2, 2, 3, dtype=m.float64, requires_grad=True)", "m.nn.functional.linear(x, m.ones(4, 3, dtype=m.float64))"),
    ("x = m.ones(3, dtype=m.float64, requires_grad=True)",
     "m.nn.functional.linear(x, m.ones(4, 3, dtype=m.float64), m.ones(4, dtype=m.float64))"),
    ("x = m.ones(3, dtype=m.float64, requires_grad=True)",
     "m.nn.functional.smooth_l1_loss(x, m.zeros(3, dtype=m.float64), beta=0.)"),
    ("x = m.ones(2, 3, 4, 4, dtype=m.float64, requires_grad=True)",
     "m.nn.functional.cross_entropy(x, m.zeros(2, 4, 4, dtype=m.long))"),
    ("x = m.ones(2, 3, 4, dtype=m.float64, requires_grad=True)",
     "m.nn.functional.nll_loss(x, m.zeros(2, 4, dtype=m.long), reduction='none')"),
    ("x = m.ones(2, 3, dtype=m.float64, requires_grad=True)",
     "m.nn.functional.cross_entropy(x, m.ones(2, 3, dtype=m.float64) / 3)"),
    ("x = m.ones(2, 3, dtype=m.float64, requires_grad=True)",
     "m.nn.functional.cross_entropy(x, m.ones(2, 3, dtype=m.float64) / 3, reduction='sum')"),
    ("s = m.ones(3, dtype=m.float64, requires_grad=True)", "m.zeros(3, dtype=m.float64).scatter_add(0, m.tensor([0, 0, 2]), s)"),
    ("s = m.ones(3, dtype=m.float64, requires_grad=True)", "m.zeros(3, dtype=m.float64).scatter(0, m.tensor([2, 1, 0]), s)"),
    ("x = m.zeros(3, dtype=m.float64, requires_grad=True)", "(x * 1).scatter(0, m.tensor([0, 2]), 2.0)"),
    ("t = m.tensor([1.5, 2.5], dtype=m.float64, requires_grad=True)", "(2 % t).detach()"),
    ("t = m.tensor([1.5, 2.5], dtype=m.float64, requires_grad=True)", "m.remainder(m.tensor([2., 3.], dtype=m.float64), t)"),
    # dtypes kept: bool triu/tril, integer scatter, sum/cumsum dtype=, bool diag/diff/isclose
    ("", "m.ones(3, 3, dtype=m.bool).triu(1)"), ("", "m.ones(3, 3, dtype=m.bool).tril(-1)"),
    ("x = m.tensor([[1, 2, 3], [4, 5, 6]])", "x.scatter(1, m.tensor([[0, 1], [2, 0]]), m.tensor([[7, 8], [9, 10]]))"),
    ("x = m.tensor([[1, 2, 3], [4, 5, 6]])", "x.scatter(1, m.tensor([[0, 1], [2, 0]]), 7)"),
    ("", "m.tensor([[True, False]]).scatter(1, m.tensor([[1]]), True)"),
    ("x = m.tensor([30000, 30000])", "x.sum(dtype=m.int16)"), ("x = m.tensor([30000, 30000])", "x.sum(dtype=m.int32)"),
    ("x = m.tensor([30000, 30000])", "x.cumsum(0, dtype=m.int16)"),
    ("", "m.tensor([200, 200], dtype=m.uint8).cumprod(0, dtype=m.int16)"),
    ("b = m.tensor([True, False, True])", "m.diag_embed(b)"), ("b = m.tensor([True, False, True])", "m.diagflat(b)"),
    ("b = m.tensor([True, False, True])", "m.diag(b)"), ("b = m.tensor([True, False, True])", "m.isclose(b, b)"),
    ("b = m.tensor([True, False, True])", "m.diff(b)"),
    ("b = m.tensor([True, False, True])", "b.diff(prepend=m.tensor([False]), append=m.tensor([True]))"),
    ("x = m.tensor([1., 4., 9.], dtype=m.float64, requires_grad=True)", "m.diff(x, 2, prepend=x[:1] * 2)"),
    ("x = m.tensor([[1, 2, 3]])", "m.diag_embed(x)"),
    # a number first for the bitwise functions; fill_ of an expanded tensor
    ("", "m.bitwise_and(3, m.tensor([1, 2]))"), ("", "m.bitwise_xor(3, m.tensor([1, 2]))"),
    ("", "m.bitwise_left_shift(3, m.tensor([1, 2]))"), ("", "m.bitwise_or(True, m.tensor([True, False]))"),
    ("", "m.zeros(1, 3).expand(2, 3).fill_(1.)"), ("", "m.zeros(1, 3).expand(2, 3).zero_()"),
    # xlogy at x = 0: 0 whatever y (NaN only for a NaN y), PyTorch's gradients
    ("x = m.tensor([0., 0., 2., 0., 1., 3.], dtype=m.float64, requires_grad=True); "
     "y = m.tensor([-2., 3., -1., 0., 0.5, 2.], dtype=m.float64, requires_grad=True)", "m.xlogy(x, y)"),
    ("y = m.tensor([-2., 3., 0.5], dtype=m.float64, requires_grad=True)", "m.xlogy(0, y)"),
    ("x = m.tensor([0., 1., 2.], dtype=m.float64, requires_grad=True)", "m.xlogy(x, 3)"),
    ("x = m.tensor([0., 0., 2.], dtype=m.float64, requires_grad=True)", "m.special.xlogy(x, -3.)"),
    # third QA pass: negative indices, new tensors for no-ops, broadcasting, dtypes, keepdim, chunks
    ("x = m.arange(3.).to(m.float64).requires_grad_()", "m.index_fill(x * 1, 0, m.tensor([-1]), 9.)"),
    ("x = m.arange(3.)", "x.clone().index_fill_(0, m.tensor([-3, 1]), 9.)"),
    ("x = m.arange(6.).to(m.float64).requires_grad_()", "m.tensor_split(x, (-1,))[0]"),
    ("x = m.arange(6.).to(m.float64).requires_grad_()", "m.tensor_split(x, (-4, 5))[1]"),
    ("x = m.tensor([1., 2., 3.], dtype=m.float64, requires_grad=True)", "m.roll(x, 0, 0)"),
    ("x = m.tensor([1., 2., 3.], dtype=m.float64, requires_grad=True)", "m.roll(x, 3, 0)"),
    ("x = m.tensor([1., 2., 3.], dtype=m.float64, requires_grad=True)", "m.flip(x, ())"),
    ("x = m.tensor([1., 2., 3.], dtype=m.float64, requires_grad=True)", "m.diff(x, n=0)"),
    ("a = m.tensor(0.5, dtype=m.float64, requires_grad=True); b = m.tensor([.3, -.4, .9], dtype=m.float64)",
     "m.cosine_similarity(a, b, dim=-1)"),
    ("a = m.ones(2, 1, 3, dtype=m.float64, requires_grad=True); b = m.tensor([.3, -.4, .9], dtype=m.float64)",
     "m.nn.functional.cosine_similarity(a, b, dim=-1)"),
    ("", "m.logit(m.tensor([0, 1, 2, 3], dtype=m.uint8))"),
    ("x = m.tensor([-0.5, 0.3, 1.5], dtype=m.float64, requires_grad=True)", "m.logit(x)"),
    ("x = m.tensor([0.1, 0.3, 0.95], dtype=m.float64, requires_grad=True)", "m.logit(x, eps=0.2)"),
    ("x = m.tensor([0.2, -0.3], dtype=m.float64, requires_grad=True)",
     "m.nn.functional.kl_div(x, m.tensor([0.5, -0.4], dtype=m.float64), reduction='none')"),
    ("x = m.tensor([[0.2, 0.9, -0.3], [0.5, 0.1, 0.7]])", "x.argmax(keepdim=True)"),
    ("x = m.tensor([[0.2, 0.9, -0.3], [0.5, 0.1, 0.7]])", "m.argmin(x, None, keepdim=True)"),
    ("x = m.tensor([[0.2, NAN, -0.3], [0.5, 0.1, 0.7]], dtype=m.float64, requires_grad=True)",
     "m.nansum(x, None, keepdim=True)"),
    ("x = m.tensor([[0.2, NAN, -0.3], [0.5, 0.1, 0.7]], dtype=m.float64, requires_grad=True)",
     "m.nanmean(x, dim=None, keepdim=True)"),
    ("", "m.threshold(m.tensor([1, -2, 3]), 0, 0)"), ("", "m.rot90(m.tensor([[True, False]]), 0)"),
    ("", "m.tensor([[True, False]]).sum_to_size(1, 1)"),
    ("", "m.ldexp(m.tensor([1, 2], dtype=m.int32), m.tensor([1., 2.], dtype=m.float64))"),
    ("", "m.addcmul(m.tensor([1, 2]), m.tensor([1, 2]), m.tensor([3, 4]), value=2.5)"),
    ("", "m.chunk(m.zeros(0, 3), 2)[1]"),
    ("x = m.tensor([[1.5, -2.5], [0.5, 2.0]], dtype=m.float64, requires_grad=True)",
     "x.to(m.tensor([1], dtype=m.int64))"),
    ("x = m.tensor([[1.5, -2.5], [0.5, 2.0]])", "x.clone().div_(2, rounding_mode='floor')"),
    ("", "m.nan_to_num(m.tensor([float('nan'), 1.]), None)"),
    ("x = m.tensor(2., dtype=m.float64, requires_grad=True)", "x.flip(0)"),
    ("x = m.tensor(2., dtype=m.float64, requires_grad=True)", "m.movedim(x, 0, 0)"),
    ("x = m.tensor([[1.5, -2.5, 3.5]], dtype=m.float64, requires_grad=True)",
     "x.index_select(1, m.tensor([0, 2], dtype=m.int32))"),
    ("s = m.ones(2, 1, dtype=m.float64, requires_grad=True)",
     "m.zeros(2, 3, dtype=m.float64).scatter_add(1, m.tensor([[0], [1]], dtype=m.int32), s)"),
    ("x = m.tensor([[1.5, -2.5, 3.5]], dtype=m.float32, requires_grad=True)", "x.norm(dtype=m.float64)"),
    ("", "m.where(m.tensor([1, 0], dtype=m.uint8), 1., 0.)"),
    ("", "m.hypot(m.tensor([True]), m.tensor([1.]))"), ("", "m.logaddexp(m.tensor([True]), m.tensor([1.]))"),
    ("x = m.tensor(5., dtype=m.float64, requires_grad=True)", "x.index_select(0, m.tensor([0]))"),
    # view(dtype), as_strided, resize_
    ("x = m.tensor([1., 2., -3., 4.])", "x.view(m.int32)"),
    ("x = m.tensor([[1., 2., -3., 4.]], dtype=m.float64)", "x.view(m.float32)"),
    ("x = m.tensor([1., 2., -3., 4.])", "x.view(m.float16)"),
    ("x = m.ones(2, 4)", "x.view(m.float64)"),
    ("x = m.arange(6.).to(m.float64).requires_grad_()", "x.as_strided((2, 2), (1, 2))"),
    ("x = m.arange(6.).to(m.float64).requires_grad_()", "x.as_strided((2,), (2,), 1)"),
    ("x = m.arange(12.).to(m.float64).requires_grad_()", "(x * 1).as_strided((3, 2), (2, 1), 3)"),
    ("x = m.arange(12.).reshape(3, 4)", "x[1:].as_strided((2, 2), (1, 1))"),
    ("x = m.ones(2, 3)", "x.resize_(3, 2)"),
    ("x = m.arange(6.)", "x.resize_(4)"),
    # pixel shuffle
    ("x = m.arange(64.).reshape(1, 8, 2, 4).to(m.float64).requires_grad_()", "m.nn.functional.pixel_shuffle(x, 2)"),
    ("x = m.arange(72.).reshape(2, 9, 2, 2).to(m.float64).requires_grad_()", "m.nn.PixelShuffle(3)(x)"),
    ("x = m.arange(48.).reshape(3, 4, 4).to(m.float64).requires_grad_()", "m.nn.functional.pixel_unshuffle(x, 2)"),
    ("x = m.arange(96.).reshape(2, 1, 3, 4, 4).to(m.float64).requires_grad_()", "m.nn.PixelUnshuffle(2)(x)"),
]


@pytest.mark.parametrize("setup,expr", CASES, ids=[e for _, e in CASES])
def test_matches_pytorch(setup, expr):
    t_out, t_grads = _run(torch, setup, expr)
    g_out, g_grads = _run(gradc, setup, expr)
    _same(t_out, g_out)
    assert len(g_grads) == len(t_grads)
    for tg, gg in zip(t_grads, g_grads):
        np.testing.assert_allclose(gg, tg, rtol=1e-12, atol=1e-12)


ERRORS = [
    ("u = m.tensor([1, 200], dtype=m.uint8)", "u.fill_(300)"),
    ("u = m.tensor([1, 200], dtype=m.uint8)", "u.clamp(-5, 300)"),
    ("u = m.tensor([1, 200], dtype=m.uint8)", "m.where(u > 1, u, 300)"),
    ("", "m.full((2,), 300, dtype=m.uint8)"),
    ("", "m.full((2,), 2 ** 31, dtype=m.int32)"),
    ("", "m.tensor([300], dtype=m.uint8)"),
    ("", "m.tensor([-129], dtype=m.int8)"),
    ("", "m.tensor([1]) + 2 ** 70"),
    ("b = m.tensor([True, False])", "b.clamp(False, True)"),
    ("b = m.tensor([True, False])", "b.abs()"),
    ("", "m.nn.functional.binary_cross_entropy(m.tensor([1.5]), m.tensor([1.]))"),
    ("", "m.tensor([1, 2]).sub(m.tensor([1, 1]), alpha=2.5)"),
    ("", "m.tensor([1, 2]).add(1, alpha=2.5)"),
    ("", "m.tensor([1., 2.]).add(1, alpha=True)"),
    # dims out of range on 0-d tensors, repeated dims
    ("x = m.tensor(2.)", "x.sum(1)"), ("x = m.tensor(2.)", "x.squeeze(1)"), ("x = m.tensor(2.)", "x.transpose(0, 1)"),
    ("x = m.tensor(2.)", "x.flatten(1)"), ("x = m.tensor(2.)", "x.any(1)"), ("x = m.tensor(2.)", "x.std(1)"),
    ("x = m.tensor(2.)", "x.logsumexp(1)"), ("x = m.tensor(2.)", "x.norm(dim=1)"),
    ("x = m.ones(2, 3)", "x.sum((0, 0))"), ("x = m.ones(2, 3)", "x.mean((1, -1))"), ("x = m.tensor(2.)", "x.sum((0, -1))"),
    ("x = m.tensor(1.)", "x.narrow(0, 0, 1)"), ("x = m.tensor(1.)", "x.split(1)"), ("x = m.tensor(1.)", "x.chunk(1)"),
    ("x = m.tensor(1.)", "x.diff()"),
    # bool tensors where PyTorch has no kernel; NaN into an integer tensor
    ("", "m.ones(3).view(m.float64)"), ("", "m.ones(2, 3).t().view(m.float16)"), ("", "m.ones(()).view(m.float16)"),
    ("", "m.arange(6.).as_strided((2, 2), (1, 5))"), ("", "m.ones(2, requires_grad=True).resize_(3)"),
    ("b = m.tensor([[True, False], [True, True]])", "b @ b"), ("v = m.tensor([True, False])", "v @ v"),
    ("b = m.tensor([[True, False], [True, True]]); v = m.tensor([True, False])", "b @ v"),
    ("b = m.tensor([[True, False], [True, True]]); v = m.tensor([True, False])", "v @ b"),
    ("b = m.ones(2, 2, 2, dtype=m.bool)", "b @ b"),
    ("x = m.zeros(3)", "x.__setitem__(slice(1, None), [1., 2.])"),
    ("t = m.tensor([1., 2.])", "m.hypot(t, -2)"), ("t = m.tensor([1., 2.])", "t.expand_as(-2)"),
    ("t = m.tensor([1., 2.])", "m.isclose(t, 1)"), ("t = m.tensor([1., 2.])", "t.view_as(2)"),
    ("t = m.tensor([1., 2.])", "m.equal(t, 1)"), ("t = m.tensor([1., 2.])", "m.kron(t, 2)"),
    ("t = m.tensor([1., 2.])", "t.index_select(0, m.tensor([5]))"),
    ("t = m.tensor([1., 2.])", "t.index_select(0, m.tensor([-1]))"),
    ("", "m.ones(2, 3).index_select(1, m.tensor([-1]))"), ("", "m.tensor(5.).index_select(0, m.tensor([1]))"),
    ("t = m.tensor([1., 2.])", "m.chunk(t, 0)"),
    ("t = m.tensor([1., 2.])", "t.narrow(0, 0, -1)"), ("t = m.tensor([1., 2.])", "t.repeat(-1)"),
    ("t = m.tensor([1., 2.])", "t.repeat(2, -1)"), ("t = m.tensor([1., 2.])", "m.tile(t, (-1,))"),
    ("t = m.tensor([[1., 2.]])", "m.nn.functional.max_pool1d(t, 0)"), ("", "m.nn.functional.max_pool2d(m.ones(1, 2, 2), 0)"),
    ("t = m.tensor([[1., 2.]])", "m.nn.functional.avg_pool1d(t, 0)"),
    ("", "m.rot90(m.ones(2, 2), 1, (-1,))"), ("", "m.rot90(m.ones(2, 2), 1, (0, 0))"),
    ("x = m.arange(4.)", "x.__setitem__(slice(1, None), x[:-1])"),
    ("y = m.arange(4.)", "y[1:].add_(y[:-1])"), ("y = m.arange(4.)", "y[1:].copy_(y[:-1])"),
    ("y = m.arange(4.)", "y[1:].mul_(y[:-1])"), ("y = m.arange(4.)", "y.view(2, 2).add_(y.view(2, 2).t())"),
    ("t = m.tensor([1.5, 2.5], requires_grad=True)", "(2 % t).sum().backward()"),
    ("t = m.tensor([1.5, 2.5], requires_grad=True)", "m.remainder(2, t).sum().backward()"),
    ("x = m.arange(4.)", "x.__setitem__([0, 1], x[1:3])"),
    ("x = m.zeros(3)", "x.__setitem__(slice(1, None), (1., 2.))"),
    ("", "m.tensor([True]).floor()"), ("", "m.tensor([True]).round()"), ("", "m.tensor([True]).ceil()"),
    ("", "m.tensor([True]).trunc()"), ("x = m.tensor([1, 2])", "x.__setitem__(0, float('nan'))"),
    # singular matrices: torch.linalg.LinAlgError with the zero pivot
    ("a = m.eye(3).repeat(2, 1, 1); a[1, 1, 1] = 0", "m.linalg.inv(a)"),
    ("", "m.linalg.inv(m.tensor([[1., 2.], [2., 4.]]))"),
    ("a = m.eye(3).repeat(2, 1, 1); a[1, 1, 1] = 0", "m.linalg.solve(a, m.ones(2, 3))"),
    ("", "m.inverse(m.tensor([[1., 2.], [2., 4.]]))"),
    ("x = m.arange(12.).reshape(3, 4)", "x[m.tensor([2, 0], dtype=m.int16)]"),
    ("x = m.zeros(0, 3)", "x.amax(0)"),
    ("x = m.zeros(0, 3)", "x.amax()"),
    ("x = m.zeros(0, 3)", "x.max(0)"),
    ("x = m.zeros(0, 3)", "x.max()"),
    ("x = m.zeros(0, 3)", "x.argmax(0)"),
    ("x = m.zeros(0, 3)", "x.argmin()"),
    ("x = m.zeros(0, 3)", "x.amin((1, 0))"),
    ("", "m.nn.functional.pixel_shuffle(m.ones(1, 3, 2, 2), 2)"),
    ("", "m.nn.functional.pixel_shuffle(m.ones(3, 2), 2)"),
    ("", "m.nn.functional.pixel_unshuffle(m.ones(1, 3, 3, 2), 2)"),
    ("", "m.nn.functional.pixel_unshuffle(m.ones(1, 3, 4, 3), 2)"),
    # einsum's size checks: a repeated subscript, subscripts and ellipses that do not broadcast
    ("", "m.einsum('ii->i', m.ones(2, 3))"), ("", "m.einsum('ij,jk->ik', m.ones(2, 3), m.ones(4, 5))"),
    ("", "m.einsum('ij,jk,kl->il', m.ones(2, 3), m.ones(3, 4), m.ones(5, 6))"),
    ("", "m.einsum('...j,...j->...', m.ones(2, 3), m.ones(4, 3))"),
    # expand checks from the last dimension
    # scatter's checks in PyTorch's order; index_select's two messages
    ("", "m.ones(2, 3).split(0, 1)"), ("", "m.ones(2, 3).split(-1, 1)"),
    ("", "m.ones(2, 3).scatter(1, m.tensor([[0]]), m.ones(1, 1, dtype=m.float64))"),
    ("", "m.ones(2, 3).scatter_add(1, m.tensor([[0]]), m.ones(1, 1, dtype=m.float64))"),
    ("", "m.ones(2, 3, dtype=m.int64).scatter(1, m.tensor([[0]]), m.ones(1, 1))"),
    ("", "m.ones(2, 3).scatter(1, m.tensor([[0.]]), m.ones(1, 1))"),
    ("", "m.ones(2, 3).scatter_add(1, m.tensor([[0, 1, 2, 0]]), m.ones(1, 2))"),
    ("", "m.ones(2, 3).scatter(0, m.tensor([[0, 1, 2]]), m.ones(1, 2))"),
    ("", "m.ones(2, 3).scatter(0, m.tensor([[0, 1, 2, 0]]), 2.0)"),
    ("", "m.ones(2, 3).scatter(1, m.tensor([0]), m.ones(1, 2))"),
    ("", "m.ones(2, 3).scatter_add(1, m.tensor([[9]]), m.ones(1, 1))"),
    ("", "m.ones(2, 3).scatter(1, m.tensor([[-5]]), m.ones(1, 1))"),
    ("", "m.ones(2, 3).index_select(0, m.tensor([0, 5]))"), ("", "m.ones(2, 3).index_select(1, m.tensor([0, 5]))"),
    ("", "m.ones(2, 3, 4).index_select(2, m.tensor([9]))"), ("", "m.ones(2, 3, 4).index_select(1, m.tensor([-1]))"),
    ("", "m.ones(2, 3).expand(4, 5)"), ("", "m.ones(2, 1, 3).expand(4, 5, 6)"), ("", "m.ones(2, 3).expand(-1, 2, 3)"),
    # arguments PyTorch has no derivative for may not require grad (check_no_requires_grad)
    *[("x = m.tensor(X, requires_grad=True); w = m.ones(2, requires_grad=True); F = m.nn.functional", e) for e in (
        "F.binary_cross_entropy_with_logits(x, m.ones(2, 2), weight=w)",
        "F.binary_cross_entropy_with_logits(x, m.ones(2, 2), weight=w, pos_weight=w)",
        "F.binary_cross_entropy_with_logits(x.detach(), m.ones(2, 2), pos_weight=w)",
        "F.binary_cross_entropy(x.sigmoid(), m.ones(2, 2), weight=w)",
        "F.nll_loss(x, m.tensor([1, 0]), weight=w)", "F.nll_loss(x, m.tensor([1, 7]), weight=w)",
        "F.cross_entropy(x, m.tensor([1, 0]), weight=w, label_smoothing=0.2)",
        "F.cross_entropy(m.ones(2, 2, 3), m.zeros(2, 3, dtype=m.long), weight=w)",
        "F.multi_margin_loss(x, m.tensor([1, 0]), weight=w)", "F.soft_margin_loss(x, w)",
        "F.batch_norm(x, w, m.ones(2))", "F.batch_norm(x, m.zeros(2), w, training=True)",
        "F.instance_norm(x.view(1, 2, 2), w, m.ones(2), use_input_stats=False)")],
]


@pytest.mark.parametrize("setup,expr", ERRORS, ids=[e for _, e in ERRORS])
def test_errors_match_pytorch(setup, expr):
    caught = []
    for m in (torch, gradc):
        with pytest.raises(Exception) as info:
            _run(m, setup, expr)
        caught.append(info.value)
    t, g = caught
    # the same class or a subclass; PyTorch's own classes (torch.linalg.LinAlgError is
    # torch._C._LinAlgError) by name
    kinds = {c.__name__ for c in type(g).__mro__}
    assert isinstance(g, type(t)) or type(t).__name__.lstrip("_") in kinds, (type(g), type(t), g)
    assert str(g) == str(t)


def test_arguments_without_a_derivative_may_require_grad_under_no_grad_or_without_one():
    """The class weights of a loss may require grad under no_grad, as in PyTorch; cross_entropy
    with class probabilities has a derivative for its weight."""
    F = gradc.nn.functional
    x, w = gradc.tensor(X, requires_grad=True), gradc.ones(2, requires_grad=True)
    with gradc.no_grad():
        F.cross_entropy(x, gradc.tensor([1, 0]), weight=w)
    F.cross_entropy(x, gradc.ones(2, 2) / 2, weight=w).backward()
    assert w.grad is not None


def test_cross_entropy_all_ignored_compiled():
    """The compiled loss gives PyTorch's NaN and zero gradient too."""
    @gradc.compile
    def loss(logits, target):
        return gradc.nn.functional.cross_entropy(logits, target)
    logits = gradc.tensor(X, dtype=gradc.float64, requires_grad=True)
    out = loss(logits, gradc.tensor([-100, -100]))
    out.backward()
    assert np.isnan(out.item())
    assert np.array_equal(logits.grad.numpy(), np.zeros((2, 2)))


def test_pools_pixel_shuffle_nanmedian_compiled(compiled_vs_eager):
    """The new pooling options, pixel (un)shuffle and nanmedian compile to the same values and
    gradients as eagerly."""
    F = gradc.nn.functional
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 7, 6))
    compiled_vs_eager(lambda a: (F.avg_pool2d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False) ** 2).sum()
                      + F.max_pool2d(a, 2, ceil_mode=True).sum() + F.avg_pool2d(a, 2, divisor_override=3).sum(), x)
    compiled_vs_eager(lambda a: (F.pixel_unshuffle(F.pixel_shuffle(a, 2), 2) * a).sum()
                      + (F.pixel_shuffle(a, 2) ** 3).sum(), x)
    y = x.copy()
    y[0, 1, :3] = np.nan
    compiled_vs_eager(lambda a: (a.nanmedian(2).values ** 2).nansum(), y)


def test_cumprod_second_derivative_with_zeros():
    """cumprod's double backward at and after zeros (one, two, leading, repeated) as PyTorch's."""
    rng = np.random.default_rng(1)
    for _ in range(60):
        a = rng.integers(-2, 3, size=(3, 5)).astype(float)
        a[rng.random(a.shape) < 0.3] = 0
        dim = int(rng.integers(0, 2))
        w0, w1 = rng.standard_normal(a.shape), rng.standard_normal(a.shape)
        results = []
        for m in (torch, gradc):
            x = m.tensor(a, dtype=m.float64, requires_grad=True)
            g, = m.autograd.grad((x.cumprod(dim) * m.tensor(w0)).sum(), x, create_graph=True)
            h, = m.autograd.grad((g * m.tensor(w1)).sum(), x)
            results.append((g.detach().numpy(), h.numpy()))
        (tg, th), (gg, gh) = results
        np.testing.assert_allclose(gg, tg, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gh, th, rtol=1e-12, atol=1e-12)


def test_binary_cross_entropy_double_backward_at_the_ends():
    """Second derivatives at p = 0 and 1 as PyTorch's (its double backward does not mask the
    clamp), and the target's gradient unclamped (infinite there)."""
    results = []
    for m in (torch, gradc):
        p = m.tensor([0., 1., .3, .6], dtype=m.float64, requires_grad=True)
        t = m.tensor([1., 0., .2, .6], dtype=m.float64, requires_grad=True)
        gp, gt = m.autograd.grad(m.nn.functional.binary_cross_entropy(p, t, reduction="sum"), (p, t),
                                 create_graph=True)
        results.append([gt.detach().numpy(), *(g.numpy() for g in m.autograd.grad(gp.sum(), (p, t)))])
    for t_arr, g_arr in zip(*results):
        np.testing.assert_allclose(g_arr, t_arr, rtol=1e-8)   # its double backward takes eps in double


@pytest.mark.parametrize("p", [0.5, 1.5, 2.0, 2.5, 3.0, 4.0, -1.0])
def test_norm_gradients_at_zero_entries(p):
    """First and second derivatives of p-norms with zero entries (and an all-zero slice) as
    PyTorch's; where PyTorch's second derivative is NaN (p < 1 at a zero entry) gradc gives 0."""
    rng = np.random.default_rng(int(p * 10) % 97)
    for trial in range(9):
        a = rng.standard_normal((3, 4))
        a[rng.random(a.shape) < 0.3] = 0
        a[trial % 3] = 0 if trial < 3 else a[trial % 3]
        dim = [None, 0, 1][trial % 3]
        results = []
        for m in (torch, gradc):
            x = m.tensor(a, dtype=m.float64, requires_grad=True)
            n = x.norm(p=p, dim=dim)
            g, = m.autograd.grad(n.sum(), x, create_graph=True)
            h, = m.autograd.grad((g * g.detach()).sum(), x)
            results.append((n.detach().numpy(), g.detach().numpy(), h.numpy()))
        (tn, tg, th), (gn, gg, gh) = results
        np.testing.assert_allclose(gn, tn, rtol=1e-12)
        np.testing.assert_allclose(gg, tg, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(gh[~np.isnan(th)], th[~np.isnan(th)], rtol=1e-9, atol=1e-12)


def test_distance_gradients_at_zero_components():
    """dist's second derivative where x - y has a zero component; normalize and cdist with p < 2
    at zero entries (gradc gave NaN)."""
    outs = []
    for m in (torch, gradc):
        x = m.tensor([1., 2., 3.], dtype=m.float64, requires_grad=True)
        g, = m.autograd.grad(m.dist(x, m.ones(3, dtype=m.float64)), x, create_graph=True)
        h, = m.autograd.grad((g * m.tensor([0.5, 1., 1.5], dtype=m.float64)).sum(), x)
        z = m.tensor([[0., 2.]], dtype=m.float64, requires_grad=True)
        outs.append([h.numpy(),
                     m.autograd.grad(m.nn.functional.normalize(z, p=1.5).sum(), z)[0].numpy(),
                     m.autograd.grad(m.cdist(z, m.zeros(1, 2, dtype=m.float64), p=0.5).sum(), z)[0].numpy(),
                     m.autograd.grad(m.dist(z, m.zeros(1, 2, dtype=m.float64), p=1.5), z)[0].numpy()])
    for t_arr, g_arr in zip(*outs):
        np.testing.assert_allclose(g_arr, t_arr, rtol=1e-12, atol=1e-15)


def test_empty_reductions_compiled():
    """Compiled: the user's amax over an empty dim raises as eagerly (it gave -inf); the
    compiler's own (logsumexp's shift, cross_entropy over an empty batch) works."""
    x = gradc.zeros(0, 3, dtype=gradc.float64, requires_grad=True)
    with pytest.raises(IndexError, match="amax\\(\\): Expected reduction dim 0 to have non-zero size"):
        gradc.compile(lambda a: a.amax(0))(x)
    out = gradc.compile(lambda a: a.logsumexp(0))(x)
    assert np.array_equal(out.detach().numpy(), [-np.inf] * 3)
    loss = gradc.compile(lambda a: gradc.nn.functional.cross_entropy(a, gradc.zeros(0, dtype=gradc.int64)))(x)
    loss.backward()
    assert np.isnan(loss.item()) and tuple(x.grad.shape) == (0, 3)


INPLACE_ACTIVATIONS = ["relu", "silu", "leaky_relu", "elu", "relu6", "hardtanh", "hardswish", "hardsigmoid", "selu",
                       "celu", "mish"]


@pytest.mark.parametrize("name", INPLACE_ACTIVATIONS)
def test_inplace_activations_write_their_input(name):
    """F.<act>(h, inplace=True) and nn.<Act>(inplace=True) write h and return it, with PyTorch's
    values, node name and gradients; a leaf that requires grad is refused."""
    results = []
    for m in (torch, gradc):
        x = m.tensor([[-1.5, -0.2, 0.3, 2.0, 7.0]], dtype=m.float64, requires_grad=True)
        h = x * 1.0
        y = getattr(m.nn.functional, name)(h, inplace=True)
        (y * m.arange(5.0, dtype=m.float64)).sum().backward()
        with pytest.raises(RuntimeError) as leaf_error:
            getattr(m.nn.functional, name)(m.ones(2, requires_grad=True), inplace=True)
        results.append((y is h, h.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__,
                        str(leaf_error.value)))
    (t_same, t_h, t_g, t_name, t_err), (g_same, g_h, g_g, g_name, g_err) = results
    assert g_same and t_same
    np.testing.assert_allclose(g_h, t_h, rtol=1e-12)
    # (PyTorch's in-place hardsigmoid takes its 1/6 in float32 even for doubles)
    np.testing.assert_allclose(g_g, t_g, rtol=1e-7 if name == "hardsigmoid" else 1e-12)
    assert g_name == t_name and g_err == t_err


@pytest.mark.parametrize("module", ["ReLU", "SiLU", "ReLU6", "Hardswish", "Hardsigmoid", "Mish", "ELU", "SELU", "CELU",
                                    "Hardtanh", "LeakyReLU", "Dropout", "Dropout1d", "AlphaDropout"])
def test_inplace_modules(module):
    """The module writes its input when PyTorch's does (its AlphaDropout ignores the flag)."""
    seen = []
    for m in (torch, gradc):
        mod = getattr(m.nn, module)(inplace=True)
        h = m.tensor([[-1.0, 2.0]]) * 1.0
        seen.append((repr(mod), mod(h) is h))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("expr", ["x * 0.1", "x / 3.3", "0.3 / x", "x * m.tensor(0.1)",
                                  "x / m.tensor(0.3, dtype=m.float64)", "x + 0.3", "0.7 - x", "x - m.tensor(0.3)",
                                  "x.add(1.1, alpha=0.3)", "x ** 1.5", "m.atan2(x, m.tensor(0.3))"])
def test_float16_scalar_operands(expr):
    """float16 ops with a scalar operand round as PyTorch's: mul and div compute with the scalar
    in float32, the others round it to float16 first (and add's alpha too)."""
    a = (np.random.RandomState(0).randn(1200) * 3).astype(np.float16)
    outs = []
    for m in (torch, gradc):
        x = m.tensor(a)
        with np.errstate(all="ignore"):
            outs.append(eval(expr, {"m": m, "x": x}).float().numpy())
    differ = ~np.isclose(outs[0], outs[1], rtol=0, atol=0, equal_nan=True)
    # add with alpha: PyTorch fuses the multiply-add (3 of 1200 elements round differently)
    assert differ.sum() <= (3 if "alpha" in expr else 0)


def test_dtype_flags_and_strided_writes():
    assert [(d.is_signed, d.is_complex) for d in (gradc.float32, gradc.float16, gradc.int8, gradc.uint8, gradc.bool)] == [
        (d.is_signed, d.is_complex) for d in (torch.float32, torch.float16, torch.int8, torch.uint8, torch.bool)]
    results = []
    for m in (torch, gradc):
        b = m.arange(6.)
        b.as_strided((2,), (2,), 1).add_(100)
        c = m.tensor([1., 2.])
        c.view(m.int32)[0] = 0
        results.append((b.tolist(), c.tolist()))
    assert results[0] == results[1]


OUT_CASES = [
    "m.add(a, 1, out=o2)", "m.add(a, 1, out=o3)", "m.neg(a, out=o0)", "m.sum(m.ones(2, 2), 0, out=o0)",
    "m.cat([a, a], out=o0)", "m.matmul(m.ones(2, 2), a, out=o2)", "m.max(m.tensor([[1., 3.], [2., 0.]]), 1, out=(o2, i2))",
    "m.add(a, 1.5, out=m.empty(2, dtype=m.long))", "m.add(m.ones(2, requires_grad=True), 1, out=o2)",
    "m.where(a > 0, a, a * 0, out=o2)",
]


@pytest.mark.parametrize("expr", OUT_CASES)
def test_out_keyword(expr):
    """out=: the result written into (and returned as) the given tensor, resized with PyTorch's
    warning, cast when allowed, refused when an argument requires grad."""
    seen = []
    for m in (torch, gradc):
        ns = {"m": m, "a": m.ones(2), "o0": m.empty(0), "o2": m.zeros(2), "o3": m.zeros(3),
              "i2": m.zeros(2, dtype=m.long)}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                r = eval(expr, ns)
            except RuntimeError as e:
                seen.append(("error", str(e)))
                continue
        outs = r if isinstance(r, tuple) else (r,)
        named = {k for k, v in ns.items() if any(v is o for o in outs)}
        seen.append((sorted(named), [o.tolist() for o in outs], [str(o.dtype) for o in outs],
                     [str(w.message)[:60] for w in caught]))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("name", ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack",
                                  "column_stack", "row_stack"])
def test_cat_and_stacks_refuse_an_out_dtype_with_cats_type_error(name):
    """cat checks its inputs' type against out='s first (TypeError "torch.cat(): ..."), as do the
    stacks made of it, except stack, after its shape check; a castable out= takes the values."""
    seen = []
    for m in (torch, gradc):
        f = getattr(m, name)
        row = []
        for inputs, out in (([m.ones(2), m.ones(2)], m.empty(0, dtype=m.int64)),
                            ([m.ones(2, dtype=m.int64), m.ones(2)], m.empty(0, dtype=m.bool)),
                            ([m.ones(2), m.ones(3, 1)], m.empty(0, dtype=m.int64)),
                            ([m.ones(2, dtype=m.int32), m.ones(2, dtype=m.int64)], m.empty(0, dtype=m.float16))):
            try:
                row.append(f(inputs, out=out).tolist())
            except Exception as e:      # noqa: BLE001
                row.append((type(e).__name__.replace("ShapeError", "RuntimeError"), str(e)))
        seen.append(row)
    assert seen[0] == seen[1]
    assert seen[0][0][0] == "TypeError"


@pytest.mark.parametrize("code", ["x[::2] = x[1::2]", "x[:] = x", "x[:2] = x[2:]", "x[1:3] = x[1:3]", "x[0] = x[1]",
                                  "x.add_(x)", "x[:2].add_(x[2:])", "x.copy_(x)", "x[::2].add_(x[1::2])"])
def test_self_assignments_without_partial_overlap(code):
    results = []
    for m in (torch, gradc):
        ns = {"x": m.arange(4.)}
        exec(code, ns)
        results.append(ns["x"].tolist())
    assert results[0] == results[1]


def test_retained_gradient_of_a_view_after_its_base_is_written():
    results = []
    for m in (torch, gradc):
        x = m.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        y = x * 1
        v = y[1]
        v.retain_grad()
        y.mul_(2)
        (v * v).sum().backward()
        results.append((v.grad.tolist(), x.grad.tolist(), v.grad_fn.name()))
    assert results[0] == results[1]


def test_compiled_copies_are_copies():
    """Under @gradc.compile, contiguous()/reshape()/flatten() of a non-contiguous tensor copy (as
    eagerly), and view() refuses a layout it cannot view."""
    def f1(x):
        z = x.t().contiguous()
        z.mul_(5)
        return x * 1

    def f2(x):
        x.t().reshape(4)[1:3].mul_(5)
        return x * 1

    def f3(x):
        y = x * 1
        y.t().view(4).mul_(10)
        return y
    for f in (f1, f2):
        a, b = gradc.tensor([[1., 2.], [3., 4.]]), gradc.tensor([[1., 2.], [3., 4.]])
        assert gradc.compile(f)(a).tolist() == f(b).tolist() == [[1., 2.], [3., 4.]]
        assert a.tolist() == [[1., 2.], [3., 4.]]
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        gradc.compile(f3)(gradc.tensor([[1., 2.], [3., 4.]]))


def test_out_into_a_tensor_that_requires_grad_and_factories():
    for m in (torch, gradc):
        with pytest.raises(RuntimeError, match="functions with out=... arguments don't support automatic"):
            m.exp(m.zeros(2), out=m.zeros(2, requires_grad=True))
    outs = []
    for m in (torch, gradc):
        a, b, c = m.empty(0), m.empty(0, dtype=m.int64), m.empty(3)
        outs.append((m.zeros(2, 3, out=a) is a, tuple(a.shape), m.arange(5, out=b).tolist(),
                     m.linspace(0, 1, 3, out=c).tolist()))
    assert outs[0] == outs[1]


def test_unfold_is_a_view():
    results = []
    for m in (torch, gradc):
        y = m.arange(6.).reshape(2, 3)
        u = y.unfold(1, 2, 1)
        u[0, 0].mul_(10)
        x = m.arange(6., dtype=m.float64, requires_grad=True)
        w = x.unfold(0, 3, 2)
        (w * w).sum().backward()
        z = m.arange(24.).reshape(2, 3, 4).transpose(0, 2).unfold(1, 2, 1)
        results.append((y.tolist(), y._version, w.grad_fn.name(), x.grad.tolist(), z.tolist()))
    assert results[0] == results[1]


NAMED = ["m.addcmul(x, x, y, value=0.5)", "m.addcdiv(x, x, y + 2, value=0.5)", "m.aminmax(x, dim=1)[0]",
         "m.aminmax(x, dim=1)[1]", "m.cross(x, y, dim=1)", "m.linalg.cross(x, y)", "m.fmax(x, y)", "m.fmin(x, y)",
         "m.sinc(x)", "m.nn.functional.hardshrink(x)", "m.nan_to_num(x)", "m.take(x, m.tensor([0, 4]))", "m.rot90(x)",
         "m.deg2rad(x)", "m.rad2deg(x)", "m.lerp(x, y, 0.3)", "m.lerp(x, y, y)", "m.logaddexp(x, y)", "m.dist(x, y)",
         "m.cdist(x, y)", "m.kron(x, y)", "m.cummax(x, 1)[0]", "m.logcumsumexp(x, 1)", "m.var_mean(x, 1)[0]",
         "m.std_mean(x, 1)[0]", "m.nn.functional.softshrink(x)", "m.nn.functional.pairwise_distance(x, y)"]


@pytest.mark.parametrize("expr", NAMED)
def test_composite_node_names(expr):
    """Compositions show PyTorch's node name on their result (values and gradients are checked
    elsewhere)."""
    names = []
    for m in (torch, gradc):
        x = m.tensor([[0.3, -0.6, 0.9], [0.2, 0.5, -0.4]], dtype=m.float64, requires_grad=True)
        y = m.tensor([[0.7, 0.1, -0.2], [0.4, -0.8, 0.6]], dtype=m.float64, requires_grad=True)
        out = eval(expr, {"m": m, "x": x, "y": y})
        names.append((type(out.grad_fn).__name__, out.detach().numpy().round(10).tolist()))
    assert names[0] == names[1]


NUMPY_OPERANDS = [
    "t * np.ones(2)", "t + np.ones((), np.int64)", "t - np.ones(2, np.float32)", "np.exp(t)",
    "np.add(t, 1)", "np.maximum(t, np.zeros(2))", "np.greater(t, 0)", "t == np.ones(2)",
    "np.sqrt(lib.arange(3))",
]


@pytest.mark.parametrize("expr", NUMPY_OPERANDS)
def test_numpy_operands_give_tensors(expr):
    """NumPy computes a ufunc on tensors (or a tensor and an array) and PyTorch's __array_wrap__
    makes the result a tensor (bool as uint8); == with an array compares as with a tensor."""
    def run(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)      # torch's old __array_wrap__
            return eval(expr, {"np": np, "lib": lib, "t": lib.ones(2) * 2})
    ours, theirs = run(gradc), run(torch)
    assert isinstance(ours, gradc.Tensor) and isinstance(theirs, torch.Tensor)
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_numpy_operand_with_a_tensor_that_requires_grad():
    t = gradc.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        t * np.ones(2)
