"""Which kernels a cell binds: the entries of the binary, named and typed with help from the source.

The binary is the truth (:func:`cuda_magic.compile.binary.entries`): every kernel entry
is bound once, and nothing the binary lacks (a kernel in ``#if 0``, a template
never instantiated) is bound.  The source adds what the binary does not say:
parameter names, and for ``extern "C"`` kernels (whose names carry no types) the
parameter types, const-ness and pointees.  For C++ kernels the demangled name
gives the types as the compiler saw them, so typedefs, template arguments and
macros are already resolved.

Python names: the kernel's C++ name (``scale``; a template instance ``k<256>`` is
``k_256``); if two entries share it, their qualified names (``a::k`` -> ``a_k``);
if those clash too (overloads), the parameter types are appended
(``scale(float*, float, int)`` -> ``scale_float_ptr_float_int``).  A template instance is
named by the text the user wrote for it (``--instantiate``, a tune point, an explicit
instantiation in the source): ``reduce7<int, 256, true>`` -> ``reduce7_int_256_true`` although
the binary says ``reduce7<int, 256u, true>``, ``k<>`` -> ``k``; ``s<ASC>`` stays ``s_ASC`` beside
``s<DESC>`` (the cell's enumerators: :func:`.templates.enumerators`); an instance no text names is
named by its demangled name, :func:`~cuda_magic.compile.instances.tidy`'d (no literal suffixes,
casts or versioned inline namespaces), so names do not change with a library's version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Sequence

from ..compile.cpptypes import canonical_type, split_name, unqualified
from ..compile.instances import find as find_instances
from ..compile.instances import split as split_instance
from ..compile.instances import tidy
from ..runtime.launch.params import Param
from .declarator import param_from_type
from .decls import ANONYMOUS, KernelDecl, SignatureError
from .templates import enumerators, explicit_instances, instantiate

if TYPE_CHECKING:      # the binary reader is imported when a cell is first built
    from ..compile.binary import Entry

__all__ = ["Binding", "instance", "match", "params_of", "python_names", "ptx_of", "ptx_params",
           "written"]


@dataclass(frozen=True)
class Binding:
    """One kernel entry to bind: where it came from and what it takes."""

    entry: Entry
    decl: KernelDecl | None
    params: tuple[Param, ...]
    spelling: str | None = None       # the --instantiate spelling, if it came from one
    written: tuple[str, ...] = ()     # the user's texts for this instance; the first names it

    @property
    def name(self) -> str:
        """The demangled name without parameters: ``ns::k<256>``, ``scale``."""
        return self.entry.name

    @property
    def signature(self) -> str:
        """``ns::k<256>(float*, int)``; for extern "C", the name and the declared parameters."""
        if self.entry.param_types is not None:
            return f"{self.entry.name}({', '.join(self.entry.param_types)})"
        return f"{self.entry.name}({', '.join(p.declared or str(p) for p in self.params)})"


def instance(decls: Sequence[KernelDecl], spelling: str) -> tuple[str, KernelDecl | None]:
    """``(python name, declaration)`` for an ``--instantiate`` spelling: the template kernel of
    the cell it names if the parser reads the spelling as one of its instances, else None (a
    kernel the parser does not see: in an included header, an ``enable_if_t`` return type).
    Never an error: the compiler and the binary say whether the instance exists."""
    scope, base, _ = split_instance(spelling)
    head = "::".join(scope)
    found = [d for d in decls if d.name == base and d.template]
    scoped = [d for d in found if not head or d.qualified.endswith(head + "::" + base)]
    for decl in scoped or found:
        try:
            return instantiate(decl, spelling)[0], decl
        except SignatureError:
            continue
    return _ident(tidy(spelling.replace(ANONYMOUS + "::", "").strip().lstrip(":"))), None


def written(bindings: Sequence[Binding], results: Sequence, source: str) -> list[Binding]:
    """``bindings`` with the user's texts for each instance (:attr:`Binding.written`): every
    ``--instantiate`` spelling its build lowered to the entry (``k<>`` and ``k<true, false>`` are
    one entry), and the explicit instantiations of ``source`` that match it
    (:func:`~cuda_magic.compile.instances.find`; one that fits several entries names none)."""
    explicit = [text for text, _ in explicit_instances(source)]
    enums = enumerators(source) if explicit else {}
    out = []
    for b, r in zip(bindings, results):
        # in the order given: the first spelling of an instance names it
        texts = [expr for expr, sym in r.lowered_names.items() if sym == b.entry.symbol]
        if explicit and b.entry.param_types is not None:
            found = find_instances(explicit, r.entries, enums)
            texts += [t for t in explicit if found.get(t) == b.entry.symbol]
        out.append(replace(b, written=tuple(dict.fromkeys(texts))))
    return out


def _same_types(decl: KernelDecl, types: Sequence[str]) -> bool:
    if len(decl.params) != len(types):
        return False
    for p, t in zip(decl.params, types):
        q = param_from_type(t, p.name)
        if p.unknown or q.unknown:
            continue
        if (canonical_type(p.type), p.pointer, p.reference) != (canonical_type(q.type), q.pointer,
                                                               q.reference):
            return False
    return True


def match(entry: Entry, decls: Sequence[KernelDecl]) -> KernelDecl | None:
    """The declaration a binary entry came from, or None (a kernel made by a macro, say)."""
    if entry.param_types is None:                       # extern "C": the symbol is the name
        found = [d for d in decls if d.name == entry.symbol]
        sized = [d for d in found if entry.params is None or len(d.params) == len(entry.params)]
        return (sized or found or [None])[0]
    ns, base, templated = split_name(entry.name)
    found = [d for d in decls if d.name == base and bool(d.template) == templated]
    scoped = [d for d in found if d.namespace == ns or
              d.namespace.replace(ANONYMOUS, "") == ns.replace(ANONYMOUS, "")]
    found = scoped or found
    if templated:
        return (found or [None])[0]
    typed = [d for d in found if _same_types(d, entry.param_types)]
    return (typed or found or [None])[0]


def ptx_of(result) -> str | None:
    """The PTX of a build: NVRTC's from the same run, or the fatbin's PTX image (nvcc)."""
    if result.ptx_text:
        return result.ptx_text
    if result.format == "ptx":
        return result.binary.decode("utf-8", "replace")
    if result.format == "fatbin":
        from ..compile.binary import fatbin_extract
        try:
            return "\n".join(d.rstrip(b"\0").decode("utf-8", "replace")
                             for _, d in fatbin_extract(result.binary, "ptx"))
        except Exception:   # no PTX image, or no cuobjdump: the parameters stay unknown
            return None
    return None


def params_of(entry: Entry, decl: KernelDecl | None, ptx: str | None = None) -> tuple[Param, ...]:
    """The parameters to marshal by: from the demangled types (C++), else the declaration, else
    the PTX ``.param`` types (an extern "C" kernel with no declaration the source shows)."""
    n = len(entry.params) if entry.params is not None else None
    named = decl is not None and (n is None or len(decl.params) == n)
    if entry.param_types is not None:
        out = []
        names = named and len(decl.params) == len(entry.param_types)
        for i, t in enumerate(entry.param_types):
            p = param_from_type(t, decl.params[i].name if names else f"arg{i}")
            if names and not decl.template:     # a template's declared text still says T
                d = decl.params[i]
                p = replace(p, declared=d.declared or p.declared,
                            const=p.const or (d.const and p.pointer > 0))
            out.append(p)
        return _sized(tuple(out), entry)
    if named:
        return _sized(decl.params, entry)
    if ptx is not None:
        found = ptx_params(ptx, entry.symbol)
        if found is not None and (n is None or len(found) == n):
            return _sized(found, entry)
    return tuple(Param(f"arg{i}", "?", declared=f"parameter {i} ({size} bytes)", unknown=True)
                 for i, (_, size) in enumerate(entry.params or ()))


def _sized(params: tuple[Param, ...], entry: Entry) -> tuple[Param, ...]:
    """Parameters whose parsed size disagrees with the binary become ``unknown`` (their launch
    names them) rather than being packed at the wrong size."""
    if entry.params is None or len(entry.params) != len(params):
        return params
    out = []
    for p, (_, size) in zip(params, entry.params):
        if p.size is not None and p.size != size:
            p = replace(p, unknown=True, declared=f"{p.declared or p} (the binary takes {size} bytes, "
                                                  f"the declaration reads as {p.size})")
        out.append(p)
    return tuple(out)


_PTX_TYPES = {"u8": "unsigned char", "s8": "signed char", "b8": "unsigned char",
              "u16": "unsigned short", "s16": "short", "b16": "unsigned short",
              "u32": "int", "s32": "int", "b32": "int", "f32": "float",
              "s64": "long long", "b64": "unsigned long long", "f64": "double", "f16": "__half"}


def ptx_params(ptx: str, symbol: str) -> tuple[Param, ...] | None:
    """Parameters from a PTX ``.entry``: ``.u64`` is taken as a pointer (to anything), ``.u32``
    as ``int``, ``.f32`` as ``float``, ``.b8 x[N]`` as N bytes."""
    m = re.search(rf"\.entry\s+{re.escape(symbol)}\s*\((.*?)\)", ptx, re.S)
    if m is None:
        return None
    out = []
    for i, decl in enumerate(d for d in m.group(1).split(",") if d.strip()):
        t = re.search(r"\.param\s+(?:\.align\s+\d+\s+)?(?:\.ptr\S*\s+)?\.(\w+)\s+\S+?(?:\[(\d+)\])?\s*$",
                      decl.strip())
        if t is None:
            out.append(Param(f"arg{i}", "?", declared=decl.strip(), unknown=True))
        elif t.group(2):
            out.append(Param(f"arg{i}", "?", declared=f"{t.group(2)}-byte parameter {i}",
                             unknown=True))
        elif t.group(1) == "u64":
            out.append(Param(f"arg{i}", "void", 1, False, f"void* arg{i}"))
        else:
            ctype = _PTX_TYPES.get(t.group(1), "?")
            out.append(Param(f"arg{i}", ctype, declared=f"{ctype} arg{i}", unknown=ctype == "?"))
    return tuple(out)


def _ident(text: str) -> str:
    text = text.replace(ANONYMOUS + "::", "").replace("::", "_").replace("*", "_ptr")
    text = text.replace("&", "_ref")
    return re.sub(r"_+", "_", re.sub(r"\W", "_", text)).strip("_") or "kernel"


def plain_name(name: str) -> str:
    """The Python name a kernel gets when nothing clashes: ``ns::k<256>`` -> ``k_256``."""
    return _ident(unqualified(name))


def _as_written(b: Binding) -> str:
    """The binding's C++ name as the user wrote it (qualified as the binary says), else tidied."""
    name = tidy(b.name)
    if not b.written:
        return name
    ns = split_name(name)[0]
    text = unqualified(tidy(b.written[0].replace(ANONYMOUS + "::", "").strip().lstrip(":")))
    return f"{ns}::{text}" if ns else text


def python_names(bindings: Sequence[Binding]) -> list[str]:
    """A unique Python identifier per binding (see the module docstring)."""
    def level(b, depth):
        name = _as_written(b)
        if depth == 0:
            return unqualified(name)
        if depth == 1:
            return name
        types = b.entry.param_types if b.entry.param_types is not None else \
            tuple(f"{p.type}{'*' * p.pointer}" for p in b.params)
        return name + "_" + "_".join(tidy(t) for t in types or ("void",))

    names = [""] * len(bindings)
    todo = list(range(len(bindings)))
    for depth in range(3):
        wanted = {i: _ident(level(bindings[i], depth)) for i in todo}
        counts: dict[str, int] = {}
        for v in wanted.values():
            counts[v] = counts.get(v, 0) + 1
        left = []
        for i in todo:
            if counts[wanted[i]] == 1 or depth == 2:
                names[i] = wanted[i]
            else:
                left.append(i)
        todo = left
    seen: dict[str, int] = {}
    for i, n in enumerate(names):          # identical signatures (cannot happen in one binary)
        seen[n] = seen.get(n, 0) + 1
        if seen[n] > 1:
            names[i] = f"{n}_{seen[n]}"
    return names
