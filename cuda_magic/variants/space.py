"""The space of a sweep: parameters, their values, what each does in a cell, and the recipe
(flags, toggles, template instances) of each build.  Pure data over the cell's text; see
:mod:`cuda_magic.variants.tune` for the rules."""

from __future__ import annotations

import math
import numbers
import re
import shlex
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .. import cell
from ..cell import header_yaml
from ..cell.scan import blank
from ..config import Resolved
from .toggles import set_toggle
from ..errors import TuneError, TuneRunError, clip, quote

__all__ = ["TuneError", "TuneRunError", "parse_space", "classify", "Parameter", "Recipe", "recipe_of",
           "MAX_CANDIDATES", "MAX_VALUES", "KINDS", "label", "c_text", "load_value"]

MAX_CANDIDATES = 4096         # combinations a space may have (before --where)
MAX_VALUES = 1024             # values of one parameter
LAUNCH_NAMES = ("block", "grid", "shared")
TOGGLE_NAMES = {"ftz": "ftz", "fast_math": "fast-math", "prec_div": "prec-div",
                "prec_sqrt": "prec-sqrt", "fmad": "fmad"}
FLAG_NAMES = ("maxrreg", "maxrregcount", "flags", *TOGGLE_NAMES)
KINDS = ("template", "macro", "flag", "launch")
_NAME = re.compile(r"(-D)?([A-Za-z_]\w*)")


# ---------------------------------------------------------------------------- the space

def _plain(v):
    """A NumPy scalar as the Python value it stands for (``np.int64(3)`` -> ``3``)."""
    kind = getattr(getattr(v, "dtype", None), "kind", None)
    if kind == "b" and not isinstance(v, bool):
        return bool(v)
    if isinstance(v, numbers.Integral) and not isinstance(v, (bool, int)):
        return int(v)
    if isinstance(v, numbers.Real) and not isinstance(v, (bool, int, float)) and kind == "f":
        return float(v)
    return v


