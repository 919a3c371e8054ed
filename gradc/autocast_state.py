"""Autocast state and op policies: what ``gradc.autocast`` switches and what the ops do under it.

PyTorch's autocast is a dispatch key: ops on its lists get their floating inputs cast before they
run (and run with autocast excluded, so their pieces are not cast again), the others run as they
are. gradc has no dispatcher, so the user-level functions that are ATen ops on PyTorch's CPU lists
carry a decorator saying their policy:

- ``lower_precision``: matmul, mm, bmm, addmm, baddbmm, addbmm, linear, conv*, conv_transpose*, prelu,
  scaled_dot_product_attention, linalg.vecdot: float32 (and float16) inputs cast to the autocast
  dtype, float64 ones left alone;
- ``float32_precision``: the losses, prod, cdist, trace, inverse, pinverse, quantile, the 3-D pools,
  adaptive_max_pool3d, fractional_max_pool2d, linalg (cholesky, svd, svdvals, qr, eigh, solve, lstsq,
  matrix_rank, cond, ...), reflection/replication padding, grid_sample, max_unpool: float16 inputs
  cast to float32;
- ``autocast_excluded``: ATen ops that PyTorch runs in their inputs' dtype but gradc spells with a
  listed one (mv, dot, addmv, addr, outer, bilinear...): they run with autocast excluded, so
  their inner matmul is not cast.

Composite functions not listed (einsum, tensordot, inner, multi_dot, chain_matmul) reach matmul and
are cast there, as PyTorch's decompositions are. The state is per thread, as PyTorch's: enabled and
dtype per device type, the cache switch, the nesting depth and the weight cache (the float16 copies
of leaf tensors that require grad, made once per outermost autocast region).

gradc has no bfloat16 (NumPy has none): PyTorch's default CPU autocast dtype is bfloat16, so
``autocast("cpu")`` with no dtype raises an error naming it rather than computing in float16.

Under ``@gradc.compile`` (whose guard key holds ``guard_key()``) the IR has no float16: a cast to it
is emulated (``ir/tracer.emulated_half``: float32 values rounded to float16 after every op).
"""
from __future__ import annotations

import functools
import threading
import warnings

_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                 "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "mps", "hpu", "mtia", "maia", "ipu", "xla", "privateuseone")

NO_BFLOAT16 = ("gradc has no bfloat16 (NumPy has no such type), PyTorch's default CPU autocast dtype: "
               "pass dtype=gradc.float16 to autocast on the CPU")


class _State(threading.local):
    """Per-thread autocast state (class defaults: a new thread starts with autocast off)."""
    active = False          # some device's autocast is on and not excluded: what the op policies check
    excluded = 0            # depth of listed ops running (their inner ops are not cast again)
    cache_enabled = True
    nesting = 0

    def __init__(self):
        self.enabled = {}
        self.dtype = {}
        self.cache = {}


_state = _State()


def _default_dtype(device_type):
    from . import dtypes
    return None if device_type == "cpu" else dtypes.float16


def check_device_type(device_type) -> str:
    """``device_type`` as PyTorch parses it (a device string; its index ignored)."""
    if not isinstance(device_type, str):
        raise TypeError(f"expected a device type string, got {type(device_type).__name__}")
    kind = device_type.split(":")[0]
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: "
                           f"{device_type}")
    return kind


# whether any thread has ever turned autocast on: until then ``@gradc.compile``'s guard key
# takes None without reading the thread-local state (a compiled call's overhead is microseconds)
ever_active = [False]


def _refresh():
    _state.active = _state.excluded == 0 and any(_state.enabled.values())
    if _state.active:
        ever_active[0] = True


def guard_key():
    """What the autocast state changes in a traced program (part of ``@gradc.compile``'s guard key):
    None while autocast is off, else the enabled devices with their dtypes."""
    if not _state.active:
        return None
    return tuple(sorted((device, str(raw_autocast_dtype(device))) for device, on in _state.enabled.items() if on))


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for ``device_type`` (no argument: CUDA's, as ``torch.is_autocast_enabled()``)."""
    return bool(_state.enabled.get(check_device_type(device_type), False))


def set_autocast_enabled(device_type, enabled=None) -> None:
    """``set_autocast_enabled(device_type, enabled)``, or ``set_autocast_enabled(enabled)`` for CUDA."""
    position = 2
    if enabled is None:
        device_type, enabled, position = "cuda", device_type, 1
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position {position}) must be bool, not "
                        f"{type(enabled).__name__}")
    _state.enabled[check_device_type(device_type)] = enabled
    _refresh()


def get_autocast_dtype(device_type: str):
    """The dtype autocast casts to on ``device_type``; the CPU's default, bfloat16, is an error here."""
    dt = raw_autocast_dtype(device_type)
    if dt is None:
        raise RuntimeError(NO_BFLOAT16)
    return dt


def raw_autocast_dtype(device_type: str):
    """The dtype set for ``device_type``, None for the CPU's default (bfloat16, which gradc lacks)."""
    kind = check_device_type(device_type)
    return _state.dtype[kind] if kind in _state.dtype else _default_dtype(kind)


