"""PyTorch's argument parser errors: the TypeError a call with a wrong-typed argument gets.

PyTorch parses each call of a native function against the signatures it prints in its messages
(``sum(tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = None)``): one signature
gives a message about the first argument that does not fit (``transpose(): argument 'dim0'
(position 1) must be int, not float``), several give the list of them (``sum() received an invalid
combination of arguments - got (float), but expected one of: ...``).  This module ports that
parser (torch/csrc/utils/python_arg_parser.cpp, invalid_arguments.cpp) for the error path only.

The functions themselves stay cheap: they check their arguments with ``int_arg``, ``bool_arg``,
``dtype_arg`` and ``int_list`` (or ``norm_dim``), which raise a bare ``ArgumentError``; the
``parses`` decorator (or an inline ``except ArgumentError``) then calls ``check`` with the call's
arguments and the function's signatures, which raises PyTorch's message.  A signature is written
as PyTorch prints it, with two marks PyTorch does not print: ``tuple of ints[1]`` for a list that
also takes a single int (``IntArrayRef[1]``), and a trailing ``?`` on a type that takes None
without a default.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from .dtypes import bool_, dtype

__all__ = ["ArgumentError", "check", "match", "parses", "reparse", "function_signatures", "int_arg", "bool_arg", "dtype_arg", "device_arg", "number_arg",
           "int_list", "typename"]

_ALIASES = {"dim": "axis", "keepdim": "keepdims"}      # PyTorch's NumPy-style keyword names
# functions whose Tensor parameters also take a number (PyTorch's should_allow_numbers_as_tensors)
_NUMBERS_AS_TENSORS = frozenset(f"{name}{tail}" for name in (
    "add", "sub", "mul", "div", "divide", "multiply", "subtract", "true_divide", "floor_divide")
    for tail in ("", "_")) | {"to", "copy_"}


class ArgumentError(TypeError):
    """A wrong-typed argument found by a cheap check; ``check`` gives PyTorch's message for it."""


class ParsedError(ArgumentError):
    """PyTorch's message for a call whose arguments are wrong; a call that made it, parsed too,
    replaces it with its own where its own arguments are wrong (PyTorch parses the outer call first).
    A traceback names it TypeError, as PyTorch's."""


ParsedError.__name__ = ParsedError.__qualname__ = "TypeError"
ParsedError.__module__ = "builtins"


# ---- cheap checks (the functions' own) --------------------------------------------------------
def int_arg(value):
    """``value`` as an int where PyTorch's parser takes an ``int`` (not a bool, not a float)."""
    if type(value) is int:
        return value
    if _is_int(value):
        return int(value)
    raise ArgumentError(f"expected an int, got {typename(value)}")


def bool_arg(value):
    """``value`` where PyTorch's parser takes a ``bool`` (a Python bool: not a NumPy bool)."""
    if value is True or value is False:
        return value
    raise ArgumentError(f"expected a bool, got {typename(value)}")


def dtype_arg(value):
    """``value`` where PyTorch's parser takes a ``torch.dtype`` (a dtype or float, int, bool, complex)."""
    if value is None or isinstance(value, dtype) or type(value) is type and value in (float, int, bool, complex):
        return value
    raise ArgumentError(f"expected a dtype, got {typename(value)}")


def device_arg(value):
    """``value`` where PyTorch's parser takes a ``torch.device`` (a device, a str, an int, None)."""
    if value is None or _is_device(value):
        return value
    raise ArgumentError(f"expected a device, got {typename(value)}")


def number_arg(value):
    """``value`` where PyTorch's parser takes a ``Number`` (a Python or NumPy number, a 0-d tensor)."""
    if _is_number(value):
        return value
    raise ArgumentError(f"expected a number, got {typename(value)}")


def int_list(values) -> tuple:
    """A size or dims argument given as ints or as one tuple/list of them, as a tuple of ints."""
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        values = values[0]
    for v in values:
        if type(v) is not int:
            return _slow_int_list(values)
    return tuple(values)


