"""``torch.nn.utils.parametrize``: a module's tensor replaced by a function of other tensors.

As PyTorch does it: the module's class becomes a per-module subclass (``ParametrizedLinear``)
with a property for each parametrized name; the originals live in
``module.parametrizations[name]`` (a ``ParametrizationList``, as ``original`` or ``original0``,
``original1``, ... when a right inverse gives several), and reading the name runs the chain.
"""
from __future__ import annotations

from contextlib import contextmanager

from ...autograd import no_grad
from ...tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..parameter import Parameter


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to its originals."""

    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        wrap = (lambda t: Parameter(t.detach(), original.requires_grad)) if isinstance(original, Parameter) else (
            lambda t: t.detach())
        register = self.register_parameter if isinstance(original, Parameter) else self.register_buffer
        self.is_tensor = isinstance(new, Tensor)
        if self.is_tensor:
            if new is not original:             # (PyTorch's _maybe_set: the original keeps its identity)
                with no_grad():
                    original.data = new.detach()
            register("original", original)
            self.ntensors = 1
        else:
            self.ntensors = len(new)
            for i, t in enumerate(new):
                register(f"original{i}", wrap(t))
        if not unsafe:
            _check_same("Registering a parametrization may not change the {} of the tensor, unless `unsafe` flag is "
                        "enabled.\nunparametrized {}: {}\nparametrized {}: {}", original, self())

    def originals(self):
        return (self.original,) if self.is_tensor else tuple(getattr(self, f"original{i}") for i in range(self.ntensors))

    def forward(self):
        modules = list(self)
        x = modules[0](*self.originals())
        for module in modules[1:]:
            x = module(x)
        return x

    def right_inverse(self, value):
        with no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
            values = (value,) if self.is_tensor else tuple(value)
            for original, v in zip(self.originals(), values):
                original.copy_(v)


def _check_same(template, before, after):
    """PyTorch's checks that a parametrization keeps a tensor's dtype and shape: ``template``
    formatted with the attribute's name, then the name and value before and after, twice."""
    if not isinstance(after, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(after).__name__}.")
    for attr in ("dtype", "shape"):
        if getattr(after, attr) != getattr(before, attr):
            raise ValueError(template.format(attr, attr, getattr(before, attr), attr, getattr(after, attr)))


_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Inside it each parametrized tensor is computed once (the first read) and that tensor is
    returned by later reads, as PyTorch's; the cache is emptied when the outermost one exits."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def is_parametrized(module, tensor_name=None) -> bool:
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return tensor_name is None or tensor_name in parametrizations


def _inject_class(module):
    cls = module.__class__
    object.__setattr__(module, "__class__", type(f"Parametrized{cls.__name__}", (cls,), {}))
    module.parametrizations = ModuleDict()


def _inject_property(module, name):
    def get(self):
        if _cache_enabled:
            key = (id(self), name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = self.parametrizations[name]()
                _cache[key] = tensor
            return tensor
        return self.parametrizations[name]()

    def set_(self, value):
        self.parametrizations[name].right_inverse(value)
    setattr(module.__class__, name, property(get, set_))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make ``module.<tensor_name>`` the output of ``parametrization`` (several calls chain);
    unless ``unsafe``, the parametrization is run once to check it keeps the dtype and shape."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            value = getattr(module, tensor_name)
            _check_same(f"Registering a parametrization may not change the {{}} of the tensor, unless the `unsafe` "
                        f"flag is enabled.\nmodule.{tensor_name}.{{}}: {{}}\nparametrization(module.{tensor_name})"
                        ".{}: {}", value, parametrization(value))
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
        return module
    original = getattr(module, tensor_name)
    if not isinstance(original, Tensor):
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    if not is_parametrized(module):
        _inject_class(module)
    module._parameters.pop(tensor_name, None)
    module._buffers.pop(tensor_name, None)
    module.__dict__.pop(tensor_name, None)
    module.parametrizations[tensor_name] = ParametrizationList([parametrization], original, unsafe)
    _inject_property(module, tensor_name)
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo ``register_parametrization``: the tensor becomes a plain parameter (or buffer) again,
    its current value (``leave_parametrized``) or its original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    was_parameter = bool(chain._parameters)
    if leave_parametrized:
        with no_grad():
            value = getattr(module, tensor_name)
    elif chain.is_tensor:
        value = chain.original
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in "
                         "terms of a sequence of tensors.")
    requires_grad = chain.originals()[0].requires_grad
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if was_parameter:
        module.register_parameter(tensor_name, Parameter(value.detach(), requires_grad))
    else:
        module.register_buffer(tensor_name, value.detach())
    if not len(module.parametrizations):
        del module._modules["parametrizations"]
        module.__dict__.pop("parametrizations", None)
        object.__setattr__(module, "__class__", module.__class__.__bases__[0])
    return module
