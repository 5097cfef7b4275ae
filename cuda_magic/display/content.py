"""What a view shows, as plain data: builds, the header line, config rows, resource rows.

The text, HTML and widget renderings all read from here, so they agree.
Nothing here runs a tool: SASS and PTX are fetched by the renderers, lazily.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from typing import Any

from ..cell import Module
from ..compile.compiler import CompilationResult
from ..config import KEYS, LIST_KEYS, Resolved
from ..compile.ptxas import Resources, without

__all__ = ["Entry", "Build", "Content", "content", "value_text", "argv_text"]


@dataclass(frozen=True)
class Entry:
    """One kernel: its C++ name, its name in the binary, and the launchable Kernel if any."""

    name: str
    symbol: str | None
    kernel: Any = None          # runtime.Kernel, or None for a bare CompilationResult
    bound: bool = True          # False: the same kernel built for another arch of an arch list

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
    waited: float | None = None           # seconds the cell's builds took (wall), if known

    @property
    def entries(self) -> list[tuple[Build, Entry]]:
        return [(b, e) for b in self.builds for e in b.entries]

    def log(self, b: Build) -> tuple[str, str | None]:
        """``b``'s compiler log without ptxas's lines about the kernels other builds are for
        (``b`` compiled those as emptied bodies), and a note naming them (None if none)."""
        mine = {e.key for e in b.entries}
        others = {e.key: e.name for o in self.builds if o is not b for e in o.entries
                  if e.symbol and e.key not in mine}
        text = without(b.result.log, others)
        if text == b.result.log:
            return text, None
        return text, (f"ptxas's lines about {', '.join(dict.fromkeys(others.values()))} are left "
                      f"out: this build compiled them with empty bodies (their own builds' logs "
                      f"have them)")

    def header(self) -> str:
        """One line: kernels · arch · compiler · format · time · cache · modules."""
        rs = [b.result for b in self.builds]

        def one(values):
            return " / ".join(dict.fromkeys(values))
        names = ", ".join(dict.fromkeys(e.name if e.kernel is None else e.kernel.name
                                        for _, e in self.entries)) or "no kernels"
        hits = sum(r.cache_hit for r in rs)
        why = "; ".join(dict.fromkeys(r.cache_note for r in rs if r.cache_note and not r.cache_hit))
        if hits == len(rs):
            cache = "cache hit"
        elif hits == 0:
            cache = "cache miss" + (f": {why}" if why else "")
        else:
            cache = f"{hits} cache hits, {len(rs) - hits} misses" + (f" ({why})" if why else "")
        pch = " / ".join(dict.fromkeys(PCH_SAID.get(r.pch, f"PCH {r.pch}") for r in rs
                                       if r.pch and not r.cache_hit))
        # the time the user waited: the builds ran in parallel, so not their sum
        waited = self.waited if self.waited is not None else \
            max((r.compile_time for r in rs if not r.cache_hit), default=0.0)
        time = f"compiled in {seconds(waited)}" if hits < len(rs) else \
            f"compiled earlier in {seconds(max(r.compile_time for r in rs))}"
        return " · ".join([names, one(r.arch for r in rs),
                           compilers(rs),
                           one(r.format for r in rs), time, cache, *([pch] if pch else []),
                           f"{len(rs)} module" + ("s" if len(rs) != 1 else "")])

    def warnings(self) -> list[str]:
        """Short flags for the header: spills and local memory, per kernel."""
        out = []
        for b, e in self.entries:
            res = b.resources(e)
            if res is not None and res.spills:
                out.append(f"{e.name} spills: {res.spill_stores} B stored, {res.spill_loads} B loaded")
            elif res is not None and (res.local or res.warnings):
                out.append(f"{e.name}: " + (res.warnings[0].split(":", 1)[-1].strip()
                                           if res.warnings else f"{res.local} B local memory"))
        return out


PCH_SAID = {"created": "PCH created (one-off)"}


def shown_source(source: str, results) -> str:
    """The cell, and after it the lines nvcc compiled for ``--instantiate`` (marked as appended)."""
    from ..compile.instances import appended
    nvcc = [r for r in results if r.compiler == "nvcc" and r.name_expressions]
    names = [n for r in nvcc for n in r.name_expressions]
    return appended(source, list(dict.fromkeys(names)), nvcc[0].argv if nvcc else ())


def seconds(t: float) -> str:
    """``56.1 ms`` below a second, ``19.8 s`` from one second up."""
    return f"{t:.1f} s" if t >= 1 else f"{t * 1e3:.1f} ms"


def supplied_note(names) -> str:
    """The standard headers supplied to NVRTC, then cuda-magic's own (both compilers)."""
    from ..compile.packaged import is_packaged
    std, own = [n for n in names if not is_packaged(n)], [n for n in names if is_packaged(n)]
    parts = [f"headers supplied (in memory, for NVRTC): {', '.join(std)}"] if std else []
    return "; ".join(parts + ([f"cuda-magic's headers supplied: {', '.join(own)}"] if own else []))


