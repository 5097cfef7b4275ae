"""Scanning C++ text: blanking, bracket matching, splitting at top-level commas.

Pure text work for the cell's declaration parser (:mod:`.signature`): the source is first
*blanked* (comments and the contents of literals turned into spaces, same length, newlines
kept) so that offsets and line numbers in the blanked copy are those of the original;
:func:`without_directives` blanks preprocessor lines too.
"""

from __future__ import annotations

import re

__all__ = ["blank", "without_directives", "line_at", "closing", "closing_paren", "split_top",
           "split_macro_args", "split_default", "norm_type", "NAME", "TOKEN", "HEAD", "IDENT"]

_LEX = re.compile(r"""
    (?P<comment>//(?:\\.|[^\\\n])*|/\*.*?(?:\*/|\Z))
  | (?P<raw>(?:u8|u|U|L)?R"(?P<d>[^()\\\s"]{0,16})\(.*?(?:\)(?P=d)"|\Z))
  | (?P<lit>"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)
  | [A-Za-z_]\w* | \.?\d(?:[eEpP][+-]|[\w.'])*      # identifiers, numbers (1'000 is no char)
""", re.S | re.X)
NAME = r"(?:::\s*)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*"
TOKEN = re.compile(NAME + r"|\S")
HEAD = re.compile(r"\s*(?:(?P<id>" + NAME + r")|(?P<ch>\S))")
IDENT = re.compile(r"\b[A-Za-z_]\w*")


def blank(source: str, strings: bool = True) -> str:
    """``source`` with comments and the contents of string/char literals turned into spaces
    (with ``strings=False``: comments only).

    Same length, newlines kept; quotes stay, so ``extern "C"`` becomes ``extern " "``.
    """
    out = list(source)
    for m in _LEX.finditer(source):
        kind = m.lastgroup                     # None for identifiers and numbers
        if kind is None or (kind != "comment" and not strings):
            continue
        a, b = m.span()
        if kind != "comment":                  # keep the quotes, blank what is between
            a = source.index('"', a) + 1 if kind == "raw" else a + 1
            if b > a and source[b - 1] == source[a - 1]:
                b -= 1
        for k in range(a, b):
            if out[k] not in "\r\n":
                out[k] = " "
    return "".join(out)


def without_directives(source: str, blanked: str | None = None) -> str:
    """blank(source) with preprocessor lines (and their continuations) blanked as well."""
    lines, cont = (blank(source) if blanked is None else blanked).split("\n"), False
    for i, text in enumerate(lines):
        if cont or text.lstrip().startswith("#"):
            cont = text.rstrip().endswith("\\")
            lines[i] = re.sub(r"[^\r]", " ", text)
    return "\n".join(lines)


def line_at(text: str, pos: int) -> int:
    """The 1-based line of offset ``pos``."""
    return text.count("\n", 0, pos) + 1


def closing(text: str, i: int, stop: str = ";") -> int:
    """Index of the bracket closing ``text[i]`` ('(', '<' or '{'); -1 if unbalanced or a stop char comes
    first.  '<' and '>' count only outside (), [] and {}."""
    depth = angle = 0
    for j in range(i, len(text)):
        c = text[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "<" and depth == 0:
            angle += 1
        elif c == ">" and depth == 0 and angle:
            angle -= 1
        elif c in stop:
            return -1
        if depth < 0:
            return -1
        if depth == angle == 0:
            return j
    return -1


def closing_paren(text: str, i: int) -> int:
    """Index of the ')' closing the '(' at ``text[i]``, counting parentheses only; -1 if none."""
    depth = 0
    for j in range(i, len(text)):
        depth += (text[j] == "(") - (text[j] == ")")
        if depth == 0:
            return j
    return -1


def split_top(text: str) -> list[tuple[int, int]]:
    """Spans of the top-level comma-separated parts of ``text``."""
    spans, depth, angle, start = [], 0, 0, 0
    for j, c in enumerate(text):
        depth += (c in "([{") - (c in ")]}")
        if depth == 0 and c in "<>":
            angle = max(0, angle + (1 if c == "<" else -1))
        elif depth == angle == 0 and c == ",":
            spans.append((start, j))
            start = j + 1
    return spans + [(start, len(text))]


def split_macro_args(text: str) -> list[str]:
    """Macro arguments: split at commas outside parentheses (the preprocessor ignores <>)."""
    out, depth, start = [], 0, 0
    for j, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth == 0 and c == ",":
            out.append(text[start:j])
            start = j + 1
    return out + [text[start:]]


def split_default(text: str) -> tuple[str, str | None]:
    """Split ``int N = 4`` into ("int N", "4"); the default is None if there is none."""
    b = split_top(text.replace("=", ","))[0][1]             # the first top-level '='
    return (text, None) if b == len(text) else (text[:b], " ".join(text[b + 1:].split()))


def norm_type(text: str) -> str:
    """Type text with single spaces, none around ``* & ( ) < >``, ``", "`` between arguments."""
    text = re.sub(r"\s*([*&()<>,\[\]])\s*", r"\1", " ".join(text.split()))
    return text.replace(",", ", ")

