"""cuda-magic: compile CUDA C++ in a notebook under a configuration you can see, and launch it.

``%load_ext cuda_magic`` registers ``%%cuda``, ``%%cuda_header``, ``%%cuda_compare``,
``%%cuda_tune`` and ``%cuda_config``.
Importing this package does not initialise CUDA.  The Python API::

    from cuda_magic import compile_source, sass, ptx
    r = compile_source(src, {"cuda": {"arch": "sm_90a"}})
    r.resources, r.argv, r.config.provenance, sass(r, "scale")
    view(r)                      # the tabbed view; show(r, "sass") prints text
    c = compare(src, arch="sm_90a", run="scale[1, 256](x, y, 0.5, 256)")   # FTZ off vs on
    t = tune(src, "block=[128, 256]", "scale[cdiv(n, block), block](x, y, 0.5, n)", arch="sm_90a")
"""

from .compile.arch import detect_arch
from .cell import CellError, Module, build, line_config
from .compile.backends import (Backend, CompileError, InputTypeError, ToolNotFoundError, get_backend,
                               list_backends, register_backend)
from .compile.compiler import (CompilationResult, NoKernelError, clear_cache, compile_resolved,
                               compile_source, resolve_layers, set_cache_dir, set_cache_limit)
from .compile.backends.limits import CompileTimeoutError, set_compile_timeout
from .compile.headers import define_header, remove_header, session_headers
from .compile.pch import clear as clear_pch
from .config import (BackendConfig, ConfigError, Resolved, canonical_json, from_json,
                     list_presets, register_preset, resolve, validate)
from .display import ShowError, ViewError, lines, show, view
from .errors import BenchError, Error, HistoryError
from .inspect.occupancy import OccupancyError
from . import settings
from .inspect import ptx, sass, sass_text
from .compile.ptxas import Resources, parse_ptxas
from .runtime import (ArgumentError, ArgumentRangeError, CudaError, Kernel, NoGPUError,
                      isolate, lost, synchronize)
from .runtime import History, Timing, history

__version__ = "0.1.0"

__all__ = [
    "Error", "ShowError", "ViewError", "NoKernelError", "InputTypeError", "lines",
    "ArgumentError", "ArgumentRangeError", "CellError", "Comparison", "CudaError",
    "Kernel", "RunError", "compare", "denormals", "ulp_distance",
    "Module", "NoGPUError", "build", "isolate", "line_config", "lost", "synchronize",
    "Backend", "BackendConfig", "CompilationResult", "CompileError", "ConfigError", "Resolved",
    "Resources", "ToolNotFoundError", "canonical_json", "clear_cache", "compile_resolved",
    "compile_source", "detect_arch", "from_json", "get_backend", "list_backends", "list_presets",
    "parse_ptxas", "ptx", "register_backend", "register_preset", "resolve", "resolve_layers",
    "sass", "sass_text", "set_cache_dir", "show", "validate", "view",
    "define_header", "remove_header", "session_headers", "clear_pch", "CompileTimeoutError",
    "set_compile_timeout", "set_cache_limit",
    "History", "Timing", "history", "Tuning", "tune",
    "BenchError", "HistoryError", "OccupancyError", "ProfilerPermissionError", "ToolRunError",
    "SweepError", "TuneError", "BinaryFormatError", "settings",
]


_LAZY = {"Comparison": "variants.comparison", "RunError": "variants.comparison", "compare": "variants.comparison",
         "denormals": "variants.numbers", "ulp_distance": "runtime.outputs",
         "tune": "variants.tune", "Tuning": "variants.tune",
         "BenchResult": "runtime.bench",        # Timing's old name: a deprecated alias
         "ProfilerPermissionError": "runtime.tools", "ToolRunError": "runtime.tools",
         "SweepError": "runtime.sweep", "TuneError": "variants.space",
         "BinaryFormatError": "compile.binary"}


def __getattr__(name: str):
    """Comparisons, sweeps and the number tools import NumPy, and the errors of the tools,
    sweeps, tuning and binaries come with their modules: loaded when first used, not at import."""
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cuda_magic' has no attribute {name!r}")


def load_ipython_extension(ip) -> None:
    """``%load_ext cuda_magic``: register ``%%cuda``, ``%%cuda_header``, ``%%cuda_compare``,
    ``%%cuda_tune`` and ``%cuda_config`` (CUDA stays untouched)."""
    from .magics import load
    load(ip)
