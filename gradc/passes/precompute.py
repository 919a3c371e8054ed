"""precompute-grads: turn a joint function into one that also computes its gradients
in the forward pass, for a cotangent of 1.

For a function returning one 0-d floating point tensor (a loss), the gradient is linear in
the scalar cotangent, so ``@gradc.compile`` (``backward="auto"``) runs

    @f_precomputed(%args...) -> (loss, grad_wrt_0, ...)

once (reading each input once, in kernels fused with the loss) and its backward only
scales those gradients by the real cotangent. This pass replaces every joint function
(from ``autodiff``) by that function; run ``decompose,canonicalize,cse,dce,fuse`` after it.
"""
from __future__ import annotations

from ..ir.clone import clone_function
from ..ir.core import Builder, Function, Module
from .autodiff import NUM_COTANGENTS, NUM_OUTPUTS, WRT
from .manager import Pass, PassError, register_pass


def is_scalar_loss(func: Function, n_outputs: int | None = None) -> bool:
    outs = func.outputs if n_outputs is None else func.outputs[:n_outputs]
    return len(outs) == 1 and outs[0].type.shape == () and outs[0].type.dtype.is_floating_point


def with_unit_cotangent(joint: Function) -> Function:
    """The joint function with its cotangent arguments replaced by the constant 1."""
    for key in (NUM_COTANGENTS, NUM_OUTPUTS, WRT):
        if key not in joint.attrs:
            raise PassError(f"precompute-grads: @{joint.name} is not a joint function from autodiff "
                            f"(missing {key})")
    if not is_scalar_loss(joint, joint.attrs[NUM_OUTPUTS]):
        raise PassError(f"precompute-grads: @{joint.name} must return one 0-d floating point tensor "
                        "before its gradients")
    f = clone_function(joint, joint.name.replace("_joint", "") + "_precomputed")
    n_ct = f.attrs[NUM_COTANGENTS]
    b = Builder(f.body, 0)
    for k in range(n_ct):
        arg = f.args[len(f.args) - n_ct + k]
        arg.replace_all_uses_with(b.constant(1.0, arg.type.shape, arg.type.dtype))
    for _ in range(n_ct):
        f.erase_argument(len(f.args) - 1)
    for key in (NUM_COTANGENTS, WRT):
        f.attrs.pop(key)
    return f


@register_pass
class PrecomputeGradsPass(Pass):
    name = "precompute-grads"
    summary = "joint f(args, ct) -> f(args) computing loss and gradients for ct = 1 (scalar losses)"

    def run_on_module(self, module: Module) -> bool:
        module.functions = [with_unit_cotangent(f) for f in module.functions]
        return True
