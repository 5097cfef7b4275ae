"""What every compiler backend shares: the backend spec (:class:`Backend`), what a compile
gives back (:class:`Output`), its errors and the ptxas flag forms.  The registry of backends is
the package (:mod:`cuda_magic.compile.backends`); the backends import only this module (and
:mod:`.limits`), so nothing in the package imports the package itself."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ...config import ConfigError, Error, clip, printable
from ...errors import ToolNotFoundError

__all__ = ["Backend", "Output", "CompileError", "InputTypeError", "ToolNotFoundError",
           "ptxas_each", "ptxas_joined"]


class CompileError(Error, RuntimeError):
    """The compiler rejected the source or the flags.

    Carries ``log`` (the compiler's output), ``argv`` (what ran), ``source``
    and ``compiler``; the message shows the compiler's error lines with the
    source lines they point at.
    """

    shown = False   # set once the error was displayed in full (the %%cuda cell's error view)
    context = ""    # e.g. "variant 'fast'" (%%cuda_compare): which build of the cell failed
    notes: tuple[str, ...] = ()   # what cuda-magic adds: where an include was searched for, ...

    def note(self, text: str) -> "CompileError":
        """Add a line after the compiler's errors (e.g. the likely fix); returns the error itself."""
        self.notes = (*self.notes, text)
        self.args = (self._message(),)
        return self

    def within(self, context: str) -> "CompileError":
        """Name which build failed (shown after the file name); returns the error itself."""
        self.context = context
        self.args = (self._message(),)
        return self

    @property
    def what(self) -> str:
        """``nvrtc failed to compile cell.cu`` (``for variant 'x'``)."""
        return f"{self.compiler} failed to compile {self.filename}" + (
            f" for {self.context}" if self.context else "")

    def __init__(self, compiler: str, log: str, argv: Sequence[str], source: str,
                 filename: str = "cell.cu"):
        self.compiler, self.log, self.argv, self.source = compiler, log, tuple(argv), source
        self.filename = filename
        super().__init__(self._message())

    def error_lines(self) -> list[tuple[int | None, str]]:
        """``(cell line or None, message)`` for each error line in the log."""
        out = []
        # cudafe/NVRTC: "cell.cu(3): error: ..."; the host compiler: "cell.cu:3:10: fatal error: ..."
        pat = re.compile(rf"^{re.escape(self.filename)}(?:\((\d+)\)|:(\d+):\d+):"
                         r" (?:catastrophic |fatal )?error")
        for line in self.log.splitlines():
            m = pat.match(line)
            if m:
                out.append((int(m.group(1) or m.group(2)), line))
            elif re.search(r"\b(error|fatal)\s*:", line):  # not "1 error detected"
                out.append((None, line))
        return out

    MAX_ERRORS = 20      # compiler error lines a message shows (the log keeps them all)
    MAX_LINE = 300       # characters of any one log or source line a message shows

    def _message(self) -> str:
        src = self.source.split("\n")
        parts = [self.what]
        errors = self.error_lines()
        for lineno, text in errors[:self.MAX_ERRORS]:
            parts.append(clip(text, self.MAX_LINE))
            if lineno is not None and 0 < lineno <= len(src):
                quoted = clip(src[lineno - 1].rstrip("\r"), self.MAX_LINE)
                parts.append(f"  {lineno:>4} | {quoted}")
        if len(errors) > self.MAX_ERRORS:
            parts.append(f"... and {len(errors) - self.MAX_ERRORS} more errors (all in .log)")
        if not errors:
            tail = self.log.strip().splitlines()[-20:] or ["(the compiler printed nothing)"]
            parts.extend(clip(line, self.MAX_LINE) for line in tail)
        return "\n".join(parts + [clip(n, 2000) for n in self.notes])

    def missing_includes(self) -> list[str]:
        """Names of ``#include``s the compiler could not find, in log order."""
        found = re.findall(r'cannot open source file "([^"\n]+)"|fatal error: ([^:\n]+): No such file',
                           self.log)
        return list(dict.fromkeys(a or b for a, b in found))

    def _render_traceback_(self) -> list[str]:
        if not self.shown:
            return super()._render_traceback_()
        n = len(self.error_lines())
        return [printable(f"CompileError: {self.what} ({n} error{'s' if n != 1 else ''}, shown above)")]


class InputTypeError(Error, TypeError):
    """A compile input of the wrong type (the source, a header's text, name expressions, a cache
    limit); the message names the parameter."""


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
