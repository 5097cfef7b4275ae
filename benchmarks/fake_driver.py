"""A stand-in for ``cuda.bindings.driver`` and for CuPy/PyTorch arrays, to run the launch path on
a machine with no GPU: ``cuLaunchKernel`` does nothing (or calls ``on_launch``), device memory
is host memory.  It measures and tests the Python side of ``k[grid, block](...)`` only.

    fake = install()            # driver.api() now returns the fake; uninstall(fake) undoes it
    fake.register(kernel)       # its parameter layout, as cuKernelGetParamInfo would give it
    x = FakeCupy(0x1000, "float32", (1024,))
"""

from __future__ import annotations

import ctypes
import enum
import time

import numpy as np

from cuda_magic.runtime import driver
from cuda_magic.runtime.launch.packer import natural_layout


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_INVALID_CONTEXT = 201
    CUDA_ERROR_NOT_READY = 600
    CUDA_ERROR_ILLEGAL_ADDRESS = 700


class _Handle(int):
    """A handle (CUkernel, CUlibrary, CUstream): an int, as cuda.bindings' handles convert."""


class FakeDriver:
    """The driver calls the runtime makes, answered on the host."""

    CUresult = CUresult

    class CUfunction_attribute:
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

    class CUevent_flags:
        CU_EVENT_DISABLE_TIMING = 2

    def __init__(self):
        self.layouts: dict[str, list] = {}     # symbol -> [(offset, size)]
        self.kernels: dict[int, str] = {}      # handle -> symbol
        self.memory: dict[int, ctypes.Array] = {}
        self.launches = 0
        self.on_launch = None                  # f(symbol, dims, params address) -> error code
        self.busy_until = 0.0                  # time.monotonic() until which the GPU is busy
        self.queries = 0                       # cuStreamQuery/cuEventQuery calls
        self.blocked = 0                       # blocking waits called while the GPU was busy

    def register(self, kernel) -> None:
        self.layouts[kernel.symbol] = natural_layout(kernel.params)

    # context and errors
    def cuDriverGetVersion(self):
        return (CUresult(0), 13000)

    def cuInit(self, flags):
        return (CUresult(0),)

    def cuDeviceGetCount(self):
        return (CUresult(0), 1)

    def cuDeviceGet(self, ordinal):
        return (CUresult(0), _Handle(0))

    def cuDevicePrimaryCtxRetain(self, dev):
        return (CUresult(0), _Handle(0xC0))

    def cuCtxSetCurrent(self, ctx):
        return (CUresult(0),)

    # waiting: work is "running" until busy_until (inf: a hang); a blocking wait called while
    # it runs is counted (the runtime must poll) and returns at once
    def _busy(self) -> bool:
        return time.monotonic() < self.busy_until

    def _blocking(self):
        self.blocked += self._busy()
        return (CUresult(0),)

    def cuCtxSynchronize(self):
        return self._blocking()

    def cuStreamSynchronize(self, stream):
        return self._blocking()

    def cuStreamQuery(self, stream):
        self.queries += 1
        return (CUresult.CUDA_ERROR_NOT_READY if self._busy() else CUresult(0),)

    def cuEventQuery(self, event):
        return self.cuStreamQuery(0)

    def cuEventCreate(self, flags):
        return (CUresult(0), _Handle(0xE000))

    def cuEventRecord(self, event, stream):
        return (CUresult(0),)

    def cuEventSynchronize(self, event):
        return self._blocking()

    def cuEventDestroy(self, event):
        return (CUresult(0),)

    def cuGetErrorString(self, err):
        return (CUresult(0), CUresult(err).name.encode())

    # modules
    def cuLibraryLoadData(self, image, *rest):
        return (CUresult(0), _Handle(0x1B))

    def cuLibraryGetModule(self, lib):
        return (CUresult(0), _Handle(0x3D))

    def cuLibraryUnload(self, lib):
        return (CUresult(0),)

    def cuLibraryGetKernel(self, lib, symbol):
        handle = _Handle(0x4000 + len(self.kernels))
        self.kernels[handle] = symbol.decode()
        return (CUresult(0), handle)

    def cuKernelGetFunction(self, handle):    # the CUfunction in the current context
        func = _Handle(0x8000 + int(handle))
        self.kernels[func] = self.kernels[handle]
        return (CUresult(0), func)

    def cuKernelGetParamInfo(self, handle, i):
        layout = self.layouts[self.kernels[handle]]
        if i >= len(layout):
            return (CUresult.CUDA_ERROR_INVALID_VALUE, 0, 0)
        return (CUresult(0), *layout[i])

    def cuKernelSetAttribute(self, attr, value, handle, dev):
        return (CUresult(0),)

    # memory: host buffers standing in for device memory
    def cuMemAlloc(self, nbytes):
        buf = ctypes.create_string_buffer(nbytes)
        self.memory[ctypes.addressof(buf)] = buf
        return (CUresult(0), ctypes.addressof(buf))

    def cuMemFree(self, ptr):
        self.memory.pop(int(ptr), None)
        return (CUresult(0),)

    def cuMemcpyHtoD(self, dst, src, nbytes):
        ctypes.memmove(dst, src, nbytes)
        return (CUresult(0),)

    def cuMemcpyDtoH(self, dst, src, nbytes):
        ctypes.memmove(dst, src, nbytes)
        return (CUresult(0),)

    # launching
    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        return _OK


