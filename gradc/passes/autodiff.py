"""autodiff: reverse-mode differentiation of a function, in the same IR.

``differentiate(f, wrt)`` returns the *joint* function

    @f_joint(%args..., %ct_0, ..., %ct_k) -> (outputs..., grad_wrt_0, ...)

where ``%ct_i`` is the cotangent (incoming gradient) of the i-th floating output.
It is a reverse walk with an adjoint map: contributions to a value are summed,
each op's VJP comes from the op table (written in gradc ops and run on
``IRTensor``s, so it emits ordinary IR), values that do not depend on a ``wrt``
argument are skipped, and broadcasting is undone by the rules' ``sum_to``.
Because the output is ordinary IR, the pass applies to its own output:
second and higher derivatives are this pass run again.
"""
from __future__ import annotations

from ..autocast_state import no_casts
from ..ops.registry import NONDIFF, NoDerivative, VJPContext, vjp_rule
from ..ir.core import RETURN, Builder, Function
from ..ir.emitter import IRTensor
from ..ir.saved_versions import StaleSaved

# Function attributes recording the joint function's layout.
NUM_OUTPUTS = "gradc.num_outputs"
NUM_COTANGENTS = "gradc.num_cotangents"
WRT = "gradc.wrt"
REQUIRES_GRAD = "gradc.requires_grad"


class AutodiffError(RuntimeError):
    pass


def default_wrt(func: Function) -> list[int]:
    return [i for i, a in enumerate(func.arg_attrs) if a.get(REQUIRES_GRAD)]


def active_values(func: Function, wrt) -> set:
    """Values that depend (differentiably) on a wrt argument."""
    return propagate_active(func.body.ops, [func.args[i] for i in wrt])


def propagate_active(ops, roots) -> set:
    """``roots`` and the values of ``ops`` (in program order) that depend on them through
    differentiable ops: what a reverse walk from any of them needs to visit."""
    active = set(roots)
    for op in ops:
        if op.name == RETURN:
            continue
        d = op.opdef
        if d is None:
            raise AutodiffError(f"autodiff: cannot differentiate through '{op.name}' (run autodiff before fuse)")
        if d.has(NONDIFF):
            continue
        if any(v in active and d.input_is_differentiable(i) for i, v in enumerate(op.operands)):
            for r in op.results:
                if r.type.dtype.is_floating_point:
                    active.add(r)
    return active


def contribute(adjoint: dict, value, g) -> None:
    """Add gradient ``g`` (an IRTensor, or None for none) to the adjoint of ``value``."""
    if g is None:
        return
    prev = adjoint.get(value)
    adjoint[value] = g if prev is None else prev + g


def backpropagate(ops, active: set, adjoint: dict, builder: Builder, on_vjp=None, stale=None) -> dict:
    """The reverse walk: run the VJP rule of each of ``ops`` (in program order; walked backwards)
    that has an adjoint for a result and an ``active`` operand, adding the operands' gradients
    into ``adjoint`` (Value -> IRTensor, seeded with the outputs' cotangents). The adjoint ops are
    emitted through ``builder``, each with its forward op's location; ``on_vjp(op)`` is called
    before each op's rule runs. ``stale``: {op: message} for the ops whose saved tensors the
    function modified in place (``ir.saved_versions``): their gradients raise eager autograd's
    error when the backward computes them. Returns ``adjoint``."""
    stale = stale or {}
    for op in reversed(ops):
        grads_out = [adjoint.get(r) for r in op.results]
        if all(g is None for g in grads_out):
            continue
        d = op.opdef
        if d.has(NONDIFF):
            continue
        needs = tuple(v in active and d.input_is_differentiable(i) for i, v in enumerate(op.operands))
        if not any(needs):
            continue
        if on_vjp is not None:
            on_vjp(op)
        builder.loc = op.loc
        wrap = [IRTensor(v, builder) for v in op.operands]
        results = [IRTensor(r, builder) for r in op.results]
        for k, r in enumerate(op.results):
            if grads_out[k] is None and k in d.differentiable_outputs:
                grads_out[k] = IRTensor(builder.constant(0.0, r.type.shape, r.type.dtype), builder)
        if op in stale:
            wrap, results = StaleSaved(wrap, "in", stale[op]), StaleSaved(results, "out", stale[op])
        ctx = VJPContext(wrap, results, op.attrs, needs, [v.type for v in op.operands])
        try:
            grads_in = vjp_rule(d)(ctx, grads_out)
        except NotImplementedError as e:
            raise AutodiffError(f"autodiff: {e} (at {op.loc or 'unknown location'})") from None
        except NoDerivative as e:
            grads_in = _raising_gradients(builder, op, needs, grads_out, str(e))
        for i, (v, g) in enumerate(zip(op.operands, grads_in)):
            if needs[i] and g is not None:
                if g.dtype is not v.type.dtype:
                    g = g.to(v.type.dtype)
                contribute(adjoint, v, g)
    builder.loc = None
    return adjoint


