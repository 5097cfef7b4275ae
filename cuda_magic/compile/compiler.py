"""``compile_source``: resolve the config, run the backend, parse ptxas, cache.

Nothing here needs a GPU except arch detection when no arch is set.  The notes a failed
compile gets (where a missing include was looked for, which header declares an unknown name)
are :mod:`.hints`; the pool of a cell's parallel builds is :mod:`.parallel`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping, Sequence

from .arch import detect_arch
from .backends import CompileError, InputTypeError, Output, get_backend
from .. import settings
from .cache import Cache
from .header_store import session_headers
from .include_scan import Inputs, scan
from .toolkit_headers import toolkit_identity
from . import link as _link
from ..config import BackendConfig, ConfigError, Resolved, get_preset, parse_backend_config, resolve
from .ptxas import Resources, parse_ptxas
from ..errors import NoKernelError, bad_char, quote

__all__ = ["CompilationResult", "CompileError", "compile_source", "compile_resolved",
           "resolve_layers", "complete", "set_cache_dir", "set_cache_limit", "clear_cache", "cache",
           "match_symbol", "NoKernelError"]


NO_ARCH = ("no 'arch' is set and no GPU was found to detect one; set it, e.g. "
           "%%cuda --arch sm_90a, %cuda_config --arch sm_90a, a '//| arch: sm_90a' "
           "cell header, the 'hopper' preset, or backend_config={'cuda': {'arch': 'sm_90a'}}")


@dataclass(frozen=True, eq=False)
class CompilationResult:
    """One compiled source: the binary and everything needed to trust it.

    ``config`` holds each key's value and the layer that set it
    (``config.provenance``); ``argv`` is exactly what the compiler ran with;
    ``resources`` are per-kernel figures parsed from ``ptxas -v``.
    """

    source: str
    binary: bytes = field(repr=False)
    format: str
    config: Resolved
    argv: tuple[str, ...]
    compiler: str
    compiler_version: str
    log: str = field(repr=False)
    resources: Mapping[str, Resources] = field(repr=False)   # kernels, read-only
    functions: Mapping[str, Resources] = field(repr=False)   # kernels and device functions
    compile_time: float        # seconds the compiler took (for a cache hit: the original)
    cache_hit: bool
    key: str = field(repr=False)
    lowered_names: Mapping[str, str] = field(default_factory=dict, repr=False)
    name_expressions: tuple[str, ...] = ()
    ptx_text: str | None = field(default=None, repr=False)  # PTX from the same run, if free
    derived: dict = field(default_factory=dict, repr=False, compare=False)  # lazy SASS etc.
    inputs: Inputs = field(default_factory=Inputs, repr=False)  # headers read
    cache_note: str = ""       # why this was not a cache hit ("factor.cuh changed"), or ""
    pch: str = ""              # NVRTC precompiled header: "created", "used" or ""

    @property
    def supplied_headers(self) -> tuple[str, ...]:
        """Standard headers cuda-magic supplied in memory (NVRTC): ``("cstdio", "cstdint")``."""
        return self.inputs.supplied

    @property
    def user_headers(self) -> tuple[str, ...]:
        """Headers read besides the toolkit's: ``%%cuda_header`` names, then files on disk."""
        return self.inputs.session + tuple(p for p, _ in self.inputs.files)

    @property
    def arch(self) -> str:
        return self.config["arch"]

    @property
    def kernels(self) -> list[str]:
        """Kernel names as in the binary (mangled for C++ kernels)."""
        return list(self.resources)

    @property
    def provenance(self) -> dict[str, str]:
        return self.config.provenance

    @property
    def entries(self) -> tuple:
        """The kernel entries of the binary (:func:`cuda_magic.compile.binary.entries`): symbol,
        demangled name, parameter types and sizes.  Read once per binary."""
        if "entries" not in self.derived:
            from .binary import entries
            self.derived["entries"] = entries(self.binary, self.format, arch=self.arch)
        return self.derived["entries"]

    @property
    def symbols(self) -> list[str]:
        """Kernel names in the binary (mangled for C++ kernels)."""
        return [e.symbol for e in self.entries]

    def symbol(self, name: str) -> str | None:
        """The binary's name for kernel ``name`` (C or C++ spelling, or a name expression)."""
        if name in self.lowered_names:
            return self.lowered_names[name]
        return match_symbol(name, self.symbols)

    def __repr__(self) -> str:
        hit = "cache hit" if self.cache_hit else f"{self.compile_time * 1e3:.1f} ms"
        kernels = ", ".join(
            f"{r.name} ({r.registers} regs" + (f", {r.spill_stores}B spilled" if r.spills else "") + ")"
            for r in self.resources.values())
        return (f"<CompilationResult {self.compiler} {self.compiler_version} {self.arch} "
                f"{self.format} {len(self.binary)} bytes, {hit}; kernels: {kernels or 'none reported'}>")


