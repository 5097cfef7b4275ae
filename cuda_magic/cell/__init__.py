"""A ``%%cuda`` cell: magic-line options, ``//|`` headers, per-kernel configs, kernels.

``build(text, options)`` parses the cell, layers its configs (defaults <
preset < session < cell < kernel), compiles the cell once per distinct
resolved config and returns a :class:`Module` of launchable kernels.  No GPU
is needed unless a kernel is launched.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import yaml

from ..compile.arch import detect_arch, pick_arch
from ..compile.backends.limits import parallel
from ..compile.compiler import CompilationResult, NoKernelError, compile_resolved, complete
from ..config import APPEND_KEYS, LIST_KEYS, ConfigError, Resolved, bad_char, clip, get_preset, \
    parse_backend_config, quote, resolve, spellings, validate
from ..runtime import Kernel, Param
from . import bind, signature
from .bind import Binding
from .signature import KernelDecl, SignatureError, blank, find_kernels

__all__ = ["CellError", "ParsedCell", "Module", "parse_cell", "line_config", "resolve_cell", "build"]

HEADER = "//|"


class CellError(ConfigError):
    """A problem in the cell itself; ``line`` is the cell line (1 = first line after ``%%cuda``)."""

    def __init__(self, message: str, line: int | None = None, key: str | None = None):
        super().__init__(f"cell line {line}: {message}" if line else message, key)
        self.line = line


@dataclass(frozen=True)
class ParsedCell:
    """What the cell declares: its header layer and its kernels with their own layers."""

    source: str
    header: dict                       # the cell's //| layer (validated, flat)
    header_lines: dict                 # key -> cell line
    kernels: tuple[KernelDecl, ...]
    kernel_headers: dict               # kernel declaration line -> (layer, {key: line})


class _HeaderLoader(yaml.SafeLoader):
    """YAML for ``//|`` headers: no anchors or aliases (a few bytes of them expand to gigabytes),
    and a typed scalar that cannot be read (``!!bool maybe``) is a YAML error at its line."""

    MAX_DEPTH = 32      # nesting a header may use (a config needs 3)
    MAX_NUMBER = 64     # digits of a number (no key takes one; a long one is slow to convert)
    depth = 0

    def fetch_flow_collection_start(self, TokenClass):
        # Checked while scanning: the scanner looks ahead across every open '[' / '{' at each
        # token, so deep flow nesting is quadratic before the composer sees the first node.
        if self.flow_level >= self.MAX_DEPTH:
            raise yaml.scanner.ScannerError(None, None, f"it is nested more than {self.MAX_DEPTH} "
                                            f"deep", self.get_mark())
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None, None, "anchors and aliases (&name, *name) are not allowed in a //| header",
                event.start_mark)
        if self.depth >= self.MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"it is nested more than {self.MAX_DEPTH} deep", event.start_mark)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_object(self, node, deep=False):
        if isinstance(node, yaml.ScalarNode) and len(node.value) > self.MAX_NUMBER and \
                node.tag.rsplit(":", 1)[-1] in ("int", "float"):
            raise yaml.constructor.ConstructorError(
                None, None, f"a number of {len(node.value)} characters is no config value",
                node.start_mark)
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError, IndexError):
            tag = node.tag.rsplit(":", 1)[-1]
            what = f" {quote(node.value, 60)}" if isinstance(node, yaml.ScalarNode) else ""
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read the {tag} value{what}", node.start_mark) from None


def _load_header(text: str) -> tuple[object, dict[str, int]]:
    """The YAML of a header and, per top-level key (as written), the 0-based line it is on."""
    loader = _HeaderLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        rows = {}
        if isinstance(node, yaml.MappingNode):
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode):
                    rows[key.value] = key.start_mark.line
        return loader.construct_document(node), rows
    finally:
        loader.dispose()


def _header(lines: list[str], first: int) -> tuple[dict, dict]:
    """Parse consecutive ``//|`` lines starting at cell line ``first`` as YAML."""
    body = [ln.strip()[len(HEADER):] for ln in lines]
    body = [b[1:] if b.startswith(" ") else b for b in body]

    def fail(problem: str, row: int = 0):
        row = min(max(row, 0), len(lines) - 1)
        raise CellError(f"the //| header is not valid YAML ({problem}): {quote(lines[row].strip())}",
                        first + row)

    text = "\n".join(body)
    try:
        data, rows = _load_header(text)
    except yaml.reader.ReaderError as exc:   # a character YAML refuses (control characters)
        char = ascii(chr(exc.character)) if isinstance(exc.character, int) else "?"
        fail(f"it holds the character {char}", text.count("\n", 0, exc.position))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        fail(clip(problem, 120), mark.line if mark is not None else 0)
    except RecursionError:
        fail("it is nested too deeply")
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise CellError(f"a //| header holds 'key: value' lines, e.g. '//| arch: sm_90a'; got "
                        f"{quote(lines[0].strip())}", first)
    where = {key: first + rows.get(str(key), 0) for key in data}
    for key, value in data.items():
        if (key in LIST_KEYS or key in APPEND_KEYS) and isinstance(value, str):
            try:
                items = ", ".join(shlex.split(value))
            except ValueError:   # an unbalanced quote: show the form, not the value
                items = ""
            raise CellError(f"'{key}' is a list of flags: write it as a YAML list, e.g. "
                            f"'//| {key}: [{clip(items, 120) or '--use_fast_math'}]'",
                            where[key], key)
    try:
        return validate(data), where
    except ConfigError as exc:
        raise CellError(str(exc), where.get(exc.key, first), exc.key) from None


