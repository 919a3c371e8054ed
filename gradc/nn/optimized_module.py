"""``gradc.compile(module)`` and ``module.compile()``: compiled modules that stay modules.

``gradc.compile(model)`` returns an ``OptimizedModule``, as ``torch.compile`` does: a Module whose
one submodule ``_orig_mod`` is the model (so ``parameters()``, ``train()``/``eval()`` and
``state_dict()``, with keys under ``_orig_mod.``, work as on PyTorch's), whose call runs the
compiled call of the model, and whose other attributes are the model's.  ``model.compile()``
compiles the model's own calls in place.  Both copy and pickle as modules: the copy compiles its
own calls again, with the same options.
"""
from __future__ import annotations

from .modules import Module


class OptimizedModule(Module):
    """A compiled module: calls run ``compiled`` (``gradc.compile`` of ``mod``); the rest is ``mod``'s."""

    def __init__(self, mod: Module, compiled, options=None):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled_call", compiled)
        object.__setattr__(self, "_compile_options", dict(options or {}))
        object.__setattr__(self, "training", mod.training)

    def _rebuild_compiled_call(self) -> None:
        from ..compile import CompiledFunction
        mod = self._modules["_orig_mod"]
        object.__setattr__(self, "_compiled_call", CompiledFunction(mod, name=type(mod).__name__,
                                                                    **self._compile_options))

    def __call__(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def forward(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    def explain(self) -> str:
        """The compiled call's ``explain()`` (why it last compiled again)."""
        return self._compiled_call.explain()

    def __getattr__(self, name):
        if name.startswith("__") or "_modules" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self._modules["_orig_mod"], name)


def compile_in_place(module: Module, **options) -> None:
    """``module.compile(**options)``: its later calls run compiled (``gradc.compile`` options).
    The options stay on the module, so a copy or an unpickled module compiles its own calls
    again (``Module.__setstate__``: a compiled call's machine code and locks are not copied)."""
    from ..compile import compile as compile_fn

    def call(*args, **kwargs):
        return module._call_uncompiled(*args, **kwargs)
    call.__name__ = type(module).__name__
    object.__setattr__(module, "_compile_options", dict(options))
    object.__setattr__(module, "_compiled_call", compile_fn(call, **options))