def differentiate(func: Function, wrt=None, name: str | None = None) -> Function:
    """The joint forward+backward function of ``func`` with respect to args ``wrt``."""
    with no_casts():            # (the VJP rules' ops are not autocast, as eager backward's)
        return _differentiate(func, wrt, name)


def _differentiate(func: Function, wrt, name) -> Function:
    wrt = default_wrt(func) if wrt is None else [int(i) for i in wrt]
    for i in wrt:
        if not 0 <= i < len(func.args):
            raise AutodiffError(f"autodiff: wrt index {i} out of range for @{func.name} with {len(func.args)} args")
        if not func.args[i].type.dtype.is_floating_point:
            raise AutodiffError(f"autodiff: argument {i} of @{func.name} has type {func.args[i].type}; only "
                                "floating point arguments can be differentiated")
    joint = func.clone()
    joint.name = name or f"{func.name}_joint"
    stale = getattr(func, "meta", {}).get("stale_saves") or {}
    stale = {j: stale[o] for o, j in zip(func.body.ops, joint.body.ops) if o in stale}
    outputs = list(joint.outputs)
    active = active_values(joint, wrt)
    ret = joint.return_op
    builder = Builder.before(ret)

    adjoint: dict = {}
    cotangent_positions = [k for k, v in enumerate(outputs) if v.type.dtype.is_floating_point]
    for k in cotangent_positions:
        ct = joint.add_argument(outputs[k].type, f"ct{k}")
        builder.loc = outputs[k].owner.loc if hasattr(outputs[k].owner, "loc") else None
        if outputs[k] in active:
            contribute(adjoint, outputs[k], IRTensor(ct, builder))

    backpropagate([op for op in joint.body.ops if op is not ret], active, adjoint, builder, stale=stale)
    grads = []
    for i in wrt:
        a = joint.args[i]
        g = adjoint.get(a)
        grads.append(g.value if g is not None else builder.constant(0.0, a.type.shape, a.type.dtype))
    joint.set_outputs(outputs + grads)
    joint.attrs[NUM_OUTPUTS] = len(outputs)
    joint.attrs[NUM_COTANGENTS] = len(cotangent_positions)
    joint.attrs[WRT] = list(wrt)
    for k, a in enumerate(joint.arg_attrs):
        a.pop(REQUIRES_GRAD, None)
    return joint


def _raising_gradients(builder, op, needs, grads_out, message):
    """For an op with no derivative (or a modified saved tensor), gradients that raise ``message``
    when the backward computes them."""
    g = next(g for g in grads_out if g is not None)
    return [IRTensor(builder.op("backward_error", g.value, shape=list(v.type.shape), dtype=v.type.dtype.name,
                                message=message), builder) if need else None
            for v, need in zip(op.operands, needs)]


from .manager import Pass, PassError, register_pass  # noqa: E402


@register_pass
class AutodiffPass(Pass):
    """Replace each function by its joint forward+backward function."""
    name = "autodiff"
    summary = "reverse-mode differentiation: f -> f_joint(args, cotangents) -> (outputs, grads)"

    def __init__(self, wrt=None):
        wrt = [wrt] if isinstance(wrt, (int, str)) else wrt
        if wrt is not None and not all(type(i) is int for i in wrt):
            raise PassError(f"autodiff: wrt must be argument positions (integers, e.g. wrt=0,1), got "
                            f"{','.join(map(str, wrt))}")
        self.wrt = wrt

    def run_on_module(self, module) -> bool:
        module.functions = [differentiate(f, self.wrt) for f in module.functions]
        return True