def check_text(text: str, what: str = "the cell") -> None:
    """A :class:`CellError` at the line of the first NUL or lone surrogate in ``text``: NVRTC
    would stop reading at a NUL, and a lone surrogate cannot be encoded for any compiler."""
    bad = bad_char(text)
    if bad:
        line, column, kind = bad
        raise CellError(f"{what} holds {kind} at column {column}; compilers cannot read it", line)


def _lines(text: str) -> list[str]:
    """The cell's lines as compilers count them (on ``\\n`` only, not form feeds or U+2028)."""
    return [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]


@functools.lru_cache(maxsize=64)
def parse_cell(text: str) -> ParsedCell:
    """Find the cell header, the kernels and each kernel's ``//|`` block (cached by text: an
    unchanged re-run parses nothing)."""
    if not isinstance(text, str):
        raise CellError(f"a cell is text, not {type(text).__name__}")
    check_text(text)
    lines = _lines(text)
    is_header = [ln.lstrip().startswith(HEADER) for ln in lines]
    # The cell header: the //| lines at the top (blank lines before them are allowed).
    top = 0
    while top < len(lines) and not lines[top].strip():
        top += 1
    end = top
    while end < len(lines) and is_header[end]:
        end += 1
    header, header_lines = _header(lines[top:end], top + 1) if end > top else ({}, {})
    used = set(range(top, end))
    try:
        kernels = find_kernels(text)
    except SignatureError as exc:
        why = str(exc).split(": ", 1)[-1] if exc.line else str(exc)
        raise CellError(clip(why, 400), exc.line) from None
    kernel_headers = {}
    for k in kernels:
        i = k.line - 2            # the line above the declaration, 0-based
        start = i
        while start >= end and is_header[start]:
            start -= 1
        if start < i:
            block = range(start + 1, i + 1)
            kernel_headers[k.line] = _header([lines[j] for j in block], start + 2)
            used.update(block)
    for j, flag in enumerate(is_header):
        if flag and j not in used:
            raise CellError("this //| block is neither the cell header (the top of the cell) nor "
                            "directly above a __global__ kernel", j + 1)
    return ParsedCell(text, header, header_lines, tuple(kernels), kernel_headers)


