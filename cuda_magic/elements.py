"""Element types: one row per type a kernel's array or scalar holds, and every table of them.

An :class:`Element` row says everything the package knows about one type: its C++ spellings
(canonical first, then the typedefs CUDA's headers give it), its :mod:`struct` code and size
(how a by-value parameter is packed), its NumPy or ml_dtypes name, its torch dtype name, its
number format (a :data:`cuda_magic.correctness.formats.FORMATS` name; None for integers), the
unsigned type that holds its bits and its ``CUtensorMapDataType``.  The tables the other layers
use are views of :data:`ELEMENTS`, derived here and never written again:

* :func:`scalars` -- ``runtime.launch.params.SCALARS`` (C spelling -> struct code, dtype, size);
* :func:`format_types` -- ``correctness.formats.FORMAT_TYPES`` (C spelling -> format name);
* :func:`torch_dtypes` -- ``exports.spec.TORCH_DTYPES`` (C spelling -> torch dtype, alignment);
* :func:`torch_codes` -- ``runtime.verify.buffers.TORCH_CODES`` (torch dtypes held as bits);
* :func:`tensor_map_types` -- ``runtime.tensormap.DATA_TYPES`` (dtype -> tensor-map type, size).

Adding a type is one row here (and, for a new number format, its ``Format``): see "Adding an
element type" in docs/development.md.  Pure data: the standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Element", "ELEMENTS", "VECTORS", "NUMPY_NATIVE", "by_cpp", "by_dtype", "format_of_cpp",
           "aliases", "scalars", "format_types", "torch_dtypes", "torch_codes", "tensor_map_types"]


@dataclass(frozen=True)
class Element:
    """One element type.  ``cpp``: its canonical C++ spellings (what
    :func:`~cuda_magic.compile.cpptypes.canonical_type` gives), ``aliases``: the typedefs CUDA's
    headers give it (``half``; canonical_type reads them from here; the integers' <cstdint>
    names stay with it); ``code``: its :mod:`struct` code when a by-value parameter of it is packed
    (None: not packed by value); ``size`` in bytes; ``numpy``: its NumPy or ml_dtypes dtype name;
    ``torch``: its torch dtype name (None: torch has none); ``format``: its number format (None
    for integers and bool, compared exactly); ``bits``: the unsigned NumPy type holding one
    element's bits; ``tensor_map``: its ``CUtensorMapDataType`` suffix (None: no tensor map)."""

    cpp: tuple[str, ...]
    code: str | None
    size: int
    numpy: str | None
    torch: str | None
    format: str | None
    bits: str
    tensor_map: str | None
    aliases: tuple[str, ...] = ()

    @property
    def torch_view(self) -> str:
        """The torch integer dtype a tensor of this type is viewed as to reach its bits (one
        every torch version has: ``uint8``, ``int16``, ...)."""
        return "uint8" if self.size == 1 else f"int{8 * self.size}"

    @property
    def native(self) -> bool:
        """Whether NumPy has the dtype itself (else an array of it holds bits, or ml_dtypes')."""
        return self.numpy in NUMPY_NATIVE


E = Element
ELEMENTS: tuple[Element, ...] = (
    E(("bool",), "?", 1, "bool", "bool", None, "uint8", "UINT8"),
    E(("char", "signed char"), "b", 1, "int8", "int8", None, "uint8", "UINT8"),
    E(("unsigned char",), "B", 1, "uint8", "uint8", None, "uint8", "UINT8"),
    E(("short",), "h", 2, "int16", "int16", None, "uint16", "UINT16"),
    E(("unsigned short",), "H", 2, "uint16", "uint16", None, "uint16", "UINT16"),
    E(("int",), "i", 4, "int32", "int32", None, "uint32", "INT32"),
    E(("unsigned int",), "I", 4, "uint32", "uint32", None, "uint32", "UINT32"),
    E(("long", "long long"), "q", 8, "int64", "int64", None, "uint64", "INT64"),
    E(("unsigned long", "unsigned long long"), "Q", 8, "uint64", "uint64", None, "uint64", "UINT64"),
    E(("float",), "f", 4, "float32", "float32", "float32", "uint32", "FLOAT32"),
    E(("double",), "d", 8, "float64", "float64", "float64", "uint64", "FLOAT64"),
    E(("__half",), "e", 2, "float16", "float16", "float16", "uint16", "FLOAT16",
      ("half", "nv_half", "__nv_half")),
    # a by-value bfloat16 is packed from a float, rounded to nearest even, into "H"
    E(("__nv_bfloat16",), "H", 2, "bfloat16", "bfloat16", "bfloat16", "uint16", "BFLOAT16",
      ("nv_bfloat16", "__bfloat16")),
    E(("__nv_fp8_e4m3",), None, 1, "float8_e4m3fn", "float8_e4m3fn", "e4m3", "uint8", "UINT8"),
    E(("__nv_fp8_e5m2",), None, 1, "float8_e5m2", "float8_e5m2", "e5m2", "uint8", "UINT8"),
    E(("__nv_fp6_e2m3",), None, 1, "float6_e2m3fn", None, "e2m3", "uint8", None),
    E(("__nv_fp6_e3m2",), None, 1, "float6_e3m2fn", None, "e3m2", "uint8", None),
    E(("__nv_fp4_e2m1",), None, 1, "float4_e2m1fn", None, "e2m1", "uint8", None),
    # two e2m1 per byte, element 2i in the low nibble
    E(("__nv_fp4x2_e2m1",), None, 1, None, "float4_e2m1fn_x2", "e2m1x2", "uint8", None),
)
del E

