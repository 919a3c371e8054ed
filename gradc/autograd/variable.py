"""The legacy ``autograd.Variable``: since PyTorch 0.4 a shim whose call returns a plain tensor.

``Variable(data, requires_grad=False, volatile=False, _grad_fn=None, name=None)`` is a leaf sharing ``data``'s
storage (``data.detach()``) with ``requires_grad`` set; ``volatile`` only warns. Every tensor is
an instance of ``Variable`` (``isinstance(t, Variable)``), as in PyTorch.
"""
from __future__ import annotations

from .._warnings import warn_at_user_code


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        from ..tensor_api import is_tensor_like
        return is_tensor_like(other)


class Variable(metaclass=_VariableMeta):
    def __new__(cls, data=None, requires_grad=False, volatile=False, _grad_fn=None, name=None, *extra, **unknown):
        from ..tensor_api import is_tensor_like
        from ..factories import empty
        from . import _flag                     # (the engine's parse of a bool argument)
        from .node import Node
        if extra:
            raise TypeError(f"function takes at most 5 arguments ({5 + len(extra)} given)")
        if unknown:
            raise TypeError(f"'{next(iter(unknown))}' is an invalid keyword argument for this function")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"argument 5 must be str or None, not {type(name).__name__}")
        requires_grad, volatile = _flag(requires_grad), _flag(volatile)
        if _grad_fn is not None:
            if not isinstance(_grad_fn, Node):
                raise TypeError(f"_grad_fn has to be a Function object or None, but got {type(_grad_fn).__name__}")
            raise NotImplementedError("gradc: Variable(_grad_fn=...) is not supported")
        if volatile:
            warn_at_user_code("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                              UserWarning)
            if requires_grad:
                raise ValueError("Variable can't be volatile and require_grad at the same time!")
        if data is None:
            data = empty(0)
        elif not is_tensor_like(data):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad and not data.dtype.is_floating_point:      # (the factories' message)
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        result = data.detach().requires_grad_(requires_grad)
        if name is not None:
            result._variable_name = name          # (read by the ``name`` property)
        return result
