"""The stub driver in every Python process started with this directory on PYTHONPATH: the Dask
workers and the helper processes of tests/runtime/test_remote.py and of
``benchmarks/bench_remote.py --fake-driver`` (a machine with no GPU).

Kernels run as benchmarks/fake_driver.py's ``scale`` (y = a * x on host memory), except for
values of ``a`` that stand for what a kernel can do wrong: -1 faults (an illegal address),
-2 hangs (the GPU stays busy), -3 runs for 30 seconds (a worker killed, Ctrl-C)."""

import ctypes
import sys
import time

try:
    import fake_driver as _fd
except ImportError:          # not a process of those tests
    _fd = None

if _fd is not None:
    _fake = _fd.install_timing()

    def _launch(symbol, dims, params):
        slot = ctypes.c_void_p.from_address(params + 16).value
        a = ctypes.c_float.from_address(slot).value
        if a == -1.0:
            return 700
        if a == -2.0:
            _fake.busy_until = float("inf")
            return 0
        if a == -3.0:
            time.sleep(30)
        return _fd.scale_on_host(symbol, dims, params)

    _fake.on_launch = _launch
    sys.modules["cuda_magic_fake"] = _fake
