"""gradc.cuda: the CUDA device, as ``torch.cuda``: availability, the device's name, synchronize.

The runtime is optional: PyCUDA and an NVIDIA GPU (``pip install 'gradc[cuda]'``), or the CPU
simulator with ``GRADC_CUDA_SIMULATOR=1`` (``codegen/cuda_driver.py``). Importing gradc never
needs either; asking for ``device='cuda'`` without them raises an error saying what to install.
"""
from __future__ import annotations

from ..codegen import cuda_driver


def is_available() -> bool:
    return cuda_driver.unavailable_reason() is None


def unavailable_reason() -> str | None:
    """Why CUDA cannot be used here (None when it can)."""
    return cuda_driver.unavailable_reason()


def device_count() -> int:
    return 1 if is_available() else 0


def current_device() -> int:
    require_cuda()
    return 0


def get_device_name(device=None) -> str:
    return require_cuda().device_name


def synchronize(device=None) -> None:
    """Wait until every kernel launched so far has finished."""
    if is_available():
        cuda_driver.driver().synchronize()


def require_cuda():
    """The CUDA driver, or a clear error naming what is missing for device='cuda'."""
    try:
        return cuda_driver.driver()
    except cuda_driver.CudaUnavailable as e:
        raise RuntimeError(f"gradc cannot use device 'cuda': {e}. CUDA tensors need an NVIDIA GPU and PyCUDA "
                           "(pip install 'gradc[cuda]'), or GRADC_CUDA_SIMULATOR=1 for the CPU simulator.") from None


from . import amp  # noqa: E402,F401  (torch.cuda.amp; after is_available, which it calls)
