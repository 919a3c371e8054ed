"""``torch.nn.utils.weight_norm`` / ``remove_weight_norm`` (the hook-based API): a parameter
``w`` is replaced by ``w_g`` (its norm over every dim but ``dim``) and ``w_v`` (its direction), and
a forward pre-hook recomputes ``w = w_g * w_v / ||w_v||`` before each call."""
from __future__ import annotations


from ..._warnings import warn_at_user_code
from ...autograd.node import grad_fn_named

_DEPRECATED = ("`torch.nn.utils.weight_norm` is deprecated in favor of "
               "`torch.nn.utils.parametrizations.weight_norm`.")


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, kept as size-1 dims (a 0-d norm of the
    whole tensor for ``dim`` None or -1)."""
    if dim is None or dim == -1:
        return v.norm(pow)
    dims = [d for d in range(v.ndim) if d != dim % v.ndim]
    return v.norm(pow, dim=dims, keepdim=True)


@grad_fn_named(lambda v, g, dim: "WeightNormInterfaceBackward0" if dim is not None else None)
def _weight_norm(v, g, dim):
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes the weight (PyTorch's class of the same name)."""

    def __init__(self, name, dim):
        self.name, self.dim = name, (-1 if dim is None else dim)

    def compute_weight(self, module):
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"),
                            None if self.dim == -1 else self.dim)

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    from ..parameter import Parameter
    warn_at_user_code(_DEPRECATED, FutureWarning)
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, WeightNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    hook = WeightNorm(name, dim)
    weight = getattr(module, name)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, None if hook.dim == -1 else dim).data))
    module.register_parameter(name + "_v", Parameter(weight.data))
    object.__setattr__(module, name, hook.compute_weight(module))
    module.register_forward_pre_hook(hook)
    return module


def remove_weight_norm(module, name="weight"):
    from ..parameter import Parameter
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            weight = hook.compute_weight(module)
            del module._forward_pre_hooks[key]
            for suffix in ("_g", "_v"):
                del module._parameters[name + suffix]
                object.__delattr__(module, name + suffix)
            object.__delattr__(module, name)              # (the computed weight, a plain attribute)
            module.register_parameter(name, Parameter(weight.data))
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
