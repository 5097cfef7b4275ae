"""Colouring SASS: a small pygments lexer that classes opcodes (memory, float, integer,
control, tensor) and keeps modifiers such as ``.FTZ`` visible; source-line markers; the
alignment NOPs after a function's last instruction folded into one line (:func:`fold_tail`);
a function's own labels (its mangled symbol) replaced by a heading with its C++ name
(:func:`heading`).

pygments ships lexers for CUDA C++ and PTX but none for SASS.
"""

from __future__ import annotations

import hashlib
import os
import re

from pygments.lexer import RegexLexer, bygroups
from pygments.style import Style
from pygments.token import Comment, Error, Name, Number, Operator, Punctuation, Text, Token

from ..inspect.disasm import opcode_class

__all__ = ["SassLexer", "SassStyle", "opcode_class", "annotate", "tidy", "fold_tail", "heading",
           "Files", "Opcode", "Modifier", "FTZ"]

Opcode = Token.Opcode
Modifier = Token.Modifier
FTZ = Token.Modifier.FTZ                # flush-to-zero, the modifier users look for

def _opcode(lexer, match):
    text = match.group(0)
    base, *mods = text.split(".")
    yield match.start(), getattr(Opcode, opcode_class(base).capitalize()), base
    pos = match.start() + len(base)
    for mod in mods:
        yield pos, Punctuation, "."
        yield pos + 1, FTZ if mod == "FTZ" else Modifier, mod
        pos += 1 + len(mod)


class SassLexer(RegexLexer):
    """NVIDIA SASS as nvdisasm / cuobjdump print it."""

    name = "SASS"
    aliases = ["sass-nvidia"]
    tokens = {
        "root": [
            (r"//##.*?$", Comment.Special),                  # -lineinfo source markers
            (r"//.*?$", Comment.Single),
            (r"/\*[0-9a-fA-F]{4,}\*/", Comment.Hashbang),       # instruction address
            (r"/\*.*?\*/", Comment.Multiline),
            (r"^\s*\.[\w.$]+:\s*$", Name.Label),
            (r"^[\w.$]+:\s*$", Name.Label),
            (r"^\s*\.\w+.*?$", Comment.Preproc),             # .section/.align/... directives
            (r"(@!?U?P[T\d])(\s+)", bygroups(Operator, Text)),  # predicate guard
            (r"(?<=[\s}])[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*(?=[\s;])", _opcode, "operands"),
            (r"\s+", Text),
            (r".", Text),
        ],
        "operands": [
            (r";", Punctuation, "#pop"),
            (r"\n", Text, "#pop"),
            (r"`?\(\.?[\w.$]+\)", Name.Label),
            (r"\b(c|desc)\[", Name.Constant, "bracket"),
            (r"!?\bU?P[T\d]\b|\bU?R(Z|\d+)\b|\bSR_[\w.]+|\bSRZ\b|\bB\d+\b", Name.Variable),
            (r"-?0x[0-9a-fA-F]+|-?\d+(\.\d+)?(e[+-]?\d+)?|[+-]?INF|[+-]?QNAN", Number),
            (r"\.[\w.]+", Modifier),                          # operand modifiers (.64, .reuse)
            (r"[\[\],|+\-~!{}]", Punctuation),
            (r"\s+", Text),
            (r"[\w$.]+", Name),
            (r".", Error),
        ],
        "bracket": [
            (r"\]\[", Name.Constant),
            (r"\]", Name.Constant, "#pop"),
            (r"[^\]]+", Name.Constant),
        ],
    }


class SassStyle(Style):
    """Mid-tone colours that read on light and dark backgrounds."""

    background_color = None
    styles = {
        Comment.Hashbang: "#8a8a8a",
        Comment.Single: "#8a8a8a",
        Comment.Multiline: "#8a8a8a",
        Comment.Preproc: "#8a8a8a",
        Comment.Special: "italic #2a9d8f",
        Name.Label: "bold #9b59b6",
        Opcode.Memory: "bold #1f77b4",
        Opcode.Float: "bold #d35400",
        Opcode.Integer: "bold #27ae60",
        Opcode.Control: "bold #c0392b",
        Opcode.Tensor: "bold #8e44ad",
        Modifier: "#7f8c8d",
        FTZ: "bold #ffffff bg:#d35400",
        Name.Variable: "",
        Name.Constant: "#b7950b",
        Number: "#b7950b",
        Operator: "bold #c0392b",
    }


