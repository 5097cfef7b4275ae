"""Sweep a cell over a space of parameters: ``%%cuda_tune`` and :func:`tune`.

A space names each parameter and its values (``BM=[64,128] block=[128,256]``, or
``//| tune: {BM: [64, 128], block: [128, 256]}`` in the cell header).  What a parameter
does depends on its name and the cell:

- a template parameter of a template kernel: a template argument (``gemm<64, 128>``);
- ``maxrreg`` (``--maxrregcount=N``; ``none`` leaves it out), the toggles ``ftz``,
  ``fast_math``, ``prec_div``, ``prec_sqrt``, ``fmad`` (true/false) and ``flags`` (extra
  flags, shell-split): compiler flags;
- ``block``, ``grid``, ``shared``, and any name the cell's code never mentions: a Python
  value for ``--run`` only (no recompile);
- any other name (or one written ``-DNAME``): a macro, ``-DNAME=value`` (``none``: not defined).

Every parameter is a name in ``--run`` too.  Each candidate is the config layer
``tune:BM=64,BN=128`` on top of every other layer (its flags are appended to the active
compiler's list; a toggle sets that list whole), with provenance like any layer.  The
candidates' builds compile in parallel (NVRTC in threads, nvcc in processes) through the
compile cache; those that fail, spill, or whose occupancy is under ``min_occupancy`` are
pruned with their reason; ``--run`` is evaluated once per survivor to record its launches
(nothing runs in the notebook), and the launches are replayed and timed in helper
processes, one per GPU (:mod:`cuda_magic.runtime.sweep`), or on a Dask cluster
(``client=``), while later candidates still compile.  Outputs are checked against the first
candidate that ran (or ``reference``): a fast wrong kernel cannot win; a faulting one is
recorded and the sweep goes on.
"""

from __future__ import annotations

import ast
import functools
import itertools
import math
import os
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .. import cell
from ..compile.arch import detect_arch, gpu_archs, pick_arch
from ..compile.backends import CompileError
from ..compile.parallel import WORKERS, cancellable, tick
from ..config import ConfigError, clip, quote, validate
from ..runtime import bench as _bench
from ..runtime import sweep
from ..runtime.outputs import check as check_outputs, references
from ..runtime.helper.program import Entry, Program
from ..runtime.helper.encoding import host_copy
from .comparison import _is_array
from .record import Runs
from .writeback import write_back
from .space import (MAX_CANDIDATES, Parameter, Recipe, TuneError, TuneRunError, c_text, classify,
                    label, parse_space, recipe_of)

__all__ = ["tune", "Tuning", "Candidate", "TuneError", "parse_space", "MAX_CANDIDATES"]



@dataclass
class Candidate:
    """One point of the space and what became of it.

    ``status``: ``winner``, ``ok`` (ran, right outputs), ``pruned`` (spills, occupancy),
    ``failed`` (did not compile), ``wrong`` (outputs differ from the reference), ``fault``,
    ``timeout``, ``error`` (a launch failed) or ``compiled`` (nothing ran: --compile-only or
    no GPU); ``reason`` says why in words."""

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
    kernels: tuple = ()            # the kernels of its build
    launches: Any = None           # what --run launched, as recorded
    time_ms: float | None = None
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

    def row(self) -> dict:
        """The candidate as a table row (plain values)."""
        return {"#": self.index, **self.params, "registers": self.registers,
                "spill bytes": self.spill_bytes,
                "occupancy": None if self.occupancy is None else round(self.occupancy, 4),
                "time ms": self.time_ms, "GB/s": self.gbps, "TFLOP/s": self.tflops,
                "GPU": self.gpu, "status": self.status, "reason": self.reason}


# ---------------------------------------------------------------------------- the result

