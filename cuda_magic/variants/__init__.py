"""Variants of one cell: toggles and named layers (:mod:`.toggles`), ``%%cuda_compare``
(:mod:`.comparison`) and sweeps, ``%%cuda_tune`` (:mod:`.tune`).

The toggles are pure data and load with the package; the comparison, the number tools and
tuning import NumPy, so they load when first used.  (The layer DESIGN.md calls compare/tune;
the package is not named ``compare`` because ``cuda_magic.compare`` is the function.)
"""

from .. import lazy
from .toggles import (INPUTS, TOGGLES, Variant, default_variants, parse_variant, set_toggle, state,
                      vary, vary_archs)

# what cuda_magic exports from here (the toggles and variants: import them from here)
__all__ = ["Comparison", "compare", "denormals", "Tuning", "tune"]

# loaded when first used (NumPy): name -> the module that defines it.  ``tune`` is the function
# in the module of the same name: ``cuda_magic.tune`` is the function, ``cuda_magic.variants.tune``
# the module (this package's __getattr__ leaves that name to the import system)
_LAZY = {"Comparison": "comparison", "compare": "comparison", "Recipe": "comparison",
         "denormals": "numbers", "Tuning": "tune", "tune": "tune"}

__getattr__ = lazy.loader(globals(), _LAZY)
