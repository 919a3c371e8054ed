"""Shared helpers for the codegen tests: run a kernel natively and with the NumPy reference."""
import numpy as np

from gradc.codegen import kernel_eval, runtime_cpu
from gradc.codegen.kernel_ir import np_dtype

TOL = {"f32": dict(rtol=1e-4, atol=1e-5), "f64": dict(rtol=1e-9, atol=1e-12),
       "i64": dict(rtol=0, atol=0), "i1": dict(rtol=0, atol=0)}


def random_array(rng, shape, dtype, low=-2.0, high=2.0):
    dt = np_dtype(dtype)
    if dtype == "i1":
        return rng.random(shape) < 0.5
    if dtype == "i64":
        return rng.integers(-5, 6, size=shape).astype(np.int64)
    return rng.uniform(low, high, size=shape).astype(dt)


def buffers(kernel, rng, inputs=None, **kw):
    arrs = []
    for p in kernel.params:
        if inputs and p.name in inputs:
            arrs.append(np.ascontiguousarray(inputs[p.name], dtype=np_dtype(p.dtype)))
        elif p.role == "input":
            arrs.append(random_array(rng, p.shape, p.dtype, **kw))
        else:
            arrs.append(np.full(p.shape, 7, dtype=np_dtype(p.dtype)))
    return arrs


def run_both(kernel, arrays, **compile_kw):
    """(native outputs, reference outputs) for the kernel's output params."""
    native = [a.copy() for a in arrays]
    runtime_cpu.compile_kernel(kernel, **compile_kw)(*native)
    ref = [a.copy() for a in arrays]
    kernel_eval.evaluate(kernel, ref)
    outs = [i for i, p in enumerate(kernel.params) if p.role == "output"]
    return [native[i] for i in outs], [ref[i] for i in outs]


def assert_kernel_matches(kernel, arrays, **compile_kw):
    got, want = run_both(kernel, arrays, **compile_kw)
    for p, g, w in zip(kernel.outputs, got, want):
        np.testing.assert_allclose(g, w, equal_nan=True, err_msg=f"output %{p.name}", **TOL[p.dtype])
    return got
