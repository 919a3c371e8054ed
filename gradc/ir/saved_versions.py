"""The tensors eager autograd would save for backward during a trace, and their versions.

Under ``@gradc.compile`` an in-place op is a new SSA value, so the compiled gradient is always
computable; eagerly, a tensor an op saved for backward and then modified in place makes that op's
backward raise PyTorch's "modified by an inplace operation" error. ``SavedVersions`` follows the
eager rules through a trace: each recorded op saves the inputs and outputs its ``saves`` names
(``autograd.node._save_plan``) at their tensors' versions (a base and its views share one); an
in-place op's own saved ``self`` is the value before the write (PyTorch's ``original_self``) and
its saved output is the written tensor after it. ``stale()`` gives, for each saved tensor changed
by the end of the function, the error its op's backward raises if it reads it (eagerly saved
tensors are checked when unpacked: pow saves its output but reads it only for some exponents);
the autodiff pass emits that error as the op's gradients (``backward_error``), so it comes when
backward reaches the op, as eagerly.
"""
from __future__ import annotations

from types import SimpleNamespace

from ..autograd.node import CPP_NODES, _save_plan, version_error
from ..ops.registry import NoDerivative


class _Saved:
    """One tensor an op saved: the traced tensor, its version then, and how the error names it."""
    __slots__ = ("op", "kind", "index", "proxy", "version", "node")

    def __init__(self, op, kind, index, proxy, version, node):
        self.op, self.kind, self.index, self.proxy, self.version, self.node = op, kind, index, proxy, version, node


def _base(proxy):
    return proxy._base if proxy._base is not None else proxy


class SavedVersions:
    def __init__(self):
        self._saved: list[_Saved] = []

    def record(self, created, opdef, inputs, outs, node_name):
        """The op ``created`` was recorded for backward (some input requires grad): what it saves."""
        from .tracer import Proxy
        if node_name in CPP_NODES:       # (named as Node.name() names it: torch::autograd::CopyBackwards)
            node_name = f"torch::autograd::{node_name}"
        for o in outs:
            o._made_by, o._node_name = created, node_name
        for kind, k in _save_plan(opdef, len(inputs)):
            t = outs[k] if kind == "out" else inputs[k]
            if isinstance(t, Proxy):
                self._saved.append(_Saved(created, kind, k, t, _base(t)._version,
                                          node_name if kind == "out" else None))

    def before_write(self, target, result):
        """``result`` is about to be written into ``target``: the op that computed it saved the
        value of ``self`` before the write (the first input that is ``target``)."""
        op = getattr(result, "_made_by", None)
        if op is None:
            return
        for s in self._saved:
            if s.op is op and s.kind == "in" and s.proxy is target:
                self._saved.remove(s)
                return

    def after_write(self, target, result):
        """``result`` was written into ``target``: the op's saved output is ``target`` now."""
        op = getattr(result, "_made_by", None)
        if op is None:
            return
        for s in self._saved:
            if s.op is op and s.kind == "out" and s.proxy is result:
                s.proxy, s.version = target, _base(target)._version
        target._node_name = result._node_name

    def stale(self) -> dict:
        """{op: {(kind, index): the error}} for the saved tensors modified since: eagerly the op's
        backward raises it when it reads that tensor (``StaleSaved``)."""
        found = {}
        for s in self._saved:
            version = _base(s.proxy)._version
            if version != s.version:
                t = SimpleNamespace(dtype=s.proxy.dtype, shape=tuple(s.proxy.shape), grad_fn=s.proxy._node_name,
                                    _output_nr=0, _version_counter=SimpleNamespace(value=version))
                found.setdefault(s.op, {})[(s.kind, s.index)] = str(version_error(t, s.version, s.node, s.index))
        return found


class StaleSaved(list):
    """The inputs or outputs (``kind``) a VJP rule reads in the autodiff pass; reading one that
    ``stale`` lists raises its error (``NoDerivative``: the autodiff pass makes the op's gradients
    raise it), as eagerly unpacking a modified saved tensor does."""

    def __init__(self, items, kind, stale):
        super().__init__(items)
        self._kind, self._stale = kind, stale

    def __getitem__(self, i):
        message = self._stale.get((self._kind, i))
        if message is not None:
            raise NoDerivative(message)
        return super().__getitem__(i)
