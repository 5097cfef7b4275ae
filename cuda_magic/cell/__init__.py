"""A ``%%cuda`` cell: magic-line options, ``//|`` headers, per-kernel configs, kernels.

``build(text, options)`` parses the cell, layers its configs (defaults <
preset < session < cell < kernel), compiles the cell once per distinct
resolved config and returns a :class:`Module` of launchable kernels.  No GPU
is needed unless a kernel is launched.
"""

from __future__ import annotations

import shlex
import time
from typing import Callable, Mapping, Sequence

from ..compile.compiler import complete
from ..compile.memo import PARSE_CHARS, text_memo
from ..config import (APPEND_KEYS, LIST_KEYS, ConfigError, Resolved, get_preset,
                      parse_backend_config, resolve, spellings, validate)
from . import bind
from .decls import KernelDecl, SignatureError
from .module import Module, _Entry, _Families
from .parsed import ParsedCell
from .signature import find_kernels
from .templates import template_hint
from ..errors import CellError, bad_char, clip, quote

# what cuda_magic exports from here (ParsedCell, parse_cell, resolve_cell: import them from here)
__all__ = ["Module", "build", "line_config"]

HEADER = "//|"
MAX_SPELLING = 1000      # characters of an --instantiate spelling


def _header(lines: list[str], first: int, cell: bool = False) -> tuple[dict, dict]:
    """Parse consecutive ``//|`` lines starting at cell line ``first`` as YAML.  In the cell
    header (``cell``) a ``tune:`` key is kept aside (``%%cuda_tune`` reads it; it is no config
    key): it comes back under the key ``"tune"`` of the second dict, ``(value, line)``."""
    body = [ln.strip()[len(HEADER):] for ln in lines]
    body = [b[1:] if b.startswith(" ") else b for b in body]

    def fail(problem: str, row: int = 0):
        row = min(max(row, 0), len(lines) - 1)
        raise CellError(f"the //| header is not valid YAML ({problem}): {quote(lines[row].strip())}",
                        first + row)

    from .header_yaml import load      # PyYAML: imported for a cell that has a header
    data, rows, bad = load("\n".join(body))
    if bad is not None:
        fail(clip(bad[0], 120), bad[1])
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise CellError(f"a //| header holds 'key: value' lines, e.g. '//| arch: sm_90a'; got "
                        f"{quote(lines[0].strip())}", first)
    where = {key: first + rows.get(str(key), 0) for key in data}
    if "tune" in data:
        if not cell:
            raise CellError("'tune:' goes in the cell header (the //| lines at the top of the "
                            "cell), not above a kernel", where["tune"], "tune")
        data = dict(data)
        where["tune"] = (data.pop("tune"), where["tune"])
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


