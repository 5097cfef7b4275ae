"""The ``%%cuda_header`` store: headers kept in memory for the session.

``%%cuda_header NAME.cuh`` (:func:`define_header`) keeps a cell's text under a name that later
compiles' ``#include "NAME"`` finds: NVRTC gets the headers as in-memory headers, nvcc as files
beside ``cell.cu`` in its private directory (:mod:`.backends.nvcc`).  A name is checked once,
here, for both compilers.  :func:`note_users` and :func:`header_users` remember which cells
included each header (the header's view lists them).
"""

from __future__ import annotations

import re
import threading
from typing import Iterable

from ..errors import ConfigError, bad_char, quote

__all__ = ["define_header", "remove_header", "session_headers", "header_users", "note_users",
           "NVCC_FILES", "MAX_PART", "MAX_NAME"]


_LOCK = threading.Lock()
_SESSION: dict[str, str] = {}
_USERS: dict[str, list[str]] = {}
_NAME = re.compile(r"[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*")
MAX_PART = 255          # bytes of one part of a header name (a file name: NAME_MAX)
MAX_NAME = 1000         # characters of a whole header name
#: The files nvcc's run writes in its private directory, where the session headers are files too
#: (:mod:`.backends.nvcc`): the cell ``cell.cu``, its output ``out.<format>`` and what ``--keep``
#: leaves (``cell.ptx``, ``cell.compute_90a.cpp1.ii``, ``cell.module_id``...).
NVCC_FILES = re.compile(r"cell\.cu|cell\.module_id|out\.(?:cubin|ptx|fatbin)"
                        r"|cell\.(?:.+\.)?(?:ii|c|cpp|gpu|ptx|cubin|fatbin)")


def _name_problem(name: str) -> str:
    """Why ``name`` cannot be a session header (either compiler), or ''."""
    parts = name.split("/")
    if len(name) > MAX_NAME:
        return f"{len(name)} characters is too long for a file name (at most {MAX_NAME})"
    for part in parts:
        if len(part.encode()) > MAX_PART:
            return f"a part of {len(part)} characters is too long for a file name (at most {MAX_PART})"
    if NVCC_FILES.fullmatch(name):
        return ("nvcc's run keeps the cell and its own files under that name "
                "(cell.cu, out.{cubin,ptx,fatbin}, cell.*.ptx ...); pick another")
    for i in range(1, len(parts)):
        if "/".join(parts[:i]) in _SESSION:
            return (f"{quote('/'.join(parts[:i]))} is already a header, and a name cannot be a file "
                    f"and a directory (nvcc writes the headers as files): remove_header"
                    f"({'/'.join(parts[:i])!r}) or pick another name")
    below = next((n for n in _SESSION if n.startswith(name + "/")), None)
    if below is not None:
        return (f"it is the directory of header {quote(below)}, and a name cannot be a file and "
                f"a directory (nvcc writes the headers as files): pick another name")
    return ""


def define_header(name: str, text: str) -> bool:
    """Make ``#include "NAME"`` find ``text`` in later compiles (both compilers).

    Returns whether the text changed (a new header, or new text for an old one).  A name is
    checked once, here, for both compilers (nvcc writes the headers as files beside the cell):
    a relative file name whose parts are file names (not ``.``/``..``, at most
    :data:`MAX_PART` bytes), none of nvcc's own files (:data:`NVCC_FILES`), and never both a
    file and the directory of another header (``util`` beside ``util/x.cuh``).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name) or \
            {".", ".."} & set(name.split("/")):
        raise ConfigError(f"header name {quote(name, 80)}: use a relative file name such as 'factor.cuh' "
                          "or 'lib/util.cuh' (letters, digits, _ . + -, '/' between parts; no '.' "
                          "or '..' part)", "header")
    if not isinstance(text, str):
        # here, not at the top: importing .backends.base runs .backends' __init__, which imports
        # .backends.nvcc, which imports this module
        from .backends.base import InputTypeError
        raise InputTypeError(f"header text must be a str, not {type(text).__name__}")
    bad = bad_char(text)
    if bad:     # NVRTC would stop reading at a NUL
        raise ConfigError(f"header {name!r} line {bad[0]}, column {bad[1]}: {bad[2]} cannot be "
                          f"compiled", "header")
    with _LOCK:
        problem = _name_problem(name)
        if problem:
            raise ConfigError(f"header name {quote(name, 80)}: {problem}", "header")
        changed = _SESSION.get(name) != text
        _SESSION[name] = text
    return changed


def remove_header(name: str) -> None:
    """Forget a session header (``KeyError`` if there is none)."""
    with _LOCK:
        del _SESSION[name]
        _USERS.pop(name, None)


def session_headers() -> dict[str, str]:
    """A copy of the session headers, name -> text."""
    with _LOCK:
        return dict(_SESSION)


def note_users(names: Iterable[str], user: str) -> None:
    """Record that ``user`` (a cell label such as ``In [3] (scale)``) includes ``names``."""
    with _LOCK:
        for name in names:
            users = _USERS.setdefault(name, [])
            if user in users:
                users.remove(user)
            users.append(user)
            del users[:-20]


def header_users(name: str) -> list[str]:
    """The cells that included session header ``name``, oldest first."""
    with _LOCK:
        return list(_USERS.get(name, ()))
