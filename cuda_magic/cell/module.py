"""The compiled cell: :class:`Module`, its kernels and the builds they came from."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..compile.arch import detect_arch, pick_arch
from ..compile.compiler import CompilationResult, NoKernelError, compile_resolved
from ..compile.parallel import parallel
from ..config import Resolved
from ..errors import KernelKeyError, quote
from ..runtime import Kernel, Param
from . import bind
from .bind import Binding
from .decls import KernelDecl
from .scan import blank
from .parsed import ParsedCell
from .trim import without_bodies

__all__ = ["Module"]


@dataclass(frozen=True)
class _Entry:
    name: str            # how the kernel is shown and keyed: "scale", "ns::k<256>", "k(float*, int)"
    python_name: str
    params: tuple[Param, ...]
    decl: KernelDecl | None
    config: Resolved
    binding: Binding
    aliases: tuple[str, ...] = ()   # other spellings that find it: "axpy<float>", "k(float*)"
    archs: Mapping[str, CompilationResult] | None = None   # its build per arch (an arch list)
    unavailable: str | None = None  # why no build of it runs on this GPU (an arch list)


class _Families:
    """The cell's configs (the cell's and one per kernel //| block), each with its archs: what
    to compile (one build per distinct config and arch) and which build each kernel is bound to
    (the arch that runs on the GPU here, else the first arch)."""

    def __init__(self, default: Resolved | None, configs: Sequence[Resolved],
                 decls: Sequence[KernelDecl] = ()):
        self.order: dict[tuple, list] = {}     # (json, archs) -> [config, name expressions]
        for c in ([default] if default is not None else []) + list(configs):
            self.order.setdefault(self._key(c), [c, []])
        self.owned: dict[tuple, list[KernelDecl]] = {}   # (json, archs) -> the kernels bound there
        for c, d in zip(configs, decls):
            self.owned.setdefault(self._key(c), []).append(d)
        self.decls = tuple(decls)
        many = any(len(c.archs) > 1 for c, _ in self.order.values())
        self.gpu = detect_arch() if many else None
        self.archs = tuple(dict.fromkeys(a for c, _ in self.order.values() for a in c.archs))

    @staticmethod
    def _key(c: Resolved) -> tuple:
        return c.json(), c.archs

    def names(self, c: Resolved) -> list[str]:
        return self.order[self._key(c)][1]

    def home(self, default: Resolved | None) -> Resolved:
        return default if default is not None else next(iter(self.order.values()))[0]

    def compile(self, text: str, force: bool) -> dict[str, CompilationResult]:
        """Every build, in parallel: ``{config json: result}`` in a fixed order (the cell's
        config, then each kernel's; each config's archs in the order given)."""
        jobs: dict[str, list] = {}
        for key, (c, names) in self.order.items():
            for one in c.expand():
                job = jobs.setdefault(one.json(), [one, [], set()])
                job[1].extend(n for n in names if n not in job[1])
                job[2].update(id(d) for d in self.owned.get(key, ()))
        compilers = " and ".join(dict.fromkeys(c["compiler"] for c, _, _ in jobs.values()))
        several = len(self.order) > 1     # per-kernel configs: each build compiles its own kernels
        works = [functools.partial(
            compile_resolved, without_bodies(text, [d for d in self.decls if id(d) not in own])
            if several else text, c, name_expressions=tuple(names), force=force)
            for c, names, own in jobs.values()]
        return dict(zip(jobs, parallel(works, f"compiling {len(works)} builds with {compilers}")))

    def _chosen(self, c: Resolved) -> str:
        if len(c.archs) < 2:
            return c["arch"]
        return pick_arch(c.archs, self.gpu, ptx=c.get("target_format") == "ptx") or c.archs[0]

    def bound_config(self, c: Resolved) -> Resolved:
        arch = self._chosen(c)
        return next(one for one in c.expand() if one["arch"] == arch)

    def bound_key(self, c: Resolved) -> str:
        return self.bound_config(c).json()

    def bound(self, built: Mapping[str, CompilationResult]) -> dict[str, tuple]:
        """``{json: (config, result)}`` of the builds the kernels are bound to."""
        out: dict[str, tuple] = {}
        for c, _ in self.order.values():
            one = self.bound_config(c)
            out.setdefault(one.json(), (one, built[one.json()]))
        return out

    def of_arch(self, c: Resolved, built: Mapping[str, CompilationResult]) -> dict:
        return {one["arch"]: built[one.json()] for one in c.expand()}

    def unavailable(self, c: Resolved) -> str | None:
        """With an arch list and a GPU that none of its archs runs on: what a launch says."""
        if len(c.archs) < 2 or self.gpu is None or \
                pick_arch(c.archs, self.gpu, ptx=c.get("target_format") == "ptx"):
            return None
        return f"built for {', '.join(c.archs)}; this GPU is {self.gpu}: add it to --arch"


class Module:
    """The compiled cell: its kernels, one binary per distinct config, and how each came about.

    ``m.scale`` / ``m["scale"]`` / ``m["ns::axpy<float>"]`` / ``m["k(float*, int)"]`` is a
    :class:`Kernel`; ``m.results`` the :class:`CompilationResult` of each distinct config;
    ``m.result_of(name)`` and ``m.config_of(name)`` the binary and resolved config (with
    provenance) a kernel came from.  The kernels are exactly the kernel entries of the
    binaries (``m.bindings`` says which Python name is which entry).
    """

    def __init__(self, source: str, parsed: ParsedCell, options: Mapping, entries: Sequence[_Entry],
                 results: Sequence[CompilationResult], of: Mapping[str, CompilationResult],
                 cell_config: Resolved, templates: Sequence[str], missing: Sequence[str] = (),
                 every: Sequence[CompilationResult] = (), archs: Sequence[str] = ()):
        self.source, self.parsed, self.options = source, parsed, dict(options)
        self.bound_results = tuple(results)      # the builds the kernels are bound to
        self.results = tuple(every) or self.bound_results   # every build (each arch of a list)
        self.archs = tuple(archs) or tuple(dict.fromkeys(r.arch for r in self.results))
        self.cell_config = cell_config
        self.templates = tuple(templates)    # template kernels with no instance in the binary
        self.missing = tuple(missing)        # declared kernels the binary does not hold
        self._entries = {e.name: e for e in entries}
        self._of = dict(of)
        printf = re.search(r"\b(printf|assert)\s*\(", blank(source)) is not None
        self.kernels: dict[str, Kernel] = {
            e.name: Kernel(e.name, e.params, of[e.name], e.binding.entry.symbol, printf)
            for e in entries}
        for e in entries:
            self.kernels[e.name].module = self
            if e.unavailable:
                self.kernels[e.name].unavailable = e.unavailable
        self._printf = printf
        self._other: dict = {}          # (kernel, arch) -> Kernel over another arch's build
        self.load_error: Exception | None = None
        self.not_loaded = ""            # why nothing was loaded at build time, where known
        self.compile_wall: float | None = None   # seconds the builds took together (wall)

    @property
    def result(self) -> CompilationResult:
        """The first (often the only) binary the kernels are bound to."""
        return self.bound_results[0]

    @property
    def arch(self) -> str:
        """The arch the kernels are bound to (with an arch list: the GPU's, else the first)."""
        return self.result.arch

    def result_of(self, kernel: str, arch: str | None = None) -> CompilationResult:
        """The build ``kernel`` is bound to, or with ``arch`` its build for that arch."""
        name = self._name(kernel)
        if arch is None:
            return self._of[name]
        builds = self._entries[name].archs or {self._of[name].arch: self._of[name]}
        if not isinstance(arch, str) or arch not in builds:
            raise NoKernelError(f"kernel {name!r} was not built for {quote(arch, 80)}; it was "
                                f"built for {', '.join(builds)}")
        return builds[arch]

    def config_of(self, kernel: str) -> Resolved:
        return self._entries[self._name(kernel)].config

    def decl_of(self, kernel: str) -> KernelDecl | None:
        """The declaration of ``kernel`` the cell's parser read (None where it read none)."""
        return self._entries[self._name(kernel)].decl

    def occupancy(self, kernel: str, block: int = 256, shared: int = 0):
        """Theoretical occupancy of ``kernel`` at ``block`` threads per block (an int or a
        launch's 1 to 3 dimensions, ``(32, 32)``) and ``shared``
        bytes of dynamic shared memory: blocks and warps per SM, the fraction of the SM's warps,
        and the limiter named (registers, shared memory, warps, blocks, barriers), computed
        from ptxas's figures and the arch's published limits
        (:mod:`cuda_magic.inspect.occupancy`).  With the kernel loaded on a GPU,
        ``.driver`` is the driver's own figure (blocks per SM) beside it."""
        from dataclasses import replace

        from ..inspect.occupancy import of_result, threads
        block = threads(block)                  # (32, 32) as a launch takes it: 1024 threads
        name = self._name(kernel)
        k = self.kernels[name]
        occ = of_result(self._of[name], k.symbol, block, shared)
        if k.loaded:
            try:
                occ = replace(occ, driver=k.occupancy(block, shared))
            except Exception:       # CUDA lost since, or an arch the GPU cannot run
                pass
        return occ

    def pipeline(self, kernel: str, arch: str | None = None):
        """The async pipeline of ``kernel`` (:class:`cuda_magic.inspect.pipeline.Pipeline`) in
        the build it is bound to, or with ``arch`` its build for that arch: TMA, wgmma,
        tcgen05, mbarrier, cluster and setmaxnreg instructions counted from the SASS, the
        setmaxnreg budget, ``__cluster_dims__``, and warnings.  No GPU needed."""
        from ..inspect.pipeline import pipeline
        name = self._name(kernel)
        python = {k.name: n for n, k in self.python_names().items()}[name]
        return pipeline(self.result_of(name, arch), self.kernels[name].symbol, python,
                        self.source)

    def lines(self, kernel: str):
        """The per-line cost of ``kernel`` (:func:`cuda_magic.inspect.lines.lines`): live
        registers, spills and instructions per source line."""
        from ..inspect.lines import lines
        name = self._name(kernel)
        return lines(self._of[name], self.kernels[name].symbol)

    def python_names(self) -> dict[str, Kernel]:
        """Each kernel under its Python name (``axpy<float>`` -> ``axpy_float``)."""
        return {e.python_name: self.kernels[e.name] for e in self._entries.values()}

    @property
    def bindings(self) -> dict[str, str]:
        """Python name -> the entry it launches (``a_k`` -> ``a::k(float*, int)``)."""
        return {e.python_name: e.binding.signature for e in self._entries.values()}

    def renamed(self) -> list[str]:
        """``a_k = a::k(float*, int)`` for kernels whose Python name is not simply their C++ name."""
        out = []
        for e in self._entries.values():
            if e.python_name != bind.plain_name(e.binding.name):
                out.append(f"{e.python_name} = {e.binding.signature}")
        return out

    def _name(self, key: str) -> str:
        if not isinstance(key, str):
            raise KernelKeyError(f"no kernel {quote(key, 80)}: kernels are looked up by name, a "
                                 f"str, not {type(key).__name__}; this cell has "
                                 f"{', '.join(self.kernels) or 'none'}")
        if key in self.kernels:
            return key
        squash = re.sub(r"\s+", "", key)
        short = []
        for e in self._entries.values():
            spellings = (e.python_name, e.binding.entry.symbol, e.binding.signature, *e.aliases)
            if key in spellings or squash in {re.sub(r"\s+", "", x) for x in (e.name, *spellings)}:
                return e.name
            if re.sub(r"\s+", "", e.binding.name.split("::")[-1]) == squash:
                short.append(e.name)
        if len(short) == 1:
            return short[0]
        raise NoKernelError(f"no kernel {quote(key, 80)} in this cell; it has "
                            f"{', '.join(self.kernels) or 'none'}"
                            + (" (several match: give the qualified name or the Python name)"
                               if short else ""))

    def __getitem__(self, key: str) -> Kernel:
        return self.kernels[self._name(key)]

    def __getattr__(self, key: str) -> Kernel:
        if key.startswith("_"):
            raise AttributeError(key)
        return self[key]        # NoKernelError is an AttributeError too

    def __dir__(self):
        return [*super().__dir__(), *self.python_names()]

    def __iter__(self):
        return iter(self.kernels.values())

    def __len__(self) -> int:
        return len(self.kernels)

    def load(self) -> "Module":
        """Load every kernel's module on the GPU now (a launch would otherwise)."""
        for k in self.kernels.values():
            k.load()
        return self

    # -- an arch list: one build per arch --------------------------------------------------
    def kernel_for(self, kernel: str, arch: str) -> Kernel:
        """``kernel`` over its build for ``arch`` (the bound Kernel when that is its arch)."""
        name = self._name(kernel)
        r = self.result_of(name, arch)
        if r is self._of[name]:
            return self.kernels[name]
        key = (name, arch)
        if key not in self._other:
            e = self._entries[name]
            self._other[key] = Kernel(e.name, e.params, r, e.binding.entry.symbol, self._printf)
        return self._other[key]

    def members(self, result: CompilationResult) -> list[tuple[str, Kernel, bool]]:
        """The kernels that come from build ``result``: ``(name, Kernel, bound)``, where
        ``bound`` says the kernel bound in the notebook is this one (the others are the
        same kernels built for other archs)."""
        out = []
        for name, k in self.kernels.items():
            if k.result is result:
                out.append((name, k, True))
            elif any(r is result for r in (self._entries[name].archs or {}).values()):
                out.append((name, self.kernel_for(name, result.arch), False))
        return out

    def arch_note(self) -> str | None:
        """With several archs: which build the kernels are bound to, and why."""
        if len(self.archs) < 2:
            return None
        bound = ", ".join(dict.fromkeys(k.result.arch for k in self.kernels.values())) or self.arch
        unavailable = next((k.unavailable for k in self.kernels.values() if k.unavailable), None)
        gpu = detect_arch()
        why = "no GPU here: the first arch" if gpu is None else \
            f"none runs on this GPU, {gpu}: the first arch" if unavailable else f"this GPU's, {gpu}"
        return (f"{len(self.archs)} archs: {', '.join(self.archs)}; kernels bound to {bound} "
                f"({why})" + (f"; a launch says: {unavailable}" if unavailable else ""))

    def arch_matrix(self, block: int = 256, shared: int = 0) -> list:
        """Per kernel and arch: registers, spill stores/loads, static shared memory and the
        theoretical occupancy at ``block`` threads (``shared`` bytes of dynamic shared
        memory), as :class:`~cuda_magic.inspect.archs.ArchRow` rows, kernels in cell order,
        archs in the order given.  No tool runs (ptxas figures and per-arch limits)."""
        from ..inspect.archs import arch_rows
        items = []
        for name, k in self.kernels.items():
            builds = self._entries[name].archs or {k.result.arch: k.result}
            items.append((name, k.symbol or name, builds, k.result.arch))
        return arch_rows(items, block, shared)

    def __repr__(self) -> str:
        r = self.result
        archs = ", ".join(dict.fromkeys(x.arch for x in self.results))
        builds = f"{len(self.results)} builds ({archs})" if len(self.results) > 1 else \
            f"{r.arch} {r.compiler} {r.format}"
        return f"<Module {', '.join(self.python_names()) or '(no kernels)'}: {builds}>"
