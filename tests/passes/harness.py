"""Shared machinery for the pass tests: the training pipeline run pass by pass with the
verifier after each, forward-then-backward execution with the reference interpreter,
and eager-autograd references for random programs (``gradc.ir.testing``)."""
from __future__ import annotations

import random

import numpy as np

import gradc
from gradc.ir import Module, interpret, verify
from gradc.ir.testing import generate_program
from gradc.passes.autodiff import differentiate
from gradc.passes.canonicalize import canonicalize
from gradc.passes.cse import eliminate_common_subexpressions
from gradc.passes.dce import eliminate_dead_code
from gradc.passes.fuse import fuse
from gradc.passes.manager import PassManager
from gradc.passes.partition import partition

POLICIES = ("save-all", "min-memory")
CLEANUP = (canonicalize, eliminate_common_subexpressions, eliminate_dead_code)


def verified(func):
    verify(func)
    return func


def clean(func):
    """canonicalize, cse, dce in place, verifying after each."""
    for p in CLEANUP:
        p(func)
        verify(func)
    return func


def joint_of(func, wrt=None):
    """The cleaned-up joint function of ``func`` (verified after every pass)."""
    return clean(verified(differentiate(verified(func), wrt)))


def split_and_fuse(joint, policy):
    """Partition ``joint`` and fuse both halves, verifying after each pass."""
    part = partition(joint, policy)
    verify(part.forward)
    verify(part.backward)
    fuse(part.forward)
    verify(part.forward)
    fuse(part.backward)
    verify(part.backward)
    return part


def run_forward_backward(part, primals, cotangents, n_outputs):
    """(outputs, gradients): forward on the primals, then backward on its residuals."""
    fwd = interpret(part.forward, primals)
    outputs, residuals = fwd[:n_outputs], fwd[n_outputs:]
    assert len(residuals) == len(part.residual_types)
    for r, t in zip(residuals, part.residual_types):
        assert r.shape == t.shape and r.dtype == t.dtype.np
    grads = interpret(part.backward, list(residuals) + list(cotangents))
    return outputs, grads


def random_cotangents(func, seed):
    """One array per floating result of ``func`` (in order), values in [-1, 1]."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, size=t.shape).astype(t.dtype.np) if t.dtype.is_floating_point else None
            for t in func.result_types]


def eager_reference(prog, arrays, cotangents):
    """(outputs, gradients w.r.t. the requires_grad inputs) with eager autograd.

    Outputs that are the same tensor have their cotangents summed first (one root each).
    """
    xs = [gradc.tensor(a, requires_grad=s.requires_grad) for a, s in zip(arrays, prog.specs)]
    outs = prog(*xs)
    wrt = [x for x, s in zip(xs, prog.specs) if s.requires_grad]
    roots: dict = {}
    for o, c in zip(outs, cotangents):
        if c is None or not o.requires_grad:
            continue
        prev = roots.get(id(o))
        roots[id(o)] = (o, c if prev is None else prev[1] + c)
    grads = [None] * len(wrt)
    if roots and wrt:
        pairs = list(roots.values())
        grads = gradc.autograd.grad([o for o, _ in pairs], wrt, grad_outputs=[gradc.tensor(c) for _, c in pairs],
                                    allow_unused=True)
    grads = [np.zeros(x.shape, x.dtype.np) if g is None else g.numpy() for g, x in zip(grads, wrt)]
    return [o.detach().numpy() for o in outs], grads


def seeded_program(seed, **kw):
    return generate_program(random.Random(seed).randint, **kw)


def assert_close(got, want, rtol, atol, what=""):
    assert len(got) == len(want), what
    for k, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, f"{what} #{k}: shape {a.shape} != {b.shape}"
        assert a.dtype == b.dtype, f"{what} #{k}: dtype {a.dtype} != {b.dtype}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"{what} #{k}")


def run_pipeline(func, pipeline):
    """Run pipeline text on a module holding ``func`` with verify_each; return the module."""
    module = Module([func])
    PassManager.parse(pipeline, verify_each=True).run(module)
    verify(module)
    return module
