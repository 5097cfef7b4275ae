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
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace
from itertools import product

from ..runtime.types import Param, canonical_type

__all__ = ["KernelDecl", "TemplateParam", "SignatureError", "blank", "explicit_instances",
           "find_kernels", "instantiate", "param_from_type", "template_hint"]

_LEX = re.compile(r"""
    (?P<comment>//(?:\\.|[^\\\n])*|/\*.*?(?:\*/|\Z))
  | (?P<raw>(?:u8|u|U|L)?R"(?P<d>[^()\\\s"]{0,16})\(.*?(?:\)(?P=d)"|\Z))
  | (?P<lit>"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)
  | [A-Za-z_]\w* | \.?\d(?:[eEpP][+-]|[\w.'])*      # identifiers, numbers (1'000 is no char)
""", re.S | re.X)
_NAME = r"(?:::\s*)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*"
_TOKEN = re.compile(_NAME + r"|\S")
_HEAD = re.compile(r"\s*(?:(?P<id>" + _NAME + r")|(?P<ch>\S))")
_IDENT = re.compile(r"\b[A-Za-z_]\w*")
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "class",
               "union", "enum", "typename", "__grid_constant__", "register"}
_BUILTINS = {"void", "bool", "char", "short", "int", "long", "signed", "unsigned", "float",
             "double"}
_ATTRIBUTES = {"__launch_bounds__", "__maxnreg__", "__cluster_dims__", "__attribute__",
               "__declspec", "alignas"}
ANONYMOUS = "(anonymous namespace)"    # how demangled names spell an unnamed namespace


class SignatureError(ValueError):
    """A ``__global__`` declaration that cannot be parsed; ``.line`` is 1-based (or None)."""

    def __init__(self, message: str, line: int | None = None):
        if line is not None and f"line {line}" not in message:
            message = f"line {line}: {message}"
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class TemplateParam:
    """One template parameter of a kernel.

    ``kind``: ``"type"`` (``typename T``, ``class T``), ``"value"`` (a non-type
    parameter; ``type`` is its canonical C type: ``"int"``, ``"unsigned long"``
    for ``size_t``, ``"bool"``, an enum's qualified name) or ``"template"`` (a
    template template parameter).  ``pack`` for ``typename... Ts``.
    """

    name: str                       # "" if unnamed
    kind: str
    type: str = ""
    default: str | None = None
    pack: bool = False


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
    namespace: str = ""             # "" (global), "a::b"; an unnamed one is "(anonymous namespace)"
    template_params: tuple[TemplateParam, ...] = ()
    inline_namespaces: tuple[int, ...] = ()   # which components of namespace are inline ones
    # (the cell's macros and aliases, offset): what instantiate() reads template arguments with;
    # not part of the declaration's identity
    context: object = field(default=None, compare=False, repr=False, hash=False)

    @property
    def qualified(self) -> str:
        """``ns::k`` as demangled names spell it (``(anonymous namespace)::k``); ``k`` at global scope."""
        return f"{self.namespace}::{self.name}" if self.namespace else self.name

    @property
    def binary_name(self) -> str:
        """The name of the kernel's entry in the binary, demangled and without parameters: the bare
        name for ``extern "C"`` (C linkage drops namespaces), else :attr:`qualified`."""
        return self.name if self.extern_c else self.qualified


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


def _code(source: str, blanked: str | None = None) -> str:
    """blank(source) with preprocessor lines (and their continuations) blanked as well."""
    lines, cont = (blank(source) if blanked is None else blanked).split("\n"), False
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


def _close_paren(text: str, i: int) -> int:
    """Index of the ')' closing the '(' at ``text[i]``, counting parentheses only; -1 if none."""
    depth = 0
    for j in range(i, len(text)):
        depth += (text[j] == "(") - (text[j] == ")")
        if depth == 0:
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


def _split_parens(text: str) -> list[str]:
    """Macro arguments: split at commas outside parentheses (the preprocessor ignores <>)."""
    out, depth, start = [], 0, 0
    for j, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth == 0 and c == ",":
            out.append(text[start:j])
            start = j + 1
    return out + [text[start:]]


def _default(text: str) -> tuple[str, str | None]:
    """Split ``int N = 4`` into ("int N", "4"); the default is None if there is none."""
    b = _split(text.replace("=", ","))[0][1]             # the first top-level '='
    return (text, None) if b == len(text) else (text[:b], " ".join(text[b + 1:].split()))


