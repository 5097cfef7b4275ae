"""A device buffer shaped like a NumPy array, owned by cuda-magic: what the helper processes
allocate for arguments they rebuild (a sweep's shared inputs, a tensor map's array copied to a
tool's launcher)."""

from __future__ import annotations

from . import driver
from .driver import api, check

__all__ = ["DeviceArray"]


class DeviceArray:
    """A device buffer shaped like a NumPy array, passed to kernels by pointer
    (``__cuda_array_interface__``): filled from the host or from another buffer on the GPU."""

    def __init__(self, shape, dtype, source=None):
        import numpy as np
        drv = api()
        driver.context()
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.ptr = check(drv.cuMemAlloc(max(self.nbytes, 1)), f"allocating {self.nbytes} bytes on the GPU")
        if isinstance(source, DeviceArray):
            check(drv.cuMemcpyDtoD(self.ptr, source.ptr, self.nbytes), "copying a device buffer")
        elif source is not None and self.nbytes:
            host = np.ascontiguousarray(source)
            check(drv.cuMemcpyHtoD(self.ptr, host.ctypes.data, self.nbytes), "uploading an array")

    @classmethod
    def upload(cls, host) -> "DeviceArray":
        return cls(host.shape, host.dtype, host)

    @classmethod
    def copy_of(cls, other: "DeviceArray") -> "DeviceArray":
        return cls(other.shape, other.dtype, other)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (int(self.ptr), False),
                "strides": None, "version": 3}

    def get(self):
        import numpy as np
        host = np.empty(self.shape, self.dtype)
        if self.nbytes:
            check(api().cuMemcpyDtoH(host.ctypes.data, self.ptr, self.nbytes), "reading an output")
        return host

    def free(self) -> None:
        if self.ptr is not None:
            api().cuMemFree(self.ptr)
            self.ptr = None

    def __del__(self):
        try:
            self.free()
        except Exception:       # at interpreter exit the driver may be gone
            pass
