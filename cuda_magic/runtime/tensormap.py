"""``tma(array, box=...)``: a TMA tensor map (``CUtensorMap``) over a device array, the value of a
``const __grid_constant__ CUtensorMap`` kernel parameter: tiled, or im2col (``im2col=``) for
convolutions over NHWC-style arrays.

The array is a CuPy array, a PyTorch tensor or anything with ``__cuda_array_interface__``
(NumPy arrays live on the host, and a tensor map holds a device address).  Dimensions and box
are given as the array reads (outermost first, ``box=(64, 64)`` for a row-major tile); the map
lists them innermost first, as the driver and the PTX coordinates do.  Everything the driver
would refuse with an opaque CUDA_ERROR_INVALID_VALUE is checked first, each error naming the
parameter and the limit: rank 1 to 5; dimensions 1 to 2**32; no negative stride (TMA needs
positive strides); a 16-byte-aligned address (32 with interleave); a dense innermost
dimension; strides multiples of 16 bytes; box sides 1 to 256; the box's innermost
side a multiple of 16 bytes, and within the swizzle span; element strides 1 to 8; for im2col
rank 3 to 5, corners within the range the rank allows, a non-empty bounding box, up to 1024
pixels and 256 channels; each keyword of its own type, and a ``__cuda_array_interface__`` well
formed.  ``cuTensorMapEncodeTiled`` / ``cuTensorMapEncodeIm2col`` then encode
it (cuda.bindings; no context needed).  The result is a :class:`TensorMap`: the 128 bytes (a
``bytes``), with the array kept alive beside them and the ``recipe`` (the keywords given) that
rebuilds it over a copy of the array in a helper process (``k.profile``, ``k.check``).
"""

from __future__ import annotations

import ctypes

from .. import elements
from ..errors import ArgumentError, clip, quote

__all__ = ["tma", "TensorMap", "DATA_TYPES", "IM2COL_CORNER"]

# dtype (NumPy / torch name) -> CUtensorMapDataType suffix and element bytes (a view of
# :mod:`cuda_magic.elements`)
DATA_TYPES = elements.tensor_map_types()
_SWIZZLE = {"none": ("NONE", None), "32B": ("32B", 32), "64B": ("64B", 64), "128B": ("128B", 128)}
_L2 = {"none": "NONE", "64B": "L2_64B", "128B": "L2_128B", "256B": "L2_256B"}
_OOB = {"zero": "NONE", "nan": "NAN_REQUEST_ZERO_FMA"}
_INTERLEAVE = {"none": "NONE", "16B": "16B", "32B": "32B"}
IM2COL_CORNER = {3: 1 << 15, 4: 1 << 7, 5: 1 << 4}   # rank -> corners in [-x, x - 1]
_MAX_PIXELS, _MAX_CHANNELS = 1024, 256


class TensorMap(bytes):
    """A ``CUtensorMap``: 128 bytes, passed by value as a kernel argument.  ``array`` (kept
    alive while the map is), ``shape``, ``box``, ``dtype``, ``swizzle``, ``im2col`` (None for a
    tiled map) as given to :func:`tma`; ``recipe`` the keywords that make it again over another
    array of the same layout."""

    def __repr__(self) -> str:
        mode = "" if self.im2col is None else f", im2col {self.im2col[0]}..{self.im2col[1]}"
        return (f"<TensorMap {self.dtype} {'x'.join(map(str, self.shape))}, box "
                f"{'x'.join(map(str, self.box))}{mode}, swizzle {self.swizzle}>")


def _layout(array) -> tuple[int, tuple, tuple, str]:
    """(device address, shape, strides in bytes, dtype name) of a device array."""
    name = type(array).__module__.split(".")[0]
    if name == "torch":
        if not array.is_cuda:
            raise ArgumentError(f"tma(array): the tensor is on {array.device}; a tensor map holds "
                                f"a GPU address: move it with .cuda()")
        size = array.element_size()
        return (array.data_ptr(), tuple(array.shape), tuple(s * size for s in array.stride()),
                str(array.dtype).removeprefix("torch."))
    cai = getattr(array, "__cuda_array_interface__", None)
    if cai is None:
        where = "a NumPy array lives on the host" if name == "numpy" else \
            f"a {type(array).__name__} has no __cuda_array_interface__"
        raise ArgumentError(f"tma(array): {where}; a tensor map holds a GPU address: give a CuPy "
                            f"array or a PyTorch tensor on the GPU")
    shape, typestr, address, strides = _interface(cai)
    import numpy as np
    try:
        dtype = np.dtype(typestr)
        dname = dtype.name
    except TypeError:
        dtype, dname = None, typestr
    if dtype is not None and dtype.kind == "V" and dtype.itemsize == 2:
        dname = "bfloat16"                     # CuPy/ml_dtypes bfloat16 reads as raw 2 bytes
    size = dtype.itemsize if dtype is not None else 0
    if strides is None:                        # C-contiguous
        strides, acc = [], size
        for d in reversed(shape):
            strides.insert(0, acc)
            acc *= d
    return address, shape, tuple(strides), dname


