"""A launch's grid, block, dynamic shared memory and stream, checked and put in the form the
driver takes (``cuLaunchKernel``'s unsigned ints and stream handle): what ``k[grid, block]``,
``k.launch`` and the methods written like a launch check first, and what ``%%cuda_tune``'s
recorded launches check too (:mod:`cuda_magic.variants.record`)."""

from __future__ import annotations

from ...errors import ArgumentError, quote

__all__ = ["checked_dims", "checked_shared", "stream_handle", "UINT_LIMIT"]

UINT_LIMIT = 1 << 32    # grid, block and dynamic shared bytes: the driver takes unsigned ints


def checked_dims(v, what: str) -> tuple[int, int, int]:
    """``v`` (``what``: "grid" or "block"), an int or 1 to 3 positive ints, as 3 ints."""
    t = (v,) if isinstance(v, int) else tuple(v) if isinstance(v, (tuple, list)) else None
    if not t or len(t) > 3 or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1
                                      for x in t):
        raise ArgumentError(f"{what} must be a positive int or a tuple of 1 to 3 positive ints, "
                            f"not {quote(v, 80)}")
    if any(x >= UINT_LIMIT for x in t):
        raise ArgumentError(f"{what}={quote(v, 80)}: each dimension must be below 2**32 (the "
                            f"driver takes 32-bit unsigned ints)")
    return t + (1,) * (3 - len(t))


def checked_shared(v) -> int:
    """Dynamic shared memory in bytes, checked as a launch takes it."""
    if not isinstance(v, int) or v < 0 or v >= UINT_LIMIT:
        raise ArgumentError(f"shared_mem must be a non-negative int of bytes (below 2**32), not "
                            f"{quote(v, 80)}")
    return v


def stream_handle(s) -> int:
    """The int handle of stream ``s``: None or 0 (the legacy default stream), an int, or a
    CuPy, PyTorch, cuda.core or cuda.bindings stream."""
    if s is None or s == 0:
        return 0
    if isinstance(s, int):
        handle = s
    else:
        handle = None
        for attr in ("ptr", "cuda_stream"):            # CuPy, PyTorch
            if hasattr(s, attr):
                handle = int(getattr(s, attr))
                break
        else:
            if hasattr(s, "__cuda_stream__"):          # cuda.core and the stream protocol
                handle = int(s.__cuda_stream__()[1])
            else:
                try:
                    handle = int(s)                    # cuda.bindings CUstream
                except (TypeError, ValueError):
                    raise ArgumentError(f"stream must be None, an int handle or a CUDA stream "
                                        f"object (CuPy, PyTorch, cuda.core), not "
                                        f"{type(s).__name__}") from None
    if not 0 <= handle < 1 << 64:
        raise ArgumentError(f"stream={quote(s, 80)}: a stream handle is an address, an int from 0 "
                            f"to 2**64 - 1")
    return handle
