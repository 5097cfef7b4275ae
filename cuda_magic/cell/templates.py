"""Template kernels: the explicit instantiations a cell writes (:func:`explicit_instances`), an
instance to suggest (:func:`template_hint`), and one instance's Python name and parameters
(:func:`instantiate`)."""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import product

from ..runtime.launch.params import Param, canonical_type
from .decls import ANONYMOUS, KernelDecl, SignatureError, TemplateParam
from .declarator import parse_decl, read_param
from .scan import NAME, blank, closing, line_at, norm_type, split_top, without_directives

__all__ = ["explicit_instances", "enumerators", "template_hint", "instantiate"]

_ENUM = re.compile(r"\benum\s+(?:class\s+|struct\s+)?(\w+)\s*(?::[^{};]*)?\{([^{}]*)\}")
_INT = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*")


def explicit_instances(source: str) -> list[tuple[str, int]]:
    """The instances explicit instantiations in ``source`` name, as written, with their line:
    ``template __global__ void ops::fill<float, 4>(float*, float);`` -> ``("ops::fill<float, 4>",
    line)`` (``template __global__ decltype(k<8>) k<8>;`` too).  Specialisations
    (``template <>``) are not instantiations."""
    code, out = without_directives(source), []
    clean = blank(source, strings=False)
    for m in re.finditer(r"\btemplate\b(?!\s*<)", code):
        end = code.find(";", m.end())
        if end < 0 or "{" in code[m.end():end] or not re.search(r"\b__global__\b", code[m.end():end]):
            continue
        found, depth = None, 0
        for n in re.finditer(NAME + r"\s*<|[()]", code[m.end():end]):
            a = m.end() + n.start()
            if n[0] in "()":
                depth += 1 if n[0] == "(" else -1
                continue
            gt = closing(code, m.end() + n.end() - 1)
            if depth == 0 and gt > 0 and re.match(r"\s*(?:\(|$)", code[gt + 1:end]):
                found = " ".join(clean[a:gt + 1].split())
        if found:
            out.append((found, line_at(code, m.start())))
    return out


def enumerators(source: str) -> dict[str, str]:
    """The enumerators of ``source``'s enums whose values read plainly, as the compiler spells
    them in a demangled template argument: ``enum Order { ASC, DESC };`` ->
    ``{"ASC": "(Order)0", "Order::ASC": "(Order)0", "DESC": "(Order)1", ...}``.  An enumerator
    given by an expression ends its enum's list (the ones after it are unknown); a name two enums
    share is kept only qualified."""
    out: dict[str, str] = {}
    plain: dict[str, set] = {}
    for m in _ENUM.finditer(blank(source)):
        enum, value = m.group(1), 0
        for item in m.group(2).split(","):
            ident, _, init = (part.strip() for part in item.partition("="))
            if not ident:
                continue
            if init:
                if not _INT.fullmatch(init):
                    break
                value = int(init.rstrip("uUlL"), 0)
            spelled = f"({enum}){value}"
            out[f"{enum}::{ident}"] = spelled
            plain.setdefault(ident, set()).add(spelled)
            value += 1
    out.update({ident: next(iter(v)) for ident, v in plain.items() if len(v) == 1})
    return out


def _template_params(decl: KernelDecl) -> tuple[TemplateParam, ...]:
    if decl.template_params:
        return decl.template_params
    defaults = decl.template_defaults or (None,) * len(decl.template)
    return tuple(TemplateParam(n, "type", "", d) for n, d in zip(decl.template, defaults))


def _qualifiers(decl: KernelDecl) -> set[str]:
    """The namespace prefixes that name ``decl``'s namespace: unnamed components are left out, inline
    ones may be."""
    comps = decl.namespace.split("::") if decl.namespace else []
    options = [("",) if c == ANONYMOUS else (c, "") if i in decl.inline_namespaces else (c,)
               for i, c in enumerate(comps)]
    return {"::".join(c for c in choice if c) for choice in product(*options)}


def _example(tp: TemplateParam) -> str:
    if tp.kind == "type":
        return "float"
    if tp.kind == "template":
        return tp.name or "TT"
    t = tp.type
    if t == "bool":
        return "true"
    if t in ("float", "double"):
        return "1.0f" if t == "float" else "1.0"
    if t.endswith(("*", "&")) or "(" in t:
        return None                                    # a pointer: no instance makes sense unseen
    integer = set(t.split()) <= {"signed", "unsigned", "short", "long", "int", "char"} or t == "auto"
    if integer and t:
        return "128" if re.search(r"(?i)block|thread|^(b|bs|tpb|nt|bdim)$", tp.name) else "4"
    return f"{t}{{}}"                                  # an enum or a structural type: its zero