def _norm(text: str) -> str:
    """Type text with single spaces, none around ``* & ( ) < >``, ``", "`` between arguments."""
    text = re.sub(r"\s*([*&()<>,\[\]])\s*", r"\1", " ".join(text.split()))
    return text.replace(",", ", ")


# -- what the cell defines: scopes, macros, aliases -------------------------------------------

_SCOPE_HEAD = re.compile(r"(?:\b(?P<inline>inline)\s+)?\bnamespace\b\s*(?P<name>(?:inline\s+)?"
                         r"[A-Za-z_]\w*(?:\s*::\s*(?:inline\s+)?[A-Za-z_]\w*)*)?\s*"
                         r"(?:\[\[[^\]]*\]\]\s*|__attribute__\s*\(\([^;{}]*?\)\)\s*)*$")


def _scopes(code: str) -> list[list]:
    """Every ``{...}`` of ``code`` in order of the '{': [open, close, kind, components, parent index or
    -1]; kind is "namespace" (components: ((name, inline), ...), "" for an unnamed one), "extern" (a
    linkage block) or "other"."""
    out: list[list] = []
    stack: list[int] = []
    prev = 0
    for m in re.finditer(r"[;{}]", code):
        i = m.start()
        head, prev = code[prev:i], i + 1
        if code[i] == "{":
            kind, comps = "other", ()
            if ns := _SCOPE_HEAD.search(head):
                name = ns["name"] or ""
                comps = tuple((re.sub(r"^inline\s+", "", c.strip()), c.strip().startswith("inline"))
                              for c in name.split("::")) if name else (("", False),)
                if ns["inline"]:
                    comps = tuple((n, True) for n, _ in comps)
                kind = "namespace"
            elif re.search(r'\bextern\s*"\s*"\s*$', head):
                kind = "extern"
            out.append([i, len(code), kind, comps, stack[-1] if stack else -1])
            stack.append(len(out) - 1)
        elif code[i] == "}" and stack:
            out[stack.pop()][1] = i
    return out


def _macros(text: str) -> dict[str, list[tuple[int, list[str] | None, str | None]]]:
    """``#define``/``#undef`` lines of blanked source: name -> [(offset, parameters or None for an
    object-like macro, replacement or None for #undef)] in source order."""
    out: dict[str, list] = {}
    pos = 0
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        start, full = pos, lines[i]
        while full.rstrip().endswith("\\") and i + 1 < len(lines):
            pos += len(lines[i]) + 1
            i += 1
            full = full.rstrip()[:-1] + " " + lines[i]
        pos += len(lines[i]) + 1
        i += 1
        if m := re.match(r"\s*#\s*define\s+([A-Za-z_]\w*)(\([^)]*\))?(.*)", full):
            params = None if m[2] is None else [p.strip() for p in m[2][1:-1].split(",") if p.strip()]
            out.setdefault(m[1], []).append((start, params, m[3].strip()))
        elif m := re.match(r"\s*#\s*undef\s+([A-Za-z_]\w*)", full):
            out.setdefault(m[1], []).append((start, None, None))
    return out


