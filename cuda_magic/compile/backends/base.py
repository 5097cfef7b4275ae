"""What every compiler backend shares: the backend spec (:class:`Backend`), what a compile
gives back (:class:`Output`), its errors and the ptxas flag forms.  The registry of backends is
the package (:mod:`cuda_magic.compile.backends`); the backends import only this module (and
:mod:`.limits`), so nothing in the package imports the package itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from ...config import ConfigError
from ...errors import CompileError, InputTypeError, ToolNotFoundError

__all__ = ["Backend", "Output", "CompileError", "InputTypeError", "ToolNotFoundError",
           "ptxas_each", "ptxas_joined"]


@dataclass(frozen=True)
class Output:
    """What one compiler run produced."""

    binary: bytes
    format: str
    argv: tuple[str, ...]
    log: str
    lowered_names: tuple[tuple[str, str], ...] = ()
    ptx: str | None = field(default=None, repr=False)  # PTX from the same run, if free
    pch: str = ""      # "created" or "used" when a precompiled header was made or used


def ptxas_each(items: Sequence[str]) -> list[str]:
    """Forward each ptxas item as its own ``--ptxas-options=<item>`` (NVRTC)."""
    return [f"--ptxas-options={item}" for item in items]


def ptxas_joined(items: Sequence[str]) -> list[str]:
    """Forward all ptxas items as one ``--ptxas-options=a,b,c`` (nvcc)."""
    return [f"--ptxas-options={','.join(items)}"] if items else []


@dataclass(frozen=True)
class Backend:
    """A compiler backend.

    ``compile(source, *, arch, target_format, flags, ptxas, name_expressions, headers)``
    returns an :class:`Output` or raises :class:`CompileError`; ``ptxas`` is
    already forwarded by ``forward_ptxas``; ``headers`` maps include names to
    text (NVRTC: in-memory headers; nvcc: files beside ``cell.cu`` in its
    private directory).  ``version()`` returns a string.
    """

    name: str
    formats: tuple[str, ...]
    default_format: str
    forward_ptxas: Callable[[Sequence[str]], list[str]]
    compile: Callable[..., Output]
    version: Callable[[], str]
    std_headers: bool = False   # takes cuda-magic's in-memory standard headers (NVRTC has none)
    pch: bool = False           # compile() takes pch= (a digest of the headers read) for a PCH

    def __post_init__(self):
        if self.default_format not in self.formats:
            raise ConfigError(f"backend {self.name!r}: default format "
                              f"{self.default_format!r} is not one of {self.formats}", "compiler")
