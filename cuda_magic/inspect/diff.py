"""Diffs between builds: SASS and PTX as comparable lines, side-by-side rows, unified text,
and what changed in a few words.

SASS is compared by instruction: addresses, encodings, section directives,
``-lineinfo`` markers and the trailing ``NOP`` padding are dropped so the diff
shows only code that changed; labels stay.  ``count_ftz`` counts the
instructions with the ``.FTZ`` (flush-to-zero) modifier.

Register numbering is normalised (:func:`compare`, ``normalize=True``): two builds
that differ only in which registers the allocator picked compare equal.  Each
register's values are told apart (a write starts a new value, ``R13#2``), and the
renaming is learnt from the instructions the builds share (lines equal once each
register is replaced by its file: ``R``, ``UR``, ``P``, ``UP``): each value of the
second build maps to the value of the first it stands in for most often, one to one
(``RZ``, ``URZ``, ``PT``, ``UPT`` are no numbered registers and stay; ``.reuse`` hints,
which follow the allocation, are ignored).  A line is unchanged when it is equal under
that renaming or reads the same; a normalised diff is never longer than the raw one.
The rows still show each build's own text.  :func:`mix` counts instructions per opcode class and
:func:`summary` says what changed in one line (``1 FMUL → FMUL.FTZ``; ``+98
instructions (control +12, ...), +1 CALL``; ``registers 32 → 40``).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

__all__ = ["instructions", "ptx_lines", "count_ftz", "Row", "side_by_side", "unified", "changed",
           "Diff", "compare", "renaming", "opcode", "mix", "mix_change", "summary", "REGISTER"]

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


# ---- register renaming ------------------------------------------------------------------------

# A numbered register: R0..R255, UR0..UR63, P0..P6, UP0..UP6 (RZ, URZ, PT, UPT have no number).
# Word boundaries keep SR_TID.X, R2UR, P2R and F2FP whole.
REGISTER = re.compile(r"\b(UR|UP|R|P)(\d+)\b")
_REUSE = re.compile(r"\.reuse\b")        # operand-cache hints: they follow the allocation
_PRED_OPERAND = re.compile(r"!?U?P(?:\d+|T)")
# Opcodes whose first operand is read, not written (stores, reductions, branches, barriers).
_NO_DEST = re.compile(r"U?(ST[A-Z0-9]*|SUST|RED[A-Z]*|SURED|BRA|BRX|JMP|JMX|CALL|RET|EXIT|BAR|"
                      r"BSSY|BSYNC|BREAK|WARPSYNC|NOP|MEMBAR|FENCE|ERRBAR|CCTL[A-Z]*|DEPBAR|"
                      r"YIELD|KILL|BPT|NANOSLEEP|ACQBULK|UTMA[A-Z]*|UBLKCP|SYNCS)")


def _skeleton(line: str) -> str:
    return REGISTER.sub(lambda m: m.group(1), _REUSE.sub("", line))


def _written(line: str) -> set[int]:
    """Where in ``line`` the registers it writes start: its first operand (unless the opcode
    only reads it) and the predicates right after it (``IADD3 R2, P0, ...``).  A guess from
    the text; both builds are read the same way, so a wrong guess costs evidence, not truth."""
    parts = _parts(line)
    if parts is None or not parts[2] or _NO_DEST.fullmatch(parts[1].split(".")[0]):
        return set()
    start = len(line) - len(parts[2])
    out, pos = set(), start
    for i, operand in enumerate(parts[2].split(",")):
        text = operand.strip().rstrip(";").strip()
        if i == 0 or _PRED_OPERAND.fullmatch(text):
            out.add(pos + len(operand) - len(operand.lstrip()))
        else:
            break
        pos += len(operand) + 1
    return out


def _live_ranges(lines: Sequence[str]) -> list[list[tuple[int, int, str]]]:
    """Per line, each register it names as ``(start, end, range)``: ``R13#2`` is the second
    value written to R13 (``#0``: a value from before the first write).  A write starts a new
    range after the instruction's reads."""
    writes: Counter = Counter()
    out = []
    for line in lines:
        written = _written(line)
        spans = []
        for m in REGISTER.finditer(line):
            reg = m.group(0)
            if m.start() in written:
                spans.append((m.start(), m.end(), reg, True))
            else:
                spans.append((m.start(), m.end(), f"{reg}#{writes[reg]}", False))
        for i, (s, e, reg, w) in enumerate(spans):
            if w:
                writes[reg] += 1
                spans[i] = (s, e, f"{reg}#{writes[reg]}", False)
        out.append([(s, e, r) for s, e, r, _ in spans])
    return out


def renaming(a: Sequence[str], b: Sequence[str]) -> dict[str, str]:
    """``{value of b: value of a}``, values being live ranges (``R13#2``, see
    :func:`_live_ranges`): each of ``b``'s maps to the one of ``a`` it stands in for most often in
    the lines the two share once registers are blanked (one to one; ties by name)."""
    ra, rb = _live_ranges(a), _live_ranges(b)
    votes: Counter = Counter()
    for tag, i1, i2, j1, j2 in _opcodes([_skeleton(x) for x in a], [_skeleton(y) for y in b]):
        if tag != "equal":
            continue
        for x, y in zip(ra[i1:i2], rb[j1:j2]):
            for (_, _, va), (_, _, vb) in zip(x, y):
                votes[vb, va] += 1
    mapping: dict[str, str] = {}
    used: set[str] = set()
    for (vb, va), _ in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
        if vb not in mapping and va not in used:
            mapping[vb] = va
            used.add(va)
    return mapping


def _keyed(lines: Sequence[str], ranges, mapping: Mapping[str, str] | None = None) -> list[str]:
    """``lines`` with each register replaced by its value (mapped by ``mapping``; a value it lacks
    is marked, ``R9#1'``, so that it equals nothing of the other build) and no ``.reuse``."""
    out = []
    for line, spans in zip(lines, ranges):
        text, last = [], 0
        for s, e, value in spans:
            if mapping is not None:
                value = mapping.get(value, value + "'")
            text += [line[last:s], value]
            last = e
        out.append(_REUSE.sub("", "".join(text) + line[last:]))
    return out


# ---- diffs ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Diff:
    """Two line lists compared: ``a`` (the baseline, left) and ``b``; ``normalized`` when register
    numbering was normalised (``renames``: ``{register of b: register of a}`` that differ)."""

    a: tuple[str, ...]
    b: tuple[str, ...]
    opcodes: tuple = field(repr=False)
    keys: tuple = field(repr=False)          # (a's keys, b's keys): what was compared
    normalized: bool = False
    renames: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def changed(self) -> int:
        """Lines that differ: replaced, removed or added (the longer side of a change)."""
        return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in self.opcodes if tag != "equal")

    @property
    def equal(self) -> bool:
        return self.changed == 0

    def rows(self) -> list[Row]:
        """Rows pairing ``a`` (left) with ``b`` (right), each side's own text; changed blocks are
        paired line by line."""
        rows = []
        a, b = self.a, self.b
        for tag, i1, i2, j1, j2 in self.opcodes:
            for k in range(max(i2 - i1, j2 - j1)):
                i, j = i1 + k, j1 + k
                left = a[i] if i < i2 else None
                right = b[j] if j < j2 else None
                kind = tag if tag == "equal" else (
                    "replace" if left is not None and right is not None
                    else "delete" if left is not None else "insert")
                rows.append(Row(kind, left, right, i + 1 if left is not None else None,
                                j + 1 if right is not None else None))
        return rows

    def unified(self, a_name: str, b_name: str, context: int = 3) -> list[str]:
        """Unified-diff lines (no trailing newlines), each side's own text; empty when equal."""
        if not self.normalized:
            return list(difflib.unified_diff(list(self.a), list(self.b), a_name, b_name,
                                             n=context, lineterm=""))
        out = []
        for group in _grouped(list(self.opcodes), context):
            if not out:
                out += [f"--- {a_name}", f"+++ {b_name}"]
            first, last = group[0], group[-1]
            out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@")
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    out += [" " + line for line in self.a[i1:i2]]
                    continue
                out += ["-" + line for line in self.a[i1:i2]]
                out += ["+" + line for line in self.b[j1:j2]]
        return out


