"""One build per config compiles only its own kernels: the others' bodies are left out.

A cell whose kernels have their own ``//|`` configs is compiled once per distinct config,
and each kernel is bound from its own config's build.  The other kernels of a build are
never launched from it, so :func:`without_bodies` empties their bodies (``{ ... }`` becomes
``{ }`` with the newlines kept): each build compiles one kernel's code, the kernel entries
stay (the binary still lists every kernel; binding takes each from its own build), and every
line keeps its number for the compiler's messages, SASS line info and the heat map.

A body is kept as written when emptying it could change the rest of the cell: a
preprocessor line inside it (a ``#define`` used later), or a body the scan cannot delimit.
"""

from __future__ import annotations

import re
from typing import Iterable

from .decls import KernelDecl
from .scan import blank

__all__ = ["without_bodies", "body_span"]


def _line_offsets(text: str) -> list[int]:
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return starts


def _match(code: str, i: int, open_: str, close: str) -> int:
    depth = 0
    for j in range(i, len(code)):
        c = code[j]
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j
    return -1


def body_span(code: str, starts: list[int], decl: KernelDecl) -> tuple[int, int] | None:
    """``(open, close)`` offsets of the braces of ``decl``'s body in ``code`` (comments and
    strings blanked), or None when it has none or cannot be found for sure."""
    if not decl.definition or decl.name_line - 1 >= len(starts):
        return None
    m = re.compile(rf"\b{re.escape(decl.name)}\s*\(").search(code, starts[decl.name_line - 1])
    if m is None:
        return None
    close = _match(code, m.end() - 1, "(", ")")
    if close < 0:
        return None
    # noexcept(...), -> T, attributes: anything up to the body without ; or another body
    after = re.compile(r"[^{};]*").match(code, close + 1)
    brace = after.end()
    if brace >= len(code) or code[brace] != "{":
        return None
    end = _match(code, brace, "{", "}")
    return (brace, end) if end > 0 else None


def without_bodies(source: str, drop: Iterable[KernelDecl]) -> str:
    """``source`` with the bodies of the kernels ``drop`` emptied, every newline kept."""
    code = blank(source)
    starts = _line_offsets(source)
    out = list(source)
    changed = False
    for decl in drop:
        span = body_span(code, starts, decl)
        if span is None:
            continue
        a, b = span
        if re.search(r"^[ \t]*#", code[a + 1:b], re.M):      # a directive: its effect outlives the body
            continue
        for k in range(a + 1, b):
            if out[k] not in "\r\n":
                out[k] = " "
        changed = True
    return "".join(out) if changed else source
