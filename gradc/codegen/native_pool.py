"""Native worker threads for parallel kernel calls (Linux x86-64).

``runtime_cpu`` splits a large kernel's outer range over the cores.  With Python worker
threads fed through queues, each parallel call cost about 50 us more than the same split
run by OpenMP (measured here on W1's, W3's and W4's kernels: W1's 0.25 ms kernel took
0.31 ms): the worker wakes from a futex, takes the GIL, unpacks its job and calls ctypes,
and the caller waits on a queue for it the same way.

Here every worker is a Python daemon thread that calls ``gradc_pool_worker`` once; the call
never returns and holds no GIL.  ``gradc_pool_run`` (called through ctypes, without the GIL)
publishes a job: ``[0, ext)`` in ``chunks`` equal chunks, claimed one at a time from a
shared claim word (generation, chunk count, next chunk) with compare-and-swap, by the
caller and by every worker that is awake.  The caller claims chunks like the workers, so
it never waits for a worker that has not started (more runnable threads than cores: the
caller then runs every chunk itself); it waits only for chunks a worker claimed, spinning
for ``CALLER_SPIN`` time-stamp cycles and then sleeping on a futex until the last one ends.
After a job a worker spins on the generation for ``WORKER_SPIN`` cycles, so the next
parallel call of a step finds it awake, and then sleeps on it with ``futex``.

The pool block (``POOL_BYTES``) holds the generation (i32, the workers' futex word), the
count of sleeping workers, the claim word, the chunks finished (the caller's futex word),
whether the caller sleeps, and the job: kernel address, argument vector, extent.  A job's
fields do not change while one of its chunks is claimed and unfinished: the next job is
published only after every chunk finished.  One job at a time: callers hold
``NativePool.lock``.  A forked child has no workers: ``runtime_cpu`` forgets its pool in a
forked child (``os.register_at_fork``), which makes its own.  Workers never stop, so a pool
is never freed.
"""
from __future__ import annotations

import ctypes
import os
import platform
import sys
import threading

# Time-stamp cycles a worker spins after a job (about 0.1 ms at 2.5 GHz), and the caller before it
# sleeps.  ``GRADC_WAIT_POLICY=passive`` (like OpenMP's OMP_WAIT_POLICY) makes workers sleep at
# once: on a machine with more runnable threads than cores a spinning worker takes CPU time
# others need (measured here, the loaded 2-core machine: W1's step 0.59 ms with spinning
# workers against 0.50 with the Python pool; quiet: 0.275 against 0.322).
WORKER_SPIN = 1 << 18
CALLER_SPIN = 1 << 17
MAX_CHUNKS = 65535         # 16 bits of the claim word
POOL_BYTES = 192

