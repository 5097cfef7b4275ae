"""Arrays of any library: which library an array comes from, its host copy, fresh arrays like it.

Every layer that takes a user's array (the launch, ``k.verify``, ``%%cuda_compare``,
``%%cuda_tune``, the exports' checks) asks here:

* :func:`library` -- ``"numpy"``, ``"cupy"``, ``"torch"``, ``"cai"`` (anything else with
  ``__cuda_array_interface__``: Numba, a :class:`~cuda_magic.runtime.device_array.DeviceArray`)
  or None (not an array); :func:`is_array` is ``library(a) is not None``.
* :func:`host` -- a NumPy array of its contents, in one of two forms.  ``as_="bits"``: a dtype
  NumPy lacks (torch's bfloat16, float8_e4m3fn, float8_e5m2, float4_e2m1fn_x2) comes as its
  bit patterns in the unsigned container :mod:`cuda_magic.elements` names (``uint16``,
  ``uint8``): what a kernel reads, what ``verify(dtype=...)`` reads as codes.
  ``as_="values"``: as float32 values (exact: every bfloat16 and fp8 value is a float32; packed
  fp4 has no value per element and comes as its bytes).
* :func:`like`, :func:`copy`, :func:`size`, :func:`shape`, :func:`bits_equal`.

NumPy, CuPy and torch are imported where an array of theirs is at hand, never at import.  A raw
``__cuda_array_interface__`` without ``copy_to_host`` is copied by the helper processes'
encoding (:func:`cuda_magic.runtime.helper.encoding.host_copy`), the one place that calls the
driver for it.
"""

from __future__ import annotations

from . import elements
from .errors import ArgumentError

__all__ = ["library", "is_array", "host", "like", "copy", "size", "shape", "bits_equal",
           "torch_name"]


def _module(a) -> str:
    return type(a).__module__.split(".")[0]


def library(a) -> str | None:
    """``"numpy"`` (an ``ndarray``), ``"cupy"``, ``"torch"`` (a tensor on any device), ``"cai"``
    (anything else with ``__cuda_array_interface__``), or None: not an array."""
    if _is_ndarray(a):
        return "numpy"
    mod = _module(a)
    if mod == "cupy" and hasattr(a, "get"):
        return "cupy"
    if mod == "torch" and hasattr(a, "data_ptr"):
        return "torch"
    if hasattr(a, "__cuda_array_interface__"):
        return "cai"
    return None


def _is_ndarray(a) -> bool:
    import sys
    np = sys.modules.get("numpy")           # no NumPy loaded: no ndarray exists
    return np is not None and isinstance(a, np.ndarray)


def is_array(a) -> bool:
    """Whether ``a`` is an array of a library these tools read (:func:`library`)."""
    return library(a) is not None


def torch_name(dtype) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"``."""
    return str(dtype).rsplit(".", 1)[-1]


def host(a, as_: str = "bits"):
    """``a``'s contents as a NumPy array, after the work queued on it (a NumPy array as it is,
    not a copy; the others C-contiguous).  ``as_``: ``"bits"`` or ``"values"`` (the module's
    docstring).  A ``cai`` array needs ``copy_to_host`` (Numba); else ArgumentError (the helper
    encoding copies those through the driver)."""
    import numpy as np
    if as_ not in ("bits", "values"):
        raise ArgumentError(f"host(as_={as_!r}): 'bits' or 'values'")
    lib = library(a)
    if lib == "numpy":
        return a
    if lib == "torch":
        t = a.detach()
        row = elements.by_dtype(torch_name(t.dtype))
        if row is not None and not row.native:
            if as_ == "values" and row.format != "e2m1x2":
                t = t.float()
            else:
                import torch
                bits = getattr(np, row.bits)
                return np.ascontiguousarray(t.view(getattr(torch, row.torch_view)).cpu()
                                            .numpy().view(bits))
        return np.ascontiguousarray(t.cpu().numpy())
    if lib == "cupy":
        return np.ascontiguousarray(a.get())
    if hasattr(a, "copy_to_host"):
        return np.ascontiguousarray(a.copy_to_host())
    raise ArgumentError(f"a {type(a).__name__} has no host copy here: give a NumPy, CuPy or "
                        f"PyTorch array")


def like(values, a, device=None, as_: str = "bits"):
    """``values`` (a NumPy array in a :func:`host` form of ``a``, ``as_``) as a fresh array of
    ``a``'s library and dtype, on ``a``'s device (``device``: another one, for torch; values
    are rounded to ``a``'s dtype).  A ``cai`` array: a NumPy copy."""
    import numpy as np
    lib = library(a)
    values = np.ascontiguousarray(values)
    if lib == "cupy":
        import cupy
        return cupy.asarray(values)
    if lib == "torch":
        import torch
        device = a.device if device is None else device
        row = elements.by_dtype(torch_name(a.dtype))
        if as_ == "values":
            return torch.from_numpy(values.copy()).to(device).to(a.dtype)
        if row is not None and not row.native:
            return torch.from_numpy(values.view(row.torch_view).copy()).to(device).view(a.dtype)
        return torch.from_numpy(values.copy()).to(device)
    dtype = getattr(a, "dtype", None)
    return np.array(values, dtype=dtype if lib == "numpy" else None, copy=True)


def copy(a):
    """A fresh copy of ``a`` in its own library, on its device; ArgumentError for what has none."""
    if library(a) == "torch":
        return a.clone()
    if hasattr(a, "copy"):
        return a.copy()
    raise ArgumentError(f"cannot copy a {type(a).__name__}; use NumPy, CuPy or PyTorch arrays")


def size(a) -> int:
    """The number of elements of an array of any library (a list too)."""
    n = getattr(a, "size", None)
    if callable(n):            # torch: size() is the shape
        return int(a.numel())
    if n is not None:
        return int(n)
    import numpy as np
    return int(np.asarray(a).size)


def shape(a) -> tuple:
    """The shape of an array of any library, as a tuple of ints."""
    return tuple(int(n) for n in a.shape)


def bits_equal(a, b) -> bool:
    """Whether two arrays of one library and dtype hold the same bits (NaN payloads and the
    sign of zero count), compared where they are."""
    import numpy as np
    if shape(a) != shape(b):
        return False
    lib = library(a)
    if lib == "cupy":
        import cupy
        u = np.dtype(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else None
        return bool(cupy.array_equal(a.view(u), b.view(u))) if u is not None else bool((a == b).all())
    if lib == "torch":
        import torch
        if a.dtype == torch.bool:
            return bool(torch.equal(a, b))
        ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
        return bool(torch.equal(a.view(ints[a.element_size()]), b.view(ints[b.element_size()])))
    ha = host(a) if lib else np.asarray(a)
    hb = host(b) if library(b) else np.asarray(b)
    return np.ascontiguousarray(ha).tobytes() == np.ascontiguousarray(hb).tobytes()
