"""Grad mode: no_grad, enable_grad, set_grad_enabled and inference_mode (context managers and
decorators), per thread."""
from __future__ import annotations

import functools
import threading

class _State(threading.local):
    """Per-thread grad mode.  The class default makes a thread that never set it read True
    without the AttributeError that ``getattr(local, name, default)`` raises and catches
    inside (0.67 us per check against 0.08 here; every eager op and compiled call checks).
    ``enabled``: whether ops are recorded; ``mode``: the grad mode set, which differs only in
    inference mode: it records nothing, even inside ``enable_grad`` (which PyTorch reports)."""
    enabled = True
    mode = True
    inference_modes = ()     # the modes of the inference_mode blocks entered, innermost last


_state = _State()


def is_grad_enabled() -> bool:
    """Whether ops are recorded now (what gradc's own code asks)."""
    return _state.enabled


def grad_mode_setting() -> bool:
    """The grad mode set (``torch.is_grad_enabled``): True inside ``enable_grad`` in inference
    mode too, where nothing is recorded."""
    return _state.mode


def _set(enabled: bool) -> None:
    _state.mode = enabled = bool(enabled)
    _state.enabled = enabled and not is_inference_mode_enabled()


class _GradModeContext:
    _target = True

    def __enter__(self):
        self._prev = grad_mode_setting()
        _set(self._target)
        return None

    def __exit__(self, *exc):
        _set(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradModeContext):
    """Disable gradient recording (``with gradc.no_grad():`` or ``@gradc.no_grad()``)."""
    _target = False

    def __new__(cls, fn=None):
        self = super().__new__(cls)
        if callable(fn):  # bare @no_grad
            return self(fn)
        return self

    def __init__(self, fn=None):
        pass


class enable_grad(no_grad):
    """Enable gradient recording inside a no_grad region."""
    _target = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode now (like PyTorch, it takes effect on construction) and restore on exit."""

    def __init__(self, mode: bool):
        self._prev = grad_mode_setting()
        self._target = bool(mode)
        _set(mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _set(self._prev)
        return False

    def __call__(self, fn):
        _set(self._prev)
        mode = self._target

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper


def is_inference_mode_enabled() -> bool:
    """Whether the innermost ``inference_mode`` block (if any) enabled it."""
    modes = _state.inference_modes
    return bool(modes and modes[-1])


class inference_mode(_GradModeContext):
    """``with gradc.inference_mode():`` (or ``@gradc.inference_mode()``, or bare
    ``@gradc.inference_mode``): no gradient recording, as ``no_grad``, and every tensor made
    inside (other than a view of a normal tensor) is an inference tensor, as PyTorch's: it has no
    version counter, cannot be saved for backward, and cannot be changed in place (or made to
    require grad) outside inference mode.  ``inference_mode(False)`` enables grad mode, and the
    tensors made inside it are normal ones."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):  # bare @inference_mode
            self._mode = True
            return self(mode)
        return self

    def __init__(self, mode=True):
        if not callable(mode):
            self._mode = bool(mode)

    def __enter__(self):
        from ..tensor import push_inference_counter
        self._prev = grad_mode_setting()
        _state.inference_modes += (self._mode,)
        _set(not self._mode)
        push_inference_counter(self._mode)
        return None

    def __exit__(self, *exc):
        from ..tensor import pop_inference_counter
        pop_inference_counter()
        _state.inference_modes = _state.inference_modes[:-1]
        return super().__exit__(*exc)

    def __call__(self, fn):
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return wrapper
