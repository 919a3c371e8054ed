"""Where a compiled function's captured tensors come from, so each call reads the current one.

A compiled function that reaches tensors through a closure or a global (``model(x)`` in a
training loop's loss) takes them as implicit arguments (``ir/tracer.py``).  Holding on to the
tensor objects themselves is not enough: ``model.fc.weight = nn.Parameter(...)``, or rebinding
the global ``model`` to a new network, puts a *new* object where the function looks, and eager
code would use it.  PyTorch's dynamo guards on such "sources"; gradc does the same in a small way:

* ``find_paths(fn, tensors)`` walks, breadth first, from the function's closure cells and the
  globals its code names (and, for a bound method or a callable object, from ``__self__``/the
  object) through functions' closures and globals, objects' ``__dict__`` (an ``nn.Module``'s
  ``_parameters``/``_buffers``/``_modules`` tables are plain dicts there), lists, tuples and
  dicts, and tensors' gradients (``p.grad``), and records the shortest access path to each
  captured tensor;
* ``resolve(fn, path)`` follows a path again at call time and returns what is there now (None
  when the path is broken).

A tensor no path reaches (made by a helper at trace time, say, or deep in a long list) keeps
being read from the object captured at trace time.  The walk is bounded (``MAX_OBJECTS``
objects, ``MAX_ITEMS`` per container) so tracing stays cheap.
"""
from __future__ import annotations

import types
from collections import deque
from itertools import islice

MAX_OBJECTS = 20000        # objects visited at most per trace
MAX_ITEMS = 256            # elements looked at per list, tuple, dict or __dict__ (a data set is no model)

# A path is a tuple of steps from a root: ("cell", i, name) a closure cell of the function being
# walked, ("global", name) a global its code names, ("self",) a bound method's object,
# ("attr", name) an entry of an object's __dict__, ("item", key) a list/tuple/dict element,
# ("len",) the length of the list/tuple/dict reached so far (a guard's value),
# ("self-code", "cell"|"global", ...) a closure cell or global of a callable object's forward.

_ATOMS = (str, bytes, int, float, complex, bool, type(None), type, types.ModuleType,
          types.BuiltinFunctionType, types.CodeType)


def _code_names(code) -> set:
    """Global names a code object and the code nested in it (lambdas, comprehensions) use."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


def _function_children(fn):
    """(step, value) for a Python function's closure cells and the globals its code names."""
    code = fn.__code__
    for i, cell in enumerate(fn.__closure__ or ()):
        try:
            yield ("cell", i, code.co_freevars[i]), cell.cell_contents
        except ValueError:              # an empty cell
            continue
    g = fn.__globals__
    for name in sorted(_code_names(code)):
        if name in g:
            yield ("global", name), g[name]


def _library(obj) -> bool:
    """gradc's own functions and classes hold no user tensors: the walk does not enter them."""
    return (getattr(obj, "__module__", None) or "").startswith("gradc.")


def _children(obj, tensor_type):
    if isinstance(obj, types.FunctionType):
        if not _library(obj):
            yield from _function_children(obj)
    elif isinstance(obj, types.MethodType):
        yield ("self",), obj.__self__
        yield from _children(obj.__func__, tensor_type)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj[:MAX_ITEMS]):
            yield ("item", i), v
    elif isinstance(obj, dict):
        for k, v in list(islice(obj.items(), MAX_ITEMS)):
            if isinstance(k, (str, int)):
                yield ("item", k), v
    elif isinstance(obj, tensor_type):     # a tensor leads only to its gradient (a compiled
        g = obj.__dict__.get("_grad")       # optimizer step reads p.grad, a new tensor each step)
        if g is not None:
            yield ("attr", "_grad"), g
    else:
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict):
            for k, v in list(islice(d.items(), MAX_ITEMS)):
                yield ("attr", k), v
            call = getattr(type(obj), "forward", None) or getattr(type(obj), "__call__", None)
            if isinstance(call, types.FunctionType) and not _library(call):   # what the object runs
                yield from (((("self-code",) + step), v) for step, v in _function_children(call))


def find_paths(fn, tensors, tensor_type, args=()) -> list:
    """For each tensor of ``tensors``, the shortest access path from ``fn`` (or from one of the
    call's object arguments ``args``: a module passed in) to it, or None."""
    want = {id(t): k for k, t in enumerate(tensors)}
    paths: list = [None] * len(tensors)
    left = len(want)
    if not left:
        return paths
    roots = [(fn, ())] + [(a, (("arg", j),)) for j, a in enumerate(args) if _is_object_argument(a, tensor_type)]
    seen = {id(r) for r, _ in roots}
    queue = deque(roots)
    visited = 0
    while queue and left and visited < MAX_OBJECTS:
        obj, path = queue.popleft()
        visited += 1
        try:
            children = list(_children(obj, tensor_type))
        except Exception:              # an odd object whose attributes cannot be listed
            continue
        for step, value in children:
            if id(value) in seen or isinstance(value, _ATOMS):
                continue
            seen.add(id(value))
            p = path + (step,)
            k = want.get(id(value))
            if k is not None and tensors[k] is value:
                paths[k] = p
                left -= 1
            queue.append((value, p))
    return paths


def _is_object_argument(a, tensor_type) -> bool:
    return not isinstance(a, (tensor_type,) + _ATOMS)


