"""A tiny SIMT simulator: runs the NVPTX-lowered LLVM IR of a kernel on the CPU.

It backs the CUDA simulator driver (``GRADC_CUDA_SIMULATOR=1``, ``cuda_driver.py``) and the
GPU schedule tests.

The GPU module (before NVPTX code generation) is retargeted to the host: address spaces
are dropped, special registers / ``barrier0`` / ``shfl.sync.down`` become calls into Python
(ctypes callbacks), and every thread of a block is an OS thread calling the kernel, blocks
run one after another (so addrspace(3) globals act as the block's shared memory).  It checks
the GPU schedules (grid-stride loops, block reductions, shared-memory tiles, epilogues)
without a GPU; it does not check the NVPTX backend itself (ptxas does that).
"""
import ctypes
import re
import threading

import llvmlite.binding as llvm

from gradc.codegen import ptx
from gradc.codegen.runtime_cpu import jit_llvm_ir

_tls = threading.local()
_state = {}
_I32FN = ctypes.CFUNCTYPE(ctypes.c_int32)
_callbacks = []


def _sreg(name):
    def get():
        return _tls.regs[name]
    return _I32FN(get)


def _barrier():
    _state["block_barrier"].wait()


def _shfl(mask, value, offset, clamp):
    warp, lane = _tls.warp, _tls.lane
    slots, bar = _state["warps"][warp]
    slots[lane] = value
    bar.wait()
    src = lane + offset
    out = slots[src] if src <= clamp and src < len(slots) else value
    bar.wait()
    return out


def _install():
    if _callbacks:
        return
    for reg in ("tid.x", "tid.y", "tid.z", "ctaid.x", "ctaid.y", "ctaid.z", "ntid.x", "ntid.y", "ntid.z",
                "nctaid.x", "nctaid.y", "nctaid.z"):
        cb = _sreg(reg)
        _callbacks.append(cb)
        llvm.add_symbol(f"gpusim.sreg.{reg}", ctypes.cast(cb, ctypes.c_void_p).value)
    bar = ctypes.CFUNCTYPE(None)(_barrier)
    shfl = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)(_shfl)
    _callbacks.extend([bar, shfl])
    llvm.add_symbol("gpusim.barrier0", ctypes.cast(bar, ctypes.c_void_p).value)
    llvm.add_symbol("gpusim.shfl_down_i32", ctypes.cast(shfl, ctypes.c_void_p).value)


def host_ir(kernel):
    module, launch = ptx.lower_kernel(kernel)
    text = str(module)
    text = text.replace('target triple = "nvptx64-nvidia-cuda"', f'target triple = "{llvm.get_process_triple()}"')
    text = re.sub(r"\s*addrspace\(\d+\)", "", text)
    text = text.replace("llvm.nvvm.read.ptx.sreg.", "gpusim.sreg.")
    text = text.replace("llvm.nvvm.barrier0", "gpusim.barrier0")
    text = text.replace("llvm.nvvm.shfl.sync.down.i32", "gpusim.shfl_down_i32")
    return text, launch


class SimKernel:
    """A kernel's GPU lowering compiled for the host once; ``launch(ptrs)`` simulates one launch."""

    def __init__(self, kernel):
        _install()
        text, self.launch_desc = host_ir(kernel)
        self.kernel = kernel
        self._ee, addrs = jit_llvm_ir(text, [self.launch_desc.name])
        self._fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(kernel.params))(addrs[self.launch_desc.name])

    def launch(self, ptrs, block=None, grid=None, max_blocks=3, timeout=20.0):
        launch = self.launch_desc
        block = block or launch.block
        grid = grid or launch.grid_for(sm_count=1)
        if launch.mode != "matmul":
            grid = (min(grid[0], max_blocks), 1, 1)      # few blocks: grid-stride loops iterate
        _simulate(self._fn, ptrs, block, grid, timeout)


def run(kernel, arrays, block=None, grid=None, timeout=20.0):
    """Simulate the kernel on ``arrays`` (one per param, outputs written in place); outputs
    that threads add into atomically are set to 0 first, as the drivers' launches do."""
    acc = kernel.accumulated_outputs()
    for p, a in zip(kernel.params, arrays):
        if p.name in acc:
            a[...] = 0
    SimKernel(kernel).launch([a.ctypes.data for a in arrays], block=block, grid=grid, timeout=timeout)
    return arrays


_sim_lock = threading.Lock()     # one simulated launch at a time (the state is global)


def _simulate(fn, ptrs, block, grid, timeout):
    with _sim_lock:
        _simulate_locked(fn, ptrs, block, grid, timeout)


def _simulate_locked(fn, ptrs, block, grid, timeout):
    nthreads = block[0] * block[1] * block[2]
    errors = []
    for bz in range(grid[2]):
        for by in range(grid[1]):
            for bx in range(grid[0]):
                _state["block_barrier"] = threading.Barrier(nthreads, timeout=timeout)
                nwarps = (nthreads + 31) // 32
                _state["warps"] = [([0] * min(32, nthreads - 32 * w), threading.Barrier(min(32, nthreads - 32 * w),
                                                                                       timeout=timeout))
                                   for w in range(nwarps)]

                def thread(lin, tx, ty, tz, bx=bx, by=by, bz=bz):
                    _tls.regs = {"tid.x": tx, "tid.y": ty, "tid.z": tz, "ctaid.x": bx, "ctaid.y": by,
                                 "ctaid.z": bz, "ntid.x": block[0], "ntid.y": block[1], "ntid.z": block[2],
                                 "nctaid.x": grid[0], "nctaid.y": grid[1], "nctaid.z": grid[2]}
                    _tls.warp, _tls.lane = lin // 32, lin % 32
                    try:
                        fn(*ptrs)
                    except Exception as e:  # pragma: no cover
                        errors.append(e)

                threads = []
                for lin in range(nthreads):
                    tx, rest = lin % block[0], lin // block[0]
                    t = threading.Thread(target=thread, args=(lin, tx, rest % block[1], rest // block[1]))
                    t.start()
                    threads.append(t)
                for t in threads:
                    t.join()
    if errors:
        raise errors[0]
