"""``warn_at_user_code``: a warning attributed to the first caller outside gradc.

PyTorch's warnings come from C++ and point at the Python line that called the op; a gradc
warning raised deep in an op's NumPy reference would otherwise point into gradc.
"""
from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep

# PyTorch's TORCH_WARN_ONCE: such warnings are issued once per process, or every time after
# ``torch.set_warn_always(True)``
warned_once: set = set()
_warn_always = [False]


def set_warn_always(b) -> None:
    _warn_always[0] = bool(b)


def is_warn_always_enabled() -> bool:
    return _warn_always[0]


def first_time(key) -> bool:
    """Whether a TORCH_WARN_ONCE warning ``key`` is to be issued now (and note that it was)."""
    if _warn_always[0]:
        return True
    if key in warned_once:
        return False
    warned_once.add(key)
    return True


def warn_at_user_code(message: str, category=UserWarning, *, with_held_output=False) -> None:
    """``with_held_output``: a warning about something printed, issued when what is printed is
    (``held_output``: dropped with it if a failed trace's output is dropped)."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    if with_held_output and frame is not None:
        from .held_output import defer
        where = (frame.f_code.co_filename, frame.f_lineno, frame.f_globals.get("__name__"),
                 frame.f_globals.setdefault("__warningregistry__", {}))
        if defer(lambda: warnings.warn_explicit(message, category, where[0], where[1], module=where[2],
                                                registry=where[3])):
            return
    warnings.warn(message, category, stacklevel=level)