_IR = r"""
declare i64 @syscall(i64, ...)
declare void @llvm.x86.sse2.pause()
declare i64 @llvm.readcyclecounter()

; pool: +0 i32 generation (the workers' futex word), +4 i32 workers asleep,
;       +8 i64 claim word: generation << 32 | chunks << 16 | next unclaimed chunk,
;       +64 i32 chunks finished (the caller's futex word), +68 i32 caller asleep,
;       +128 ptr kernel, +136 ptr argv, +144 i64 extent

; Claim and run chunks of job %gen until none is left (or the job is no longer %gen).
define internal void @run_chunks(ptr %pool, i32 %gen) {
entry:
  %claimp = getelementptr inbounds i8, ptr %pool, i64 8
  %finp = getelementptr inbounds i8, ptr %pool, i64 64
  br label %claim

claim:
  %w = load atomic i64, ptr %claimp acquire, align 8
  %wgen64 = lshr i64 %w, 32
  %wgen = trunc i64 %wgen64 to i32
  %same = icmp eq i32 %wgen, %gen
  br i1 %same, label %claim.check, label %exit

claim.check:
  %next = and i64 %w, 65535
  %chunks.sh = lshr i64 %w, 16
  %chunks = and i64 %chunks.sh, 65535
  %left = icmp ult i64 %next, %chunks
  br i1 %left, label %claim.try, label %exit

claim.try:
  %w1 = add i64 %w, 1
  %pair = cmpxchg ptr %claimp, i64 %w, i64 %w1 acq_rel acquire, align 8
  %ok = extractvalue { i64, i1 } %pair, 1
  br i1 %ok, label %run, label %claim

run:
  ; job %gen's fields stay put while this chunk is claimed and unfinished
  %pk = getelementptr inbounds i8, ptr %pool, i64 128
  %kernel = load ptr, ptr %pk, align 8
  %pa = getelementptr inbounds i8, ptr %pool, i64 136
  %argv = load ptr, ptr %pa, align 8
  %pe = getelementptr inbounds i8, ptr %pool, i64 144
  %ext = load i64, ptr %pe, align 8
  %a = mul i64 %ext, %next
  %lo = udiv i64 %a, %chunks
  %next1 = add i64 %next, 1
  %b = mul i64 %ext, %next1
  %hi = udiv i64 %b, %chunks
  call void %kernel(ptr %argv, i64 %lo, i64 %hi)
  %f = atomicrmw add ptr %finp, i32 1 seq_cst, align 4
  %f1 = add i32 %f, 1
  %f64 = zext i32 %f1 to i64
  %all = icmp eq i64 %f64, %chunks
  br i1 %all, label %last, label %claim

last:
  %callerp = getelementptr inbounds i8, ptr %pool, i64 68
  %asleep = load atomic i32, ptr %callerp seq_cst, align 4
  %wake = icmp ne i32 %asleep, 0
  br i1 %wake, label %last.wake, label %exit

last.wake:
  %rw = call i64 (i64, ...) @syscall(i64 202, ptr %finp, i64 129, i64 1)
  br label %exit

exit:
  ret void
}

define void @gradc_pool_worker(ptr %pool) {
entry:
  %sleepers = getelementptr inbounds i8, ptr %pool, i64 4
  br label %idle

idle:
  ; generation 0 is the pool's own: a job published before this thread first ran is not missed
  %seen = phi i32 [ 0, %entry ], [ %seen, %woken ], [ %cur, %worked ], [ %cur2, %worked.after.sleep ]
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
  %long = icmp ugt i64 %dt, WORKER_SPIN
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
  %s1 = atomicrmw sub ptr %sleepers, i32 1 seq_cst, align 4
  br label %woken

woken:
  br label %idle

unsleep:
  %s2 = atomicrmw sub ptr %sleepers, i32 1 seq_cst, align 4
  call void @run_chunks(ptr %pool, i32 %cur2)
  br label %worked.after.sleep

worked.after.sleep:
  br label %idle

work:
  call void @run_chunks(ptr %pool, i32 %cur)
  br label %worked

worked:
  br label %idle
}

define void @gradc_pool_run(ptr %pool, ptr %kernel, ptr %argv, i64 %ext, i64 %chunks) {
entry:
  %pk = getelementptr inbounds i8, ptr %pool, i64 128
  store ptr %kernel, ptr %pk, align 8
  %pa = getelementptr inbounds i8, ptr %pool, i64 136
  store ptr %argv, ptr %pa, align 8
  %pe = getelementptr inbounds i8, ptr %pool, i64 144
  store i64 %ext, ptr %pe, align 8
  %finp = getelementptr inbounds i8, ptr %pool, i64 64
  store atomic i32 0, ptr %finp release, align 4
  %old = load atomic i32, ptr %pool acquire, align 4
  %gen = add i32 %old, 1
  %gen64 = zext i32 %gen to i64
  %hi = shl i64 %gen64, 32
  %ch = shl i64 %chunks, 16
  %w = or i64 %hi, %ch
  %claimp = getelementptr inbounds i8, ptr %pool, i64 8
  store atomic i64 %w, ptr %claimp release, align 8
  store atomic i32 %gen, ptr %pool seq_cst, align 4
  %sleepers = getelementptr inbounds i8, ptr %pool, i64 4
  %s = load atomic i32, ptr %sleepers seq_cst, align 4
  %any = icmp ne i32 %s, 0
  br i1 %any, label %wake, label %mine

wake:
  ; FUTEX_WAKE_PRIVATE, every waiter
  %r = call i64 (i64, ...) @syscall(i64 202, ptr %pool, i64 129, i64 2147483647)
  br label %mine

mine:
  call void @run_chunks(ptr %pool, i32 %gen)
  %chunks32 = trunc i64 %chunks to i32
  br label %wait

wait:
  ; only chunks a running worker claimed are left: spin, then sleep until the last one ends
  %t0 = call i64 @llvm.readcyclecounter()
  br label %wait.spin

wait.spin:
  %done.n = load atomic i32, ptr %finp acquire, align 4
  %done = icmp eq i32 %done.n, %chunks32
  br i1 %done, label %exit, label %wait.pause

wait.pause:
  call void @llvm.x86.sse2.pause()
  %t = call i64 @llvm.readcyclecounter()
  %dt = sub i64 %t, %t0
  %long = icmp ugt i64 %dt, CALLER_SPIN
  br i1 %long, label %wait.sleep, label %wait.spin

wait.sleep:
  %callerp = getelementptr inbounds i8, ptr %pool, i64 68
  %c0 = atomicrmw add ptr %callerp, i32 1 seq_cst, align 4
  %done.n2 = load atomic i32, ptr %finp seq_cst, align 4
  %done2 = icmp eq i32 %done.n2, %chunks32
  br i1 %done2, label %wait.unsleep, label %wait.futex

wait.futex:
  %n64 = zext i32 %done.n2 to i64
  %r2 = call i64 (i64, ...) @syscall(i64 202, ptr %finp, i64 128, i64 %n64, ptr null)
  br label %wait.unsleep

wait.unsleep:
  %c1 = atomicrmw sub ptr %callerp, i32 1 seq_cst, align 4
  br label %wait

exit:
  ret void
}
"""

_RUN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                        ctypes.c_int64)
_WORKER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
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
        passive = os.environ.get("GRADC_WAIT_POLICY", "").lower() == "passive"
        ir = _IR.replace("WORKER_SPIN", str(0 if passive else WORKER_SPIN)).replace("CALLER_SPIN", str(CALLER_SPIN))
        ee, addrs = jit_llvm_ir(ir, ["gradc_pool_run", "gradc_pool_worker"])
        _code = (ee, _RUN(addrs["gradc_pool_run"]), _WORKER(addrs["gradc_pool_worker"]))
    return _code


class NativePool:
    """``workers`` native worker threads; ``run(address, argv, ext, chunks)`` runs the kernel
    at ``address`` (``void f(void **argv, int64 start, int64 end)``) on ``[0, ext)`` in
    ``chunks`` parts, on the calling thread and the workers."""

    def __init__(self, workers: int):
        self.engine, self._run, worker = _compiled()
        self.block = ctypes.create_string_buffer(POOL_BYTES)   # zeroed: generation 0, nobody asleep
        self.lock = threading.Lock()
        _alive.append(self)            # never freed: the worker threads cannot be stopped
        addr = ctypes.addressof(self.block)
        for i in range(workers):
            threading.Thread(target=worker, args=(addr,), daemon=True,
                             name=f"gradc-native-worker-{i + 1}").start()

    def run(self, address: int, argv, ext: int, chunks: int):
        chunks = max(1, min(chunks, ext, MAX_CHUNKS))
        with self.lock:
            self._run(ctypes.addressof(self.block), address, argv, ext, chunks)
