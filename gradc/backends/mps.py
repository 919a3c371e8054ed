"""``torch.backends.mps``: Apple's Metal backend, which gradc does not have: ``is_built()`` and
``is_available()`` are False, as on PyTorch's builds for other platforms."""
from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_built() -> bool:
    return False


def is_available() -> bool:
    return False
