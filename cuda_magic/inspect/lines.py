"""Per-line cost: which source lines need the registers, spill, and what instructions they make.

One ``nvdisasm --print-life-ranges --life-range-mode count`` run per build gives, for every
SASS instruction, the number of live registers of each kind (GPR, PRED, UGPR) and
nvdisasm's ``SpillRefill`` marks; each instruction's source line comes from the cubin's own
line table (``.debug_line``, made by ``-lineinfo``; nvdisasm prints no line markers with
life ranges).  Rows are keyed by (file, line); the cell's file is ``cell.cu``.  That run is
the one the SASS listing is made from too (:func:`.disasm.life_ranges`): opening the SASS
and the Source tabs of one build runs nvdisasm once, and :func:`prefetch` starts it in the
background when a view is shown.

Inlined code (a CUB call, a ``__forceinline__`` helper from a header) belongs to the cell line
it was inlined at: the line table's inline chain (:func:`binary.inline_table`, what
``nvdisasm -gi`` prints) is followed outwards to the innermost line of the cell, and the
lines of other files it went through are kept under that row (``LineCost.inlined``) with
short paths (``<cccl>/cub/block/block_reduce.cuh``, ``<cutlass>/...``, ``<cuda>/...``).
Code that reaches no cell line (a kernel defined in a header) keeps its own file's rows.

Fidelity: the figures describe the binary that runs.  A build with line info
(``-lineinfo``, ``-G``) is read as it is.  For one without, an inspection build with
``-lineinfo`` appended is made (through the compile cache), and its machine code is compared
with the running binary's, kernel by kernel, byte for byte: the table says which kernels are
the same code and which are not.
"""

from __future__ import annotations

import linecache
import os
import re
import tempfile
from dataclasses import dataclass

from ..compile import binary as _binary
from ..compile.compiler import CompilationResult, compile_resolved
from . import disasm
from .disasm import CLASSES, _cached, cubin, machine_code, opcode_class, pick

__all__ = ["LineCost", "KernelLines", "lines", "parse_life_ranges", "short_path", "Placed", "placed",
           "LINE_INFO_FLAGS", "METRICS", "prefetch"]

LINE_INFO_FLAGS = ("-lineinfo", "--generate-line-info", "-G", "--device-debug")
METRICS = ("registers", "spills", "instructions")     # what the heat map can colour by

_SECTION = re.compile(r"^//-+ \.text\.(\S+)\s+-+")
_COLUMNS = re.compile(r"//\s*\|((?:\s*[A-Z]+\s*\|)+)\s*$")
_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s*(@!?U?P[T\d]\s+)?(.*?)\s*;?\s*(\(\*[^)]*\*\))?\s*;?\s*//\s*\|(.*)\|\s*$")
_SPILL = re.compile(r'\(\*"SpillRefill"\*\)')
_WIDTH = re.compile(r"\.(8|16|32|64|128)\b")


@dataclass
class _Instr:
    address: int
    text: str          # the instruction without predicate and counts, e.g. "STL [R1+0x23c], R18"
    counts: dict       # {"GPR": 10, "UGPR": 3}
    spill: bool
    pred: str = ""     # its predicate, e.g. "@!P0"


def parse_life_ranges(text: str) -> dict[str, list[_Instr]]:
    """nvdisasm ``-plr -lrm count`` output -> per kernel section, its instructions with their
    live-register counts and spill marks."""
    out: dict[str, list[_Instr]] = {}
    name = None
    columns: list[str] = []
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            name, columns = m.group(1), []
            out[name] = []
            continue
        if name is None:
            continue
        if not columns:
            c = _COLUMNS.search(line)
            if c and "#" not in c.group(1):
                columns = [x.strip() for x in c.group(1).split("|") if x.strip()]
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        cells = [x.strip() for x in m.group(5).split("|")]
        counts = {col: int(v) if v.isdigit() else 0 for col, v in zip(columns, cells)}
        out[name].append(_Instr(int(m.group(1), 16), m.group(3).strip(), counts,
                                bool(m.group(4) and _SPILL.search(m.group(4))),
                                (m.group(2) or "").strip()))
    return out


