"""``gradc.cpu``: the CPU device module, as ``torch.cpu`` (always available, one device), and its
``amp`` spellings."""
from __future__ import annotations

from . import amp  # noqa: F401

__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU ops finish before they return."""