@text_memo(max_chars=PARSE_CHARS, max_entries=64)
def parse_cell(text: str) -> ParsedCell:
    """Find the cell header, the kernels and each kernel's ``//|`` block (cached by text: an
    unchanged re-run parses nothing; the memo keeps at most :data:`PARSE_CHARS` characters of
    cells, the latest always)."""
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
    header, header_lines = _header(lines[top:end], top + 1, cell=True) if end > top else ({}, {})
    tune = header_lines.pop("tune", None)
    if tune is not None:
        header_lines["tune"] = tune[1]
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
    return ParsedCell(text, header, header_lines, tuple(kernels), kernel_headers,
                      tune[0] if tune is not None else None, end if end > top else 0)


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
          load: bool | Callable[[], bool] = False, adjust: Callable[[Resolved], Resolved] | None = None) -> Module:
    """Parse, layer, compile and bind one cell.

    ``options`` is the magic line's layer (see :func:`line_config`); it and
    the cell's ``//|`` header together form the ``cell`` layer, and a key in
    both is an error.  ``instantiate`` names template instances
    (``"axpy<float>"``, ``"ns::axpy<float>"``).  The kernels bound are the kernel
    entries of the binary (see :mod:`cuda_magic.cell.bind`).  ``load=True`` (or a
    function asked after compiling, returning whether to) loads the modules on the GPU
    now and records a failure in ``Module.load_error`` instead of raising; a function that says
    no (no GPU) leaves the reason in ``Module.not_loaded``.  ``adjust`` edits each resolved config after all layers
    (``%%cuda_compare`` variants).
    """
    adjust = adjust or (lambda resolved: resolved)
    parsed = parse_cell(text)
    options = validate(options)
    base = _layers(parsed, options, session, preset)
    cell_config = adjust(resolve(*base))

    # spelling -> (python name, decl or None): the compiler and the binary judge a spelling; the
    # parser only adds the declaration it sees (parameter names, the kernel's own config)
    instances: dict[str, tuple[str, KernelDecl | None]] = {}
    for spelling in instantiate:
        if isinstance(spelling, str) and len(spelling) > MAX_SPELLING:
            raise CellError(f"--instantiate {quote(spelling, 80)}: {len(spelling)} characters is no "
                            f"template instance (at most {MAX_SPELLING})")
        instances[spelling.strip()] = bind.instance(parsed.kernels, spelling)

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
    families = _Families(default, [configs[d.line] for d in parsed.kernels], parsed.kernels)
    for spelling, (_, decl) in instances.items():
        families.names(configs[decl.line] if decl else families.home(default)).append(spelling)
    started = time.perf_counter()
    built = families.compile(text, force)
    wall = time.perf_counter() - started
    groups = families.bound(built)          # json -> (config, result) of the builds bound
    keys = list(groups)
    results = [r for _, r in groups.values()]
    home = keys.index(families.bound_key(default)) if default is not None else 0

    bindings, owners = _bindings(results, [keys.index(families.bound_key(configs[d.line]))
                                           for d in parsed.kernels],
                                 parsed.kernels, instances, home)
    bindings = bind.written(bindings, owners, text)     # the user's text names instances
    names = bind.python_names(bindings)
    overloaded = {b.name for b in bindings if sum(c.name == b.name for c in bindings) > 1}
    entries, of = [], {}
    for b, pyname, r in zip(bindings, names, owners):
        key = b.signature if b.name in overloaded else b.name
        family = configs[b.decl.line] if b.decl is not None else families.home(default)
        config = families.bound_config(family)
        aliases = tuple(dict.fromkeys(x for x in (*b.written, instances.get(b.spelling, ("",))[0]) if x))
        entries.append(_Entry(key, pyname, b.params, b.decl, config, b, aliases,
                              families.of_arch(family, built), families.unavailable(family)))
        of[key] = r
    matched = {b.decl.line for b in bindings if b.decl is not None}
    templates = [template_hint(d) or d.qualified for d in parsed.kernels
                 if d.template and d.line not in matched]      # no hint that makes no sense
    missing = [f"{d.qualified} (line {d.line})" for d in parsed.kernels
               if not d.template and d.definition and d.line not in matched]
    if missing and not any(r.entries for r in results):
        _no_kernels(parsed, results, missing)
    module = Module(text, parsed, options, entries, results, of, cell_config, templates, missing,
                    every=tuple(dict.fromkeys(built.values())), archs=families.archs)
    module.compile_wall = wall
    if module.kernels and (load() if callable(load) else load):
        try:
            module.load()
        except Exception as exc:  # a GPU that cannot run this arch, no driver, ...
            module.load_error = exc
    elif module.kernels and callable(load):       # asked after compiling: there was no GPU
        module.not_loaded = "no NVIDIA GPU and driver here, so compiled only (launching needs them)"
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


def session_config(session: Mapping | None, preset: str | None = None) -> Resolved:
    """The config a cell with no options of its own would get (arch detected if possible)."""
    layers = [(f"preset:{preset}", get_preset(preset))] if preset else []
    resolved = resolve(*layers, ("session", session))
    try:
        return complete(resolved)
    except ConfigError:   # no arch and no GPU: show what there is
        return resolved