@dataclass(frozen=True)
class LineCost:
    """What one source line costs in one kernel (over all the instructions made from it)."""

    file: str                   # "cell.cu", or the header the code came from
    line: int | None            # None: instructions the line table gives no line
    instructions: int
    registers: int              # peak live general registers (GPR) over the line's instructions
    predicates: int             # peak live predicate registers
    uniform: int                # peak live uniform registers (UGPR)
    spill_stores: int           # STL that nvdisasm marks as spill code
    spill_loads: int            # LDL that nvdisasm marks as spill code
    local_bytes: int            # bytes per thread moved by STL/LDL (spills and local arrays)
    spill_bytes: int            # of which spill code
    ftz: int                    # instructions with .FTZ
    mix: tuple[tuple[str, int], ...]   # (class, count) for memory, float, integer, control, tensor
    notable: tuple[str, ...]    # e.g. ("CALL", "MUFU.RCP"): instructions worth a look
    sass: tuple[str, ...] = ()  # the instructions, "/*0040*/ IMAD R7, R7, UR4, R0"
    text: str | None = None     # the source line (a header's when its file can be read)
    path: str = ""              # the file as the line table names it (``file`` is shortened)
    inlined: tuple["LineCost", ...] = ()   # other files' lines inlined at this cell line,
                                           # most instructions first (counted in this row too)

    @property
    def inlined_instructions(self) -> int:
        """How many of this line's instructions come from code inlined from other files."""
        return sum(r.instructions for r in self.inlined)

    @property
    def spills(self) -> int:
        """Spill instructions (stores and loads)."""
        return self.spill_stores + self.spill_loads

    def count(self, cls: str) -> int:
        """Instructions of class ``cls`` (memory, float, integer, control, tensor)."""
        return dict(self.mix).get(cls, 0)

    @property
    def where(self) -> str:
        """``"line 12"`` for the cell's lines, ``"util.cuh:4"`` or
        ``"<cccl>/cub/block/block_reduce.cuh:594"`` for a header's."""
        if self.line is None:
            return "(no line)"
        return f"line {self.line}" if self.file == "cell.cu" else f"{self.file}:{self.line}"

    def row(self) -> dict:
        """As plain data, one dict per line (what :func:`cuda_magic.lines` returns)."""
        return {"file": self.file, "line": self.line, "instructions": self.instructions,
                "registers": self.registers, "predicates": self.predicates,
                "uniform": self.uniform, "spill_stores": self.spill_stores,
                "spill_loads": self.spill_loads, "local_bytes": self.local_bytes,
                "spill_bytes": self.spill_bytes,
                "ftz": self.ftz, **dict(self.mix), "notable": ", ".join(self.notable),
                "inlined": self.inlined_instructions, "source": self.text}


@dataclass(frozen=True)
class KernelLines:
    """The per-line table of one kernel, and which binary it was read from."""

    kernel: str                      # the symbol in the binary
    rows: tuple[LineCost, ...]       # the cell's lines in order, then headers', then no line
                                     # (each instruction in one row; inlined code in its
                                     # cell line's, detailed in the row's ``inlined``)
    binary: str                      # which binary, in words
    same_code: bool                  # the binary read is the running one, or has its exact code

    @property
    def peak(self) -> int:
        return max((r.registers for r in self.rows), default=0)

    def hottest(self, n: int = 5, by: str = "registers") -> list[LineCost]:
        """The ``n`` lines with the most live registers (``by="spills"``, ``"instructions"``)."""
        if by not in METRICS:
            raise ValueError(f"by={by!r}: choose one of {', '.join(METRICS)}")
        ranked = [r for r in self.rows if r.line is not None and getattr(r, by)]
        return sorted(ranked, key=lambda r: (-getattr(r, by), -r.spills, r.line))[:n]

    def of(self, line: int, file: str = "cell.cu") -> LineCost | None:
        return next((r for r in self.rows if r.line == line and r.file == file), None)


_NOTABLE = re.compile(r"^(MUFU\.\w+|CALL|BAR|WARPSYNC|MEMBAR|ATOM|ATOMS|ATOMG|RED|REDG|\w*MMA)\b")


