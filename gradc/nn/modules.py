"""nn.Module and the layers: Linear, Sequential, ReLU, Tanh, Sigmoid, Identity."""
from __future__ import annotations

import math
from collections import OrderedDict, namedtuple

from .._warnings import warn_at_user_code
from .. import factories
from ..ops import dispatch
from ..tensor import Tensor
from . import functional as F
from . import init
from .parameter import Buffer, Parameter


def _no_grad():
    from ..autograd import no_grad
    return no_grad()


def _size(shape):
    return f"torch.Size([{', '.join(str(d) for d in shape)}])"


def _move_buffer(b, args, kwargs):
    """``b.to(*args, **kwargs)``, where a dtype applies only if ``b`` is floating point."""
    from ..dtypes import dtype as _dtype
    if not b.dtype.is_floating_point:
        args = tuple(a for a in args if not isinstance(a, _dtype))
        kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}
        if not args and not kwargs:
            return b
    with _no_grad():
        return b.to(*args, **kwargs)


class RemovableHandle:
    """What ``register_*_hook`` returns: ``remove()`` takes the hook off again (and its entries
    in the ``extra`` tables: which hooks take kwargs, ...)."""
    _next_id = 0

    def __init__(self, table, hook, extra=()):
        self._table, self.id = table, RemovableHandle._next_id
        self._extra = tuple(extra)
        RemovableHandle._next_id += 1
        table[self.id] = hook

    def remove(self):
        self._table.pop(self.id, None)
        for t in self._extra:
            t.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict(strict=False)`` did not match (PyTorch's repr when all did)."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _typename(value) -> str:
    """PyTorch's torch.typename: a tensor's legacy type name, otherwise the object's type's."""
    if isinstance(value, Tensor):
        return f"torch.{value.dtype.tensor_type}"
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


# a Module's hook tables (id -> hook, or id -> True for the flags)
_HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                "_forward_hooks_always_called", "_backward_hooks", "_backward_pre_hooks", "_state_dict_pre_hooks",
                "_state_dict_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")


def _hooks(module, table):
    """``module``'s hook table (an empty one for a module made without ``Module.__init__``)."""
    return module.__dict__.get(table) or {}


