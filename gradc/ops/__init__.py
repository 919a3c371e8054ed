"""The op table (see ``registry``): importing this package registers every op family."""
from . import bessel, decompositions, elementwise, incomplete_gamma, index, linalg, polynomials, random, reduce, shape, special  # noqa: F401  (registration)
from .dispatch import apply
from .registry import OpDef, ShapeError, TypeInfo, VJPContext, all_ops, get, vjp_rule

__all__ = ["OpDef", "ShapeError", "TypeInfo", "VJPContext", "all_ops", "apply", "get", "vjp_rule"]