def _interface(cai) -> tuple:
    """``(shape, typestr, address, strides or None)`` of a ``__cuda_array_interface__``, each
    checked for its form: a malformed one is an error naming the key, not a KeyError or
    TypeError from inside."""
    def bad(key, want):
        raise ArgumentError(f"tma(array): __cuda_array_interface__[{key!r}]="
                            f"{quote(cai[key], 40)}: {want}")
    if not isinstance(cai, dict):
        raise ArgumentError(f"tma(array): its __cuda_array_interface__ is {quote(cai, 40)}: a "
                            f"dict with 'shape', 'typestr' and 'data'")
    for key in ("shape", "typestr", "data"):
        if key not in cai:
            raise ArgumentError(f"tma(array): its __cuda_array_interface__ has no {key!r}")

    def ints(value):
        return isinstance(value, (tuple, list)) and all(
            isinstance(x, int) and not isinstance(x, bool) for x in value)
    shape, strides, data = cai["shape"], cai.get("strides"), cai["data"]
    if not ints(shape):
        bad("shape", "a tuple of ints")
    if not isinstance(cai["typestr"], str):
        bad("typestr", "a NumPy type string such as '<f4'")
    if strides is not None and not (ints(strides) and len(strides) == len(shape)):
        bad("strides", f"None or a tuple of {len(shape)} ints (bytes per step of each dimension)")
    if not (isinstance(data, (tuple, list)) and len(data) == 2 and ints(data[:1])
            and isinstance(data[1], bool)):
        bad("data", "a pair (device address, read-only flag): an int and a bool")
    if not 0 <= data[0] < 1 << 64:
        bad("data", "its address is not a 64-bit unsigned int")
    return tuple(shape), cai["typestr"], data[0], None if strides is None else list(strides)


def _choice(table: dict, value, what: str) -> str:
    if not isinstance(value, str) or value not in table:
        raise ArgumentError(f"tma({what}={quote(value, 40)}): choose one of "
                            f"{', '.join(map(repr, table))}")
    return table[value]


def _ints(value, n: int, what: str, low: int | None = None, high: int | None = None) -> tuple:
    """``value`` as ``n`` ints (an int alone when n is 1), each in [low, high]; else an error
    naming ``what``."""
    t = (value,) if isinstance(value, int) else tuple(value) if isinstance(value, (tuple, list)) \
        else None
    if t is None or len(t) != n or not all(isinstance(x, int) and not isinstance(x, bool)
                                           for x in t):
        raise ArgumentError(f"tma({what}={quote(value, 40)}): {n} int{'s' * (n != 1)}")
    for i, x in enumerate(t):
        if (low is not None and x < low) or (high is not None and x > high):
            raise ArgumentError(f"tma({what}={quote(value, 40)}): {what}[{i}]={quote(x, 40)}; "
                                f"each is {low} to {high}")
    return t


