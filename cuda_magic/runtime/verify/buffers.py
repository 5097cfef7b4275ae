"""The arrays ``k.verify`` works with (:mod:`.verifying`): host copies and what a reference gets
(through :mod:`cuda_magic.arrays`: torch's bfloat16/fp8/fp4 held as their bit patterns), an
array's number format, the inputs generated for it and the sentinel an output starts as, device memory
handed to a kernel one element in, and the tile of an output one block of the launch covers."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ... import arrays, elements
from ...correctness.formats import FORMAT_TYPES
from .. import driver

__all__ = ["TORCH_CODES", "Array", "DeviceView", "array_format", "for_reference", "generate",
           "own_copy", "offset_view", "sentinel", "to_numpy", "block_tile"]

# torch dtypes held on the host as their bit patterns (NumPy has no such dtype): torch name ->
# (format, the torch int dtype viewed, the NumPy container); a view of :mod:`cuda_magic.elements`
TORCH_CODES = {t: (fmt, view, getattr(np, bits)) for t, (fmt, view, bits)
               in elements.torch_codes().items()}


# --- arrays of each kind (cuda_magic.arrays) ------------------------------------------------------

def own_copy(a) -> np.ndarray:
    """A host NumPy copy of ``a`` that k.verify owns (never ``a`` itself; bit patterns for
    torch's bfloat16/fp8/fp4: :func:`cuda_magic.arrays.host`)."""
    h = arrays.host(a)
    return h.copy() if h is a else h


def for_reference(host: np.ndarray, a, kind: str):
    """What a reference callable gets for ``a``: a NumPy copy (NumPy and CuPy arguments), or a
    CPU tensor of the same dtype (PyTorch)."""
    if kind == "torch":
        return arrays.like(host, a, "cpu")
    return np.array(host, copy=True)


def to_numpy(x) -> tuple[np.ndarray, str | None]:
    """A reference's or an output's result on the host: (array, format of its bit patterns when
    it came as torch bfloat16/fp8)."""
    kind = arrays.library(x)
    if kind in ("numpy", "cupy"):
        return arrays.host(x), None
    if kind == "torch":
        codes = TORCH_CODES.get(arrays.torch_name(x.dtype))
        return arrays.host(x), codes[0] if codes else None
    return np.asarray(x), None


# --- one array argument ------------------------------------------------------------------------

@dataclasses.dataclass
class Array:
    """A pointer parameter's array: where it is, its format, its host contents."""
    index: int
    name: str
    param: object
    arg: object             # as passed (never written)
    kind: str               # numpy, cupy, torch
    host: np.ndarray        # the contents for the launches (given, random or edge)
    fmt: str | None         # its number format (None: integers, compared exactly)
    codes: bool             # host holds bit patterns in an unsigned container (pass dtype=fmt)

    @property
    def dtype_arg(self) -> str | None:
        """What ``verify(dtype=...)`` and the generators need to read the host array."""
        return self.fmt if self.codes else None

    @property
    def gen_dtype(self):
        return self.fmt if self.codes else self.host.dtype


def array_format(p, host: np.ndarray, a, kind: str) -> tuple[str | None, bool]:
    """(the number format of parameter ``p``'s array, whether ``host`` holds its bit patterns in
    an unsigned container); format None: integers, compared exactly."""
    if kind == "torch":
        name = arrays.torch_name(a.dtype)
        if name in TORCH_CODES:
            return TORCH_CODES[name][0], True
        return (name if name in ("float16", "float32", "float64") else None), False
    d = host.dtype
    if d.kind == "f" and d.name in ("float16", "float32", "float64"):
        return d.name, False
    if type(d).__module__.split(".")[0] == "ml_dtypes" or d.type.__module__.split(".")[0] == "ml_dtypes":
        from ...correctness.formats import format_of
        fmt = format_of(dtype=d)
        return (fmt.name if fmt is not None else None), False
    named = FORMAT_TYPES.get(getattr(p, "type", ""))
    if named is not None and d.kind == "u":
        return named, True
    return None, False


def generate(arr: Array, mode: str, rng) -> np.ndarray:
    """The host contents of ``arr`` for an input ``mode``: "given" (a copy), "random" (integers
    within the range passed, so indices stay valid) or "edge"."""
    from ...correctness import inputs
    given = arr.host
    if mode == "given":
        return given.copy()
    shape, dtype = given.shape, arr.gen_dtype
    if arr.fmt is None and given.dtype.kind in "iu" and mode == "random":
        if given.size:           # integers keep the range of the values passed (indices stay valid)
            return inputs.random(shape, given.dtype, rng, low=int(given.min()), high=int(given.max()))
        return given.copy()
    make = inputs.random if mode == "random" else inputs.edge
    out = make(shape, dtype, rng)
    return out.view(given.dtype) if out.dtype != given.dtype else out


def sentinel(arr: Array) -> np.ndarray:
    """What an output holds before each launch, so a kernel that writes nothing is seen."""
    from ...correctness import inputs
    s = inputs.sentinel(arr.host.shape, arr.gen_dtype)
    return s.view(arr.host.dtype) if s.dtype != arr.host.dtype else s


class DeviceView:
    """Device memory holding a host array, handed to the kernel ``offset`` elements in (a
    pointer that is not aligned to more than the element): ``__cuda_array_interface__``."""

    def __init__(self, host: np.ndarray, offset: int):
        drv = driver.api()
        driver.context()
        self.nbytes = max(host.nbytes, 1)
        self.ptr = int(driver.check(drv.cuMemAlloc(self.nbytes), "allocating an offset input"))
        if host.nbytes:
            driver.check(drv.cuMemcpyHtoD(self.ptr, np.ascontiguousarray(host).ctypes.data,
                                          host.nbytes), "copying an offset input")
        n = host.size - offset
        self.__cuda_array_interface__ = {
            "data": (self.ptr + offset * host.dtype.itemsize, False), "shape": (n,),
            "typestr": host.dtype.str if host.dtype.kind != "V" else f"|u{host.dtype.itemsize}",
            "strides": None, "version": 3}

    def free(self):
        if self.ptr:
            driver.api().cuMemFree(self.ptr)
            self.ptr = 0


def offset_view(arr: Array, host: np.ndarray):
    """``host`` on the device, one element in: a DeviceView (NumPy arguments) or a view of a
    CuPy array / tensor."""
    flat = host.reshape(-1)
    if arr.kind == "numpy":
        return DeviceView(flat, 1)
    dev = arrays.like(flat, arr.arg)
    return dev[1:]


# --- the tile of an output from the launch ---------------------------------------------------

def block_tile(shape, grid, block) -> tuple[int, ...] | None:
    """The tile one block of ``grid`` x ``block`` covers in an output of ``shape`` (C order, the
    block's x along the last axis), or None when the launch does not map onto the output that
    way.  A 1-D launch: ``(bx,)`` over the flattened output when ``ceil(size / bx)`` is the grid
    (one element per thread) or the output is larger than the grid (a grid-stride loop), one
    row per block when the first axis has as many rows as the grid has blocks, ``(1,)`` for an
    output of one element per block (partial sums: the map shows each block, a wrong last
    block is a "tail").  An N-D launch: per axis the block's
    extent, or a power-of-two multiple of it, the first that makes the grid's count of tiles
    (a 32 x 32 tile of a (32, 8) block looping over rows), the block's x along the rows when
    it fits only that way (a transpose's output); axes past z whole."""
    shape = tuple(int(n) for n in shape)
    size = math.prod(shape)
    grid, block = tuple(grid) + (1,) * (3 - len(grid)), tuple(block) + (1,) * (3 - len(block))
    if not shape or size == 0:
        return None
    gx, bx = grid[0], block[0]
    if grid[1:] == (1, 1) and block[1:] == (1, 1):
        if len(shape) >= 2 and shape[0] == gx and gx > 1:
            return (1, *shape[1:])
        if size == gx and gx > 1:
            return (1,)
        if bx > 1 and (-(-size // bx) == gx or size > gx * bx):
            return (bx,)
        return None
    tile = _tiles(shape, grid, block, (0, 1, 2))
    if tile is None and len(shape) >= 2:       # a transpose: the block's x along the rows
        tile = _tiles(shape, grid, block, (1, 0, 2))
    if tile is None:                           # grid-stride loops
        tile = _tiles(shape, grid, block, (0, 1, 2), stride=True)
    return None if tile is None or all(t == 1 for t in tile) else tile


def _tiles(shape, grid, block, order, stride=False) -> tuple | None:
    """Per axis (the last first) the tile of grid/block dimension ``order[j]``."""
    tile = []
    for j, n in enumerate(reversed(shape)):
        if j >= 3:
            tile.append(n)
            continue
        t = _axis_tile(n, grid[order[j]], block[order[j]], stride)
        if t is None:
            return None
        tile.append(t)
    return tuple(reversed(tile))


def _axis_tile(n: int, g: int, b: int, stride: bool) -> int | None:
    if g == 1:
        return n
    t = b
    while t <= 2 * n:          # the block's extent, or a power-of-two multiple of it
        if -(-n // t) == g:
            return t
        t *= 2
    return b if stride and n > g * b else None
