"""``torch.special``: the special functions under their ``special`` names (``gradc.special.erf``)."""
from __future__ import annotations

from .arithmetic import logit  # noqa: F401  (special.logit is torch.logit)


def erf(x): return x.erf()
def erfinv(x): return x.erfinv()
def expm1(x): return x.expm1()
def log1p(x): return x.log1p()
def exp2(x): return x.exp2()
def expit(x): return x.sigmoid()
def logsumexp(x, dim, keepdim=False): return x.logsumexp(dim, keepdim)
def softmax(x, dim, dtype=None): return x.softmax(dim, dtype=dtype)
def log_softmax(x, dim, dtype=None): return x.log_softmax(dim, dtype=dtype)
