"""Module containers: ModuleList and ModuleDict (Sequential lives beside the layers), and the old
``Container``."""
from __future__ import annotations

from collections import OrderedDict

from .._warnings import warn_at_user_code
from .modules import Module


def _indent(text: str, spaces: int = 2) -> str:
    first, *rest = text.split("\n")
    return "\n".join([first] + [" " * spaces + line for line in rest])


class Container(Module):
    """PyTorch's old container: each keyword argument a child module of that name (deprecated)."""

    def __init__(self, **kwargs):
        warn_at_user_code("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                          "Subclass that instead.", FutureWarning)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


class ModuleList(Module):
    """A list of modules registered as children ``0``, ``1``, ...; printed as PyTorch prints
    it, runs of equal modules folded (``(0-2): 3 x Linear(...)``)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _index(self, idx: int) -> int:
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return idx % n

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(self._index(idx))]

    def __setitem__(self, idx, module):
        self.add_module(str(self._index(idx)), module)

    def __delitem__(self, idx):
        items = list(self._modules.values())
        if isinstance(idx, slice):
            del items[idx]
        else:
            del items[self._index(idx)]
        self._renumber(items)

    def _renumber(self, items):
        for name in list(self._modules):
            delattr(self, name)
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return type(self)(list(self) + list(other))

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        items = list(self._modules.values())
        items.insert(index, module)
        self._renumber(items)

    def __repr__(self):
        reprs = [repr(m) for m in self]
        if not reprs:
            return f"{type(self).__name__}()"
        runs = []          # [first index, last index, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}" for a, b, r in runs]
        return f"{type(self).__name__}(\n  " + "\n  ".join(_indent(line) for line in lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules, each registered as the child of its key."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        delattr(self, key)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key):
        m = self._modules[key]
        del self[key]
        return m

    def clear(self):
        for key in list(self._modules):
            del self[key]

    def update(self, modules):
        pairs = modules.items() if isinstance(modules, (dict, OrderedDict, ModuleDict)) else modules
        for key, m in pairs:
            self[key] = m


def _param_line(key, p, type_name):
    """PyTorch's line for one entry of a ParameterList/ParameterDict."""
    from ..tensor import Tensor
    from .parameter import Parameter
    if not isinstance(p, Tensor):
        return f"  ({key}): Object of type: {type(p).__name__}"
    size = "x".join(str(s) for s in p.shape)
    device = f" ({p.device})" if p.device.type == "cuda" else ""
    kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
    return f"  ({key}): {kind} containing: [{type_name(p)} of size {size}{device}]"


def _as_parameter(value):
    from ..tensor import Tensor
    from .parameter import Parameter
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _params_repr(module, lines):
    if not lines:
        return f"{type(module).__name__}()"
    return f"{type(module).__name__}(\n  " + "\n  ".join(lines) + "\n)"


class ParameterList(Module):
    """A list of parameters registered as ``0``, ``1``, ... (a plain tensor becomes a Parameter)."""

    def __init__(self, values=None):
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self.extend(values)

    def _index(self, idx):
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return idx % n

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(self._index(idx)))

    def __setitem__(self, idx, param):
        self._set(str(self._index(idx)), param)

    def _set(self, key, value):
        from .parameter import Parameter
        value = _as_parameter(value)
        if isinstance(value, Parameter):
            self.register_parameter(key, value)
        else:
            object.__setattr__(self, key, value)

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def append(self, value):
        key = str(len(self))
        object.__setattr__(self, "_size", self._size + 1)
        self._set(key, value)
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def __repr__(self):
        return _params_repr(self, [_param_line(i, p, lambda t: str(t.dtype)) for i, p in enumerate(self)])


class ParameterDict(Module):
    """An ordered dict of parameters, each registered under its key."""

    def __init__(self, parameters=None):
        super().__init__()
        object.__setattr__(self, "_keys", {})
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        from .parameter import Parameter
        if not isinstance(key, str):
            raise TypeError(f"parameter name should be a string. Got {type(key).__name__}")
        self._keys[key] = None
        value = _as_parameter(value)
        if isinstance(value, Parameter):
            self.register_parameter(key, value)
        else:
            object.__setattr__(self, key, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return list(self._keys)

    def items(self):
        return [(k, self[k]) for k in self._keys]

    def values(self):
        return [self[k] for k in self._keys]

    def get(self, key, default=None):
        return self[key] if key in self else default

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def update(self, parameters):
        pairs = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in pairs:
            self[k] = v

    def __repr__(self):
        def typename(t):
            return ("torch.cuda." if t.device.type == "cuda" else "torch.") + t.dtype.tensor_type
        return _params_repr(self, [_param_line(k, p, typename) for k, p in self.items()])
