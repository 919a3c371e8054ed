"""Holding back what a trace prints, for ``@gradc.compile(fallback=True)``.

A trace runs the user's Python once with traced tensors.  When it fails (a data-dependent
branch, ``item()``) and ``fallback=True`` runs the function again eagerly, whatever the failed
trace printed would appear twice, the first time showing traced tensors instead of values.
``held_stdout()`` keeps back what the tracing thread writes to ``sys.stdout`` while the trace
runs: it is written out if the trace succeeds (so a compiled function prints at its trace, as
without fallback) and dropped if it fails (the eager run prints it, with values).  The warning
that a printed traced tensor shows no values is held back with it (``defer``).

Only ``sys.stdout`` writes are held, and only the calling thread's: other threads print as
usual, while a stand-in object is ``sys.stdout``.  Writes that bypass it (``sys.stdout.buffer``,
``os.write(1, ...)``, C extensions) and other side effects (appending to a list, writing a file)
cannot be taken back and happen in both runs.
"""
from __future__ import annotations

import contextlib
import io
import sys
import threading

_lock = threading.Lock()
_local = threading.local()      # .held: this thread's _Held buffers, innermost last
_router = None                  # the stand-in installed as sys.stdout, while anyone holds output
_holders = 0


class _Held(io.StringIO):
    """One ``held_stdout`` block's text, and what to do once it is written out."""

    def __init__(self):
        super().__init__()
        self.deferred = []


def defer(fn) -> bool:
    """Call ``fn`` when this thread's held output is written out (never, if it is dropped); False,
    doing nothing, when the thread holds no output."""
    held = getattr(_local, "held", None)
    if not held:
        return False
    held[-1].deferred.append(fn)
    return True


class _Router:
    """Stands in for ``sys.stdout``: the writes of a thread holding its output go to its innermost
    buffer, everything else to the stream it replaced."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        held = getattr(_local, "held", None)
        return held[-1].write(text) if held else self._stream.write(text)

    def flush(self):
        if not getattr(_local, "held", None):
            self._stream.flush()

    def __getattr__(self, name):         # (fileno, encoding, isatty, buffer, ...: the real stream's)
        return getattr(self._stream, name)


def _install() -> None:
    global _router, _holders
    with _lock:
        if _holders == 0:
            _router = _Router(sys.stdout)
            sys.stdout = _router
        _holders += 1


def _uninstall() -> None:
    global _router, _holders
    with _lock:
        _holders -= 1
        if _holders == 0:
            if sys.stdout is _router:        # (unless the program has replaced it since)
                sys.stdout = _router._stream
            _router = None


@contextlib.contextmanager
def held_stdout():
    """Within the block, this thread's ``sys.stdout`` writes are kept back: written out when the
    block ends normally, dropped when it raises."""
    if sys.stdout is None:               # (pythonw: nothing to hold)
        yield
        return
    buffer = _Held()
    _install()
    held = _local.__dict__.setdefault("held", [])
    held.append(buffer)
    try:
        yield
    finally:
        held.pop()
        _uninstall()
    text = buffer.getvalue()             # (reached only when the block did not raise)
    if text:
        sys.stdout.write(text)
    for fn in buffer.deferred:           # (into an enclosing block's, if any)
        if not defer(fn):
            fn()