def _source_name(symbol: str, pos: int) -> tuple[str, int] | None:
    """The Itanium ``<source-name>`` (``<length><identifier>``) at ``pos``: (identifier, end)."""
    end = pos
    while end < len(symbol) and "0" <= symbol[end] <= "9" and end - pos < 9:
        end += 1
    if end == pos or symbol[pos] == "0":
        return None
    n = int(symbol[pos:end])
    ident = symbol[end:end + n]
    return (ident, end + n) if len(ident) == n else None


def _mangles(symbol: str, parts: list[str]) -> bool:
    """Whether ``symbol`` is the Itanium mangling of a function named ``parts`` (``["ns", "k"]``:
    the trailing components of its qualified name).  One pass over the symbol: linear time."""
    if not symbol.startswith("_Z"):
        return False
    pos = 3 if symbol.startswith("_ZL") else 2
    if symbol.startswith("N", pos):
        names, pos = [], pos + 1
        while (got := _source_name(symbol, pos)) is not None:
            ident, pos = got
            names.append(ident)
        return symbol.startswith("E", pos) and len(names) >= len(parts) and \
            names[len(names) - len(parts):] == parts
    got = _source_name(symbol, pos)
    return len(parts) == 1 and got is not None and got[0] == parts[0]


def match_symbol(name: str, symbols) -> str | None:
    """Find kernel ``name`` among binary symbols: itself (extern "C") or its one mangled form.

    ``_Z5scalePKfPffi`` matches ``scale``; so does ``_ZN2ns5scaleEPf`` (in a
    namespace), which ``ns::scale`` matches too.  Several overloads of one name are
    ambiguous: ``None``.  The Itanium length prefixes are read, not searched for, so the
    time is linear in the symbols' length.
    """
    symbols = [s for s in symbols if isinstance(s, str)]
    if name in symbols:
        return name
    parts = [p.strip() for p in str(name).strip().removeprefix("::").split("::")]
    if not all(parts):
        return None
    found = [s for s in symbols if _mangles(s, parts)]
    return found[0] if len(found) == 1 else None


# settings.cache_dir / cache_limit ($CUDA_MAGIC_CACHE_DIR/_LIMIT, read now); never raises: warns,
# memory only
_CACHE = Cache(settings.cache_dir, max_bytes=settings.cache_limit)


def _open_cache(directory) -> None:
    """settings.cache_dir changed: a new cache there (the in-memory entries start afresh)."""
    global _CACHE
    _CACHE = Cache(directory, _CACHE.max_entries, max_bytes=_CACHE.max_bytes,
                   max_entry_bytes=_CACHE.max_entry_bytes)


settings.watch("cache_dir", _open_cache)
settings.watch("cache_limit", lambda nbytes: _CACHE.set_max_bytes(nbytes))


