"""A row kernel too large for the cache prefetches the rows of later outer points in its
arithmetic-heavy pass (``row_prefetch``): one prefetch per vector of the vectorized loop, the
same results as without, whatever the row count, dtype, outer axes or strides."""
import platform

import numpy as np
import pytest

from gradc.codegen import llvm_common, llvm_cpu, row_prefetch, runtime_cpu
from gradc.codegen.host_buffers import empty_aligned
from gradc.codegen.kernel_ir import KernelBuilder, coalesce
from gradc.codegen.llvm_common import pass_plan, scratch_plan, streaming_stores
from gradc.codegen.runtime_cpu import compile_kernel

x86 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="prefetch lowering: x86 only")


@pytest.fixture
def uncached(monkeypatch):
    """Every kernel counts as too large for the cache; lowering not memoized across settings."""
    monkeypatch.setattr(llvm_cpu, "last_level_cache_bytes", lambda: 0)
    monkeypatch.setattr(runtime_cpu, "_lowered", {})
    monkeypatch.setattr(runtime_cpu, "_memo", {})


def _softmax(shape, dtype="f32", transposed=False):
    """exp(x - max) / sum over the last axis; ``transposed``: x is stored [n, m] and read
    through strides (1, m)."""
    kb = KernelBuilder("smx", shape)
    red = (len(shape) - 1,)
    if transposed:
        m, n = shape
        x = kb.load(kb.input("x", dtype, (n, m)), broadcast_from_shape=shape, strides=(1, m))
    else:
        x = kb.load(kb.input("x", dtype, shape))
    e = kb.op("exp", kb.op("sub", x, kb.reduce("max", x, red)))
    kb.store(kb.output("y", dtype, shape), kb.op("div", e, kb.reduce("sum", e, red)))
    return kb.build()


def _plan(k):
    k = coalesce(k)
    passes = pass_plan(k)
    kept = scratch_plan(k, passes)
    return row_prefetch.prefetch_plan(k, passes, kept, streaming_stores(k, kept, passes)), passes


def _want(x):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_plan_prefetches_in_the_exp_pass_every_row_buffer(uncached):
    plan, passes = _plan(_softmax((37, 1024)))
    assert len(passes) == 3 and plan.pass_index == 1           # max | exp and its sum | store
    assert [(buf.name, write) for buf, _, write in plan.targets] == [("x", False), ("y", True)]
    assert plan.distance == row_prefetch.PREFETCH_ROWS_AHEAD and plan.axis == 0


def test_what_is_not_prefetched(uncached, monkeypatch):
    """Rows longer than PREFETCH_MAX_ROW_BYTES (both buffers), streamed outputs, and a kernel
    with prefetching turned off."""
    assert _plan(_softmax((8, 4096)))[0] is None               # 2 x 16 KiB a row
    assert _plan(_softmax((8, 2048)))[0] is not None
    monkeypatch.setattr(llvm_common, "STREAMING_MIN_BYTES", 1)
    kb = KernelBuilder("ctr", (6, 1024))
    x = kb.load(kb.input("x", "f32", (6, 1024)))
    kb.store(kb.output("y", "f32", (6, 1024)), kb.op("sub", x, kb.reduce("sum", x, (1,))))
    plan, _ = _plan(kb.build())
    assert [(buf.name, write) for buf, _, write in plan.targets] == [("x", False)]   # y streams
    monkeypatch.setattr(row_prefetch, "PREFETCH_ROWS_AHEAD", 0)
    assert _plan(_softmax((37, 1024)))[0] is None


@x86
def test_vectorized_loop_prefetches_once_per_vector(uncached, monkeypatch):
    """The exp loop of an f32 row holds one prefetcht0 (x) and one prefetchw (y) per 16-lane
    vector; without prefetching there are none."""
    k = _softmax((37, 1024))
    asm = llvm_cpu.emit_assembly(k)
    loop = max(asm.split(".LBB")[1:], key=lambda block: block.count("vscalefps"))
    width = llvm_cpu.vector_bits() // 32
    vectors = loop.count("vscalefps")
    assert vectors >= 1 and width >= 16
    assert loop.count("prefetcht0") == vectors and loop.count("prefetchw") == vectors
    assert "vpaddq" not in loop            # no widened index for the prefetch addresses
    # the loop kept scalar (where runtime alias checks fail) prefetches inline: no function left
    assert "gradc.prefetch" not in asm and asm.count("prefetcht0") > vectors
    monkeypatch.setattr(row_prefetch, "PREFETCH_ROWS_AHEAD", 0)
    assert "prefetch" not in llvm_cpu.emit_assembly(k)


@pytest.mark.parametrize("shape,dtype", [((37, 1024), "f32"), ((5, 96), "f64"), ((3, 5, 256), "f32"),
                                         ((2, 1), "f32"), ((1, 64), "f64")])
def test_results_equal_those_without_prefetching(uncached, monkeypatch, shape, dtype):
    """Rows near the end prefetch the last row (clamped), several outer axes, f64 elements."""
    np_dt = np.float32 if dtype == "f32" else np.float64
    x = np.random.default_rng(0).standard_normal(shape).astype(np_dt) * 4
    k = _softmax(shape, dtype)
    outs = []
    for ahead in (row_prefetch.PREFETCH_ROWS_AHEAD, 0):
        monkeypatch.setattr(row_prefetch, "PREFETCH_ROWS_AHEAD", ahead)
        monkeypatch.setattr(runtime_cpu, "_lowered", {})
        y = empty_aligned(shape, np_dt)
        compile_kernel(k)(x, y)
        outs.append(y)
    tol = 2e-6 if dtype == "f32" else 1e-13
    np.testing.assert_allclose(outs[0], outs[1], rtol=tol, atol=0)
    np.testing.assert_allclose(outs[0], _want(x), rtol=10 * tol, atol=0)


def test_strided_rows(uncached):
    """x read transposed (its reduced axis has stride m): the prefetch index is scaled."""
    m, n = 48, 256
    k = _softmax((m, n), transposed=True)
    plan, _ = _plan(k)
    assert plan is not None and plan.targets[0][1].strides == (1, m)
    xt = np.random.default_rng(1).standard_normal((n, m)).astype(np.float32)
    y = empty_aligned((m, n), np.float32)
    compile_kernel(k)(np.ascontiguousarray(xt), y)
    np.testing.assert_allclose(y, _want(xt.T), rtol=2e-5)


@x86
def test_dump_ir_schedule_names_the_prefetching_pass(uncached):
    """``gradc dump-ir --stage kernels`` comments each CPU pass: the prefetching one says so."""
    lines = llvm_cpu.describe_schedule(_softmax((37, 1024)))
    assert lines[0] == "cpu: 3 passes over the reduced axes per outer point"
    assert lines[2].startswith("  pass 2: reduce") and lines[2].endswith(
        f"prefetch the rows {row_prefetch.PREFETCH_ROWS_AHEAD} points ahead of %x, %y")
    assert "prefetch" not in lines[1] + lines[3]
