"""The candidates of a sweep: the points of the space (those meeting ``--where``), each as a
:class:`Candidate`; what a finished build gives its candidates (kernels, the launches ``--run``
records, registers, spills, occupancy); pruning with the reason; ``--nbytes``/``--flops`` per
candidate; and the bench job that replays a survivor's launches in a helper."""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..errors import TuneError, TuneRunError, clip, quote
from ..runtime import sweep
from ..runtime.helper.program import Entry, Program
from .record import Runs
from .space import Parameter, Recipe, c_text, label

__all__ = ["WHERE_NAMES", "DEFAULT_BLOCK", "FAILED", "Candidate", "kernel_names", "points",
           "after_build", "resources", "prune", "amount", "bench_job"]

DEFAULT_BLOCK = 256     # the occupancy's block size when nothing gives one (as Module.occupancy)
FAILED = ("failed", "error", "fault", "timeout")    # the statuses of a candidate that failed


@dataclass
class Candidate:
    """One point of the space and what became of it.

    ``status``: ``winner``, ``ok`` (ran, right outputs), ``pruned`` (spills, occupancy),
    ``failed`` (did not compile), ``wrong`` (outputs differ from the reference), ``fault``,
    ``timeout``, ``error`` (a launch failed) or ``compiled`` (nothing ran: --compile-only or
    no GPU); ``reason`` says why in words.  ``log``: its build's compiler log (a failed build's
    too, whose :class:`~cuda_magic.errors.CompileError` is ``error``: the errors with the cell
    lines they point at).  ``occupancy`` is at ``occupancy_block`` threads, taken from
    ``occupancy_from``: ``launch`` (what ``--run`` launched), ``block`` (the space's),
    ``bounds`` (the kernel's ``__launch_bounds__``) or ``default`` (:data:`DEFAULT_BLOCK`)."""

    index: int
    params: dict
    recipe: Recipe
    status: str = "compiled"
    reason: str = ""
    module: Any = None
    registers: int | None = None
    spill_bytes: int | None = None
    occupancy: float | None = None
    limiter: str = ""
    occupancy_block: int | None = None   # the block size the occupancy is at
    occupancy_from: str = ""       # launch, block, bounds or default (see above)
    log: str = ""                  # the compiler's log of its build
    error: Any = None              # a failed build's CompileError (or ConfigError)
    kernels: tuple = ()            # the kernels of its build
    launches: Any = None           # what --run launched, as recorded
    time_ms: float | None = None
    samples_ms: tuple = ()         # per timed repetition, its launches' times summed
    outcome: Any = None
    gbps: float | None = None
    tflops: float | None = None
    gpu: str = ""
    nbytes: float | None = None    # per run of --run, for GB/s and TFLOP/s
    flops: float | None = None

    @property
    def label(self) -> str:
        return " ".join(f"{k}={'none' if v is None else c_text(v)}" for k, v in self.params.items())

    @property
    def ran(self) -> bool:
        return self.status in ("ok", "winner", "wrong")

    @property
    def failure(self) -> tuple | None:
        """How it failed, as a key that equals another candidate's when both failed the same
        way (the same compiler errors at the same lines, the same launch error, its own values
        aside: ``failed for BM=64``); None when it did not fail."""
        if self.status not in FAILED:
            return None
        text = str(self.error) if self.error is not None else self.reason
        return (self.status, text.replace(label(self.params), "<the point>"))

    def row(self) -> dict:
        """The candidate as a table row (plain values)."""
        return {"#": self.index, **self.params, "registers": self.registers,
                "spill bytes": self.spill_bytes,
                "occupancy": None if self.occupancy is None else round(self.occupancy, 4),
                "time ms": self.time_ms, "GB/s": self.gbps, "TFLOP/s": self.tflops,
                "GPU": self.gpu, "status": self.status, "reason": self.reason}


def kernel_names(c) -> dict:
    names = dict(c.module.python_names())
    for qualified, spelling in c.recipe.templates:
        try:
            names[qualified.split("::")[-1]] = c.module[spelling]
        except Exception:
            pass
    return names


# ---------------------------------------------------------------------------- the points

# The builtins --where sees beside the space's names.  Few, to keep its names plain: not a
# sandbox (it is the user's own code, as a cell is; docs/tune.md says so).
WHERE_NAMES = {"min": min, "max": max, "abs": abs}


def _where(text: str | None):
    if text is None:
        return None
    if not isinstance(text, str):
        raise TuneError(f"--where (where=) takes a Python condition as text, e.g. "
                        f"\"BM * BN <= 16384\", not {type(text).__name__}", "where")
    try:
        # compile() checks what parsing does not: (yield), await, return outside a function
        return compile(ast.parse(text, "<--where>", "eval"), "<--where>", "eval")
    except SyntaxError as exc:
        raise TuneError(f"--where {quote(text, 80)}: not a Python expression ({exc.msg})",
                        "where") from None
    except (ValueError, RecursionError, MemoryError) as exc:    # a NUL; too deeply nested
        raise TuneError(f"--where {quote(text, 80)}: not a Python expression "
                        f"({type(exc).__name__}: {clip(str(exc), 80)})", "where") from None


