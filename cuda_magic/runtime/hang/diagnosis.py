"""Where a hung kernel's warps wait: cuda-gdb's PCs (:mod:`.gdb`) placed on SASS and cell lines.

Each resident warp's PC becomes an offset into its kernel's code (cuda-gdb names the focused
warp's PC as ``<kernel+offset>``: all warps of the kernel share that base), which
:func:`cuda_magic.inspect.lines.placed` turns into the instruction and its cell line (the
running binary's line table, or an inspection build with ``-lineinfo`` added when it has the
same machine code; said in :attr:`Diagnosis.lines_from`).  What the warp waits on is read
from the code around the PC, as a person reads it:

- a PC just after ``BAR.SYNC.DEFER_BLOCKING`` (the warp issues on until it needs the
  barrier) or at a ``BAR``: a ``__syncthreads()`` / ``bar.sync``;
- a PC in a loop (a branch back to an earlier address) whose body holds
  ``SYNCS.PHASECHK.TRANS64.TRYWAIT``: an mbarrier wait that keeps failing; a body with a
  strong/volatile load: a spin on memory; ``NANOSLEEP``: a sleeping spin; else a loop;
- otherwise the instruction at the PC.

Warps waiting at one place are grouped: "warps 4-7 of each of the 8 blocks".
"""

from __future__ import annotations

from dataclasses import dataclass

from .gdb import Snapshot

__all__ = ["WaitGroup", "Diagnosis", "diagnose", "waits_on", "warp_ranges"]

MAX_GROUPS = 8          # groups in the message (all are kept on the Diagnosis)


@dataclass(frozen=True)
class WaitGroup:
    """Warps of one kernel waiting at one PC."""
    kernel: str
    address: int | None          # offset of the instruction waited on (None: not placed)
    instruction: str             # e.g. "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R5+URZ], R4"
    what: str                    # e.g. "an mbarrier wait (try_wait, retried in a loop)"
    file: str                    # "cell.cu", a header, or ""
    line: int | None
    source: str                  # the line's text, or ""
    warps: tuple                 # ((block, warp, sm), ...)

    def who(self) -> str:
        return warp_ranges(self.warps)

    def sms(self) -> str:
        """The SMs these warps are resident on, e.g. "124-131" ("" if not known)."""
        return _ranges(sm for _, _, sm in self.warps if sm >= 0)

    def where(self) -> str:
        at = (f"line {self.line}" if self.file in ("", "cell.cu") else f"{self.file}:{self.line}") \
            if self.line else (f"+{self.address:#x}" if self.address is not None else "an unknown PC")
        instr = f" ({self.instruction} at +{self.address:#x})" if self.instruction else ""
        return f"{at}: {self.what}{instr}"


@dataclass(frozen=True)
class Diagnosis:
    """The resident warps of a hung launch, grouped by where they wait."""
    groups: tuple                # (WaitGroup, ...), the most warps first
    warps: int                   # resident warps of the launch
    blocks: int                  # resident blocks
    lines_from: str              # where the lines come from
    others: tuple = ()           # other kernels cuda-gdb saw running ("name<<<grid, block>>>")
    seconds: float = 0.0         # how long cuda-gdb took
    tool: str = "cuda-gdb"

    def text(self, limit: int = MAX_GROUPS) -> str:
        rows = [f"{self.warps} warp{'s' * (self.warps != 1)} of {self.blocks} "
                f"block{'s' * (self.blocks != 1)} resident (read with {self.tool} in "
                f"{self.seconds:.1f} s; lines from {self.lines_from}):"]
        for g in self.groups[:limit]:
            on = f"; on SM {g.sms()}" if g.sms() else ""
            rows.append(f"  {g.who()} wait at {g.where()}{on}")
            if g.source:
                rows.append(f"      {g.line:>4} | {g.source.strip()[:120]}")
        if len(self.groups) > limit:
            rows.append(f"  ... and {len(self.groups) - limit} more places (err.diagnosis.groups)")
        if self.others:
            rows.append(f"  also running: {', '.join(self.others)}")
        return "\n".join(rows)


def _ranges(values) -> str:
    values = sorted(set(values))
    out, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            out.append(f"{start}" if start == v else f"{start}-{v}")
            start = None
    return ",".join(out)


def _block(b) -> str:
    return f"({b[0]},{b[1]},{b[2]})"


def warp_ranges(warps) -> str:
    """"warps 4-7 of each of the 8 blocks", "warp 2 of block (3,0,0)", ... for
    ``(block, warp, sm)`` triples."""
    by_block: dict = {}
    for block, warp, _ in warps:
        by_block.setdefault(block, set()).add(warp)
    shapes: dict = {}
    for block, ws in by_block.items():
        shapes.setdefault(frozenset(ws), []).append(block)
    parts = []
    for ws, blocks in sorted(shapes.items(), key=lambda kv: (-len(kv[1]), min(kv[0]))):
        w = f"warp{'s' * (len(ws) != 1)} {_ranges(ws)}"
        if len(blocks) == 1:
            parts.append(f"{w} of block {_block(blocks[0])}")
        elif len(shapes) == 1:
            parts.append(f"{w} of each of the {len(blocks)} blocks")
        else:
            shown = ", ".join(_block(b) for b in sorted(blocks, key=lambda b: b[::-1])[:3])
            more = f" and {len(blocks) - 3} more" if len(blocks) > 3 else ""
            parts.append(f"{w} of {len(blocks)} blocks ({shown}{more})")
    return "; ".join(parts)


def _op(text: str) -> str:
    return text.split(None, 1)[0] if text else ""


