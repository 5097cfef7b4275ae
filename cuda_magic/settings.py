"""Every cuda-magic setting in one place: its default, its environment variable, what it does.

Read a setting as an attribute of this module and set it the same way; a value set is
checked at once and takes effect at once::

    import cuda_magic
    cuda_magic.settings.pch_limit             # in force: the value set, else $CUDA_MAGIC_PCH_LIMIT, else 2 GiB
    cuda_magic.settings.pch_limit = 1 << 30   # what cuda_magic.compile.pch.set_limit(1 << 30) does
    cuda_magic.settings.reset("pch_limit")    # back to the environment variable, else the default
    with cuda_magic.settings.override(plan_launch="bindings"):
        ...                                   # restored when the block ends

A value set from Python wins over the environment variable.  Each variable is read when the
setting is used, except those read once, when cuda-magic is imported (the compile cache is
built then; a bad value there warns and the default is used, so the import never fails).
:func:`describe` prints the table.  The older setters (``set_cache_dir``, ``set_cache_limit``,
``set_compile_timeout``, ``compile.pch.set_limit``) and ``%config CudaMagics.cache_dir`` set
these.  This is the one module that reads ``CUDA_MAGIC_*`` variables (a test checks).
"""

from __future__ import annotations

import os
import re
import sys
import types
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .config import ConfigError
from .errors import quote

__all__ = ["Setting", "TABLE", "get", "put", "reset", "override", "watch", "source", "describe",
           "TOOL_CHILD", "in_tool_child"]

_UNSET = object()
_OFF = ("", "0", "none", "off")


@dataclass(frozen=True)
class Setting:
    """One setting.  ``check(value, where)`` checks a value set from Python and raises
    :class:`ConfigError` naming ``where`` (the setter or its parameter); ``parse(text, env)``
    reads the environment variable's text (default: ``check``); ``default`` may be a function
    (computed at each use)."""
    name: str
    env: str
    default: Any
    check: Callable[[Any, str], Any]
    doc: str
    parse: Callable[[str, str], Any] | None = None
    at_import: bool = False         # the variable is read once, when cuda-magic is imported

    def default_value(self) -> Any:
        return self.default() if callable(self.default) else self.default


# ---- how values are checked ---------------------------------------------------------------

def _limit(what: str) -> Callable[[Any, str], float | None]:
    """The check of a time limit in seconds: a number > 0, or None (``None``, ``0``, ``""``,
    ``"none"``, ``"off"``: no limit); ``what`` names it in the error."""
    def check(value, where: str) -> float | None:
        if value is None or (isinstance(value, str) and value.strip().lower() in _OFF):
            return None
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: the {what} is a number of seconds (or None for no "
                              f"limit), not {value!r}", "timeout") from None
        if not seconds >= 0 or seconds == float("inf"):      # NaN, negative, inf
            raise ConfigError(f"{where}: the {what} must be a positive number of seconds (or "
                              f"None for no limit), not {value!r}", "timeout")
        return seconds or None
    return check


_seconds = _limit("compile time limit")


