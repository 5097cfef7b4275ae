"""Export: a notebook kernel leaves the notebook, as a PyTorch op package (``torch``), as its
binaries with a C header, a Python loader and a manifest (``cubin``), or as a wheel (``wheel``).

``cuda_magic.export(m, "torch", "ops/scale_ops", grid="cdiv(n, 256)", block=256)``; what the
export holds runs with no compiler and no cuda-magic (``_driver.py``: the CUDA driver through
ctypes).  No CUDA here; everything loads when first used.  See docs/export.md.
"""

from .. import lazy

__all__ = ["export", "Exported"]

_LAZY = {"export": "exporting", "Exported": "exporting"}

__getattr__ = lazy.loader(globals(), _LAZY)