_SHORT = (   # (pattern on a normalised absolute path, family): the part after the match is kept
    (re.compile(r"^/.*/include/cccl/(?=.)"), "<cccl>"),                      # CCCL 3: cccl/cub/...
    (re.compile(r"^/.*/include/(?=(?:cub|thrust|cuda|nv)/.)"), "<cccl>"),    # CCCL 2, CUDA 12
    (re.compile(r"^/.*/include/(?=(?:cutlass|cute)/.)"), "<cutlass>"),
    (re.compile(r"^/.*/(?:cuda(?:-[\d.]+)?|nvidia/[^/]+|targets/[^/]+)/include/(?=.)"), "<cuda>"),
)


def short_path(path: str) -> str:
    """A header's path as the views show it: ``<cccl>/cub/block/block_reduce.cuh``,
    ``<cutlass>/cute/tensor.hpp``, ``<cuda>/crt/math_functions.hpp`` for the toolkit's
    header families wherever they are installed (pip, conda, a system toolkit); a header
    beside the cell (an in-memory ``%%cuda_header``: NVRTC's working directory, nvcc's
    private temporary one) by its name; any other path as it is."""
    if not path.startswith("/"):
        return path
    norm = os.path.normpath(path)
    here = os.path.dirname(norm)
    try:
        cwd = os.getcwd()
    except OSError:                          # the working directory was removed
        cwd = None
    if here == cwd or (os.path.basename(here).startswith("cuda-magic-") and
                       os.path.dirname(here) == os.path.normpath(tempfile.gettempdir())):
        return os.path.basename(norm)        # beside the cell: NVRTC's cwd, nvcc's temporary dir
    for pattern, family in _SHORT:
        m = pattern.match(norm)
        if m:
            return f"{family}/{norm[m.end():]}"
    return path


def _header_text(path: str, line: int) -> str | None:
    """Line ``line`` of the header at ``path`` as it is on disk now, if it can be read."""
    if not path.startswith("/"):
        return None
    return linecache.getline(path, line).rstrip("\n") or None


def _cost(file: str, line: int | None, instrs: list[_Instr], text: str | None,
          path: str = "", inlined: tuple = (), origin: dict | None = None) -> LineCost:
    mix = dict.fromkeys(CLASSES, 0)
    notable: set[str] = set()
    stores = loads = ftz = local = spilled = 0
    for i in instrs:
        op = i.text.split(None, 1)[0] if i.text else ""
        mix[opcode_class(op)] += 1
        base = op.split(".", 1)[0]
        if base in ("STL", "LDL"):
            width = _WIDTH.findall(op)
            size = int(width[-1]) // 8 if width else 4
            local += size
            spilled += size if i.spill else 0
            stores += i.spill and base == "STL"
            loads += i.spill and base == "LDL"
        ftz += ".FTZ" in op
        m = _NOTABLE.match(op)
        if m:
            notable.add(m.group(1) if base == "MUFU" else base)
    return LineCost(file, line, len(instrs),
                    max((i.counts.get("GPR", 0) for i in instrs), default=0),
                    max((i.counts.get("PRED", 0) for i in instrs), default=0),
                    max((i.counts.get("UGPR", 0) for i in instrs), default=0),
                    stores, loads, local, spilled, ftz, tuple(mix.items()), tuple(sorted(notable)),
                    tuple(f"/*{i.address:04x}*/ {i.text}" +
                          (f"    // {origin[i.address]}" if origin and i.address in origin else "")
                          for i in instrs), text, path or file, inlined)


def _has_line_info(result: CompilationResult) -> bool:
    flags = result.config.get(result.compiler) or []
    return any(f.split("=", 1)[0] in LINE_INFO_FLAGS for f in flags)


def inspection_build(result: CompilationResult) -> CompilationResult:
    """The build the per-line table reads: ``result``'s machine code if it has line info, else
    the same config with ``-lineinfo`` appended to the compiler's list, as a cubin."""
    code = machine_code(result)
    if _has_line_info(code):
        return code
    flags = list(code.config.get(code.compiler) or []) + ["-lineinfo"]
    resolved = code.config.with_value(code.compiler, flags, "inspect")
    if code.format != "cubin":
        resolved = resolved.with_value("target_format", "cubin", "inspect")
    return compile_resolved(code.source, resolved, name_expressions=code.name_expressions)


