"""``torch.nn.parallel``: ``DataParallel`` and ``data_parallel`` for one process.

With no CUDA device, PyTorch's DataParallel just calls the wrapped module (``device_ids`` is
``[]``); gradc does the same. With CUDA, one device (the only case gradc runs: it has no
multi-GPU scatter, replicate and gather) moves the module to ``device_ids[0]`` and calls it
there; several devices are refused with NotImplementedError.
"""
from __future__ import annotations

from ...autograd.profiler import record_function
from ..modules import Module

__all__ = ["DataParallel", "data_parallel"]


def _device_index(device):
    """A device id as an int (``cuda:1`` and ``1`` alike)."""
    from ... import cuda
    if isinstance(device, int):
        return device
    index = getattr(device, "index", None)
    return cuda.current_device() if index is None else index


def _check_on(module, device):
    for t in list(module.parameters()) + list(module.buffers()):
        if t.device != device:
            raise RuntimeError("module must have its parameters and buffers on device "
                               f"{device} (device_ids[0]) but found one of them on device: {t.device}")


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        from ... import cuda
        super().__init__()
        if not cuda.is_available():
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(d) for d in device_ids]
        self.output_device = _device_index(output_device)
        from ...tensor import device as _device
        self.src_device_obj = _device("cuda", self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        with record_function("DataParallel.forward"):
            if not self.device_ids:
                return self.module(*inputs, **kwargs)
            _check_on(self.module, self.src_device_obj)
            if len(self.device_ids) > 1:
                raise NotImplementedError("gradc: DataParallel over several devices is not supported")
            return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """The functional form: ``module(*inputs, **module_kwargs)`` on one device (CUDA) or the CPU."""
    from ... import cuda
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    if not cuda.is_available():
        raise RuntimeError("device type could not be determined")
    return DataParallel(module, device_ids, output_device, dim)(*inputs, **(module_kwargs or {}))
