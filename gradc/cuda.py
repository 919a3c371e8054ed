"""gradc.cuda: availability checks; the PyCUDA runtime is optional (``pip install gradc[cuda]``)."""
from __future__ import annotations

_reason = None


def _probe():
    global _reason
    try:
        import pycuda.driver as drv  # noqa: F401
        drv.init()
        if drv.Device.count() == 0:
            _reason = "no CUDA device was found"
            return False
        return True
    except ImportError:
        _reason = "PyCUDA is not installed (pip install 'gradc[cuda]')"
    except Exception as e:  # driver missing or broken
        _reason = f"the CUDA driver could not be initialised ({e})"
    return False


def is_available() -> bool:
    return _probe()


def device_count() -> int:
    if not _probe():
        return 0
    import pycuda.driver as drv
    return drv.Device.count()


def require_cuda():
    """Raise a clear error naming what is missing for device='cuda'."""
    if not _probe():
        raise RuntimeError(f"gradc cannot use device 'cuda': {_reason}. Eager CUDA tensors need an NVIDIA GPU "
                           "and PyCUDA; install with pip install 'gradc[cuda]'.")
    raise NotImplementedError("gradc's eager CUDA tensors are not implemented yet (see issue 6); "
                              "@gradc.compile PTX output is available without a GPU")