class Tuning:
    """The sweep: every :class:`Candidate` (``candidates``, ``rows()``), the ``winner``, its
    ``module`` and ``kernels`` (what ``--run``'s names launch), and the cell that reproduces
    it (``cell``: the magic line, the ``//|`` header with the winner's flags, the code).

    ``plot(by="BM")`` draws the time of each candidate grouped by a parameter (matplotlib);
    ``notes`` say what was left out and why."""

    def __init__(self, source: str, parameters: Sequence[Parameter], candidates: Sequence[Candidate],
                 options: Mapping, preset: str | None, runs: tuple, pool: str, notes: Sequence[str],
                 timings: Mapping[str, float], group: str | None = None):
        self.source = source
        self.parameters = tuple(parameters)
        self.candidates = list(candidates)
        self.options, self.preset = dict(options), preset
        self.runs, self.pool = runs, pool
        self.notes = list(notes)
        self.seconds = dict(timings)      # stage -> seconds
        self.group = group
        for c in self.candidates:
            if c.status == "winner":
                c.status = "ok"
        ran = [c for c in self.candidates if c.status == "ok" and c.time_ms is not None]
        self.winner: Candidate | None = min(ran, key=lambda c: (c.time_ms, c.index)) if ran else None
        if self.winner is not None:
            self.winner.status = "winner"

    # what the sweep found ---------------------------------------------------------------
    @property
    def module(self):
        """The winner's Module (None when nothing ran)."""
        return self.winner.module if self.winner else None

    @property
    def kernels(self) -> dict:
        """The winner's kernels under the names ``--run`` uses (a tuned template kernel under
        its plain name too): what the magic binds."""
        if self.winner is None:
            return {}
        return kernel_names(self.winner)

    def rows(self):
        """Every candidate as a row: a pandas DataFrame when pandas is installed, else dicts."""
        rows = [c.row() for c in self.candidates]
        try:
            import pandas as pd
        except ImportError:
            return rows
        return pd.DataFrame(rows).set_index("#")

    def by_status(self, status: str) -> list[Candidate]:
        return [c for c in self.candidates if c.status == status]

    @property
    def counts(self) -> dict:
        out: dict[str, int] = {}
        for c in self.candidates:
            out[c.status] = out.get(c.status, 0) + 1
        return out

    # reproducing the winner -----------------------------------------------------------------
    @property
    def launch(self) -> dict:
        """The winner's launch-only parameters (``{"block": 256}``)."""
        if self.winner is None:
            return {}
        names = {p.name for p in self.parameters if p.kind == "launch"}
        return {k: v for k, v in self.winner.params.items() if k in names}

    @property
    def cell(self) -> str | None:
        """The ``%%cuda`` cell that builds the winner: the magic line (with ``--instantiate``
        for a tuned template), the cell header without ``tune:`` and with the winner's flags,
        a comment with its launch parameters, and the code."""
        if self.winner is None:
            return None
        return write_back(self.source, self.options, self.preset, self.winner, self.launch)

    @property
    def header(self) -> str | None:
        """The cell's first lines up to its code: the magic line and the ``//|`` header."""
        text = self.cell
        if text is None:
            return None
        lines = text.split("\n")
        keep = [lines[0]] + list(itertools.takewhile(
            lambda ln: ln.lstrip().startswith("//") or not ln.strip(), lines[1:]))
        return "\n".join(keep).rstrip()

    def plot(self, by: str | None = None):
        """A matplotlib figure: each candidate's time, grouped by parameter ``by``."""
        from ..display.tune import figure
        return figure(self, by or self.group)

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in self.counts.items())
        win = f"; winner #{self.winner.index} {self.winner.label} {self.winner.time_ms:.4g} ms" \
            if self.winner else ""
        return f"<Tuning {len(self.candidates)} candidates: {counts}{win}>"


def kernel_names(c) -> dict:
    names = dict(c.module.python_names())
    for qualified, spelling in c.recipe.templates:
        try:
            names[qualified.split("::")[-1]] = c.module[spelling]
        except Exception:
            pass
    return names


# ---------------------------------------------------------------------------- the sweep

def _where(text: str | None):
    if text is None:
        return None
    try:
        tree = ast.parse(text, "<--where>", "eval")
    except SyntaxError as exc:
        raise TuneError(f"--where {quote(text, 80)}: not a Python expression ({exc.msg})") from None
    except ValueError as exc:
        raise TuneError(f"--where {quote(text, 80)}: {exc}") from None
    return compile(tree, "<--where>", "eval")


def _combos(params: Sequence[Parameter], where: str | None) -> list[dict]:
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
            ok = eval(cond, {"__builtins__": {"min": min, "max": max, "abs": abs}}, dict(values))
        except Exception as exc:
            raise TuneError(f"--where {quote(where, 80)} failed for {label(values)}: "
                            f"{type(exc).__name__}: {clip(str(exc), 200)}") from None
        if ok:
            kept.append(values)
    if not kept:
        raise TuneError(f"--where {quote(where, 80)} keeps none of the {len(combos)} combinations")
    return kept