def count(value, where: str, type_error: type[Exception] = ConfigError) -> int:
    """``value`` checked as a whole number >= 0 (bytes, seconds): the one check for every count a
    setting or a setter takes (the compile cache raises ``InputTypeError`` for a non-int)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise type_error(f"{where} must be a whole number >= 0, not {quote(value, 60)}")
    if value < 0:
        raise ConfigError(f"{where} must be >= 0, not {value}")
    return value



def _count_text(text: str, env: str) -> int:
    try:
        return count(int(text.strip()), env)
    except ValueError:
        raise ConfigError(f"{env} must be a whole number >= 0, not {text!r}") from None


def _as_given(value, where: str) -> Any:
    """Checked by the module that applies it (the compile cache: its own errors)."""
    return value


def _switch(value, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() not in ("0", "off", "false", "no")
    raise ConfigError(f"{where} is True or False, not {value!r}")


def _directory(value, where: str) -> str | None:
    if value is None or value == "":
        return None
    try:
        return os.fspath(value)
    except TypeError:
        raise ConfigError(f"{where}: a directory path (or None), not {value!r}") from None


def _address(value, where: str) -> str | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    if not isinstance(value, str) or not re.fullmatch(r"(\w+://)?[\w.\-\[\]:]+:\d+", value.strip()):
        raise ConfigError(f"{where}: a Dask scheduler address such as tcp://gpu-box:8786 (or "
                          f"None), not {value!r}")
    return value.strip()


def _plan(value, where: str) -> str:
    if value not in ("auto", "bindings"):
        raise ConfigError(f"{where}: 'auto' or 'bindings', not {value!r}")
    return value


def _pch_home() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cuda-magic", "pch")


# ---- the table ---------------------------------------------------------------------------

TABLE: dict[str, Setting] = {s.name: s for s in (
    Setting("cache_dir", "CUDA_MAGIC_CACHE_DIR", None, _directory, at_import=True, doc=
            "Also keep compiled binaries on disk here (None: memory only).  A directory that "
            "does not exist is created 0700; one that is not this user's or that others can "
            "write warns and is not used (docs/cache.md).  Setter: set_cache_dir."),
    Setting("cache_limit", "CUDA_MAGIC_CACHE_LIMIT", 256 * 2**20, _as_given,
            parse=_count_text, at_import=True, doc=
            "Bytes the in-memory compile cache keeps (least recently used out first; 0 keeps "
            "nothing).  Setter: set_cache_limit."),
    Setting("compile_timeout", "CUDA_MAGIC_COMPILE_TIMEOUT", None, _seconds, doc=
            "Give up a compile after this many seconds (None, 0 or 'none': no limit).  nvcc's "
            "processes are killed; an NVRTC compile is abandoned.  Setter: set_compile_timeout."),
    Setting("launch_timeout", "CUDA_MAGIC_LAUNCH_TIMEOUT", 60.0, _limit("launch time limit"),
            doc="A kernel still running after this many seconds is a hang: the wait that sees "
            "it raises KernelHangError (which lists where the warps wait, read with cuda-gdb), "
            "and a launch that returned at once (CuPy, PyTorch, streams) is reported by the "
            "watchdog (None, 0 or 'none': no limit; Ctrl-C works either way).  Setter: "
            "set_launch_timeout; %config CudaMagics.launch_timeout."),
    Setting("remote", "CUDA_MAGIC_REMOTE", None, _address, doc=
            "Run launches on a GPU of the Dask cluster at this scheduler address "
            "(tcp://host:8786; None or '': here).  Applied by the next %%cuda cell, or at once "
            "by %cuda_config --remote; cuda_magic.remote() takes a Client too (docs/remote.md)."),
    Setting("pch", "CUDA_MAGIC_PCH", True, _switch, doc=
            "Use NVRTC precompiled headers for cells that start with heavy #includes "
            "(0, off, false or no: never)."),
    Setting("pch_dir", "CUDA_MAGIC_PCH_DIR", _pch_home, _directory, doc=
            "Where the precompiled headers live (default $XDG_CACHE_HOME/cuda-magic/pch, else "
            "~/.cache/cuda-magic/pch; created 0700, used only if this user's and not writable "
            "by others, checked at each compile: otherwise a warning, once, and no PCH)."),
    Setting("pch_limit", "CUDA_MAGIC_PCH_LIMIT", 2 << 30, count, parse=_count_text, doc=
            "Bytes the precompiled header directory keeps (least recently used out first).  "
            "Setter: compile.pch.set_limit."),
    Setting("stale_tmp_seconds", "CUDA_MAGIC_STALE_TMP_SECONDS", 300, count,
            parse=_count_text, doc=
            "The disk cache's own temporary files older than this (an interrupted write) are "
            "removed when the directory is opened."),
    Setting("static_sass", "CUDA_MAGIC_STATIC_SASS", False, _switch, doc=
            "Also put the start of each kernel's SASS into the static HTML of every displayed "
            "cell, the view a saved notebook and nbconvert show (runs nvdisasm for every cell "
            "instead of when the SASS tab is opened).  %config CudaMagics.static_sass sets it; "
            "notebooks/run.py turns it on for the notebooks it runs."),
    Setting("plan_launch", "CUDA_MAGIC_PLAN_LAUNCH", "auto", _plan, doc=
            "The launch plan's last call: 'auto' is CuPy's launchKernel where CuPy is already "
            "loaded, else cuda.bindings' cuLaunchKernel; 'bindings' is always cuda.bindings'.  "
            "Read at each kernel's first launch."),
)}

# Not a setting: set by cuda-magic in the helper process that runs under ncu/compute-sanitizer.
TOOL_CHILD = "CUDA_MAGIC_TOOL_CHILD"

_values: dict[str, Any] = {}          # set from Python
_read_once: dict[str, Any] = {}       # the at_import settings' environment values
_watchers: dict[str, list[Callable[[Any], None]]] = {}


def _setting(name: str) -> Setting:
    try:
        return TABLE[name]
    except KeyError:
        raise ConfigError(f"no setting {name!r}; the settings are {', '.join(TABLE)}", name) from None


def _from_env(s: Setting) -> Any:
    text = os.environ.get(s.env)
    if text is None or not text.strip():
        return _UNSET
    parse = s.parse or s.check
    if not s.at_import:
        return parse(text, s.env)
    if s.name not in _read_once:
        try:
            _read_once[s.name] = parse(text, s.env)
        except ConfigError as exc:
            warnings.warn(f"cuda-magic: ignoring {s.env} ({exc}); using the default",
                          RuntimeWarning, stacklevel=2)
            _read_once[s.name] = _UNSET
    return _read_once[s.name]


def get(name: str) -> Any:
    """The value in force: the one set, else the environment variable's, else the default."""
    s = _setting(name)
    if name in _values:
        return _values[name]
    value = _from_env(s)
    return s.default_value() if value is _UNSET else value