def tma(array, box, *, swizzle: str = "none", interleave: str = "none", l2_promotion: str = "none",
        oob_fill: str = "zero", element_strides=None, im2col=None, data_type=None) -> TensorMap:
    """A TMA tensor map over ``array`` (a CuPy array or PyTorch tensor on the GPU).

    Tiled (the default): ``box`` is the tile, one side per dimension, outermost first, as the
    array's shape reads (a 64 x 64 tile of a row-major matrix is ``box=(64, 64)``).

    Im2col (``im2col=(lower, upper)``, an NHWC / NDHWC / NWC array): ``lower`` and ``upper``
    are the bounding box's corners over the spatial dimensions, outermost first (``(h, w)``
    for NHWC: ``lower=(-pad_h, -pad_w)``, ``upper=(pad_h - (R - 1) * dil_h, ...)`` for an R x S
    filter), and ``box=(pixels, channels)`` the tile one load writes: ``pixels`` (up to 1024)
    rows of ``channels`` (up to 256) elements.  The kernel loads with
    ``cp.async.bulk.tensor.Nd...im2col`` and gives the filter tap as the im2col offsets.

    ``swizzle``: ``"none"``, ``"32B"``, ``"64B"``, ``"128B"`` (the box's innermost side must
    fit in it); ``interleave``: ``"none"``, ``"16B"``, ``"32B"``; ``l2_promotion``:
    ``"none"``, ``"64B"``, ``"128B"``, ``"256B"``; ``oob_fill``: ``"zero"`` or ``"nan"``
    (elements outside the array); ``element_strides``: per dimension, 1 to 8 (default 1);
    ``data_type``: the element type when the dtype does not say it (``"bfloat16"`` for a uint16
    view of bf16 data).  The kernel parameter is ``const __grid_constant__ CUtensorMap``; PTX
    coordinates go innermost first.

    Example::

        a = torch.randn(M, K, device="cuda").bfloat16()
        gemm[(N // 64, M // 64), 128](tma(a, box=(64, 64), swizzle="128B"), ...)
    """
    address, shape, strides, dname = _layout(array)
    if data_type is not None:
        if not isinstance(data_type, str) or data_type not in DATA_TYPES:
            raise ArgumentError(f"tma(data_type={quote(data_type, 40)}): one of "
                                f"{', '.join(sorted(DATA_TYPES))}")
        if DATA_TYPES[data_type][1] != DATA_TYPES.get(dname, (None, None))[1]:
            raise ArgumentError(f"tma(data_type={data_type!r}): elements of "
                                f"{DATA_TYPES[data_type][1]} bytes; the array's "
                                f"({clip(dname, 40)}) are not")
        dname = data_type
    rank = len(shape)
    if not 1 <= rank <= 5:
        raise ArgumentError(f"tma(array): a tensor map has 1 to 5 dimensions; this array has {rank}")
    if dname not in DATA_TYPES:
        raise ArgumentError(f"tma(array): dtype {clip(dname, 40)} has no tensor-map type; it "
                            f"takes {', '.join(sorted(DATA_TYPES))}")
    kind, size = DATA_TYPES[dname]
    _check_extent(shape, strides)
    if im2col is None:
        box = (box,) if isinstance(box, int) else tuple(box) if isinstance(box, (tuple, list)) \
            else None
        if box is None or len(box) != rank or not all(isinstance(b, int) and not isinstance(b, bool)
                                                      for b in box):
            raise ArgumentError(f"tma(box={quote(box, 40)}): one int per dimension of the array "
                                f"(shape {shape})")
        for i, b in enumerate(box):
            if not 1 <= b <= 256:
                raise ArgumentError(f"tma(box={quote(box, 40)}): box[{i}]={quote(b, 20)}; each "
                                    f"side is 1 to 256 elements")
            if b > shape[i]:
                raise ArgumentError(f"tma(box={box}): box[{i}]={b} is larger than the array's "
                                    f"dimension {i} ({shape[i]})")
        corners = None
    else:
        corners = _im2col(im2col, rank, shape)
        box = _ints(box, 2, "box", 1, _MAX_PIXELS)
        if box[1] > _MAX_CHANNELS:
            raise ArgumentError(f"tma(box={box}, im2col=...): box is (pixels, channels): at most "
                                f"{_MAX_PIXELS} pixels and {_MAX_CHANNELS} channels per load")
    es = (1,) * rank if element_strides is None else tuple(element_strides) \
        if isinstance(element_strides, (tuple, list)) else None
    if es is None or len(es) != rank or not all(
            isinstance(e, int) and not isinstance(e, bool) and 1 <= e <= 8 for e in es):
        raise ArgumentError(f"tma(element_strides={quote(element_strides, 40)}): a tuple of one "
                            f"int from 1 to 8 per dimension ({rank} here)")
    swz, span = _choice(_SWIZZLE, swizzle, "swizzle")
    inter = _choice(_INTERLEAVE, interleave, "interleave")
    l2 = _choice(_L2, l2_promotion, "l2_promotion")
    oob = _choice(_OOB, oob_fill, "oob_fill")
    align = 32 if interleave == "32B" else 16
    if address % align:
        raise ArgumentError(f"tma(array): its address 0x{address:x} is not a multiple of {align} "
                            f"bytes, which a tensor map needs (a view that starts mid-row?)")
    if strides[-1] != size:
        raise ArgumentError(f"tma(array): its innermost dimension is not dense (stride "
                            f"{quote(strides[-1], 30)} bytes, elements of {size}): make it "
                            f"contiguous")
    for i, s in enumerate(strides[:-1]):
        if s % 16 or s >= 1 << 40:
            raise ArgumentError(f"tma(array): the stride of dimension {i} is {quote(s, 30)} "
                                f"bytes; a tensor map's strides are multiples of 16 bytes "
                                f"below 2**40 (pad the rows to a multiple of "
                                f"{16 // size if size < 16 else 1} elements)")
    inner = box[-1] * size
    side = "the innermost side" if corners is None else "a pixel's channels"
    if interleave == "none" and inner % 16:
        raise ArgumentError(f"tma(box={box}): {side} is {inner} bytes; it must be a multiple of "
                            f"16 bytes")
    if span is not None and interleave == "none" and inner > span:
        raise ArgumentError(f"tma(box={box}, swizzle={swizzle!r}): {side} is {inner} bytes, more "
                            f"than the {span}-byte swizzle span")
    from cuda.bindings import driver as drv
    from .driver import check
    T = drv.CUtensorMapDataType, drv.CUtensorMapInterleave, drv.CUtensorMapSwizzle, \
        drv.CUtensorMapL2promotion, drv.CUtensorMapFloatOOBfill
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    rev = lambda t: list(reversed(t))     # noqa: E731  (the map lists the innermost first)
    common = (getattr(T[0], f"CU_TENSOR_MAP_DATA_TYPE_{kind}"), u32(rank), address,
              [u64(d) for d in rev(shape)], [u64(s) for s in rev(strides[:-1])])
    modes = ([u32(e) for e in rev(es)], getattr(T[1], f"CU_TENSOR_MAP_INTERLEAVE_{inter}"),
             getattr(T[2], f"CU_TENSOR_MAP_SWIZZLE_{swz}"),
             getattr(T[3], f"CU_TENSOR_MAP_L2_PROMOTION_{l2}"),
             getattr(T[4], f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{oob}"))
    if corners is None:
        tmap = check(drv.cuTensorMapEncodeTiled(*common, [u32(b) for b in rev(box)], *modes),
                     "cuTensorMapEncodeTiled")
    else:
        tmap = check(drv.cuTensorMapEncodeIm2col(*common, rev(corners[0]), rev(corners[1]),
                                                 u32(box[1]), u32(box[0]), *modes),
                     "cuTensorMapEncodeIm2col")
    out = TensorMap(ctypes.string_at(tmap.getPtr(), 128))
    out.array, out.shape, out.box, out.dtype, out.swizzle = array, shape, box, dname, swizzle
    out.im2col = corners
    out.recipe = {"box": list(box), "swizzle": swizzle, "interleave": interleave,
                  "l2_promotion": l2_promotion, "oob_fill": oob_fill,
                  "element_strides": list(es), "data_type": dname,
                  "im2col": None if corners is None else [list(c) for c in corners]}
    return out


def _check_extent(shape: tuple, strides: tuple) -> None:
    """Each dimension 1 to 2**32 and no stride negative, as the driver takes them (cuda.bindings
    would raise OverflowError for a negative stride or a dimension of 2**64)."""
    for i, d in enumerate(shape):
        if not 1 <= d <= 1 << 32:
            raise ArgumentError(f"tma(array): dimension {i} is {quote(d, 30)}; a tensor map's "
                                f"dimensions are 1 to 2**32")
    for i, s in enumerate(strides):
        if s < 0:
            raise ArgumentError(f"tma(array): the stride of dimension {i} is {quote(s, 30)} "
                                f"bytes; TMA needs positive strides (a reversed view such as "
                                f"x[::-1]?): give a contiguous copy")


def _im2col(value, rank: int, shape: tuple) -> tuple:
    """``(lower, upper)`` corners of an im2col map, checked against the rank and the shape."""
    if not 3 <= rank <= 5:
        raise ArgumentError(f"tma(im2col=...): an im2col map has 3 to 5 dimensions (NWC, NHWC, "
                            f"NDHWC); this array has {rank}")
    n = rank - 2
    form = (f"(lower, upper), each {n} int{'s' * (n != 1)} over the spatial dimensions, "
            f"outermost first")
    corners = tuple(value) if isinstance(value, (tuple, list)) else ()
    corners = tuple((c,) if isinstance(c, int) else tuple(c) if isinstance(c, (tuple, list))
                    else None for c in corners)
    if len(corners) != 2 or any(c is None or len(c) != n or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in c) for c in corners):
        raise ArgumentError(f"tma(im2col={quote(value, 60)}): {form}")
    limit = IM2COL_CORNER[rank]
    for name, corner in zip(("lower", "upper"), corners):
        for i, x in enumerate(corner):
            if not -limit <= x < limit:
                raise ArgumentError(f"tma(im2col={quote(value, 60)}): {name}[{i}]="
                                    f"{quote(x, 20)}; a rank-{rank} map's corners are "
                                    f"{-limit} to {limit - 1}")
    lower, upper = corners
    for i, (lo, up) in enumerate(zip(lower, upper)):
        if shape[1 + i] - 1 + up < lo:
            raise ArgumentError(f"tma(im2col=({lower}, {upper})): spatial dimension {i} "
                                f"({shape[1 + i]}) from {lo} to {shape[1 + i] - 1 + up} is empty; "
                                f"the bounding box runs from lower to dimension - 1 + upper")
    return lower, upper
