"""Correctness: is a kernel's output right?  One checker for every caller (``cuda_magic.verify``,
``k.verify``, ``%%cuda_compare``, ``%%cuda_tune``), for every number format a kernel writes:
float64/32/16, bfloat16, fp8 (e4m3, e5m2), fp6 (e2m3, e3m2), fp4 (e2m1) and integers.

NumPy only (CuPy when the arrays are on the device); no CUDA driver.  Everything here loads
when first used.  See docs/verify.md.
"""

from .. import lazy

__all__ = ["verify", "Verdict", "OutputCheck", "ulp_distance", "FORMATS", "to_bits", "from_bits"]

_LAZY = {"verify": "verifier", "Verdict": "verdict", "OutputCheck": "verdict", "ulp_distance": "formats",
         "FORMATS": "formats", "to_bits": "formats", "from_bits": "formats"}

__getattr__ = lazy.loader(globals(), _LAZY)