def _slow_int_list(values) -> tuple:
    if not values or not _is_index(values[0]) or any(not _unpacks(v) for v in values):
        raise ArgumentError("expected ints")
    return tuple(int(v) for v in values)


# ---- PyTorch's type tests ---------------------------------------------------------------------
_TORCH_TYPE_NAMES = {"dtype": "torch.dtype", "device": "torch.device", "Size": "torch.Size",
                     "Generator": "torch._C.Generator"}


def typename(obj) -> str:
    """The name PyTorch's messages give ``obj``'s type (its C type name: ``numpy.float64``,
    ``torch.dtype``)."""
    t = type(obj)
    if t.__module__ == "numpy":
        return f"numpy.{t.__name__}"
    if t.__module__.startswith("gradc.") and t.__name__ in _TORCH_TYPE_NAMES:
        return _TORCH_TYPE_NAMES[t.__name__]
    return t.__name__


def _is_tensor(obj) -> bool:
    from .tensor_api import is_tensor_like
    return is_tensor_like(obj)


def _is_int(obj) -> bool:
    """THPUtils_checkLong, or a 0-d integer tensor that does not require grad."""
    if isinstance(obj, bool):
        return False
    if isinstance(obj, (int, np.integer)):
        return True
    return (_is_tensor(obj) and obj.ndim == 0 and not obj.dtype.is_floating_point
            and obj.dtype is not bool_ and not obj.requires_grad)


def _is_index(obj) -> bool:
    """The first element of an int list: an int, a NumPy integer, a one-element integer tensor."""
    if isinstance(obj, bool):
        return False
    if _is_tensor(obj):
        return obj.ndim == 0 and not obj.dtype.is_floating_point
    return hasattr(type(obj), "__index__")


def _unpacks(obj) -> bool:
    """A later element of an int list, which PyTorch unpacks with int(): a bool is one."""
    if _is_tensor(obj):
        return obj.numel() == 1 and not obj.dtype.is_floating_point
    return hasattr(type(obj), "__index__")


def _is_number(obj) -> bool:
    """THPUtils_checkScalar, or a 0-d tensor that does not require grad (python_arg_parser's SCALAR)."""
    if isinstance(obj, (int, float, complex, np.number, np.bool_)):
        return True
    return _is_tensor(obj) and obj.ndim == 0 and not obj.requires_grad


def _is_float(obj) -> bool:
    if isinstance(obj, (int, float, np.integer, np.floating)):
        return True
    return _is_tensor(obj) and obj.ndim == 0 and not obj.requires_grad


def _is_dtype(obj) -> bool:
    try:
        dtype_arg(obj)
    except ArgumentError:
        return False
    return obj is not None


def _is_device(obj) -> bool:
    from .tensor import device
    return isinstance(obj, (str, int, device)) and not isinstance(obj, bool)


def _is_tensor_list(obj) -> bool:
    return isinstance(obj, (tuple, list)) and all(_is_tensor(t) for t in obj)


def _is_generator(obj) -> bool:
    from .random_state import Generator
    return isinstance(obj, Generator)


_CHECKS = {
    "Tensor": _is_tensor, "int": _is_int, "bool": lambda o: isinstance(o, bool),
    "float": _is_float, "Number": _is_number, "torch.dtype": _is_dtype, "torch.device": _is_device,
    "str": lambda o: isinstance(o, str), "tuple of Tensors": _is_tensor_list, "torch.Generator": _is_generator,
    # options gradc takes no value of (its functions refuse the keyword itself)
    "torch.layout": lambda o: True, "torch.memory_format": lambda o: True,
}


