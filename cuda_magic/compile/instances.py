"""Template instances by the text the user wrote (``--instantiate``, a tune point, an explicit
instantiation), and what the binary calls them.

- :func:`tidy`: a C++ name as a person writes it: ``reduce7<int, 256u, true>`` ->
  ``reduce7<int, 256, true>``; literal suffixes (``u``, ``ul``, ``ll``), casts to builtin
  types (``(unsigned int)5`` -> ``5``) and CCCL's versioned inline namespaces
  (``cub::CUB_300001_SM_900::``, ``cub::_V_300500_SM_900::``, ``cuda::std::__4::``) dropped, so
  the same cell gives the same names with two CCCL versions.  Enum casts keep the enum's
  unqualified name (``(cub::_V_300500_SM_900::BlockReduceAlgorithm)1`` ->
  ``(BlockReduceAlgorithm)1``).
- :func:`appended`: what nvcc compiles for ``--instantiate`` (nvcc has no name expressions):
  the cell unchanged, then a *probe* line per instance: the explicit instantiation of an empty
  kernel whose template arguments are the instance's number and its address
  (``template __global__ void __cuda_magic_probe<0, &k<float>>();``).  Taking the address
  makes the compiler instantiate the kernel for the device (no parameter types needed, and it
  works for templates in an unnamed namespace); the probe's demangled name then holds the
  instance's signature -- the compiler's own answer to which entry the text is, whatever
  enumerators or typedefs it spells.  Below C++17 (``auto`` template parameters) the probe
  spells the type too: ``<0, decltype(&k<float>), &k<float>>``.  Probes are never bound
  (:data:`~cuda_magic.compile.binary.NOT_THE_CELLS`).  The cell's line numbers are unchanged.
- :func:`probed`: the entry each instance is, read from the probes (nvcc);
  :func:`find`: by matching the user's text against the demangled entries (tune points,
  explicit instantiations in the source; NVRTC says it exactly with its lowered names).
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Sequence

from ..errors import InstanceError

__all__ = ["tidy", "split", "appended", "appended_lines", "first_appended_line", "instance_of_line",
           "find", "probed", "candidates", "lowered", "before_cxx17", "InstanceError", "MARK", "PROBE"]

MARK = "// cuda-magic: --instantiate under nvcc (lines appended after the cell)"

_BUILTIN_WORDS = {"void", "bool", "char", "short", "int", "long", "signed", "unsigned", "float",
                  "double", "wchar_t", "char8_t", "char16_t", "char32_t", "__int128", "__half",
                  "__nv_bfloat16"}
# Inline namespaces libraries version their ABI with: CUB/Thrust's CUB_300001_SM_900 (CCCL 3.0),
# _V_300500_SM_800_900 (CCCL 3.1+), _NVHPC variants, libcu++'s __4 and __version_bump_ver4_.
_INLINE = re.compile(r"(?<![\w])(?:(?:CUB|THRUST|CCCL)_\d+|_V_\d+)(?:_SM(?:_\d+)+)?(?:_NVHPC)?::"
                     r"|(?<![\w])__(?:\d+|version_bump\w*|cuda_std\w*)::")
_SUFFIX = re.compile(r"(?<![\w.])(-?(?:0[xX][0-9a-fA-F]+|\d+))(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)"
                     r"(?![\w.])")
_CAST = re.compile(r"\(\s*((?:[A-Za-z_]\w*\s*::\s*)*)([A-Za-z_]\w*(?:\s+[A-Za-z_]\w*)*)\s*\)\s*"
                   r"(?=-?\d)")


def tidy(name: str) -> str:
    """``name`` without literal suffixes, builtin casts and versioned inline namespaces (see the
    module docstring); ``(anonymous namespace)`` is kept."""
    text = _INLINE.sub("", name)

    def cast(m: re.Match) -> str:
        words = m[2].split()
        if set(words) <= _BUILTIN_WORDS:
            return ""                        # (unsigned int)5 -> 5
        return f"({m[2]})" if not m[1] else f"({words[-1]})"   # (ns::E)1 -> (E)1
    text = _CAST.sub(cast, text)
    return _SUFFIX.sub(r"\1", text)


def _top(text: str):
    depth = 0
    for i, ch in enumerate(text):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        yield i, ch, depth


def split(text: str) -> tuple[tuple[str, ...], str, tuple[str, ...] | None]:
    """``"ns::k<float, 256>"`` -> ``(("ns",), "k", ("float", "256"))``; no ``<...>``: args None.
    ``(anonymous namespace)`` components are left out."""
    text = text.strip()
    lt = next((i for i, ch, d in _top(text) if ch == "<" and d == 1), -1)
    head, args = (text, None) if lt < 0 else (text[:lt], text[lt + 1:text.rfind(">")])
    comps = [c.strip() for c in head.replace("(anonymous namespace)", "").split("::")]
    comps = [c for c in comps if c]
    if args is not None:
        cuts = [i for i, ch, d in _top(args) if ch == "," and d == 0]
        pieces = [args[a + 1:b] for a, b in zip([-1, *cuts], [*cuts, len(args)])]
        args = tuple(p.strip() for p in pieces) if args.strip() else ()
    return tuple(comps[:-1]), (comps[-1] if comps else ""), args


def _norm(arg: str) -> str:
    text = " ".join(tidy(arg).split())
    return re.sub(r"\s*([^\w\s])\s*", r"\1", text)


_CANON = {"unsigned": "unsigned int", "signed": "int", "signed int": "int", "long int": "long",
          "unsigned long int": "unsigned long", "short int": "short", "long long int": "long long",
          "unsigned long long int": "unsigned long long", "unsigned short int": "unsigned short",
          "signed char": "signed char"}


def _value(arg: str):
    """A comparable value for literals and builtin types, else None (an enumerator, a typedef,
    an expression: only the compiler knows what it is)."""
    if re.fullmatch(r"-?\d+", arg):
        return int(arg)
    if re.fullmatch(r"-?0[xX][0-9a-fA-F]+", arg):
        return int(arg, 16)
    if arg in ("true", "false"):
        return int(arg == "true")
    m = re.fullmatch(r"((?:const )?)([a-z_ 0-9]+?)((?:[*&]|const)*)", arg.replace("const*", " const*"))
    if m and set(m[2].split()) <= _BUILTIN_WORDS:
        return ("type", m[1], _CANON.get(m[2], m[2]), m[3])
    return None


def _score(want: tuple, have: tuple) -> int | None:
    """How many arguments of an instance match an entry exactly; None if one cannot match."""
    w_scope, w_base, w_args = want
    h_scope, h_base, h_args = have
    if w_base != h_base or h_args is None:
        return None
    it = iter(h_scope)
    if not all(c in it for c in w_scope):      # ns::k may leave out inline namespaces
        return None
    if len(w_args) > len(h_args):
        return None                              # more arguments than the entry has
    exact = 0
    for a, b in zip(w_args, h_args):
        a, b = _norm(a), _norm(b)
        if a == b:
            exact += 1
            continue
        va, vb = _value(a), _value(b)
        if va is not None and vb is not None:
            return None                          # 256 is not 512, float is not double
    return exact


def find(names: Sequence[str], entries: Iterable,
         aliases: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{instance text: entry symbol}`` for each of ``names`` the entries (of
    :func:`cuda_magic.compile.binary.entries`) hold: exact matches of literal and builtin-type
    arguments win; ``aliases`` spell an argument as the compiler does (the cell's enumerators:
    ``ASC`` -> ``(Order)0``); typedefs and defaults match what the compiler put there when only
    one entry fits, once the entries other names took for certain are set aside (``fill<int>``
    takes ``fill<int>``, so ``fill<int64_t>`` is ``fill<long>``).  Names that fit no entry, or
    several equally, are left out."""
    aliases = aliases or {}
    have = [(e.symbol, split(tidy(e.name))) for e in entries if e.param_types is not None]
    fits: dict[str, list[str]] = {}
    for name in names:
        scope, base, args = split(tidy(name))
        if args is None:
            continue
        want = (scope, base, tuple(aliases.get(_norm(a), a) for a in args))
        scored = [(s, sym) for sym, h in have if (s := _score(want, h)) is not None]
        best = max((s for s, _ in scored), default=None)
        fits[name] = sorted({sym for s, sym in scored if s == best})
    out = {name: top[0] for name, top in fits.items() if len(top) == 1}
    while True:                          # set aside what the others took for certain
        taken = set(out.values())
        more = {name: left[0] for name, top in fits.items() if name not in out
                for left in [[s for s in top if s not in taken]] if len(left) == 1}
        if not more:
            return out
        out.update(more)


