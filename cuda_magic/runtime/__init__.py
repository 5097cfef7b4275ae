"""Runtime: in-memory module loading, Kernel objects, argument marshalling, launch, timing.

Only this layer needs a driver, and only when a kernel is loaded or launched.
"""

from .. import lazy
from ..errors import ArgumentError, ArgumentRangeError, BenchError, CudaError, HistoryError, NoGPUError
from .measure.ab import AB, ab
from .measure.bench import Timing
from .driver import driver_version, lost
from .hang.waiting import set_launch_timeout, synchronize
from .measure.history import History, clear_history, history
from .launch.kernel import Kernel
from .measure.peaks import device_info
from .launch.params import SCALARS, Param, Scalar, canonical_type
from .helper.worker import isolate

# what cuda_magic exports from here (its errors are in errors.py; Param, Scalar, SCALARS,
# canonical_type, driver_version: import them from here)
__all__ = ["Kernel", "isolate", "lost", "synchronize", "set_launch_timeout", "Timing", "AB", "ab", "History", "history",
           "clear_history", "device_info", "Profile", "Check", "report_dir", "close_pools", "tma",
           "TensorMap", "Timeline", "remote", "remote_gpus"]

# loaded when first used: the Nsight Compute and compute-sanitizer reports and runs, the sweeps,
# the timeline, remote GPUs
_LAZY = {"Profile": "nsight.ncu_report", "Check": "nsight.sanitizer_report", "report_dir": "nsight.run",
         "close_pools": "sweep", "tma": "tensormap", "TensorMap": "tensormap",
         "Timeline": "measure.timeline", "remote": "remote", "remote_gpus": "remote"}

__getattr__ = lazy.loader(globals(), _LAZY)
