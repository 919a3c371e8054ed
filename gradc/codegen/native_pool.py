"""Native worker threads for parallel kernel calls (Linux x86-64).

``runtime_cpu`` splits a large kernel's outer range over the cores.  With Python worker
threads fed through queues, each parallel call cost about 50 us more than the same split
run by OpenMP (measured here on W1's, W3's and W4's kernels: W1's 0.25 ms kernel took
0.31 ms): the worker wakes from a futex, takes the GIL, unpacks its job and calls ctypes,
and the caller waits on a queue for it the same way.

Here every worker is a Python daemon thread that calls ``gradc_pool_worker`` once; the call
never returns and holds no GIL.  The worker spins (``pause``) on the pool's generation
counter for about ``SPIN_CYCLES`` time-stamp cycles after each job, then sleeps on it with
``futex``.  ``gradc_pool_run`` (called by the caller's thread through ctypes, without
the GIL) publishes a job, bumps the generation, wakes sleeping workers, runs part 0
itself and spins until every worker has finished its part, or, after ``SPIN_CYCLES`` (a
worker descheduled: more runnable threads than cores), sleeps until the last one wakes it.  Part ``i`` of ``n`` is
``[ext*i/n, ext*(i+1)/n)``, the split ``runtime_cpu`` used before.

The pool block (``POOL_BYTES``, one cache line per field group) holds: the generation
(i32, the futex word) and the count of sleeping workers (i32); the workers still running
(i64); the job: kernel address, argument vector, extent and part count.  One job at a time:
callers hold ``NativePool.lock``.  A forked child has no workers: ``runtime_cpu`` makes a
new pool when the process id changes.  Workers never stop, so a pool is never freed.
"""
from __future__ import annotations

import ctypes
import os
import platform
import sys
import threading

SPIN_CYCLES = 1 << 19      # about 0.2 ms at 2.5 GHz: a step's next parallel call finds workers awake
POOL_BYTES = 192