# NumPy's own dtypes (the others are ml_dtypes', or held as bits)
NUMPY_NATIVE = frozenset({"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                          "uint64", "float16", "float32", "float64"})

# CUDA's vector types: (element's canonical spelling, lanes); a pointer to one takes a tensor of
# its element, its address a multiple of the vector's size
VECTORS: dict[str, tuple[str, int]] = {
    "float2": ("float", 2), "float4": ("float", 4), "double2": ("double", 2),
    "int2": ("int", 2), "int4": ("int", 4), "uint2": ("unsigned int", 2),
    "uint4": ("unsigned int", 4), "__half2": ("__half", 2), "half2": ("__half", 2),
    "__nv_bfloat162": ("__nv_bfloat16", 2), "char4": ("char", 4), "uchar4": ("unsigned char", 4),
    "short2": ("short", 2),
}

_BY_CPP = {s: e for e in ELEMENTS for s in e.cpp}
_BY_DTYPE = {**{e.numpy: e for e in ELEMENTS if e.numpy}, **{e.torch: e for e in ELEMENTS if e.torch}}


def by_cpp(spelling: str) -> Element | None:
    """The row of a canonical C++ spelling (``"__nv_bfloat16"``), or None."""
    return _BY_CPP.get(spelling)


def by_dtype(name: str) -> Element | None:
    """The row of a NumPy, ml_dtypes or torch dtype name (``"bfloat16"``, ``"float8_e4m3fn"``,
    ``"torch.int32"``), or None."""
    return _BY_DTYPE.get(str(name).removeprefix("torch."))


def format_of_cpp(spelling: str) -> str | None:
    """The number format of an array a parameter of this pointee type holds (``"bfloat16"`` for
    ``__nv_bfloat16``), or None (integers, structs, ``void``)."""
    e = _BY_CPP.get(spelling)
    return e.format if e is not None else None


# ---------------------------------------------------------------------- the views

def aliases() -> dict[str, str]:
    """Typedef -> canonical C spelling (``"half"`` -> ``"__half"``)."""
    return {a: e.cpp[0] for e in ELEMENTS for a in e.aliases}


def scalars() -> dict[str, tuple[str, str, int]]:
    """Canonical C spelling -> (struct code, NumPy dtype name, size): the types a by-value
    parameter is packed as (LP64: long is 8 bytes)."""
    return {s: (e.code, e.numpy, e.size) for e in ELEMENTS if e.code for s in e.cpp}


def format_types() -> dict[str, str]:
    """Canonical C spelling -> format name, for the formats whose arrays may come as bit patterns
    in unsigned ints (2 bytes or narrower: float16, bfloat16, fp8, fp6, fp4)."""
    return {s: e.format for e in ELEMENTS if e.format and e.size <= 2 for s in e.cpp}


def torch_dtypes() -> dict[str, tuple[str, int]]:
    """Canonical C spelling of a pointee -> (torch dtype name, alignment in bytes beyond the
    element's own, or 0): the types both torch and NumPy (or ml_dtypes) have, then the
    vector types."""
    out = {s: (e.torch, 0) for e in ELEMENTS if e.torch and e.numpy for s in e.cpp}
    for vec, (elem, lanes) in VECTORS.items():
        e = _BY_CPP[elem]
        out[vec] = (e.torch, e.size * lanes)
    return out


def torch_codes() -> dict[str, tuple[str, str, str]]:
    """torch dtype name -> (format name, the torch integer dtype to view it as, the unsigned
    NumPy type of its bits on the host): the torch dtypes NumPy has no dtype for."""
    return {e.torch: (e.format, e.torch_view, e.bits)
            for e in ELEMENTS if e.torch and not e.native}


def tensor_map_types() -> dict[str, tuple[str, int]]:
    """dtype name (NumPy, ml_dtypes or torch) -> (``CUtensorMapDataType`` suffix, element bytes)."""
    out = {}
    for e in ELEMENTS:
        if e.tensor_map:
            for name in (e.numpy, e.torch):
                if name:
                    out[name] = (e.tensor_map, e.size)
    return out
