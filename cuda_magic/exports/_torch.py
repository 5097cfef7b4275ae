"""The PyTorch side of an exported op package: what every generated op calls.

cuda-magic copies this file, unchanged, into a torch export beside ``_driver.py``; it imports
PyTorch and the driver module only.  The generated ``__init__`` checks each tensor inline (dtype,
device, contiguity: one line per tensor) and calls :func:`bad` only to say what was wrong.
"""

import torch

from . import _driver

__all__ = ["cdiv", "stream", "device", "bad", "dtype"]


def cdiv(a, b):
    """``a / b`` rounded up: the number of blocks of ``b`` that cover ``a``."""
    return -(-a // b)


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_get_device = getattr(torch._C, "_cuda_getDevice", None)      # current_device() less its checks


def stream(dev):
    """The handle of PyTorch's current stream on GPU ``dev`` (what CUDA-graph capture and
    ``torch.cuda.stream(...)`` set)."""
    if _raw_stream is not None:
        return _raw_stream(dev)
    return torch.cuda.current_stream(dev).cuda_stream


def device():
    """The current GPU (an op whose kernel takes no tensor launches there)."""
    return torch.cuda.current_device()


def dtype(name):
    """The torch dtype named ``name`` (``"float32"``), or None where this PyTorch lacks it."""
    return getattr(torch, name, None)


def bad(kernel, name, t, want, align, dev):
    """The TypeError (or ValueError) that says why tensor ``t`` cannot be parameter ``name``."""
    where = f"{kernel.name}({kernel.signature}): parameter '{name}'"
    if not isinstance(t, torch.Tensor):
        return TypeError(f"{where} takes a tensor, not {type(t).__name__}")
    if not t.is_cuda:
        return ValueError(f"{where} is on {t.device}; the kernel reads GPU memory: move it with "
                          f".cuda()")
    if dev is not None and t.get_device() != dev:
        return ValueError(f"{where} is on {t.device} but the first tensor is on cuda:{dev}: the "
                          f"kernel's tensors share one GPU")
    if want is not None and t.dtype != want:
        return TypeError(f"{where} takes {want} tensors, not {t.dtype}")
    if not t.is_contiguous():
        return ValueError(f"{where} is not contiguous: the kernel indexes a dense array "
                          f"(.contiguous() makes one)")
    if align and t.data_ptr() % align:
        return ValueError(f"{where}: its address is not a multiple of {align} bytes, which the "
                          f"kernel's vector type needs (a view that starts mid-vector)")
    return ValueError(f"{where}: cannot be passed")


def launch(kernel, dev, grid, block, shared, *values):
    """Launch on GPU ``dev`` on PyTorch's current stream there (the GPU made current for the
    launch when it is not)."""
    g, b = _driver.dims(grid, "grid"), _driver.dims(block, "block")
    if dev != (_get_device() if _get_device is not None else torch.cuda.current_device()):
        with torch.cuda.device(dev):
            kernel.launch(dev, *g, *b, shared, stream(dev), *values)
        return
    kernel.launch(dev, *g, *b, shared, stream(dev), *values)
