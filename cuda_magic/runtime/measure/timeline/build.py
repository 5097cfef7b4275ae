"""The instrumented build of a kernel's cell, and the names its marks record.

The same source under the same resolved config, with ``-DCUDA_MAGIC_TIMELINE`` appended to
the compiler's flag list (layer ``timeline``: it shows in the argv and the provenance), built
through :func:`cuda_magic.compile.compile_resolved`, so it is cached like any build.  The names:
every ``CM_RANGE_BEGIN("...")``, ``CM_RANGE_END("...")`` and ``CM_MARK("...")`` in the text the
compile read (the cell, its ``%%cuda_header``s and its headers on disk), hashed as the header
hashes them (:func:`.events.name_id`).
"""

from __future__ import annotations

import codecs
import re

from ....compile.compiler import CompilationResult, compile_resolved
from ....compile.packaged import is_packaged
from ....errors import ArgumentError
from .events import name_id

__all__ = ["DEFINE", "LAYER", "instrumented", "marks", "names_in", "HOW"]

DEFINE = "-DCUDA_MAGIC_TIMELINE"
LAYER = "timeline"
HOW = ('#include <cuda_magic/timeline.h> and mark what to time: CM_RANGE_BEGIN("name"); ... '
       'CM_RANGE_END("name"); or CM_MARK("name")')

_MARK = re.compile(r'\bCM_(RANGE_BEGIN|RANGE_END|MARK)\s*\(\s*((?:"(?:[^"\\\n]|\\.)*"\s*)+)\)')
_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_COMMENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|(//[^\n]*|/\*.*?\*/)', re.S)


def _uncommented(text: str) -> str:
    return _COMMENT.sub(lambda m: " " if m.group(1) else m.group(0), text)


def _literal(parts: str) -> str:
    """The text of adjacent string literals (``"a" "b"`` -> ``ab``), C escapes decoded."""
    raw = b"".join(codecs.escape_decode(m.group(1).encode("utf-8"))[0]
                   for m in _LITERAL.finditer(parts))
    return raw.decode("utf-8", "replace")


def marks(text: str) -> list[tuple[str, str]]:
    """``[(kind, name), ...]`` of the marks in ``text`` outside comments, in order (kind:
    ``RANGE_BEGIN``, ``RANGE_END``, ``MARK``)."""
    return [(m.group(1), _literal(m.group(2))) for m in _MARK.finditer(_uncommented(text))]


def _texts(result: CompilationResult) -> list[str]:
    """What the compile read that may hold marks: the source, the in-memory headers that are
    not cuda-magic's (``%%cuda_header``s), the user's headers on disk."""
    texts = [result.source]
    texts += [t for n, t in result.inputs.memory.items()
              if n in result.inputs.session and not is_packaged(n)]
    for path, _ in result.inputs.files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                texts.append(f.read())
        except OSError:
            pass
    return texts


def names_in(result: CompilationResult) -> dict[int, str]:
    """id -> name for every mark's literal in what ``result`` was compiled from."""
    return {name_id(name): name for text in _texts(result) for _, name in marks(text)}


def instrumented(result: CompilationResult, kernel: str) -> CompilationResult:
    """The build of ``result``'s source that records its marks; an error naming what to do
    when the source has none (``kernel``: the name to say)."""
    if not any(marks(t) for t in _texts(result)):
        raise ArgumentError(f"{kernel}.timeline: the cell has no marks to record; {HOW} "
                            f"(see docs/timeline.md)")
    config = result.config
    compiler = config["compiler"]
    if DEFINE not in config.get(compiler, []):
        config = config.appended(compiler, [DEFINE], LAYER)
    return compile_resolved(result.source, config, name_expressions=result.name_expressions)
