"""A PTX module's kernel entries and their parameter layouts, from the text.

``.entry`` names (with or without ``.visible``/``.weak``; ``.func`` and ``.extern`` are
ignored) and their ``.param`` declarations: the size of the type or of the ``.b8 name[N]``
array, aligned to ``.align N`` or the type's size, offsets from 0 as the PTX ABI lays them
out.  Sizes are always those the driver sees; when it JITs the PTX, parameters aligned
beyond 16 bytes (and those after them) move as in a cubin, which the PTX cannot say.
"""

from __future__ import annotations

import re

from ._format import BinaryFormatError

_PTX_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_PTX_ENTRY = re.compile(r"(?P<quals>(?:\.(?:visible|weak|extern)\s+)*)\.entry\s+"
                        r"(?P<name>[A-Za-z_$%][\w$]*)\s*(?P<open>\()?")
_PTX_SIZES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
              "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
              "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16}
_PTX_PARAM = re.compile(r"\.param\s+(?:\.align\s+(?P<align>\d+)\s+)?\.(?P<type>\w+)\b"
                        r"(?P<rest>[^\[]*?)(?:\[\s*(?P<n>\d+)\s*\])?\s*$", re.S)


def ptx_entries(text: str) -> list[tuple[str, tuple[tuple[int, int], ...] | None]]:
    """``(symbol, params)`` of each ``.entry`` of a PTX module, offsets as the PTX ABI lays them out."""
    text = _PTX_COMMENT.sub(" ", text)
    if ".version" not in text and ".entry" not in text:
        raise BinaryFormatError("expected PTX text (no .version or .entry in it)")
    out = []
    for m in _PTX_ENTRY.finditer(text):
        if ".extern" in m.group("quals"):
            continue
        params: tuple[tuple[int, int], ...] | None = ()
        if m.group("open"):
            close = text.find(")", m.end())
            if close < 0:
                raise BinaryFormatError(f"PTX entry {m.group('name')} has no closing ')'")
            decls = [d.strip() for d in text[m.end():close].split(",") if d.strip()]
            params = _ptx_layout(decls)
        out.append((m.group("name"), params))
    return out


def _ptx_layout(decls: list[str]) -> tuple[tuple[int, int], ...] | None:
    params, end = [], 0
    for decl in decls:
        m = _PTX_PARAM.match(decl)
        if not m or m.group("type") not in _PTX_SIZES:
            return None
        elem = _PTX_SIZES[m.group("type")]
        size = elem * int(m.group("n") or 1)
        align = int(m.group("align") or elem)
        offset = -(-end // align) * align
        params.append((offset, size))
        end = offset + size
    return tuple(params)
