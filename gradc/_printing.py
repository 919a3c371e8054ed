"""Tensor text formatting for gradc.

This module owns the print options (``set_printoptions``) and turns a NumPy
array into exactly the text PyTorch 2.x produces for ``repr(tensor)`` /
``str(tensor)``: element formatting (fixed, integer-valued and scientific
modes), column alignment, line wrapping, summarisation with ``...``, and the
``device=`` / ``dtype=`` / grad suffixes.  It never imports torch.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["tensor_repr", "set_printoptions", "get_printoptions"]


@dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


_OPTS = _PrintOptions()

# profile name -> (precision, threshold, edgeitems, linewidth)
_PROFILES = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}

_NUMPY_DTYPES = {
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "uint8": np.uint8,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "bool": np.bool_,
}

# dtypes PyTorch does not spell out in a non-empty tensor's repr
_IMPLICIT_INTEGRAL_DTYPES = ("int64", "bool")


def _default_float_name() -> str:
    """The default float dtype's name (``set_default_dtype``): a tensor of it prints no dtype."""
    from . import dtypes
    return dtypes.default_float.name


def set_printoptions(
    precision=None,
    threshold=None,
    edgeitems=None,
    linewidth=None,
    profile=None,
    sci_mode=None,
) -> None:
    """Set the print options; same semantics as ``torch.set_printoptions``.

    A ``profile`` ("default", "short" or "full") is applied first and the
    other arguments override it.  As in PyTorch, ``sci_mode`` is always
    assigned, so omitting it restores automatic choice of notation.
    """
    if profile is not None and profile in _PROFILES:
        (_OPTS.precision, _OPTS.threshold, _OPTS.edgeitems, _OPTS.linewidth) = _PROFILES[profile]
    if precision is not None:
        _OPTS.precision = precision
    if threshold is not None:
        _OPTS.threshold = threshold
    if edgeitems is not None:
        _OPTS.edgeitems = edgeitems
    if linewidth is not None:
        _OPTS.linewidth = linewidth
    _OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """Return the current options as keyword arguments for ``set_printoptions``."""
    return asdict(_OPTS)


class _Formatter:
    """Chooses one notation and one column width for all elements printed."""

    def __init__(self, values: np.ndarray, is_float: bool):
        # ``values`` is a flat array of the elements that will be shown.
        self.is_float = is_float
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not is_float:
            for value in values.tolist():
                self.width = max(self.width, len(str(value)))
            return

        shown = values[np.isfinite(values) & (values != 0)].astype(np.float64)
        if shown.size == 0:
            return  # only zeros, nan and inf: defaults apply, width stays 1
        magnitudes = np.abs(shown)
        smallest, largest = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        if _OPTS.sci_mode is None:
            with np.errstate(over="ignore"):
                ratio = largest / smallest
            self.sci_mode = bool(ratio > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4)
        else:
            self.sci_mode = _OPTS.sci_mode

        if self.sci_mode:
            spec, extra = f".{_OPTS.precision}e", 0
        elif self.int_mode:
            spec, extra = ".0f", 1  # room for the trailing "."
        else:
            spec, extra = f".{_OPTS.precision}f", 0
        for value in shown.tolist():
            self.width = max(self.width, len(format(value, spec)) + extra)

    def format(self, value) -> str:
        if not self.is_float:
            text = str(value)
        elif self.sci_mode:
            text = format(value, f"{self.width}.{_OPTS.precision}e")
        elif self.int_mode:
            text = format(value, ".0f")
            if math.isfinite(value):
                text += "."
        else:
            text = format(value, f".{_OPTS.precision}f")
        return text.rjust(self.width)