def families_note(compiler: str) -> str:
    """Where each toolkit header family came from, for the Log tab, by the names the Config
    tab defines (``""``: none found)."""
    from ..compile.toolkit_headers import families_note as families
    return short_paths(families(compiler), ())


def header_notes(results) -> list[str]:
    """What a compile read besides the cell: headers cuda-magic supplied, session headers, files."""
    def each(attr):
        return list(dict.fromkeys(x for r in results for x in attr(r)))
    out = replaced_notes(results)
    if supplied := each(lambda r: r.supplied_headers):
        out.append(supplied_note(supplied))
    if session := each(lambda r: r.inputs.session):
        out.append(f"%%cuda_header: {', '.join(session)}")
    if files := each(lambda r: (p for p, _ in r.inputs.files)):
        out.append(f"your headers read: {', '.join(files[:8])}" + (" ..." if len(files) > 8 else ""))
    return out


def content(obj) -> Content:
    """Gather what to show for a :class:`Module` or a :class:`CompilationResult`."""
    if isinstance(obj, Module):
        many = len(obj.archs) > 1        # an arch list: each kernel once per arch, named so
        builds = tuple(Build(r, tuple(Entry(f"{name} ({r.arch})" if many else name,
                                            k.symbol or r.symbol(name), k, bound)
                                      for name, k, bound in obj.members(r)))
                       for r in obj.results)
        notes = [n for n in [obj.arch_note()] if n]
        if obj.load_error is not None:
            notes.append(f"not loaded on the GPU: {obj.load_error}")
        elif obj.kernels and not any(k.loaded for k in obj.kernels.values()):
            notes.append(f"not loaded: {obj.not_loaded or 'each kernel loads at its first launch'}")
        if renamed := obj.renamed():
            notes.append(f"bound as: {'; '.join(renamed)}")
        if obj.templates:
            hint = next((t for t in obj.templates if "<" in t), None)    # none for a pointer
            notes.append(f"templates not instantiated: {', '.join(obj.templates)}"
                         + (f" (e.g. --instantiate \"{hint}\")" if hint else ""))
        if obj.missing:
            notes.append(f"declared but not in the binary (not compiled, e.g. inside #if): "
                         f"{', '.join(obj.missing)}")
        return Content(shown_source(obj.source, obj.results), builds, obj.templates,
                       tuple(header_notes(obj.results) + notes), obj.compile_wall)
    if isinstance(obj, CompilationResult):
        expr = {sym: name for name, sym in obj.lowered_names.items()}
        entries = tuple(Entry(expr.get(s, s), s) for s in obj.symbols)
        return Content(shown_source(obj.source, [obj]), (Build(obj, entries),),
                       notes=tuple(header_notes([obj])))
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


# -- argv, shortened for reading ----------------------------------------------------------------
# The views show argv with long directories named (``-I<cuda-headers>``); the exact argv is one
# click away (HTML: "exact argv"; text: ``cuda_magic.show(m, "argv")``).  Result.argv stays exact.

ARGV_HINT = '<...> name long paths; cuda_magic.show({}, "argv") prints the exact argv'
_PCH_FLAGS = ("--use-pch=", "--create-pch=")


def argv_dirs(argv) -> list[tuple[str, str]]:
    """``[(directory, short name)]`` for the long directories ``argv`` names, innermost first:
    the toolkit's include directories the NVRTC backend adds (``<cuda-headers>``,
    ``<cccl-headers>``, ``<cutlass-headers>``), the NVRTC precompiled-header directory
    (``<pch-dir>``) and nvcc's private temporary directory (``<tmp-dir>``, that of its
    ``cell.cu``).  (Hyphenated, so no name reads as an HTML tag.)"""
    try:
        from ..compile.toolkit_headers import header_dirs
        families = header_dirs()
    except Exception:
        families = {}
    named = {}
    for family, d in families.items():     # cudart, crt and curand share <cuda-headers> in pip
        named.setdefault(d, f"<{'cuda' if family == 'cudart' else family}-headers>")
    for a in argv:
        for flag in _PCH_FLAGS:
            if a.startswith(flag) and os.path.isabs(a[len(flag):]):
                named.setdefault(os.path.dirname(a[len(flag):]), "<pch-dir>")
        if os.path.isabs(a) and os.path.basename(a) == "cell.cu" and \
                os.path.basename(os.path.dirname(a)).startswith("cuda-magic-"):
            named.setdefault(os.path.dirname(a), "<tmp-dir>")
    return sorted(((d, n) for d, n in named.items() if d and d != os.sep),
                  key=lambda dn: len(dn[0]), reverse=True)


