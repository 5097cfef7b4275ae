"""How a kernel's arguments are described to a helper process and rebuilt there.

Each argument becomes one tuple of plain data:

- ``("array", name)``: an array, sent by name beside the arguments (as NumPy, on the host);
- ``("value", v)``: a number (or, over a pickling transport, any value the child's
  :class:`~cuda_magic.runtime.launch.packer.Packer` judges as a notebook launch would);
- ``("bytes", b)``: raw bytes (a struct by value, a NumPy structured scalar);
- ``("null",)``: ``None``, a null pointer;
- ``("tensormap", name, recipe)``: a :class:`~cuda_magic.runtime.tensormap.TensorMap`, whose
  128 bytes hold this process's device address: its array is sent by name and the child makes
  the map again over its own device copy (``recipe``: the keywords of ``tma``).

:func:`encode` makes one, :func:`decode` rebuilds the argument from it and the arrays;
:func:`to_json`/:func:`from_json` are the same tuples in a spec directory's ``spec.json``.
:func:`host_copy` is the one copy of a device array to the host every helper path uses.
"""

from __future__ import annotations

from typing import Callable, Mapping

from ... import arrays
from ...errors import EncodingError

__all__ = ["ARRAY", "VALUE", "BYTES", "NULL", "TENSORMAP", "EncodingError", "encode", "decode", "to_json",
           "from_json", "is_tensor_map", "host_copy"]

ARRAY, VALUE, BYTES, NULL, TENSORMAP = "array", "value", "bytes", "null", "tensormap"


def is_tensor_map(a) -> bool:
    """Whether ``a`` is a :class:`~cuda_magic.runtime.tensormap.TensorMap` that can be made
    again from its array and recipe (raw 128-byte maps cannot)."""
    return isinstance(a, bytes) and isinstance(getattr(a, "recipe", None), dict)


def encode(a, array: Callable[[object], str], other: Callable | None = None, plain: bool = True):
    """One argument as plain data (see the module's docstring).  ``array(a)`` names an array
    (and keeps what is to be sent under that name).  ``plain``: numbers as Python numbers (a
    NumPy scalar by its ``item()``), bytes-likes and structured scalars as ``bytes``; anything
    else goes to ``other(a)``, or raises :class:`EncodingError` naming its type.  With
    ``plain=False`` every argument that is neither None nor an array crosses as it is."""
    if a is None:
        return (NULL,)
    if is_tensor_map(a):
        return (TENSORMAP, array(a.array), a.recipe)
    if arrays.is_array(a):
        return (ARRAY, array(a))
    if not plain:
        return (VALUE, a)
    if isinstance(a, (bytes, bytearray, memoryview)) or (
            hasattr(a, "dtype") and getattr(a.dtype, "names", None) is not None):
        return (BYTES, a.tobytes() if hasattr(a, "tobytes") else bytes(a))
    if type(a).__module__ == "numpy" and hasattr(a, "item"):     # a NumPy scalar
        return (VALUE, a.item())
    if isinstance(a, (bool, int, float, str)):
        return (VALUE, a)
    if other is not None:
        return other(a)
    raise EncodingError(type(a).__name__)


def decode(arg, arrays: Mapping[str, object]):
    """The argument ``arg`` describes: the array of that name, the value, the bytes, None."""
    kind = arg[0]
    if kind == ARRAY:
        return arrays[arg[1]]
    if kind in (VALUE, BYTES):
        return arg[1]
    if kind == NULL:
        return None
    if kind == TENSORMAP:
        from ..device_array import DeviceArray
        from ..tensormap import tma
        return tma(DeviceArray.upload(arrays[arg[1]]), **arg[2])
    raise EncodingError(f"unknown argument kind {kind!r}")


def to_json(arg) -> dict:
    """``arg`` as JSON data (``spec.json``): an array by its file name, bytes as hex."""
    kind = arg[0]
    if kind == ARRAY:
        return {"kind": "array", "file": arg[1]}
    if kind == BYTES:
        return {"kind": "bytes", "hex": bytes(arg[1]).hex()}
    if kind == NULL:
        return {"kind": "null"}
    if kind == VALUE:
        return {"kind": "value", "value": arg[1]}
    if kind == TENSORMAP:
        return {"kind": "tensormap", "file": arg[1], "recipe": arg[2]}
    raise EncodingError(f"unknown argument kind {kind!r}")


def from_json(d: Mapping) -> tuple:
    """The tuple :func:`to_json` wrote."""
    kind = d["kind"]
    if kind == "array":
        return (ARRAY, d["file"])
    if kind == "bytes":
        return (BYTES, bytes.fromhex(d["hex"]))
    if kind == "null":
        return (NULL,)
    if kind == "value":
        return (VALUE, d["value"])
    if kind == "tensormap":
        return (TENSORMAP, d["file"], dict(d["recipe"]))
    raise EncodingError(f"unknown argument kind {kind!r}")


def host_copy(a, as_: str = "bits"):
    """A NumPy copy of an array of any library, after the work queued on it finished; a NumPy
    array as it is (:func:`cuda_magic.arrays.host`).

    ``as_``: the **bits** of a dtype NumPy lacks (a bfloat16 tensor as ``uint16``), or its
    float32 **values**.  Whatever goes to a kernel needs the bits: a helper's kernel reads the
    bytes it is given, and a sweep's outputs come back from the GPU as bits and are judged
    against references copied the same way (in the format their parameter's C type names).
    A report of numbers needs the values: ``%%cuda_compare`` shows max abs and ULP differences
    and counts subnormals.  A bare ``__cuda_array_interface__`` (no ``copy_to_host``) is
    copied here, through the driver."""
    import numpy as np
    if arrays.library(a) != "cai" or hasattr(a, "copy_to_host"):
        return arrays.host(a, as_)
    cai = a.__cuda_array_interface__
    from ..driver import api, check
    from ..hang.waiting import everything
    everything()
    host = np.empty(tuple(cai["shape"]), dtype=np.dtype(cai["typestr"]))
    if host.nbytes and cai["data"][0]:
        check(api().cuMemcpyDtoH(host.ctypes.data, cai["data"][0], host.nbytes), "copying to the host")
    return host
