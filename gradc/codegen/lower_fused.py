"""Lowering of a ``gradc.fused`` region op to one kernel-IR ``Kernel``.

Each SSA value of the region body is tracked as a scalar kernel value plus an
*axis map*: for each of its dims, the iteration-space axis it runs along (None
for a size-1 dim). Region arguments are loaded broadcast (right-aligned) into the
space; elementwise ops require their operands' maps to agree; reductions reduce
the mapped axes; keepdim reshapes and expands re-align with the space. Anything
that cannot be expressed this way raises ``Unlowerable`` and the executor runs
the region with the op table's NumPy references instead.
"""
from __future__ import annotations

from ..ir.core import YIELD, Operation
from ..ops.registry import ELEMENTWISE
from .kernel_ir import Index, Kernel, KernelBuilder, contiguous_strides
from .llvm_common import LOWER

REDUCE_KIND = {"gradc.sum": "sum", "gradc.mean": "mean", "gradc.amax": "max", "gradc.amin": "min",
               "gradc.prod": "prod"}


class Unlowerable(Exception):
    pass


def iteration_space(op: Operation) -> tuple:
    body = op.regions[0].blocks[0].ops
    for o in body:
        if o.name in REDUCE_KIND:
            return tuple(o.operands[0].type.shape)
    shapes = [tuple(v.type.shape) for v in body[-1].operands]
    return max(shapes, key=len) if shapes else ()


def _right_aligned(shape, space):
    lead = len(space) - len(shape)
    squeezed = [s for s in shape if s != 1]
    if lead < 0 or any(s != 1 and s != space[lead + d] for d, s in enumerate(shape)):
        # the space with unit dims added or dropped: match the non-unit dims in order
        axes = [k for k, n in enumerate(space) if n != 1]
        if squeezed != [space[k] for k in axes]:
            raise Unlowerable(f"value of shape {list(shape)} does not fit the space {list(space)}")
        it = iter(axes)
        return tuple(None if s == 1 else next(it) for s in shape)
    amap = []
    for d, s in enumerate(shape):
        if s == 1:
            amap.append(None)
        elif s == space[lead + d]:
            amap.append(lead + d)
        else:
            raise Unlowerable(f"shape {list(shape)} does not broadcast to {list(space)}")
    return tuple(amap)


def _broadcast_maps(maps, shapes, out_shape):
    n = len(out_shape)
    out = [None] * n
    for amap, shape in zip(maps, shapes):
        lead = n - len(shape)
        for d, a in enumerate(amap):
            if a is None:
                continue
            prev = out[lead + d]
            if prev is not None and prev != a:
                raise Unlowerable("operands run along different iteration axes")
            out[lead + d] = a
    return tuple(out)


def lower_fused(op: Operation, name: str = "fused") -> Kernel:
    block = op.regions[0].blocks[0]
    space = iteration_space(op)
    kb = KernelBuilder(name, space)
    env: dict = {}
    for i, a in enumerate(block.args):
        buf = kb.input(f"in{i}", a.type.dtype, a.type.shape)
        amap = _right_aligned(a.type.shape, space)
        env[a] = (None, amap, buf)   # loaded lazily (unused args cost nothing)

    def get(v):
        val, amap, buf = env[v]
        if val is None:
            val = kb.load(buf, index=_load_index(v.type.shape, amap, space))
            env[v] = (val, amap, buf)
        return val, amap

    for o in block.ops:
        if o.name == YIELD:
            for k, v in enumerate(o.operands):
                val, amap = get(v)
                out = kb.output(f"out{k}", v.type.dtype, v.type.shape)
                kb.store(out, val, index=_load_index(v.type.shape, _stored_map(v.type.shape, amap, space), space))
            break
        if o.short_name == "reshape" and o.operands[0] in block.args:
            env[o.results[0]] = _reshaped_argument(o, env[o.operands[0]][2], space)
            continue
        val, amap = _lower_op(kb, o, get, space)
        env[o.results[0]] = (val, _distinct(amap), None)
    return kb.build()


def _distinct(amap):
    """``amap``, after checking that no two of its dims run along one iteration axis: a value is
    one scalar per iteration point, so such a value (a per-row vector reshaped into a column and
    broadcast against its row) has no kernel form."""
    axes = [a for a in amap if a is not None]
    if len(axes) != len(set(axes)):
        raise Unlowerable(f"two dims of a value run along one iteration axis ({list(amap)})")
    return amap


