"""cuda-magic: compile CUDA C++ in a notebook under a configuration you can see, and launch it.

``%load_ext cuda_magic`` registers ``%%cuda``, ``%%cuda_header``, ``%%cuda_compare``,
``%%cuda_tune``, ``%cuda_config`` and ``%cuda_export``.
Importing this package does not initialise CUDA.  The Python API::

    from cuda_magic import compile_source, sass, ptx
    r = compile_source(src, {"cuda": {"arch": "sm_90a"}})
    r.resources, r.argv, r.config.provenance, sass(r, "scale")
    view(r)                      # the tabbed view; show(r, "sass") prints text
    c = compare(src, arch="sm_90a", run="scale[1, 256](x, y, 0.5, 256)")   # FTZ off vs on
    t = tune(src, "block=[128, 256]", "scale[cdiv(n, block), block](x, y, 0.5, n)", arch="sm_90a")
    export(m, "torch", "ops/scale_ops", grid="cdiv(n, 256)", block=256)   # a PyTorch op package
"""

from . import _version, cell, compile, config, correctness, display, errors, exports, inspect, lazy, runtime, settings, variants

_PARTS = (errors, config, compile, cell, inspect, correctness, display, runtime, variants, exports)

# the one documented surface: what each part exports (its ``__all__``), and the settings module
__all__ = [name for part in _PARTS for name in part.__all__] + ["settings"]

# loaded when first used (a part's ``_LAZY``: name -> its module under cuda_magic): NumPy for comparisons and
# sweeps, the tools' reports.  Everything else is bound now.
_LAZY = {name: f"{part.__name__.rpartition('.')[2]}.{module}" for part in _PARTS
         for name, module in getattr(part, "_LAZY", {}).items() if name in part.__all__}
_LAZY["BenchResult"] = "runtime.measure.bench"      # Timing's old name: a deprecated alias
globals().update({name: getattr(part, name) for part in _PARTS for name in part.__all__
                  if name not in _LAZY})

__version__ = _version.__version__

__getattr__ = lazy.loader(globals(), _LAZY)     # the names of _LAZY, imported when first used


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ip) -> None:
    """``%load_ext cuda_magic``: register ``%%cuda``, ``%%cuda_header``, ``%%cuda_compare``,
    ``%%cuda_tune``, ``%cuda_config`` and ``%cuda_export`` (CUDA stays untouched)."""
    from .magics import load
    load(ip)
