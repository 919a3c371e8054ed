"""A tiny SIMT simulator: runs the NVPTX-lowered LLVM IR of a kernel on the CPU.

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


def run(kernel, arrays, block=None, grid=None, timeout=20.0):
    """Simulate the kernel on ``arrays`` (one per param, outputs written in place)."""
    _install()
    text, launch = host_ir(kernel)
    ee, addrs = jit_llvm_ir(text, [launch.name])
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(kernel.params))(addrs[launch.name])
    block = block or launch.block
    grid = grid or launch.grid_for(sm_count=1)
    if launch.mode != "matmul":
        grid = (min(grid[0], 3), 1, 1)      # few blocks: grid-stride loops iterate
    ptrs = [a.ctypes.data for a in arrays]
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

                def thread(lin, tx, ty, tz):
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
    del ee
    return arrays
