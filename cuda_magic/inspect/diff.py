"""Diffs between builds: SASS and PTX as comparable lines, side-by-side rows, unified text.

SASS is compared by instruction: addresses, encodings, section directives,
``-lineinfo`` markers and the trailing ``NOP`` padding are dropped so the diff
shows only code that changed; labels stay.  ``count_ftz`` counts the
instructions with the ``.FTZ`` (flush-to-zero) modifier.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Sequence

__all__ = ["instructions", "ptx_lines", "count_ftz", "Row", "side_by_side", "unified", "changed"]

_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-fA-F]{4,}\*/\s*(.*?)\s*$")   # inspect drops encodings
_LABEL = re.compile(r"^\s*(\.L_x_\d+|\.L_\w+):\s*$")
_FTZ = re.compile(r"\.FTZ\b")


def instructions(sass: str) -> list[str]:
    """One function's SASS as ``["S2R R0, SR_TID.X ;", ..., ".L_x_1:"]``: instructions and labels."""
    out = []
    for line in sass.splitlines():
        m = _INSTRUCTION.match(line)
        if m and m.group(1):
            out.append(re.sub(r"\s+", " ", m.group(1)))
        elif _LABEL.match(line):
            out.append(line.strip())
    while out and (out[-1] == "NOP ;" or out[-1] == "NOP;" or _LABEL.match(out[-1])):
        out.pop()           # padding to the function's alignment, and the end label
    return out


def ptx_lines(ptx: str) -> list[str]:
    """PTX without comments and blank lines (the compiler banner names its build)."""
    out = []
    for line in ptx.splitlines():
        code = line.split("//", 1)[0].rstrip()
        if code.strip():
            out.append(code.replace("\t", "    "))
    return out


def count_ftz(lines: Sequence[str]) -> int:
    """How many instructions carry ``.FTZ``."""
    return sum(1 for line in lines if _FTZ.search(line))


@dataclass(frozen=True)
class Row:
    """One row of a side-by-side diff: ``tag`` is equal, replace, delete (left only) or insert."""

    tag: str
    left: str | None
    right: str | None
    left_no: int | None
    right_no: int | None


def _opcodes(a: Sequence[str], b: Sequence[str]):
    return difflib.SequenceMatcher(None, list(a), list(b), autojunk=False).get_opcodes()


def side_by_side(a: Sequence[str], b: Sequence[str]) -> list[Row]:
    """Rows pairing ``a`` (left) with ``b`` (right); changed blocks are paired line by line."""
    rows = []
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            left = a[i] if i < i2 else None
            right = b[j] if j < j2 else None
            kind = tag if tag == "equal" else ("replace" if left is not None and right is not None
                                               else "delete" if left is not None else "insert")
            rows.append(Row(kind, left, right, i + 1 if left is not None else None,
                            j + 1 if right is not None else None))
    return rows


def unified(a: Sequence[str], b: Sequence[str], a_name: str, b_name: str, context: int = 3) -> list[str]:
    """``difflib.unified_diff`` lines (no trailing newlines); empty when equal."""
    return list(difflib.unified_diff(list(a), list(b), a_name, b_name, n=context, lineterm=""))


def changed(a: Sequence[str], b: Sequence[str]) -> int:
    """How many lines differ: replaced, removed or added (counting the longer side of a change)."""
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in _opcodes(a, b) if tag != "equal")