# ---- signatures -------------------------------------------------------------------------------
class _Param:
    def __init__(self, text: str, keyword_only: bool):
        decl, _, default = text.partition(" = ")
        type_name, _, self.name = decl.rpartition(" ")
        self.optional = bool(default)
        self.allow_none = default == "None" or type_name.endswith("?")
        type_name = type_name.rstrip("?")
        self.size = 0
        if type_name.startswith("tuple of ints["):
            self.size = int(type_name[len("tuple of ints["):-1])
            type_name = "tuple of ints"
        self.type_name = type_name
        self.keyword_only = keyword_only
        self.printed = f"{type_name} {self.name}" + (f" = {default}" if default else "")
        if type_name != "tuple of ints" and type_name not in _CHECKS:
            raise ValueError(f"unknown parameter type {type_name!r}")

    def check(self, obj, numbers_as_tensors=False):
        """Whether ``obj`` fits, and the index of a list's element that does not (PyTorch's failed_idx)."""
        if numbers_as_tensors and self.type_name == "Tensor" and _is_number(obj):
            return True, -1
        if self.type_name != "tuple of ints":
            return _CHECKS[self.type_name](obj), -1
        if isinstance(obj, (tuple, list)):
            if not obj or _is_index(obj[0]):
                return True, -1
            return False, 0
        return self.size > 0 and _is_index(obj), -1


class _Signature:
    def __init__(self, text: str):
        inner = text[1:-1]
        self.params, keyword_only = [], False
        for part in inner.split(", ") if inner else []:
            if part == "*":
                keyword_only = True
            else:
                self.params.append(_Param(part, keyword_only))
        self.printed = "(" + ", ".join(self._printed_parts()) + ")"
        self.min_args = sum(not p.optional for p in self.params)
        self.max_args = len(self.params)
        self.max_pos_args = sum(not p.keyword_only for p in self.params)
        self.varargs = self.max_pos_args == 1 and self.params[0].type_name == "tuple of ints"

    def _printed_parts(self):
        star = False
        for p in self.params:
            if p.keyword_only and not star:
                star = True
                yield "*"
            yield p.printed

    def parse(self, name, args, kwargs, raise_exception):
        """PyTorch's FunctionSignature::parse: whether the call fits (raising its TypeError if asked)."""
        nargs = len(args)
        if nargs > self.max_pos_args and not (self.varargs and _is_index(args[0])):
            return _fail(raise_exception, self._extra_args(name, nargs))
        remaining = dict(kwargs)
        values, arg_pos = {}, 0
        for p in self.params:
            is_kwd = False
            if arg_pos < nargs:
                if p.keyword_only:
                    return _fail(raise_exception, self._extra_args(name, nargs))
                obj, found = args[arg_pos], True
            else:
                key = p.name if p.name in remaining else _ALIASES.get(p.name)
                found, is_kwd = key in remaining, True
                obj = remaining.pop(key) if found else None
            ok, failed_idx = p.check(obj, name in _NUMBERS_AS_TENSORS) if found and obj is not None else (False, -1)
            varargs_eligible = self.varargs and arg_pos == 0 and not is_kwd
            if (not found and p.optional) or (found and obj is None and p.allow_none):
                pass
            elif not found:
                return _fail(raise_exception, self._missing(name, p))
            elif ok:
                values[p.name] = obj
            elif varargs_eligible and _is_index(args[0]):
                values[p.name] = args
                arg_pos = nargs
                continue
            elif is_kwd:
                return _fail(raise_exception, f"{name}(): argument '{p.name}' must be {p.type_name}, not "
                                              f"{typename(obj)}")
            elif failed_idx != -1:
                seq = obj if isinstance(obj, (tuple, list)) else args
                return _fail(raise_exception, f"{name}(): argument '{p.name}' (position {arg_pos + 1}) must be "
                                              f"{p.type_name}, but found element of type "
                                              f"{typename(seq[failed_idx])} at pos {failed_idx}")
            else:
                return _fail(raise_exception, f"{name}(): argument '{p.name}' (position {arg_pos + 1}) must be "
                                              f"{p.type_name}, not {typename(obj)}")
            arg_pos += not is_kwd
        if remaining:
            return _fail(raise_exception, self._extra_kwargs(name, remaining, nargs))
        return values

    def _extra_args(self, name, nargs):
        if self.min_args != self.max_pos_args:
            return (f"{name}() takes from {self.min_args} to {self.max_pos_args} positional arguments but "
                    f"{nargs} were given")
        n = self.max_pos_args
        return (f"{name}() takes {n} positional argument{'' if n == 1 else 's'} but {nargs} "
                f"{'was' if nargs == 1 else 'were'} given")

    def _missing(self, name, first):
        missing = [p.name for p in self.params[self.params.index(first):] if not p.optional]
        return (f"{name}() missing {len(missing)} required positional arguments: "
                + ", ".join(f'"{m}"' for m in missing))

    def _extra_kwargs(self, name, remaining, nargs):
        names = [p.name for p in self.params]
        for key in remaining:
            if key not in names:
                return f"{name}() got an unexpected keyword argument '{key}'"
            return f"{name}() got multiple values for argument '{key}'"


