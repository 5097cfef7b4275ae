"""Variants of a build for ``%%cuda_compare``: floating-point toggles and named config layers.

Pure data over configs, no compiler.  A :class:`Variant` is applied on top of
a resolved config (after every other layer) and records itself as the layer
``variant:NAME``.  Toggles follow NVRTC's and nvcc's rules: ``--use_fast_math``
implies ``ftz=true, prec-div=false, prec-sqrt=false, fmad=true``, and an
explicit ``--ftz=``/``--prec-div=``/``--prec-sqrt=``/``--fmad=`` wins over it
wherever it stands in the list.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..config import ConfigError, Resolved, canonical_json, check_archs, load_json
from ..errors import bad_char, quote

INPUTS = ("denormal", "random")   # how %%cuda_compare --inputs refills the arrays --run reads

__all__ = ["TOGGLES", "Variant", "state", "set_toggle", "default_variants", "vary", "vary_archs",
           "parse_variant"]

TOGGLES = ("ftz", "prec-div", "prec-sqrt", "fmad", "fast-math")
_FLAG = re.compile(r"^--?(ftz|prec[-_]div|prec[-_]sqrt|fmad)(?:[= ]\s*(\S+))?$")
_FAST = re.compile(r"^--?use[-_]fast[-_]math$")
_BOOL = {"true": True, "1": True, "false": False, "0": False}
_FAST_IMPLIES = {"ftz": True, "prec-div": False, "prec-sqrt": False, "fmad": True}
_PLAIN = {"ftz": False, "prec-div": True, "prec-sqrt": True, "fmad": True}


def _items(flags: Sequence[str]):
    """``(index, toggle, value-or-None, width)`` for each toggle flag in ``flags``.

    ``--ftz=true``, ``-ftz=true``, ``--ftz true`` and the two items ``--ftz``,
    ``true`` all count; ``width`` is how many items the flag spans.
    """
    i = 0
    while i < len(flags):
        item = flags[i].strip()
        m = _FLAG.match(item)
        if _FAST.match(item):
            yield i, "fast-math", True, 1
        elif m:
            name = m.group(1).replace("_", "-")
            value, width = m.group(2), 1
            if value is None and i + 1 < len(flags) and flags[i + 1].strip().lower() in _BOOL:
                value, width = flags[i + 1].strip(), 2
            yield i, name, None if value is None else _BOOL.get(value.lower()), width
            i += width - 1
        i += 1


def state(flags: Sequence[str]) -> dict[str, bool]:
    """The effective value of each toggle under ``flags`` (one compiler's list).

    >>> state(["--use_fast_math", "--ftz=false"])["ftz"], state(["--use_fast_math"])["prec-div"]
    (False, False)
    """
    found = {name: value for _, name, value, _ in _items(flags) if value is not None}
    fast = found.get("fast-math", False)
    out = {name: found.get(name, (_FAST_IMPLIES if fast else _PLAIN)[name]) for name in _PLAIN}
    out["fast-math"] = fast
    return out


def set_toggle(flags: Sequence[str], name: str, on: bool) -> list[str]:
    """``flags`` with toggle ``name`` set explicitly: its flags removed, then ``--NAME=true|false``
    appended (``fast-math``: ``--use_fast_math`` put first, or dropped).  Other flags keep their order.
    """
    if name not in TOGGLES:
        raise ConfigError(f"unknown toggle {name!r}; the toggles are {', '.join(TOGGLES)}")
    drop = set()
    for i, found, _, width in _items(flags):
        if found == name:
            drop.update(range(i, i + width))
    kept = [f for i, f in enumerate(flags) if i not in drop]
    if name == "fast-math":
        return ["--use_fast_math", *kept] if on else kept
    return [*kept, f"--{name}={'true' if on else 'false'}"]


@dataclass(frozen=True)
class Variant:
    """One build of a comparison: a config layer and toggles applied on top of the resolved config.

    ``layer`` is canonical JSON of a flat config (keys set whole, as any layer);
    ``toggles`` are ``(toggle, on)`` pairs applied afterwards to the active
    compiler's list.  Both record the layer ``variant:NAME`` in the provenance.
    """

    name: str
    layer: str = "{}"
    toggles: tuple[tuple[str, bool], ...] = ()

    @classmethod
    def of(cls, name: str, config: Mapping | None = None, **toggles: bool) -> "Variant":
        """``Variant.of("fast", {"nvrtc": [...]})`` or ``Variant.of("ftz", ftz=True, prec_div=False)``."""
        pairs = tuple((k.replace("_", "-"), bool(v)) for k, v in toggles.items())
        for k, _ in pairs:
            if k not in TOGGLES:
                raise ConfigError(f"variant {name!r}: unknown toggle {k!r}; the toggles are "
                                  f"{', '.join(TOGGLES)}")
        try:
            return cls(str(name), canonical_json(config), pairs)
        except ConfigError as exc:
            raise ConfigError(f"variant {name!r}: {exc}", exc.key) from None

    @property
    def config(self) -> dict:
        return json.loads(self.layer)

    def apply(self, resolved: Resolved) -> Resolved:
        """``resolved`` with this variant on top."""
        layer = f"variant:{self.name}"
        for key, value in self.config.items():
            resolved = resolved.with_value(key, value, layer)
        if self.toggles:
            key = resolved["compiler"]
            flags = resolved.get(key, [])
            for name, on in self.toggles:
                flags = set_toggle(flags, name, on)
            resolved = resolved.with_value(key, flags, layer)
        return resolved

    def plus(self, name: str, on: bool) -> "Variant":
        """This variant with one more toggle (a later setting of the same toggle replaces it)."""
        pairs = tuple(p for p in self.toggles if p[0] != name) + ((name, bool(on)),)
        return Variant(self.name, self.layer, pairs)

    def describe(self) -> str:
        parts = [f"{k}={'true' if v else 'false'}" for k, v in self.toggles]
        parts += [f"{k}: {v}" for k, v in self.config.items()]
        return ", ".join(parts) or "the cell's config as resolved"


def default_variants() -> list[Variant]:
    """Fast math with FTZ off, then on: ``--use_fast_math --ftz=false`` vs ``--ftz=true`` (other
    flags in the list are kept)."""
    return [Variant("ftz=false", toggles=(("fast-math", True), ("ftz", False))),
            Variant("ftz=true", toggles=(("fast-math", True), ("ftz", True)))]


def vary(names: Sequence[str], resolved: Resolved) -> list[Variant]:
    """The baseline (``resolved`` as is) and one variant per toggle, flipped from its value there.

    ``arch=sm_80,sm_90a`` instead: one variant per arch, named by it, the first the baseline
    (it takes no toggles beside it: compare toggles on one arch in a cell of their own)."""
    archs = [n for n in names if isinstance(n, str) and n.startswith("arch=")]
    if archs:
        return vary_archs(archs[0][len("arch="):], [n for n in names if n != archs[0]])
    flags = resolved.get(resolved["compiler"], [])
    now = state(flags)
    out = [Variant("baseline")]
    for name in dict.fromkeys(names):
        if name not in TOGGLES:
            raise ConfigError(f"--vary {name}: unknown toggle; choose from {', '.join(TOGGLES)}, "
                          f"or arch=sm_80,sm_90a for one variant per arch")
        on = not now[name]
        out.append(Variant(f"{name}={'true' if on else 'false'}", toggles=((name, on),)))
    return out


def vary_archs(value: str, others: Sequence[str] = ()) -> list[Variant]:
    """``--vary arch=sm_80,sm_90a``: one variant per arch (the layer ``{"arch": ...}``)."""
    if others:
        raise ConfigError(f"--vary arch={value} makes one variant per arch and takes nothing "
                          f"beside it (got {', '.join(others)}): compare toggles on one arch in "
                          f"a cell of their own (--arch sm_90a --vary {others[0]})", "arch")
    try:
        archs = check_archs(value)
    except ConfigError as exc:
        raise ConfigError(f"--vary arch={quote(value, 60)}: {exc}", "arch") from None
    if isinstance(archs, str):
        raise ConfigError(f"--vary arch={archs}: give two archs or more, e.g. "
                          f"arch=sm_80,{'sm_90a' if archs != 'sm_90a' else 'sm_100a'}", "arch")
    return [Variant.of(arch, {"arch": arch}) for arch in archs]


MAX_NAME = 80   # characters of a variant name (it labels tabs, columns and messages)


def parse_variant(spec: str) -> Variant:
    """``"NAME: JSON"`` -> a Variant whose layer is the JSON config (flat or ``{"cuda": {...}}``).

    >>> parse_variant('precise: {"nvrtc": ["--ftz=false"]}').name
    'precise'

    Every problem is a :class:`ConfigError` that quotes at most a capped part of ``spec``.
    """
    if not isinstance(spec, str):
        raise ConfigError(f"--variant takes 'NAME: JSON' text, not {type(spec).__name__} "
                          f"{quote(spec)}")
    name, sep, text = spec.partition(":")
    name = name.strip()
    if not sep or not name or not text.strip() or any(c in name for c in '{}[]"'):
        raise ConfigError(f"--variant {quote(spec)}: write it as 'NAME: JSON', e.g. "
                          "'precise: {\"nvrtc\": [\"--prec-div=true\"]}'")
    if len(name) > MAX_NAME or not name.isprintable():
        raise ConfigError(f"--variant {quote(name, 40)}: a variant name is one printable line of "
                          f"at most {MAX_NAME} characters")
    bad = bad_char(text)
    if bad:
        raise ConfigError(f"--variant {name!r}: the config holds {bad[2]}")
    data = load_json(text, f"--variant {name!r}: the config")
    try:
        return Variant.of(name, data)
    except ConfigError as exc:
        raise ConfigError(f"--{exc}", exc.key) from None
