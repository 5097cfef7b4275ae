"""Names a package binds when first used: its ``__init__`` declares ``_LAZY`` (name -> the module,
under the package, that defines it) and takes its module ``__getattr__`` from :func:`loader`, so
importing the package imports none of those modules (NumPy, the tools' reports, the sweeps).
Standard library only: every layer's ``__init__`` may use it."""

from __future__ import annotations

import importlib

__all__ = ["loader"]


def loader(namespace: dict, table: dict[str, str]):
    """The module ``__getattr__`` of the package whose ``globals()`` is ``namespace``: a name of
    ``table`` is imported from ``table[name]`` (relative to the package) on first use and bound
    in the package, so later uses are plain lookups.  A name equal to its module's (``tune`` in
    ``variants.tune``) is left to the import system, which binds the submodule under it."""
    package = namespace["__name__"]

    def __getattr__(name: str):
        module = table.get(name)
        if module is not None and module != name:
            value = getattr(importlib.import_module(f"{package}.{module}"), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__