def _pattern(dirs):
    return re.compile("|".join(f"{re.escape(d)}(?=/|{re.escape(os.sep)}|$|[^\\w.-])"
                               for d, _ in dirs)) if dirs else None


def named_dirs(argvs) -> list[tuple[str, str]]:
    """``[(name, directory)]``: each long directory the ``argvs`` name, once, by name (the
    Config tab defines them; the home directory shown as ``~``)."""
    named = {}
    for argv in argvs:
        for d, n in argv_dirs(argv):
            if any(d in a for a in argv):
                named.setdefault(n, d)
    return sorted((n, home_short(d)) for n, d in named.items())


def names_lines(argvs) -> list[str]:
    """``<name> = directory`` for each name the views use in place of a long directory."""
    return [f"{n} = {d}" for n, d in named_dirs(argvs)]


def home_short(path: str) -> str:
    """``path`` with the home directory as ``~``."""
    home = os.path.join(os.path.expanduser("~"), "")
    return "~/" + path[len(home):] if home != os.sep and path.startswith(home) else path


def short_paths(text: str, argv) -> str:
    """``text`` (a compiler's log) with the long directories of ``argv`` by their names."""
    dirs = argv_dirs(argv)
    pattern = _pattern(dirs)
    if pattern is None or not text:
        return text
    names = dict(dirs)
    return pattern.sub(lambda m: names[m.group(0)], text)


def short_argv(argv) -> tuple[str, ...]:
    """``argv`` with long directories named (see :func:`argv_dirs`) and an absolute nvcc as
    ``nvcc`` (the header says which version ran)."""
    dirs = argv_dirs(argv)
    if not dirs and not (argv and os.path.isabs(argv[0])):
        return tuple(argv)
    pattern = _pattern(dirs)
    names = dict(dirs)
    out = []
    for i, a in enumerate(argv):
        if i == 0 and os.path.isabs(a) and os.path.basename(a).startswith("nvcc"):
            a = os.path.basename(a)
        elif pattern is not None:
            a = pattern.sub(lambda m: names[m.group(0)], a)
        out.append(a)
    return tuple(out)


_NAMED = re.compile(r"[\w@%+=:,./-]*<(cuda|crt|curand|cccl|cutlass|cutlass-util)-headers>"
                    r"[\w@%+=:,./-]*|"
                    r"[\w@%+=:,./-]*<(pch|tmp)-dir>[\w@%+=:,./-]*")


def argv_short_words(argv) -> list[str]:
    """The argv's words as the views show them: shortened, and quoted only where a shell would
    need it (the ``<...>`` names are shown bare)."""
    return [a if _NAMED.fullmatch(a) else shlex.quote(a) for a in short_argv(argv)]


def argv_short_text(argv) -> str:
    return " ".join(argv_short_words(argv))


def argv_shortened(argv) -> bool:
    return short_argv(argv) != tuple(argv)


# -- compiler versions --------------------------------------------------------------------------

def compilers(results) -> str:
    """``nvrtc 13.5`` or ``nvrtc 13.5 / nvcc 13.0.88``: each compiler and version that ran."""
    return " / ".join(dict.fromkeys(f"{r.compiler} {r.compiler_version}" for r in results))


def version_note(results) -> str | None:
    """When the builds come from compilers of different versions (NVRTC 13.5 and nvcc 13.0,
    say): a note that their differences may come from the compilers, not the flags."""
    ran = dict.fromkeys((r.compiler, r.compiler_version) for r in results)
    releases = {m.group(0) if (m := re.match(r"\d+\.\d+", v)) else v for _, v in ran}
    if len(releases) < 2:
        return None
    names = [f"{c} {v}" for c, v in ran]
    listed = " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"{listed} differ in version: differences may come from the compilers, not the flags"


