"""``bench(fresh_inputs=True)``: argument lists whose inputs are shifted copies of the ones
given, so no timed launch reads what the one before read (a kernel cannot cache its answer).
"""

from __future__ import annotations

from ...errors import BenchError

__all__ = ["FRESH_SETS", "sets", "note"]

FRESH_SETS = 4             # the shifted copies of the inputs the timed launches rotate


def _inputs(kernel, args) -> list[int]:
    """Indexes of the arguments that are arrays passed to const pointer parameters."""
    from ...arrays import library
    return [i for i, (p, a) in enumerate(zip(kernel.params, args))
            if p.pointer > 0 and p.const and library(a) in ("numpy", "cupy", "torch")]


def sets(kernel, args) -> list[list]:
    """:data:`FRESH_SETS` argument lists: the first as given, each other with every input
    array (NumPy, CuPy, PyTorch) rolled, flattened, by a different shift in its own library,
    so the values, their range and valid indices stay what they were, at other places."""
    import numpy as np
    from ...arrays import library, size
    found = _inputs(kernel, args)
    if not found:
        raise BenchError(f"fresh_inputs=True: {kernel.name} has no const pointer parameter given "
                         f"an array, so there is nothing to shift")
    sets = [list(args)]
    for k in range(1, FRESH_SETS):
        this = list(args)
        for i in found:
            a = args[i]
            n = size(a)
            shift = (k * (n // FRESH_SETS + 1)) % max(n, 1) or k
            lib = library(a)
            if lib == "torch":
                this[i] = a.roll(shift)
            elif lib == "cupy":
                import cupy
                this[i] = cupy.roll(a, shift)
            else:
                this[i] = np.roll(a, shift)
        sets.append(this)
    return sets


def note(kernel, args, sets: int) -> str:
    names = ", ".join(kernel.params[i].name for i in _inputs(kernel, args))
    return (f"fresh inputs: the timed launches rotate {sets} copies of {names}, each rolled by a "
            f"different shift, so no launch reads what the one before read")
