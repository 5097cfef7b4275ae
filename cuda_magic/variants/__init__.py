"""Variants of one cell: toggles and named layers (:mod:`.toggles`), ``%%cuda_compare``
(:mod:`.comparison`) and sweeps, ``%%cuda_tune`` (:mod:`.tune`).

The toggles are pure data and load with the package; the comparison, the number tools and
tuning import NumPy, so they load when first used.  (The layer DESIGN.md calls compare/tune;
the package is not named ``compare`` because ``cuda_magic.compare`` is the function.)
"""

from .toggles import (INPUTS, TOGGLES, Variant, default_variants, parse_variant, set_toggle, state,
                      vary, vary_archs)

__all__ = ["INPUTS", "TOGGLES", "Variant", "default_variants", "parse_variant", "set_toggle",
           "state", "vary", "vary_archs", "Comparison", "RunError", "compare", "Tuning"]

_LAZY = {"Comparison": "comparison", "RunError": "comparison", "compare": "comparison",
         "Recipe": "comparison", "Tuning": "tune"}    # .tune is the module; tune() lives in it


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cuda_magic.variants' has no attribute {name!r}")
