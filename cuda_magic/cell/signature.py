"""Parse the ``__global__`` kernel declarations of a CUDA C++ cell.

Pure text work, no compiler: the source is first *blanked* (comments and the
contents of literals turned into spaces, same length, newlines kept) so that
offsets and line numbers in the blanked copy are those of the original.
Preprocessor lines are blanked too, so ``#define K __global__ void`` is no
kernel and ``#if``/``#endif`` between ``template <...>`` and ``__global__``
do not split the declaration.  Explicit instantiations and specialisations
(``template __global__ void k<float>(float*);``) are not listed: they are
instances of a template kernel that is.

The parser is lenient: the compiled binary is the authority on which kernels
exist and how big their parameters are, so a parameter this parser cannot read
becomes an ``unknown`` :class:`Param` (its text kept) instead of an error for
the whole cell.  It sees through what cells define themselves: ``typedef`` /
``using`` / ``enum`` aliases at namespace scope (``typedef unsigned int uint;``
marshals as ``unsigned int``), object- and function-like ``#define``\\s used in
parameter lists, and the namespaces kernels live in.

This module finds the declarations (:func:`find_kernels`); the pieces it is built from:
:mod:`.scan` (blanking, brackets, top-level commas), :mod:`.decls` (:class:`KernelDecl`,
:class:`TemplateParam`, :class:`SignatureError`), :mod:`.declarator` (one parameter's type),
:mod:`.scope` (the cell's namespaces, macros and aliases) and :mod:`.templates` (explicit
instantiations, :func:`template_hint`, :func:`instantiate`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..runtime.launch.params import Param
from .decls import ANONYMOUS, KernelDecl, SignatureError, TemplateParam
from .declarator import BUILTINS, guess_name, parse_decl, read_param
from .scan import HEAD, NAME, blank, closing, line_at, split_default, split_top, without_directives
from .scope import Scope

__all__ = ["find_kernels"]


_ATTRIBUTES = {"__launch_bounds__", "__maxnreg__", "__cluster_dims__", "__attribute__",
               "__declspec", "alignas"}


def _extern_c(source: str, code: str, a: int, b: int) -> bool:
    """Whether code[a:b] holds ``extern "C"``."""
    m = re.search(r'\bextern\s*"(\s*)"', code[a:b])
    return bool(m) and source[a + m.start(1):a + m.end(1)] == "C"


def _template_param(text: str, scope: Scope | None, pos: int, skip) -> TemplateParam:
    body, default = split_default(text)
    body = " ".join(body.split())
    pack = "..." in body
    b = body.replace("...", " ")
    if re.match(r"template\b", b):
        gt = closing(b, b.index("<")) if "<" in b else -1
        words = re.findall(r"[A-Za-z_]\w*", b[gt + 1:] if gt >= 0 else b)
        return TemplateParam((words[1:] or [""])[-1], "template", "", default, pack)
    if m := re.fullmatch(r"\s*(?:typename|class)\s*([A-Za-z_]\w*)?\s*", b):
        return TemplateParam(m[1] or "", "type", "", default, pack)
    enums = set(scope.enums) if scope is not None else set()
    try:
        d = parse_decl(b, None, body, True, scope, pos, set(skip) | enums)
    except SignatureError:
        return TemplateParam(guess_name(b) or "", "value", b.strip(), default, pack)
    type_ = d.type + "*" * d.pointer + "&" * d.reference
    if not d.pointer and d.type in enums:
        type_ = scope.enums[d.type]
    return TemplateParam(d.name or "", "value", type_, default, pack)


def _declaration(source: str, code: str, clean: str, at: int, blocks, scope: Scope) -> KernelDecl | None:
    """Parse the declaration whose ``__global__`` starts at ``at``; None for explicit instantiations."""
    start = max(code.rfind(c, 0, at) for c in ";{}") + 1
    start += len(code[start:at]) - len(code[start:at].lstrip())
    line = line_at(code, start)
    tparams: list[TemplateParam] = []
    if t := re.search(r"\btemplate\s*(<?)", code[start:at]):
        lt = start + t.start(1)
        gt = closing(code, lt) if t[1] else -1
        if t[1] and gt < 0:
            raise SignatureError("unbalanced '<' in template parameter list", line)
        if gt < 0 or not code[lt + 1:gt].strip():
            return None                               # explicit instantiation / specialisation
        inner = code[lt + 1:gt]
        for a, b in split_top(inner):
            tparams.append(_template_param(inner[a:b], scope, at, [p.name for p in tparams]))
    extern_c = _extern_c(source, code, start, at) or any(a < at < b for a, b in blocks)
    pos, name, name_pos, qualifier = at + len("__global__"), None, at, ""
    while True:                                       # skip specifiers up to the name and '('
        m = HEAD.match(code, pos)
        word, ch, pos = (m["id"], m["ch"], m.end()) if m else (None, "", len(code))
        if word in _ATTRIBUTES:                       # __launch_bounds__(...) and friends
            nxt = HEAD.match(code, pos)
            if nxt and nxt["ch"] == "(":
                if (end := closing(code, nxt.end() - 1)) < 0:
                    raise SignatureError(f"unbalanced parentheses after {word}", line_at(code, pos))
                pos = end + 1
        elif word:                                    # the last word before '(' is the name
            word = re.sub(r"\s+", "", word)
            qualifier, _, name = word.rpartition("::")
            name_pos = pos - len(name)
        elif ch == '"':                               # a stray extern " "
            pos = code.find('"', pos) + 1 or len(code)
        elif ch == "(" and name and name not in BUILTINS:
            break
        elif ch == "<" and name:
            gt = closing(code, pos - 1)
            after = code[gt + 1:].lstrip()[:1] if gt >= 0 else "("
            if after == "(" or not after:
                return None                           # k<float>(...): an instance of a template
            pos = gt + 1                              # enable_if_t<...> k(...), X<T>::type k(...):
            name = None                               # the return type's arguments, skipped
        else:
            what = f"no '(' after kernel name '{name}'" if name else "no kernel name after __global__"
            raise SignatureError(what, line_at(code, pos))
    if (mac := scope.macro(name, at)) and mac[0] is None and re.fullmatch(NAME, mac[1]):
        qualifier, _, name = re.sub(r"\s+", "", mac[1]).rpartition("::")   # #define KNAME my_kernel
    comps = list(scope.namespace_at(at))
    if qualifier:                                     # __global__ void ns::k(...) {}
        qual = [(c, False) for c in qualifier.strip(":").split("::") if c]
        comps = qual if qualifier.startswith("::") else comps + qual
    open_ = pos - 1
    close = closing(code, open_)
    if close < 0:
        raise SignatureError(f"unbalanced parentheses in the parameter list of kernel '{name}'",
                             line_at(code, open_))
    body = re.match(r"[^{};()]*(?:\([^{};]*\)[^{};()]*)?([{;]?)", code[close + 1:])[1]
    if not body:                                      # noexcept(...) / -> T may come before it
        raise SignatureError(f"unbalanced parentheses or no '{{' / ';' after the parameters "
                             f"of kernel '{name}'", line_at(code, close))
    skip = {p.name for p in tparams if p.name}
    return KernelDecl(name, _params(code, clean, open_, close, scope, at, skip), line,
                      line_at(code, name_pos), extern_c, tuple(p.name for p in tparams), body == "{",
                      tuple(p.default for p in tparams),
                      "::".join(c or ANONYMOUS for c, _ in comps), tuple(tparams),
                      tuple(i for i, (_, inline) in enumerate(comps) if inline), (scope, at))


def _params(code: str, clean: str, open_: int, close: int, scope: Scope, at: int,
            skip) -> tuple[Param, ...]:
    """The parameters between the parentheses at code[open_] and code[close]."""
    params: list[Param] = []
    inner = code[open_ + 1:close]
    spans = split_top(inner)
    if len(spans) == 1 and inner.strip() in ("", "void"):
        return ()
    for a, b in spans:
        text = inner[a:b]
        if not text.strip():                          # k(float* x, ): the compiler says more
            continue
        declared = " ".join(clean[open_ + 1 + a:open_ + 1 + b].split())
        where = line_at(code, open_ + 1 + a + len(text) - len(text.lstrip()))
        expanded = scope.expand(text, at)
        if expanded is text:
            pieces = [text]
        else:                                         # #define ARGS float* x, int n
            pieces = [expanded[x:y] for x, y in split_top(expanded)]
            pieces = [p for p in pieces if p.strip()]
            if len(spans) == 1 and "".join(pieces).strip() in ("", "void"):
                return ()
        for piece in pieces:
            shown = declared if len(pieces) == 1 else " ".join(piece.split())
            params.append(read_param(piece, len(params), where, shown, scope, at, skip))
    return tuple(params)


def find_kernels(source: str) -> list[KernelDecl]:
    """All ``__global__`` functions of ``source`` in source order.

    A prototype followed by its definition (same namespace and name) is listed once, at the
    prototype's position, with the definition's data (and ``extern_c`` if either had it); other
    definitions of the name are listed separately: overloads, kernels of the same name in other
    namespaces, and ``#if``/``#else`` variants even with identical signatures (the binary says
    which one was compiled).  Raises :class:`SignatureError` only for declarations whose name or
    parentheses cannot be found; a parameter it cannot read is an ``unknown`` Param.
    """
    blanked = blank(source)
    code, clean = without_directives(source, blanked), blank(source, strings=False)
    scope = Scope(blanked, code)
    blocks = []
    for m in re.finditer(r'\bextern\s*"\s*"\s*\{', code):
        if _extern_c(source, code, m.start(), m.end()):
            end = closing(code, m.end() - 1, stop="")
            blocks.append((m.end() - 1, end if end >= 0 else len(code)))
    kernels: list[KernelDecl] = []
    for m in re.finditer(r"\b__global__\b", code):
        k = _declaration(source, code, clean, m.start(), blocks, scope)
        if k is None:
            continue
        sig = [(p.type, p.pointer, p.reference, p.function) for p in k.params]
        same = [i for i, o in enumerate(kernels) if (o.namespace, o.name, len(o.template))
                == (k.namespace, k.name, len(k.template))]
        exact = [i for i in same if [(p.type, p.pointer, p.reference, p.function)
                                     for p in kernels[i].params] == sig]
        protos = [i for i in exact or same if not kernels[i].definition]
        if k.definition and protos:
            old = kernels[protos[0]]
            kernels[protos[0]] = replace(k, extern_c=k.extern_c or old.extern_c)
        elif k.definition or not exact:
            kernels.append(k)
    return kernels