def _fail(raise_exception, message):
    if raise_exception:
        raise TypeError(message)
    return None


@functools.lru_cache(maxsize=None)
def _signatures(texts: tuple) -> list:
    return [_Signature(t) for t in texts]


def _unpack_int_lists(name, sig, values):
    """PyTorch's conversion of a matched int list: an element past the first that is not an int."""
    for p in sig.params:
        seq = values.get(p.name)
        if p.type_name != "tuple of ints" or not isinstance(seq, (tuple, list)):
            continue
        for k, v in enumerate(seq):
            if k and not _unpacks(v):
                raise TypeError(f"{name}(): argument '{p.name}' failed to unpack the object at pos {k + 1} with "
                                f"error \"type must be tuple of ints,but got {typename(v)}\"")


def check(name, signatures, args, kwargs=None):
    """Raise PyTorch's TypeError for a call of ``name`` (``args`` without self) that fits none of
    ``signatures``; return quietly where the call fits one."""
    match(name, signatures, args, kwargs)


def match(name, signatures, args, kwargs=None):
    """The index of the first of ``signatures`` the call fits and its arguments by name (those
    given); PyTorch's TypeError where it fits none."""
    kwargs = kwargs or {}
    sigs = _signatures(tuple(signatures))
    for k, sig in enumerate(sigs):
        values = sig.parse(name, args, kwargs, False)
        if values is not None:
            _unpack_int_lists(name, sig, values)
            return k, values
    if len(sigs) == 1:
        sigs[0].parse(name, args, kwargs, True)
    n = len(args) + len(kwargs)
    plausible = [s for s in sigs if s.min_args <= n <= s.max_args]
    if len(plausible) == 1:
        plausible[0].parse(name, args, kwargs, True)
    raise TypeError(_invalid_combination(name, [s.printed for s in sigs], args, kwargs))