def set_autocast_dtype(device_type: str, dtype) -> None:
    from . import dtypes
    if dtype is not None and not isinstance(dtype, dtypes.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    _state.dtype[check_device_type(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_cache_enabled(): argument 'enabled' (position 1) must be bool, not "
                        f"{type(enabled).__name__}")
    _state.cache_enabled = enabled


def autocast_increment_nesting() -> int:
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    _state.nesting -= 1
    return _state.nesting


def clear_autocast_cache() -> None:
    _state.cache.clear()


def _deprecated(old: str, new: str, fn):
    """PyTorch's deprecated per-device spelling ``old`` of ``new``, with its DeprecationWarning."""
    def spelled(*args):
        warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=2)
        return fn(*args)
    spelled.__name__ = old.split("(")[0]
    spelled.__doc__ = f"Deprecated: ``{new}``."
    return spelled


DEPRECATED = {
    "is_autocast_cpu_enabled": _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')",
                                           lambda: is_autocast_enabled("cpu")),
    "set_autocast_cpu_enabled": _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)",
                                            lambda enabled: set_autocast_enabled("cpu", enabled)),
    "get_autocast_cpu_dtype": _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')",
                                          lambda: get_autocast_dtype("cpu")),
    "set_autocast_cpu_dtype": _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)",
                                          lambda dtype: set_autocast_dtype("cpu", dtype)),
    "get_autocast_gpu_dtype": _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')",
                                          lambda: get_autocast_dtype("cuda")),
    "set_autocast_gpu_dtype": _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)",
                                          lambda dtype: set_autocast_dtype("cuda", dtype)),
}


# --- casting -----------------------------------------------------------------------------------

def _cast_tensor(x, device_type, dtype):
    """``x`` cast to ``dtype`` if autocast may (a floating tensor of the device, not float64)."""
    from . import dtypes
    from .autograd.grad_mode import is_grad_enabled
    from .ops.dispatch import capturing
    from .tensor import Tensor
    if not x.dtype.is_floating_point or x.dtype is dtypes.float64 or x.dtype is dtype:
        return x
    device = getattr(x, "device", None)           # (an IR value has none: the trace's device is the CPU)
    if (device.type if device is not None else "cpu") != device_type:
        return x
    if dtype not in dtypes.COMPILED and (capturing or not isinstance(x, Tensor)):
        from .ir.tracer import emulated_half       # (traced: the IR has no float16, it is emulated)
        return emulated_half(x)
    cacheable = (_state.cache_enabled and dtype is raw_autocast_dtype(device_type) and x.dtype is dtypes.float32
                 and x.requires_grad and x.is_leaf and getattr(x, "_base", None) is None and is_grad_enabled())
    if not cacheable:
        return x.to(dtype)
    # (as PyTorch's cache, an entry is kept while the region lasts: an in-place change of the
    # parameter inside the region is not seen by the ops after it)
    hit = _state.cache.get(id(x))
    if hit is not None and hit[0] is x:
        return hit[1]
    y = x.to(dtype)
    _state.cache[id(x)] = (x, y)
    return y


def cast_value(value, device_type, dtype):
    """Tensors in ``value`` (a tensor, or lists, tuples and dicts of them) cast as autocast casts."""
    from .tensor_api import is_tensor_like
    if is_tensor_like(value):
        return _cast_tensor(value, device_type, dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(cast_value(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: cast_value(v, device_type, dtype) for k, v in value.items()}
    return value


def _target(policy, device_type):
    """The dtype ``policy`` casts to on ``device_type`` (the CPU's unset default, bfloat16: an error)."""
    from . import dtypes
    return get_autocast_dtype(device_type) if policy == "lower" else dtypes.float32


def _run(fn, policy, args, kwargs):
    """``fn(*args, **kwargs)`` with its inputs cast for each enabled device, its inner ops uncast."""
    if policy != "excluded":
        for device_type, on in list(_state.enabled.items()):
            dtype = _target(policy, device_type) if on else None
            if dtype is not None:
                args, kwargs = cast_value(args, device_type, dtype), cast_value(kwargs, device_type, dtype)
    with no_casts():
        return fn(*args, **kwargs)


class no_casts:
    """A region where the op policies cast nothing (the ops' VJP rules: backward ops run in the dtypes
    their forward ops ran in); ``is_autocast_enabled`` still reports the state set."""

    def __enter__(self):
        _state.excluded += 1
        _state.active = False

    def __exit__(self, *exc):
        _state.excluded -= 1
        _refresh()
        return False


def _policy(policy):
    def decorate(fn):
        @functools.wraps(fn)
        def under_autocast(*args, **kwargs):
            if not _state.active:
                return fn(*args, **kwargs)
            return _run(fn, policy, args, kwargs)
        return under_autocast
    return decorate


lower_precision = _policy("lower")
float32_precision = _policy("float32")
autocast_excluded = _policy("excluded")


def float32_precision_if(applies):
    """``float32_precision`` for the calls where ``applies(*args, **kwargs)``: a function that is
    several ATen ops, some listed (F.pad: reflection_pad1d/2d and replication_pad1d/2d/3d)."""
    def decorate(fn):
        cast = float32_precision(fn)

        @functools.wraps(fn)
        def under_autocast(*args, **kwargs):
            if _state.active and applies(*args, **kwargs):
                return cast(*args, **kwargs)
            return fn(*args, **kwargs)
        return under_autocast
    return decorate
