"""One SASS function as instructions and as control flow: :func:`parse` (the listing's
instructions and labels), :func:`basic_blocks` (the blocks reachable from the entry) and
:func:`postdominators`, with the operand readers they share (:func:`register`,
:func:`branch_predicate`).  What :mod:`.deadlock`'s checks read; no GPU."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Ins", "parse", "register", "UNKNOWN", "Block", "basic_blocks", "unconditional",
           "branch_predicate", "postdominators"]

UNKNOWN = "?"        # what a trace cannot know (a BRA.DIV's predicate, a value loaded from memory)

_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:@(!?)(U?P[T0-9])\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?)\s*;?\s*$")
_LABEL = re.compile(r"^\s*([.$\w][\w.$]*):\s*$")
_TARGET = re.compile(r"`\(([^)\s]+)\)|\b(0x[0-9a-f]+)\s*$")
_REG = re.compile(r"^[-!|~]*\|?(U?R\d+|URZ|RZ|U?P\d|U?PT|PR|UPR)((?:\.\w+)*)\|?$")


@dataclass
class Ins:
    """One SASS instruction: offset, guard (``"!P0"``, ``"P1"`` or ``""``), opcode, operands."""
    address: int
    guard: str
    op: str
    operands: list
    target: str | None = None      # a branch's or call's target label (or hex address)
    text: str = ""                 # as the listing writes it, e.g. "@!P0 BRA `(.L_x_4)"

    @property
    def base(self) -> str:
        return self.op.split(".", 1)[0]


def _split(rest: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in rest:
        depth += (ch in "[(") - (ch in "])")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def parse(text: str) -> tuple[list[Ins], dict[str, int]]:
    """The instructions of one function's SASS listing and its labels (label -> the offset of
    the instruction after it)."""
    code, labels, waiting = [], {}, []
    for line in text.splitlines():
        m = _LABEL.match(line)
        if m:
            waiting.append(m.group(1))
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        address = int(m.group(1), 16)
        for name in waiting:
            labels[name] = address
        waiting = []
        ops = _split(m.group(5).rstrip(" ;"))
        t = _TARGET.search(m.group(5)) if m.group(4).split(".")[0] in ("BRA", "CALL", "JMP") else None
        target = (t.group(1) or t.group(2)) if t else None
        if target:
            ops = [o for o in ops if "`(" not in o and o != target]
        guard = (m.group(2) + m.group(3)) if m.group(3) else ""
        text = line.split("*/", 1)[1].strip().rstrip(" ;")
        code.append(Ins(address, guard, m.group(4), ops, target, text))
    return code, labels


def register(operand: str):
    """``(name, suffixes)`` of a register operand (``"-R9.reuse"`` -> ``("R9", ".reuse")``)."""
    m = _REG.match(operand.strip())
    return (m.group(1), m.group(2)) if m else (None, "")


@dataclass
class Block:
    start: int                  # index of its first instruction
    end: int                    # index after its last
    succ: tuple = ()


def _index(i: Ins, labels: dict, at: dict):
    """The instruction index a branch goes to (None: not in this function)."""
    t = i.target or ""
    address = labels.get(t, int(t, 16) if t.startswith("0x") else None)
    return at.get(address)


def _ends(i: Ins) -> bool:
    """An instruction after which no thread goes on (unpredicated EXIT, RET, trap)."""
    return (i.base in ("EXIT", "RET") or i.op.startswith("BPT.TRAP")) and not i.guard


def basic_blocks(code: list[Ins], labels: dict[str, int]):
    """``{first index: Block}`` of the blocks reachable from the entry, or None where the flow
    cannot be read (an indirect branch, a target outside the function)."""
    at = {i.address: k for k, i in enumerate(code)}
    leaders = {0}
    for k, i in enumerate(code):
        if i.base in ("BRX", "JMX", "JMP") or (i.base == "BRA" and _index(i, labels, at) is None):
            return None
        if i.base == "BRA":
            leaders.add(_index(i, labels, at))
        if i.base in ("BRA", "EXIT", "RET") or i.op.startswith("BPT.TRAP"):
            leaders.add(k + 1)
    starts = sorted(s for s in leaders if s < len(code))
    blocks = {}
    for s, e in zip(starts, starts[1:] + [len(code)]):
        last, succ = code[e - 1], []
        if last.base == "BRA":
            succ.append(_index(last, labels, at))
        if not _ends(last) and not (last.base == "BRA" and unconditional(last)) and e < len(code):
            succ.append(e)
        blocks[s] = Block(s, e, tuple(dict.fromkeys(succ)))
    seen, todo = set(), [0]
    while todo:
        b = todo.pop()
        if b not in seen:
            seen.add(b)
            todo += blocks[b].succ
    return {s: blocks[s] for s in sorted(seen)}


def unconditional(i: Ins) -> bool:
    return (not i.guard or i.guard == "PT") and not branch_predicate(i)


def branch_predicate(i: Ins) -> str | None:
    """A branch's predicate operand (``BRA.U !UP0, target``), or ``"?"`` for ``BRA.DIV``."""
    if ".DIV" in i.op:
        return UNKNOWN
    for o in i.operands:
        name, _ = register(o)
        if name and name.lstrip("U").startswith("P") and name not in ("PT", "UPT"):
            return name
    return None


def postdominators(blocks: dict) -> tuple[dict, dict] | None:
    """``(post-dominators as bit masks, bit per block)``, the blocks without successors being
    the exits; None when a block cannot reach one (a loop that never ends)."""
    order = list(blocks)
    bit = {b: 1 << k for k, b in enumerate(order)}
    full = (1 << len(order)) - 1
    exits = {b for b in order if not blocks[b].succ}
    preds: dict = {b: [] for b in order}
    for b in order:
        for s in blocks[b].succ:
            preds[s].append(b)
    live, todo = set(exits), list(exits)
    while todo:
        for p in preds[todo.pop()]:
            if p not in live:
                live.add(p)
                todo.append(p)
    if len(live) != len(order):
        return None
    pdom = {b: (bit[b] if b in exits else full) for b in order}
    changed = True
    while changed:
        changed = False
        for b in reversed(order):
            if b in exits:
                continue
            new = bit[b]
            inter = full
            for s in blocks[b].succ:
                inter &= pdom[s]
            new |= inter
            if new != pdom[b]:
                pdom[b], changed = new, True
    return pdom, bit
