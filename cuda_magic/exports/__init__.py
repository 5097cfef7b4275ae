"""Export: a notebook kernel leaves the notebook, as a PyTorch op package (``torch``), as its
binaries with a C header, a Python loader and a manifest (``cubin``), or as a wheel (``wheel``).

``cuda_magic.export(m, "torch", "ops/scale_ops", grid="cdiv(n, 256)", block=256)``; what the
export holds runs with no compiler and no cuda-magic (``_driver.py``: the CUDA driver through
ctypes).  No CUDA here; everything loads when first used.  See docs/export.md.
"""

__all__ = ["export", "Exported"]

_LAZY = {"export": "exporting", "Exported": "exporting"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cuda_magic.exports' has no attribute {name!r}")