def _table(result: CompilationResult) -> dict[str, KernelLines]:
    running = machine_code(result)
    seen = inspection_build(result)
    elf = cubin(seen)
    if elf is None:
        raise ValueError(f"no cubin to read in the {seen.format} build for {seen.arch}")
    ours = _binary.kernel_code(elf)
    running_elf = elf
    if seen is running:
        same = dict.fromkeys(ours, True)
        where = "the running binary (built with line info)"
    else:
        running_elf = cubin(running)
        theirs = _binary.kernel_code(running_elf) if running_elf else {}
        same = {k: theirs.get(k) == code for k, code in ours.items()}
        where = "an inspection build with -lineinfo added"
    if result.format == "ptx":
        where += " (the cubin of this PTX's config; the driver compiles the PTX itself)"
    # one nvdisasm run per build: the running binary's, which its SASS is read from too, when
    # the inspection build has the same machine code (the same addresses: its line table
    # places them); else the inspection build's own
    if running_elf is not None and all(same.values()):
        plr = disasm.life_ranges(running, running_elf)
    else:
        plr = disasm.life_ranges(seen, elf)
    instrs = parse_life_ranges(plr)
    spill_notes: dict[str, str] = {}
    table = _binary.inline_table(elf)
    source = result.source.split("\n")
    if not any(i.spill for found in instrs.values() for i in found):
        # nvdisasm before 13.5 marks no spill code: in a kernel ptxas says spills, count its
        # local-memory instructions (STL/LDL) as spill code, and say so
        for kernel, found in instrs.items():
            res = seen.resources.get(kernel)
            if res is not None and res.spills:
                for i in found:
                    i.spill = i.text.split(".", 1)[0].split(None, 1)[0] in ("STL", "LDL")
                spill_notes[kernel] = ("; this nvdisasm marks no spill code, so every STL/LDL "
                                       "of a kernel ptxas says spills is counted as spill")
    out = {}
    for kernel in ours:
        costs = _rows(instrs.get(kernel, []), table.get(kernel, []), source)
        note = where + ("" if seen is running else
                        ", the same machine code as the running binary" if same.get(kernel) else
                        ", whose machine code DIFFERS from the running binary's")
        out[kernel] = KernelLines(kernel, costs, note + spill_notes.get(kernel, ""),
                                  same.get(kernel, False))
    return out


def _rows(instrs: list[_Instr], chains: list, source: list[str]) -> tuple[LineCost, ...]:
    """One row per line: each instruction on the innermost cell line of its inline chain (else
    on its own line), the other files' lines it came through kept under that row."""
    groups: dict[tuple, list[_Instr]] = {}
    inner: dict[tuple, dict[tuple, list[_Instr]]] = {}
    linecache.checkcache()                   # a header edited since: its line as it is now
    for i in instrs:
        chain = _binary.chain_of(chains, i.address) or (("", None),)
        at = next((c for c in chain if c[0] == "cell.cu"), chain[0])
        groups.setdefault(at, []).append(i)
        if chain[0] != at and chain[0][0] != "cell.cu":
            inner.setdefault(at, {}).setdefault(chain[0], []).append(i)
    order = sorted(groups, key=lambda k: (k[1] is None, k[0] != "cell.cu", short_path(k[0]), k[1] or 0))
    out = []
    for f, ln in order:
        subs = sorted((_cost(short_path(p), n, found, _header_text(p, n), p)
                       for (p, n), found in inner.get((f, ln), {}).items()),
                      key=lambda r: (-r.instructions, r.file, r.line))
        origin = {i.address: f"{short_path(p)}:{n}"
                  for (p, n), found in inner.get((f, ln), {}).items() for i in found}
        text = (source[ln - 1] if ln and ln <= len(source) else None) if f == "cell.cu" else \
            _header_text(f, ln) if ln else None
        out.append(_cost(short_path(f), ln, groups[(f, ln)], text, f, tuple(subs), origin))
    return tuple(out)


