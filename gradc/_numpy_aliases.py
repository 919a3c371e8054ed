"""PyTorch's NumPy-style keyword aliases: ``axis`` for ``dim`` and ``keepdims`` for ``keepdim``.

PyTorch's argument parser accepts them for every native function and Tensor method that takes
``dim`` (``x.sum(axis=0, keepdims=True)``, ``torch.cat(xs, axis=1)``). ``install`` wraps each
such method of the tensor classes and each such ``gradc.*`` function once, at import.
"""
from __future__ import annotations

import functools
import inspect

ALIASES = {"axis": "dim", "keepdims": "keepdim"}


def _takes_dim(fn) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return any(target in params and alias not in params for alias, target in ALIASES.items())


def _renamed(name: str, kwargs: dict) -> dict:
    out = {}
    for key, value in kwargs.items():
        target = ALIASES.get(key, key)
        if target in out or (target != key and target in kwargs):
            raise TypeError(f"{name}() got multiple values for argument '{target}' (as '{key}')")
        out[target] = value
    return out


def accept_aliases(fn):
    """``fn`` also taking ``axis=``/``keepdims=`` for its ``dim``/``keepdim`` parameters."""
    if getattr(fn, "_numpy_aliases", False) or not _takes_dim(fn):
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if "axis" in kwargs or "keepdims" in kwargs:
            kwargs = _renamed(fn.__name__, kwargs)
        return fn(*args, **kwargs)
    wrapper._numpy_aliases = True
    return wrapper


def install(classes, namespace: dict) -> None:
    """Wrap the ``dim``-taking methods defined on ``classes`` and functions in ``namespace``."""
    for cls in classes:
        for name, member in list(vars(cls).items()):
            if inspect.isfunction(member) and not name.startswith("__"):
                wrapped = accept_aliases(member)
                if wrapped is not member:
                    setattr(cls, name, wrapped)
    for name, member in list(namespace.items()):
        if inspect.isfunction(member) and not name.startswith("_"):
            namespace[name] = accept_aliases(member)
