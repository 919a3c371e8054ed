"""Activation modules beyond the basic ones in ``modules.py``: the softmax family, the hard and
shrinking activations, SELU/CELU/Mish/GLU and PReLU, each calling its ``nn.functional`` form."""
from __future__ import annotations

from .. import factories
from . import functional as F
from .modules import ELU, Module
from .parameter import Parameter


class _DimActivation(Module):
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def extra_repr(self):
        return f"dim={self.dim}"

    def forward(self, x):
        return type(self)._fn(x, self.dim)


class Softmax(_DimActivation):
    _fn = staticmethod(F.softmax)


class LogSoftmax(_DimActivation):
    _fn = staticmethod(F.log_softmax)


class Softmin(_DimActivation):
    _fn = staticmethod(F.softmin)


class GLU(_DimActivation):
    _fn = staticmethod(F.glu)

    def __init__(self, dim=-1):
        super().__init__(dim)


class _Inplace(Module):
    """An activation whose only option is PyTorch's ``inplace`` flag, shown when set."""
    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""

    def forward(self, x):
        return type(self)._fn(x, inplace=self.inplace)


class ReLU6(_Inplace):
    _fn = staticmethod(F.relu6)


class Hardsigmoid(_Inplace):
    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self):           # PyTorch's shows no options
        return ""


class Hardswish(Hardsigmoid):
    _fn = staticmethod(F.hardswish)


class Mish(_Inplace):
    _fn = staticmethod(F.mish)


class SELU(_Inplace):
    _fn = staticmethod(F.selu)


class Softsign(Module):
    def forward(self, x):
        return F.softsign(x)


class Tanhshrink(Module):
    def forward(self, x):
        return F.tanhshrink(x)


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)


class CELU(ELU):
    def forward(self, x):
        return F.celu(x, self.alpha, self.inplace)


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")

    def forward(self, x):
        return F.threshold(x, self.threshold, self.value, self.inplace)


class Hardshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def extra_repr(self):
        return f"{self.lambd}"

    def forward(self, x):
        return F.hardshrink(x, self.lambd)


class Softshrink(Hardshrink):
    def forward(self, x):
        return F.softshrink(x, self.lambd)


class PReLU(Module):
    def __init__(self, num_parameters=1, init=0.25, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = Parameter(factories.full((num_parameters,), init, dtype=dtype))

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"

    def forward(self, x):
        return F.prelu(x, self.weight)
