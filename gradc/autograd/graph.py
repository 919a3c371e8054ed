"""``torch.autograd.graph``: hooks on the tensors saved for backward.

``saved_tensors_hooks(pack_hook, unpack_hook)``: every tensor an op (or an ``autograd.Function``'s
``save_for_backward``) saves for backward inside the context goes through ``pack_hook`` when it is
saved, and only what that returns is kept; the backward pass gets ``unpack_hook(packed)`` back.
Hooks nest (the innermost applies), are called with grad mode off, and the unpacked tensor takes
the saved one's place in the graph, so double backward works through it. ``save_on_cpu`` stores
the saved tensors on the CPU (already the case for CPU tensors: PyTorch's ``tensor.cpu()`` is the
tensor itself there). ``disable_saved_tensors_hooks(message)``: entering hooks raises
``RuntimeError(message)``.

gradc differences: tensors saved inside a compiled function's node (``gradc.compile``) do not go
through the hooks; an in-place op that saved its own input calls the pack hook twice (on the
input, then on the value before the write, which is what is kept), where PyTorch calls it once.
"""
from __future__ import annotations

import contextlib

from .node import _DEFAULT_HOOKS, _HOOKS_DISABLED, Node  # noqa: F401

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "Node"]


class saved_tensors_hooks:
    """Context manager that sets a pair of pack / unpack hooks for saved tensors."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        if _HOOKS_DISABLED[0] is not None:
            raise RuntimeError(_HOOKS_DISABLED[0])
        _DEFAULT_HOOKS.append((self.pack_hook, self.unpack_hook))

    def __exit__(self, *args) -> None:
        _DEFAULT_HOOKS.pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are stored on the CPU and moved back to their device for backward."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor):
            return (tensor.device, tensor.cpu())

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Within the context, setting saved-tensor hooks raises ``RuntimeError(error_message)``."""
    prev = _HOOKS_DISABLED[0]
    try:
        _HOOKS_DISABLED[0] = error_message
        yield
    finally:
        _HOOKS_DISABLED[0] = prev