def waits_on(code, address: int):
    """``(instruction waited on, what it is)`` for a warp at ``address`` in ``code`` (the
    kernel's :class:`~cuda_magic.inspect.lines.Placed` instructions); (None, "") if the
    address is not in it."""
    at = {p.address: i for i, p in enumerate(code)}
    i = at.get(address)
    if i is None:
        return None, ""
    here = code[i]
    if _op(here.text).startswith("BAR."):
        return here, "a __syncthreads() / bar.sync (waits for the rest of the block)"
    for j in range(i - 1, max(i - 5, -1), -1):        # the barrier a warp issued past
        p = code[j]
        if _op(p.text).startswith(("BRA", "EXIT", "RET", "JMP", "BRX")):
            break
        if _op(p.text).startswith("BAR.SYNC") or _op(p.text).startswith("BAR.RED"):
            return p, "a __syncthreads() / bar.sync (waits for the rest of the block)"
    for j in range(i, min(i + 8, len(code))):          # a loop whose back edge is near
        p = code[j]
        if _op(p.text).startswith("BRA") and p.target is not None and p.target <= address:
            body = [q for q in code if p.target <= q.address <= p.address]
            return _loop(body, p)
        if _op(p.text).startswith(("BRA", "EXIT", "RET")):
            break
    if "PHASECHK" in here.text:
        return here, "an mbarrier wait (try_wait)"
    return here, f"{_op(here.text)}"


def _loop(body, branch):
    for q in body:
        if "SYNCS.PHASECHK" in q.text:
            return q, "an mbarrier wait (try_wait, retried in a loop: the phase never completes)"
    for q in body:
        if q.text.startswith("NANOSLEEP"):
            return q, "a spin loop with __nanosleep"
    for q in body:
        op = _op(q.text)
        if op.startswith(("LDG", "LD.", "LDS", "LD ")) and any(
                m in op for m in (".STRONG", ".VOLATILE", ".SYS", ".GPU")):
            return q, "a spin on a memory load (a flag no one sets?)"
    return branch, f"a loop (branch back to +{branch.target:#x})"


def _matches(info: dict, name: str, symbol: str | None, dims) -> bool:
    invocation = info.get("name", "")
    named = invocation.split("(", 1)[0].split("<", 1)[0].split("::")[-1]
    same_name = named in (name, symbol) or (symbol and symbol in invocation) or \
        invocation.startswith(name)
    return bool(same_name) and (dims is None or (info["grid"] + info["block"]) == tuple(dims))


def diagnose(snap: Snapshot, name: str, symbol: str | None, dims, placed=None,
             source: str = "") -> Diagnosis:
    """Group ``snap``'s warps of the kernel ``name`` (its binary ``symbol``, launched with
    ``dims`` = grid + block) by where they wait.  ``placed``: a function ``() -> (Placed
    instructions, where the lines come from)`` (None, or raising: PCs only)."""
    ours = [n for n, info in snap.kernels.items() if _matches(info, name, symbol, dims)]
    if not ours and len(snap.kernels) == 1:
        ours = list(snap.kernels)
    code, lines_from = (), "cuda-gdb"
    if placed is not None:
        try:
            code, lines_from = placed()
        except Exception as exc:        # no nvdisasm, no cubin: PCs and cuda-gdb's lines only
            lines_from = f"cuda-gdb (the SASS could not be read: {str(exc)[:120]})"
    block_dim = next((snap.kernels[n]["block"] for n in ours), (1, 1, 1))
    src = source.split("\n")
    gdb_line = {(t.kernel, t.pc): (t.file, t.line) for t in snap.threads}
    groups: dict = {}
    for w in snap.warps:
        if w.kernel not in ours:
            continue
        linear = w.first_thread[0] + block_dim[0] * (w.first_thread[1] + block_dim[1] * w.first_thread[2])
        groups.setdefault((w.kernel, w.pc), []).append((w.block, linear // 32, w.sm))
    if not groups:      # no per-SM listing: the thread rows (no SM)
        for t in snap.threads:
            if t.kernel in ours:
                for lin in range(_lin(t.first, block_dim) // 32, _lin(t.last, block_dim) // 32 + 1):
                    groups.setdefault((t.kernel, t.pc), []).append((t.block, lin, -1))
    merged: dict = {}
    for (kernel, pc), warps in groups.items():
        base = snap.bases.get(kernel)
        offset = pc - base if base is not None else None
        instr, what = waits_on(code, offset) if offset is not None and code else (None, "")
        if instr is not None:
            file, line, text, address = instr.file, instr.line, instr.text, instr.address
        else:
            file, line = gdb_line.get((kernel, pc), ("", None))
            file = "cell.cu" if file.endswith("cell.cu") else file
            text, address, what = "", offset, what or "waits here"
        quoted = src[line - 1] if line and file in ("", "cell.cu") and 0 < line <= len(src) else ""
        key = (address, text, what, file, line, quoted)
        merged.setdefault(key, []).extend(warps)
    out = [WaitGroup(name, *key[:5], key[5], tuple(sorted(set(warps))))
           for key, warps in merged.items()]
    out.sort(key=lambda g: (-len(g.warps), g.line or 0))
    warps = sum(len(g.warps) for g in out)
    blocks = len({b for g in out for b, _, _ in g.warps})
    others = tuple(f"{info['name']}<<<{info['grid']}, {info['block']}>>>"
                   for n, info in snap.kernels.items() if n not in ours)
    return Diagnosis(tuple(out), warps, blocks, lines_from, others, snap.seconds)


def _lin(t, block_dim) -> int:
    return t[0] + block_dim[0] * (t[1] + block_dim[1] * t[2])