def config_rows(columns: list[tuple[str, Resolved]]) -> list[tuple[str, list[tuple[str | None, str | None]]]]:
    """``[(key, [(value text or None, layer or None) per column])]`` for every key."""
    rows = []
    for key in KEYS:
        cells = []
        for _, resolved in columns:
            if key in resolved:
                value = resolved.archs if key == "arch" and len(resolved.archs) > 1 else resolved[key]
                cells.append((value_text(value), resolved.provenance[key]))
            else:
                cells.append((None, None))
        rows.append((key, cells))
    return rows


def unused_keys(columns: list[tuple[str, Resolved]]) -> list[str]:
    """The compiler keys (``nvrtc``, ``nvcc``) that no build of ``columns`` compiled with: their
    flags did not run, and a build's view folds them away."""
    used = {resolved["compiler"] for _, resolved in columns if "compiler" in resolved}
    return [k for k in ("nvrtc", "nvcc") if used and k not in used]


def split_rows(columns, fold_unused: bool):
    """(rows that ran, their notes, rows folded away, their notes): :func:`config_rows` and
    :func:`config_notes`, with the unused compiler's key apart when ``fold_unused``."""
    rows, notes = config_rows(columns), config_notes(columns)
    unused = unused_keys(columns) if fold_unused else []

    def folded(n):
        return n.split(":", 1)[0].split(" ", 1)[0] in unused
    return ([r for r in rows if r[0] not in unused], [n for n in notes if not folded(n)],
            [r for r in rows if r[0] in unused], [n for n in notes if folded(n)])


def config_notes(columns: list[tuple[str, Resolved]]) -> list[str]:
    """Under the config table: how each list was built when layers appended to it
    (``nvrtc: default ["--use_fast_math"] + cell ["-lineinfo"]``) and each list that dropped
    flags it inherited (``nvrtc: replaces default ["--use_fast_math"]``)."""
    out = []
    for label, resolved in columns:
        who = f" ({label})" if len(columns) > 1 else ""
        for key in LIST_KEYS:
            parts = resolved.parts(key) if key in resolved else []
            if len(parts) > 1:
                out.append(f"{key}{who}: " + " + ".join(f"{layer} {value_text(flags)}"
                                                        for layer, flags in parts))
        out += [f"{r.key}{who}: {str(r).split(': ', 1)[1]}" for r in resolved.replaced]
    return list(dict.fromkeys(out))


def replaced_notes(results) -> list[str]:
    """For the header: the lists of the builds' own compilers (and ptxas') that dropped
    inherited flags."""
    return list(dict.fromkeys(
        str(r) if r.layer == "cell" else f"{r.key}: {r.layer} replaces {r.source} {value_text(r.inherited)}"
        for res in results for r in res.config.replaced if r.key in (res.compiler, "ptxas")))


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


# -- occupancy ----------------------------------------------------------------------------------

LIMITER_CODES = {"registers": "R", "shared memory": "S", "warps": "W", "blocks": "B",
                 "barriers": "b", "block size": "-"}
OCCUPANCY_LEGEND = ("R registers, S shared memory, W warps, B blocks per SM, b barriers "
                    "limit it")


def occupancy_rows(entries, shared: int = 0):
    """Per kernel with ptxas figures: ``(build, entry, [Occupancy per block size])`` at the
    block sizes of :data:`~cuda_magic.inspect.occupancy.BLOCKS`; each has the driver's figure
    (``.driver``) when the kernel is loaded on a GPU."""
    from dataclasses import replace

    from ..inspect.occupancy import BLOCKS, of_result
    out = []
    for b, e in entries:
        if b.resources(e) is None:
            continue
        row = [of_result(b.result, e.key, block, shared) for block in BLOCKS]
        k = e.kernel
        if k is not None and k.loaded:
            try:
                row = [replace(o, driver=k.occupancy(o.block, shared)) for o in row]
            except Exception:      # CUDA lost since: theory only
                pass
        out.append((b, e, row))
    return out


def occupancy_cell(o) -> str:
    """``8 · 100% W``: blocks per SM, occupancy, the limiter's code."""
    code = "+".join(LIMITER_CODES.get(x, x) for x in o.limiter.split(" and "))
    return f"{o.blocks} · {o.percent} {code}"


def resource_note(b: Build) -> str | None:
    """Why a build has no ptxas figures, when it has none."""
    if b.result.resources:
        return None
    if b.result.format == "ptx":
        return "no ptxas figures: the target is PTX (ptxas runs at load time)"
    return "no ptxas figures: add -v to the ptxas flags (e.g. --ptxas \"-v\")"