def _grouped(codes: list, n: int):
    """``SequenceMatcher.get_grouped_opcodes`` over a list of opcodes: changes with ``n`` lines
    of context, far-apart changes in groups of their own."""
    if not codes:
        codes = [("equal", 0, 1, 0, 1)]
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    group = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * n:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _refine(codes, a: Sequence[str], b: Sequence[str]) -> list:
    """Changed blocks split where a line reads the same on both sides (the renaming learnt for
    the whole kernel can miss a register that was reused): those lines are equal."""
    out: list = []

    def add(tag, i1, i2, j1, j2):
        if out and out[-1][0] == tag and out[-1][2] == i1 and out[-1][4] == j1:
            out[-1] = (tag, out[-1][1], i2, out[-1][3], j2)
        elif i2 > i1 or j2 > j1:
            out.append((tag, i1, i2, j1, j2))
    for tag, i1, i2, j1, j2 in codes:
        if tag != "replace":
            add(tag, i1, i2, j1, j2)
            continue
        k, n = 0, min(i2 - i1, j2 - j1)
        while k < n:
            same = a[i1 + k] == b[j1 + k]
            end = k
            while end < n and (a[i1 + end] == b[j1 + end]) == same:
                end += 1
            add("equal" if same else "replace", i1 + k, i1 + end, j1 + k, j1 + end)
            k = end
        if i2 - i1 > n:
            add("delete", i1 + n, i2, j1 + n, j1 + n)
        elif j2 - j1 > n:
            add("insert", i1 + n, i1 + n, j1 + n, j2)
    return out