class Module:
    """Base class: registers Parameters and sub-Modules assigned as attributes, and buffers
    (``register_buffer``: tensors that are state but not parameters, such as running means)."""
    dump_patches = False
    call_super_init = False

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())
        for table in _HOOK_TABLES:
            object.__setattr__(self, table, OrderedDict())
        object.__setattr__(self, "_is_full_backward_hook", None)
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign before Module.__init__() call")
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif name in self._parameters:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' (torch.nn.Parameter or None "
                                "expected)")
            self._parameters[name] = None
        elif isinstance(value, Module):
            self._modules[name] = value
        elif name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' (torch.nn.Module or None "
                                "expected)")
            self._modules[name] = None
        elif isinstance(value, Buffer) or name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            self._buffers[name] = value
            if isinstance(value, Buffer):        # (its own persistence; a plain tensor keeps the name's)
                (self._non_persistent_buffers.discard if value.persistent else self._non_persistent_buffers.add)(name)
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        self._non_persistent_buffers.discard(name)
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        """Add ``param`` (a Parameter or None) as ``name``, checked as PyTorch checks it."""
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' (torch.nn.Parameter or "
                            "None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                             f"explicitly. To express '{name}' as a function of another Tensor, compute the value in "
                             "the forward() method.")
        self._parameters[name] = param
        object.__setattr__(self, name, param)

    def add_module(self, name, module):
        """Register ``module`` (or None) as the child ``name``."""
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module
        object.__setattr__(self, name, module)

    register_module = add_module

    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer: module state saved in ``state_dict`` (unless ``persistent=False``) and
        moved by ``to()``, but not a parameter (no gradient, not in ``parameters()``)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)
        object.__setattr__(self, name, tensor)

    def named_buffers(self, prefix="", recurse=True):
        for name, b in self._buffers.items():
            if b is not None:
                yield prefix + name, b
        if recurse:
            for mname, m in self._modules.items():
                yield from m.named_buffers(prefix + mname + ".", True)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        compiled = self.__dict__.get("_compiled_call")
        if compiled is not None and not dispatch.capturing:     # module.compile()
            return compiled(*args, **kwargs)
        return self._call_uncompiled(*args, **kwargs)

    def compile(self, **options):
        """Compile this module's calls in place (``gradc.compile``'s options), as PyTorch's
        ``Module.compile``; ``gradc.compile(module)`` returns a compiled wrapper instead."""
        from .optimized_module import compile_in_place
        compile_in_place(self, **options)

    def _rebuild_compiled_call(self) -> None:
        from .optimized_module import compile_in_place
        compile_in_place(self, **self.__dict__["_compile_options"])

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_compiled_call", None)     # (machine code and locks: compiled again on the copy)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "_compile_options" in state:
            self._rebuild_compiled_call()

    def _call_uncompiled(self, *args, **kwargs):
        if dispatch.capturing:           # traced by @gradc.compile: guard on self.training
            dispatch.capturing[-1].note_module(self)
        d = self.__dict__
        if not (d.get("_forward_pre_hooks") or d.get("_forward_hooks") or d.get("_backward_hooks")
                or d.get("_backward_pre_hooks")):
            return self.forward(*args, **kwargs)
        called = set()
        out = None
        try:
            args, kwargs, out = self._call_with_hooks(args, kwargs, called)
            return out
        except Exception:
            self._always_called_hooks(args, kwargs, out, called)
            raise

    def _call_with_hooks(self, args, kwargs, called):
        """``forward`` between the forward pre-hooks and hooks, with the backward hooks set up
        around it (``module_hooks``); ``called`` collects the always-called hooks that ran."""
        with_kwargs = _hooks(self, "_forward_pre_hooks_with_kwargs")
        for hid, hook in list(_hooks(self, "_forward_pre_hooks").items()):
            if hid in with_kwargs:
                res = hook(self, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {res}.")
                    args, kwargs = res
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        backward_hooks = self._backward_hook_setup()
        if backward_hooks is not None:
            args = backward_hooks.setup_inputs(args)
        out = self.forward(*args, **kwargs)
        with_kwargs = _hooks(self, "_forward_hooks_with_kwargs")
        always = _hooks(self, "_forward_hooks_always_called")
        for hid, hook in list(_hooks(self, "_forward_hooks").items()):
            if hid in always:
                called.add(hid)
            res = hook(self, args, kwargs, out) if hid in with_kwargs else hook(self, args, out)
            if res is not None:
                out = res
        if backward_hooks is not None:
            if not isinstance(out, (Tensor, tuple)):
                warn_at_user_code(f"For backward hooks to be called, module output should be a Tensor or a tuple of "
                                  f"Tensors but received {type(out)}")
            else:
                out = backward_hooks.setup_outputs(out)
        if self.__dict__.get("_is_full_backward_hook") is False and _hooks(self, "_backward_hooks"):
            self._register_legacy_backward_hooks(out)
        return args, kwargs, out

    def _backward_hook_setup(self):
        """This call's ``module_hooks.ModuleBackwardHook``, or None without full backward hooks."""
        pre = list(_hooks(self, "_backward_pre_hooks").values())
        full = list(_hooks(self, "_backward_hooks").values()) if self.__dict__.get("_is_full_backward_hook") else []
        if not (pre or full):
            return None
        if dispatch.capturing:
            from ..ir.errors import TraceError
            raise TraceError(f"backward hooks of {type(self).__name__} (register_full_backward_hook, "
                             "register_full_backward_pre_hook) under @gradc.compile: they run Python during "
                             "backward; remove them, or compile with fallback=True to run the function eagerly")
        from .module_hooks import ModuleBackwardHook
        return ModuleBackwardHook(self, full, pre)

    def _register_legacy_backward_hooks(self, out):
        """``register_backward_hook`` (deprecated): hooks on the grad_fn of the first tensor
        result, called with that node's gradients."""
        var = out
        while not isinstance(var, Tensor):
            var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) else var[0]
        node = var.grad_fn
        if node is not None:
            for hook in _hooks(self, "_backward_hooks").values():
                node.register_hook(lambda gi, go, hook=hook: hook(self, gi, go))

    def _always_called_hooks(self, args, kwargs, out, called):
        """After forward raised: the forward hooks registered with ``always_call=True`` that have
        not run (an error of theirs is a warning; the first error is raised)."""
        with_kwargs = _hooks(self, "_forward_hooks_with_kwargs")
        for hid, hook in list(_hooks(self, "_forward_hooks").items()):
            if hid not in _hooks(self, "_forward_hooks_always_called") or hid in called:
                continue
            try:
                res = hook(self, args, kwargs, out) if hid in with_kwargs else hook(self, args, out)
                if res is not None:
                    out = res
            except Exception as e:      # noqa: BLE001  (as PyTorch: silenced, the forward's error wins)
                warn_at_user_code("module forward hook with ``always_call=True`` raised an exception that was silenced "
                                  f"as another error was raised in forward: {e}")

    def _hook_table(self, name):
        table = self.__dict__.get(name)
        if table is None:
            table = OrderedDict()
            object.__setattr__(self, name, table)
        return table

    def _add_hook(self, table, hook, prepend, flags=()):
        """Register ``hook`` in ``table`` (first if ``prepend``), flagged in the ``flags`` tables."""
        flag_tables = [self._hook_table(f) for f in flags]
        handle = RemovableHandle(self._hook_table(table), hook, extra=flag_tables)
        for t in flag_tables:
            t[handle.id] = True
        if prepend:
            self._hook_table(table).move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` before each forward; a non-None result replaces the args
        (``with_kwargs``: ``hook(module, args, kwargs)`` returning None or (args, kwargs))."""
        return self._add_hook("_forward_pre_hooks", hook, prepend,
                              ("_forward_pre_hooks_with_kwargs",) if with_kwargs else ())

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` after each forward; a non-None result replaces the output
        (``with_kwargs``: ``hook(module, args, kwargs, output)``; ``always_call``: also when forward
        raised)."""
        flags = (("_forward_hooks_with_kwargs",) if with_kwargs else ()) + \
            (("_forward_hooks_always_called",) if always_call else ())
        return self._add_hook("_forward_hooks", hook, prepend, flags)

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` when the gradients of the module's inputs are
        computed; a non-None result replaces ``grad_input`` (``module_hooks``)."""
        if self.__dict__.get("_is_full_backward_hook") is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", True)
        return self._add_hook("_backward_hooks", hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` when the gradients of the module's outputs arrive; a
        non-None result replaces ``grad_output``."""
        return self._add_hook("_backward_pre_hooks", hook, prepend)

    def register_backward_hook(self, hook):
        """Deprecated (PyTorch's too): ``hook(module, grad_input, grad_output)`` with the
        gradients of the grad_fn of the module's first result only."""
        if self.__dict__.get("_is_full_backward_hook") is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", False)
        return self._add_hook("_backward_hooks", hook, False)

    def named_parameters(self, prefix="", recurse=True):
        seen = set()
        for name, p in self._parameters.items():
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                yield (prefix + name, p)
        if recurse:
            for mname, m in self._modules.items():
                for name, p in m.named_parameters(prefix + mname + ".", True):
                    if id(p) not in seen:
                        seen.add(id(p))
                        yield name, p

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) for this module and every descendant, each once."""
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def apply(self, fn):
        """``fn`` on every child (recursively), then on this module, as ``init`` code does."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def get_submodule(self, target):
        mod = self
        for item in target.split(".") if target else []:
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    def get_parameter(self, target):
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        return mod._parameters[name]

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def to(self, *args, **kwargs):
        """Move (``"cuda"``, ``"cpu"``) or cast (``gradc.float64``) every parameter in place, as
        PyTorch does: the Parameter objects stay the same, their data (and grads) change.
        Buffers are replaced by moved copies; a cast applies to floating-point buffers only
        (a BatchNorm's ``num_batches_tracked`` stays int64)."""
        for p in self.parameters():
            with _no_grad():
                new = p.detach().to(*args, **kwargs)
                grad = p._grad.to(*args, **kwargs) if p._grad is not None else None
            p._data, p._dtype, p._device = new._data, new._dtype, new._device
            p._grad = grad
        for m in self.modules():
            for name, b in list(m._buffers.items()):
                if b is not None:
                    setattr(m, name, _move_buffer(b, args, kwargs))
        return self

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def cpu(self):
        return self.to("cpu")

    def double(self):
        from .. import dtypes
        return self.to(dtypes.float64)

    def float(self):
        from .. import dtypes
        return self.to(dtypes.float32)

    def half(self):
        from .. import dtypes
        return self.to(dtypes.float16)

    def type(self, dst_type):
        """Cast every parameter and buffer to ``dst_type`` (integer buffers too, as PyTorch's)."""
        for p in self.parameters():
            with _no_grad():
                new = p.detach().to(dst_type)
            p._data, p._dtype = new._data, new._dtype
        for m in self.modules():
            for name, b in list(m._buffers.items()):
                if b is not None:
                    with _no_grad():
                        setattr(m, name, b.to(dst_type))
        return self

    def share_memory(self):
        """A no-op here (no other processes share gradc's tensors); returns the module."""
        return self

    def to_empty(self, *, device=None, recurse=True):
        """Parameters and buffers of the same shapes on ``device``, uninitialised."""
        for p in (self.parameters(recurse=recurse)):
            with _no_grad():
                new = factories.empty(tuple(p.shape), dtype=p.dtype, device=device or p.device)
            p._data, p._dtype, p._device = new._data, new._dtype, new._device
        for m in (self.modules() if recurse else [self]):
            for name, b in list(m._buffers.items()):
                if b is not None:
                    setattr(m, name, factories.empty(tuple(b.shape), dtype=b.dtype, device=device or b.device))
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p._grad is not None:
                p._grad.zero_()

    # ---- state_dict: each module saves and loads its own entries, then its children's ----------------
    def get_extra_state(self):
        """State beyond parameters and buffers, saved under ``_extra_state`` by modules that
        override this (and ``set_extra_state``)."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. Please file "
                           "an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report "
                           "this bug.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. Please file "
                           "an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report "
                           "this bug.")

    def _has_extra_state(self, method) -> bool:
        return getattr(type(self), method) is not getattr(Module, method)

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """The parameters and persistent buffers (detached unless ``keep_vars``) by dotted name,
        PyTorch's order: each module's own entries (and ``_extra_state``), then its children's;
        the state_dict pre- and post-hooks of each module run around its part."""
        if args:
            warn_at_user_code("Positional args are being deprecated, use kwargs instead. Refer to "
                              "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                              " for details.", FutureWarning)
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
        for hook in list(_hooks(self, "_state_dict_pre_hooks").values()):
            hook(self, prefix, keep_vars)
        for name, t in self._own_state():
            destination[prefix + name] = t if keep_vars else t.detach()
        if self._has_extra_state("get_extra_state"):
            destination[prefix + "_extra_state"] = self.get_extra_state()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in list(_hooks(self, "_state_dict_hooks").values()):
            if hook(self, destination, prefix, {}) is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _own_state(self):
        """(name, tensor) of this module's parameters, then its persistent buffers."""
        for name, p in self._parameters.items():
            if p is not None:
                yield name, p
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                yield name, b

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy ``state_dict``'s tensors into the parameters and persistent buffers in place (or,
        with ``assign``, make them the module's, keeping each parameter's requires_grad); with
        ``strict``, missing and unexpected keys raise PyTorch's error.  Each module's load pre-
        and post-hooks run around its part.  Returns the keys that did not match
        (``<All keys matched successfully>``)."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        # (each module's part collects missing and unexpected keys whatever ``strict`` is, and its
        # hooks are told strict=True, as PyTorch's; only raising depends on ``strict``)
        self._load_tree(OrderedDict(state_dict), "", assign, missing, unexpected, errors)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    def _load_tree(self, state, prefix, assign, missing, unexpected, errors):
        for hook in list(_hooks(self, "_load_state_dict_pre_hooks").values()):
            hook(self, state, prefix, {}, True, missing, unexpected, errors)
        self._load_own(state, prefix, assign, missing, unexpected, errors)
        for name, child in self._modules.items():
            if child is not None:
                sub = prefix + name + "."
                child._load_tree(OrderedDict((k, v) for k, v in state.items() if k.startswith(sub)), sub,
                                 assign, missing, unexpected, errors)
        keys = _IncompatibleKeys(missing, unexpected)
        for hook in list(_hooks(self, "_load_state_dict_post_hooks").values()):
            if hook(self, keys) is not None:
                raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not expected to "
                                     "return new values, if incompatible_keys need to be modified, it should be done "
                                     "inplace.")

    def _load_own(self, state, prefix, assign, missing, unexpected, errors):
        """This module's own entries of ``state`` (keys under ``prefix``), as PyTorch's
        ``_load_from_state_dict``."""
        from ..autograd import grad_mode
        own = dict(self._own_state())
        for name, t in own.items():
            key = prefix + name
            if key not in state:
                missing.append(key)
                continue
            value = state[key]
            if not isinstance(value, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                              f"object from checkpoint but received {type(value)}")
                continue
            if t.ndim == 0 and tuple(value.shape) == (1,):
                value = value[0]
            if tuple(value.shape) != tuple(t.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape {_size(value.shape)} from "
                              f"checkpoint, the shape in current model is {_size(t.shape)}.")
                continue
            if assign:
                if name in self._parameters:
                    setattr(self, name, Parameter(value.detach(), requires_grad=t.requires_grad))
                else:
                    setattr(self, name, value)
            else:
                with grad_mode.no_grad():
                    t.copy_(value)
        extra = prefix + "_extra_state"
        if self._has_extra_state("set_extra_state"):
            if extra in state:
                self.set_extra_state(state[extra])
            else:
                missing.append(extra)
        elif extra in state:
            unexpected.append(extra)
        for key in state:
            if not key.startswith(prefix) or key == extra:
                continue
            first = key[len(prefix):].split(".", 1)
            if (first[0] not in self._modules) if len(first) > 1 else (first[0] not in own):
                unexpected.append(key)

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` before the module's ``state_dict`` entries are made."""
        return self._add_hook("_state_dict_pre_hooks", hook, False)

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` after them (changes in place; returns None)."""
        return self._add_hook("_state_dict_hooks", hook, False)

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` before the module's part of ``load_state_dict``."""
        return self._add_hook("_load_state_dict_pre_hooks", hook, False)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` after it (changes in place; returns None)."""
        return self._add_hook("_load_state_dict_post_hooks", hook, False)

    def get_buffer(self, target):
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if not hasattr(mod, name):
            raise AttributeError(f"{type(mod).__name__} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    def set_submodule(self, target, module, strict=False):
        """Put ``module`` at the dotted path ``target`` (its parent must exist; with ``strict``
        the attribute must already be a submodule)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        path, _, name = target.rpartition(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self.get_submodule(path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self):
        """PyTorch's layout: the extra_repr on the first line alone, or its lines and then each
        child as ``(name): repr``, indented, one per line."""
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        children = [f"({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        if not children and len(extra_lines) <= 1:
            return f"{type(self).__name__}({extra})"
        return f"{type(self).__name__}(\n  " + "\n  ".join(extra_lines + children) + "\n)"


def _place(module, device):
    """A module built on the CPU moved to its constructor's ``device`` (if one was given)."""
    if device is not None:
        module.to(device)


def _default_parameters(weight_shape, n_bias, bias, dtype):
    """(weight, bias or None) initialised as PyTorch's Linear and convolutions do: kaiming
    uniform with a = sqrt(5), then the bias uniform in +-1/sqrt(fan_in) (the weight first, so
    the generator's draws are PyTorch's order)."""
    weight = Parameter(factories.empty(tuple(weight_shape), dtype=dtype))
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if not bias:
        return weight, None
    b = Parameter(factories.empty(n_bias, dtype=dtype))
    fan_in = init._fan_in(weight)
    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
    init.uniform_(b, -bound, bound)
    return weight, b


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight, self.bias = _default_parameters((out_features, in_features), out_features, bias, dtype)
        _place(self, device)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}
_PADDING_STRINGS = {"same", "valid"}


class _ConvNd(Module):
    """Conv1d/2d/3d: weight (out_channels, in_channels / groups, *kernel_size), PyTorch's init.
    A ``padding_mode`` other than 'zeros' pads with F.pad in that mode, then convolves unpadded."""
    _tuple = None
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        t = type(self)._tuple
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {_PADDING_STRINGS}")
            if padding == "same" and any(s != 1 for s in t(stride)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride, self.dilation = t(kernel_size), t(stride), t(dilation)
        self.padding = padding if isinstance(padding, str) else t(padding)
        self.padding_mode = padding_mode
        if padding == "valid":
            pairs = [(0, 0)] * len(self.kernel_size)
        elif padding == "same":
            from ..compositions import _same_padding
            pairs = _same_padding(self.kernel_size, self.dilation)
        else:
            pairs = [(q, q) for q in self.padding]
        self._reversed_padding_repeated_twice = [v for pr in reversed(pairs) for v in pr]
        self.weight, self.bias = _default_parameters((out_channels, in_channels // groups, *self.kernel_size),
                                                     out_channels, bias, dtype)
        _place(self, device)

    def forward(self, x):
        if self.padding_mode != "zeros":
            x = F.pad(x, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return type(self)._fn(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return type(self)._fn(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        zero, one = (0,) * len(self.kernel_size), (1,) * len(self.kernel_size)
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != zero:
            s += f", padding={self.padding}"
        if self.dilation != one:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


def _pair_of(v):
    from ..compositions import _pair
    return _pair(v)


def _single_of(v):
    from ..compositions import _single
    return _single(v)


def _triple_of(v):
    from ..compositions import _triple
    return _triple(v)


class Conv2d(_ConvNd):
    _tuple = staticmethod(_pair_of)
    _fn = staticmethod(F.conv2d)


class Conv1d(_ConvNd):
    _tuple = staticmethod(_single_of)
    _fn = staticmethod(F.conv1d)


class Conv3d(_ConvNd):
    _tuple = staticmethod(_triple_of)
    _fn = staticmethod(F.conv3d)


class _ConvTransposeNd(Module):
    """ConvTranspose1d/2d: weight (in_channels, out_channels / groups, *kernel_size), PyTorch's init."""
    _tuple = None
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError('Only "zeros" padding mode is supported for ' + type(self).__name__)
        t = type(self)._tuple
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride, self.padding = t(kernel_size), t(stride), t(padding)
        self.output_padding, self.dilation = t(output_padding), t(dilation)
        self.weight, self.bias = _default_parameters((in_channels, out_channels // groups, *self.kernel_size),
                                                     out_channels, bias, dtype)
        _place(self, device)

    def forward(self, x, output_size=None):
        output_padding = self._output_padding(x, output_size)
        return type(self)._fn(x, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                              self.dilation)

    def _output_padding(self, input, output_size):
        """PyTorch's: the output_padding that gives ``output_size`` (its spatial sizes, or with the
        batch / channel sizes in front), or the module's own when it is None."""
        if output_size is None:
            return self.output_padding
        nd = len(self.kernel_size)
        lead = 2 if input.ndim == nd + 2 else 1
        if len(output_size) == lead + nd:
            output_size = output_size[lead:]
        if len(output_size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must have {nd} or "
                             f"{lead + nd} elements (got {len(output_size)})")
        min_sizes = [(input.shape[d + lead] - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(nd)]
        max_sizes = [lo + self.stride[d] - 1 for d, lo in enumerate(min_sizes)]
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {min_sizes} "
                                 f"to {max_sizes} (for an input of {input.shape[2:]})")
        return tuple(int(output_size[d]) - min_sizes[d] for d in range(nd))

    def extra_repr(self):
        zero, one = (0,) * len(self.kernel_size), (1,) * len(self.kernel_size)
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != zero:
            s += f", padding={self.padding}"
        if self.dilation != one:
            s += f", dilation={self.dilation}"
        if self.output_padding != zero:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + ("" if self.bias is not None else ", bias=False")


class ConvTranspose2d(_ConvTransposeNd):
    _tuple = staticmethod(_pair_of)
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose1d(_ConvTransposeNd):
    _tuple = staticmethod(_single_of)
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose3d(_ConvTransposeNd):
    _tuple = staticmethod(_triple_of)
    _fn = staticmethod(F.conv_transpose3d)


class MaxPool2d(Module):
    _fn = staticmethod(F.max_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation, self.ceil_mode = padding, dilation, ceil_mode
        self.return_indices = return_indices

    def forward(self, x):
        return type(self)._fn(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                              self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    _fn = staticmethod(F.avg_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride if stride is not None else kernel_size, padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def forward(self, x):
        return type(self)._fn(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                              self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool3d(MaxPool2d):
    _fn = staticmethod(F.max_pool3d)


class AvgPool3d(AvgPool2d):
    _fn = staticmethod(F.avg_pool3d)


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = ns, eps, elementwise_affine
        self.weight = Parameter(factories.ones(*ns, dtype=dtype)) if elementwise_affine else None
        self.bias = Parameter(factories.zeros(*ns, dtype=dtype)) if elementwise_affine and bias else None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class _NormBase(Module):
    """The parameters and buffers of batch and instance norm: ``weight``/``bias`` (``affine``),
    ``running_mean``/``running_var``/``num_batches_tracked`` (``track_running_stats``)."""

    def __init__(self, num_features, eps, momentum, affine, track_running_stats, dtype=None, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = Parameter(factories.ones(num_features, dtype=dtype)) if affine else None
        self.bias = Parameter(factories.zeros(num_features, dtype=dtype)) if affine and bias else None
        if track_running_stats:
            self.register_buffer("running_mean", factories.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", factories.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", factories.tensor(0))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self):
        if self.track_running_stats:
            with _no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()


class _BatchNorm(_NormBase):
    """BatchNorm over dim 1 (``F.batch_norm``), with PyTorch's parameters and buffers
    (``momentum=None``: a cumulative average)."""
    _dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype, bias)

    def forward(self, x):
        if x.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {x.ndim}D input)")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with _no_grad():
                self.num_batches_tracked.add_(1)      # under @gradc.compile: a write done at each call
            if self.momentum is None:                 # the cumulative average
                if getattr(x, "_data", None) is None:
                    factor = 1.0 / self.num_batches_tracked.to(self.running_mean.dtype)
                else:
                    factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(x, self.running_mean if keep else None, self.running_var if keep else None,
                            self.weight, self.bias, use_batch, factor, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    _dims = (5,)


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, bias=True, dtype=None):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.weight = Parameter(factories.ones(num_channels, dtype=dtype)) if affine else None
        self.bias = Parameter(factories.zeros(num_channels, dtype=dtype)) if affine and bias else None

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.bias is not None}"


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = ns, eps, elementwise_affine
        self.weight = Parameter(factories.ones(*ns, dtype=dtype)) if elementwise_affine else None

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size, self.mode, self.align_corners = size, mode, align_corners
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, x):
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class _AdaptiveAvgPool(Module):
    _fn = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return type(self)._fn(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPool):
    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPool):
    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPool):
    _fn = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPool(_AdaptiveAvgPool):
    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, x):
        return type(self)._fn(x, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    _fn = staticmethod(F.adaptive_max_pool3d)


class AvgPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        from ..compositions import _single
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding, self.ceil_mode, self.count_include_pad = _single(padding), ceil_mode, count_include_pad

    def forward(self, x):
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool1d(MaxPool2d):
    _fn = staticmethod(F.max_pool1d)


class PixelShuffle(Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, x):
        return F.pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, x):
        return F.pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class Unfold(Module):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, x):
        return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"


class Fold(Unfold):
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = output_size

    def forward(self, x):
        return F.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return f"output_size={self.output_size}, " + super().extra_repr()


class PairwiseDistance(Module):
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace)


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        if sparse:
            raise NotImplementedError("gradc.nn.Embedding: sparse=True is not supported")
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise AssertionError("Padding_idx must be within num_embeddings")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx + num_embeddings if padding_idx is not None and padding_idx < 0 else padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = max_norm, norm_type, scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(factories.empty((num_embeddings, embedding_dim), dtype=dtype))
            init.normal_(self.weight)
            if self.padding_idx is not None:
                with _no_grad():
                    self.weight[self.padding_idx] = 0.0
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        return s


class EmbeddingBag(Module):
    """Bags of embeddings reduced by sum / mean / max (``F.embedding_bag``), PyTorch's arguments."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None):
        super().__init__()
        if sparse:
            raise NotImplementedError("gradc.nn.EmbeddingBag: sparse=True is not supported")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < num_embeddings, "padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -num_embeddings, "padding_idx must be within num_embeddings"
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(factories.empty((num_embeddings, embedding_dim), dtype=dtype))
            init.normal_(self.weight)
            if padding_idx is not None:
                with _no_grad():
                    self.weight[padding_idx] = 0.0
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode='{self.mode}'"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class Sequential(Module):
    """Layers applied in order; ``Sequential(OrderedDict(name=layer, ...))`` names them."""

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], OrderedDict):
            for name, layer in layers[0].items():
                self.add_module(name, layer)
        else:
            for i, layer in enumerate(layers):
                self.add_module(str(i), layer)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Sequential(OrderedDict(list(self._modules.items())[i]))
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range")
        return list(self._modules.values())[i]

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""

    def forward(self, x):
        return F.relu(x, self.inplace)


class Tanh(Module):
    def forward(self, x):
        return x.tanh()


class Sigmoid(Module):
    def forward(self, x):
        return x.sigmoid()


class SiLU(ReLU):
    def forward(self, x):
        return F.silu(x, self.inplace)


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope, self.inplace)


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)


class LogSigmoid(Module):
    def forward(self, x):
        return F.logsigmoid(x)


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")

    def forward(self, x):
        return F.elu(x, self.alpha, self.inplace)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def extra_repr(self):
        return f"approximate={self.approximate!r}"

    def forward(self, x):
        return F.gelu(x, self.approximate)


class _Loss(Module):
    """A loss module: ``forward(input, target)`` is its functional form with the module's options
    (printed as ``MSELoss()``, options not shown, as PyTorch's)."""
    _fn = None

    _buffer_options = ("weight", "pos_weight")

    def __init__(self, reduction="mean", **options):
        super().__init__()
        self.reduction = reduction
        for name in self._buffer_options:
            if name in options:
                self.register_buffer(name, options.pop(name))   # state: in state_dict, moved by to()
        self._opts = options

    def forward(self, input, target):
        buffers = {name: getattr(self, name) for name in self._buffer_options if name in self._buffers}
        return type(self)._fn(input, target, reduction=self.reduction, **buffers, **self._opts)


class MSELoss(_Loss):
    _fn = staticmethod(F.mse_loss)


class L1Loss(_Loss):
    _fn = staticmethod(F.l1_loss)


class SmoothL1Loss(_Loss):
    _fn = staticmethod(F.smooth_l1_loss)

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction, beta=beta)


class HuberLoss(_Loss):
    _fn = staticmethod(F.huber_loss)

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction, delta=delta)


class KLDivLoss(_Loss):
    _fn = staticmethod(F.kl_div)

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(reduction, log_target=log_target)
        self.log_target = log_target


class MarginRankingLoss(_Loss):
    _fn = staticmethod(F.margin_ranking_loss)

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction, margin=margin)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps, self.swap,
                                     reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    _fn = staticmethod(F.cross_entropy)

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(reduction, weight=weight, ignore_index=ignore_index, label_smoothing=label_smoothing)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing


class NLLLoss(_Loss):
    _fn = staticmethod(F.nll_loss)

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(reduction, weight=weight, ignore_index=ignore_index)
        self.ignore_index = ignore_index


class NLLLoss2d(NLLLoss):
    """PyTorch's old name of NLLLoss for (N, C, H, W) inputs, which NLLLoss takes (deprecated)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        warn_at_user_code("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and see "
                          "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.", FutureWarning)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class BCELoss(_Loss):
    _fn = staticmethod(F.binary_cross_entropy)

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction, weight=weight)


class BCEWithLogitsLoss(_Loss):
    _fn = staticmethod(F.binary_cross_entropy_with_logits)

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction, weight=weight, pos_weight=pos_weight)


class Identity(Module):
    def forward(self, x):
        return x


__all__ = ["Module", "Linear", "Sequential", "ReLU", "Tanh", "Sigmoid", "SiLU", "LeakyReLU", "Identity", "Tensor"]