@functools.cache
def _std(standard: bool) -> Mapping[str, str]:
    """The headers cuda-magic supplies: the standard ones (NVRTC has none) and its own
    (:mod:`.packaged`, for both compilers)."""
    from .packaged import headers
    if not standard:
        return headers()
    from .stdheaders import HEADERS
    return MappingProxyType({**HEADERS, **headers()})


def cache() -> Cache:
    """The process-wide compile cache."""
    return _CACHE


def set_cache_dir(directory: str | os.PathLike | None) -> None:
    """Also keep compiled binaries on disk in ``directory`` (``None``: memory only).

    Sets :data:`cuda_magic.settings.cache_dir <cuda_magic.settings>`, whose default
    comes from the ``CUDA_MAGIC_CACHE_DIR`` environment variable.  The
    path is made absolute (``~`` expanded) now, so a later ``%cd`` does not move it.
    A directory that does not exist is created 0700; an existing one is used as it is
    (never chmodded) if it is this user's and nobody else can write it, otherwise this
    warns (``RuntimeWarning``) and the cache stays in memory only.  See docs/cache.md.
    The in-memory entries start afresh; the memory limit is kept.
    """
    settings.put("cache_dir", directory, by="set_cache_dir")


def set_cache_limit(nbytes: int) -> None:
    """Bound the in-memory compile cache at ``nbytes`` (default 256 MiB; 0 keeps
    nothing).  Each result counts its source, binary, log, PTX and derived text (SASS);
    the least recently used go first.  Kept across :func:`set_cache_dir`.  Sets
    ``cuda_magic.settings.cache_limit``."""
    settings.put("cache_limit", nbytes, by="nbytes")


def clear_cache(*, disk: bool = False) -> None:
    """Forget every in-memory entry; with ``disk=True`` also remove the entries of the
    disk cache directory (only regular files of ours named like entries)."""
    _CACHE.clear()
    if disk:
        _CACHE.clear_disk()


def resolve_layers(backend_config: Mapping | str | None = None, *, preset: str | None = None,
                   session: Mapping | None = None, kernel: tuple[str, Mapping] | None = None) -> Resolved:
    """Layer defaults < preset < session < cell (``backend_config``) < kernel."""
    layers = []
    if preset:
        layers.append((f"preset:{preset}", get_preset(preset)))
    layers.append(("session", session))
    layers.append(("cell", parse_backend_config(backend_config)))
    if kernel:
        layers.append((f"kernel:{kernel[0]}", kernel[1]))
    return resolve(*layers)


def complete(resolved: Resolved) -> Resolved:
    """Fill in what the backend decides: default format, detected arch; check the pair."""
    backend = get_backend(resolved["compiler"])
    fmt = resolved.get("target_format")
    if fmt is None:
        resolved = resolved.with_value("target_format", backend.default_format, "default")
    elif fmt not in backend.formats:
        raise ConfigError(f"{backend.name} cannot produce {fmt!r} (set by layer "
                          f"{resolved.provenance['target_format']!r}); it makes "
                          f"{', '.join(backend.formats)}", "target_format")
    if "arch" not in resolved:
        arch = detect_arch()
        if arch is None:
            raise ConfigError(NO_ARCH, "arch")
        resolved = resolved.with_value("arch", arch, "detected")
    return resolved