def source(name: str) -> str:
    """Where the value in force comes from: ``"set"``, the variable's name, or ``"default"``."""
    s = _setting(name)
    if name in _values:
        return "set"
    return "default" if _from_env(s) is _UNSET else s.env


def put(name: str, value: Any, *, by: str | None = None) -> None:
    """Set ``name`` (checked first; errors name ``by``, e.g. the setter), then tell its
    watchers; if one refuses (raises), the setting keeps its old value."""
    s = _setting(name)
    value = s.check(value, by or f"cuda_magic.settings.{name}")
    old = _values.get(name, _UNSET)
    _values[name] = value
    try:
        for fn in list(_watchers.get(name, ())):
            fn(value)
    except BaseException:
        _restore(name, old)
        raise


def _restore(name: str, old: Any) -> None:
    if old is _UNSET:
        _values.pop(name, None)
    else:
        _values[name] = old


def reset(name: str | None = None) -> None:
    """Forget the value set for ``name`` (None: for every setting): the environment variable
    or the default is in force again (its watchers are told)."""
    for n in ([name] if name is not None else list(_values)):
        _setting(n)
        if _values.pop(n, _UNSET) is not _UNSET:
            for fn in list(_watchers.get(n, ())):
                fn(get(n))


@contextmanager
def override(**values: Any) -> Iterator[None]:
    """Set these settings while the block runs; afterwards each is as it was (set or not)."""
    saved = {n: _values.get(n, _UNSET) for n in values}
    try:
        for n, v in values.items():
            put(n, v)
        yield
    finally:
        for n, old in saved.items():
            if old is _UNSET:
                reset(n)
            else:
                put(n, old)


def watch(name: str, fn: Callable[[Any], None]) -> None:
    """Call ``fn(value)`` whenever ``name`` is set or reset (the module that applies it: the
    compile cache for ``cache_dir``).  ``fn`` may raise to refuse the value."""
    _setting(name)
    _watchers.setdefault(name, []).append(fn)


def describe() -> str:
    """One paragraph per setting: name, variable, default, value in force and where it is from
    (a variable whose text is bad shows as ``<invalid: why>``)."""
    out = []
    for s in TABLE.values():
        default = "computed" if callable(s.default) else repr(s.default)
        try:
            value, where = repr(get(s.name)), source(s.name)
        except ConfigError as exc:      # a bad variable: said, not raised (the table still prints)
            value, where = f"<invalid: {exc}>", s.env
        out.append(f"{s.name} = {value}  ({where}; ${s.env}; default {default}"
                   f"{'; the variable is read at import' if s.at_import else ''})\n    {s.doc}")
    return "\n".join(out)


def in_tool_child() -> bool:
    """Whether this process is the helper cuda-magic runs under ncu or compute-sanitizer."""
    return bool(os.environ.get(TOOL_CHILD))


class _Module(types.ModuleType):
    """``settings.NAME`` reads a setting, ``settings.NAME = value`` sets it, ``del settings.NAME``
    resets it."""

    def __getattr__(self, name: str) -> Any:
        if name in TABLE:
            return get(name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in TABLE:
            put(name, value)
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:      # ``del settings.NAME``: reset(NAME)
        if name in TABLE:
            reset(name)
        else:
            super().__delattr__(name)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *TABLE})


sys.modules[__name__].__class__ = _Module
