"""A large output that a row kernel's store pass writes once per element goes to memory with
non-temporal vector stores (``llvm_common.streaming_stores``), where its pointer is cache-line
aligned; results are the same through that path and the plain one."""
import platform

import numpy as np
import pytest

from gradc.codegen import llvm_common, llvm_cpu
from gradc.codegen.host_buffers import empty_aligned
from gradc.codegen.kernel_ir import KernelBuilder
from gradc.codegen.llvm_common import scratch_plan, streaming_stores
from gradc.codegen.runtime_cpu import compile_kernel

x86 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="non-temporal stores: x86 only")


@pytest.fixture
def small_streaming(monkeypatch):
    """Stream outputs of any size, so a test kernel stays small (and fits no cache)."""
    monkeypatch.setattr(llvm_common, "STREAMING_MIN_BYTES", 1)
    monkeypatch.setattr(llvm_cpu, "last_level_cache_bytes", lambda: 0)


def test_kernels_that_fit_in_half_the_last_level_cache_store_normally(monkeypatch):
    """All of a kernel's buffers within half the last-level cache: no streaming stores (the
    next reader finds the output in the cache); an unknown cache size (0) streams as before;
    ``GRADC_LLC_BYTES`` sets the size."""
    k = _normalize(4, 1024)
    total = sum(p.numel * 4 for p in k.params)
    real = llvm_cpu.last_level_cache_bytes
    monkeypatch.setattr(llvm_cpu, "_llc", [])
    monkeypatch.setenv("GRADC_LLC_BYTES", str(2 * total))
    assert real() == 2 * total and llvm_cpu.fits_in_last_level_cache(k)
    for size, fits in ((2 * total - 1, False), (0, False)):
        monkeypatch.setattr(llvm_cpu, "last_level_cache_bytes", lambda size=size: size)
        assert llvm_cpu.fits_in_last_level_cache(k) is fits


def _normalize(m, n, dtype="f32", keep_exp=False):
    """y = (x - mean(x)) * g (or exp(x - max) / sum for ``keep_exp``), one row per outer point."""
    kb = KernelBuilder("nrm", (m, n))
    x = kb.load(kb.input("x", dtype, (m, n)))
    if keep_exp:
        e = kb.op("exp", kb.op("sub", x, kb.reduce("max", x, (1,))))
        y = kb.op("div", e, kb.reduce("sum", e, (1,)))
    else:
        g = kb.load(kb.input("g", dtype, (n,)))
        y = kb.op("mul", kb.op("sub", x, kb.op("div", kb.reduce("sum", x, (1,)), float(n))), g)
    kb.store(kb.output("y", dtype, (m, n)), y)
    return kb.build()


def _want(x, g):
    x64 = x.astype(np.float64)
    return (x64 - x64.mean(1, keepdims=True)) * g


@x86
@pytest.mark.parametrize("dtype,n", [("f32", 1024), ("f64", 96)])
def test_store_pass_streams_aligned_outputs_and_falls_back_for_unaligned(small_streaming, dtype, n):
    k = _normalize(37, n, dtype)
    assert streaming_stores(k, scratch_plan(k)) == {"y"}
    asm = llvm_cpu.emit_assembly(k)
    assert ("vmovntps" if dtype == "f32" else "vmovntpd") in asm and "sfence" in asm
    np_dt = np.float32 if dtype == "f32" else np.float64
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((37, n)).astype(np_dt), rng.standard_normal(n).astype(np_dt)
    ck = compile_kernel(k)
    aligned = empty_aligned((37, n), np_dt)
    raw = empty_aligned(37 * n + 1, np_dt)
    unaligned = raw[1:].reshape(37, n)                  # 4 or 8 bytes past a cache line: plain stores
    assert aligned.ctypes.data % 64 == 0 and unaligned.ctypes.data % 64 != 0
    for y in (aligned, unaligned):
        y[...] = np.nan
        ck(x, g, y)
        np.testing.assert_allclose(y, _want(x, g), rtol=1e-5 if dtype == "f32" else 1e-12, atol=1e-5)


def _centered_plus_one_hot(m, n):
    """y = x - mean(x) - (i == label): the one-hot term is added at the label after the loop."""
    kb = KernelBuilder("coh", (m, n))
    lab = kb.load(kb.input("lab", "i64", (m, 1)))
    x = kb.load(kb.input("x", "f32", (m, n)))
    hot = kb.op("where", kb.op("eq", kb.index(1), lab), kb.constant(-1.0, "f32"), kb.constant(0.0, "f32"))
    y = kb.op("add", kb.op("sub", x, kb.op("div", kb.reduce("sum", x, (1,)), float(n))), hot)
    kb.store(kb.output("y", "f32", (m, n)), y)
    return kb.build()


def test_what_does_not_stream(small_streaming, monkeypatch):
    """A row whose bytes are not whole cache lines, a kept value's row (read back by the store
    pass), a store whose one-hot addend is added after the loop (it reads the line back), and
    any output below STREAMING_MIN_BYTES keep plain stores."""
    assert streaming_stores(_normalize(4, 100), scratch_plan(_normalize(4, 100))) == frozenset()
    k = _normalize(4, 1024, keep_exp=True)
    assert scratch_plan(k) and streaming_stores(k, scratch_plan(k)) == frozenset()
    k = _centered_plus_one_hot(5, 1024)
    assert not scratch_plan(k) and streaming_stores(k, scratch_plan(k)) == frozenset()
    rng = np.random.default_rng(3)
    x, lab = rng.standard_normal((5, 1024)).astype(np.float32), np.array([[0], [7], [1023], [-1], [5000]])
    y = empty_aligned((5, 1024), np.float32)
    compile_kernel(k)(lab, x, y)
    want = x - x.mean(1, keepdims=True)
    for r, label in enumerate(lab[:, 0]):
        if 0 <= label < 1024:
            want[r, label] -= 1
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    monkeypatch.setattr(llvm_common, "STREAMING_MIN_BYTES", 8 << 20)
    k = _normalize(4, 1024)
    assert streaming_stores(k, scratch_plan(k)) == frozenset()
    assert "vmovnt" not in llvm_cpu.emit_assembly(k)