def parses(name, *signatures, method=True):
    """Decorate a method whose cheap checks raise ``ArgumentError``: the error becomes PyTorch's
    message for the call (``args[0]``, self, is not an argument in PyTorch's signatures of a
    method; ``method=False`` for a function such as a factory, whose first argument is one).  An inline
    form (``try: ... except ArgumentError: check(...); raise``) serves where a call must stay cheap."""
    def decorate(fn):
        skip = 1 if method else 0

        @functools.wraps(fn)
        def call(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except ArgumentError:
                reparse(name, signatures, args[skip:], kwargs)
                raise
            except TypeError as error:
                if error.__traceback__.tb_next is None or not _binds(fn, args, kwargs):
                    reparse(name, signatures, args[skip:], kwargs)     # (Python's own: fn's parameters do not bind)
                raise
        call.signatures = signatures        # (for forms that take the same arguments: x.eq_ of x.eq)
        call.parsed_method = method         # (functional.py: torch.name(x, ...) counts x in messages)
        return call
    return decorate


def _binds(fn, args, kwargs) -> bool:
    """Whether the call's arguments bind to ``fn``'s parameters (followed through wrappers: a
    decorator's own helpers may be what failed to bind them)."""
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return False
    except ValueError:          # (no signature to read: assume they bind)
        pass
    return True


def reparse(name, signatures, args, kwargs=None):
    """``parses``'s work inline (``except ArgumentError: reparse(...); raise``): PyTorch's TypeError
    for the call as a ``ParsedError`` (which a parsed caller replaces where its own arguments are
    wrong); nothing where the call fits a signature."""
    try:
        check(name, signatures, args, kwargs)
    except TypeError as error:      # (an outer parsed call may find its own arguments wrong)
        raise ParsedError(str(error)) from None


def function_signatures(signatures) -> tuple:
    """A method's signatures as its torch.* function's: ``Tensor input`` first."""
    return tuple("(Tensor input" + (", " + s[1:] if s != "()" else ")") for s in signatures)


# ---- "received an invalid combination of arguments" (invalid_arguments.cpp) ------------------
def _option(text):
    """The argument (name, type) pairs invalid_arguments.cpp reads from a printed signature
    (it splits at ", " and takes the last word as the name: ``bool keepdim = False`` is a
    parameter ``False`` of type ``bool keepdim =``, which nothing matches)."""
    out = []
    for arg in text[1:-1].split(", "):
        cut = arg.rfind(" ")
        out.append((arg[cut + 1:], arg if cut < 0 else arg[:cut]))
    return out


def _matches(type_name, obj) -> bool:
    name = typename(obj)
    if type_name == "float":
        return name in ("float", "int", "long")
    if type_name == "int":
        return name in ("int", "long")
    return name == type_name


def _described(obj) -> str:
    if isinstance(obj, (tuple, list)):
        inner = ", ".join(typename(v) for v in obj)
        if isinstance(obj, tuple):
            return f"{typename(obj)} of ({inner}{',' if len(obj) == 1 else ''})"
        return f"{typename(obj)} of [{inner}]"
    return typename(obj)


def _formatted_args(option, args, kwargs) -> str:
    out = "("
    for i in range(len(args) + len(kwargs)):
        is_kwarg = i >= len(args)
        name, type_name = option[i]
        obj = kwargs.get(name) if is_kwarg else args[i]
        mark = "" if _matches(type_name, obj) else "!"
        out += mark + (f"{name}=" if is_kwarg else "") + _described(obj) + mark + ", "
    if args:
        out = out[:-2]
    return out + ")"


def _args_desc(args, kwargs) -> str:
    out = "(" + "".join(f"{typename(a)}, " for a in args) + "".join(f"{k}={typename(v)}, " for k, v in kwargs.items())
    if args:
        out = out[:-2]
    return out + ")"


def _unmatched_kwargs(option, kwargs) -> list:
    names = [n for n, _ in option[max(len(option) - len(kwargs), 0):]]
    return [k for k in kwargs if k not in names]


def _invalid_combination(name, options, args, kwargs) -> str:
    msg = f"{name}() received an invalid combination of arguments - "
    if len(options) == 1:
        option = _option(options[0])
        unmatched = _unmatched_kwargs(option, kwargs)
        if unmatched:
            return msg + "got unrecognized keyword arguments: " + ", ".join(unmatched)
        count_ok = len(option) == len(args) + len(kwargs)
        got = _formatted_args(option, args, kwargs) if count_ok else _args_desc(args, kwargs)
        return msg + f"got {got}, but expected {options[0]}"
    msg += f"got {_args_desc(args, kwargs)}, but expected one of:\n"
    for text in options:
        option = _option(text)
        msg += f" * {text}\n"
        if len(option) != len(args) + len(kwargs):
            continue
        unmatched = _unmatched_kwargs(option, kwargs)
        if unmatched:
            msg += "      didn't match because some of the keywords were incorrect: " + ", ".join(unmatched) + "\n"
        else:
            msg += ("      didn't match because some of the arguments have invalid types: "
                    + _formatted_args(option, args, kwargs) + "\n")
    return msg