def _options(**kw) -> dict:
    if kw["min_occupancy"] is not None:
        v = kw["min_occupancy"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise TuneError(f"--min-occupancy (min_occupancy=) {v!r}: a fraction of the SM's "
                            f"warps from 0 to 1, e.g. 0.25")
    for name in ("rtol", "atol"):
        v = kw[name]
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0
                              or not math.isfinite(v)):
            raise TuneError(f"--{name} ({name}=) {v!r}: a non-negative number")
    t = kw["timeout"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 86400:
        raise TuneError(f"--timeout (timeout=) {t!r}: seconds one candidate may run on its GPU, "
                        f"e.g. 60")
    return kw


def _resources(c: Candidate, launches: Sequence | None) -> None:
    """Registers, spills and occupancy of the kernels ``c`` launches (or all of its kernels,
    at the space's ``block`` when it has one)."""
    from ..inspect.occupancy import of_result
    own = c.params.get("block")
    own = own if isinstance(own, int) and not isinstance(own, bool) else None
    chosen = [(k, dims, shared) for _, k, dims, shared, _ in launches] if launches else \
        [(k, None, 0) for k in c.kernels]
    regs, spills, occ, limiter = None, 0, None, ""
    for k, dims, shared in chosen:
        res = k.result.resources.get(k.symbol)
        if res is None:
            continue
        regs = max(regs or 0, res.registers)
        spills += res.spill_stores + res.spill_loads
        block = dims[3] * dims[4] * dims[5] if dims else own
        if block:
            try:
                o = of_result(k.result, k.symbol, block, shared)
            except Exception:
                continue
            if occ is None or o.occupancy < occ:
                occ, limiter = o.occupancy, o.limiter
    c.registers = regs
    c.spill_bytes = spills if regs is not None else None
    c.occupancy, c.limiter = occ, limiter


def _prune(c: Candidate, keep_spills: bool, min_occupancy: float | None) -> bool:
    if c.spill_bytes and not keep_spills:
        c.status, c.reason = "pruned", f"spills {c.spill_bytes} B (stores + loads)"
        return True
    if c.occupancy is not None and c.occupancy == 0:
        c.status, c.reason = "pruned", f"cannot run: {c.limiter} allow 0 blocks per SM"
        return True
    if min_occupancy is not None and c.occupancy is not None and c.occupancy < min_occupancy:
        c.status, c.reason = "pruned", (f"occupancy {100 * c.occupancy:.0f}% < "
                                        f"{100 * min_occupancy:.0f}% ({c.limiter})")
        return True
    return False


def _failure(exc: BaseException) -> str:
    if isinstance(exc, CompileError):
        lines = [t for _, t in exc.error_lines()] or exc.log.strip().splitlines()[-1:] or [str(exc)]
        return "compile error: " + clip(lines[0], 200)
    return f"{type(exc).__name__}: {clip(str(exc), 200)}"


def _gpus(pool_gpus, arch: str) -> tuple[list[int], list[str]]:
    """The GPUs to bench on (ordinals) and notes on those left out."""
    archs = gpu_archs()
    notes = []
    chosen = list(range(len(archs))) if pool_gpus is None else list(pool_gpus)
    for g in chosen:
        if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g < len(archs):
            raise TuneError(f"--gpus (gpus=) {list(pool_gpus)!r}: " + (
                f"this host has GPUs 0 to {len(archs) - 1}" if archs else "this host has no GPU"))
    ok = [g for g in chosen if g < len(archs) and pick_arch((arch,), archs[g], arch.startswith("compute_")) is not None]
    for g in chosen:
        if g not in ok:
            notes.append(f"GPU {g} ({archs[g]}) cannot run {arch} builds: left out")
    return ok, notes


def tune(source: str, space=None, run: str | Sequence[str] | None = None, *, where: str | None = None,
         arch: str | None = None, config: Mapping | None = None, preset: str | None = None,
         session: Mapping | None = None, instantiate: Sequence[str] = (), namespace: Mapping | None = None,
         compile_only: bool = False, min_occupancy: float | None = None, keep_spills: bool = False,
         reference=None, rtol: float | None = None, atol: float | None = None, repeat: int = 100,
         warmup: int | None = None, flush: bool = True, graph: bool | int = False,
         nbytes: str | float | None = None, flops: str | float | None = None, gpus=None, client=None,
         timeout: float = 60.0, force: bool = False, group: str | None = None,
         options: Mapping | None = None) -> Tuning:
    """Sweep ``source`` over ``space`` and return a :class:`Tuning`.

    ``space``: ``"BM=[64,128] block=[128,256] maxrreg=[none,128]"`` or a dict (None: the
    cell's ``//| tune:`` header).  ``run``: Python launching the kernels with the space's
    names in scope, e.g. ``"gemm[(cdiv(N, BN), cdiv(M, BM)), block](a, b, c, M, N, K)"``
    (``cdiv`` is ceiling division); it is evaluated once per candidate to record the
    launches, which run in helper processes on copies of the arrays.  ``where``: a Python
    condition over the space's names that each candidate must meet (``"BM * BN <= 16384"``).
    ``compile_only``: stop after pruning (no GPU needed).  ``min_occupancy``: prune below
    this fraction of the SM's warps; spilling candidates are pruned unless ``keep_spills``.
    ``reference``: the expected arrays (``{name: array}``, or one array when ``run`` has one
    output); default: the first candidate that ran.  ``rtol``/``atol``: see
    :func:`cuda_magic.runtime.outputs.differs`.
    ``repeat``/``warmup``/``flush``/``graph``: as ``k.bench``.  ``nbytes``/``flops``: per
    candidate, numbers or expressions over the space's names (``"2*M*N*K"``), for GB/s and
    TFLOP/s.  ``gpus``: device ordinals (default: every GPU that runs the build);
    ``client``: a ``dask.distributed.Client`` to run the bench stage on instead.
    ``timeout``: seconds per candidate on its GPU.  ``arch``/``config``/``preset``/
    ``session``/``instantiate`` are the cell's layers, as for :func:`~cuda_magic.build`.

    Example::

        t = cuda_magic.tune(src, "BM=[32,64] block=[128,256]",
                            "k[cdiv(n, block), block](x, y, n)", arch="sm_90a")
        t.winner, t.cell, t.rows()
    """
    started = time.monotonic()
    opts = _options(min_occupancy=min_occupancy, rtol=rtol, atol=atol, timeout=timeout)
    bench_opts = _bench.options(repeat=repeat, warmup=warmup, flush=flush, graph=graph)
    layer = dict(validate(options))
    layer.update(validate(config))
    if arch is not None:
        layer.update(validate({"arch": arch}))
    parsed = cell.parse_cell(source)
    if space is None:
        if parsed.tune is None:
            raise TuneError("no space: give one (--space \"BM=[64, 128] block=[128, 256]\") or "
                            "put it in the cell header: //| tune: {BM: [64, 128]}")
        space = parsed.tune
    try:
        parsed_space = parse_space(space)
    except TuneError as exc:
        if space is parsed.tune and parsed.tune is not None:
            raise TuneError(f"//| tune: {exc}", exc.key) from None
        raise
    if not parsed_space:
        raise TuneError("the space is empty: give at least one parameter, e.g. BM=[64, 128]")
    params = classify(parsed_space, parsed)
    if group is not None and group not in {p.name for p in params}:
        raise TuneError(f"--group (group=) {group!r} is not a parameter of the space "
                        f"({', '.join(p.name for p in params)})", group)
    texts = (run,) if isinstance(run, str) else tuple(run or ())
    if namespace is None and texts:
        frame = sys._getframe(1)
        namespace = {**frame.f_globals, **frame.f_locals}
    resolved = cell.resolve_cell(source, layer, session=session, preset=preset)
    if len(resolved.archs) > 1:
        raise TuneError(f"'arch' lists {', '.join(resolved.archs)}: a sweep builds one arch; tune "
                        f"on one (--arch {resolved.archs[0]}) and compare archs with "
                        f"%%cuda_compare --vary arch=...", "arch")

    combos = _combos(params, where)
    candidates = [Candidate(i, values, recipe_of(params, values, parsed)) for i, values in enumerate(combos)]
    by_recipe: dict[Recipe, list[Candidate]] = {}
    for c in candidates:
        by_recipe.setdefault(c.recipe, []).append(c)

    runs = Runs(texts, namespace or {}) if texts else None
    notes = [f"{len(combos)} of {math.prod(len(p.values) for p in params)} combinations meet "
             f"--where {where}"] if where is not None else []
    want_gpu = bool(texts) and not compile_only
    pool = None
    if want_gpu and client is None:
        arch_now = resolved.get("arch") or detect_arch()
        chosen, gpu_notes = _gpus(gpus, arch_now) if arch_now else ([], [])
        notes += gpu_notes
        if not chosen:
            want_gpu = False
            notes.append("no GPU here that runs this build: stopped after pruning (the bench "
                         "stage needs one)")
    reference = _reference(reference)

    timings: dict[str, float] = {}
    jobs: dict[int, sweep.Job] = {}
    futures: dict = {}
    judge = _Judge(candidates, reference, opts["rtol"], opts["atol"])
    seen: set = set()               # bench futures whose outcome was taken
    compiled = 0

    def collect(done) -> None:
        for fut in done:
            seen.add(fut)
            judge.add(futures[fut], pool.outcome(fut, jobs[futures[fut].index]))
        if done:
            judge.settle()

    cancel = threading.Event()
    run = cancellable(cancel)
    build_pool = ThreadPoolExecutor(max_workers=max(1, min(len(by_recipe), WORKERS, os.cpu_count() or 1)),
                                    thread_name_prefix="cuda-magic tune")
    try:
        if want_gpu:        # the helpers start now and ready CUDA while the candidates compile
            pool = sweep.DaskPool(client, runs.arrays) if client is not None else \
                sweep.local_pool(chosen).begin(runs.arrays)
            judge.pool = pool
        build = {build_pool.submit(run, functools.partial(
            _build, source, layer, session, preset, tuple(instantiate) + r.instances, force, r)): r
            for r in by_recipe}
        pending = set(build)
        while pending:
            done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            for fut in done:
                compiled += 1
                for c in _compiled(by_recipe[build[fut]], *fut.result(), runs, keep_spills,
                                   opts["min_occupancy"], want_gpu):
                    c.nbytes = _amount(nbytes, c.params, namespace, "nbytes")
                    c.flops = _amount(flops, c.params, namespace, "flops")
                    jobs[c.index] = _job(c, runs, bench_opts, float(timeout))
                    if jobs[c.index] is not None:
                        judge.expect(c, jobs[c.index])
                        futures[pool.submit(jobs[c.index])] = c
            collect([f for f in futures if f not in seen and f.done()])
            tick(f"tuning: {compiled}/{len(by_recipe)} builds compiled, {len(seen)} candidates "
                 f"benched", started)
        timings["compile"] = time.monotonic() - started
        waiting = set(futures) - seen
        while waiting:
            done, waiting = pool.wait(waiting, 0.25)
            collect(done)
            tick(f"tuning: {len(seen)}/{len(futures)} candidates benched on "
                 f"{pool.describe()}", started)
        timings["total"] = time.monotonic() - started
    except BaseException:             # Ctrl-C too: nvcc runs are killed, helpers ended
        cancel.set()
        build_pool.shutdown(wait=False, cancel_futures=True)
        if pool is not None:
            pool.close()
        raise
    build_pool.shutdown(wait=False)
    pool_name = pool.describe() if pool is not None else ""
    if compile_only:
        notes.append("--compile-only: nothing ran")
    elif not texts:
        notes.append("no --run: nothing ran (give the launch, e.g. --run \"k[grid, block](x, n)\", "
                     "to bench the candidates)")
    return Tuning(source, params, candidates, layer, preset, texts, pool_name, notes, timings, group)


def _compiled(group: Sequence[Candidate], module, error, runs, keep_spills: bool,
              min_occupancy, want_gpu: bool) -> list[Candidate]:
    """Record what one finished build gives its candidates; the ones to bench."""
    out = []
    for c in group:
        c.module = module
        if error is not None:
            c.status, c.reason = "failed", error
            continue
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
        _resources(c, launches)
        if not _prune(c, keep_spills, min_occupancy) and want_gpu:
            out.append(c)
    return out


def _job(c: Candidate, runs: Runs, bench_opts: dict, timeout: float) -> sweep.Job | None:
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


def _build(source, layer, session, preset, instantiate, force, recipe: Recipe):
    try:
        return cell.build(source, layer, session=session, preset=preset, instantiate=instantiate,
                          force=force, adjust=recipe.adjust), None
    except (CompileError, ConfigError) as exc:
        return None, _failure(exc)


def _reference(reference):
    """The expected arrays on the host as the bits the helpers send back (a bfloat16 tensor as
    ``int16``: :func:`~cuda_magic.runtime.helper.encoding.host_copy`), so like is judged with
    like."""
    if reference is None:
        return None
    if isinstance(reference, Mapping):
        return {str(k): _bits(str(k), v) for k, v in reference.items()}
    if _is_array(reference):
        return {"": _bits("reference", reference)}
    raise TuneError(f"--reference (reference=) takes {{array name: expected array}} or one array, not "
                    f"{type(reference).__name__}")


def _bits(name: str, a) -> np.ndarray:
    try:
        return np.asarray(host_copy(a))
    except Exception as exc:
        raise TuneError(f"--reference: cannot read array {name!r} ({type(a).__name__}) to the "
                        f"host: {exc}") from None


def _amount(value, values: Mapping, namespace: Mapping, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return float(eval(str(value), {"__builtins__": {}}, {**namespace, **values}))
    except Exception as exc:
        raise TuneError(f"--{what} {quote(str(value), 60)} failed for {label(values)}: "
                        f"{type(exc).__name__}: {clip(str(exc), 200)}") from None


class _Judge:
    """Each benched candidate's status from its outcome, and its outputs against the reference,
    as the outcomes arrive: the reference is the given one, or the outputs of the lowest-index
    candidate that ran, known once every candidate before it has its outcome."""

    def __init__(self, candidates: Sequence[Candidate], reference, rtol, atol, pool=None):
        self.by_index = {c.index: c for c in candidates}
        self.order: list[int] = []          # the benched candidates, by index
        self.ref = reference
        self.rtol, self.atol = rtol, atol
        self.pending: list[Candidate] = []  # ran, not yet checked
        self.pool = pool                    # told the reference: helpers then check the outputs
        self.told = False
        self.refs = None                    # the reference, ready to check with

    def expect(self, c: Candidate, job: sweep.Job) -> None:
        self.order.append(c.index)
        if self.ref is not None and "" in self.ref and len(self.ref) == 1 and len(job.outputs) == 1:
            self.ref = {job.outputs[0]: self.ref[""]}      # one array given: the one output
        self._tell()

    def _tell(self) -> None:
        if self.ref is not None and not self.told and self.pool is not None and "" not in self.ref:
            self.pool.set_reference(self.ref, self.rtol, self.atol)
            self.told = True

    def add(self, c: Candidate, o: sweep.Outcome) -> None:
        c.outcome, c.gpu = o, o.gpu
        if not o.ok:
            named = o.error and o.error not in o.message
            c.status, c.reason = o.status, f"{o.error + ': ' if named else ''}{o.message}"
            return
        c.status, c.time_ms = "ok", o.median_ms
        if o.checked:                       # its helper compared the outputs already
            self._verdict(c, o.wrong)
        else:
            self.pending.append(c)

    def settle(self) -> None:
        if self.ref is None:
            for i in sorted(self.order):
                c = self.by_index[i]
                if c.outcome is None:
                    return                  # an earlier candidate may still be the reference
                if c.status == "ok":
                    self.ref = dict(c.outcome.outputs)
                    c.reason = "the reference (first candidate that ran)"
                    break
            if self.ref is None:
                return
            self._tell()
        for c in self.pending:
            self._check(c)
        self.pending = []

    def _check(self, c: Candidate) -> None:
        outs = c.outcome.outputs
        expected = self.ref
        if "" in expected and len(expected) == 1:
            if len(outs) != 1:
                c.status, c.reason = "error", (f"reference= is one array but --run has "
                                               f"{len(outs)} outputs ({', '.join(outs)}): give "
                                               f"{{name: array}}")
                return
            expected = {next(iter(outs)): expected[""]}
        if self.refs is None or set(self.refs) != set(expected):
            self.refs = references(expected, self.rtol, self.atol)
        self._verdict(c, check_outputs(outs, self.refs))

    @staticmethod
    def _verdict(c: Candidate, wrong: str | None) -> None:
        if wrong:
            c.status, c.reason = "wrong", wrong
            return
        if c.time_ms:
            seconds = c.time_ms / 1e3
            c.gbps = c.nbytes / seconds / 1e9 if c.nbytes else None
            c.tflops = c.flops / seconds / 1e12 if c.flops else None
