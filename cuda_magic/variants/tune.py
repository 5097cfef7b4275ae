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

This module is the driver loop (:func:`tune`) and what it returns (:class:`Tuning`); the
candidates, their builds, pruning and bench jobs are :mod:`.candidates`, the judge of their
outcomes :mod:`.judge`.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
import os
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Mapping, Sequence

from .. import cell
from ..compile.arch import detect_arch, gpu_archs, pick_arch
from ..compile.backends import CompileError
from ..compile.parallel import WORKERS, cancellable, tick
from ..config import ConfigError, validate
from ..errors import clip, quote
from ..runtime.measure import bench as _bench
from ..runtime.measure.ab import decide_apart, margin_words
from ..runtime import sweep
from ..runtime.driver import remote as remote_session
from .candidates import Candidate, after_build, amount, bench_job, kernel_names, points
from .judge import Judge, reference_bits
from .record import Runs
from .writeback import write_back
from .space import (MAX_CANDIDATES, Parameter, Recipe, TuneError, classify, parse_space,
                    recipe_of)

__all__ = ["tune", "Tuning", "Candidate", "TuneError", "parse_space", "MAX_CANDIDATES"]


# ---------------------------------------------------------------------------- the result

class Tuning:
    """The sweep: every :class:`Candidate` (``candidates``, ``rows()``), the ``winner``, its
    ``module`` and ``kernels`` (what ``--run``'s names launch), and the cell that reproduces
    it (``cell``: the magic line, the ``//|`` header with the winner's flags, the code).

    ``plot(by="BM")`` draws the time of each candidate grouped by a parameter (matplotlib);
    ``notes`` say what was left out and why; ``stopped`` why the sweep stopped before the bench
    stage (``"compile-only"``, ``"no --run"``, ``"no GPU"``; ``""``: it did not)."""

    def __init__(self, source: str, parameters: Sequence[Parameter], candidates: Sequence[Candidate],
                 options: Mapping, preset: str | None, runs: tuple, pool: str, notes: Sequence[str],
                 timings: Mapping[str, float], group: str | None = None, *, stopped: str = ""):
        self.source = source
        self.parameters = tuple(parameters)
        self.candidates = list(candidates)
        self.options, self.preset = dict(options), preset
        self.runs, self.pool = runs, pool
        self.notes = list(notes)
        self.seconds = dict(timings)      # stage -> seconds
        self.group = group
        self.stopped = stopped
        for c in self.candidates:
            if c.status == "winner":
                c.status = "ok"
        ran = [c for c in self.candidates if c.status == "ok" and c.time_ms is not None]
        self.winner: Candidate | None = min(ran, key=lambda c: (c.time_ms, c.index)) if ran else None
        if self.winner is not None:
            self.winner.status = "winner"
        self.margin = self._margin(ran)

    def _margin(self, ran) -> str:
        """How far the winner is ahead of the next candidate, by :func:`decide_apart` on their
        samples: "4.1% faster than #7 (95% CI ...)" or "within noise of #7 (...)"; "" with
        fewer than two timed."""
        by_time = sorted(ran, key=lambda c: (c.time_ms, c.index))
        if len(by_time) < 2 or not by_time[0].samples_ms or not by_time[1].samples_ms:
            return ""
        w, r = by_time[0], by_time[1]
        return margin_words(decide_apart(w.samples_ms, r.samples_ms), f"#{w.index}", f"#{r.index}")

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


# ---------------------------------------------------------------------------- the sweep

def _number(v):
    """A Python or NumPy number as a Python int or float; None for anything else (bools too)."""
    if isinstance(v, bool) or getattr(getattr(v, "dtype", None), "kind", "") == "b":
        return None
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    return None


def _flag(v, name: str) -> bool:
    if isinstance(v, bool) or getattr(getattr(v, "dtype", None), "kind", "") == "b":
        return bool(v)
    raise TuneError(f"{name}= takes True or False, not {type(v).__name__} {quote(v, 30)}", name)