def line_config(*, arch: str | None = None, compiler: str | None = None,
                target_format: str | None = None, nvrtc: str | None = None,
                nvcc: str | None = None, ptxas: str | None = None,
                backend_config: str | None = None, nvrtc_append: str | None = None,
                nvcc_append: str | None = None, ptxas_append: str | None = None) -> dict:
    """The config layer of the ``%%cuda`` line: flags as strings, lists shell-split.

    ``nvrtc="--use_fast_math --ftz=false"`` -> ``["--use_fast_math", "--ftz=false"]``;
    ``""`` -> ``[]``.  ``nvrtc_append="-lineinfo"`` (``--nvrtc+``) -> ``{"nvrtc+":
    ["-lineinfo"]}``, appended to the inherited list.  ``backend_config`` is TVM's JSON,
    ``{"cuda": {...}}``.  A key given twice (a flag and the JSON) is an error.
    """
    out: dict = {}
    lists = (("nvrtc", nvrtc), ("nvcc", nvcc), ("ptxas", ptxas), ("nvrtc+", nvrtc_append),
             ("nvcc+", nvcc_append), ("ptxas+", ptxas_append))
    for key, value in (("arch", arch), ("compiler", compiler), ("target_format", target_format),
                       *lists, ("backend_config", backend_config)):
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"--{key.replace('_', '-')} takes one string, not "
                              f"{type(value).__name__} {quote(value)}",
                              key if key != "backend_config" else None)
    for key, value in (("arch", arch), ("compiler", compiler), ("target_format", target_format)):
        if value is not None:
            out[key] = value
    for key, value in lists:
        if value is not None:
            try:
                out[key] = shlex.split(value)
            except ValueError as exc:
                raise ConfigError(f"--{key} {quote(value)}: {str(exc).lower()}; the value is "
                                  f"split like a shell line: close each quote, escape a lone "
                                  f"backslash", key) from None
    if backend_config is not None:
        nested = parse_backend_config(backend_config)
        for key in nested:
            for flag in spellings(key) & set(out):
                raise ConfigError(f"'{key}' is given both as --{flag.replace('_', '-')} and in "
                                  f"--backend-config; give it once", key)
        out.update(nested)
    return validate(out)


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

    def __init__(self, default: Resolved | None, configs: Sequence[Resolved]):
        self.order: dict[tuple, list] = {}     # (json, archs) -> [config, name expressions]
        for c in ([default] if default is not None else []) + list(configs):
            self.order.setdefault(self._key(c), [c, []])
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
        for c, names in self.order.values():
            for one in c.expand():
                job = jobs.setdefault(one.json(), [one, []])
                job[1].extend(n for n in names if n not in job[1])
        compilers = " and ".join(dict.fromkeys(c["compiler"] for c, _ in jobs.values()))
        works = [functools.partial(compile_resolved, text, c, name_expressions=tuple(names),
                                   force=force) for c, names in jobs.values()]
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
            if e.unavailable:
                self.kernels[e.name].unavailable = e.unavailable
        self._printf = printf
        self._other: dict = {}          # (kernel, arch) -> Kernel over another arch's build
        self.load_error: Exception | None = None

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
        if arch not in builds:
            raise NoKernelError(f"kernel {name!r} was not built for {arch!r}; it was built for "
                                f"{', '.join(builds)}")
        return builds[arch]

    def config_of(self, kernel: str) -> Resolved:
        return self._entries[self._name(kernel)].config

    def occupancy(self, kernel: str, block: int = 256, shared: int = 0):
        """Theoretical occupancy of ``kernel`` at ``block`` threads per block and ``shared``
        bytes of dynamic shared memory: blocks and warps per SM, the fraction of the SM's warps,
        and the limiter named (registers, shared memory, warps, blocks, barriers), computed
        from ptxas's figures and the arch's published limits
        (:mod:`cuda_magic.inspect.occupancy`).  With the kernel loaded on a GPU,
        ``.driver`` is the driver's own figure (blocks per SM) beside it."""
        from dataclasses import replace

        from ..inspect.occupancy import of_result
        name = self._name(kernel)
        k = self.kernels[name]
        occ = of_result(self._of[name], k.symbol, block, shared)
        if k.loaded:
            try:
                occ = replace(occ, driver=k.occupancy(block, shared))
            except Exception:       # CUDA lost since, or an arch the GPU cannot run
                pass
        return occ

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
        raise NoKernelError(f"no kernel {clip(repr(key), 80)} in this cell; it has "
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


def _layers(parsed: ParsedCell, options: Mapping, session: Mapping | None, preset: str | None):
    for key in options:
        for other in spellings(key) & set(parsed.header):
            raise CellError(f"'{key}' is set on the %%cuda line and '{other}' in the //| header; "
                            f"set it in one place", parsed.header_lines.get(other), other)
    base = [(f"preset:{preset}", get_preset(preset))] if preset else []
    return base + [("session", session), ("cell", {**options, **parsed.header})]


def resolve_cell(text: str, options: Mapping | None = None, *, session: Mapping | None = None,
                 preset: str | None = None) -> Resolved:
    """The cell's config (defaults < preset < session < cell line and header), without compiling."""
    return resolve(*_layers(parse_cell(text), validate(options), session, preset))


def build(text: str, options: Mapping | None = None, *, session: Mapping | None = None,
          preset: str | None = None, instantiate: Sequence[str] = (), force: bool = False,
          load: bool = False, adjust: Callable[[Resolved], Resolved] | None = None) -> Module:
    """Parse, layer, compile and bind one cell.

    ``options`` is the magic line's layer (see :func:`line_config`); it and
    the cell's ``//|`` header together form the ``cell`` layer, and a key in
    both is an error.  ``instantiate`` names template instances
    (``"axpy<float>"``, ``"ns::axpy<float>"``).  The kernels bound are the kernel
    entries of the binary (see :mod:`cuda_magic.cell.bind`).  ``load=True`` loads
    the modules on the GPU now and records a failure in ``Module.load_error``
    instead of raising.  ``adjust`` edits each resolved config after all layers
    (``%%cuda_compare`` variants).
    """
    adjust = adjust or (lambda resolved: resolved)
    parsed = parse_cell(text)
    options = validate(options)
    base = _layers(parsed, options, session, preset)
    cell_config = adjust(resolve(*base))

    instances: dict[str, tuple[str, KernelDecl]] = {}     # spelling -> (python name, decl)
    for spelling in instantiate:
        decl = _template_for(parsed.kernels, spelling)
        try:
            pyname, _ = signature.instantiate(decl, spelling)
        except SignatureError as exc:
            why = str(exc).split(": ", 1)[-1] if exc.line else str(exc)
            why = clip(why.split(f"'{spelling}': ", 1)[-1], 300)
            raise CellError(f"--instantiate {quote(spelling)}: {why}", decl.line) from None
        instances[spelling.strip()] = (pyname, decl)

    # One build per distinct config; a kernel's //| block makes its own, an arch list one per arch.
    def config_of(decl: KernelDecl | None) -> Resolved:
        layer, rows = parsed.kernel_headers.get(decl.line, ({}, {})) if decl else ({}, {})
        if isinstance(layer.get("arch"), list):
            raise CellError(f"kernel '{decl.name}': an arch list ({', '.join(layer['arch'])}) is "
                            f"for the whole cell: give it on the %%cuda line, in the cell header or "
                            f"with %cuda_config; a kernel's //| block sets one arch",
                            rows.get("arch", decl.line), "arch")
        layers = base + ([(f"kernel:{decl.name}", layer)] if layer else [])
        try:
            return complete(adjust(resolve(*layers)))
        except ConfigError as exc:
            if decl is None:
                raise
            raise CellError(f"kernel '{decl.name}': {exc}", decl.line, exc.key) from None

    configs = {d.line: config_of(d) for d in parsed.kernels}
    default = config_of(None) if not parsed.kernels or \
        any(d.line not in parsed.kernel_headers for d in parsed.kernels) else None
    families = _Families(default, [configs[d.line] for d in parsed.kernels])
    for spelling, (_, decl) in instances.items():
        families.names(configs[decl.line]).append(spelling)
    built = families.compile(text, force)
    groups = families.bound(built)          # json -> (config, result) of the builds bound
    keys = list(groups)
    results = [r for _, r in groups.values()]
    home = keys.index(families.bound_key(default)) if default is not None else 0

    bindings, owners = _bindings(results, [keys.index(families.bound_key(configs[d.line]))
                                           for d in parsed.kernels],
                                 parsed.kernels, instances, home)
    names = bind.python_names(bindings)
    overloaded = {b.name for b in bindings if sum(c.name == b.name for c in bindings) > 1}
    entries, of = [], {}
    for b, pyname, r in zip(bindings, names, owners):
        key = b.signature if b.name in overloaded else b.name
        family = configs[b.decl.line] if b.decl is not None else families.home(default)
        config = families.bound_config(family)
        aliases = tuple(x for x in (b.spelling, instances.get(b.spelling, ("",))[0]) if x)
        entries.append(_Entry(key, pyname, b.params, b.decl, config, b, aliases,
                              families.of_arch(family, built), families.unavailable(family)))
        of[key] = r
    matched = {b.decl.line for b in bindings if b.decl is not None}
    templates = [signature.template_hint(d) for d in parsed.kernels
                 if d.template and d.line not in matched]
    missing = [f"{d.qualified} (line {d.line})" for d in parsed.kernels
               if not d.template and d.definition and d.line not in matched]
    if missing and not any(r.entries for r in results):
        _no_kernels(parsed, results, missing)
    module = Module(text, parsed, options, entries, results, of, cell_config, templates, missing,
                    every=tuple(dict.fromkeys(built.values())), archs=families.archs)
    if load and module.kernels:
        try:
            module.load()
        except Exception as exc:  # a GPU that cannot run this arch, no driver, ...
            module.load_error = exc
    return module


def _no_kernels(parsed: ParsedCell, results, missing: Sequence[str]) -> None:
    """The cell defines kernels but no binary holds one (a flag such as -fdevice-syntax-only, or
    an #if, kept them out): an error naming the flags, never an empty module bound silently."""
    def flags(r) -> str:
        items = r.config.get(r.compiler, [])
        return f"{r.compiler} {' '.join(shlex.quote(f) for f in items) if items else '(none)'}"
    used = "; ".join(dict.fromkeys(flags(r) for r in results))
    first = next((d.line for d in parsed.kernels if not d.template and d.definition), None)
    names = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    raise CellError(f"the compiled binary holds no kernel, but the cell defines {names}; "
                    f"flags used: {used}. A flag or an #if kept the kernels out of the binary.",
                    first)


def _bindings(results, owner_of: Sequence[int], decls: Sequence[KernelDecl], instances, home: int):
    """Every kernel entry of each build whose config is that kernel's own (``owner_of``: the
    build index of each declaration; ``home``: the build for entries no declaration shows), in
    source order, with the build it comes from."""
    owner = {d.line: i for d, i in zip(decls, owner_of)}
    found = []
    for i, r in enumerate(results):
        lowered = {sym: expr for expr, sym in r.lowered_names.items()}
        for entry in r.entries:
            spelling = lowered.get(entry.symbol)
            decl = instances[spelling][1] if spelling else bind.match(entry, decls)
            if (owner[decl.line] if decl is not None else home) != i:
                continue
            ptx = bind.ptx_of(r) if decl is None and entry.param_types is None else None
            found.append((bind.Binding(entry, decl, bind.params_of(entry, decl, ptx), spelling), r))
    found.sort(key=lambda f: (f[0].decl.line if f[0].decl is not None else 1 << 30, f[0].name))
    return [b for b, _ in found], [r for _, r in found]


def _template_for(decls: Sequence[KernelDecl], spelling: str) -> KernelDecl:
    """The template kernel an ``--instantiate`` spelling names (qualified or not)."""
    head = spelling.split("<", 1)[0].strip()
    name = head.split("::")[-1].strip()
    found = [d for d in decls if d.name == name and d.template]
    scoped = [d for d in found if d.qualified.endswith(head.lstrip(":")) or "::" not in head]
    if not (scoped or found):
        others = [d.qualified for d in decls if d.template]
        raise CellError(f"--instantiate {quote(spelling)}: the cell has no template kernel "
                        f"{quote(head, 80)}"
                        + (f"; its templates: {', '.join(others)}" if others else ""))
    return (scoped or found)[0]


def session_config(session: Mapping | None, preset: str | None = None) -> Resolved:
    """The config a cell with no options of its own would get (arch detected if possible)."""
    layers = [(f"preset:{preset}", get_preset(preset))] if preset else []
    resolved = resolve(*layers, ("session", session))
    try:
        return complete(resolved)
    except ConfigError:   # no arch and no GPU: show what there is
        return resolved
