"""Random-number ops: each run draws fresh numbers from gradc's generator.

``rand_like(x)``: uniform samples in [0, 1) with ``x``'s shape and floating dtype, drawn from
the generator behind ``gradc.rand`` (``gradc.manual_seed`` makes them reproducible; eagerly the
stream is the same as ``gradc.rand(*x.shape)``'s); ``randn_like(x)``: standard normal samples,
``gradc.randn``'s stream.  ``x`` is read for its type only.  Under ``@gradc.compile``,
``gradc.rand``/``randn`` and their ``_like`` forms record these ops (``factories._random``), so a
compiled function draws new numbers at every call.

Ops with the ``RANDOM`` trait are not ``PURE``: the passes never merge two draws (CSE), fold
one into a constant (canonicalize) or recompute one in backward (partition saves the draw
instead), and ``@gradc.compile`` runs the backward of a function with a draw from saved values
(never re-running its forward).  An unused draw may be dropped (DCE).  No kernel lowers them:
in compiled code they run as NumPy steps between kernels.
"""
from __future__ import annotations

from .registry import NONDIFF, RANDOM, ShapeError, TypeInfo, defop


def _rand_like_infer(types, attrs):
    (t,) = types
    if not t.dtype.is_floating_point:
        raise ShapeError(f"gradc.rand_like: expected a floating point tensor, got {t.dtype}")
    return [TypeInfo(t.shape, t.dtype)]


def _rand_like_forward(x):
    from ..random_state import default_generator
    return default_generator._rng.random(x.shape, x.dtype).astype(x.dtype, copy=False)


def _randn_like_forward(x):
    from ..random_state import default_generator
    return default_generator._rng.standard_normal(x.shape, x.dtype).astype(x.dtype, copy=False)


defop("rand_like", infer=_rand_like_infer, forward=_rand_like_forward, traits=frozenset({RANDOM, NONDIFF}),
      node_name="RandLikeBackward0")
defop("randn_like", infer=_rand_like_infer, forward=_randn_like_forward, traits=frozenset({RANDOM, NONDIFF}),
      node_name="RandnLikeBackward0")
