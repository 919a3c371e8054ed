"""GPU schedules checked on the CPU with the SIMT simulator (gpusim.py), against NumPy."""
import numpy as np
import pytest

from gradc.codegen import kernel_eval, ptx

from gradc.codegen import gpusim
from .helpers import TOL, buffers
from .programs import build_matmul, programs, reduce_program, softmax

PROGRAMS = programs()
SIM = ["chain_f32", "chain_f64", "bcast_tr_f32", "ints_bools", "softmax_f32_1000", "logsoftmax_f64_1000",
       "softmax_f32_16", "layernorm_f32", "layernorm_f64", "mse_f32", "any_count", "linear_relu_f32",
       "linear_relu_f64", "bmm_f32", "mm_t_f64", "mv_f32", "red_prod_f64_6x300_1", "red_max_f32_40x5x3_02",
       "red_min_f64_6x300_1", "red_mean_f32_40x5x3_02",
       "layernorm_grad_f32", "layernorm_grad_f64", "row_col_sums_f64"]


def check(kernel, block=None, seed=0):
    rng = np.random.default_rng(seed)
    low = 0.5 if "prod" in kernel.name else -2.0
    arrs = buffers(kernel, rng, low=low, high=1.5)
    sim = [a.copy() for a in arrs]
    gpusim.run(kernel, sim, block=block)
    ref = [a.copy() for a in arrs]
    kernel_eval.evaluate(kernel, ref)
    for i, p in enumerate(kernel.params):
        if p.role == "output":
            np.testing.assert_allclose(sim[i], ref[i], equal_nan=True, err_msg=f"%{p.name}", **TOL[p.dtype])


@pytest.mark.parametrize("name", SIM)
def test_program_in_simulator(name):
    k = PROGRAMS[name]
    mode = ptx.compile_ptx(k).launch.mode
    check(k, block=None if mode == "matmul" else (64, 1, 1))


def test_block_reduction_with_partial_warp_and_many_rows():
    """96 threads (3 warps, warp 0 combines 3 partials), 7 rows over 2 blocks: grid-stride."""
    check(softmax("f32", n=7, m=77), block=(96, 1, 1))
    check(reduce_program("sum", "f64", (5, 1000), (1,)), block=(96, 1, 1))


def test_matmul_tiles_with_ragged_edges():
    check(build_matmul("mm_edges", (3, 19, 21), (21, 35), "f32"))


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_trig_of_large_arguments_on_the_gpu_path(dtype):
    """The NVPTX lowering's sin/cos/tan (their large-argument branch and 2/pi table, which the
    PTX gets as a global) in the simulator: within 2 ulp of NumPy (tan 3) up to the largest
    finite value."""
    from gradc.codegen.kernel_ir import KernelBuilder
    from .test_math import TRIG, _log_spaced, max_ulp_err
    npdt = np.float32 if dtype == "f32" else np.float64
    x = _log_spaced(npdt, 300, np.random.default_rng(3))
    kb = KernelBuilder(f"sim_trig_{dtype}", x.shape)
    v = kb.load(kb.input("x", dtype, x.shape))
    for op in sorted(TRIG):
        kb.store(kb.output(op, dtype, x.shape), kb.op(op, v))
    outs = [np.empty_like(x) for _ in TRIG]
    gpusim.run(kb.build(), [x] + outs, block=(64, 1, 1))
    for op, got in zip(sorted(TRIG), outs):
        ulps = max_ulp_err(got, TRIG[op](x.astype(np.float64)), npdt)
        assert ulps <= (3 if op == "tan" else 2), f"{op}: {ulps:.2f} ulp"


def test_f32_trig_near_multiples_of_half_pi_on_the_gpu_path():
    """The NVPTX lowering's f32 sin/cos/tan (always the FMA reduction: r + r_lo; its scalar branch to
    the large reduction, phis for r, r_lo and the quadrant) near every multiple of pi/2 below
    2**16, in the simulator: within the CPU kernels' ulps of the exact values."""
    from gradc.codegen.kernel_ir import KernelBuilder
    from .test_math import F32_TRIG_ULPS, TRIG, f32_near_half_pi_multiples, trig_ulps
    x = f32_near_half_pi_multiples()
    kb = KernelBuilder("sim_trig_near", x.shape)
    v = kb.load(kb.input("x", "f32", x.shape))
    for op in sorted(TRIG):
        kb.store(kb.output(op, "f32", x.shape), kb.op(op, v))
    outs = [np.empty_like(x) for _ in TRIG]
    gpusim.run(kb.build(), [x] + outs, block=(64, 1, 1))
    for op, got in zip(sorted(TRIG), outs):
        exact, rounded = trig_ulps(got, TRIG[op](x.astype(np.float64)), np.float32)
        bound, bound_rounded = F32_TRIG_ULPS[op]
        assert exact.max() <= bound and rounded.max() <= bound_rounded, f"{op}: {exact.max():.2f} ulp"
