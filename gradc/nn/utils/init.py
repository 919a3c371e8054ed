"""``torch.nn.utils.skip_init``: a module built without running its parameter initialisation."""
from __future__ import annotations

import inspect


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with uninitialised parameters and buffers (``to_empty``).

    PyTorch builds the module on the meta device, so no initialiser draws random numbers; gradc
    has no meta device and builds it on the target device instead, with the default generator's
    state put back afterwards, so the random stream is left as PyTorch leaves it."""
    from ..modules import Module
    from ...random_state import get_rng_state, set_rng_state
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    state = get_rng_state()
    try:
        module = module_cls(*args, device=final_device, **kwargs)
    finally:
        set_rng_state(state)
    return module.to_empty(device=final_device)
