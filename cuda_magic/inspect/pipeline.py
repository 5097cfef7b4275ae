"""The async pipeline of a Hopper or Blackwell kernel, read from its SASS and ptxas: no GPU.

:func:`pipeline` counts, per kernel of one build, the instructions of each stage (:data:`ROWS`):
TMA loads, stores, reductions and prefetches (``UTMALDG``, ``UTMASTG``, ``UTMAREDG``,
``UTMAPF``), bulk copies (``UBLKCP``...), WGMMA (``HGMMA``, ``IGMMA``, ``QGMMA``, ``BGMMA``,
and ``WARPGROUP`` arrive/wait), tcgen05 (``UTC*MMA``, ``UTCBAR`` commits, the other ``UTC*``,
tensor-memory ``LDTM``/``STTM``), mbarriers (``SYNCS.ARRIVE*``, ``SYNCS.PHASECHK*`` waits, the
rest of ``SYNCS``), async-proxy fences, cluster barriers (``UCGABAR*``), ``ELECT``, the
programmatic-dependent-launch wait (``ACQBULK``) and ``USETMAXREG``.  A count is the number of
instruction lines whose opcode starts so, as ``grep`` over ``cuobjdump -sass`` counts them
(the tests check that).  Beside the counts: each ``setmaxnreg`` (``dec`` or ``inc`` and its
register count), the warpgroups ``__launch_bounds__`` gives, the cluster shape
``__cluster_dims__`` put in the binary, ptxas's registers and static shared memory.

Warnings (:attr:`Pipeline.warnings`), each from what the build shows:

- ``setmaxnreg`` in the PTX but not in the SASS: ptxas dropped it (its log says why when it
  says so), the register budget the source asked for does not happen;
- the ``setmaxnreg`` totals over the register file: one producer warpgroup at its ``dec`` and
  the others at their ``inc``, times 128 threads, more than the SM's 65,536 registers;
- a warp-specialised TMA pipeline (TMA loads and mbarrier waits over two or more warpgroups)
  with no ``setmaxnreg``, on an arch that has it;
- wgmma, tcgen05 or setmaxnreg in the source that the build has none of, on an arch without
  the suffix they need (compiled out under ``__CUDA_ARCH_FEAT_SM90_ALL``-style guards): the
  suffix to add;
- deadlock-prone patterns (:mod:`.deadlock`, also kept as :attr:`Pipeline.deadlocks`): an
  mbarrier wait in a kernel where nothing arrives on an mbarrier, a ``__syncthreads()`` that
  runs only under a condition on ``threadIdx``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from ..compile.compiler import CompilationResult

__all__ = ["Pipeline", "pipeline", "ROWS", "REGISTER_FILE", "needed_suffix"]

REGISTER_FILE = 65536            # 32-bit registers per SM, sm_90 and sm_100
WARPGROUP = 128

# (row, what it is, opcode pattern: matched at the start of the opcode, "." or end after)
ROWS: tuple[tuple[str, str, str], ...] = (
    ("TMA load", "cp.async.bulk.tensor global -> shared", r"UTMALDG"),
    ("TMA store", "cp.async.bulk.tensor shared -> global", r"UTMASTG"),
    ("TMA reduce", "cp.reduce.async.bulk.tensor", r"UTMAREDG"),
    ("TMA prefetch", "cp.async.bulk.prefetch.tensor", r"UTMAPF"),
    ("bulk copy", "cp.async.bulk (no tensor map)", r"UBLKCP"),
    ("bulk reduce / prefetch", "cp.reduce.async.bulk, cp.async.bulk.prefetch", r"UBLKRED|UBLKPF"),
    ("WGMMA", "wgmma.mma_async (sm_90a)", r"[HIQB]GMMA"),
    ("warpgroup sync", "wgmma.fence / commit_group / wait_group", r"WARPGROUP"),
    ("tcgen05 MMA", "tcgen05.mma (sm_100a)", r"UTC[A-Z]*MMA"),
    ("tcgen05 commit", "tcgen05.commit to an mbarrier", r"UTCBAR"),
    ("tcgen05 other", "tcgen05.alloc / cp / shift ...", r"UTC(?![A-Z]*MMA|BAR)[A-Z]*"),
    ("tensor memory ld/st", "tcgen05.ld / tcgen05.st", r"LDTM|STTM"),
    ("mbarrier arrive", "mbarrier.arrive (expect_tx)", r"SYNCS\.ARRIVE"),
    ("mbarrier wait", "mbarrier.try_wait / test_wait", r"SYNCS\.PHASECHK"),
    ("mbarrier other", "mbarrier.init / inval ...", r"SYNCS(?!\.ARRIVE|\.PHASECHK)"),
    ("async fence", "fence.proxy.async", r"FENCE\.VIEW\.ASYNC"),
    ("cluster barrier", "barrier.cluster arrive / wait", r"UCGABAR"),
    ("elect", "elect.sync", r"ELECT"),
    ("PDL wait", "griddepcontrol.wait", r"ACQBULK"),
    ("setmaxnreg", "setmaxnreg.inc / dec", r"USETMAXREG"),
)
_ROW_RES = tuple((name, re.compile(rf"(?:{pat})(?:[._A-Z0-9]*)$")) for name, _, pat in ROWS)
# an instruction line of nvdisasm's or cuobjdump's listing: its opcode after any predicate
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)", re.M)
_SETMAXNREG = re.compile(r"USETMAXREG\.(TRY_ALLOC|DEALLOC)\S*\s+(?:U?P\w+,\s*)?(0x[0-9a-f]+|\d+)")
_IN_SOURCE = {"wgmma": r"\bwgmma\.", "tcgen05": r"\btcgen05\.", "setmaxnreg": r"\bsetmaxnreg\."}
_NEEDS = {"wgmma": "sm_90a", "setmaxnreg": "sm_90a or sm_100a", "tcgen05": "sm_100a or sm_100f"}


@dataclass(frozen=True)
class Pipeline:
    """One kernel's async pipeline in one build: ``counts`` (row -> instructions, every row of
    :data:`ROWS`), ``opcodes`` (row -> {opcode: count}), ``setmaxnreg`` (``("dec", 40)``...
    in program order), ``warpgroups`` (from ``__launch_bounds__``; None without),
    ``cluster`` (``__cluster_dims__``; None without), ``registers`` and ``shared`` (static
    bytes) from ptxas, ``warnings``, and ``deadlocks``: the deadlock-prone patterns of the
    SASS (:class:`cuda_magic.inspect.deadlock.Finding`), each among the warnings too."""

    kernel: str
    arch: str
    counts: dict
    opcodes: dict = field(repr=False)
    setmaxnreg: tuple = ()
    warpgroups: int | None = None
    cluster: tuple | None = None
    registers: int = 0
    shared: int = 0
    warnings: tuple = ()
    deadlocks: tuple = ()

    def __getitem__(self, row: str) -> int:
        return self.counts[row]

    @property
    def register_total(self) -> int | None:
        """Registers the warpgroups hold after ``setmaxnreg``: one producer at the ``dec``
        value and the other warpgroups at the ``inc`` value, x 128 threads (None when the
        kernel has no ``setmaxnreg`` or no ``__launch_bounds__``)."""
        dec = [n for kind, n in self.setmaxnreg if kind == "dec"]
        inc = [n for kind, n in self.setmaxnreg if kind == "inc"]
        if not self.setmaxnreg or not self.warpgroups:
            return None
        producers = 1 if dec else 0
        low = min(dec) if dec else self.registers
        high = max(inc) if inc else self.registers
        return WARPGROUP * (producers * low + (self.warpgroups - producers) * high)

    @property
    def active(self) -> bool:
        """Whether the kernel uses any of it (a plain kernel has no pipeline to show)."""
        return any(self.counts.values()) or self.cluster is not None


def count(sass_text: str) -> tuple[dict, dict]:
    """``(counts, opcodes)`` per row of :data:`ROWS` over a SASS listing."""
    counts = {name: 0 for name, _, _ in ROWS}
    opcodes: dict = {name: {} for name, _, _ in ROWS}
    for op in _INSTRUCTION.findall(sass_text):
        for name, rx in _ROW_RES:
            if rx.match(op):
                counts[name] += 1
                opcodes[name][op] = opcodes[name].get(op, 0) + 1
                break
    return counts, opcodes


def needed_suffix(source: str, arch: str) -> list[tuple[str, str]]:
    """``(instruction family, the arch it needs)`` for each of wgmma, tcgen05 and setmaxnreg
    the source uses that ``arch`` lacks the suffix (or the generation) for."""
    m = re.fullmatch(r"sm_(\d+)(\d)([af]?)", arch or "")
    if m is None:
        return []
    major, suffix = int(m[1]), m[3]
    out = []
    for family, rx in _IN_SOURCE.items():
        if not re.search(rx, source):
            continue
        ok = {"wgmma": major == 9 and suffix == "a",
              "setmaxnreg": major in (9, 10) and suffix in ("a", "f") and
              not (major == 9 and suffix == "f"),
              "tcgen05": major == 10 and suffix in ("a", "f")}[family]
        if not ok:
            out.append((family, _NEEDS[family]))
    return out


def _entry_ptx(ptx_text: str, symbol: str) -> str:
    m = re.search(rf"\.entry\s+{re.escape(symbol)}\s*\(", ptx_text)
    if m is None:
        return ""
    nxt = re.search(r"\.entry\s+", ptx_text[m.end():])
    return ptx_text[m.start():m.end() + (nxt.start() if nxt else len(ptx_text))]


def pipeline(result: CompilationResult, symbol: str, name: str | None = None,
             source: str | None = None) -> Pipeline:
    """The :class:`Pipeline` of kernel ``symbol`` (shown as ``name``) in build ``result``;
    ``source`` (the cell) for the warnings about instructions compiled out."""
    from ..compile.binary import cluster_dims, max_threads
    from .disasm import cubin, sass
    text = sass(result, symbol)
    counts, opcodes = count(text)
    regs = [("inc" if kind == "TRY_ALLOC" else "dec", int(n, 0))
            for kind, n in _SETMAXNREG.findall(text)]
    elf = cubin(result)
    threads = max_threads(elf).get(symbol) if elf is not None else None
    groups = -(-threads // WARPGROUP) if threads else None
    cluster = cluster_dims(elf).get(symbol) if elf is not None else None
    res = result.resources.get(symbol)
    registers, shared = (res.registers, res.shared) if res is not None else (0, 0)
    shown = name or symbol
    warnings = []
    src = source if source is not None else result.source
    if "setmaxnreg" in src and not regs:
        from .disasm import ptx
        try:
            body = _entry_ptx(ptx(result), symbol)
        except Exception:       # no PTX to read: say nothing rather than guess
            body = ""
        if "setmaxnreg" in body:
            why = [ln.strip() for ln in result.log.splitlines() if "setmaxnreg" in ln]
            warnings.append(f"{shown}: setmaxnreg is in the PTX but not in the SASS: ptxas dropped "
                            f"it, so the register budget it asks for does not happen"
                            + (f" (ptxas: {why[0]})" if why else " (give the kernel "
                               "__launch_bounds__ with its block size)"))
    p = Pipeline(shown, result.arch, counts, opcodes, tuple(regs), groups, cluster, registers,
                 shared)
    total = p.register_total
    if total is not None and total > REGISTER_FILE:
        dec = min((n for k, n in regs if k == "dec"), default=registers)
        inc = max((n for k, n in regs if k == "inc"), default=registers)
        warnings.append(f"{shown}: setmaxnreg asks for {total:,} registers, more than the SM's "
                        f"{REGISTER_FILE:,}: 1 producer warpgroup at {dec} + {groups - 1} at {inc}, "
                        f"x {WARPGROUP} threads (the inc waits for registers that never come free)")
    arch_has = re.fullmatch(r"sm_(9|10)\d[af]", result.arch or "") is not None
    if arch_has and not regs and groups and groups >= 2 and counts["TMA load"] \
            and counts["mbarrier wait"]:
        warnings.append(f"{shown}: a warp-specialised TMA pipeline over {groups} warpgroups with no "
                        f"setmaxnreg: every warpgroup keeps the {registers} registers ptxas gave "
                        f"the kernel; setmaxnreg.dec on the producer and .inc on the consumers "
                        f"moves them to the math")
    for family, needs in needed_suffix(src, result.arch):
        row = {"wgmma": "WGMMA", "tcgen05": "tcgen05 MMA", "setmaxnreg": "setmaxnreg"}[family]
        if not counts[row]:
            warnings.append(f"{shown}: the source uses {family}, which {result.arch} does not have "
                            f"(it needs {needs}); this build has none of it: compiled out "
                            f"(--arch {needs.split()[0]})")
    found = _deadlocks(result, symbol)
    warnings += [f"{shown}: {f.message}" for f in found]
    return replace(p, warnings=tuple(dict.fromkeys(warnings)), deadlocks=found)


def _deadlocks(result: CompilationResult, symbol: str) -> tuple:
    """The kernel's deadlock-prone patterns; none where its SASS cannot be read that far (the
    check says only what it proves)."""
    from .deadlock import deadlocks
    try:
        return deadlocks(result, symbol)
    except Exception:
        return ()
