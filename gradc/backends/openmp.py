"""``torch.backends.openmp``: gradc's CPU kernels run on its own thread pool (``codegen/native_pool.py``),
not OpenMP, so ``is_available()`` is False (PyTorch's CPU build, compiled with OpenMP, says True)."""
from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    return False
