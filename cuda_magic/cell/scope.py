"""The names a cell defines that its kernel declarations use: namespaces (and ``extern "C"``
blocks), object- and function-like ``#define``\\s, and ``typedef`` / ``using`` / ``enum`` aliases
at namespace scope (:class:`Scope`)."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from .decls import SignatureError
from .declarator import BUILTINS, QUALIFIERS, parse_decl
from .scan import IDENT, closing, closing_paren, split_macro_args, split_top

__all__ = ["Scope"]

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
    return m[1] if m and m[1] not in BUILTINS | QUALIFIERS else None


@dataclass(frozen=True)
class _Type:
    """What an alias stands for."""

    type: str
    pointer: int = 0
    const: bool = False
    reference: bool = False
    function: bool = False


class Scope:
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
        if not self.macros or not any(m[0] in self.macros for m in IDENT.finditer(text)):
            return text
        out, i = [], 0
        while m := IDENT.search(text, i):
            out.append(text[i:m.start()])
            name, i = m[0], m.end()
            mac = self.macro(name, pos) if name not in active else None
            if mac is None:
                out.append(name)
                continue
            params, body = mac
            if params is not None:                      # function-like: needs (args)
                k = len(text) - len(text[i:].lstrip())
                end = closing_paren(text, k) if text[k:k + 1] == "(" else -1
                if end < 0 or "#" in body:
                    out.append(name)
                    continue
                args = [a.strip() for a in split_macro_args(text[k + 1:end])]
                values = dict(zip(params, args))
                if params and params[-1] == "...":
                    values["__VA_ARGS__"] = ", ".join(args[len(params) - 1:])
                body = IDENT.sub(lambda w: values.get(w[0], w[0]), body)
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
            parts = [m[1][a:b] for a, b in split_top(m[1])]
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
                end = closing(code, m.end() - 1, stop="")
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
            d = parse_decl(self.expand(text, at), None, text, named=named, scope=self, pos=at)
            found = None if d.type == name and not (d.pointer or d.reference or d.function) else \
                _Type(d.type, d.pointer, d.const, d.reference, d.function)
        except SignatureError:
            found = None
        finally:
            self._busy.discard(key)
        self._cache[key] = found
        return found