def _texts(v, name: str, example: str) -> tuple:
    """``run=``/``instantiate=``: one string is one item (never its characters), else a list
    or tuple of strings."""
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        return tuple(v)
    raise TuneError(f"{name}= takes a string or a list of strings, e.g. {example}, not "
                    f"{type(v).__name__} {quote(v, 40)}", name)


def _options(**kw) -> dict:
    if kw["min_occupancy"] is not None:
        v = _number(kw["min_occupancy"])
        if v is None or not 0 <= v <= 1:
            raise TuneError(f"--min-occupancy (min_occupancy=) {kw['min_occupancy']!r}: a fraction "
                            f"of the SM's warps from 0 to 1, e.g. 0.25", "min_occupancy")
        kw["min_occupancy"] = v
    for name in ("rtol", "atol"):
        if kw[name] is not None:
            v = _number(kw[name])
            if v is None or v < 0 or not math.isfinite(v):
                raise TuneError(f"--{name} ({name}=) {kw[name]!r}: a non-negative number", name)
            kw[name] = v
    t = _number(kw["timeout"])
    if t is None or not 0 < t <= 86400:
        raise TuneError(f"--timeout (timeout=) {kw['timeout']!r}: seconds one candidate may run "
                        f"on its GPU, e.g. 60", "timeout")
    kw["timeout"] = float(t)
    for name in ("where", "group"):
        if kw[name] is not None and not isinstance(kw[name], str):
            raise TuneError(f"--{name} ({name}=) takes text, not {type(kw[name]).__name__} "
                            f"{quote(kw[name], 40)}", name)
    gpus = kw["gpus"]
    if gpus is not None:
        listed = [_number(g) for g in gpus] if isinstance(gpus, (list, tuple, range)) else [None]
        if any(not isinstance(g, int) for g in listed):
            raise TuneError(f"--gpus (gpus=) {quote(gpus, 40)}: a list of GPU ordinals, e.g. "
                            f"[0, 1]", "gpus")
        kw["gpus"] = listed
    for name in ("namespace", "session"):
        if kw[name] is not None and not isinstance(kw[name], Mapping):
            raise TuneError(f"{name}= takes a dict, not {type(kw[name]).__name__}", name)
    return kw