_DIRECTIVE = re.compile(r"^\s*(//-{5,}.*|\.(section|align|global|type|size|other|weak|target|"
                        r"elftype|headerflags)\b.*|/\* 0x[0-9a-f]{16} \*/|\.{6,})\s*$")


_INSTRUCTION = re.compile(r"^\s*(/\*[0-9a-fA-F]{4,}\*/)\s*(@!?U?P[T\d]\s+)?(.*)$")


def tidy(sass: str) -> str:
    """Drop the assembler directives and the banner nvdisasm prints above each function
    (as Compiler Explorer does) and close up the columns; labels, instructions and
    comments stay.  (A fatbin's SASS reaches here in nvdisasm's layout too: see
    :func:`cuda_magic.inspect.sass_text`.)"""
    out = []
    for line in sass.splitlines():
        if _DIRECTIVE.match(line):
            continue
        m = _INSTRUCTION.match(line)
        if m:
            line = f"  {m.group(1)} {(m.group(2) or '').strip():>5} {m.group(3)}"
        out.append(line)
    return "\n".join(out) + "\n"


_BANNER = re.compile(r"^//-{5,}")
_NOP = re.compile(r"^\s*/\*[0-9a-fA-F]{4,}\*/\s*NOP\s*;\s*$")
_LABEL = re.compile(r"^\s*\.?[\w.$]+:\s*$")
_DIRECTIVE_ONLY = re.compile(r"^\s*\.(type|size|other|global|weak)\b")


def fold_tail(sass: str) -> str:
    """After each function's last real instruction (its ``EXIT``, or the ``BRA`` to itself
    that follows it), the ``NOP``s that pad the function to its alignment and the labels that
    mark only them or the function's end (``.L_x_12:`` with nothing after it) become one line,
    ``// … 13 trailing NOPs folded``; a dangling label alone just goes.  Functions are told
    apart by nvdisasm's banners (``//----- .text.NAME``), so this runs before :func:`tidy`."""
    lines = sass.splitlines()
    starts = [i for i, line in enumerate(lines) if _BANNER.match(line)]
    bounds = list(zip([0] + starts, starts + [len(lines)]))
    out: list[str] = []
    for lo, hi in bounds:
        part = lines[lo:hi]
        end = len(part)
        while end and (not part[end - 1].strip() or _DIRECTIVE_ONLY.match(part[end - 1])):
            end -= 1                       # blank lines and the symbol section's directives
        cut, nops, dropped = end, 0, 0
        while cut and (_NOP.match(part[cut - 1]) or _LABEL.match(part[cut - 1])):
            cut -= 1
            nops += bool(_NOP.match(part[cut]))
            dropped += 1
        if dropped and cut and _INSTRUCTION.match(part[cut - 1]):   # code before: a function
            fold = [f"  // … {nops} trailing NOP{'s' if nops != 1 else ''} folded "
                    f"(alignment padding)"] if nops else []
            part = part[:cut] + fold + part[end:]
        out.extend(part)
    return "\n".join(out) + ("\n" if sass.endswith("\n") else "")


def heading(sass: str) -> tuple[str | None, str]:
    """(the function's symbol, ``sass`` without the labels it starts with: ``SYMBOL:`` and
    ``.text.SYMBOL:``), or (None, ``sass``) when it starts with no label."""
    lines = sass.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or not _LABEL.match(lines[first]):
        return None, sass
    symbol = lines[first].strip()[:-1]
    rest = lines[first + 1:]
    if rest and rest[0].strip() == f".text.{symbol}:":
        rest = rest[1:]
    return symbol, "\n".join(rest)


_MARKER = re.compile(r'^\s*//## File "([^"]*)", line (\d+)'
                     r'(?: inlined at "([^"]*)", line (\d+))?(.*)$')
CELL = "cell.cu"