def template_hint(decl: KernelDecl) -> str | None:
    """An instantiation of ``decl`` that compiles, to show users: ``k<128>`` for ``template <int B>``,
    ``ns::k<float, 4>`` for ``template <typename T, int N>`` in ``ns``, ``k<true>`` for ``bool``.

    Trailing parameters with defaults are left out; ``float`` stands for a type, 128 for an integer
    named like a block size, 4 for other integers, ``E{}`` for an enum ``E``.  A kernel that is no
    template gives its name.  None when a parameter needs a pointer (a function to call, an array):
    ``nullptr`` would compile but make no sense.
    """
    prefix = max(_qualifiers(decl), key=len)
    name = f"{prefix}::{decl.name}" if prefix else decl.name
    tps = _template_params(decl)
    if not tps:
        return name
    last = max([i for i, tp in enumerate(tps) if tp.default is None and not tp.pack], default=-1)
    args: list[str] = []
    mapping: dict[str, str] = {}
    for tp in tps[:last + 1]:
        if tp.default is not None:
            value = re.sub(r"\b[A-Za-z_]\w*\b", lambda w: mapping.get(w[0], w[0]), tp.default)
        else:
            value = _example(tp)
        if value is None:
            return None
        args.append(value)
        if tp.name:
            mapping[tp.name] = value
    return f"{name}<{', '.join(args)}>"


def instantiate(decl: KernelDecl, spelling: str) -> tuple[str, tuple[Param, ...]]:
    """``("axpy_float", params with T=float)`` for the spelling ``"axpy<float>"`` of a template kernel.

    The spelling may be qualified with the kernel's namespace (``"ns::axpy<float>"``; inline
    namespaces may be left out; ``(anonymous namespace)::`` as demangled names write it is
    accepted) or not; another namespace is an error.  The Python name is the spelling with ``*`` as
    ``_ptr`` and other non-identifier characters as ``_``.  Type parameters are substituted
    (``T* x`` with ``T=float*`` is a ``float**``), non-type ones only in ``declared``; trailing
    arguments may be left out where the template has defaults.
    """
    if not decl.template:
        raise SignatureError(f"kernel '{decl.name}' is not a template", decl.line)
    text = spelling.replace(ANONYMOUS + "::", "")
    m = re.fullmatch(r"\s*(" + NAME + r")\s*(<.*>)\s*", text, re.S)
    if not m or closing(m[2], 0) != len(m[2]) - 1:
        raise SignatureError(f"cannot parse instantiation '{spelling}' (expected {decl.name}<...>)",
                             decl.line)
    qualifier, _, name = re.sub(r"\s+", "", m[1]).rpartition("::")
    if name != decl.name:
        raise SignatureError(f"'{spelling}' does not instantiate kernel '{decl.name}'", decl.line)
    if qualifier.strip(":") and qualifier.strip(":") not in _qualifiers(decl):
        where = f"namespace '{decl.namespace}'" if decl.namespace else "the global namespace"
        raise SignatureError(f"'{spelling}': kernel '{decl.name}' is in {where}, not in "
                             f"'{qualifier.strip(':')}'", decl.line)
    inner = m[2][1:-1]
    args = [re.sub(r"\s*\*", "*", " ".join(inner[a:b].split())) for a, b in split_top(inner)]
    args = args if inner.strip() else []
    tps = _template_params(decl)
    least = max([i + 1 for i, tp in enumerate(tps) if tp.default is None and not tp.pack], default=0)
    most = float("inf") if tps and tps[-1].pack else len(tps)
    if not least <= len(args) <= most:
        count = f"{least} to {len(tps)}" if least < len(tps) else str(least)
        count += " or more" if most == float("inf") else ""
        raise SignatureError(f"'{spelling}': kernel '{decl.name}' takes {count} template argument(s) "
                             f"<{', '.join(decl.template)}>, got {len(args)}", decl.line)
    mapping: dict[str, str] = {}

    def subst(text: str) -> str:
        keys = [k for k in mapping if k]
        if not keys:
            return text
        return re.sub(r"\b(?:" + "|".join(map(re.escape, keys)) + r")\b", lambda w: mapping[w[0]], text)

    for i, tp in enumerate(tps):
        if tp.pack:
            mapping[tp.name] = ", ".join(args[i:])
        else:
            mapping[tp.name] = args[i] if i < len(args) else subst(tp.default or "")
    scope, at = decl.context if isinstance(decl.context, tuple) else (None, 0)
    params = []
    for i, p in enumerate(decl.params):
        declared = subst(p.declared)
        if p.unknown:                                 # PTR(T) x may read once T is known
            again = scope.expand(subst(p.type), at) if scope is not None else subst(p.type)
            q = read_param(again, i, decl.line, declared, scope, at, ())
            params.append(q if q.unknown else replace(q, name=p.name))
        elif p.type in mapping and not p.function:
            arg = scope.expand(mapping[p.type], at) if scope is not None else mapping[p.type]
            try:
                a = parse_decl(arg, decl.line, declared, False, scope, at)
            except SignatureError:
                params.append(Param(p.name, declared, declared=declared, unknown=True))
                continue
            pointer = p.pointer + a.pointer
            reference = p.reference or a.reference
            if a.function and not pointer and not reference:
                pointer = 1
            const = (pointer > 0 or reference) and not a.function and (
                a.const if a.pointer else p.const or a.const)
            params.append(Param(p.name, a.type, pointer, const, declared, reference, a.function))
        else:
            type_ = norm_type(subst(p.type)) if p.function else canonical_type(subst(p.type))
            params.append(replace(p, type=type_, declared=declared))
    python_name = re.sub(r"_+", "_", re.sub(r"\W", "_", text.strip().lstrip(":").replace("*", "_ptr")))
    return python_name.strip("_"), tuple(params)
