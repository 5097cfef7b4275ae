"""One C++ declaration as text -> its name, canonical type, pointer depth, const-ness,
reference and function flags (:func:`parse_decl`), and the :class:`Param` it makes
(:func:`read_param`, :func:`param_from_type`).

Aliases the cell defines are seen through with the cell's :class:`.scope.Scope`, passed in
(``scope``; None: none); a declaration this cannot read raises :class:`.decls.SignatureError`,
which :func:`read_param` turns into an ``unknown`` Param.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..runtime.launch.params import Param, canonical_type
from .decls import ANONYMOUS, SignatureError
from .scan import TOKEN, closing, closing_paren, norm_type, split_default

__all__ = ["Decl", "parse_decl", "read_param", "guess_name", "param_from_type", "QUALIFIERS",
           "BUILTINS"]

QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "class",
               "union", "enum", "typename", "__grid_constant__", "register"}
BUILTINS = {"void", "bool", "char", "short", "int", "long", "signed", "unsigned", "float",
             "double"}


@dataclass(frozen=True)
class Decl:
    name: str | None
    type: str
    pointer: int = 0
    const: bool = False              # the innermost pointee (or the value itself) is const
    reference: bool = False
    function: bool = False


def _strip_attributes(text: str) -> str:
    text = re.sub(r"\[\[.*?\]\]", " ", text.replace(ANONYMOUS + "::", ""))
    while m := re.search(r"\b(?:__attribute__|__align__|alignas|__declspec)\s*\(", text):
        end = closing_paren(text, m.end() - 1)
        text = text[:m.start()] + " " + (text[end + 1:] if end > 0 else "")
    return text


def _top_paren(text: str) -> int:
    """Index of the first '(' outside template argument lists; -1 if none."""
    i = 0
    while i < len(text):
        c = text[i]
        if c == "<" and text[:i].rstrip()[-1:].isidentifier():
            end = closing(text, i)
            if end > 0:
                i = end + 1
                continue
        if c == "(":
            return i
        i += 1
    return -1


def parse_decl(text: str, line: int | None, declared: str, named: bool = True,
               scope=None, pos: int = 0, skip=()) -> Decl:
    """Name (or None), canonical type, pointer depth, const-ness, reference and function flags of one
    declaration; aliases the cell defines (``scope``, a :class:`.scope.Scope`, at offset ``pos``) are
    seen through (except names in ``skip``)."""
    text = _strip_attributes(split_default(text)[0])
    if (paren := _top_paren(text)) >= 0:
        return _parse_paren(text, paren, line, declared, named, scope, pos, skip)
    arrays = re.search(r"(?:\s*\[[^\]]*\])+\s*$", text)
    pointer = 1 if arrays else 0
    toks: list[str] = []
    body, at = text[:arrays.start()] if arrays else text, 0
    while m := TOKEN.search(body, at):
        tok, at = re.sub(r"\s*::\s*", "::", m.group()), m.end()
        if tok == "<" and toks and toks[-1] not in "*&":
            if (end := closing(body, m.start())) < 0:
                raise SignatureError(f"unbalanced '<' in parameter '{declared}'", line)
            inner = norm_type(body[m.start():end + 1])
            toks[-1], at = toks[-1] + inner, end + 1
        elif tok.startswith("::") and toks and toks[-1] not in "*&" and toks[-1] not in QUALIFIERS:
            toks[-1] += tok                           # Foo<T>::type
        elif tok in ("*", "&") or re.match(r"(?:::)?[A-Za-z_]", tok):
            toks.append(tok)
        else:
            raise SignatureError(f"cannot parse parameter '{declared}'", line)
    first_star = min([i for i, t in enumerate(toks) if t in "*&"] or [len(toks)])
    core = [t for t in toks if t not in ("*", "&") and t not in QUALIFIERS]
    name = None
    if (named and len(core) >= 2 and toks[-1] == core[-1] and core[-1] not in BUILTINS
            and re.fullmatch(r"[A-Za-z_]\w*", core[-1])):
        name = core.pop()
    if not core:
        raise SignatureError(f"cannot parse parameter '{declared}' (no type)", line)
    d = Decl(name, canonical_type(" ".join(core)), pointer + toks.count("*"),
             "const" in toks[:first_star], "&" in toks)
    return _see_through(d, scope, pos, skip)


def _see_through(d: Decl, scope, pos: int, skip) -> Decl:
    """``d`` with its type replaced by what the cell's alias of that name stands for."""
    t = scope.resolve(d.type, pos) if scope is not None and d.type not in skip else None
    if t is None:
        return d
    const = t.const if t.pointer else t.const or d.const
    return Decl(d.name, t.type, t.pointer + d.pointer, const, d.reference or t.reference, t.function)


