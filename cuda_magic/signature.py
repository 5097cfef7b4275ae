"""Parse the ``__global__`` kernel declarations of a CUDA C++ cell.

Pure text work, no compiler: the source is first *blanked* (comments and the
contents of literals turned into spaces, same length, newlines kept) so that
offsets and line numbers in the blanked copy are those of the original.
Preprocessor lines are blanked too, so ``#define K __global__ void`` is no
kernel and ``#if``/``#endif`` between ``template <...>`` and ``__global__``
do not split the declaration.  Explicit instantiations and specialisations
(``template __global__ void k<float>(float*);``) are not listed: they are
instances of a template kernel that is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .runtime.types import Param, canonical_type

__all__ = ["KernelDecl", "SignatureError", "blank", "find_kernels", "instantiate"]

_LEX = re.compile(r"""
    (?P<comment>//(?:\\.|[^\\\n])*|/\*.*?(?:\*/|\Z))
  | (?P<raw>(?:u8|u|U|L)?R"(?P<d>[^()\\\s"]{0,16})\(.*?(?:\)(?P=d)"|\Z))
  | (?P<lit>"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)
  | [A-Za-z_]\w* | \.?\d(?:[eEpP][+-]|[\w.'])*      # identifiers, numbers (1'000 is no char)
""", re.S | re.X)
_NAME = r"(?:::\s*)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*"
_TOKEN = re.compile(_NAME + r"|\S")
_HEAD = re.compile(r"\s*(?:(?P<id>" + _NAME + r")|(?P<ch>\S))")
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "class",
               "union", "enum", "typename", "__grid_constant__", "register"}
_BUILTINS = {"void", "bool", "char", "short", "int", "long", "signed", "unsigned", "float",
             "double"}
_ATTRIBUTES = {"__launch_bounds__", "__maxnreg__", "__cluster_dims__", "__attribute__",
               "__declspec", "alignas"}


class SignatureError(ValueError):
    """A ``__global__`` declaration that cannot be parsed; ``.line`` is 1-based (or None)."""

    def __init__(self, message: str, line: int | None = None):
        if line is not None and f"line {line}" not in message:
            message = f"line {line}: {message}"
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class KernelDecl:
    """One ``__global__`` function as declared in a cell."""

    name: str                       # unqualified C++ name
    params: tuple[Param, ...]
    line: int                       # 1-based line where the declaration statement starts
    name_line: int                  # 1-based line of the name
    extern_c: bool
    template: tuple[str, ...] = ()  # template parameter names in order
    definition: bool = True         # has a body (False for a prototype)
    template_defaults: tuple[str | None, ...] = ()  # default argument text per template parameter


def _blank(source: str, strings: bool = True) -> str:
    out = list(source)
    for m in _LEX.finditer(source):
        kind = m.lastgroup                     # None for identifiers and numbers
        if kind is None or (kind != "comment" and not strings):
            continue
        a, b = m.span()
        if kind != "comment":                  # keep the quotes, blank what is between
            a = source.index('"', a) + 1 if kind == "raw" else a + 1
            if b > a and source[b - 1] == source[a - 1]:
                b -= 1
        for k in range(a, b):
            if out[k] not in "\r\n":
                out[k] = " "
    return "".join(out)


def blank(source: str) -> str:
    """``source`` with comments and the contents of string/char literals turned into spaces.

    Same length, newlines kept; quotes stay, so ``extern "C"`` becomes ``extern " "``.
    """
    return _blank(source)


def _code(source: str) -> str:
    """blank(source) with preprocessor lines (and their continuations) blanked as well."""
    lines, cont = blank(source).split("\n"), False
    for i, text in enumerate(lines):
        if cont or text.lstrip().startswith("#"):
            cont = text.rstrip().endswith("\\")
            lines[i] = re.sub(r"[^\r]", " ", text)
    return "\n".join(lines)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _close(text: str, i: int, stop: str = ";") -> int:
    """Index of the bracket closing ``text[i]`` ('(', '<' or '{'); -1 if unbalanced or a stop char comes
    first.  '<' and '>' count only outside (), [] and {}."""
    depth = angle = 0
    for j in range(i, len(text)):
        c = text[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "<" and depth == 0:
            angle += 1
        elif c == ">" and depth == 0 and angle:
            angle -= 1
        elif c in stop:
            return -1
        if depth < 0:
            return -1
        if depth == angle == 0:
            return j
    return -1


def _split(text: str) -> list[tuple[int, int]]:
    """Spans of the top-level comma-separated parts of ``text``."""
    spans, depth, angle, start = [], 0, 0, 0
    for j, c in enumerate(text):
        depth += (c in "([{") - (c in ")]}")
        if depth == 0 and c in "<>":
            angle = max(0, angle + (1 if c == "<" else -1))
        elif depth == angle == 0 and c == ",":
            spans.append((start, j))
            start = j + 1
    return spans + [(start, len(text))]


def _default(text: str) -> tuple[str, str | None]:
    """Split ``int N = 4`` into ("int N", "4"); the default is None if there is none."""
    b = _split(text.replace("=", ","))[0][1]             # the first top-level '='
    return (text, None) if b == len(text) else (text[:b], " ".join(text[b + 1:].split()))


def _parse_decl(text: str, line: int, declared: str, named: bool = True):
    """(name or None, canonical type, pointer depth, 'const' before the first '*') of a declaration."""
    text = re.sub(r"\[\[.*?\]\]|__attribute__\s*\(\(.*?\)\)", " ", _default(text)[0])
    arrays = re.search(r"(?:\s*\[[^\]]*\])+\s*$", text)
    pointer = 1 if arrays else 0
    toks: list[str] = []
    body, pos = text[:arrays.start()] if arrays else text, 0
    while m := _TOKEN.search(body, pos):
        tok, pos = re.sub(r"\s*::\s*", "::", m.group()), m.end()
        if tok == "<" and toks and toks[-1] != "*":
            if (end := _close(body, m.start())) < 0:
                raise SignatureError(f"unbalanced '<' in parameter '{declared}'", line)
            inner = re.sub(r"\s*([<>,*&])\s*", r"\1", " ".join(body[m.start():end + 1].split()))
            toks[-1], pos = toks[-1] + inner.replace(",", ", "), end + 1
        elif tok == "&":
            raise SignatureError(f"reference parameter '{declared}' is not allowed in a kernel", line)
        elif tok.startswith("::") and toks and toks[-1] != "*" and toks[-1] not in _QUALIFIERS:
            toks[-1] += tok                           # Foo<T>::type
        elif tok == "*" or re.match(r"(?:::)?[A-Za-z_]", tok):
            toks.append(tok)
        else:
            raise SignatureError(f"cannot parse parameter '{declared}'", line)
    first_star = toks.index("*") if "*" in toks else len(toks)
    core = [t for t in toks if t != "*" and t not in _QUALIFIERS]
    name = None
    if (named and len(core) >= 2 and toks[-1] == core[-1] and core[-1] not in _BUILTINS
            and re.fullmatch(r"[A-Za-z_]\w*", core[-1])):
        name = core.pop()
    if not core:
        raise SignatureError(f"cannot parse parameter '{declared}' (no type)", line)
    return (name, canonical_type(" ".join(core)), pointer + toks.count("*"),
            "const" in toks[:first_star])


def _extern_c(source: str, code: str, a: int, b: int) -> bool:
    """Whether code[a:b] holds ``extern "C"``."""
    m = re.search(r'\bextern\s*"(\s*)"', code[a:b])
    return bool(m) and source[a + m.start(1):a + m.end(1)] == "C"


def _declaration(source: str, code: str, clean: str, at: int, blocks) -> KernelDecl | None:
    """Parse the declaration whose ``__global__`` starts at ``at``; None for explicit instantiations."""
    start = max(code.rfind(c, 0, at) for c in ";{}") + 1
    start += len(code[start:at]) - len(code[start:at].lstrip())
    line = _line(code, start)
    names, defaults = (), ()
    if t := re.search(r"\btemplate\s*(<?)", code[start:at]):
        lt = start + t.start(1)
        gt = _close(code, lt) if t[1] else -1
        if t[1] and gt < 0:
            raise SignatureError("unbalanced '<' in template parameter list", line)
        if gt < 0 or not code[lt + 1:gt].strip():
            return None                               # explicit instantiation / specialisation
        inner = code[lt + 1:gt]
        parts = [_default(inner[a:b]) for a, b in _split(inner)]
        names = tuple((re.findall(r"[A-Za-z_]\w*", p)[1:] or [""])[-1] for p, _ in parts)
        defaults = tuple(d for _, d in parts)
    extern_c = _extern_c(source, code, start, at) or any(a < at < b for a, b in blocks)
    pos, name, name_pos = at + len("__global__"), None, at
    while True:                                       # skip specifiers up to the name and '('
        m = _HEAD.match(code, pos)
        word, ch, pos = (m["id"], m["ch"], m.end()) if m else (None, "", len(code))
        if word in _ATTRIBUTES:                       # __launch_bounds__(...) and friends
            nxt = _HEAD.match(code, pos)
            if nxt and nxt["ch"] == "(":
                if (end := _close(code, nxt.end() - 1)) < 0:
                    raise SignatureError(f"unbalanced parentheses after {word}", _line(code, pos))
                pos = end + 1
        elif word:                                    # the last word before '(' is the name
            name = word.split("::")[-1].strip()
            name_pos = pos - len(name)
        elif ch == '"':                               # a stray extern " "
            pos = code.find('"', pos) + 1 or len(code)
        elif ch == "(" and name and name not in _BUILTINS:
            break
        elif ch == "<" and name:
            return None                               # k<float>(...): an instance of a template
        else:
            what = f"no '(' after kernel name '{name}'" if name else "no kernel name after __global__"
            raise SignatureError(what, _line(code, pos))
    open_ = pos - 1
    close = _close(code, open_)
    if close < 0:
        raise SignatureError(f"unbalanced parentheses in the parameter list of kernel '{name}'",
                             _line(code, open_))
    body = re.match(r"[^{};()]*(?:\([^{};]*\)[^{};()]*)?([{;]?)", code[close + 1:])[1]
    if not body:                                      # noexcept(...) / -> T may come before it
        raise SignatureError(f"unbalanced parentheses or no '{{' / ';' after the parameters "
                             f"of kernel '{name}'", _line(code, close))
    return KernelDecl(name, _params(code, clean, open_, close), line, _line(code, name_pos),
                      extern_c, names, body == "{", defaults)


def _params(code: str, clean: str, open_: int, close: int) -> tuple[Param, ...]:
    """The parameters between the parentheses at code[open_] and code[close]."""
    params, inner = [], code[open_ + 1:close]
    spans = _split(inner)
    if len(spans) == 1 and inner.strip() in ("", "void"):
        return ()
    for i, (a, b) in enumerate(spans):
        text = inner[a:b]
        declared = " ".join(clean[open_ + 1 + a:open_ + 1 + b].split())
        where = _line(code, open_ + 1 + a + len(text) - len(text.lstrip()))
        name, type_, pointer, const = _parse_decl(text, where, declared)
        params.append(Param(name or f"arg{i}", type_, pointer, const and pointer > 0, declared))
    return tuple(params)


def find_kernels(source: str) -> list[KernelDecl]:
    """All ``__global__`` functions of ``source`` in source order.

    A prototype followed by its definition is listed once, at the prototype's position,
    with the definition's data (and ``extern_c`` if either had it); overloads (other
    parameter types) are listed separately.  Raises :class:`SignatureError` for
    declarations that cannot be parsed.
    """
    code, clean = _code(source), _blank(source, strings=False)
    blocks = []
    for m in re.finditer(r'\bextern\s*"\s*"\s*\{', code):
        if _extern_c(source, code, m.start(), m.end()):
            end = _close(code, m.end() - 1, stop="")
            blocks.append((m.end() - 1, end if end >= 0 else len(code)))
    kernels: list[KernelDecl] = []
    for m in re.finditer(r"\b__global__\b", code):
        k = _declaration(source, code, clean, m.start(), blocks)
        if k is None:
            continue
        sig = [(p.type, p.pointer) for p in k.params]
        same = [i for i, o in enumerate(kernels) if o.name == k.name]
        exact = [i for i in same if [(p.type, p.pointer) for p in kernels[i].params] == sig]
        protos = [i for i in exact or same if not kernels[i].definition]
        if k.definition and protos:
            old = kernels[protos[0]]
            kernels[protos[0]] = replace(k, extern_c=k.extern_c or old.extern_c)
        elif k.definition or not exact:
            kernels.append(k)
    return kernels


def instantiate(decl: KernelDecl, spelling: str) -> tuple[str, tuple[Param, ...]]:
    """``("axpy_float", params with T=float)`` for the spelling ``"axpy<float>"`` of a template kernel.

    The Python name is the spelling with ``*`` as ``_ptr`` and other non-identifier characters as
    ``_``.  Type parameters are substituted (``T* x`` with ``T=float*`` is a ``float**``), non-type
    ones only in ``declared``; trailing arguments may be left out where the template has defaults.
    """
    if not decl.template:
        raise SignatureError(f"kernel '{decl.name}' is not a template", decl.line)
    m = re.fullmatch(r"\s*(" + _NAME + r")\s*(<.*>)\s*", spelling, re.S)
    if not m or _close(m[2], 0) != len(m[2]) - 1:
        raise SignatureError(f"cannot parse instantiation '{spelling}' (expected {decl.name}<...>)",
                             decl.line)
    if m[1].split("::")[-1].strip() != decl.name:
        raise SignatureError(f"'{spelling}' does not instantiate kernel '{decl.name}'", decl.line)
    inner = m[2][1:-1]
    args = [re.sub(r"\s*\*", "*", " ".join(inner[a:b].split())) for a, b in _split(inner)]
    args = args if inner.strip() else []
    defaults = decl.template_defaults or (None,) * len(decl.template)
    least = max([i + 1 for i, d in enumerate(defaults) if d is None], default=0)
    if not least <= len(args) <= len(decl.template):
        count = f"{least} to {len(decl.template)}" if least < len(decl.template) else str(least)
        raise SignatureError(f"'{spelling}': kernel '{decl.name}' takes {count} template argument(s) "
                             f"<{', '.join(decl.template)}>, got {len(args)}", decl.line)
    mapping: dict[str, str] = {}

    def subst(text: str) -> str:
        keys = [k for k in mapping if k]
        if not keys:
            return text
        return re.sub(r"\b(?:" + "|".join(map(re.escape, keys)) + r")\b", lambda w: mapping[w[0]], text)

    for i, tname in enumerate(decl.template):
        mapping[tname] = args[i] if i < len(args) else subst(defaults[i])
    params = []
    for p in decl.params:
        declared = subst(p.declared)
        if p.type in mapping:
            _, atype, apointer, aconst = _parse_decl(mapping[p.type], decl.line, declared, named=False)
            pointer = p.pointer + apointer
            const = pointer > 0 and (aconst if apointer else p.const or aconst)
            params.append(Param(p.name, atype, pointer, const, declared))
        else:
            params.append(replace(p, type=canonical_type(subst(p.type)), declared=declared))
    python_name = re.sub(r"_+", "_", re.sub(r"\W", "_", spelling.strip().replace("*", "_ptr")))
    return python_name.rstrip("_"), tuple(params)