def candidates(name: str, entries: Iterable) -> list[str]:
    """The demangled names of the entries ``name`` could be (for an error message)."""
    want = split(tidy(name))
    return [e.name for e in entries if e.param_types is not None and want[2] is not None
            and _score(want, split(tidy(e.name))) is not None]


PROBE = "__cuda_magic_probe"
_OLD_STD = re.compile(r"^-{1,2}std(?:=|$)(?:c|gnu)\+\+(?:98|03|0x|11|1y|14)$")


def before_cxx17(flags: Sequence[str]) -> bool:
    """Whether nvcc ``flags`` pick a C++ standard before C++17 (nvcc's default is C++17)."""
    flags, std = list(flags), None
    for i, f in enumerate(flags):
        if f in ("-std", "--std") and i + 1 < len(flags):
            std = f"-std={flags[i + 1]}"
        elif f.startswith(("-std=", "--std=")):
            std = f
    return bool(std and _OLD_STD.match(std))


def appended_lines(names: Sequence[str], flags: Sequence[str] = ()) -> list[str]:
    """The lines nvcc compiles after the cell for ``names`` with ``flags`` (see the module
    docstring): the probe of instance ``i`` on line ``first + 1 + i`` (``first``:
    :func:`first_appended_line`)."""
    if not names:
        return []
    if before_cxx17(flags):
        return ([MARK, f"template <int, class T, T> __global__ void {PROBE}() {{}}"]
                + [f"template __global__ void {PROBE}<{i}, decltype(&{n}), &{n}>();"
                   for i, n in enumerate(names)])
    return ([MARK, f"template <int, auto> __global__ void {PROBE}() {{}}"]
            + [f"template __global__ void {PROBE}<{i}, &{n}>();" for i, n in enumerate(names)])