def _declarator_name(text: str) -> str | None:
    """The name a ``typedef`` declarator introduces: ``fn`` in ``float (*fn)(float)``."""
    if m := re.search(r"\(\s*(?:(?:[*&^]|const\b|volatile\b|__restrict__\b)\s*)+([A-Za-z_]\w*)\s*\)", text):
        return m[1]
    if m := re.search(r"([A-Za-z_]\w*)\s*\([^()]*\)\s*$", text):   # a function type
        return m[1]
    m = re.search(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*$", text)
    return m[1] if m and m[1] not in _BUILTINS | _QUALIFIERS else None


@dataclass(frozen=True)
class _Type:
    """What an alias stands for."""

    type: str
    pointer: int = 0
    const: bool = False
    reference: bool = False
    function: bool = False


class _Scope:
    """The names a cell defines that its kernel declarations use: macros, aliases, namespaces."""

    def __init__(self, blanked: str, code: str):
        self.code = code
        self.scopes = _scopes(code)
        self._opens = [s[0] for s in self.scopes]
        self.macros = _macros(blanked)
        self.aliases: dict[str, list[tuple[int, bool, str]]] = {}   # name -> [(offset, named, text)]
        self.enums: dict[str, str] = {}                             # enum name -> qualified name
        self._cache: dict = {}
        self._busy: set = set()
        self._collect()

    # namespaces
    def _enclosing(self, pos: int) -> list:
        """The scopes around ``pos``, outermost first."""
        i = bisect.bisect_left(self._opens, pos) - 1
        while i >= 0 and self.scopes[i][1] < pos:
            i = self.scopes[i][4]
        chain = []
        while i >= 0:
            chain.append(self.scopes[i])
            i = self.scopes[i][4]
        return chain[::-1]

    def namespace_at(self, pos: int) -> tuple[tuple[str, bool], ...]:
        """((name, inline), ...) of the namespaces enclosing ``pos``, outermost first."""
        return tuple(c for s in self._enclosing(pos) if s[2] == "namespace" for c in s[3])

    def _namespace_scope(self, pos: int) -> bool:
        return all(s[2] != "other" for s in self._enclosing(pos))

    # macros
    def macro(self, name: str, pos: int):
        """(parameters or None, replacement) of macro ``name`` as defined before ``pos``, or None."""
        found = None
        for at, params, body in self.macros.get(name, ()):
            if at < pos:
                found = None if body is None else (params, body)
        return found

    def expand(self, text: str, pos: int, active: frozenset = frozenset()) -> str:
        """``text`` with the macros defined before ``pos`` expanded (no ``#``/``##``)."""
        if not self.macros or not any(m[0] in self.macros for m in _IDENT.finditer(text)):
            return text
        out, i = [], 0
        while m := _IDENT.search(text, i):
            out.append(text[i:m.start()])
            name, i = m[0], m.end()
            mac = self.macro(name, pos) if name not in active else None
            if mac is None:
                out.append(name)
                continue
            params, body = mac
            if params is not None:                      # function-like: needs (args)
                k = len(text) - len(text[i:].lstrip())
                end = _close_paren(text, k) if text[k:k + 1] == "(" else -1
                if end < 0 or "#" in body:
                    out.append(name)
                    continue
                args = [a.strip() for a in _split_parens(text[k + 1:end])]
                values = dict(zip(params, args))
                if params and params[-1] == "...":
                    values["__VA_ARGS__"] = ", ".join(args[len(params) - 1:])
                body = _IDENT.sub(lambda w: values.get(w[0], w[0]), body)
                i = end + 1
            out.append(" " + self.expand(body, pos, active | {name}) + " ")
            if sum(map(len, out)) > 100_000:
                return text
        out.append(text[i:])
        result = "".join(out)
        return text if result == text else result

    # aliases
    def _add(self, name: str, pos: int, named: bool, text: str) -> None:
        ns = "::".join(n for n, _ in self.namespace_at(pos) if n)
        for key in {name, f"{ns}::{name}" if ns else name}:
            self.aliases.setdefault(key, []).append((pos, named, text))

    def _collect(self) -> None:
        code = self.code
        for m in re.finditer(r"\btypedef\b([^;{}]*);", code):
            if not self._namespace_scope(m.start()):
                continue
            parts = [m[1][a:b] for a, b in _split(m[1])]
            first = _declarator_name(parts[0])
            if not first:
                continue
            self._add(first, m.start(), True, parts[0])
            base = re.match(r"(.*?)[\s*&]*\b" + first + r"\b", parts[0])
            for part in parts[1:]:                       # typedef unsigned int uint, *puint;
                if base and (n := _declarator_name(part)):
                    self._add(n, m.start(), True, base[1] + " " + part)
        for m in re.finditer(r"\busing\s+([A-Za-z_]\w*)\s*(?:\[\[.*?\]\]\s*)?=([^;{}]*);", code):
            stmt = max(code.rfind(c, 0, m.start()) for c in ";{}") + 1
            if self._namespace_scope(m.start()) and not re.search(r"\btemplate\b", code[stmt:m.start()]):
                self._add(m[1], m.start(), False, m[2])
        for m in re.finditer(r"\benum\b\s*(?:class\b|struct\b)?\s*(?:\[\[.*?\]\]\s*)?([A-Za-z_]\w*)?"
                             r"\s*(?::\s*([^{};]+?))?\s*([{;])", code):
            if not self._namespace_scope(m.start()):
                continue
            names = [m[1]] if m[1] else []
            stmt = max(code.rfind(c, 0, m.start()) for c in ";{}") + 1
            if m[3] == "{" and re.search(r"\btypedef\s*$", code[stmt:m.start()]):
                end = _close(code, m.end() - 1, stop="")
                if end > 0 and (t := re.match(r"\s*([A-Za-z_]\w*)\s*;", code[end + 1:])):
                    names.append(t[1])
            ns = "::".join(n for n, _ in self.namespace_at(m.start()) if n)
            for name in names:
                self._add(name, m.start(), False, m[2] or "int")
                self.enums[name] = self.enums[f"{ns}::{name}" if ns else name] = \
                    f"{ns}::{name}" if ns else name

    def resolve(self, name: str, pos: int) -> _Type | None:
        """What alias ``name`` (a canonical type) stands for at ``pos``; None if it is no alias."""
        entries = self.aliases.get(name)
        if not entries:
            return None
        before = [e for e in entries if e[0] < pos]
        at, named, text = (before or entries)[-1]
        key = (name, at)
        if key in self._cache:
            return self._cache[key]
        if key in self._busy:                            # typedef struct Foo Foo;
            return None
        self._busy.add(key)
        try:
            d = _parse_decl(self.expand(text, at), None, text, named=named, scope=self, pos=at)
            found = None if d.type == name and not (d.pointer or d.reference or d.function) else \
                _Type(d.type, d.pointer, d.const, d.reference, d.function)
        except SignatureError:
            found = None
        finally:
            self._busy.discard(key)
        self._cache[key] = found
        return found


# -- one declaration ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Decl:
    name: str | None
    type: str
    pointer: int = 0
    const: bool = False              # the innermost pointee (or the value itself) is const
    reference: bool = False
    function: bool = False


def _strip_attributes(text: str) -> str:
    text = re.sub(r"\[\[.*?\]\]", " ", text.replace(ANONYMOUS + "::", ""))
    while m := re.search(r"\b(?:__attribute__|__align__|alignas|__declspec)\s*\(", text):
        end = _close_paren(text, m.end() - 1)
        text = text[:m.start()] + " " + (text[end + 1:] if end > 0 else "")
    return text


def _top_paren(text: str) -> int:
    """Index of the first '(' outside template argument lists; -1 if none."""
    i = 0
    while i < len(text):
        c = text[i]
        if c == "<" and text[:i].rstrip()[-1:].isidentifier():
            end = _close(text, i)
            if end > 0:
                i = end + 1
                continue
        if c == "(":
            return i
        i += 1
    return -1


def _parse_decl(text: str, line: int | None, declared: str, named: bool = True,
                scope: _Scope | None = None, pos: int = 0, skip=()) -> _Decl:
    """Name (or None), canonical type, pointer depth, const-ness, reference and function flags of one
    declaration; aliases the cell defines are seen through (except names in ``skip``)."""
    text = _strip_attributes(_default(text)[0])
    if (paren := _top_paren(text)) >= 0:
        return _parse_paren(text, paren, line, declared, named, scope, pos, skip)
    arrays = re.search(r"(?:\s*\[[^\]]*\])+\s*$", text)
    pointer = 1 if arrays else 0
    toks: list[str] = []
    body, at = text[:arrays.start()] if arrays else text, 0
    while m := _TOKEN.search(body, at):
        tok, at = re.sub(r"\s*::\s*", "::", m.group()), m.end()
        if tok == "<" and toks and toks[-1] not in "*&":
            if (end := _close(body, m.start())) < 0:
                raise SignatureError(f"unbalanced '<' in parameter '{declared}'", line)
            inner = _norm(body[m.start():end + 1])
            toks[-1], at = toks[-1] + inner, end + 1
        elif tok.startswith("::") and toks and toks[-1] not in "*&" and toks[-1] not in _QUALIFIERS:
            toks[-1] += tok                           # Foo<T>::type
        elif tok in ("*", "&") or re.match(r"(?:::)?[A-Za-z_]", tok):
            toks.append(tok)
        else:
            raise SignatureError(f"cannot parse parameter '{declared}'", line)
    first_star = min([i for i, t in enumerate(toks) if t in "*&"] or [len(toks)])
    core = [t for t in toks if t not in ("*", "&") and t not in _QUALIFIERS]
    name = None
    if (named and len(core) >= 2 and toks[-1] == core[-1] and core[-1] not in _BUILTINS
            and re.fullmatch(r"[A-Za-z_]\w*", core[-1])):
        name = core.pop()
    if not core:
        raise SignatureError(f"cannot parse parameter '{declared}' (no type)", line)
    d = _Decl(name, canonical_type(" ".join(core)), pointer + toks.count("*"),
              "const" in toks[:first_star], "&" in toks)
    return _see_through(d, scope, pos, skip)


def _see_through(d: _Decl, scope: _Scope | None, pos: int, skip) -> _Decl:
    """``d`` with its type replaced by what the cell's alias of that name stands for."""
    t = scope.resolve(d.type, pos) if scope is not None and d.type not in skip else None
    if t is None:
        return d
    const = t.const if t.pointer else t.const or d.const
    return _Decl(d.name, t.type, t.pointer + d.pointer, const, d.reference or t.reference, t.function)


def _parse_paren(text: str, i: int, line, declared: str, named: bool, scope, pos, skip) -> _Decl:
    """Declarations with parentheses: ``float (*f)(float)``, ``void (*)(int)``, ``float (&a)[4]``,
    ``float f(float)`` (a function parameter: a pointer)."""
    j = _close_paren(text, i)
    if j < 0:
        raise SignatureError(f"unbalanced parentheses in parameter '{declared}'", line)
    head, group, after = text[:i], text[i + 1:j].strip(), text[j + 1:].strip()
    g = re.fullmatch(r"((?:\s*(?:[*&^]|const\b|volatile\b|__restrict__\b|__restrict\b|restrict\b))*)"
                     r"\s*([A-Za-z_]\w*)?\s*((?:\[[^\]]*\]\s*)*)", group)
    if g and re.search(r"[*&^]", g[1]):             # a grouped declarator: (*f), (&r), (* const p)
        stars, ref, name = g[1].count("*") + g[1].count("^") + bool(g[3]), "&" in g[1], g[2]
        base = _parse_decl(head, line, declared, False, scope, pos, skip)
        if after.startswith("("):
            end = _close_paren(after, 0)
            if end < 0 or not re.fullmatch(r"(?:noexcept|\s)*", after[end + 1:]):
                raise SignatureError(f"cannot parse parameter '{declared}'", line)
            ret = base.type + "*" * base.pointer + "&" * base.reference
            return _Decl(name, f"{ret}({_norm(after[1:end])})", stars, False, ref, True)
        if not after or after.startswith("["):        # (*a)[4]: a pointer to rows of the base type
            return _Decl(name, base.type, base.pointer + stars, base.const, ref, base.function)
        raise SignatureError(f"cannot parse parameter '{declared}'", line)
    if not re.fullmatch(r"(?:noexcept|\s)*", after):  # PTR(float) x: an unknown macro, say
        raise SignatureError(f"cannot parse parameter '{declared}'", line)
    h = _parse_decl(head, line, declared, named, scope, pos, skip)   # float f(float)
    if h.name is None and re.fullmatch(r"\s*[A-Z][A-Z0-9_]*\s*", head):
        raise SignatureError(f"cannot parse parameter '{declared}'", line)  # an unknown MACRO(...)
    ret = h.type + "*" * h.pointer + "&" * h.reference
    return _Decl(h.name, f"{ret}({_norm(group)})", 0, False, False, True)


def _guess_name(text: str) -> str | None:
    """The name at the end of a declaration this parser cannot read (``PTR(float) x`` -> x)."""
    body = _default(text)[0]
    m = re.search(r"([A-Za-z_]\w*)\s*$", body)
    if m and m[1] not in _BUILTINS | _QUALIFIERS and re.search(r"[\w)>*&]", body[:m.start()]):
        return m[1]
    return None


def _to_param(d: _Decl, name: str, declared: str) -> Param:
    pointer = d.pointer or (1 if d.function and not d.reference else 0)  # a function decays
    const = d.const and (pointer > 0 or d.reference) and not d.function
    return Param(name, d.type, pointer, const, declared, d.reference, d.function)


def _param(text: str, i: int, line: int, declared: str, scope, pos: int, skip) -> Param:
    try:
        d = _parse_decl(text, line, declared, True, scope, pos, skip)
    except SignatureError:
        return Param(_guess_name(text) or f"arg{i}", " ".join(_default(text)[0].split()),
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
        d = _parse_decl(text, None, declared, named=False)
    except SignatureError:
        return Param(name, text, declared=declared, unknown=True)
    return _to_param(d, name, declared)


# -- kernels ------------------------------------------------------------------------------------

def _extern_c(source: str, code: str, a: int, b: int) -> bool:
    """Whether code[a:b] holds ``extern "C"``."""
    m = re.search(r'\bextern\s*"(\s*)"', code[a:b])
    return bool(m) and source[a + m.start(1):a + m.end(1)] == "C"


def _template_param(text: str, scope: _Scope | None, pos: int, skip) -> TemplateParam:
    body, default = _default(text)
    body = " ".join(body.split())
    pack = "..." in body
    b = body.replace("...", " ")
    if re.match(r"template\b", b):
        gt = _close(b, b.index("<")) if "<" in b else -1
        words = re.findall(r"[A-Za-z_]\w*", b[gt + 1:] if gt >= 0 else b)
        return TemplateParam((words[1:] or [""])[-1], "template", "", default, pack)
    if m := re.fullmatch(r"\s*(?:typename|class)\s*([A-Za-z_]\w*)?\s*", b):
        return TemplateParam(m[1] or "", "type", "", default, pack)
    enums = set(scope.enums) if scope is not None else set()
    try:
        d = _parse_decl(b, None, body, True, scope, pos, set(skip) | enums)
    except SignatureError:
        return TemplateParam(_guess_name(b) or "", "value", b.strip(), default, pack)
    type_ = d.type + "*" * d.pointer + "&" * d.reference
    if not d.pointer and d.type in enums:
        type_ = scope.enums[d.type]
    return TemplateParam(d.name or "", "value", type_, default, pack)


def _declaration(source: str, code: str, clean: str, at: int, blocks, scope: _Scope) -> KernelDecl | None:
    """Parse the declaration whose ``__global__`` starts at ``at``; None for explicit instantiations."""
    start = max(code.rfind(c, 0, at) for c in ";{}") + 1
    start += len(code[start:at]) - len(code[start:at].lstrip())
    line = _line(code, start)
    tparams: list[TemplateParam] = []
    if t := re.search(r"\btemplate\s*(<?)", code[start:at]):
        lt = start + t.start(1)
        gt = _close(code, lt) if t[1] else -1
        if t[1] and gt < 0:
            raise SignatureError("unbalanced '<' in template parameter list", line)
        if gt < 0 or not code[lt + 1:gt].strip():
            return None                               # explicit instantiation / specialisation
        inner = code[lt + 1:gt]
        for a, b in _split(inner):
            tparams.append(_template_param(inner[a:b], scope, at, [p.name for p in tparams]))
    extern_c = _extern_c(source, code, start, at) or any(a < at < b for a, b in blocks)
    pos, name, name_pos, qualifier = at + len("__global__"), None, at, ""
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
            word = re.sub(r"\s+", "", word)
            qualifier, _, name = word.rpartition("::")
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
    if (mac := scope.macro(name, at)) and mac[0] is None and re.fullmatch(_NAME, mac[1]):
        qualifier, _, name = re.sub(r"\s+", "", mac[1]).rpartition("::")   # #define KNAME my_kernel
    comps = list(scope.namespace_at(at))
    if qualifier:                                     # __global__ void ns::k(...) {}
        qual = [(c, False) for c in qualifier.strip(":").split("::") if c]
        comps = qual if qualifier.startswith("::") else comps + qual
    open_ = pos - 1
    close = _close(code, open_)
    if close < 0:
        raise SignatureError(f"unbalanced parentheses in the parameter list of kernel '{name}'",
                             _line(code, open_))
    body = re.match(r"[^{};()]*(?:\([^{};]*\)[^{};()]*)?([{;]?)", code[close + 1:])[1]
    if not body:                                      # noexcept(...) / -> T may come before it
        raise SignatureError(f"unbalanced parentheses or no '{{' / ';' after the parameters "
                             f"of kernel '{name}'", _line(code, close))
    skip = {p.name for p in tparams if p.name}
    return KernelDecl(name, _params(code, clean, open_, close, scope, at, skip), line,
                      _line(code, name_pos), extern_c, tuple(p.name for p in tparams), body == "{",
                      tuple(p.default for p in tparams),
                      "::".join(c or ANONYMOUS for c, _ in comps), tuple(tparams),
                      tuple(i for i, (_, inline) in enumerate(comps) if inline), (scope, at))


def _params(code: str, clean: str, open_: int, close: int, scope: _Scope, at: int,
            skip) -> tuple[Param, ...]:
    """The parameters between the parentheses at code[open_] and code[close]."""
    params: list[Param] = []
    inner = code[open_ + 1:close]
    spans = _split(inner)
    if len(spans) == 1 and inner.strip() in ("", "void"):
        return ()
    for a, b in spans:
        text = inner[a:b]
        if not text.strip():                          # k(float* x, ): the compiler says more
            continue
        declared = " ".join(clean[open_ + 1 + a:open_ + 1 + b].split())
        where = _line(code, open_ + 1 + a + len(text) - len(text.lstrip()))
        expanded = scope.expand(text, at)
        if expanded is text:
            pieces = [text]
        else:                                         # #define ARGS float* x, int n
            pieces = [expanded[x:y] for x, y in _split(expanded)]
            pieces = [p for p in pieces if p.strip()]
            if len(spans) == 1 and "".join(pieces).strip() in ("", "void"):
                return ()
        for piece in pieces:
            shown = declared if len(pieces) == 1 else " ".join(piece.split())
            params.append(_param(piece, len(params), where, shown, scope, at, skip))
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
    code, clean = _code(source, blanked), _blank(source, strings=False)
    scope = _Scope(blanked, code)
    blocks = []
    for m in re.finditer(r'\bextern\s*"\s*"\s*\{', code):
        if _extern_c(source, code, m.start(), m.end()):
            end = _close(code, m.end() - 1, stop="")
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


# -- templates ----------------------------------------------------------------------------------

def explicit_instances(source: str) -> list[tuple[str, int]]:
    """The instances explicit instantiations in ``source`` name, as written, with their line:
    ``template __global__ void ops::fill<float, 4>(float*, float);`` -> ``("ops::fill<float, 4>",
    line)`` (``template __global__ decltype(k<8>) k<8>;`` too).  Specialisations
    (``template <>``) are not instantiations."""
    code, out = _code(source), []
    clean = _blank(source, strings=False)
    for m in re.finditer(r"\btemplate\b(?!\s*<)", code):
        end = code.find(";", m.end())
        if end < 0 or "{" in code[m.end():end] or not re.search(r"\b__global__\b", code[m.end():end]):
            continue
        found, depth = None, 0
        for n in re.finditer(_NAME + r"\s*<|[()]", code[m.end():end]):
            a = m.end() + n.start()
            if n[0] in "()":
                depth += 1 if n[0] == "(" else -1
                continue
            gt = _close(code, m.end() + n.end() - 1)
            if depth == 0 and gt > 0 and re.match(r"\s*(?:\(|$)", code[gt + 1:end]):
                found = " ".join(clean[a:gt + 1].split())
        if found:
            out.append((found, _line(code, m.start())))
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
    m = re.fullmatch(r"\s*(" + _NAME + r")\s*(<.*>)\s*", text, re.S)
    if not m or _close(m[2], 0) != len(m[2]) - 1:
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
    args = [re.sub(r"\s*\*", "*", " ".join(inner[a:b].split())) for a, b in _split(inner)]
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
            q = _param(again, i, decl.line, declared, scope, at, ())
            params.append(q if q.unknown else replace(q, name=p.name))
        elif p.type in mapping and not p.function:
            arg = scope.expand(mapping[p.type], at) if scope is not None else mapping[p.type]
            try:
                a = _parse_decl(arg, decl.line, declared, False, scope, at)
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
            type_ = _norm(subst(p.type)) if p.function else canonical_type(subst(p.type))
            params.append(replace(p, type=type_, declared=declared))
    python_name = re.sub(r"_+", "_", re.sub(r"\W", "_", text.strip().lstrip(":").replace("*", "_ptr")))
    return python_name.strip("_"), tuple(params)