def _value(name: str, v):
    v = _plain(v)
    if isinstance(v, str) and v.strip().lower() in ("none", "null", "~"):
        return None
    if v is None or isinstance(v, (bool, int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            raise TuneError(f"tune parameter {name!r}: {v} is no value a kernel can take", name)
        return v
    if isinstance(v, str):
        if not v or len(v) > 200 or not v.isprintable():
            raise TuneError(f"tune parameter {name!r}: the value {quote(v, 40)} is not one "
                            f"printable line of 1 to 200 characters", name)
        return v
    raise TuneError(f"tune parameter {name!r}: a value is a number, true/false, none or a word "
                    f"(a type, a flag), not {type(v).__name__} {quote(v, 40)}", name)


def _values(name: str, raw) -> tuple:
    if getattr(raw, "ndim", None) == 1 and hasattr(raw, "tolist"):    # a NumPy array of values
        raw = raw.tolist()
    if isinstance(raw, (list, tuple, range)):
        try:
            n = len(raw)               # before anything is built: range(10**9) stays a range
        except OverflowError:          # a range longer than sys.maxsize
            n = None
        if n is None or n > MAX_VALUES:
            raise TuneError(f"tune parameter {name!r} has {'too many' if n is None else n} "
                            f"values; at most {MAX_VALUES}", name)
    items = list(raw) if isinstance(raw, (list, tuple, range)) else [raw]
    if not items:
        raise TuneError(f"tune parameter {name!r} has no values: give at least one, e.g. "
                        f"{name}=[64, 128]", name)
    out = tuple(_value(name, v) for v in items)
    seen = set()
    for v in out:
        key = (type(v).__name__, v)
        if key in seen:
            raise TuneError(f"tune parameter {name!r} lists {v!r} twice", name)
        seen.add(key)
    return out


def load_value(name: str, text: str):
    bad = next((c for c in text if c == "\0" or "\ud800" <= c <= "\udfff"), None)
    if bad is not None:      # YAML's reader refuses them before parsing: say which, here
        raise TuneError(f"tune parameter {name!r}: {quote(text, 60)} holds "
                        f"{'a NUL' if bad == chr(0) else 'a lone surrogate'} "
                        f"({ascii(bad)}): a value is one printable line", name)
    value, _, problem = header_yaml.load(text)
    if problem is not None:
        raise TuneError(f"tune parameter {name!r}: cannot read {quote(text, 60)} "
                        f"({clip(problem[0], 80)}); write a list, e.g. {name}=[64, 128]", name)
    return value


_RANGE = re.compile(r"range\(\s*([-+]?\d+)\s*(?:,\s*([-+]?\d+)\s*)?(?:,\s*([-+]?\d+)\s*)?\)")
_RANGE_DIGITS = 18            # a bound of range() in --space: at most this many digits


def _range(name: str, text: str, m) -> range:
    """``range(...)`` of ``--space``: its bounds capped before any use, a step of 0 refused."""
    for x in m.groups():
        if x is not None and len(x.lstrip("+-")) > _RANGE_DIGITS:
            raise TuneError(f"tune parameter {name!r}: {quote(text, 60)}: a bound of range() has "
                            f"at most {_RANGE_DIGITS} digits", name)
    a, b, c = (int(x) if x is not None else None for x in m.groups())
    if c == 0:
        raise TuneError(f"tune parameter {name!r}: {quote(text, 60)}: the step of range() "
                        f"cannot be 0", name)
    return range(a) if b is None else range(a, b, 1 if c is None else c)


def _split(spec: str) -> list[tuple[str, str]]:
    """``"BM=[64, 128] block=256"`` -> ``[("BM", "[64, 128]"), ("block", "256")]``."""
    out, i, n = [], 0, len(spec)
    while i < n:
        if spec[i].isspace() or spec[i] == ",":
            i += 1
            continue
        eq = spec.find("=", i)
        name = spec[i:eq].strip() if eq > 0 else spec[i:].strip()
        if eq < 0 or not _NAME.fullmatch(name):
            word = spec[i:].split(None, 1)[0]
            raise TuneError(f"--space {quote(word, 60)}: write each parameter as NAME=[v1, v2, ...]"
                            f", e.g. --space \"BM=[64, 128] block=[128, 256]\"")
        j = eq + 1
        depth, quote_char = 0, ""
        while j < n:
            c = spec[j]
            if quote_char:
                quote_char = "" if c == quote_char else quote_char
            elif c in "\"'":
                quote_char = c
            elif c in "[(":
                depth += 1
            elif c in "])":
                depth -= 1
            elif c.isspace() and depth <= 0:
                break
            j += 1
        value = spec[eq + 1:j].strip()
        if not value or depth > 0 or quote_char:
            raise TuneError(f"--space: parameter {name!r} has "
                            f"{'no values' if not value else 'an unclosed bracket or quote'}: "
                            f"write {name}=[v1, v2, ...]", name.removeprefix("-D"))
        out.append((name, value))
        i = j
    return out


def parse_space(spec) -> dict[str, tuple]:
    """A space as ``{name: (values...)}`` (insertion order kept), from the ``--space`` text
    (``"BM=[64,128] maxrreg=[none,128] block=range(64, 513, 64)"``) or a mapping
    (``{"BM": [64, 128]}``, the ``//| tune:`` form).  A name written ``-DNAME`` is kept so,
    marking a macro.  Errors name the parameter."""
    if spec is None:
        return {}
    if isinstance(spec, str):
        if len(spec) > 20000:
            raise TuneError(f"--space is {len(spec)} characters; at most 20000")
        items = []
        for name, text in _split(spec):
            bare = name.removeprefix("-D")
            m = _RANGE.fullmatch(text)
            if m:
                r = _range(bare, text, m)
                if len(r) > MAX_VALUES:
                    raise TuneError(f"tune parameter {bare!r}: {text} has {len(r)} values; at "
                                    f"most {MAX_VALUES}", bare)
                items.append((name, list(r)))
            elif text.startswith("range"):
                raise TuneError(f"tune parameter {bare!r}: write range(start, stop[, step]) with "
                                f"integers, not {quote(text, 60)}", bare)
            else:
                items.append((name, load_value(bare, text)))
    elif isinstance(spec, Mapping):
        items = list(spec.items())
    else:
        raise TuneError(f"a space is 'NAME=[values] ...' text or a dict, not {type(spec).__name__}")
    out: dict[str, tuple] = {}
    for name, raw in items:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise TuneError(f"tune parameter {quote(name, 40)}: a name is a C identifier "
                            f"(optionally written -DNAME for a macro)")
        bare = name.removeprefix("-D")
        if any(k.removeprefix("-D") == bare for k in out):
            raise TuneError(f"tune parameter {bare!r} is given twice", bare)
        if isinstance(raw, Mapping) or (isinstance(raw, (list, tuple)) and
                                        any(isinstance(v, (list, tuple, Mapping)) for v in raw)):
            raise TuneError(f"tune parameter {bare!r}: give a flat list of values, e.g. "
                            f"{bare}=[64, 128]", bare)
        out[name] = _values(bare, raw)
    count = math.prod(len(v) for v in out.values()) if out else 0
    if count > MAX_CANDIDATES:
        raise TuneError(f"the space has {count} combinations "
                        f"({' x '.join(str(len(v)) for v in out.values())}); at most "
                        f"{MAX_CANDIDATES}: give fewer values, or split the sweep")
    return out


@dataclass(frozen=True)
class Parameter:
    """One parameter of the space: its values and what it does (:data:`KINDS`)."""

    name: str
    values: tuple
    kind: str
    kernels: tuple = ()      # template kernels it is an argument of


def classify(space: Mapping[str, tuple], parsed: cell.ParsedCell) -> list[Parameter]:
    """What each parameter of ``space`` does in this cell (see the module's docstring)."""
    code = blank(parsed.source)
    templates = [d for d in parsed.kernels if d.template]
    out = []
    for raw, values in space.items():
        name = raw.removeprefix("-D")
        owners = tuple(d.qualified for d in templates if name in d.template)
        if raw.startswith("-D"):
            kind = "macro"
        elif owners:
            kind = "template"
        elif name in FLAG_NAMES:
            kind = "flag"
        elif name in LAUNCH_NAMES or not re.search(rf"\b{re.escape(name)}\b", code):
            kind = "launch"
        else:
            kind = "macro"
        _check_kind(name, kind, values)
        out.append(Parameter(name, values, kind, owners))
    return out


def _check_kind(name: str, kind: str, values: tuple) -> None:
    if kind == "template" and any(v is None for v in values):
        raise TuneError(f"tune parameter {name!r} is a template argument: 'none' is no value "
                        f"for it", name)
    if kind != "flag":
        return
    for v in values:
        if name in ("maxrreg", "maxrregcount"):
            ok = v is None or (isinstance(v, int) and not isinstance(v, bool) and 16 <= v <= 255)
            want = "none or a register count from 16 to 255"
        elif name == "flags":
            ok = v is None or isinstance(v, str)
            want = "none or a string of flags, e.g. \"-lineinfo --extra-device-vectorization\""
        else:
            ok = v is None or isinstance(v, bool)
            want = "true, false or none"
        if not ok:
            raise TuneError(f"tune parameter {name!r}: {v!r} is not {want}", name)


# ---------------------------------------------------------------------------- candidates

def c_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def label(params: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={'none' if v is None else c_text(v)}" for k, v in params.items())


@dataclass(frozen=True)
class Recipe:
    """How one build of the sweep differs from the cell: flags appended, toggles set, template
    instances; ``layer`` names it (``tune:BM=64,maxrreg=128``)."""

    layer: str
    flags: tuple = ()
    toggles: tuple = ()            # (toggle, on)
    instances: tuple = ()          # ("gemm<64, 128>", ...)
    templates: tuple = ()          # ((kernel qualified name, its instance spelling), ...)

    def adjust(self, resolved: Resolved) -> Resolved:
        key = resolved["compiler"]
        if self.toggles:
            flags = resolved.get(key, [])
            for name, on in self.toggles:
                flags = set_toggle(flags, name, on)
            return resolved.with_value(key, [*flags, *self.flags], self.layer)
        if self.flags:
            return resolved.appended(key, list(self.flags), self.layer)
        return resolved


def recipe_of(params: Sequence[Parameter], values: Mapping[str, Any], parsed: cell.ParsedCell) -> Recipe:
    compiled = {p.name: values[p.name] for p in params if p.kind != "launch"}
    flags, toggles = [], []
    for p in params:
        v = values[p.name]
        if p.kind == "macro" and v is not None:
            flags.append(f"-D{p.name}={int(v) if isinstance(v, bool) else v}")
        elif p.kind == "flag" and v is not None:
            if p.name in ("maxrreg", "maxrregcount"):
                flags.append(f"--maxrregcount={v}")
            elif p.name == "flags":
                try:
                    flags.extend(shlex.split(v))
                except ValueError as exc:
                    raise TuneError(f"tune parameter 'flags': {quote(v, 60)}: {exc}", "flags") from None
            else:
                toggles.append((TOGGLE_NAMES[p.name], bool(v)))
    instances, templates = [], []
    for d in parsed.kernels:
        if not d.template or not any(n in compiled for n in d.template):
            continue
        args = []
        tps = list(zip(d.template, d.template_defaults or (None,) * len(d.template)))
        last = max(i for i, (n, _) in enumerate(tps) if n in compiled)
        for i, (n, default) in enumerate(tps):
            if n in compiled:
                args.append(c_text(compiled[n]))
            elif default is None:
                raise TuneError(f"kernel '{d.qualified}': template parameter {n!r} is not in the "
                                f"space and has no default: add it, e.g. {n}=[...]", n)
            elif i < last:
                args.append(default)
        spelling = f"{d.qualified}<{', '.join(args)}>"
        instances.append(spelling)
        templates.append((d.qualified, spelling))
    return Recipe(f"tune:{label(compiled)}" if compiled else "tune", tuple(flags), tuple(toggles),
                  tuple(instances), tuple(templates))
