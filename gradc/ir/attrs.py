"""Attribute values: what an op attribute may hold and how it is spelled in IR text.

An attribute value is one of

- ``int`` (printed ``3``, ``-1``), ``float`` (``repr``, so always with ``.`` or ``e``:
  ``1.0``, ``1e-05``; ``inf``, ``-inf``, ``nan`` spelled as such), ``bool``
  (``true``/``false``), ``str`` (``"float32"``, with ``\\"``, ``\\\\``, ``\\n``, ``\\t``
  and ``\\XX`` hex escapes), ``None`` (``none``);
- a list of attribute values (``[0, 1]``, ``[["slice", 0, none, 2], ["int", 1]]``);
- a dict of attribute values (``{a = 1, b = [2]}``), keys sorted.

NumPy scalars and tuples are accepted and normalised (``np.float32(0.5)`` -> ``0.5``,
``(1, 2)`` -> ``[1, 2]``). Attribute dicts print their keys sorted. In *argument* and
*function* attribute dicts a ``True`` value prints as a bare key (MLIR's unit
attribute): ``{gradc.requires_grad}``; the parser reads a bare key as ``True`` anywhere.
"""
from __future__ import annotations

import math
import re

import numpy as np

# A key that can be printed without quotes (MLIR's bare-id, dots allowed).
BARE_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*")


def normalize(value):
    """The canonical Python form of an attribute value; TypeError for unsupported values."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, np.ndarray):
        return normalize(value.tolist())
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"attribute dict keys must be strings, got {type(k).__name__}")
            out[k] = normalize(v)
        return out
    raise TypeError(f"unsupported attribute value of type {type(value).__name__}: {value!r}")


def is_valid(value) -> bool:
    try:
        normalize(value)
        return True
    except TypeError:
        return False


def format_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(float(x))


def format_string(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):02X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_key(key: str) -> str:
    return key if BARE_KEY_RE.fullmatch(key) else format_string(key)


def format_attr(value) -> str:
    """The IR spelling of one attribute value."""
    value = normalize(value)
    return _format(value)


def _format(value) -> str:
    if value is None:
        return "none"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return format_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_format(v) for v in value) + "]"
    if isinstance(value, dict):
        return format_attr_dict(value) or "{}"
    raise TypeError(f"unsupported attribute value {value!r}")  # pragma: no cover - normalize rejects it


def format_attr_dict(attrs: dict, unit: bool = False, strict: bool = True) -> str:
    """``{k1 = v1, k2 = v2}`` with sorted keys, or '' for an empty dict.

    With ``unit=True`` (argument and function attributes) a ``True`` value prints as a bare key.
    With ``strict=False`` an unsupported value prints as ``<<unprintable TYPE>>`` (which the
    parser rejects) instead of raising TypeError, so broken IR can still be shown.
    """
    if not attrs:
        return ""
    parts = []
    for k in sorted(attrs, key=str):
        try:
            v = normalize(attrs[k])
        except TypeError:
            if strict:
                raise
            parts.append(f"{format_key(str(k))} = <<unprintable {type(attrs[k]).__name__}>>")
            continue
        if unit and v is True:
            parts.append(format_key(k))
        else:
            parts.append(f"{format_key(k)} = {_format(v)}")
    return "{" + ", ".join(parts) + "}"