def points(params: Sequence[Parameter], where: str | None) -> list[dict]:
    """Every point of the space (``{name: value}``, in the space's order), those meeting
    ``where`` when it is given."""
    cond = _where(where)
    names = [p.name for p in params]
    combos = [dict(zip(names, values)) for values in itertools.product(*(p.values for p in params))]
    if cond is None:
        return combos
    kept = []
    for values in combos:
        try:
            ok = eval(cond, {"__builtins__": dict(WHERE_NAMES)}, dict(values))
        except Exception as exc:
            raise TuneError(f"--where {quote(where, 80)} failed for {label(values)}: "
                            f"{type(exc).__name__}: {clip(str(exc), 200)}", "where") from None
        if ok:
            kept.append(values)
    if not kept:
        raise TuneError(f"--where {quote(where, 80)} keeps none of the {len(combos)} combinations",
                        "where")
    return kept


# ---------------------------------------------------------------------------- after a build

def after_build(group: Sequence[Candidate], module, error, runs, keep_spills: bool,
                min_occupancy, want_gpu: bool) -> list[Candidate]:
    """Record what one finished build gives its candidates; the ones to bench."""
    out = []
    for c in group:
        c.module = module
        if error is not None:
            c.status, c.reason = "failed", error[0]
            c.error, c.log = error[1], getattr(error[1], "log", "")
            continue
        c.log = "\n".join(r.log.strip("\n") for r in module.results if r.log.strip())
        names = kernel_names(c)
        c.kernels = tuple({id(k): k for k in names.values()}.values())
        launches = None
        if runs is not None:
            try:
                launches = runs.record(c.params, names)
            except TuneRunError as exc:
                c.status, c.reason = "error", str(exc)
                continue
        c.launches = launches
        resources(c, launches)
        if not prune(c, keep_spills, min_occupancy) and want_gpu:
            out.append(c)
    return out


def resources(c: Candidate, launches: Sequence | None) -> None:
    """Registers, spills and occupancy of the kernels ``c`` launches (or all of its kernels:
    at the space's ``block`` when it has one, else at each kernel's ``__launch_bounds__``, else
    at :data:`DEFAULT_BLOCK` threads)."""
    from ..inspect.occupancy import of_result
    own = c.params.get("block")
    own = own if isinstance(own, int) and not isinstance(own, bool) and own > 0 else None
    chosen = [(k, dims, shared) for _, k, dims, shared, _ in launches] if launches else \
        [(k, None, 0) for k in c.kernels]
    regs, spills, occ, limiter, at = None, 0, None, "", (None, "")
    for k, dims, shared in chosen:
        res = k.result.resources.get(k.symbol)
        if res is None:
            continue
        regs = max(regs or 0, res.registers)
        spills += res.spill_stores + res.spill_loads
        block, source = (dims[3] * dims[4] * dims[5], "launch") if dims else \
            (own, "block") if own else _bounds(k)
        if not block:
            continue
        try:
            o = of_result(k.result, k.symbol, block, shared)
        except Exception:
            continue
        if occ is None or o.occupancy < occ:
            occ, limiter, at = o.occupancy, o.limiter, (block, source)
    c.registers = regs
    c.spill_bytes = spills if regs is not None else None
    c.occupancy, c.limiter = occ, limiter
    c.occupancy_block, c.occupancy_from = at


def _bounds(k) -> tuple[int, str]:
    """The block size kernel ``k``'s binary says it was built for (``__launch_bounds__``), else
    :data:`DEFAULT_BLOCK`; and which of the two it is."""
    from ..compile.binary import BinaryFormatError, cubin_for, max_threads
    r = k.result
    try:
        cubin = cubin_for(r.binary, r.format, r.arch)
        bound = max_threads(cubin).get(k.symbol) if cubin else None
    except (BinaryFormatError, ValueError):
        bound = None
    return (bound, "bounds") if bound else (DEFAULT_BLOCK, "default")


def prune(c: Candidate, keep_spills: bool, min_occupancy: float | None) -> bool:
    if c.spill_bytes and not keep_spills:
        c.status, c.reason = "pruned", f"spills {c.spill_bytes} B (stores + loads)"
        return True
    if c.occupancy is not None and c.occupancy == 0:
        c.status, c.reason = "pruned", f"cannot run: {c.limiter} allow 0 blocks per SM"
        return True
    if min_occupancy is not None and c.occupancy is not None and c.occupancy < min_occupancy:
        at = f", at block {c.occupancy_block}" if c.occupancy_from in ("bounds", "default") else ""
        c.status, c.reason = "pruned", (f"occupancy {100 * c.occupancy:.0f}% < "
                                        f"{100 * min_occupancy:.0f}% ({c.limiter}{at})")
        return True
    return False


def amount(value, values: Mapping, namespace: Mapping, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return float(eval(str(value), {"__builtins__": {}}, {**namespace, **values}))
    except Exception as exc:
        raise TuneError(f"--{what} {quote(str(value), 60)} failed for {label(values)}: "
                        f"{type(exc).__name__}: {clip(str(exc), 200)}", what) from None


def bench_job(c: Candidate, runs: Runs, bench_opts: dict, timeout: float) -> sweep.Job | None:
    """The job that replays and times ``c``'s recorded launches (None: it cannot be one)."""
    try:
        launches, own, outputs, used = runs.encode(c.index, c.launches)
    except TuneRunError as exc:
        c.status, c.reason = "error", str(exc)
        return None
    first = next(iter(used.values())).result
    if any(k.result is not first for k in used.values()):
        c.status, c.reason = "error", ("--run launches kernels of different builds of the cell "
                                       "(per-kernel //| blocks): tune one build at a time")
        return None
    program = Program.of(first, {n: Entry(k.symbol, k.params) for n, k in used.items()},
                         prefix="sweep:", source=False)
    return sweep.Job(c.index, program, launches, outputs, own, bench_opts, timeout)