class Files:
    """Where ``-lineinfo`` markers point: the cell, a header cuda-magic knows (a user header on
    disk that the compile read, a ``%%cuda_header``, a standard header it supplied), or another
    file (toolkit headers).  ``lines(name)`` gives ``(label, lines to quote or None)``: the label
    is ``None`` for the cell, else a short name such as ``helper.cuh``."""

    def __init__(self, source: str, inputs=None, cwd: str | None = None):
        self.cell = source.splitlines()
        self.memory = dict(getattr(inputs, "memory", None) or {})      # name -> text
        self.files = dict(getattr(inputs, "files", None) or ())         # abs path -> sha256
        self.cwd = cwd or os.getcwd()
        self._memo: dict[str, tuple[str | None, list[str] | None]] = {}

    def lines(self, name: str) -> tuple[str | None, list[str] | None]:
        if name not in self._memo:
            self._memo[name] = self._find(name)
        return self._memo[name]

    def _find(self, name: str):
        path = os.path.normpath(name if os.path.isabs(name) else os.path.join(self.cwd, name))
        if path in self.files:                    # a user header the compile read
            return self._short(path), self._read(path, self.files[path])
        if os.path.basename(name) == CELL:        # NVRTC: cwd/cell.cu; nvcc: its removed tmp dir
            return None, self.cell
        unix = path.replace(os.sep, "/")
        for mem in sorted(self.memory, key=len, reverse=True):   # NVRTC: cwd/NAME; nvcc: tmp/NAME
            if name == mem or unix.endswith("/" + mem):
                return mem, self.memory[mem].splitlines()
        return self._short(path), None

    def _short(self, path: str) -> str:
        try:
            from ..compile.toolkit_headers import toolkit_dirs
            dirs = toolkit_dirs()
        except Exception:
            dirs = ()
        for d in sorted(dirs, key=len, reverse=True):     # the innermost: cuda/std/..., not cccl/
            if path.startswith(os.path.join(d, "")):
                return os.path.relpath(path, d)
        try:
            rel = os.path.relpath(path, self.cwd)
        except ValueError:      # another drive (Windows)
            return path
        return path if rel.startswith(os.pardir + os.sep + os.pardir) else rel

    @staticmethod
    def _read(path: str, sha: str) -> list[str] | None:
        """The file's lines if it still holds what was compiled (else quote nothing)."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != sha:
            return None
        return data.decode("utf-8", "replace").splitlines()


def _where(files: Files, name: str, line: int) -> tuple[str, str | None]:
    """(``line 3`` or ``helper.cuh:3``, the quoted line or None)."""
    label, lines = files.lines(name)
    text = lines[line - 1].strip() if lines is not None and 0 < line <= len(lines) else None
    return (f"line {line}" if label is None else f"{label}:{line}"), text


def annotate(sass: str, source: str, inputs=None, name: str | None = None) -> str:
    """Fold the NOPs after each function's end (:func:`fold_tail`), tidy (see :func:`tidy`),
    with ``name`` (the kernel's C++ name) replace the function's own labels by the heading
    ``// name  (SYMBOL)`` (the symbol only where it differs), and attribute each
    ``-lineinfo`` marker to its file, quoting the
    line: ``//## File "cell.cu", line 3`` becomes ``//## line 3 | int i = ...``; a header's
    ``//## File ".../helper.cuh", line 3 inlined at ".../cell.cu", line 6`` becomes
    ``//## helper.cuh:3, inlined at line 6 | return v * 2.0f;``.  Lines are quoted from the cell
    and from the headers ``inputs`` (:class:`~cuda_magic.compile.include_scan.Inputs`) names: user
    headers on disk (while they hold what was compiled), ``%%cuda_header``s and supplied
    standard headers; other files (the toolkit's) show the location only."""
    sass = tidy(fold_tail(sass))
    if name is not None:
        symbol, body = heading(sass)
        sass = f"// {name}" + (f"  ({symbol})" if symbol and symbol != name else "") + "\n" + body
    files = Files(source, inputs)
    out = []
    for line in sass.splitlines():
        m = _MARKER.match(line)
        if m and not m.group(5).strip():
            where, text = _where(files, m.group(1), int(m.group(2)))
            if m.group(3) is not None:
                where += ", inlined at " + _where(files, m.group(3), int(m.group(4)))[0]
            line = f"  //## {where}" + (f" | {text}" if text is not None else "")
        elif m:
            line = "  " + line.strip()
        out.append(line)
    return "\n".join(out) + ("\n" if sass.endswith("\n") else "")
