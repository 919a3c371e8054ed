"""The reference interpreter: run a Function on NumPy arrays with the op table.

Each table op runs its NumPy ``forward`` (multi-result ops return tuples);
``gradc.fused`` runs by interpreting its body with the block arguments bound to
its operands, ``gradc.yield`` giving its results; ``func.return`` gives the
function's results. Results are cast to their IR dtype exactly as the eager
Tensor does, and checked against their IR shape. This is the oracle that every
pass and backend is tested against: ``interpret(f, args)`` must equal
``interpret(some_pass(f), args)`` and the compiled code's output.
"""
from __future__ import annotations

import numpy as np

from ..ops import registry
from .core import FUSED, RETURN, YIELD, Block, Function


class InterpreterError(RuntimeError):
    """The IR could not be executed (wrong arguments, or an op broke its declared type)."""


def _as_array(x) -> np.ndarray:
    if hasattr(x, "detach") and hasattr(x, "numpy"):   # an eager gradc Tensor
        return np.asarray(x.detach().numpy())
    return np.asarray(x)


def interpret(func: Function, args) -> list[np.ndarray]:
    """Execute ``func`` on ``args`` (one array per argument); return one array per result."""
    args = list(args)
    if len(args) != len(func.args):
        raise InterpreterError(f"@{func.name} takes {len(func.args)} argument(s), got {len(args)}")
    env: dict = {}
    for i, (a, x) in enumerate(zip(func.args, args)):
        arr = _as_array(x)
        t = a.type
        if tuple(arr.shape) != t.shape:
            raise InterpreterError(f"@{func.name} argument {i}: expected shape {list(t.shape)} ({t}), "
                                   f"got {list(arr.shape)}")
        if arr.dtype != t.dtype.np:
            raise InterpreterError(f"@{func.name} argument {i}: expected dtype {t.dtype.np} ({t}), got {arr.dtype}")
        env[a] = arr
    outs = _run_block(func.body, env, RETURN)
    return [np.array(o, copy=True) for o in outs]


def _run_block(block: Block, env: dict, terminator: str) -> list:
    for op in block.ops:
        if op.name == terminator:
            return [env[v] for v in op.operands]
        if op.name in (RETURN, YIELD):
            raise InterpreterError(f"'{op.name}' outside its enclosing op")
        inputs = [env[v] for v in op.operands]
        if op.name == FUSED:
            body = op.regions[0].blocks[0]
            env.update(zip(body.args, inputs))   # SSA values are distinct objects: one env suffices
            values = _run_block(body, env, YIELD)
        else:
            d = registry.get(op.short_name)
            out = d.forward(*inputs, **op.attrs)
            values = list(out) if isinstance(out, tuple) else [out]
        if len(values) != len(op.results):
            raise InterpreterError(f"'{op.name}' produced {len(values)} value(s) for {len(op.results)} result(s)")
        for r, v in zip(op.results, values):
            v = np.asarray(v)
            if v.dtype != r.type.dtype.np:
                v = v.astype(r.type.dtype.np)
            if tuple(v.shape) != r.type.shape:
                raise InterpreterError(f"'{op.name}' result #{r.index} has shape {list(v.shape)} but its IR type "
                                       f"is {r.type}")
            env[r] = v
    raise InterpreterError(f"block ends without '{terminator}'")
