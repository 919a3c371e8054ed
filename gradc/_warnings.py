"""``warn_at_user_code``: a warning attributed to the first caller outside gradc.

PyTorch's warnings come from C++ and point at the Python line that called the op; a gradc
warning raised deep in an op's NumPy reference would otherwise point into gradc.
"""
from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_at_user_code(message: str, category=UserWarning) -> None:
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