def _range(start: int, stop: int) -> str:
    """A unified diff's ``start,length`` (as difflib writes it)."""
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"


def compare(a: Sequence[str], b: Sequence[str], *, normalize: bool = True) -> Diff:
    """Compare ``a`` with ``b``; ``normalize`` renames ``b``'s registers to ``a``'s first (see the
    module docstring), so that register renumbering alone changes no line."""
    a, b = tuple(a), tuple(b)
    raw = Diff(a, b, tuple(_opcodes(a, b)), (a, b), False)
    if not normalize or a == b:
        return raw
    mapping = renaming(a, b)
    ka = tuple(_keyed(a, _live_ranges(a)))
    kb = tuple(_keyed(b, _live_ranges(b), mapping))
    d = Diff(a, b, tuple(_refine(_opcodes(ka, kb), a, b)), (ka, kb), True,
             {vb.split("#")[0]: va.split("#")[0] for vb, va in mapping.items()
              if vb.split("#")[0] != va.split("#")[0]})
    return d if d.changed <= raw.changed else raw   # never worse than the raw text


def side_by_side(a: Sequence[str], b: Sequence[str], *, normalize: bool = False) -> list[Row]:
    """Rows pairing ``a`` (left) with ``b`` (right); changed blocks are paired line by line."""
    return compare(a, b, normalize=normalize).rows()


def unified(a: Sequence[str], b: Sequence[str], a_name: str, b_name: str, context: int = 3,
            *, normalize: bool = False) -> list[str]:
    """Unified-diff lines (no trailing newlines); empty when equal."""
    return compare(a, b, normalize=normalize).unified(a_name, b_name, context)


def changed(a: Sequence[str], b: Sequence[str], *, normalize: bool = False) -> int:
    """How many lines differ: replaced, removed or added (counting the longer side of a change)."""
    return compare(a, b, normalize=normalize).changed


# ---- what changed, in a few words -------------------------------------------------------------

_PREDICATE = re.compile(r"^@!?U?P(?:\d+|T)\s+")


def _parts(line: str) -> tuple[str, str, str] | None:
    """``(predicate, opcode, operands)`` of an instruction line; None for a label."""
    if line.endswith(":"):
        return None
    m = _PREDICATE.match(line)
    pred = m.group(0).strip() if m else ""
    rest = line[m.end():] if m else line
    op, _, operands = rest.partition(" ")
    return pred, op.rstrip(";"), operands


def opcode(line: str) -> str | None:
    """``"FMUL.FTZ"`` for ``"@P0 FMUL.FTZ R0, R1, R2 ;"``; None for a label."""
    parts = _parts(line)
    return parts[1] if parts else None


def count(lines: Sequence[str]) -> int:
    """Instructions in ``lines`` (labels left out)."""
    return sum(1 for line in lines if not line.endswith(":"))


def mix(lines: Sequence[str]) -> dict[str, int]:
    """Instructions per opcode class (:data:`~cuda_magic.inspect.CLASSES`: memory, float,
    integer, control, tensor), every class present."""
    from .disasm import CLASSES, opcode_class
    out = dict.fromkeys(CLASSES, 0)
    for line in lines:
        op = opcode(line)
        if op:
            out[opcode_class(op)] += 1
    return out