def _bench_number(v):
    """``repeat``/``warmup``/``graph`` as :func:`~cuda_magic.runtime.measure.bench.options` takes them:
    a NumPy integer as an int (its own checks name what is wrong)."""
    n = _number(v)
    return n if isinstance(n, int) else v


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
    :func:`cuda_magic.correctness.reference.differs`.
    ``repeat``/``warmup``/``flush``/``graph``: as ``k.bench``.  ``nbytes``/``flops``: per
    candidate, numbers or expressions over the space's names (``"2*M*N*K"``), for GB/s and
    TFLOP/s.  ``gpus``: device ordinals (default: every GPU that runs the build);
    ``client``: a ``dask.distributed.Client`` to run the bench stage on instead (under
    ``cuda_magic.remote()``: its client, by default).
    ``timeout``: seconds per candidate on its GPU.  ``arch``/``config``/``preset``/
    ``session``/``instantiate`` are the cell's layers, as for :func:`~cuda_magic.build`
    (``instantiate``: one spelling, ``"k<1>"``, or a list; ``run`` likewise).  NumPy numbers
    count as numbers; an option of the wrong type is a :class:`TuneError` naming it.

    Example::

        t = cuda_magic.tune(src, "BM=[32,64] block=[128,256]",
                            "k[cdiv(n, block), block](x, y, n)", arch="sm_90a")
        t.winner, t.cell, t.rows()
    """
    started = time.monotonic()
    opts = _options(min_occupancy=min_occupancy, rtol=rtol, atol=atol, timeout=timeout,
                    where=where, group=group, gpus=gpus, namespace=namespace, session=session)
    timeout, gpus = opts["timeout"], opts["gpus"]
    compile_only, keep_spills, force = (_flag(compile_only, "compile_only"),
                                        _flag(keep_spills, "keep_spills"), _flag(force, "force"))
    instantiate = _texts(instantiate, "instantiate", "\"gemm<64, 128>\"")
    texts = _texts(run, "run", "\"k[grid, block](x, n)\"")
    bench_opts = _bench.options(repeat=_bench_number(repeat), warmup=_bench_number(warmup),
                                flush=_flag(flush, "flush"),
                                graph=graph if isinstance(graph, bool) else _bench_number(graph))
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
    if namespace is None and texts:
        frame = sys._getframe(1)
        namespace = {**frame.f_globals, **frame.f_locals}
    resolved = cell.resolve_cell(source, layer, session=session, preset=preset)
    if len(resolved.archs) > 1:
        raise TuneError(f"'arch' lists {', '.join(resolved.archs)}: a sweep builds one arch; tune "
                        f"on one (--arch {resolved.archs[0]}) and compare archs with "
                        f"%%cuda_compare --vary arch=...", "arch")

    combos = points(params, where)
    candidates = [Candidate(i, values, recipe_of(params, values, parsed)) for i, values in enumerate(combos)]
    by_recipe: dict[Recipe, list[Candidate]] = {}
    for c in candidates:
        by_recipe.setdefault(c.recipe, []).append(c)

    runs = Runs(texts, namespace or {}) if texts else None
    notes = [f"{len(combos)} of {math.prod(len(p.values) for p in params)} combinations meet "
             f"--where {where}"] if where is not None else []
    want_gpu = bool(texts) and not compile_only
    pool = None
    if want_gpu and client is None and remote_session() is not None:
        client = remote_session().client     # remote(): the sweep shares its connection
        notes.append(f"bench stage on the Dask cluster of cuda_magic.remote() "
                     f"({remote_session().address})")
    if want_gpu and client is None:
        arch_now = resolved.get("arch") or detect_arch()
        chosen, gpu_notes = _gpus(gpus, arch_now) if arch_now else ([], [])
        notes += gpu_notes
        if not chosen:
            want_gpu = False
            notes.append("no GPU here that runs this build: stopped after pruning (the bench "
                         "stage needs one)")
    stopped = "compile-only" if compile_only else "no --run" if not texts else \
        "no GPU" if not want_gpu else ""
    reference = reference_bits(reference)

    timings: dict[str, float] = {}
    jobs: dict[int, sweep.Job] = {}
    futures: dict = {}
    judge = Judge(candidates, reference, opts["rtol"], opts["atol"])
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
                for c in after_build(by_recipe[build[fut]], *fut.result(), runs, keep_spills,
                                     opts["min_occupancy"], want_gpu):
                    c.nbytes = amount(nbytes, c.params, namespace, "nbytes")
                    c.flops = amount(flops, c.params, namespace, "flops")
                    jobs[c.index] = bench_job(c, runs, bench_opts, float(timeout))
                    if jobs[c.index] is not None:
                        judge.expect(c, jobs[c.index])
                        futures[pool.submit(jobs[c.index])] = c
            collect([f for f in futures if f not in seen and f.done()])
            tick(f"tuning: {compiled}/{len(by_recipe)} builds compiled" + (
                f" ({stopped}: none benched)" if stopped else
                f", {len(seen)} candidates benched"), started)
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
    if not compile_only and not texts:     # the header says "none benched"; here is how
        notes.append("to bench the candidates, give the launch: --run \"k[grid, block](x, n)\"")
    return Tuning(source, params, candidates, layer, preset, texts, pool_name, notes, timings, group,
                  stopped=stopped)


def _build(source, layer, session, preset, instantiate, force, recipe: Recipe):
    try:
        return cell.build(source, layer, session=session, preset=preset, instantiate=instantiate,
                          force=force, adjust=recipe.adjust), None
    except (CompileError, ConfigError) as exc:
        return None, (_failure(exc), exc.with_traceback(None))