def lines(result: CompilationResult, kernel: str | None = None):
    """The per-line cost of each kernel: ``{symbol: KernelLines}``, or one kernel's with
    ``kernel`` (its name in the binary, or a name expression given at compile time).  One
    nvdisasm run per build, made the first time it is asked for (cached on the result)."""
    return pick(result, _cached(result, "lines", lambda: _table(result)), kernel, "kernel",
                "in this build; kernels")


@dataclass(frozen=True)
class Placed:
    """One SASS instruction of the binary that runs, placed on its source line."""
    address: int            # offset from the kernel's first instruction
    pred: str               # its predicate ("@!P0") or ""
    text: str               # the instruction, e.g. "BAR.SYNC.DEFER_BLOCKING 0x0"
    file: str               # "cell.cu", a header's short path, or "" (no line known)
    line: int | None        # the innermost cell line of its inline chain, else its own
    target: int | None = None   # a branch's target address


_LABEL = re.compile(r"^(\.L_x_\d+):")
_TARGET = re.compile(r"`\((\.L_x_\d+)\)")


def _labels(plr: str, kernel: str) -> dict[str, int]:
    """Label -> the address of the instruction after it, in ``kernel``'s section of a listing."""
    out, waiting, inside = {}, [], False
    for row in plr.splitlines():
        m = _SECTION.match(row)
        if m:
            inside = m.group(1) == kernel
            continue
        if not inside:
            continue
        m = _LABEL.match(row)
        if m:
            waiting.append(m.group(1))
            continue
        m = _INSTR.match(row)
        if m and waiting:
            for label in waiting:
                out[label] = int(m.group(1), 16)
            waiting = []
    return out


def placed(result: CompilationResult, kernel: str) -> tuple[tuple[Placed, ...], str]:
    """Each instruction of ``kernel`` (its symbol) in the binary that runs, with its source
    line, and where the lines come from (the per-line table's note: the running binary, or an
    inspection build with ``-lineinfo`` added and whether its machine code is the same; lines
    are left out where it is not).  What the hang diagnosis maps warps' PCs with."""
    def make():
        running = machine_code(result)
        seen = inspection_build(result)
        elf, running_elf = cubin(seen), cubin(running)
        if running_elf is None:
            raise ValueError(f"no cubin to read in the {running.format} build for {running.arch}")
        same = seen is running or (elf is not None and _binary.kernel_code(elf).get(kernel)
                                   == _binary.kernel_code(running_elf).get(kernel))
        plr = disasm.life_ranges(running, running_elf)
        instrs, labels = parse_life_ranges(plr).get(kernel, []), _labels(plr, kernel)
        chains = _binary.inline_table(elf).get(kernel, []) if same and elf else []
        out = []
        for i in instrs:
            chain = _binary.chain_of(chains, i.address) if chains else None
            at = next((c for c in chain if c[0] == "cell.cu"), chain[0]) if chain else ("", None)
            t = _TARGET.search(i.text)
            out.append(Placed(i.address, i.pred, i.text, short_path(at[0]) if at[0] else "",
                              at[1], labels.get(t.group(1)) if t else None))
        note = ("the running binary's line table" if seen is running else
                "an inspection build with -lineinfo added (the same machine code)" if same else
                "no lines: the inspection build with -lineinfo has other machine code")
        return tuple(out), note
    return _cached(result, f"placed:{kernel}", make)


def _prefetch(results) -> None:
    for result in results:
        for make in (lambda: disasm.sass(result), lambda: lines(result)):
            try:
                make()
            except Exception:       # said again, where it belongs, when its tab asks for it
                pass


def prefetch(results, name: str = "cuda-magic prefetch"):
    """Start making what the SASS and Source tabs of ``results`` (CompilationResults) will
    show, in one daemon thread: each build's SASS (its one nvdisasm run) then its per-line
    cost (the inspection build, when one is needed, through the compile cache).  A tab opened
    meanwhile waits for the value being made rather than making it again; a failure here is
    dropped (the tab makes the value itself, and says why it cannot).  Returns the thread,
    or None when none could be started."""
    import threading
    results = [r for r in results if r is not None]
    if not results:
        return None
    thread = threading.Thread(target=_prefetch, args=(results,), name=name, daemon=True)
    try:
        thread.start()
    except RuntimeError:            # no more threads: the tabs make it when opened
        return None
    return thread