def _parse_paren(text: str, i: int, line, declared: str, named: bool, scope, pos, skip) -> Decl:
    """Declarations with parentheses: ``float (*f)(float)``, ``void (*)(int)``, ``float (&a)[4]``,
    ``float f(float)`` (a function parameter: a pointer)."""
    j = closing_paren(text, i)
    if j < 0:
        raise SignatureError(f"unbalanced parentheses in parameter '{declared}'", line)
    head, group, after = text[:i], text[i + 1:j].strip(), text[j + 1:].strip()
    g = re.fullmatch(r"((?:\s*(?:[*&^]|const\b|volatile\b|__restrict__\b|__restrict\b|restrict\b))*)"
                     r"\s*([A-Za-z_]\w*)?\s*((?:\[[^\]]*\]\s*)*)", group)
    if g and re.search(r"[*&^]", g[1]):             # a grouped declarator: (*f), (&r), (* const p)
        stars, ref, name = g[1].count("*") + g[1].count("^") + bool(g[3]), "&" in g[1], g[2]
        base = parse_decl(head, line, declared, False, scope, pos, skip)
        if after.startswith("("):
            end = closing_paren(after, 0)
            if end < 0 or not re.fullmatch(r"(?:noexcept|\s)*", after[end + 1:]):
                raise SignatureError(f"cannot parse parameter '{declared}'", line)
            ret = base.type + "*" * base.pointer + "&" * base.reference
            return Decl(name, f"{ret}({norm_type(after[1:end])})", stars, False, ref, True)
        if not after or after.startswith("["):        # (*a)[4]: a pointer to rows of the base type
            return Decl(name, base.type, base.pointer + stars, base.const, ref, base.function)
        raise SignatureError(f"cannot parse parameter '{declared}'", line)
    if not re.fullmatch(r"(?:noexcept|\s)*", after):  # PTR(float) x: an unknown macro, say
        raise SignatureError(f"cannot parse parameter '{declared}'", line)
    h = parse_decl(head, line, declared, named, scope, pos, skip)   # float f(float)
    if h.name is None and re.fullmatch(r"\s*[A-Z][A-Z0-9_]*\s*", head):
        raise SignatureError(f"cannot parse parameter '{declared}'", line)  # an unknown MACRO(...)
    ret = h.type + "*" * h.pointer + "&" * h.reference
    return Decl(h.name, f"{ret}({norm_type(group)})", 0, False, False, True)


def guess_name(text: str) -> str | None:
    """The name at the end of a declaration this parser cannot read (``PTR(float) x`` -> x)."""
    body = split_default(text)[0]
    m = re.search(r"([A-Za-z_]\w*)\s*$", body)
    if m and m[1] not in BUILTINS | QUALIFIERS and re.search(r"[\w)>*&]", body[:m.start()]):
        return m[1]
    return None


def _to_param(d: Decl, name: str, declared: str) -> Param:
    pointer = d.pointer or (1 if d.function and not d.reference else 0)  # a function decays
    const = d.const and (pointer > 0 or d.reference) and not d.function
    return Param(name, d.type, pointer, const, declared, d.reference, d.function)


def read_param(text: str, i: int, line: int, declared: str, scope, pos: int, skip) -> Param:
    try:
        d = parse_decl(text, line, declared, True, scope, pos, skip)
    except SignatureError:
        return Param(guess_name(text) or f"arg{i}", " ".join(split_default(text)[0].split()),
                     declared=declared, unknown=True)
    return _to_param(d, d.name or f"arg{i}", declared)


def param_from_type(type_text: str, name: str) -> Param:
    """A :class:`Param` from a parameter type as a demangled name spells it.

    ``param_from_type("float const*", "x")`` -> ``Param("x", "float", 1, True, "float const* x")``;
    also ``unsigned int``, ``int const&`` (a reference), ``float (*)(float)`` (a function pointer),
    ``CUtensorMap_st`` (a struct), ``(anonymous namespace)::Foo``.  A type it cannot read gives an
    ``unknown`` Param rather than an error.
    """
    text = " ".join(type_text.split())
    if re.search(r"\(\s*[*&^]+\s*\)", text):
        declared = re.sub(r"\(\s*([*&^]+)\s*\)", lambda m: f"({m[1]}{name})", text, count=1)
    else:
        declared = f"{text} {name}" if name else text
    try:
        d = parse_decl(text, None, declared, named=False)
    except SignatureError:
        return Param(name, text, declared=declared, unknown=True)
    return _to_param(d, name, declared)

