"""The binary a helper process loads: one record for every kind of helper.

A :class:`Program` holds what a :class:`~cuda_magic.runtime.launch.kernel.Kernel` needs of a
``CompilationResult`` (``key``, ``binary``, ``format``, ``arch``, ``source``), so a helper
makes its Kernels over it, plus the kernels it may launch (python name -> :class:`Entry`:
symbol and parameters).  It is plain data: it pickles (the worker, the sweep's helpers, Dask)
and it is written to a spec directory as files (:mod:`.specdir`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["Entry", "Program", "binary_bytes"]


@dataclass(frozen=True)
class Entry:
    """One kernel of a Program: its symbol (None: the helper finds it by name) and parameters."""

    symbol: str | None
    params: tuple
    printf: bool = False


def binary_bytes(binary) -> bytes:
    """A CompilationResult's binary as bytes (a PTX build may hold text)."""
    return binary.encode() if isinstance(binary, str) else bytes(binary)


@dataclass(frozen=True, eq=False)
class Program:
    """The bytes compiled in the notebook, and the kernels a helper may launch from them.

    ``key`` is the driver's cache key in the helper (``driver.load``): the notebook's own key
    for the worker, ``sweep:``/``launcher:`` + the bytes' sha256 for the others."""

    key: str
    binary: bytes
    format: str
    arch: str
    kernels: Mapping[str, Entry] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def of(cls, result, kernels: Mapping[str, Entry], key: str | None = None,
           prefix: str = "", source: bool = True) -> "Program":
        """The Program of ``result`` (a CompilationResult): ``key`` as given, else ``prefix`` +
        the bytes' sha256; the cell's source unless ``source=False``."""
        binary = binary_bytes(result.binary)
        if key is None:
            key = prefix + hashlib.sha256(binary).hexdigest()
        text = (getattr(result, "source", "") or "") if source else ""
        return cls(key, binary, result.format, result.arch, dict(kernels), text)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.binary).hexdigest()