def cache_key(source: str, resolved: Resolved, backend: str, version: str,
              name_expressions: Sequence[str], inputs: str = "") -> str:
    """sha256 of everything the compile reads: source, config, compiler, names, and
    ``inputs`` (the digest of the headers it reaches, and the toolkit's identity)."""
    blob = json.dumps([source, resolved.json(), backend, version, list(name_expressions), inputs],
                      separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


_SEEN: dict[str, dict[str, str]] = {}   # key without headers -> the last header manifest


def _changed(base: str, inputs: Inputs) -> str:
    """Which headers changed since the last build of the same source and config."""
    now = inputs.manifest()
    before = _SEEN.get(base)
    if len(_SEEN) > 1024:
        _SEEN.clear()
    _SEEN[base] = now
    if before is None or before == now:
        return ""
    names = [n for n in sorted(set(now) | set(before)) if now.get(n) != before.get(n)]
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return f"{', '.join(names[:3])}{more} changed"


def _result(source, resolved, out: Output, backend, version, elapsed, hit, key, names, inputs,
            note=""):
    from .binary import NOT_THE_CELLS      # never the cell's kernels: not its resources either
    functions = {n: r for n, r in parse_ptxas(out.log).items() if not NOT_THE_CELLS.search(n)}
    return CompilationResult(
        source=source, binary=out.binary, format=out.format, config=resolved, argv=out.argv,
        compiler=backend, compiler_version=version, log=out.log,
        resources=MappingProxyType({n: r for n, r in functions.items() if r.entry}),
        functions=MappingProxyType(functions), compile_time=elapsed, cache_hit=hit, key=key,
        lowered_names=MappingProxyType(dict(out.lowered_names)),
        name_expressions=tuple(names), ptx_text=out.ptx, inputs=inputs, cache_note=note,
        pch=out.pch)


def _device_link(out: Output, compiler: str, flags: Sequence[str], arch: str,
                 source: str) -> Output:
    """Relocatable device code (``-rdc=true``) linked with the device runtime into one
    loadable cubin (:mod:`.link`); the log says how.  Anything else is returned as it is."""
    if out.format == "ptx" or not _link.relocatable(flags):
        return out
    try:
        cubin, note = _link.link(out.binary, out.format, arch)
    except _link.LinkError as exc:
        raise CompileError(compiler, f"{out.log}\n{exc}".strip(), out.argv, source,
                           "cell.cu") from None
    return replace(out, binary=cubin, format="cubin", log=f"{out.log}\n{note}".strip())


def _discard_pch(argv: Sequence[str]) -> None:
    """Remove the PCH a compile with ``argv`` created: it holds headers that changed during the
    compile, under the name of the headers scanned before it (a later compile would trust it)."""
    for arg in argv:
        if arg.startswith("--create-pch="):
            path = re.sub(r"\.\d+\.tmp$", "", arg[len("--create-pch="):])
            try:
                os.unlink(path)
            except OSError:
                pass


def compile_resolved(source: str, resolved: Resolved, *, name_expressions: Sequence[str] = (),
                     force: bool = False) -> CompilationResult:
    """Compile ``source`` under an already layered config (see :func:`resolve_layers`)."""
    if not isinstance(source, str):
        raise InputTypeError(f"source must be a str of CUDA C++, not {type(source).__name__}")
    names = tuple(name_expressions)
    if not all(isinstance(n, str) and n for n in names):
        raise InputTypeError(f"name_expressions must be non-empty strings, not {quote(names)}")
    # NVRTC stops reading at a NUL (what follows would silently vanish), and a lone
    # surrogate cannot be encoded for any compiler: refuse both, naming the line.
    bad = bad_char(source)
    if bad:
        line, column, what = bad
        raise ConfigError(f"source line {line} holds {what} at column {column}; compilers "
                          f"cannot read it")
    for n in names:
        bad = bad_char(n)
        if bad:
            raise ConfigError(f"name expression {quote(n)} holds {bad[2]}")
    if len(resolved.archs) > 1:
        raise ConfigError(f"'arch' lists {', '.join(resolved.archs)} (set by layer "
                          f"{resolved.provenance['arch']!r}): one compile makes one arch; a "
                          f"%%cuda cell or cuda_magic.build() makes one build per arch", "arch")
    resolved = complete(resolved)
    backend = get_backend(resolved["compiler"])
    version = backend.version()
    flags = resolved.get(backend.name, [])
    session, std = session_headers(), _std(backend.std_headers)
    inputs = scan(source, flags, std=std, session=session)
    base = cache_key(source, resolved, backend.name, version, names)
    key = cache_key(source, resolved, backend.name, version, names,
                    inputs.digest + toolkit_identity())
    note = _changed(base, inputs)
    if inputs.unresolved:
        force, note = True, f"not cached: {inputs.unresolved[0]} (a macro the scan cannot follow)"
    if not force:
        hit = _CACHE.get(key)
        if hit is not None:
            return replace(hit, config=resolved, cache_hit=True, cache_note="")
        # verified (HMAC over key and entry) and shape-checked by the cache, or None: rebuild
        record = _CACHE.load(key, expect={"compiler": backend.name, "version": version})
        if record is not None:
            try:
                out = Output(record["binary"], record["format"], tuple(record["argv"]),
                             record["log"], record["lowered_names"], record["ptx"])
                result = _result(source, resolved, out, backend.name, version,
                                 float(record["compile_time"]), True, key, names, inputs)
            except (TypeError, KeyError, ValueError, AttributeError):
                pass
            else:
                _CACHE.put(key, replace(result, cache_hit=False))
                return result
    start = time.perf_counter()
    extra = {"headers": inputs.memory} if inputs.memory else {}
    if backend.pch:
        extra["pch"] = inputs.digest + toolkit_identity()
    try:
        out = backend.compile(source, arch=resolved["arch"], target_format=resolved["target_format"],
                              flags=flags, ptxas=backend.forward_ptxas(resolved.get("ptxas", [])),
                              name_expressions=names, **extra)
        out = _device_link(out, backend.name, flags, resolved["arch"], source)
    except CompileError as exc:
        if inputs.stamps and inputs.changed_in(scan(source, flags, std=std,
                                                             session=session)):
            _discard_pch(exc.argv)      # a PCH kept from a failed compile is checked the same way
        from .hints import annotate     # imported on a failure: it reads the supplied headers
        annotate(exc, backend, flags)
        raise
    elapsed = time.perf_counter() - start
    if inputs.stamps:   # the key must describe what the compiler read: re-check the files
        changed = inputs.changed_in(scan(source, flags, std=std, session=session))
        if changed:
            _discard_pch(out.argv)
            more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
            note = f"not cached: {', '.join(changed[:3])}{more} changed during the compile"
            return _result(source, resolved, out, backend.name, version, elapsed, False, key,
                           names, inputs, note)
    result = _result(source, resolved, out, backend.name, version, elapsed, False, key, names,
                     inputs, note)
    _CACHE.put(key, result)
    _CACHE.store(key, {"binary": out.binary, "format": out.format, "argv": list(out.argv),
                       "log": out.log, "lowered_names": [list(p) for p in out.lowered_names],
                       "ptx": out.ptx, "compile_time": elapsed, "compiler": backend.name,
                       "version": version})
    return result


def compile_source(source: str, backend_config: Mapping | str | None = None, *,
                   preset: str | None = None, session: BackendConfig | None = None,
                   name_expressions: Sequence[str] = (), force: bool = False) -> CompilationResult:
    """Compile CUDA C++ ``source`` and return a :class:`CompilationResult`.

    ``backend_config`` is TVM's form, ``{"cuda": {...}}`` (a dict or its
    JSON), and is the ``cell`` layer; ``preset`` names a preset layer and
    ``session`` is a flat config for the session layer.  Identical input is
    served from the cache; ``force=True`` recompiles.  Raises ``ConfigError``
    for a bad config and ``CompileError`` (log, argv, source) when the
    compiler fails.

    Example::

        r = compile_source(src, {"cuda": {"arch": "sm_90a",
                                          "nvrtc": ["--use_fast_math", "--ftz=false"]}})
        r.resources["scale"].registers, r.argv, r.config.provenance
    """
    resolved = resolve_layers(backend_config, preset=preset, session=session)
    return compile_resolved(source, resolved, name_expressions=name_expressions, force=force)