def _reshaped_argument(o, buf, space):
    """A reshape of a region argument, loaded lazily from the argument's buffer with the new shape
    (the buffer is row-major, so its elements keep their order) broadcast into the space; the
    argument's own axis map moved onto the new dims when the new shape does not fit the space."""
    shape = tuple(o.results[0].type.shape)
    try:
        return None, _right_aligned(shape, space), buf
    except Unlowerable:
        src = o.operands[0].type.shape
        mapped = iter([a for a, s in zip(_right_aligned(src, space), src) if s != 1])
        return None, _distinct(tuple(None if s == 1 else next(mapped) for s in shape)), buf


def _stored_map(shape, amap, space):
    """The axis map to store a value of ``shape`` with: a dim the value is only broadcast along
    (a splat constant plus a per-row value gives a full row) still runs along its axis, so every
    element of that dim is written."""
    if all(a is not None or s == 1 for a, s in zip(amap, shape)):
        return amap
    aligned = _right_aligned(shape, space)
    return _distinct(tuple(a if a is not None or s == 1 else aligned[d] for d, (a, s) in enumerate(zip(amap, shape))))


def _load_index(shape, amap, space):
    strides = [0] * len(space)
    for d, (a, st) in enumerate(zip(amap, contiguous_strides(shape))):
        if a is not None:
            strides[a] = st
    return Index(tuple(strides), 0)


def _lower_op(kb, o, get, space):
    name = o.short_name
    out_shape = tuple(o.results[0].type.shape)
    if o.name in REDUCE_KIND:
        val, amap = get(o.operands[0])
        dims = o.attrs["dims"]
        axes = [amap[d] for d in dims if amap[d] is not None]
        if not axes:
            raise Unlowerable("reduction over size-1 dims only")
        r = kb.reduce(REDUCE_KIND[o.name], val, axes)
        if o.attrs["keepdim"]:
            return r, tuple(None if d in dims else a for d, a in enumerate(amap))
        return r, tuple(a for d, a in enumerate(amap) if d not in dims)
    if name == "iota":
        amap = _right_aligned(out_shape, space)
        axis = amap[o.attrs["dim"]]
        if axis is None:      # a size-1 dim: the index is always 0
            return kb.constant(0, "i64"), amap
        return kb.index(axis), amap
    if name == "constant":
        value = o.attrs["value"]
        if isinstance(value, list):
            raise Unlowerable("non-splat constant")
        return kb.constant(value, o.attrs["dtype"]), (None,) * len(out_shape)
    if name == "reshape":
        val, amap = get(o.operands[0])
        mapped = iter([a for a, s in zip(amap, o.operands[0].type.shape) if s != 1])
        return val, tuple(None if s == 1 else next(mapped) for s in out_shape)
    if name == "expand":
        val, amap = get(o.operands[0])
        src_shape = o.operands[0].type.shape
        lead = len(out_shape) - len(src_shape)
        aligned = _right_aligned(out_shape, space) if len(out_shape) <= len(space) else None
        new = []
        for d, s in enumerate(out_shape):
            a = amap[d - lead] if d >= lead else None
            if a is None and s != 1:
                if aligned is None or aligned[d] is None:
                    raise Unlowerable("expand to dims that are not iteration axes")
                a = aligned[d]
            new.append(a)
        return val, tuple(new)
    if not o.has_trait(ELEMENTWISE) or (name not in LOWER and name != "clamp_tensor"):
        raise Unlowerable(f"'{o.name}' has no kernel lowering")
    vals, maps = zip(*(get(v) for v in o.operands)) if o.operands else ((), ())
    amap = _broadcast_maps(maps, [v.type.shape for v in o.operands], out_shape)
    attrs = {k: v for k, v in o.attrs.items() if v is not None}
    alpha = attrs.pop("alpha", None) if name in ("add", "sub") else None
    if alpha is not None:                 # add/sub's a + alpha * b
        vals = (vals[0], kb.op("mul", vals[1], kb.constant(alpha, o.operands[1].type.dtype.name)))
    if name == "clamp_tensor":
        return kb.op("minimum", kb.op("maximum", vals[0], vals[1]), vals[2]), amap
    return kb.op(name, *vals, **attrs), amap