def resolve(fn, path, args=()):
    """What ``path`` leads to from ``fn`` (or the call's arguments ``args``) now, or None if a
    step is missing."""
    obj = fn
    try:
        for step in path:
            kind = step[0]
            if kind == "arg":
                obj = args[step[1]]
            elif kind == "self-code":          # a callable object's forward/__call__ code
                func = getattr(type(obj), "forward", None) or getattr(type(obj), "__call__", None)
                obj = _function_step(func, step[1:])
            elif kind in ("cell", "global"):
                obj = _function_step(obj.__func__ if isinstance(obj, types.MethodType) else obj, step)
            elif kind == "self":
                obj = obj.__self__
            elif kind == "attr":
                obj = obj.__dict__[step[1]]
            elif kind == "len":
                obj = len(obj)
            else:
                obj = obj[step[1]]
    except (AttributeError, KeyError, IndexError, TypeError, ValueError):
        return None
    return obj


def _function_step(fn, step):
    if step[0] == "cell":
        return fn.__closure__[step[1]].cell_contents
    return fn.__globals__[step[1]]


SCALARS = (bool, int, float, complex, str)
MAX_FUNCTIONS = 64         # functions looked into for scalar guards
MAX_SCALARS = 256


def scalar_guards(fn) -> list:
    """``(path, value)`` for the Python scalars (bool, int, float, complex, str) in the closure
    cells and the globals named by the code of ``fn`` and of the user functions it reaches that
    way (``loss_fn`` calling ``helper``): the trace baked them in, so ``@gradc.compile`` compares
    them at every call and recompiles when one changed (``temperature = 0.5`` after compiling),
    as PyTorch's dynamo does.  So are the scalars in the small dicts, lists, tuples and plain
    objects found there, two levels deep (``cfg["temperature"]``, ``opts.scale``, a list that
    ``gradc.tensor(w)`` read): ``CONFIG_ITEMS`` entries at most each, since a longer one is data,
    not configuration.  gradc's own objects (modules, whose scalars ``@gradc.compile`` guards
    when they are called, and tensors) are not looked into."""
    root = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if not isinstance(root, types.FunctionType):
        return []
    guards = []
    seen = {id(root)}
    queue = deque([(root, ())])
    while queue and len(seen) <= MAX_FUNCTIONS and len(guards) < MAX_SCALARS:
        func, path = queue.popleft()
        if _library(func):
            continue
        for step, value in _function_children(func):
            if type(value) in SCALARS:
                guards.append((path + (step,), value))
            elif isinstance(value, types.FunctionType) and id(value) not in seen:
                seen.add(id(value))
                queue.append((value, path + (step,)))
            else:
                _config_scalars(value, path + (step,), 1, guards)
    return guards[:MAX_SCALARS]


CONFIG_ITEMS = 32          # entries of a container or object whose scalars are guarded


def _config_entries(value):
    """(step, entry) of a small dict, list, tuple or plain user object, else ()."""
    if isinstance(value, dict):
        return [(("item", k), v) for k, v in value.items() if isinstance(k, (str, int))] \
            if len(value) <= CONFIG_ITEMS else ()
    if isinstance(value, (list, tuple)):
        return list(enumerate_items(value)) if len(value) <= CONFIG_ITEMS else ()
    if isinstance(value, _ATOMS) or callable(value) or any(
            (getattr(c, "__module__", None) or "").startswith("gradc.") for c in type(value).__mro__):
        return ()
    d = getattr(value, "__dict__", None)
    if not isinstance(d, dict) or len(d) > CONFIG_ITEMS:
        return ()
    return [(("attr", k), v) for k, v in d.items()]


def enumerate_items(seq):
    return ((("item", i), v) for i, v in enumerate(seq))


def _config_scalars(value, path, depth, guards):
    if depth > 2 or len(guards) >= MAX_SCALARS:
        return
    if isinstance(value, (list, tuple, dict)) and len(value) <= CONFIG_ITEMS:
        guards.append((path + (("len",),), len(value)))     # (len(state), a loop over it: baked in)
    for step, v in _config_entries(value):
        if type(v) in SCALARS:
            guards.append((path + (step,), v))
        elif not isinstance(v, _ATOMS):
            _config_scalars(v, path + (step,), depth + 1, guards)


_MODULE_TABLES = frozenset({"_parameters", "_buffers", "_non_persistent_buffers", "_modules", "_forward_pre_hooks",
                            "_forward_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                            "_forward_hooks_always_called", "_backward_hooks", "_backward_pre_hooks",
                            "_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                            "_load_state_dict_post_hooks"})


def module_config_guards(module) -> list:
    """``(path, value)`` of the Python scalars in a called module's small dicts, lists, tuples
    and plain objects (``self.cfg['act']`` in a forward), two levels deep, as ``scalar_guards``
    finds them behind a function; the path starts at the module. (Its own scalar attributes,
    ``training`` and the like, are guarded apart: ``ir.tracer.module_scalars``.)"""
    guards = []
    for name, value in module.__dict__.items():
        if name in _MODULE_TABLES or type(value) in SCALARS or isinstance(value, _ATOMS):
            continue
        _config_scalars(value, (("attr", name),), 1, guards)
    return guards[:MAX_SCALARS]
