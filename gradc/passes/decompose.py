"""decompose: rewrite composite table ops into fusible primitives for code generation.

logsumexp, softmax and log_softmax are primitives in the op table (their VJPs are
simple, and eager mode names their nodes like PyTorch), but each is a max
reduction, an exp, a sum reduction and an epilogue over one axis, which the
fuse pass puts into a single kernel once they are spelled that way. Run after
autodiff, so gradients still come from the compact rules.

    logsumexp(x, dims)  = m + log(sum(exp(x - m), dims))      m = amax(x, dims, keepdim)
    softmax(x, d)       = e / sum(e, d)                        e = exp(x - amax(x, d))
    log_softmax(x, d)   = (x - m) - log(sum(exp(x - m), d))
The max shift is treated as a constant (no gradient flows through it), as in the
numerically stable definitions; a row of -inf keeps NumPy's answer via where().
"""
from __future__ import annotations

from ..ir.core import Function
from ..ir.emitter import IRTensor
from .manager import Pass, register_pass
from .rewrite import RewritePattern, apply_patterns_greedily


def _shifted(x, dims):
    from ..tensor_api import where
    m = x.amax(dims, keepdim=True)
    finite = m.abs() < float("inf")
    return x - where(finite, m, 0.0), where(finite, m, 0.0)


class _Decompose(RewritePattern):
    def match_and_rewrite(self, op, rw):
        b = rw.builder_before(op)
        x = IRTensor(op.operands[0], b)
        name = op.short_name
        if name == "logsumexp":
            dims, keep = list(op.attrs["dims"]), op.attrs["keepdim"]
            if not dims:
                return False
            s, m = _shifted(x, dims)
            out = s.exp().sum(dims, keepdim=True).log() + m
            if not keep:
                out = out.reshape(op.results[0].type.shape)
        elif name == "softmax":
            if not x.shape:
                return False
            d = op.attrs["dim"]
            e = _shifted(x, [d])[0].exp()
            out = e / e.sum(d, keepdim=True)
        else:
            if not x.shape:
                return False
            d = op.attrs["dim"]
            s = _shifted(x, [d])[0]
            out = s - s.exp().sum(d, keepdim=True).log()
        rw.replace_op(op, out.value)
        return True


class _DecomposeAll(_Decompose):
    op_names = ("gradc.logsumexp", "gradc.softmax", "gradc.log_softmax")


def decompose(func: Function) -> bool:
    return apply_patterns_greedily(func, [_DecomposeAll()])


@register_pass
class DecomposePass(Pass):
    name = "decompose"
    summary = "spell logsumexp/softmax/log_softmax with fusible primitives (run after autodiff)"

    def run(self, func) -> bool:
        return decompose(func)
