"""Configuration: schema, validation, defaults, presets, layering with provenance.

Pure data, no CUDA. Semantics follow TVM's CUDA ``backend_config``:

* six optional keys (see :class:`BackendConfig`);
* layers from lowest to highest: ``default`` < ``preset:NAME`` < ``session``
  < ``cell`` < ``kernel:NAME``; a list replaces the inherited list whole and
  ``[]`` clears it; ``None`` and ``{}`` add nothing;
* every boundary snapshots its input, so later mutation of the caller's dict
  changes nothing already built;
* canonical JSON (sorted keys, compact) is the cache key: key order is
  ignored, argument order is kept.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any, Mapping, TypedDict

__all__ = [
    "Error", "BackendConfig", "ConfigError", "Resolved", "KEYS", "LIST_KEYS", "FORMATS",
    "DEFAULTS", "TARGET", "validate", "parse_backend_config", "resolve",
    "canonical_json", "from_json", "register_preset", "get_preset", "list_presets",
]


class BackendConfig(TypedDict, total=False):
    """The CUDA backend configuration; every key is optional."""

    arch: str            # sm_<digits>[a|f], e.g. "sm_90a"
    compiler: str        # "nvrtc" | "nvcc"
    target_format: str   # "ptx" | "cubin" | "fatbin" (NVRTC cannot make fatbin)
    nvcc: list[str]      # native nvcc flags, one per item
    nvrtc: list[str]     # native NVRTC flags, one per item
    ptxas: list[str]     # ptxas flags, one per item


class Error(Exception):
    """Base of cuda-magic's errors.

    In IPython they show the message and the user's own frames only, not the
    frames inside cuda-magic or IPython (``_render_traceback_`` is IPython's hook).
    """

    def _render_traceback_(self) -> list[str]:
        import os
        import traceback
        here = os.path.dirname(os.path.abspath(__file__)) + os.sep
        frames = [f for f in traceback.extract_tb(self.__traceback__)
                  if not f.filename.startswith(here) and f"{os.sep}IPython{os.sep}" not in f.filename]
        lines = traceback.format_list(frames) + traceback.format_exception_only(type(self), self)
        return "".join(lines).rstrip("\n").split("\n")


class ConfigError(Error, ValueError):
    """A bad configuration; ``key`` names the offending key when there is one."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


TARGET = "cuda"
KEYS = ("arch", "compiler", "target_format", "nvcc", "nvrtc", "ptxas")
LIST_KEYS = ("nvcc", "nvrtc", "ptxas")
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
         "-E", "--preprocess", "-lib", "--lib", "-dlink", "--device-link", "-dlto",
         "--dlink-time-opt", "--optix-ir", "-optix-ir"], _OUT_HELP),
    **dict.fromkeys(
        ["-optf", "--options-file", "-options-file"],
        "give one flag per list item instead of an options file"),
    **dict.fromkeys(
        ["-Xptxas", "--ptxas-options", "-ptxas-options"],
        "ptxas flags go in the 'ptxas' key, one per item"),
}


def _fail(msg: str, key: str | None = None) -> None:
    raise ConfigError(msg, key)


def _check_flag(key: str, item: str) -> None:
    head = item.strip().split(None, 1)[0] if item.strip() else ""
    head = head.split("=", 1)[0]
    if head in RESERVED:
        _fail(f"{key!r}: flag {item!r} is reserved: {RESERVED[head]}", key)


