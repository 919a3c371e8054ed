"""The native worker pool (``codegen/native_pool.py``): parallel kernel calls give the serial
result, from several Python threads at once, with more parts than workers, and in a forked child."""
import os
import threading

import numpy as np
import pytest

from gradc.codegen import native_pool, runtime_cpu
from gradc.codegen.kernel_ir import KernelBuilder

pytestmark = pytest.mark.skipif(not native_pool.supported(), reason="the native pool needs Linux on x86-64")


def _kernel(n):
    kb = KernelBuilder("pool_axpy", (n,))
    x = kb.load(kb.input("x", "f32", (n,)))
    y = kb.load(kb.input("y", "f32", (n,)))
    kb.store(kb.output("o", "f32", (n,)), kb.op("add", kb.op("mul", x, 3.0), kb.op("exp", y)))
    return runtime_cpu.compile_kernel(kb.build())


def _check(ck, n, seed):
    """The parallel call writes exactly what one thread running the whole range writes."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out, ref = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
    ck(x, y, out)
    argv = ck.args([x, y, ref])
    ck.serial_call(argv)()
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_allclose(out, x * 3 + np.exp(y), rtol=1e-4, atol=1e-5)


def test_every_part_runs_once():
    """A kernel that adds 1 to each element: run in parts over a pool, each element once."""
    n = 1 << 16
    kb = KernelBuilder("pool_incr", (n,))
    x = kb.load(kb.input("x", "f32", (n,)))
    kb.store(kb.output("o", "f32", (n,)), kb.op("add", x, 1.0))
    ck = runtime_cpu.compile_kernel(kb.build())
    pool = native_pool.NativePool(3)             # more workers than this machine may have cores
    x = np.arange(n, dtype=np.float32)
    for parts in (1, 2, 3, 4, 7, 100):
        out = np.zeros(n, np.float32)
        argv = ck.args([x, out])
        pool.run(ck.address, argv, n, parts)
        np.testing.assert_array_equal(out, x + 1)


def test_parallel_calls_from_several_threads():
    n = 300_001
    ck = _kernel(n)
    assert ck.parallel or runtime_cpu.num_threads() == 1
    errors = []

    def calls(seed):
        try:
            for i in range(20):
                _check(ck, n, seed * 100 + i)
        except AssertionError as e:     # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=calls, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_makes_its_own_pool():
    n = 300_001
    ck = _kernel(n)
    _check(ck, n, 0)                     # the parent's pool exists now
    pid = os.fork()
    if pid == 0:                         # the child has no worker threads: it must not wait for them
        try:
            _check(ck, n, 1)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