def instance_of_line(line: int, first: int, count: int) -> int | None:
    """Which of ``count`` instances appended line ``line`` belongs to (None: not one of theirs)."""
    return line - first - 1 if 0 <= line - first - 1 < count else None


def probed(names: Sequence[str], symbols: Iterable[str], entries: Iterable) -> dict[str, str]:
    """``{instance text: entry symbol}`` from the probes among ``symbols`` (every entry symbol
    of the binary, :func:`~cuda_magic.compile.binary.entry_symbols`): the probe of instance
    ``i`` demangles to ``void __cuda_magic_probe<i, &(<the entry's demangled signature>)>()``
    (its mangled name cannot be searched for the entry's: the two share one substitution
    table, so ``Pi`` may read ``S0_`` inside the probe)."""
    from .binary import demangle
    probes = {}
    for sym in symbols:
        m = re.match(rf"_Z{len(PROBE)}{PROBE}ILi(\d+)E", sym)
        if m and int(m[1]) < len(names):
            probes[sym] = int(m[1])
    if not probes:
        return {}
    text = demangle(probes)
    cells = [(e.symbol, f"&({e.signature})") for e in entries if e.signature]
    out = {}
    for sym, i in probes.items():
        hits = [c for c, wrote in cells if wrote in text[sym]]
        if len(hits) == 1:
            out[names[i]] = hits[0]
    return out


def first_appended_line(source: str) -> int:
    """The line number (1-based) of the first instance line :func:`appended` adds to ``source``
    (the line after :data:`MARK`)."""
    return source.count("\n") + (0 if source.endswith("\n") or not source else 1) + 2


def appended(source: str, names: Sequence[str], flags: Sequence[str] = ()) -> str:
    """``source`` with :func:`appended_lines` after it (its own lines unchanged)."""
    lines = appended_lines(names, flags)
    if not lines:
        return source
    return source + ("" if source.endswith("\n") or not source else "\n") + "\n".join(lines) + "\n"


def lowered(names: Sequence[str], entries: Sequence, compiler: str = "nvcc",
            symbols: Iterable[str] = ()) -> Mapping[str, str]:
    """:func:`probed` (from ``symbols``), else :func:`find`, for every name, or
    :class:`InstanceError` naming the first the binary holds no single entry for (and what it
    does hold)."""
    found = probed(names, symbols, entries)
    found.update({n: s for n, s in find([n for n in names if n not in found], entries).items()})
    for name in names:
        if name not in found:
            could = candidates(name, entries)
            if could:
                raise InstanceError(
                    f"--instantiate {name!r}: {compiler} built it, but {len(could)} entries of "
                    f"the binary fit ({', '.join(could[:4])}); spell its arguments as the "
                    f"compiler does (e.g. {could[0]!r}), or use --compiler nvrtc, which names "
                    f"instances exactly")
            raise InstanceError(f"--instantiate {name!r}: the binary {compiler} built holds no "
                                f"entry for it")
    return found
