"""cuda-magic's error base and how messages quote what they are given.

Every error a user's mistake raises derives from :class:`Error` (keeping a builtin base
too, e.g. ``ConfigError(Error, ValueError)``) and shows in IPython and Jupyter as one
short message.  This module imports nothing from cuda-magic: every layer may use it.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["Error", "BenchError", "HistoryError", "ToolNotFoundError", "printable", "clip", "quote", "bad_char", "QUOTE_LIMIT", "FRAME_LINE_LIMIT"]


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
    string is cut and its length noted; a deep or huge structure is abbreviated)."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}... ({len(value)} characters)"
    import reprlib
    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother, short.maxlong = 3, limit, limit, limit
    short.maxlist = short.maxtuple = short.maxdict = short.maxset = 8
    try:
        text = short.repr(value)
    except (ValueError, RecursionError, OverflowError, MemoryError):  # e.g. a 5,000-digit int
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else f"{text[:limit]}..."


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