_IR = r"""
declare i64 @syscall(i64, ...)
declare void @llvm.x86.sse2.pause()
declare i64 @llvm.readcyclecounter()

; pool: +0 i32 generation (the workers' futex word), +4 i32 workers asleep,
;       +64 i32 workers still running (the caller's futex word), +68 i32 caller asleep,
;       +128 ptr kernel, +136 ptr argv, +144 i64 extent, +152 i64 parts
define void @gradc_pool_worker(ptr %pool, i64 %index) {
entry:
  %pending = getelementptr inbounds i8, ptr %pool, i64 64
  %sleepers = getelementptr inbounds i8, ptr %pool, i64 4
  br label %idle

idle:
  ; generation 0 is the pool's own: a job published before this thread first ran is not missed
  %seen = phi i32 [ 0, %entry ], [ %seen, %woken ], [ %gen, %next ]
  %t0 = call i64 @llvm.readcyclecounter()
  br label %spin

spin:
  %cur = load atomic i32, ptr %pool acquire, align 4
  %changed = icmp ne i32 %cur, %seen
  br i1 %changed, label %work, label %spin.wait

spin.wait:
  call void @llvm.x86.sse2.pause()
  %t = call i64 @llvm.readcyclecounter()
  %dt = sub i64 %t, %t0
  %long = icmp ugt i64 %dt, SPIN_CYCLES
  br i1 %long, label %sleep, label %spin

sleep:
  %s0 = atomicrmw add ptr %sleepers, i32 1 seq_cst, align 4
  %cur2 = load atomic i32, ptr %pool seq_cst, align 4
  %changed2 = icmp ne i32 %cur2, %seen
  br i1 %changed2, label %unsleep, label %futex

futex:
  ; FUTEX_WAIT_PRIVATE: sleeps only while the generation still equals %seen
  %seen64 = zext i32 %seen to i64
  %r = call i64 (i64, ...) @syscall(i64 202, ptr %pool, i64 128, i64 %seen64, ptr null)
  br label %unsleep.retry

unsleep.retry:
  %s1 = atomicrmw sub ptr %sleepers, i32 1 seq_cst, align 4
  br label %woken

woken:
  br label %idle

unsleep:
  %s2 = atomicrmw sub ptr %sleepers, i32 1 seq_cst, align 4
  br label %work

work:
  %gen = load atomic i32, ptr %pool acquire, align 4
  %pk = getelementptr inbounds i8, ptr %pool, i64 128
  %kernel = load ptr, ptr %pk, align 8
  %pa = getelementptr inbounds i8, ptr %pool, i64 136
  %argv = load ptr, ptr %pa, align 8
  %pe = getelementptr inbounds i8, ptr %pool, i64 144
  %ext = load i64, ptr %pe, align 8
  %pn = getelementptr inbounds i8, ptr %pool, i64 152
  %n = load i64, ptr %pn, align 8
  %mine = icmp slt i64 %index, %n
  br i1 %mine, label %run, label %finished

run:
  %a = mul i64 %ext, %index
  %lo = udiv i64 %a, %n
  %index1 = add i64 %index, 1
  %b = mul i64 %ext, %index1
  %hi = udiv i64 %b, %n
  call void %kernel(ptr %argv, i64 %lo, i64 %hi)
  br label %finished

finished:
  %left = atomicrmw sub ptr %pending, i32 1 seq_cst, align 4
  %last = icmp eq i32 %left, 1
  br i1 %last, label %last.check, label %next

last.check:
  %caller = getelementptr inbounds i8, ptr %pool, i64 68
  %asleep = load atomic i32, ptr %caller seq_cst, align 4
  %wake.caller = icmp ne i32 %asleep, 0
  br i1 %wake.caller, label %last.wake, label %next

last.wake:
  %rw = call i64 (i64, ...) @syscall(i64 202, ptr %pending, i64 129, i64 1)
  br label %next

next:
  br label %idle
}

define void @gradc_pool_run(ptr %pool, ptr %kernel, ptr %argv, i64 %ext, i64 %n, i64 %workers) {
entry:
  %pk = getelementptr inbounds i8, ptr %pool, i64 128
  store ptr %kernel, ptr %pk, align 8
  %pa = getelementptr inbounds i8, ptr %pool, i64 136
  store ptr %argv, ptr %pa, align 8
  %pe = getelementptr inbounds i8, ptr %pool, i64 144
  store i64 %ext, ptr %pe, align 8
  %pn = getelementptr inbounds i8, ptr %pool, i64 152
  store i64 %n, ptr %pn, align 8
  %pending = getelementptr inbounds i8, ptr %pool, i64 64
  %workers32 = trunc i64 %workers to i32
  store atomic i32 %workers32, ptr %pending release, align 4
  %old = atomicrmw add ptr %pool, i32 1 seq_cst, align 4
  %sleepers = getelementptr inbounds i8, ptr %pool, i64 4
  %s = load atomic i32, ptr %sleepers seq_cst, align 4
  %any = icmp ne i32 %s, 0
  br i1 %any, label %wake, label %mine

wake:
  ; FUTEX_WAKE_PRIVATE, every waiter
  %r = call i64 (i64, ...) @syscall(i64 202, ptr %pool, i64 129, i64 2147483647)
  br label %mine

mine:
  %hi = udiv i64 %ext, %n
  call void %kernel(ptr %argv, i64 0, i64 %hi)
  br label %wait

wait:
  %t0 = call i64 @llvm.readcyclecounter()
  br label %wait.spin

wait.spin:
  %left = load atomic i32, ptr %pending acquire, align 4
  %done = icmp eq i32 %left, 0
  br i1 %done, label %exit, label %wait.pause

wait.pause:
  call void @llvm.x86.sse2.pause()
  %t = call i64 @llvm.readcyclecounter()
  %dt = sub i64 %t, %t0
  %long = icmp ugt i64 %dt, SPIN_CYCLES
  br i1 %long, label %wait.sleep, label %wait.spin

wait.sleep:
  ; a worker descheduled (more runnable threads than cores): sleep until the last one ends
  %caller = getelementptr inbounds i8, ptr %pool, i64 68
  %c0 = atomicrmw add ptr %caller, i32 1 seq_cst, align 4
  %left2 = load atomic i32, ptr %pending seq_cst, align 4
  %done2 = icmp eq i32 %left2, 0
  br i1 %done2, label %wait.unsleep, label %wait.futex

wait.futex:
  %left64 = zext i32 %left2 to i64
  %r2 = call i64 (i64, ...) @syscall(i64 202, ptr %pending, i64 128, i64 %left64, ptr null)
  br label %wait.unsleep

wait.unsleep:
  %c1 = atomicrmw sub ptr %caller, i32 1 seq_cst, align 4
  br label %wait

exit:
  ret void
}
"""

_RUN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                        ctypes.c_int64, ctypes.c_int64)
_WORKER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)
_code = None
_alive: list = []      # every pool ever made: its workers read its block for the life of the process


def supported() -> bool:
    """Linux on x86-64: the worker loop uses the ``futex`` system call and ``pause``."""
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def _compiled():
    """(engine, run, worker): the two entry points, compiled once per process (disk-cached)."""
    global _code
    if _code is None:
        from .runtime_cpu import jit_llvm_ir
        ir = _IR.replace("SPIN_CYCLES", str(SPIN_CYCLES))
        ee, addrs = jit_llvm_ir(ir, ["gradc_pool_run", "gradc_pool_worker"])
        _code = (ee, _RUN(addrs["gradc_pool_run"]), _WORKER(addrs["gradc_pool_worker"]))
    return _code


class NativePool:
    """``workers`` native worker threads; ``run(address, argv, ext, n)`` runs the kernel at
    ``address`` on ``[0, ext)`` split into ``n`` parts (part 0 on the calling thread)."""

    def __init__(self, workers: int):
        self.engine, self._run, worker = _compiled()
        self.workers = workers
        self.block = ctypes.create_string_buffer(POOL_BYTES)   # zeroed: generation 0, nobody asleep
        self.lock = threading.Lock()
        self.pid = os.getpid()
        _alive.append(self)            # never freed: the worker threads cannot be stopped
        addr = ctypes.addressof(self.block)
        for i in range(workers):
            threading.Thread(target=worker, args=(addr, i + 1), daemon=True,
                             name=f"gradc-native-worker-{i + 1}").start()

    def run(self, address: int, argv, ext: int, n: int):
        with self.lock:
            self._run(ctypes.addressof(self.block), address, argv, ext, n, self.workers)