_OK = (CUresult(0),)


class _CountingDriver(FakeDriver):
    """A FakeDriver whose launches are counted and may run ``on_launch`` (tests)."""

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launches += 1
        if self.on_launch is not None:
            err = self.on_launch(self.kernels[int(f)], (gx, gy, gz, bx, by, bz), int(params))
            if err:
                return (CUresult(err),)
        return _OK


class TimingDriver(_CountingDriver):
    """The stub plus what ``k.bench`` and ``peaks.device_info()`` call: events whose elapsed
    times are made up (a few µs, a little spread), the L2 flush's memset, streams, capture into
    graphs, an H200's attributes but a 4 MiB L2 (a small flush buffer).  Kernels need no
    :meth:`register`: their parameter layouts are read from the cubin loaded, as the driver
    reads them.  For the benchmarks' ``--fake-driver`` runs: they check that a script runs and
    prints its table, not what a GPU does."""

    ATTRIBUTES = {"COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0,
                  "MULTIPROCESSOR_COUNT": 132, "CLOCK_RATE": 1980000,
                  "MEMORY_CLOCK_RATE": 3201000, "GLOBAL_MEMORY_BUS_WIDTH": 6016,
                  "L2_CACHE_SIZE": 4 << 20}
    NAME = b"Fake GPU (stub driver)"

    def __init__(self):
        super().__init__()
        from cuda.bindings import driver as real     # its enums: no GPU needed to read them
        self.CUdevice_attribute, self.CUstream_flags = real.CUdevice_attribute, real.CUstream_flags
        self.CUstreamCaptureMode = real.CUstreamCaptureMode
        self.ticks = 0
        self.graphs: dict[int, int] = {}             # graph or its instance -> launches in it
        self.capturing: int | None = None            # launches captured so far

    def _handle(self) -> _Handle:
        self.ticks += 1
        return _Handle(0x90000 + self.ticks)

    def cuLibraryLoadData(self, image, *rest):
        from cuda_magic.compile.binary._cubin import cubin_entries
        for symbol, layout in cubin_entries(bytes(image)):
            if layout is not None:
                self.layouts.setdefault(symbol, list(layout))
        return super().cuLibraryLoadData(image, *rest)

    def cuDeviceGetAttribute(self, attr, dev):
        return (CUresult(0), self.ATTRIBUTES[attr.name.removeprefix("CU_DEVICE_ATTRIBUTE_")])

    def cuDeviceGetName(self, n, dev):
        return (CUresult(0), self.NAME)

    def cuDeviceGetPCIBusId(self, n, dev):
        return (CUresult(0), b"0000:00:00.0")

    def cuDeviceTotalMem(self, dev):
        return (CUresult(0), 141 << 30)

    def cuEventCreate(self, flags):
        return (CUresult(0), self._handle())

    def cuEventRecord(self, event, stream):
        return _OK

    def cuEventSynchronize(self, event):
        return self._blocking()

    def cuEventDestroy(self, event):
        return _OK

    def cuEventElapsedTime(self, start, end):
        self.ticks += 1
        return (CUresult(0), 0.004 * (1 + 0.01 * (self.ticks % 7)))

    def cuMemsetD8Async(self, ptr, value, n, stream):
        return _OK

    def cuLaunchKernel(self, *args):
        if self.capturing is not None:
            self.capturing += 1
            return _OK
        return super().cuLaunchKernel(*args)

    def cuStreamCreate(self, flags):
        return (CUresult(0), self._handle())

    def cuStreamDestroy(self, stream):
        return _OK

    def cuStreamBeginCapture(self, stream, mode):
        self.capturing = 0
        return _OK

    def cuStreamEndCapture(self, stream):
        g = self._handle()
        self.graphs[int(g)], self.capturing = self.capturing, None
        return (CUresult(0), g)

    def cuGraphInstantiate(self, graph, flags):
        ex = self._handle()
        self.graphs[int(ex)] = self.graphs[int(graph)]
        return (CUresult(0), ex)

    def cuGraphLaunch(self, ex, stream):
        self.launches += self.graphs[int(ex)]
        return _OK

    def cuGraphDestroy(self, graph):
        return _OK

    def cuGraphExecDestroy(self, ex):
        return _OK


def install_timing() -> TimingDriver:
    """:func:`install` with a :class:`TimingDriver`: launches, ``k.bench`` and device figures
    run on the CPU (uninstall() undoes it)."""
    base = install()
    fake = TimingDriver()
    fake.saved = base.saved
    driver._state["api"] = fake
    return fake


class FakeLaunchError(RuntimeError):
    """What the stand-in for CuPy's launchKernel raises (CuPy: CUDADriverError)."""


SCALE = r'''
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * a;
}
'''


