"""cuda-magic's error base and how messages quote what they are given.

Every error a user's mistake raises derives from :class:`Error` (keeping a builtin base
too, e.g. ``ConfigError(Error, ValueError)``) and shows in IPython and Jupyter as one
short message.  This module imports nothing from cuda-magic: every layer may use it.

One concept: every error a user can meet, in one place, and how their messages quote values.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

# every error a user's mistake raises (each derives from Error), all of them exported by
# cuda_magic; the helpers below (printable, clip, quote, bad_char) are imported by name
__all__ = ["Error", "BenchError", "HistoryError", "ShowError", "ViewError", "ToolNotFoundError",
           "ConfigError", "CellError", "CompileError", "InputTypeError", "CompileTimeoutError",
           "NoKernelError", "KernelKeyError", "InstanceError", "BinaryFormatError", "OccupancyError",
           "OccupancyTypeError", "PlotError", "NoMatplotlibError", "CudaError", "NoGPUError",
           "ArgumentError", "ArgumentRangeError", "ProfilerPermissionError", "ToolRunError", "NumbersError", "DtypeError", "VerifyError", "SweepError",
           "TuneError", "TuneRunError", "RunError", "ExportError", "KernelHangError", "RemoteError",
           "CuptiError"]


class Error(Exception):
    """Base of cuda-magic's errors: a user's mistake, shown as one short message.

    Subclasses keep a builtin base too (``ConfigError(Error, ValueError)``), so
    ``except ValueError`` still catches them.  In IPython and Jupyter they show the
    message and the user's own frames only (``_render_traceback_``, IPython's hook):
    not the frames inside cuda-magic, IPython or installed libraries, and not the
    line that calls a magic (``get_ipython().run_cell_magic(...)`` would echo the
    whole cell); each line shown is capped.
    """

    def __str__(self) -> str:
        # The message as given (KeyError's own str() would repr it); printable wherever it is
        # shown: what the output stream cannot encode is escaped.
        return printable(BaseException.__str__(self))

    def _render_traceback_(self) -> list[str]:
        try:
            lines = [ln for frame in _user_frames(self.__traceback__) for ln in _frame_lines(frame)]
        except Exception:       # showing an error must not fail
            lines = []
        notes = [str(n) for n in getattr(self, "__notes__", ())]
        return printable("\n".join([*lines, f"{type(self).__name__}: {self}", *notes])).split("\n")


class ListingGapError(ValueError):
    """Internal: nvdisasm's ``-plr`` output does not give the whole SASS listing (a gap: code it
    skipped), so the plain listing is run for; never reaches a user."""


class BenchError(Error, ValueError):
    """A ``bench`` setting out of range (``repeat``, ``warmup``, ``graph``, ``nbytes``, ...)."""


class HistoryError(Error, KeyError):
    """``history(name)`` for a kernel that was not benched in this session."""


class ShowError(Error, ValueError):
    """``show(obj, what, kernel)`` was asked for a part or a kernel that is not there."""


class ViewError(Error, TypeError):
    """``view``/``show`` was given something that has no view."""


class ToolNotFoundError(Error, RuntimeError):
    """A CUDA tool (nvcc, nvdisasm, cuobjdump, ncu, NVRTC...) is not installed; the message
    says where it was looked for and how to get it."""


FRAME_LINE_LIMIT = 200      # characters of a user's source line an error's traceback shows
_MAGIC_CALL = re.compile(r"\brun_(?:cell|line)_magic\(")


def _library_dirs() -> tuple[str, ...]:
    """Where code that is not the user's lives: cuda-magic, the standard library, installed
    packages, and IPython/ipykernel wherever they were imported from."""
    import os
    import sys
    import sysconfig
    dirs = {os.path.dirname(os.path.abspath(__file__))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            dirs.add(sysconfig.get_path(key))
        except KeyError:
            pass
    for name in ("IPython", "ipykernel", "traitlets", "ipywidgets"):
        mod = sys.modules.get(name)
        if getattr(mod, "__file__", None):
            dirs.add(os.path.dirname(os.path.abspath(mod.__file__)))
    return tuple(os.path.normcase(d).rstrip(os.sep) + os.sep for d in dirs if d)


def _user_frames(tb) -> list:
    """The frames of ``tb`` a user wants to see: their own code, minus lines calling a magic."""
    import os
    import traceback
    skip = _library_dirs()
    out = []
    for f in traceback.extract_tb(tb):
        name = f.filename or ""
        if name.startswith("<frozen ") or (
                not name.startswith("<") and os.path.normcase(os.path.abspath(name)).startswith(skip)):
            continue
        if f.line and _MAGIC_CALL.search(f.line):
            continue
        out.append(f)
    return out


def _frame_lines(f) -> list[str]:
    """``Cell In[3], line 2, in f`` (IPython's name for a cell) or ``File "x.py", line 2, in f``,
    then the source line, capped."""
    import sys
    where = None
    if "IPython" in sys.modules:
        try:
            ip = sys.modules["IPython"].get_ipython()
            tag = ip.compile.format_code_name(f.filename) if ip is not None else None
            if tag:
                where = f"{tag[0]} {tag[1]}, line {f.lineno}"
        except Exception:
            pass
    if where is None:
        where = f'File "{f.filename}", line {f.lineno}'
    head = f"  {where}" + ("" if f.name == "<module>" else f", in {f.name}")
    line = (f.line or "").strip()
    return [head] + ([f"    {clip(line, FRAME_LINE_LIMIT)}"] if line else [])


# ---- what messages quote ----------------------------------------------------

QUOTE_LIMIT = 200   # characters of any one value a message quotes


def printable(text: str, encoding: str | None = None) -> str:
    """``text`` with what ``encoding`` (default: ``sys.stdout``'s, else UTF-8) cannot encode
    written as escapes (``\\xe9``, ``\\ud800``), so printing it cannot fail."""
    import codecs
    import sys
    enc = encoding or getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        codecs.lookup(enc)
    except LookupError:
        enc = "utf-8"
    try:
        text.encode(enc)
        return text
    except UnicodeEncodeError:
        return text.encode(enc, "backslashreplace").decode(enc, "replace")


def clip(text: str, limit: int = QUOTE_LIMIT) -> str:
    """Plain ``text`` cut to ``limit`` characters, noting the full length when it was cut."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def quote(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``value`` as a message quotes it: its repr, at most ``limit`` characters of it (a long
    string is cut and its length noted; a deep or huge structure is abbreviated; an int past
    Python's int->str digit limit, even inside a structure, is ``<int>``).  It never raises."""
    try:
        if isinstance(value, str):
            if len(value) <= limit:
                return repr(value)
            return f"{value[:limit]!r}... ({len(value)} characters)"
        text = _repr(limit).repr(value)
    except Exception:                   # a repr that raises, a structure too deep to walk...
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else f"{text[:limit]}..."


_REPRS: dict = {}


def _repr(limit: int):
    """A :class:`reprlib.Repr` that abbreviates at ``limit`` and quotes a huge int as ``<int>``."""
    got = _REPRS.get(limit)
    if got is None:
        import reprlib

        class Short(reprlib.Repr):
            def repr_int(self, x, level):
                try:
                    return super().repr_int(x, level)
                except ValueError:      # past sys.get_int_max_str_digits()
                    return "<int>"

        got = Short()
        got.maxlevel, got.maxstring, got.maxother, got.maxlong = 3, limit, limit, limit
        got.maxlist = got.maxtuple = got.maxdict = got.maxset = 8
        if len(_REPRS) < 16:
            _REPRS[limit] = got
    return got


_BAD_CHAR = re.compile("[\\x00\\ud800-\\udfff]")


def bad_char(text: str) -> tuple[int, int, str] | None:
    """Where ``text`` holds a NUL or a lone surrogate, which no compiler can be given (NVRTC
    stops reading at a NUL): ``(line, column, "a NUL character (\\x00)")``, 1-based, lines
    counted on ``\\n`` as compilers count them; None if it holds neither."""
    found = _BAD_CHAR.search(text)
    if found is None:
        return None
    at = found.start()
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    kind = "a NUL character" if found.group() == "\0" else "a lone surrogate"
    return line, column, f"{kind} ({ascii(found.group())[1:-1]})"


# -- configuration and cells -----------------------------------------------------------------


class ConfigError(Error, ValueError):
    """A bad configuration; ``key`` names the offending key when there is one."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


class CellError(ConfigError):
    """A problem in the cell itself; ``line`` is the cell line (1 = first line after ``%%cuda``)."""

    def __init__(self, message: str, line: int | None = None, key: str | None = None):
        super().__init__(f"cell line {line}: {message}" if line else message, key)
        self.line = line


class SignatureError(ValueError):
    """A ``__global__`` declaration that cannot be parsed; ``.line`` is 1-based (or None)."""

    def __init__(self, message: str, line: int | None = None):
        if line is not None and f"line {line}" not in message:
            message = f"line {line}: {message}"
        super().__init__(message)
        self.line = line


# -- compiling -------------------------------------------------------------------------------


class CompileError(Error, RuntimeError):
    """The compiler rejected the source or the flags.

    Carries ``log`` (the compiler's output), ``argv`` (what ran), ``source``
    and ``compiler``; the message shows the compiler's error lines with the
    source lines they point at.
    """

    shown = False   # set once the error was displayed in full (the %%cuda cell's error view)
    context = ""    # e.g. "variant 'fast'" (%%cuda_compare): which build of the cell failed
    notes: tuple[str, ...] = ()   # what cuda-magic adds: where an include was searched for, ...
    leading = 0                   # how many of the notes come before the compiler's lines

    def note(self, text: str, first: bool = False) -> "CompileError":
        """Add a line after the compiler's errors (e.g. the likely fix), or with ``first``
        before them (the cause, when the log buries it); returns the error itself."""
        at = self.leading if first else len(self.notes)
        self.notes = (*self.notes[:at], text, *self.notes[at:])
        self.leading += first
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
    MAX_LINE = 300       # characters of any one quoted source line a message shows
    MAX_ERROR_LINE = 4000    # a compiler's line is kept whole up to this (CuTe's types run
                             # long); a longer one is garbage, cut to MAX_LINE

    def _whole(self, line: str) -> str:
        """A compiler's line, whole; past :attr:`MAX_ERROR_LINE` cut to :attr:`MAX_LINE`."""
        return line if len(line) <= self.MAX_ERROR_LINE else clip(line, self.MAX_LINE)

    def _message(self) -> str:
        src = self.source.split("\n")
        parts = [self.what, *(clip(n, 2000) for n in self.notes[:self.leading])]
        errors = self.error_lines()
        for lineno, text in errors[:self.MAX_ERRORS]:
            parts.append(self._whole(text))
            if lineno is not None and 0 < lineno <= len(src):
                quoted = clip(src[lineno - 1].rstrip("\r"), self.MAX_LINE)
                parts.append(f"  {lineno:>4} | {quoted}")
        if len(errors) > self.MAX_ERRORS:
            parts.append(f"... and {len(errors) - self.MAX_ERRORS} more errors (all in .log)")
        if not errors:
            tail = self.log.strip().splitlines()[-20:] or ["(the compiler printed nothing)"]
            parts.extend(self._whole(line) for line in tail)
        return "\n".join(parts + [clip(n, 2000) for n in self.notes[self.leading:]])

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


class CompileTimeoutError(CompileError):
    """A compile ran past the compile time limit (:func:`set_compile_timeout`); ``env`` is the
    setting's environment variable, which the message names."""

    def __init__(self, compiler: str, seconds: float, argv: Sequence[str], source: str,
                 filename: str = "cell.cu", done: str = "", env: str = ""):
        self.timeout, self.done, self.env = seconds, done, env
        super().__init__(compiler, "", argv, source, filename)
        self.log = self._why()

    @property
    def what(self) -> str:
        return (f"{self.compiler} did not finish compiling {self.filename} within the compile "
                f"time limit of {self.timeout:g} s" + (f" for {self.context}" if self.context else ""))

    def _why(self) -> str:
        return (f"{self.done}. Raise or remove the limit with cuda_magic.set_compile_timeout"
                f"(seconds or None)" + (f" or the {self.env} environment variable." if self.env
                                        else "."))

    def _message(self) -> str:
        return "\n".join([self.what, self._why(), *self.notes])

    def error_lines(self) -> list:
        return []

    def _render_traceback_(self) -> list[str]:
        if not self.shown:
            return super()._render_traceback_()
        return [f"CompileTimeoutError: {self.what} (shown above)"]


class NoKernelError(Error, KeyError, AttributeError):
    """No kernel by that name in a build or a ``%%cuda`` Module (``m["x"]`` and ``m.x``: a
    ``KeyError`` and an ``AttributeError`` both); the message lists the kernels there are."""


class KernelKeyError(NoKernelError, TypeError):
    """A ``%%cuda`` Module asked for a kernel by a key that is not a str (``m[5]``, ``m[None]``):
    a ``TypeError``, and the ``NoKernelError`` (``KeyError``) a missing name is."""


class InstanceError(Error, ValueError):
    """An instance the binary does not hold, or holds ambiguously (nvcc)."""


class LinkError(RuntimeError):
    """The device link failed; the message holds nvJitLink's log."""


class BinaryFormatError(Error, ValueError):
    """The bytes are not a cubin, PTX or fatbin this module can read."""


# -- looking inside and showing --------------------------------------------------------------


class OccupancyError(Error, ValueError):
    """A bad argument to the occupancy calculator; ``key`` names the parameter."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


class OccupancyTypeError(OccupancyError, TypeError):
    """An argument of the wrong type (e.g. a float block size)."""


class PlotError(Error, ValueError):
    """A plot of a sweep cannot be drawn: nothing was timed, or ``by`` is no parameter."""


class NoMatplotlibError(PlotError, ImportError):
    """``Tuning.plot()`` needs matplotlib."""


# -- running ---------------------------------------------------------------------------------


class CudaError(Error, RuntimeError):
    """A CUDA driver call failed; ``name`` is the error's name (``CUDA_ERROR_...``)."""

    def __init__(self, message: str, name: str = "", code: int = -1):
        super().__init__(message)
        self.name, self.code = name, code


class NoGPUError(CudaError):
    """Launching needs an NVIDIA GPU and driver, and there is none."""


class KernelHangError(Error, RuntimeError):
    """A kernel ran past the launch time limit, or Ctrl-C stopped the wait for it.

    ``kernel`` its name, ``grid``/``block`` its dimensions, ``seconds`` how long it had run,
    ``diagnosis`` where its warps waited (a ``runtime.hang.Diagnosis``; None if none could be
    read, ``why_not`` then says why), ``interrupted`` whether Ctrl-C ended the wait."""

    def __init__(self, message: str, *, kernel: str = "", grid=(), block=(), seconds: float = 0.0,
                 diagnosis=None, why_not: str = "", interrupted: bool = False):
        super().__init__(message)
        self.kernel, self.grid, self.block, self.seconds = kernel, tuple(grid), tuple(block), seconds
        self.diagnosis, self.why_not, self.interrupted = diagnosis, why_not, interrupted


class ProfilerPermissionError(Error, PermissionError):
    """Nsight Compute may not read the GPU's performance counters (``ERR_NVGPUCTRPERM``)."""


class CuptiError(Error, RuntimeError):
    """CUPTI could not record: not installed, another profiler holds it, a driver too old for
    it, or a Recorder already recording.  One line naming what failed."""


class ToolRunError(Error, RuntimeError):
    """The tool or the helper process failed; the message quotes what they said."""


class NumbersError(Error, ValueError):
    """A count or a pair of arrays these tools cannot take; the message names the parameter."""


class DtypeError(Error, TypeError):
    """A dtype these tools do not take (float16, float32 and float64 they do)."""


class VerifyError(Error, ValueError):
    """A check of outputs that cannot be made as asked: rules that contradict each other, a
    parameter out of range, a reference that gives nothing to compare (names the parameter)."""


class ExportError(Error, ValueError):
    """An export that cannot be made as asked: a format, option, parameter or path it cannot
    take (the message names which), or a kernel whose parameters a torch op cannot carry."""


class RemoteError(Error, ConnectionError):
    """The Dask cluster that runs launches cannot be reached, or a worker went away during a
    call (the message names the address); nothing was written into the caller's arrays."""


class SweepError(Error, RuntimeError):
    """The helper processes or the Dask cluster cannot run the jobs."""


class SpecError(Exception):
    """The spec directory is unreadable or the binary is not the one the spec names."""


class EncodingError(ValueError):
    """An argument no helper process can take, or an encoded argument of an unknown kind (the
    callers say which in their own words)."""


class StreamEnded(EOFError):
    """The stream ended inside a frame: the other end died while it was writing."""


# -- variants --------------------------------------------------------------------------------


class TuneError(ConfigError):
    """A bad space, ``--where``, ``--run`` or option of a sweep; ``key`` names the parameter."""


class TuneRunError(Error, RuntimeError):
    """The sweep could not run its candidates (``--run`` failed while recording, no GPU...)."""


class RunError(Error):
    """A ``run`` expression failed for one variant, or its arrays cannot be compared."""


# -- running: arguments ----------------------------------------------------------------------


class ArgumentError(Error, TypeError):
    """A kernel argument of the wrong count or type; the message names the parameter."""


class ArgumentRangeError(Error, OverflowError):
    """A number that does not fit the parameter's declared C type."""


# -- compiling: internal ---------------------------------------------------------------------


class Untrusted(Exception):
    """A file or directory the cache will not use (the message says why)."""


class NoDiagnosis(Exception):
    """No hang diagnosis could be read (runtime/hang/gdb.py): no cuda-gdb, attaching refused, it
    failed; the message says which.  Internal: it becomes the KernelHangError's ``why_not``."""


class Cancelled(Exception):
    """The wait for the builds of a cell was given up (Ctrl-C): a build still running stops."""
