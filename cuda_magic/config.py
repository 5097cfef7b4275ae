"""Configuration: schema, validation, defaults, presets, layering with provenance.

Pure data, no CUDA. Semantics follow TVM's CUDA ``backend_config``:

* six optional keys (see :class:`BackendConfig`);
* layers from lowest to highest: ``default`` < ``preset:NAME`` < ``session``
  < ``cell`` < ``kernel:NAME``; a list replaces the inherited list whole and
  ``[]`` clears it (its append form, ``nvrtc+``, adds to it instead); ``None`` and
  ``{}`` add nothing;
* every boundary snapshots its input, so later mutation of the caller's dict
  changes nothing already built;
* canonical JSON (sorted keys, compact) is the cache key: key order is
  ignored, argument order is kept.

One concept, the backend configuration as data (its schema and checks, its layers with their
provenance, its presets), held in one module although it is over 500 lines.

One concept: the configuration model; presets are its named defaults layer.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, TypedDict

from .errors import ConfigError, bad_char, clip, quote

# what cuda_magic exports from here (its errors are in errors.py)
__all__ = ["BackendConfig", "Resolved", "canonical_json", "from_json", "list_presets",
           "register_preset", "check_preset", "resolve", "validate"]


class BackendConfig(TypedDict, total=False):
    """The CUDA backend configuration; every key is optional."""

    arch: str            # sm_<digits>[a|f], e.g. "sm_90a" (a layer may give a list: one build each)
    compiler: str        # "nvrtc" | "nvcc"
    target_format: str   # "ptx" | "cubin" | "fatbin" (NVRTC cannot make fatbin)
    nvcc: list[str]      # native nvcc flags, one per item
    nvrtc: list[str]     # native NVRTC flags, one per item
    ptxas: list[str]     # ptxas flags, one per item


def load_json(text: str, what: str = "config") -> Any:
    """``json.loads`` whose every failure is a :class:`ConfigError` starting with ``what``
    (bad syntax, nesting too deep for the parser, integers too long to convert)."""
    if not isinstance(text, str):
        _fail(f"{what} must be JSON text, not {type(text).__name__}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        near = text[max(e.pos - 20, 0):e.pos + 20]
        _fail(f"{what} is not valid JSON ({e.msg} at line {e.lineno} column {e.colno}, "
              f"near {quote(near)})")
    except RecursionError:
        _fail(f"{what} is nested too deeply")
    except ValueError as e:   # e.g. an integer longer than Python converts (4300 digits)
        _fail(f"{what} is not usable JSON ({clip(str(e).split(';')[0], 120)})")


TARGET = "cuda"
KEYS = ("arch", "compiler", "target_format", "nvcc", "nvrtc", "ptxas")
LIST_KEYS = ("nvcc", "nvrtc", "ptxas")
# The append form of the list keys: a layer's "nvrtc+" adds to the inherited list, where
# "nvrtc" replaces it whole (the default, as in TVM).
APPEND_KEYS = {f"{key}+": key for key in LIST_KEYS}
LAYER_KEYS = KEYS + tuple(APPEND_KEYS)


def spellings(key: str) -> set[str]:
    """``{"nvrtc", "nvrtc+"}`` for either spelling of a list key (a layer sets one of them);
    ``{key}`` for any other key."""
    base = key[:-1] if key in APPEND_KEYS else key
    return {base, base + "+"} if base in LIST_KEYS else {key}
FORMATS = ("ptx", "cubin", "fatbin")
DEFAULTS: BackendConfig = {
    "compiler": "nvrtc",
    "nvcc": ["--use_fast_math"],
    "nvrtc": ["--use_fast_math"],
    "ptxas": ["-v", "--warn-on-local-memory-usage", "--register-usage-level=10"],
}

_ARCH = re.compile(r"sm_[0-9]+[af]?")  # ASCII digits only (\d matches any Unicode digit)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")

# Flags that would fight the keys that manage architecture, output and tool
# routing.  Matched as the whole item, "FLAG=value" or "FLAG value".
_ARCH_HELP = "the architecture is set by the 'arch' key"
_OUT_HELP = "the output stays in memory; its kind is set by the 'target_format' key"
RESERVED = {
    **dict.fromkeys(
        ["-arch", "--gpu-architecture", "-gpu-architecture", "--gpu-name", "-gpu-name",
         "-arch-name", "--arch-name", "-gencode", "--generate-code", "-code", "--gpu-code",
         "-gpu-code"], _ARCH_HELP),
    **dict.fromkeys(
        ["-o", "--output-file", "-output-file", "--cubin", "-cubin", "--ptx", "-ptx",
         "--fatbin", "-fatbin", "-odir", "--output-directory", "-c", "--compile",
         "-lib", "--lib", "-dlink", "--device-link", "-dlto",
         "--dlink-time-opt", "--optix-ir", "-optix-ir"], _OUT_HELP),
    **dict.fromkeys(
        ["-optf", "--options-file", "-options-file"],
        "give one flag per list item instead of an options file"),
    **dict.fromkeys(
        ["-Xptxas", "--ptxas-options", "-ptxas-options"],
        "ptxas flags go in the 'ptxas' key, one per item"),
    # Flags that break "in memory": they write files anywhere, keep the private
    # directory's files, or make the compiler print something instead of a binary.
    # Spellings from `nvcc --help` (--long and its (-short)); NVRTC takes --x and -x.
    **dict.fromkeys(
        ["-M", "--generate-dependencies", "-MM", "--generate-nonsystem-dependencies",
         "-MD", "--generate-dependencies-with-compile", "-MMD",
         "--generate-nonsystem-dependencies-with-compile", "-MF", "--dependency-output",
         "-MT", "--dependency-target-name", "-MP", "--generate-dependency-targets"],
        "cuda-magic compiles in memory and writes no dependency files; it tracks the headers "
        "a cell reads itself (the view lists them)"),
    **dict.fromkeys(
        ["-keep", "--keep", "-keep-dir", "--keep-dir", "-save-temps", "--save-temps"],
        "the compile's intermediate files stay in its private directory, which is removed; "
        "see the PTX and SASS tabs (cuda_magic.ptx, cuda_magic.sass) instead"),
    **dict.fromkeys(
        ["-dryrun", "--dryrun"],
        "it lists nvcc's commands and compiles nothing; -v (--verbose) lists them and compiles"),
    **dict.fromkeys(
        ["-V", "--version", "-version"],
        "it prints the version and compiles nothing; the version is in the view's header "
        "(CompilationResult.compiler_version)"),
    **dict.fromkeys(["-h", "--help", "-help"], "it prints help and compiles nothing"),
    **dict.fromkeys(
        ["-E", "--preprocess"],
        "it prints the preprocessed source instead of compiling it"),
    **dict.fromkeys(
        ["-run", "--run", "-run-args", "--run-args"],
        "it would link and run a host program; launch the kernels from Python instead: "
        "kernel[grid, block](*args)"),
    **dict.fromkeys(
        ["-code-ls", "--list-gpu-code", "-arch-ls", "--list-gpu-arch", "-list-gpu-code",
         "-list-gpu-arch"],
        "it lists architectures and compiles nothing"),
    **dict.fromkeys(
        ["-clean", "--clean-targets"], "it deletes the outputs instead of making them"),
    **dict.fromkeys(
        ["-fdevice-syntax-only", "--fdevice-syntax-only"],
        "it stops after the syntax check and makes no device code (no kernels to bind)"),
    **dict.fromkeys(
        ["-time", "--time"],
        "it writes a timing file outside the compile's private directory; "
        "--time=- puts the phase times in the log instead"),
    **dict.fromkeys(
        ["-fdevice-time-trace", "--fdevice-time-trace"],
        "it writes a trace file outside the compile's private directory"),
    **dict.fromkeys(
        ["-pch", "--pch", "-create-pch", "--create-pch", "-use-pch", "--use-pch", "-pch-dir",
         "--pch-dir"],
        "cuda-magic manages NVRTC precompiled headers itself, for cells that include heavy "
        "headers (CUDA_MAGIC_PCH=0 turns that off, CUDA_MAGIC_PCH_DIR moves the files)"),
}
# "FLAG=VALUE" spellings that are fine although FLAG is reserved (stdout goes to the log).
ALLOWED = {("-time", "-"), ("--time", "-")}


def _fail(msg: str, key: str | None = None) -> None:
    raise ConfigError(msg, key)


def _check_flag(key: str, item: str) -> None:
    """Reject ``item`` if its flag is reserved, spelled alone, ``FLAG=value`` or ``FLAG value``."""
    head, _, value = item.strip().partition("=")
    if any(c.isspace() for c in head):      # "FLAG value" in one item
        head, value = head.split(None, 1)[0], None
    if head in RESERVED and (head, value) not in ALLOWED:
        _fail(f"{key!r}: flag {quote(item)} is reserved: {RESERVED[head]}", key)


def _check_list(key: str, value: Any) -> list[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        _fail(f"{key!r} must be a list of flags, one per item "
              f"(e.g. [\"--use_fast_math\"]), not {type(value).__name__} {quote(value)}", key)
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            _fail(f"{key!r}[{i}] must be a string flag, not {type(item).__name__} {quote(item)}", key)
        if not item.strip():
            _fail(f"{key!r}[{i}] is an empty flag", key)
        bad = bad_char(item)
        if bad:
            _fail(f"{key!r}[{i}] {quote(item)} holds {bad[2]}, which no flag can carry", key)
        _check_flag(key, item)
        out.append(item)
    return out


def _unwrap(cfg: Mapping) -> Mapping:
    """Accept the nested ``{"cuda": {...}}`` form; reject other backend names."""
    if set(cfg) & set(LAYER_KEYS):
        return cfg
    # beside "cuda" every name is a backend; alone, a name mapping to a dict is one
    others = [name for name, inner in cfg.items()
              if name != TARGET and (TARGET in cfg or isinstance(inner, Mapping))]
    if others:
        _fail(f"unknown backend {quote(others[0])}: only {TARGET!r} is supported "
              f"(write {{\"{TARGET}\": {{...}}}})")
    if TARGET not in cfg:
        return cfg
    inner = cfg[TARGET]
    if inner is None:
        return {}
    if not isinstance(inner, Mapping):
        _fail(f"'{TARGET}' must map to a config dict, not {type(inner).__name__}")
    return inner


def check_archs(value: Any) -> str | list[str]:
    """The ``arch`` of a layer: one arch (``"sm_90a"``), or an arch list (``"sm_80,sm_90a"`` or
    ``["sm_80", "sm_90a"]``) that builds the cell once per arch.  One arch comes back as a
    string, several as a list; an error names the bad item."""
    if isinstance(value, str):
        items = value.split(",") if "," in value else [value]
        items = [item.strip() for item in items] if len(items) > 1 else items
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        _fail(f"'arch' must be a string such as sm_90a, or a list of them, not "
              f"{type(value).__name__} {quote(value)}", "arch")
    if not items:
        _fail("'arch' is an empty list: give one arch or more, e.g. [sm_80, sm_90a]", "arch")
    for i, item in enumerate(items):
        where = f"'arch' item {i + 1} " if len(items) > 1 else "'arch' "
        if not isinstance(item, str):
            _fail(f"{where}must be a string, not {type(item).__name__} {quote(item)}", "arch")
        if not _ARCH.fullmatch(item):
            what = "an empty item" if len(items) > 1 and not item.strip() else quote(item)
            _fail(f"{where}must look like sm_90, sm_90a or sm_100f, not {what}", "arch")
        if item in items[:i]:
            _fail(f"'arch' lists {item} twice", "arch")
    return items[0] if len(items) == 1 else items


def validate(cfg: Mapping | None) -> BackendConfig:
    """Check one layer and return a snapshot of it.

    Takes the flat form ``{"arch": ...}`` or the nested ``{"cuda": {...}}``;
    ``None`` and ``{}`` give ``{}``.  Keys whose value is ``None`` are dropped
    (they set nothing).  Besides the six keys, a layer may hold ``nvrtc+``, ``nvcc+`` or
    ``ptxas+``: flags appended to the inherited list (``nvrtc`` replaces it).  ``arch`` may be
    a list (``["sm_80", "sm_90a"]`` or ``"sm_80,sm_90a"``): one build per arch (see
    :attr:`Resolved.archs`).  Raises :class:`ConfigError` naming the key.
    """
    if cfg is None:
        return {}
    if not isinstance(cfg, Mapping):
        _fail(f"a config must be a dict, not {type(cfg).__name__} {quote(cfg)}")
    cfg = _unwrap(cfg)
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if key not in LAYER_KEYS:
            _fail(f"unknown config key {quote(key)}; the keys are {', '.join(KEYS)} "
                  f"(and {', '.join(APPEND_KEYS)} to append to a list)", clip(str(key)))
        if value is None:
            continue
        if key in LIST_KEYS or key in APPEND_KEYS:
            out[key] = _check_list(key, value)
        elif key == "arch":
            out[key] = check_archs(value)
        elif not isinstance(value, str):
            _fail(f"{key!r} must be a string, not {type(value).__name__} {quote(value)}", key)
        elif key == "target_format" and value not in FORMATS:
            _fail(f"'target_format' must be one of {', '.join(FORMATS)}, not {quote(value)}", key)
        elif key == "compiler" and (len(value) > 64 or not _NAME.fullmatch(value)):
            _fail(f"'compiler' must be a compiler name such as nvrtc or nvcc, not {quote(value)}", key)
        else:
            out[key] = value
    for plus, key in APPEND_KEYS.items():
        if plus in out and key in out:
            _fail(f"{key!r} and {plus!r} in one layer: {key!r} replaces the inherited list and "
                  f"{plus!r} appends to it; write the whole list in {key!r}", plus)
    if out.get("compiler") == "nvrtc" and out.get("target_format") == "fatbin":
        _fail("NVRTC cannot produce 'fatbin': use target_format cubin or ptx, "
              "or compiler nvcc", "target_format")
    return out  # type: ignore[return-value]


def parse_backend_config(obj: Mapping | str | None) -> BackendConfig:
    """Read a TVM-style ``backend_config``: ``{"cuda": {...}}`` (or its JSON).

    The outer dict maps a backend name to that backend's config; only
    ``"cuda"`` exists.  A flat dict here is an error that shows the fix.
    """
    if isinstance(obj, str):
        obj = load_json(obj, "backend config")
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        _fail(f"backend config must be a dict like {{\"{TARGET}\": {{...}}}}, "
              f"not {type(obj).__name__}")
    for name in obj:
        if name in LAYER_KEYS:
            _fail(f"{quote(name)} is a config key, not a backend name: backend config maps "
                  f"backends to configs, e.g. {{\"{TARGET}\": {{\"{name}\": ...}}}}", name)
        if name != TARGET:
            _fail(f"unknown backend {quote(name)}: only {TARGET!r} is supported")
    return validate(obj)


def canonical_json(cfg: Mapping | None) -> str:
    """Canonical JSON of a config: sorted keys, compact, lists in order."""
    return json.dumps(validate(cfg), sort_keys=True, separators=(",", ":"))


def from_json(text: str) -> BackendConfig:
    """Parse JSON (flat or nested form) and validate it."""
    return validate(load_json(text, "config"))


@dataclass(frozen=True)
class Replaced:
    """A layer's list that dropped flags it inherited: ``key`` set by ``layer`` replaced
    ``inherited`` (set by ``source``, e.g. ``"default"``), leaving out ``dropped``."""

    key: str
    layer: str
    source: str
    inherited: tuple[str, ...]
    dropped: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.key}: replaces {self.source} {json.dumps(list(self.inherited))}"


@dataclass(frozen=True)
class Resolved:
    """A fully layered config: each key's value and the layer that set it.

    ``config`` and ``provenance`` return fresh copies.  A list built from several layers
    (the append form, ``nvrtc+``) has the provenance ``"default + cell"``; :meth:`parts`
    says which layer gave which flags, and ``replaced`` lists the lists that dropped flags
    they inherited.

    An arch list (``"arch": ["sm_80", "sm_90a"]`` in a layer) stays one arch per resolved
    config: ``["arch"]`` is its first arch, :attr:`archs` the whole list and :meth:`expand`
    one config per arch, each with the provenance of the layer that gave the list.
    """

    _items: tuple  # ((key, value-as-tuple-or-str, layer), ...) sorted by key
    _parts: tuple = ()      # ((list key, ((layer, flags), ...)), ...) where a list has >1 part
    replaced: tuple[Replaced, ...] = ()
    _archs: tuple[str, ...] = ()   # the arch list in force (2 archs or more), else ()

    @property
    def archs(self) -> tuple[str, ...]:
        """Every arch this config builds for: the arch list a layer gave, else ``(arch,)``
        (``()`` when no arch is set)."""
        if self._archs:
            return self._archs
        return (self["arch"],) if "arch" in self else ()

    def expand(self) -> list["Resolved"]:
        """One config per arch of :attr:`archs` (``[self]`` without an arch list)."""
        if not self._archs:
            return [self]
        layer = self.provenance["arch"]
        return [self.with_value("arch", arch, layer) for arch in self._archs]

    @property
    def config(self) -> BackendConfig:
        return {k: list(v) if isinstance(v, tuple) else v for k, v, _ in self._items}  # type: ignore

    @property
    def provenance(self) -> dict[str, str]:
        return {k: layer for k, _, layer in self._items}

    def parts(self, key: str) -> list[tuple[str, list[str]]]:
        """``[(layer, flags), ...]``: which layer gave which part of list ``key`` (one part
        unless layers appended to it)."""
        for k, parts in self._parts:
            if k == key:
                return [(layer, list(flags)) for layer, flags in parts]
        for k, v, layer in self._items:
            if k == key:
                return [(layer, list(v) if isinstance(v, tuple) else v)]
        raise KeyError(key)

    def __getitem__(self, key: str) -> Any:
        for k, v, _ in self._items:
            if k == key:
                return list(v) if isinstance(v, tuple) else v
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: str) -> bool:
        return any(k == key for k, _, _ in self._items)

    def with_value(self, key: str, value: Any, layer: str) -> "Resolved":
        """A copy with ``key`` set to ``value`` by ``layer`` (validated; a list replaces the
        resolved one, and what was recorded about how it was built goes with it)."""
        checked = validate({key: value})
        items = {k: (v, lay) for k, v, lay in self._items}
        archs = self._archs if key != "arch" else ()
        if key == "arch" and isinstance(checked.get("arch"), list):
            archs = tuple(checked["arch"])  # type: ignore[typeddict-item]
            items[key] = (archs[0], layer)
        elif key in checked:
            v = checked[key]  # type: ignore[literal-required]
            items[key] = (tuple(v) if isinstance(v, list) else v, layer)
        else:
            items.pop(key, None)
        return Resolved(tuple((k, v, lay) for k, (v, lay) in sorted(items.items())),
                        tuple(p for p in self._parts if p[0] != key),
                        tuple(r for r in self.replaced if r.key != key), archs)

    def appended(self, key: str, flags: Sequence[str], layer: str) -> "Resolved":
        """A copy with ``flags`` appended to list ``key`` by ``layer``, as the append form
        (``nvrtc+``) would: the provenance becomes ``"default + LAYER"`` and :meth:`parts`
        says which layer gave which flags."""
        if key not in LIST_KEYS:
            raise ConfigError(f"'{key}' is not a list of flags; the lists are "
                              f"{', '.join(LIST_KEYS)}", key)
        flags = list(validate({key: list(flags)})[key])  # type: ignore[literal-required]
        parts = self.parts(key) if key in self else []
        parts.append((layer, flags))
        items = {k: (v, lay) for k, v, lay in self._items}
        items[key] = (tuple(self.get(key, [])) + tuple(flags),
                      " + ".join(dict.fromkeys(lay for lay, _ in parts)))
        kept = tuple(p for p in self._parts if p[0] != key)
        return Resolved(tuple((k, v, lay) for k, (v, lay) in sorted(items.items())),
                        kept + ((key, tuple((lay, tuple(f)) for lay, f in parts)),),
                        self.replaced, self._archs)

    def json(self) -> str:
        """Canonical JSON of the resolved values (the cache key part)."""
        return json.dumps(self.config, sort_keys=True, separators=(",", ":"))

    def __repr__(self) -> str:
        rows = ", ".join(f"{k}={list(self._archs) if k == 'arch' and self._archs else v!r} "
                         f"[{layer}]" for k, v, layer in self._items)
        return f"Resolved({rows})"


def resolve(*layers: tuple[str, Mapping | None], defaults: Mapping | None = DEFAULTS) -> Resolved:
    """Layer configs lowest first and record which layer set each key.

    ``layers`` are ``(layer_name, config)`` pairs, e.g.
    ``("preset:hopper", {...}), ("session", {...}), ("cell", {...})``; the
    built-in ``defaults`` come first as layer ``"default"``.  A list key replaces the
    inherited list whole; its append form (``"nvrtc+"``) adds to it.
    """
    items: dict[str, tuple[Any, str]] = {}
    parts: dict[str, list[tuple[str, tuple]]] = {}
    replaced: list[Replaced] = []
    archs: tuple[str, ...] = ()
    for name, cfg in (("default", defaults), *layers):
        for key, value in validate(cfg).items():
            if key == "arch":       # an arch list: its first arch, the list beside
                archs = tuple(value) if isinstance(value, list) else ()
                value = archs[0] if archs else value
            if key in APPEND_KEYS:
                key, flags = APPEND_KEYS[key], tuple(value)
                parts.setdefault(key, []).append((name, flags))
                joined = " + ".join(dict.fromkeys(layer for layer, _ in parts[key]))
                items[key] = (items.get(key, ((),))[0] + flags, joined)
                continue
            if key in LIST_KEYS:
                value = tuple(value)
                old = items.get(key)
                dropped = tuple(f for f in old[0] if f not in value) if old else ()
                replaced = [r for r in replaced if r.key != key]
                if dropped:
                    replaced.append(Replaced(key, name, old[1], old[0], dropped))
                parts[key] = [(name, value)]
            items[key] = (value, name)
    if items.get("compiler", (None,))[0] == "nvrtc" and items.get("target_format", (None,))[0] == "fatbin":
        _fail("NVRTC cannot produce 'fatbin' (set by layer "
              f"{items['target_format'][1]!r}): use target_format cubin or ptx, or compiler nvcc",
              "target_format")
    return Resolved(tuple((k, v, lay) for k, (v, lay) in sorted(items.items())),
                    tuple((k, tuple(p)) for k, p in sorted(parts.items()) if len(p) > 1),
                    tuple(replaced), archs)


# ---- presets: the named defaults layer ------------------------------------

_PRESETS: dict[str, str] = {}   # name -> canonical JSON
_PRESETS_LOCK = threading.Lock()
_BUILTIN: frozenset[str] = frozenset()   # names shipped with cuda-magic (set below)


def _preset_text(name: str, config: Mapping) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > 64:
        _fail(f"preset name must be a plain name of at most 64 characters, not {quote(name)}")
    return canonical_json(config)


def _preset_change(name: str, text: str, override: bool) -> str | None:
    """The canonical JSON that ``name`` has now if registering ``text`` changes it (None: a new
    name or the identical declaration); raises if the change is not allowed.  Holds no lock."""
    old = _PRESETS.get(name)
    if old is None or old == text:
        return None
    if name in _BUILTIN:
        _fail(f"preset {name!r} is built in and cannot be given a different declaration "
              f"(it is {old}, not {text}); register yours under another name, e.g. 'my_{name}'")
    if not override:
        _fail(f"preset {name!r} is already registered with a different declaration "
              f"(now {old}, new {text}); pass override=True to replace it")
    return old


def check_preset(name: str, config: Mapping, *, override: bool = False
                 ) -> tuple[BackendConfig | None, BackendConfig]:
    """What ``register_preset(name, config, override=override)`` would do, without doing it:
    ``(declaration it would replace or None, the new declaration)``.  Raises what it would."""
    text = _preset_text(name, config)
    with _PRESETS_LOCK:
        old = _preset_change(name, text, override)
    return (None if old is None else json.loads(old)), json.loads(text)


def register_preset(name: str, config: Mapping, *, override: bool = False) -> BackendConfig | None:
    """Register a named preset (a config layer between defaults and session).

    Registering the identical config again is a no-op; a different config
    under an existing name is an error that shows both declarations unless
    ``override=True``.  The built-in presets (ampere, ada, hopper, blackwell,
    precise, nvcc) cannot be redefined, even with ``override=True``: a notebook
    that says ``--preset hopper`` means the same thing everywhere.

    Returns the declaration it replaced, or ``None`` (a new name, or no change).
    """
    text = _preset_text(name, config)
    with _PRESETS_LOCK:
        old = _preset_change(name, text, override)
        _PRESETS[name] = text
    return None if old is None else json.loads(old)


def get_preset(name: str) -> BackendConfig:
    """A copy of preset ``name``; an error lists the known names."""
    with _PRESETS_LOCK:
        text = _PRESETS.get(name)
        known = ", ".join(sorted(_PRESETS))
    if text is None:
        _fail(f"unknown preset {quote(name)}; known presets: {known}")
    return json.loads(text)


def list_presets() -> dict[str, BackendConfig]:
    """A copy of all presets, by name."""
    with _PRESETS_LOCK:
        return {name: json.loads(text) for name, text in sorted(_PRESETS.items())}


for _name, _cfg in {
    "ampere": {"arch": "sm_80"},
    "ada": {"arch": "sm_89"},
    "hopper": {"arch": "sm_90a"},
    "blackwell": {"arch": "sm_100a"},
    "precise": {"nvrtc": [], "nvcc": []},
    "nvcc": {"compiler": "nvcc"},
}.items():
    register_preset(_name, _cfg)
_BUILTIN = frozenset(_PRESETS)
