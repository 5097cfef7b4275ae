"""Runtime: in-memory module loading, Kernel objects, argument marshalling, launch, timing.

Only this layer needs a driver, and only when a kernel is loaded or launched.
"""

from .args import ArgumentError, ArgumentRangeError
from .bench import BenchError, Timing
from .driver import CudaError, NoGPUError, driver_version, lost, synchronize
from .bench_history import History, HistoryError, clear_history, history
from .kernel import Kernel
from .peaks import device_info
from .types import SCALARS, Param, Scalar, canonical_type
from .worker import isolate

__all__ = ["ArgumentError", "ArgumentRangeError", "CudaError", "Kernel",
           "NoGPUError", "Param", "Scalar", "SCALARS", "canonical_type", "driver_version",
           "isolate", "lost", "synchronize", "History", "Timing", "history",
           "BenchError", "HistoryError", "clear_history", "device_info"]
