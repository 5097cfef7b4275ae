"""Deadlock-prone patterns in a kernel's SASS, said before it runs: no GPU.

Two checks, each said only where the SASS proves it (:func:`deadlocks`, shown among the
async-pipeline table's warnings):

- **An mbarrier wait nothing can satisfy.**  The kernel checks an mbarrier's phase
  (``SYNCS.PHASECHK.*``: ``mbarrier.try_wait`` / ``test_wait``, sm_90 and later) but has no
  instruction that arrives on an mbarrier or completes a transaction on one:
  ``SYNCS.ARRIVE*`` (``mbarrier.arrive``, ``expect_tx``, ``complete_tx``, remote arrives),
  ``ARRIVES.*`` (``cp.async.mbarrier.arrive``), ``UTMALDG`` (TMA loads), ``UBLKCP`` /
  ``UBLKRED`` (bulk copies and reductions into shared memory), ``STAS`` / ``REDAS``
  (``st.async`` / ``red.async``), ``UTCBAR`` (``tcgen05.commit``); any other ``SYNCS`` or
  ``*ARRIVE*`` opcode counts as one too (not ``WARPGROUP.ARRIVE``: that is ``wgmma.fence``).  Exact for the kernel as a whole: an mbarrier lives
  in the block's (or the cluster's) shared memory, which only this kernel's code reaches, so
  none of its phases ever completes.  Functions the kernel calls are read too (the whole
  module's SASS when a call leaves the kernel's code; system functions such as ``vprintf``
  are outside the module and touch no mbarrier).
- **A __syncthreads() under a condition on the thread index.**  A block-wide barrier
  (``BAR.SYNC`` / ``BAR.RED`` with no thread count: ``__syncthreads()``,
  ``__syncthreads_count/and/or``, ``bar.sync N``) that runs only on one side of a
  conditional branch, or under a predicate, whose condition is computed from
  ``threadIdx`` or the lane index (``S2R SR_TID.*``, ``SR_LANEID``, the lane masks), traced
  through the registers of the kernel's own code.  "Only on one side" is control dependence
  (the barrier's block post-dominates one successor of the branch and not the branch), so a
  loop whose trip count depends on ``threadIdx`` counts too.  Not said: where the other side
  of the branch exits at once (``if (i >= n) return;``: a barrier waits only for threads
  that have not exited), barriers with a thread count (named barriers of warp-specialised
  code), conditions from memory loads, and every function with an indirect branch
  (``BRX``), an instruction the trace does not know (then no register is trusted after it),
  or a loop that never exits.

The listing's instructions and its control flow (basic blocks, post-dominators) are read by
:mod:`.flow`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..compile.compiler import CompilationResult
from .flow import (UNKNOWN, Ins, basic_blocks, branch_predicate, parse, postdominators, register,
                   unconditional)

__all__ = ["Finding", "deadlocks", "check", "parse"]

# --- check 1: an mbarrier wait with nothing that arrives -----------------------------------------

# opcodes that arrive on an mbarrier or complete a transaction on one (WARPGROUP.ARRIVE is
# wgmma.fence, no mbarrier)
_ARRIVERS = re.compile(r"^(?!WARPGROUP)(SYNCS(?!\.PHASECHK|\.EXCH|\.CCTL)|ARRIVES|UTMALDG|UBLKCP|"
                       r"UBLKRED|STAS|REDAS|UTCBAR|.*ARRIVE)")


def _arrives(code: list[Ins]) -> bool:
    return any(_ARRIVERS.search(i.op) for i in code)


def _mbarrier_waits(code: list[Ins], labels: dict, module) -> list[Ins]:
    """The kernel's mbarrier waits when nothing the kernel can run arrives on an mbarrier
    (``module()``: the whole module's instructions, read when a call leaves the kernel)."""
    waits = [i for i in code if i.op.startswith("SYNCS.PHASECHK")]
    if not waits or _arrives(code):
        return []
    leaves = any(i.base == "CALL" and i.target not in labels for i in code)
    if leaves and (module is None or _arrives(module())):
        return []
    return waits


# --- check 2: a block-wide barrier under a condition on threadIdx --------------------------------

_SOURCES = {"SR_TID.X": "threadIdx.x", "SR_TID.Y": "threadIdx.y", "SR_TID.Z": "threadIdx.z",
            "SR_LANEID": "the lane index", "SR_EQMASK": "the lane index",
            "SR_LTMASK": "the lane index", "SR_LEMASK": "the lane index",
            "SR_GTMASK": "the lane index", "SR_GEMASK": "the lane index"}
# what control flow and memory writes are: no register written
_NO_DEST = {"BRA", "BRX", "JMP", "JMX", "EXIT", "RET", "CALL", "BSSY", "BSYNC", "BREAK", "BPT",
            "KILL", "WARPSYNC", "NANOSLEEP", "YIELD", "NOP", "BAR", "MEMBAR", "FENCE", "ERRBAR",
            "CGAERRBAR", "CCTL", "DEPBAR", "LDGDEPBAR", "ACQBULK", "PREEXIT", "ENDCOLLECTIVE",
            "UCGABAR_ARV", "UCGABAR_WAIT", "WARPGROUP", "ST", "STG", "STS", "STL", "STAS", "RED",
            "REDG", "REDAS", "LDGSTS", "UTMALDG", "UTMASTG", "UTMAREDG", "UTMAPF", "UTMACCTL",
            "UBLKCP", "UBLKRED", "UBLKPF", "UTCBAR", "UTCCP", "UTCSHIFT", "ARRIVES", "SUST",
            "SURED", "UVIRTCOUNT", "USETSHMSZ"}
# values read from memory or the hardware: known not to come from a register of the thread
_OPAQUE = {"LD", "LDG", "LDS", "LDL", "LDC", "ULDC", "LDCU", "LDSM", "LDTM", "ATOM", "ATOMS",
           "ATOMG", "SYNCS", "B2R", "BMOV", "CS2R", "LEPC", "ELECT", "USETMAXREG", "SULD",
           "SUATOM", "TLD", "TEX", "TLD4", "TXQ", "QSPC", "S2R", "S2UR", "GETLMEMBASE"}
# computations whose operands are destinations first, then sources (a predicate right after
# the destination register is a carry out)
_ARITH = {"IADD3", "IADD", "IADD32I", "IMAD", "IMUL", "IMUL32I", "ISCADD", "LEA", "LOP3", "LOP",
          "LOP32I", "SHF", "SHL", "SHR", "MOV", "MOV32I", "SEL", "R2UR", "VIADD", "VIADDMNMX",
          "VIMNMX", "IMNMX", "IABS", "POPC", "FLO", "PRMT", "BMSK", "SGXT", "BREV", "IDP",
          "IDP4A", "VABSDIFF", "VABSDIFF4", "HFMA2", "HADD2", "HMUL2", "HMNMX2", "FADD", "FMUL",
          "FFMA", "FMNMX", "FSEL", "FSWZADD", "FRND", "MUFU", "F2F", "F2I", "I2F", "I2FP", "F2IP",
          "F2FP", "I2I", "I2IP", "DADD", "DMUL", "DFMA", "DMNMX", "P2R", "SHFL", "MATCH",
          "REDUX", "UIADD3", "UIMAD", "ULEA", "ULOP3", "ULOP", "UMOV", "USHF", "USHL", "USHR",
          "USEL", "UPOPC", "UPRMT", "UFLO", "UBMSK", "USGXT", "UBREV", "FCHK",
          "ISETP", "FSETP", "DSETP", "HSETP2", "UISETP", "PLOP3", "UPLOP3", "PSETP", "VOTE",
          "VOTEU", "R2P"}
# matrix multiplies into registers: their results are cleared, not traced
_MMA = {"HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA", "OMMA", "QMMA"}
_TWO_PREDICATES = {"ISETP", "FSETP", "DSETP", "HSETP2", "UISETP", "PLOP3", "UPLOP3", "PSETP"}
_TYPES = re.compile(r"^[FSU](8|16|32|64)$|^BF16$")
_ALL = frozenset({UNKNOWN})



def _width(i: Ins) -> int:
    """Registers a computation's first destination spans (1, 2 for 64-bit results)."""
    parts = i.op.split(".")
    if ".64." in i.op + "." or "WIDE" in parts[1:] or i.base in ("DADD", "DMUL", "DFMA", "DMNMX"):
        return 2
    if i.base in ("F2F", "I2F", "F2I", "I2I", "I2FP", "F2IP"):
        types = [p for p in parts[1:] if _TYPES.match(p)]
        return 2 if types and types[0].endswith("64") else 1
    return 1


def _span(i: Ins) -> int:
    """Registers a load or matrix multiply may write at most (over-counted: what it writes is
    cleared, never traced)."""
    for n, w in (("256", 8), ("128", 4), ("64", 2)):
        if f".{n}." in i.op + ".":
            return w
    if i.base in _MMA:
        return 256
    return {"LDSM": 4, "LDTM": 128, "B2R": 4}.get(i.base, 1)


def _expand(name: str, width: int = 1) -> list[str]:
    """Register names: ``R4`` x 2 -> R4, R5; ``PR`` -> P0..P6; constants give nothing."""
    if name in ("RZ", "URZ", "PT", "UPT"):
        return []
    if name in ("PR", "UPR"):
        return [f"{name[:-1]}{k}" for k in range(7)]
    m = re.fullmatch(r"(U?R|U?P)(\d+)", name)
    return [f"{m.group(1)}{int(m.group(2)) + k}" for k in range(width)] if m else []


def _dests_sources(i: Ins) -> tuple[list[str], list[str]]:
    """The registers ``i`` writes (first destinations first) and the ones it reads, by SASS's
    operand order: destinations first."""
    regs = [register(o) if "[" not in o else (None, "") for o in i.operands]
    n = 0
    if i.base in _TWO_PREDICATES:
        n = 2
    elif i.base in ("VOTE", "VOTEU"):
        n = len(regs) - 1
    elif i.base == "FCHK":
        n = 1
    else:
        while n < len(regs) and regs[n][0] and regs[n][0].lstrip("U").startswith("P"):
            n += 1                                           # predicate destinations first
        if n < len(regs) and regs[n][0] and not regs[n][0].lstrip("U").startswith("P"):
            n += 1                                           # then the register
            while n < len(regs) and regs[n][0] and re.fullmatch(r"U?P(\d|T)", regs[n][0]):
                n += 1                                       # carries out
    dests = [name for name, _ in regs[:n] if name]
    sources = []
    for name, suffix in regs[n:]:
        if name:
            sources += _expand(name, 2 if ".64" in suffix else 1)
    if i.base == "R2P":                                   # R2P PR, R0, mask: the predicates
        dests = _expand("PR")
    return dests, sources


def _step(state: tuple, i: Ins) -> tuple:
    """The state after ``i``: ``(default, {register: sources})``, the sources (threadIdx.x...)
    each register's value is computed from; after an instruction the trace does not know,
    every register is ``UNKNOWN``."""
    default, regs = state

    def get(r):
        return regs.get(r, default)
    if i.guard == "!PT" or (i.base in _NO_DEST and i.base != "CALL"):
        return state                                      # never runs, or writes no register
    known = i.base in _OPAQUE or i.base in _ARITH or i.base in _MMA
    if i.base == "CALL" or not known:
        if i.base != "CALL" and not any(_expand(register(o)[0] or "") for o in i.operands if "[" not in o):
            return state                                  # names no register
        return (_ALL, {})                                 # may write any: trust none after it
    guard = get(i.guard.lstrip("!")) if i.guard not in ("", "PT") else frozenset()
    dests, sources = _dests_sources(i)
    if i.base in _ARITH:
        value, width = frozenset().union(*(get(r) for r in sources)), _width(i)
    else:
        sr = i.operands[1].strip() if i.base in ("S2R", "S2UR") and len(i.operands) > 1 else ""
        value, width = frozenset({_SOURCES[sr]} if sr in _SOURCES else ()), _span(i)
    regs = dict(regs)
    for k, d in enumerate(dests):
        names = _expand(d, width if k == 0 and not d.lstrip("U").startswith("P") else 1)
        for j, r in enumerate(names):
            v = value if j == 0 or i.base in _ARITH else frozenset()
            regs[r] = (v | guard | get(r)) if guard or i.guard else v
    return (default, regs)


def _join(a, b):
    if a is None:
        return b
    default = a[0] | b[0]
    keys = set(a[1]) | set(b[1])
    return (default, {k: a[1].get(k, a[0]) | b[1].get(k, b[0]) for k in keys})


def _states(code, blocks):
    """The taint state at the start of each block (a fixed point over the flow graph)."""
    into = {b: None for b in blocks}
    into[0] = (frozenset(), {})
    todo = [0]
    while todo:
        b = todo.pop(0)
        state = into[b]
        for i in code[blocks[b].start:blocks[b].end]:
            state = _step(state, i)
        for s in blocks[b].succ:
            new = _join(into[s], state)
            if new != into[s]:
                into[s] = new
                if s not in todo:
                    todo.append(s)
    return into


def _taint_before(code, start, k, state):
    for i in code[start:k]:
        state = _step(state, i)
    return state


def _at_once_exit(code, blocks, b) -> bool:
    """Whether the threads entering block ``b`` exit at once: only jumps, NOPs and memory
    fences (a -G build's return path) before an EXIT."""
    seen = set()
    while b not in seen:
        seen.add(b)
        for i in code[blocks[b].start:blocks[b].end]:
            if i.base in ("NOP", "YIELD", "MEMBAR", "ERRBAR", "CGAERRBAR") and not i.guard:
                continue
            if i.base == "EXIT" and not i.guard:
                return True
            if i.base == "BRA" and unconditional(i) and len(blocks[b].succ) == 1:
                break
            return False
        else:
            if len(blocks[b].succ) != 1:
                return False
        b = blocks[b].succ[0]
    return False


def _block_wide(i: Ins) -> bool:
    """A barrier every thread of the block must reach: BAR.SYNC / BAR.RED with no count."""
    if not (i.op.startswith("BAR.SYNC") or i.op.startswith("BAR.RED")):
        return False
    values = [o for o in i.operands if not register(o)[0] or not register(o)[0].lstrip("U!").startswith("P")]
    return len(values) == 1


def _labels_of(taint) -> tuple:
    return tuple(sorted(taint)) if taint and UNKNOWN not in taint else ()


def _predicate_taint(state, names) -> frozenset:
    return frozenset().union(*(_ALL if n == UNKNOWN else state[1].get(n, state[0]) for n in names))


def _divergent_barriers(code, labels) -> list[tuple[Ins, Ins | None, tuple]]:
    """``(barrier, the branch or the instruction that set its predicate, sources)`` per
    block-wide barrier that runs only under a condition on threadIdx or the lane."""
    bars = [k for k, i in enumerate(code) if _block_wide(i)]
    blocks = basic_blocks(code, labels) if bars else None
    post = postdominators(blocks) if blocks else None
    if post is None:
        return []
    pdom, bit = post
    into = _states(code, blocks)
    block_of = {k: b for b, blk in blocks.items() for k in range(blk.start, blk.end)}
    out = []
    for k in bars:
        x, bar = block_of.get(k), code[k]
        if x is None:
            continue                                  # unreachable code
        if bar.guard:                                 # under a predicate
            name = bar.guard.lstrip("!")
            sources = _labels_of(_predicate_taint(_taint_before(code, blocks[x].start, k, into[x]),
                                                  [name]))
            if sources:
                setter = next((code[j] for j in range(k - 1, blocks[x].start - 1, -1)
                               if name in _dests_sources(code[j])[0]), None)
                out.append((bar, setter, sources))
                continue
        for b, blk in blocks.items():                 # the branches it is control dependent on
            inside = [s for s in blk.succ if pdom[s] & bit[x]]
            if len(blk.succ) != 2 or len(inside) != 1 or pdom[b] & ~bit[b] & bit[x]:
                continue
            other = next(s for s in blk.succ if s not in inside)
            if _at_once_exit(code, blocks, other):
                continue                              # if (...) return;: exited threads are not waited for
            branch = code[blk.end - 1]
            names = [n for n in (branch.guard.lstrip("!"), branch_predicate(branch)) if n]
            state = _taint_before(code, blk.start, blk.end - 1, into[b])
            sources = _labels_of(_predicate_taint(state, names))
            if sources:
                out.append((bar, branch, sources))
                break
    return out


def check(text: str, module_text: str | None = None) -> list[tuple]:
    """The findings in one kernel's SASS ``text`` (``module_text``: the whole module's, read
    when the kernel calls out of its own code), without source lines:
    ``("mbarrier", wait)`` and ``("barrier", barrier, condition or None, sources)``."""
    code, labels = parse(text)
    module = (lambda: parse(module_text)[0]) if module_text is not None else None
    out: list[tuple] = [("mbarrier", w) for w in _mbarrier_waits(code, labels, module)]
    out += [("barrier", *found) for found in _divergent_barriers(code, labels)]
    return out


# --- findings with their source lines -------------------------------------------------------------

@dataclass(frozen=True)
class Finding:
    """One deadlock-prone pattern in a kernel: ``kind`` ``"mbarrier"`` (a wait nothing arrives
    on) or ``"barrier"`` (a block-wide barrier under a condition on the thread index); the
    instruction (``address``: offset in the kernel, ``instruction``: its SASS) and its source
    ``line`` (``file``: ``"cell.cu"`` or a header; None where the line table does not say);
    for a barrier, the ``condition`` instruction and line, and the ``sources`` of the
    condition (``("threadIdx.x",)``)."""

    kind: str
    address: int
    instruction: str
    line: int | None = None
    file: str = ""
    condition: str = ""
    condition_address: int | None = None
    condition_line: int | None = None
    sources: tuple = ()

    @property
    def where(self) -> str:
        """``"line 20"`` (a header's ``"util.cuh:4"``), or the offset where no line is known."""
        return _where(self.file, self.line, self.address)

    @property
    def message(self) -> str:
        """What is proven, in one sentence (the view's warning, after the kernel's name)."""
        at = f"{self.instruction} at +{self.address:#06x}"
        if self.kind == "mbarrier":
            return (f"{self.where}: waits on an mbarrier ({at}), but nothing in this kernel arrives "
                    f"on an mbarrier or completes a transaction on one (no mbarrier.arrive, TMA or "
                    f"bulk-copy load, st.async, tcgen05.commit or cp.async.mbarrier.arrive); "
                    f"mbarriers live in the block's (or cluster's) shared memory, which only this "
                    f"kernel's code reaches, so no phase of one ever completes and a wait for the "
                    f"phase in progress never returns")
        held = " and ".join(self.sources)
        if self.condition_address is not None:
            where = _where(self.file if self.condition_line else "", self.condition_line,
                           self.condition_address)
            held += f" holds ({where})"
            at += f", under {self.condition} at +{self.condition_address:#06x}"
        else:
            held += " holds"
        return (f"{self.where}: {_barrier_name(self.instruction)} runs only where a condition on "
                f"{held}; CUDA requires such a condition to be the same for the whole block, "
                f"otherwise the block may wait forever ({at})")


def _where(file: str, line: int | None, address: int) -> str:
    if line is None:
        return f"+{address:#06x}"
    return f"line {line}" if file in ("", "cell.cu") else f"{file}:{line}"


def _barrier_name(instruction: str) -> str:
    m = re.search(r"BAR\.(SYNC|RED)\S*\s+(\S+?)(?:,|$)", instruction)
    if m and m.group(1) == "RED":
        return "__syncthreads_count/_and/_or()"
    if m and m.group(2) not in ("0x0", "0"):
        return f"a block-wide barrier (bar.sync {int(m.group(2), 0) if m.group(2).startswith('0x') else m.group(2)})"
    return "__syncthreads()"


def deadlocks(result: CompilationResult, symbol: str) -> tuple[Finding, ...]:
    """The deadlock-prone patterns of kernel ``symbol`` (its name in the binary) in build
    ``result``, each with its source line (from the line table, read only when there is a
    finding: :func:`cuda_magic.inspect.lines.placed`).  Made once per build (cached)."""
    from .disasm import _cached, sass, sass_text

    def make():
        found = check(sass(result, symbol), sass_text(result))
        if not found:
            return ()
        lines = _lines(result, symbol)
        out, seen = [], set()
        for kind, ins, *rest in found:
            file, line = lines.get(ins.address, ("", None))
            if kind == "mbarrier":
                if (file, line) in seen:
                    continue                          # one finding per line (a retry loop's waits)
                seen.add((file, line))
                out.append(Finding(kind, ins.address, ins.text, line, file))
                continue
            cond, sources = rest
            cfile, cline = lines.get(cond.address, ("", None)) if cond is not None else ("", None)
            out.append(Finding(kind, ins.address, ins.text, line, file,
                               cond.text if cond is not None else "",
                               cond.address if cond is not None else None,
                               cline if cfile == file else None, tuple(sources)))
        return tuple(out)
    return _cached(result, f"deadlocks:{symbol}", make)


def _lines(result: CompilationResult, symbol: str) -> dict:
    """``{offset: (file, line)}`` of the kernel's instructions; empty where no line table can
    be read (the findings then give offsets)."""
    from .lines import placed
    try:
        code, _ = placed(result, symbol)
    except Exception:             # no cubin, no nvdisasm run: offsets only, never a guess
        return {}
    return {p.address: (p.file, p.line) for p in code if p.line is not None}
