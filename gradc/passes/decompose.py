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
numerically stable definitions; logsumexp of a row of -inf keeps NumPy's answer via where(),
softmax and log_softmax of a row with an infinite maximum are NaN, as PyTorch's.

Picking one element per row (cross-entropy's ``x.gather(1, labels)`` and its
adjoint ``scatter_add``) becomes a one-hot mask built from ``gradc.iota``, so it
fuses with the row reductions and the softmax gradient around it:

    gather(x, d, idx)        = sum(where(iota(d) == idx, x, 0), d, keepdim)   (idx of size 1 along d)
    scatter_add(idx, src, d) = where(iota(d) == idx, src, 0)                   (idx of size 1 along d)
"""
from __future__ import annotations

from ..ir.core import Function
from ..ir.emitter import IRTensor
from .manager import Pass, register_pass
from .rewrite import RewritePattern, apply_patterns_greedily


def _shifted(x, dims):
    """(x - s, s, m) for the row maxima m and the shift s: m where it is finite, else 0
    (logsumexp of a row of -inf is -inf, with a +inf it is +inf)."""
    from ..ops.dispatch import apply
    from ..tensor_api import where
    m = apply("amax", x, dims=list(dims), keepdim=True)     # (an empty dim gives -inf: no shift)
    s = where(m.abs() < float("inf"), m, 0.0)
    return x - s, s, m


class _Decompose(RewritePattern):
    def match_and_rewrite(self, op, rw):
        b = rw.builder_before(op)
        x = IRTensor(op.operands[0], b)
        name = op.short_name
        if name == "logsumexp":
            dims, keep = list(op.attrs["dims"]), op.attrs["keepdim"]
            if not dims:
                return False
            s, shift, _ = _shifted(x, dims)
            out = s.exp().sum(dims, keepdim=True).log() + shift
            if not keep:
                out = out.reshape(op.results[0].type.shape)
        else:
            # softmax and log_softmax shift as logsumexp does (one exp per element where a kernel
            # computes both, as cross-entropy's loss and gradient: W3's kernel ran a second exp,
            # 0.48 -> 0.69 ms, while they shifted by the bare maximum); + (m - m), 0 for a finite
            # maximum, makes a row with +inf, only -inf or NaN all NaN, as PyTorch's kernels give
            if not x.shape:
                return False
            d = op.attrs["dim"]
            s, _, m = _shifted(x, [d])
            nan_if_infinite = m - m
            if name == "softmax":
                e = s.exp()
                out = e / e.sum(d, keepdim=True) + nan_if_infinite
            else:
                out = s - s.exp().sum(d, keepdim=True).log() + nan_if_infinite
        rw.replace_op(op, out.value)
        return True


class _DecomposeAll(_Decompose):
    op_names = ("gradc.logsumexp", "gradc.softmax", "gradc.log_softmax")


def _one_hot(b, idx, d, shape):
    """Bool mask of ``shape``: true where the index along ``d`` equals ``idx`` (size 1 along d),
    after ``check_index`` (the gather's out-of-bounds error, which the mask would not give)."""
    iota = IRTensor(b.op("iota", shape=list(shape), dim=d), b)
    checked = b.op("check_index", idx, size=shape[d], dim=d)
    return iota == IRTensor(checked, b).expand(*shape)


class _OneHotPick(RewritePattern):
    op_names = ("gradc.gather", "gradc.scatter_add")

    def match_and_rewrite(self, op, rw):
        from ..tensor_api import where
        d = op.attrs["dim"]
        if op.name == "gradc.gather":
            x, idx = op.operands
            shape = tuple(x.type.shape)
        else:
            idx, src = op.operands
            shape = tuple(op.attrs["shape"])
        if idx.type.shape[d] != 1 or any(a != b for k, (a, b) in enumerate(zip(idx.type.shape, shape)) if k != d):
            return False
        b = rw.builder_before(op)
        mask = _one_hot(b, idx, d, shape)
        if op.name == "gradc.gather":
            out = where(mask, IRTensor(x, b), 0.0).sum(d, keepdim=True)
        else:
            out = where(mask, IRTensor(src, b).expand(*shape), 0.0)
        rw.replace_op(op, out.value)
        return True


def decompose(func: Function) -> bool:
    return apply_patterns_greedily(func, [_DecomposeAll(), _OneHotPick()])


@register_pass
class DecomposePass(Pass):
    name = "decompose"
    summary = "spell logsumexp/softmax/log_softmax and one-per-row gather with fusible primitives"

    def run(self, func) -> bool:
        return decompose(func)