def _summarized_values(data: np.ndarray) -> np.ndarray:
    """Flat array of the elements that remain visible after summarisation."""
    edge = _OPTS.edgeitems
    if data.ndim == 0:
        return data.reshape(-1)
    if data.ndim == 1:
        if data.shape[0] > 2 * edge:
            # like PyTorch, data[-0:] is the whole vector when edgeitems == 0
            return np.concatenate((data[:edge], data[-edge:]))
        return data
    if not edge:
        return data.reshape(-1)[:0]
    rows = _visible_rows(data.shape[0], summarize=True)
    return np.concatenate([_summarized_values(data[i]) for i in rows if i is not None])


def _visible_rows(length: int, summarize: bool) -> list:
    """Row indices to print along one axis; ``None`` marks the ``...`` gap."""
    edge = _OPTS.edgeitems
    if summarize and length > 2 * edge:
        return list(range(edge)) + [None] + list(range(length - edge, length))
    return list(range(length))


def _vector_text(data: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    edge = _OPTS.edgeitems
    per_line = max(1, math.floor((_OPTS.linewidth - indent) / (fmt.width + 2)))
    if summarize and not edge:
        items = ["..."]
    elif summarize and data.shape[0] > 2 * edge:
        items = (
            [fmt.format(v) for v in data[:edge].tolist()]
            + [" ..."]
            + [fmt.format(v) for v in data[-edge:].tolist()]
        )
    else:
        items = [fmt.format(v) for v in data.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_text(data: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if data.ndim == 0:
        return fmt.format(data.item())
    if data.ndim == 1:
        return _vector_text(data, indent, summarize, fmt)
    parts = [
        "..." if i is None else _nested_text(data[i], indent + 1, summarize, fmt)
        for i in _visible_rows(data.shape[0], summarize)
    ]
    # sub-blocks of an n-d tensor are separated by n-2 blank lines
    separator = "," + "\n" * (data.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(parts) + "]"


def _body_text(data: np.ndarray, indent: int) -> str:
    summarize = data.size > _OPTS.threshold
    is_float = data.dtype.kind == "f"
    shown = _summarized_values(data) if summarize else data.reshape(-1)
    return _nested_text(data, indent, summarize, _Formatter(shown, is_float))


def _append_suffixes(text: str, suffixes: list, indent: int) -> str:
    # PyTorch's measure of the last line (it counts two more than its length)
    last_line_len = len(text) - text.rfind("\n") + 1
    pieces = [text]
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > _OPTS.linewidth:
            pieces.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            pieces.append(", " + suffix)
            last_line_len += len(suffix) + 2
    return "".join(pieces) + ")"


def _shape_text(shape) -> str:
    return str(tuple(int(n) for n in shape))


def tensor_repr(
    data: np.ndarray,
    dtype_name: str,
    *,
    device: str = "cpu",
    grad_suffix: str | None = None,
) -> str:
    """Return PyTorch's ``repr`` of a tensor holding ``data``.

    ``dtype_name`` is one of the keys of ``_NUMPY_DTYPES`` ("float32", "int64", "bool", ...);
    ``device`` is shown unless it is "cpu"; ``grad_suffix`` (for instance
    "requires_grad=True" or "grad_fn=<AddBackward0>") is appended last.
    """
    if dtype_name not in _NUMPY_DTYPES:
        raise ValueError(f"unsupported dtype for printing: {dtype_name!r}")
    data = np.asarray(data, dtype=_NUMPY_DTYPES[dtype_name])
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if device != "cpu":
        suffixes.append(f"device='{device}'")
    if data.size == 0:
        if data.ndim != 1:
            suffixes.append("size=" + _shape_text(data.shape))
        if dtype_name != _default_float_name():
            suffixes.append(f"dtype=torch.{dtype_name}")
        body = "[]"
    else:
        if not _OPTS.edgeitems:
            suffixes.append("size=" + _shape_text(data.shape))
        if dtype_name not in _IMPLICIT_INTEGRAL_DTYPES and dtype_name != _default_float_name():
            suffixes.append(f"dtype=torch.{dtype_name}")
        body = _body_text(data, indent)
    if grad_suffix:
        suffixes.append(grad_suffix)
    return _append_suffixes(prefix + body, suffixes, indent)