def _check_list(key: str, value: Any) -> list[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        _fail(f"{key!r} must be a list of flags, one per item "
              f"(e.g. [\"--use_fast_math\"]), not {type(value).__name__} {value!r}", key)
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            _fail(f"{key!r}[{i}] must be a string flag, not {type(item).__name__} {item!r}", key)
        if not item.strip():
            _fail(f"{key!r}[{i}] is an empty flag", key)
        _check_flag(key, item)
        out.append(item)
    return out


def _unwrap(cfg: Mapping) -> Mapping:
    """Accept the nested ``{"cuda": {...}}`` form; reject other backend names."""
    if set(cfg) & set(KEYS):
        return cfg
    # beside "cuda" every name is a backend; alone, a name mapping to a dict is one
    others = [name for name, inner in cfg.items()
              if name != TARGET and (TARGET in cfg or isinstance(inner, Mapping))]
    if others:
        _fail(f"unknown backend {others[0]!r}: only {TARGET!r} is supported "
              f"(write {{\"{TARGET}\": {{...}}}})")
    if TARGET not in cfg:
        return cfg
    inner = cfg[TARGET]
    if inner is None:
        return {}
    if not isinstance(inner, Mapping):
        _fail(f"'{TARGET}' must map to a config dict, not {type(inner).__name__}")
    return inner


def validate(cfg: Mapping | None) -> BackendConfig:
    """Check one layer and return a snapshot of it.

    Takes the flat form ``{"arch": ...}`` or the nested ``{"cuda": {...}}``;
    ``None`` and ``{}`` give ``{}``.  Keys whose value is ``None`` are dropped
    (they set nothing).  Raises :class:`ConfigError` naming the key.
    """
    if cfg is None:
        return {}
    if not isinstance(cfg, Mapping):
        _fail(f"a config must be a dict, not {type(cfg).__name__} {cfg!r}")
    cfg = _unwrap(cfg)
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if key not in KEYS:
            _fail(f"unknown config key {key!r}; the keys are {', '.join(KEYS)}", str(key))
        if value is None:
            continue
        if key in LIST_KEYS:
            out[key] = _check_list(key, value)
        elif not isinstance(value, str):
            _fail(f"{key!r} must be a string, not {type(value).__name__} {value!r}", key)
        elif key == "arch" and not _ARCH.fullmatch(value):
            _fail(f"'arch' must look like sm_90, sm_90a or sm_100f, not {value!r}", key)
        elif key == "target_format" and value not in FORMATS:
            _fail(f"'target_format' must be one of {', '.join(FORMATS)}, not {value!r}", key)
        elif key == "compiler" and not _NAME.fullmatch(value):
            _fail(f"'compiler' must be a compiler name such as nvrtc or nvcc, not {value!r}", key)
        else:
            out[key] = value
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
        try:
            obj = json.loads(obj)
        except json.JSONDecodeError as e:
            _fail(f"backend config is not valid JSON: {e}")
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        _fail(f"backend config must be a dict like {{\"{TARGET}\": {{...}}}}, "
              f"not {type(obj).__name__}")
    for name in obj:
        if name in KEYS:
            _fail(f"{name!r} is a config key, not a backend name: backend config maps "
                  f"backends to configs, e.g. {{\"{TARGET}\": {{\"{name}\": ...}}}}", name)
        if name != TARGET:
            _fail(f"unknown backend {name!r}: only {TARGET!r} is supported")
    return validate(obj)


def canonical_json(cfg: Mapping | None) -> str:
    """Canonical JSON of a config: sorted keys, compact, lists in order."""
    return json.dumps(validate(cfg), sort_keys=True, separators=(",", ":"))


def from_json(text: str) -> BackendConfig:
    """Parse JSON (flat or nested form) and validate it."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"config is not valid JSON: {e}") from None
    return validate(obj)


@dataclass(frozen=True)
class Resolved:
    """A fully layered config: each key's value and the layer that set it.

    ``config`` and ``provenance`` return fresh copies.
    """

    _items: tuple  # ((key, value-as-tuple-or-str, layer), ...) sorted by key

    @property
    def config(self) -> BackendConfig:
        return {k: list(v) if isinstance(v, tuple) else v for k, v, _ in self._items}  # type: ignore

    @property
    def provenance(self) -> dict[str, str]:
        return {k: layer for k, _, layer in self._items}

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
        """A copy with ``key`` set to ``value`` by ``layer`` (validated)."""
        checked = validate({key: value})
        items = {k: (v, lay) for k, v, lay in self._items}
        if key in checked:
            v = checked[key]  # type: ignore[literal-required]
            items[key] = (tuple(v) if isinstance(v, list) else v, layer)
        else:
            items.pop(key, None)
        return Resolved(tuple((k, v, lay) for k, (v, lay) in sorted(items.items())))

    def json(self) -> str:
        """Canonical JSON of the resolved values (the cache key part)."""
        return json.dumps(self.config, sort_keys=True, separators=(",", ":"))

    def __repr__(self) -> str:
        rows = ", ".join(f"{k}={v!r} [{layer}]" for k, v, layer in self._items)
        return f"Resolved({rows})"


def resolve(*layers: tuple[str, Mapping | None], defaults: Mapping | None = DEFAULTS) -> Resolved:
    """Layer configs lowest first and record which layer set each key.

    ``layers`` are ``(layer_name, config)`` pairs, e.g.
    ``("preset:hopper", {...}), ("session", {...}), ("cell", {...})``; the
    built-in ``defaults`` come first as layer ``"default"``.
    """
    items: dict[str, tuple[Any, str]] = {}
    for name, cfg in (("default", defaults), *layers):
        for key, value in validate(cfg).items():
            items[key] = (tuple(value) if isinstance(value, list) else value, name)
    if items.get("compiler", (None,))[0] == "nvrtc" and items.get("target_format", (None,))[0] == "fatbin":
        _fail("NVRTC cannot produce 'fatbin' (set by layer "
              f"{items['target_format'][1]!r}): use target_format cubin or ptx, or compiler nvcc",
              "target_format")
    return Resolved(tuple((k, v, lay) for k, (v, lay) in sorted(items.items())))


# ---- presets: the named defaults layer ------------------------------------

_PRESETS: dict[str, str] = {}   # name -> canonical JSON
_PRESETS_LOCK = threading.Lock()


def register_preset(name: str, config: Mapping, *, override: bool = False) -> None:
    """Register a named preset (a config layer between defaults and session).

    Registering the identical config again is a no-op; a different config
    under an existing name is an error unless ``override=True``.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        _fail(f"preset name must be a plain name, not {name!r}")
    text = canonical_json(config)
    with _PRESETS_LOCK:
        old = _PRESETS.get(name)
        if old is not None and old != text and not override:
            _fail(f"preset {name!r} is already registered with a different declaration "
                  f"({old}); pass override=True to replace it")
        _PRESETS[name] = text


def get_preset(name: str) -> BackendConfig:
    """A copy of preset ``name``; an error lists the known names."""
    with _PRESETS_LOCK:
        text = _PRESETS.get(name)
        known = ", ".join(sorted(_PRESETS))
    if text is None:
        _fail(f"unknown preset {name!r}; known presets: {known}")
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