def mix_change(a: Sequence[str], b: Sequence[str]) -> dict[str, int]:
    """``{class: b's count - a's}`` for the classes whose count changed, largest change first."""
    ma, mb = mix(a), mix(b)
    delta = {c: mb[c] - ma[c] for c in ma if mb[c] != ma[c]}
    return dict(sorted(delta.items(), key=lambda kv: -abs(kv[1])))


# Opcodes worth naming when they come or go: calls (slow paths), the special function unit,
# barriers, spills (local memory), atomics, indirect branches; and tensor instructions.
_NOTABLE = {"CALL", "RET", "MUFU", "BAR", "STL", "LDL", "BRX", "JMX", "ATOM", "ATOMS", "ATOMG",
            "RED", "REDG", "MEMBAR", "WARPSYNC"}


def _notable(op: str) -> str | None:
    from .disasm import opcode_class
    head = op.split(".")
    if head[0] == "MUFU":
        return ".".join(head[:2])             # the function matters: MUFU.RCP, MUFU.EX2
    if head[0] in _NOTABLE or opcode_class(op) == "tensor":
        return head[0]
    return None


def _signed(n: int) -> str:
    return f"+{n}" if n > 0 else f"\u2212{-n}"


def summary(a: Sequence[str], b: Sequence[str], *, normalize: bool = True,
            resources=None) -> str:
    """What changed from ``a`` (the baseline) to ``b``, in one line.

    Only modifiers changed on the same instructions: ``"1 FMUL → FMUL.FTZ"``.  Otherwise the
    instruction count and mix change and the notable opcodes that came or went: ``"+98
    instructions (control +12, float +60, ...), +1 CALL"``.  ``resources`` (ptxas figures of
    ``a`` and ``b``: ``.registers``, ``.spill_stores``, ``.spill_loads``) adds ``"registers 32 →
    40"`` and spills when they differ.
    """
    d = compare(a, b, normalize=normalize)
    parts: list[str] = []
    if d.equal:
        parts.append("same instructions" + (", registers renumbered" if tuple(a) != tuple(b)
                                            else ""))
    else:
        pairs = _modifier_pairs(d)
        if pairs is not None:
            parts += [f"{n} {x} \u2192 {y}" for (x, y), n in pairs.most_common()]
        else:
            delta = count(b) - count(a)
            mixed = ", ".join(f"{c} {_signed(n)}" for c, n in mix_change(a, b).items())
            head = f"{_signed(delta)} instruction{'s' if abs(delta) != 1 else ''}" if delta \
                else "same instruction count"
            parts.append(head + (f" ({mixed})" if mixed else ""))
            na = Counter(n for n in map(_notable_of, a) if n)
            nb = Counter(n for n in map(_notable_of, b) if n)
            for name in dict.fromkeys([*nb, *na]):
                if nb[name] != na[name]:
                    parts.append(f"{_signed(nb[name] - na[name])} {name}")
    if resources is not None and None not in resources:
        ra, rb = resources
        if ra.registers != rb.registers:
            parts.append(f"registers {ra.registers} \u2192 {rb.registers}")
        if (ra.spill_stores, ra.spill_loads) != (rb.spill_stores, rb.spill_loads):
            parts.append(f"spills {ra.spill_stores}/{ra.spill_loads} \u2192 "
                         f"{rb.spill_stores}/{rb.spill_loads} B")
    return ", ".join(parts)


def _notable_of(line: str) -> str | None:
    op = opcode(line)
    return _notable(op) if op else None


def _modifier_pairs(d: Diff) -> Counter | None:
    """``{(opcode in a, opcode in b): n}`` when every change replaces instructions by the same
    instructions with other modifiers (same predicate, opcode base and operands); else None."""
    pairs: Counter = Counter()
    ka, kb = d.keys
    for tag, i1, i2, j1, j2 in d.opcodes:
        if tag == "equal":
            continue
        if tag != "replace" or i2 - i1 != j2 - j1:
            return None
        for x, y, raw_x, raw_y in zip(ka[i1:i2], kb[j1:j2], d.a[i1:i2], d.b[j1:j2]):
            if raw_x == raw_y:
                continue
            px, py = _parts(x), _parts(y)
            if px is None or py is None or px[0] != py[0] or px[2] != py[2] or \
                    px[1].split(".")[0] != py[1].split(".")[0] or px[1] == py[1]:
                return None
            pairs[px[1], py[1]] += 1
    return pairs