def scale_on_host(symbol, dims, params) -> int:
    """An ``on_launch`` for :data:`SCALE`'s kernel: y = a * x on the host memory its pointer
    arguments hold (what the stub driver's allocations are)."""
    slot = [ctypes.c_void_p.from_address(params + 8 * i).value for i in range(4)]
    px, py = (ctypes.c_uint64.from_address(s).value for s in slot[:2])
    a = ctypes.c_float.from_address(slot[2]).value
    n = ctypes.c_int32.from_address(slot[3]).value
    x = np.ctypeslib.as_array((ctypes.c_float * n).from_address(px))
    y = np.ctypeslib.as_array((ctypes.c_float * n).from_address(py))
    y[:] = a * x
    return 0


def _ints_launch(fake: FakeDriver):
    """A stand-in for CuPy's ``cupy.cuda.driver.launchKernel`` (``driver.int_launch``): plain ints,
    raises on an error; for timing it does nothing, as the fake's cuLaunchKernel."""
    def launch_kernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        return None
    return launch_kernel


def _counting_ints_launch(fake: FakeDriver):
    """As CuPy's, through the fake's cuLaunchKernel, so launches are counted and run."""
    def launch_kernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        for v in (f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            if type(v) is not int and not isinstance(v, _Handle):
                raise TypeError(f"an integer is required, not {type(v).__name__}")
        err = fake.cuLaunchKernel(_Handle(f), gx, gy, gz, bx, by, bz, shared, stream, params,
                                  extra)[0]
        if err:
            raise FakeLaunchError(f"CUDA_ERROR {int(err)}")
    return launch_kernel


def install(counting: bool = False, ints: bool = False) -> FakeDriver:
    """Make ``driver.api()`` the fake (and its context current); returns it.  ``ints``: launch
    plans end in the stand-in for CuPy's launchKernel (as on a GPU with CuPy loaded), else in
    the fake's cuLaunchKernel."""
    fake = _CountingDriver() if counting else FakeDriver()
    fake.saved = {k: driver._state.get(k, False) for k in ("api", "ctx", "device", "lost",
                                                            "isolated", "int_launch")}
    driver._state.pop("ctx", None)
    driver._state["api"] = fake
    driver._state["int_launch"] = ((_counting_ints_launch if counting else _ints_launch)(fake)
                                   if ints else None)
    driver._state["lost"], driver._state["isolated"] = None, False
    driver._local.ready = False
    return fake


def uninstall(fake: FakeDriver) -> None:
    for k, v in fake.saved.items():
        if v is False and k in ("api", "ctx", "device", "int_launch"):    # absent before
            driver._state.pop(k, None)
        else:
            driver._state[k] = v
    driver._local.ready = False
    for key in [k for k, lib in driver._LIBRARIES.items() if lib.handle == 0x1B]:
        del driver._LIBRARIES[key]


# --- arrays that look like CuPy's and PyTorch's to the marshalling -------------------------------

def _strides(shape, itemsize):
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= n
    return tuple(reversed(out))


class _Memory:
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr

    def free(self):      # as cupy.cuda.memory.PooledMemory.free(): the pointer becomes 0
        self.ptr = 0


class _MemoryPointer:
    __slots__ = ("mem", "ptr")

    def __init__(self, mem, ptr):
        self.mem, self.ptr = mem, ptr


class FakeCupy:
    """What the marshalling reads of a ``cupy.ndarray``."""

    data = _c_contiguous = None  # class attributes, as the handler looks for them on the type
    __cuda_array_interface__ = None

    def __init__(self, ptr, dtype="float32", shape=(1024,), contiguous=True):
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        self.size = int(np.prod(self.shape))
        self._c_contiguous = contiguous
        self.data = _MemoryPointer(_Memory(ptr), ptr)
        strides = _strides(self.shape, self.dtype.itemsize)
        if not contiguous:
            strides = tuple(2 * s for s in strides)
        self.__cuda_array_interface__ = {"data": (ptr, False), "typestr": self.dtype.str,
                                         "shape": self.shape, "strides": strides, "version": 3}


FakeCupy.__module__ = "cupy._core.core"
FakeCupy.__name__ = FakeCupy.__qualname__ = "ndarray"


class _TorchDtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


TORCH_DTYPES = {name: _TorchDtype(name) for name in ("float32", "float64", "int32", "int64")}


class FakeTorch:
    """What the marshalling reads of a ``torch.Tensor``."""

    data_ptr = is_cuda = None   # class attributes, as the handler looks for them on the type

    def __init__(self, ptr, dtype="float32", shape=(1024,), contiguous=True, cuda=True):
        self._ptr, self.dtype, self.shape = ptr, TORCH_DTYPES[dtype], tuple(shape)
        self._contiguous, self.is_cuda = contiguous, cuda
        self._numel = int(np.prod(self.shape))

    def data_ptr(self):
        return self._ptr

    def is_contiguous(self):
        return self._contiguous

    def numel(self):
        return self._numel

    def free(self):             # as untyped_storage().resize_(0): the tensor has no memory
        self._ptr = 0


FakeTorch.__module__ = "torch"
FakeTorch.__name__ = FakeTorch.__qualname__ = "Tensor"
