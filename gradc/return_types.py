"""``torch.return_types``: the named tuples of functions with several results (max and min
along a dim, sort, topk, median, mode, kthvalue, aminmax, frexp, the linalg decompositions, ...),
printed as PyTorch prints them.  ``return_type(name, fields)`` makes (once) and registers each,
so that ``gradc.return_types.<name>`` names it and its instances pickle."""
from __future__ import annotations

from collections import namedtuple


def _repr(self):
    fields = ",\n".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
    return f"torch.return_types.{type(self).__name__}(\n{fields})"


def return_type(name: str, fields=("values", "indices")):
    """The named tuple class ``name`` with ``fields`` (made on the first call)."""
    cls = globals().get(name)
    if cls is None:
        cls = namedtuple(name, fields, module=__name__)
        cls.__repr__ = _repr
        globals()[name] = cls
    elif cls._fields != tuple(fields):
        raise ValueError(f"return type {name} already has fields {cls._fields}")
    return cls
