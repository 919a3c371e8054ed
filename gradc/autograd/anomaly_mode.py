"""Anomaly detection: ``detect_anomaly``, ``set_detect_anomaly``, ``is_anomaly_enabled``.

As in PyTorch: while enabled, every graph node records the Python stack of the forward call
that made it; an error raised in a node's backward is preceded by a warning showing that
stack, and with ``check_nan`` a node returning a gradient with NaNs raises
"Function 'DivBackward0' returned nan values in its 1th output.". The backward engine reads
``_state`` (fast paths are skipped while it is on).
"""
from __future__ import annotations

from .._warnings import warn_at_user_code
import os
import traceback

import numpy as np


class _State:
    enabled = False
    check_nan = True


_state = _State()
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_anomaly_enabled() -> bool:
    return _state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _state.check_nan


def _set(enabled: bool, check_nan: bool) -> None:
    _state.enabled = bool(enabled)
    _state.check_nan = bool(check_nan)


class detect_anomaly:
    """Context manager (and decorator) enabling anomaly detection inside it."""

    def __init__(self, check_nan: bool = True):
        self.prev, self.prev_check_nan = _state.enabled, _state.check_nan
        self.check_nan = check_nan
        warn_at_user_code("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                          "be enabled for debugging.")

    def __enter__(self):
        _set(True, self.check_nan)

    def __exit__(self, *exc):
        _set(self.prev, self.prev_check_nan)
        return False

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Enable or disable anomaly detection now; as a context manager, restore on exit."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev, self.prev_check_nan = _state.enabled, _state.check_nan
        _set(mode, check_nan)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _set(self.prev, self.prev_check_nan)
        return False


def forward_stack() -> list:
    """The user's frames of the current Python stack (gradc's own frames left out)."""
    frames = traceback.extract_stack()[:-1]
    return [f for f in frames if not os.path.abspath(f.filename).startswith(_PACKAGE_DIR)]


def warn_error_in(node) -> None:
    """The warning PyTorch gives before an error raised in ``node``'s backward propagates."""
    stack = getattr(node, "_anomaly_stack", None)
    where = "".join(traceback.format_list(stack)) if stack else (
        "No forward pass information available. Enable detect anomaly during forward pass for more information.")
    warn_at_user_code(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n{where}")


def check_nan(node, grads) -> None:
    """PyTorch's error for a node's backward that returned a gradient with NaNs."""
    for i, g in enumerate(grads):
        if g is None or not g.dtype.is_floating_point:
            continue
        data = g.detach().cpu().numpy() if g._device.type != "cpu" else g._data
        if np.isnan(data).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
