"""What a view shows, as plain data: builds, the header line, config rows, resource rows.

The text, HTML and widget renderings all read from here, so they agree.
Nothing here runs a tool: SASS and PTX are fetched by the renderers, lazily.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from ..cell import Module
from ..compile.compiler import CompilationResult
from ..config import KEYS, Resolved
from ..compile.ptxas import Resources

__all__ = ["Entry", "Build", "Content", "content", "value_text", "argv_text"]


@dataclass(frozen=True)
class Entry:
    """One kernel: its C++ name, its name in the binary, and the launchable Kernel if any."""

    name: str
    symbol: str | None
    kernel: Any = None          # runtime.Kernel, or None for a bare CompilationResult

    @property
    def key(self) -> str:
        """What SASS and resources are keyed by."""
        return self.symbol or self.name


@dataclass(frozen=True)
class Build:
    """One compiler run and the kernels that came from it."""

    result: CompilationResult
    entries: tuple[Entry, ...]

    @property
    def label(self) -> str:
        return ", ".join(e.name for e in self.entries) or "(no kernels)"

    def resources(self, entry: Entry) -> Resources | None:
        return self.result.resources.get(entry.key) if entry.symbol else None


@dataclass(frozen=True)
class Content:
    """Everything a compiled cell (or one CompilationResult) shows."""

    source: str
    builds: tuple[Build, ...]
    templates: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()           # load errors, "launching needs a GPU", ...

    @property
    def entries(self) -> list[tuple[Build, Entry]]:
        return [(b, e) for b in self.builds for e in b.entries]

    def header(self) -> str:
        """One line: kernels · arch · compiler · format · time · cache · modules."""
        rs = [b.result for b in self.builds]

        def one(values):
            return " / ".join(dict.fromkeys(values))
        names = ", ".join(e.name for _, e in self.entries) or "no kernels"
        hits = sum(r.cache_hit for r in rs)
        why = "; ".join(dict.fromkeys(r.cache_note for r in rs if r.cache_note and not r.cache_hit))
        if hits == len(rs):
            cache = "cache hit"
        elif hits == 0:
            cache = "cache miss" + (f": {why}" if why else "")
        else:
            cache = f"{hits} cache hits, {len(rs) - hits} misses" + (f" ({why})" if why else "")
        pch = " / ".join(dict.fromkeys(f"PCH {r.pch}" for r in rs if r.pch and not r.cache_hit))
        spent = sum(r.compile_time for r in rs if not r.cache_hit)
        time = f"compiled in {spent * 1e3:.1f} ms" if hits < len(rs) else \
            f"compiled earlier in {sum(r.compile_time for r in rs) * 1e3:.1f} ms"
        return " · ".join([names, one(r.arch for r in rs),
                           one(f"{r.compiler} {r.compiler_version}" for r in rs),
                           one(r.format for r in rs), time, cache, *([pch] if pch else []),
                           f"{len(rs)} module" + ("s" if len(rs) != 1 else "")])

    def warnings(self) -> list[str]:
        """Short flags for the header: spills and local memory, per kernel."""
        out = []
        for b, e in self.entries:
            res = b.resources(e)
            if res is not None and res.spills:
                out.append(f"{e.name} spills {res.spill_stores} B / {res.spill_loads} B")
            elif res is not None and (res.local or res.warnings):
                out.append(f"{e.name}: " + (res.warnings[0].split(":", 1)[-1].strip()
                                           if res.warnings else f"{res.local} B local memory"))
        return out


def header_notes(results) -> list[str]:
    """What a compile read besides the cell: headers cuda-magic supplied, session headers, files."""
    def each(attr):
        return list(dict.fromkeys(x for r in results for x in attr(r)))
    out = []
    if supplied := each(lambda r: r.supplied_headers):
        out.append(f"headers supplied (in memory, for NVRTC): {', '.join(supplied)}")
    if session := each(lambda r: r.inputs.session):
        out.append(f"%%cuda_header: {', '.join(session)}")
    if files := each(lambda r: (p for p, _ in r.inputs.files)):
        out.append(f"your headers read: {', '.join(files[:8])}" + (" ..." if len(files) > 8 else ""))
    return out


def content(obj) -> Content:
    """Gather what to show for a :class:`Module` or a :class:`CompilationResult`."""
    if isinstance(obj, Module):
        builds = tuple(Build(r, tuple(Entry(name, k.symbol or r.symbol(name), k)
                                      for name, k in obj.kernels.items() if k.result is r))
                       for r in obj.results)
        notes = []
        if obj.load_error is not None:
            notes.append(f"not loaded on the GPU: {obj.load_error}")
        elif obj.kernels and not any(k.loaded for k in obj.kernels.values()):
            notes.append("not loaded: compiled only (launching needs an NVIDIA GPU and driver, "
                         "or it was --compile-only)")
        if renamed := obj.renamed():
            notes.append(f"bound as: {'; '.join(renamed)}")
        if obj.templates:
            notes.append(f"templates not instantiated: {', '.join(obj.templates)} "
                         f"(e.g. --instantiate \"{obj.templates[0]}\")")
        if obj.missing:
            notes.append(f"declared but not in the binary (not compiled, e.g. inside #if): "
                         f"{', '.join(obj.missing)}")
        return Content(obj.source, builds, obj.templates,
                       tuple(header_notes(obj.results) + notes))
    if isinstance(obj, CompilationResult):
        expr = {sym: name for name, sym in obj.lowered_names.items()}
        entries = tuple(Entry(expr.get(s, s), s) for s in obj.symbols)
        return Content(obj.source, (Build(obj, entries),), notes=tuple(header_notes([obj])))
    raise TypeError(f"cannot show a {type(obj).__name__}; pass a %%cuda Module or a "
                    f"CompilationResult")


# -- config -------------------------------------------------------------------------------------

def value_text(value) -> str:
    """A config value as the user writes it: a flag list as JSON, a string bare."""
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value))
    return str(value)


def argv_text(argv) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def config_rows(columns: list[tuple[str, Resolved]]) -> list[tuple[str, list[tuple[str | None, str | None]]]]:
    """``[(key, [(value text or None, layer or None) per column])]`` for every key."""
    rows = []
    for key in KEYS:
        cells = []
        for _, resolved in columns:
            if key in resolved:
                cells.append((value_text(resolved[key]), resolved.provenance[key]))
            else:
                cells.append((None, None))
        rows.append((key, cells))
    return rows


def build_columns(c: Content) -> list[tuple[str, Resolved]]:
    return [(b.label, b.result.config) for b in c.builds]


# -- resources ----------------------------------------------------------------------------------

RESOURCE_COLUMNS = (("registers", "registers"), ("spill_stores", "spill stores B"),
                    ("spill_loads", "spill loads B"), ("stack_frame", "stack B"),
                    ("shared", "shared B"), ("barriers", "barriers"), ("local", "local B"),
                    ("constant", "const B"))
DRIVER_COLUMNS = (("max_threads_per_block", "max threads"),
                  ("max_dynamic_shared", "max dyn smem B"), ("binary_version", "SASS ver"),
                  ("ptx_version", "PTX ver"))


def driver_attributes(entry: Entry) -> dict[str, int] | None:
    """The driver's figures for a kernel already loaded on the GPU (never loads one)."""
    k = entry.kernel
    if k is None or not k.loaded:
        return None
    try:
        return k.attributes
    except Exception:   # CUDA lost since: show ptxas figures only
        return None


def resource_rows(entries) -> tuple[bool, list[tuple[Build, Entry, Resources | None, dict | None]]]:
    """Per kernel: build, entry, ptxas figures, driver figures; and whether any kernel is loaded."""
    rows = [(b, e, b.resources(e), driver_attributes(e)) for b, e in entries]
    return any(attrs is not None for *_, attrs in rows), rows


def resource_note(b: Build) -> str | None:
    """Why a build has no ptxas figures, when it has none."""
    if b.result.resources:
        return None
    if b.result.format == "ptx":
        return "no ptxas figures: the target is PTX (ptxas runs at load time)"
    return "no ptxas figures: add -v to the ptxas flags (e.g. --ptxas \"-v\")"
