"""Generated x86 code is vectorized; compiled objects are cached on disk across processes."""
import os
import platform
import re
import subprocess
import sys
import textwrap

import pytest

from gradc.codegen import llvm_cpu
from gradc.codegen.kernel_ir import KernelBuilder

x86 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 assembly check")
VEC = re.compile(r"\b(v?(?:add|mul|fmadd\d*)ps)\b[^\n]*%(xmm|ymm|zmm)")


def elementwise(n=4096, dtype="f32"):
    kb = KernelBuilder("vec_ew", (n,))
    a = kb.load(kb.input("a", dtype, (n,)))
    b = kb.load(kb.input("b", dtype, (n,)))
    kb.store(kb.output("o", dtype, (n,)), kb.op("mul", kb.op("add", a, b), b))
    return kb.build()


@x86
def test_elementwise_kernel_is_vectorized():
    asm = llvm_cpu.emit_assembly(elementwise())
    found = set(VEC.findall(asm))
    assert any(op in ("vaddps", "vmulps", "addps", "mulps") or op.startswith("vfmadd")
               for op, _ in found), f"no packed float instructions in:\n{asm[:3000]}"
    assert any(reg in ("ymm", "zmm") for _, reg in found) or any(op in ("addps", "mulps") for op, _ in found)


@x86
def test_exp_and_reduction_loops_are_vectorized():
    kb = KernelBuilder("vec_red", (64, 1024))
    x = kb.load(kb.input("x", "f32", (64, 1024)))
    e = kb.op("exp", kb.op("sub", x, kb.reduce("max", x, (1,))))
    kb.store(kb.output("o", "f32", (64, 1024)), kb.op("div", e, kb.reduce("sum", e, (1,))))
    asm = llvm_cpu.emit_assembly(kb.build())
    assert re.search(r"vfmadd\d+ps[^\n]*%[yz]mm", asm), "exp polynomial not vectorized"
    assert re.search(r"vaddps[^\n]*%[yz]mm", asm), "blocked f32 sum not vectorized"
    # f32 sums keep f32 vector partial sums: no per-element widening to f64 in the loop
    assert not re.search(r"vcvtps2pd[^\n]*%[yz]mm", asm), "f32 sum widened to f64 per element"
    assert re.search(r"vmaxps[^\n]*%[yz]mm", asm), "max reduction not vectorized"


def xent_like(n=64, m=1024):
    """max, sum of exp and a one-hot picked value per row, then a full-size gradient store."""
    kb = KernelBuilder("vec_xent", (n, m))
    t = kb.load(kb.input("t", "i64", (n, 1)))
    x = kb.load(kb.input("x", "f32", (n, m)))
    hot = kb.op("eq", kb.index(1), t)
    zero = kb.constant(0.0, "f32")
    picked = kb.reduce("sum", kb.op("where", hot, x, zero), (1,))
    mx = kb.reduce("max", x, (1,))
    s = kb.reduce("sum", kb.op("exp", kb.op("sub", x, mx)), (1,))
    kb.store(kb.output("picked", "f32", (n, 1)), picked)
    g = kb.op("sub", kb.op("div", kb.op("exp", kb.op("sub", x, mx)), s),
              kb.op("where", hot, kb.constant(1.0, "f32"), zero))
    kb.store(kb.output("g", "f32", (n, m)), g)
    return kb.build()


def test_row_loops_avoid_i64_and_divides():
    """The i64 label is loaded before the row loops (so the store loop needs no runtime alias
    checks, and its widest loaded type is f32, not i64: full float vector width), and the division by the per-row sum is a multiply
    by its reciprocal."""
    opt = llvm_cpu.emit_llvm(xent_like(), optimized=True)
    assert "LVerDomain" not in opt, "row loop versioned for aliasing: label load left in the loop"
    assert not re.search(r"fdiv <\d+ x float>", opt), "per-element divide in the row loop"


@x86
def test_xent_row_loops_use_full_width_vectors():
    asm = llvm_cpu.emit_assembly(xent_like())
    width = "zmm" if "+avx512f" in llvm_cpu.host_features() else "ymm"
    # every packed-float instruction uses the widest register class the host allows
    found = {reg for _, reg in VEC.findall(asm)}
    assert width in found, f"no {width} float ops"


def test_llvm_ir_uses_gep_not_ptrtoint():
    text = llvm_cpu.emit_llvm(elementwise(16))
    assert "getelementptr" in text and "ptrtoint" not in text and "inttoptr" not in text


SCRIPT = textwrap.dedent("""
    import json, numpy as np
    from gradc.codegen import cache, runtime_cpu
    from gradc.codegen.kernel_ir import KernelBuilder
    kb = KernelBuilder("cached_kernel_%(tag)s", (1000,))
    x = kb.load(kb.input("x", "f64", (1000,)))
    kb.store(kb.output("o", "f64", (1000,)), kb.op("tanh", kb.op("mul", x, 3.0)))
    ck = runtime_cpu.compile_kernel(kb.build())
    x = np.linspace(-1, 1, 1000); o = np.empty(1000)
    ck(x, o)
    assert np.allclose(o, np.tanh(3 * x))
    print(json.dumps({"cache": cache.stats, "runtime": runtime_cpu.stats}))
""")


def test_disk_cache_second_process_compiles_nothing(tmp_path):
    env = dict(os.environ, GRADC_CACHE_DIR=str(tmp_path / "cache"))
    script = SCRIPT % {"tag": os.getpid()}

    def run():
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        import json
        return json.loads(out.stdout.strip().splitlines()[-1])

    first = run()
    assert first["runtime"] == {"compiled": 1, "loaded": 0} and first["cache"]["writes"] == 1
    assert len(list((tmp_path / "cache").glob("*.o"))) == 1
    second = run()
    assert second["runtime"] == {"compiled": 0, "loaded": 1} and second["cache"]["hits"] == 1


def test_cache_disabled(tmp_path, monkeypatch):
    from gradc.codegen import cache
    monkeypatch.setenv("GRADC_CACHE_DIR", "off")
    assert cache.cache_dir() is None and cache.load("x") is None
    cache.store("x", b"data")   # no-op


def test_parallel_compile_balances_by_cost():
    """Kernels are split between this process and a forked child longest first, each to the
    less loaded side (two big kernels never land on one side while the other idles)."""
    from gradc.codegen.runtime_cpu import _balance
    todo = [("a", 3, "ka", 99.0), ("b", 3, "kb", 64.0), ("c", 3, "kc", 54.0), ("d", 3, "kd", 20.0)]
    mine, theirs = _balance(todo)
    assert [t[0] for t in mine] == ["a", "d"] and [t[0] for t in theirs] == ["b", "c"]
    assert sorted(mine + theirs) == sorted(todo)


def test_lane_loop_kernels_count_double_in_compile_cost():
    from gradc.codegen.llvm_cpu import CpuKernelInfo
    from gradc.codegen.runtime_cpu import compile_cost
    row = CpuKernelInfo("k", (), 1, 1)
    lanes = CpuKernelInfo("k", (), 1, 1, lane_loops=True)
    assert compile_cost("x" * 100, lanes) == 2 * compile_cost("x" * 100, row)
