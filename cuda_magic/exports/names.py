"""What a generated file may hold of what the user wrote: names that cannot collide with the
file's own, and text that cannot end the string or comment it sits in.

Nothing from a cell or an option becomes code in an export: text goes into Python as a string
literal (:func:`py_doc`, ``repr``) or a one-line comment (:func:`py_comment`), into C as a
comment (:func:`c_comment`) or a string (:func:`c_string`), into ``pyproject.toml`` as a TOML
string (:func:`toml_string`) and into wheel metadata as one line (:func:`header_value`).  Names
(kernels, parameters) are identifiers that a :class:`Names` hands out, never one the generated
file uses for itself.  Also here: which package names and versions an export takes.
"""

from __future__ import annotations

import ast
import keyword
import re
import sys
import unicodedata

from ..errors import ExportError, quote

__all__ = ["Names", "bound_names", "py_doc", "py_comment", "py_ident", "py_reserved", "c_comment",
           "c_string", "c_ident", "c_reserved", "toml_string", "header_value", "checked_version",
           "checked_package", "checked_prefix"]


# -- text ---------------------------------------------------------------------------------------

def _escaped(ch: str) -> str:
    return ch.encode("unicode_escape").decode("ascii")


def py_doc(text: str) -> str:
    """A triple-quoted Python string literal whose value is ``text``: every backslash and quote
    escaped, so nothing in ``text`` can end it, and what a source file cannot hold (NUL, a lone
    surrogate, a carriage return) written as an escape."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n" or ch.isprintable():
            out.append(ch)
        else:
            out.append(_escaped(ch))
    return '"""' + "".join(out) + '"""'


def py_comment(text: str) -> str:
    """``text`` on one line, for after a ``#``: line breaks and other unprintable characters
    written as escapes."""
    return "".join(ch if ch.isprintable() else _escaped(ch) for ch in text)


def c_comment(text: str) -> str:
    """``text`` for inside ``/* ... */`` on one line: printable ASCII only (others as ``\\xNN``
    or ``\\uNNNN``), ``*/`` and ``/*`` broken apart so the comment can neither end nor nest, and
    ``??`` kept from forming a trigraph."""
    out = "".join(ch if " " <= ch <= "~" else _escaped(ch) for ch in text)
    while "*/" in out or "/*" in out or "??" in out:
        out = out.replace("*/", "* /").replace("/*", "/ *").replace("??", "? ?")
    return out


def c_string(text: str) -> str:
    """A C string literal whose value is ``text`` (as UTF-8): quotes, backslashes, ``?`` and
    every byte outside printable ASCII escaped (``\\ooo``: three octal digits, so a digit after
    it is not taken in)."""
    out = []
    for b in text.encode("utf-8", "surrogatepass"):
        ch = chr(b)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def toml_string(text: str) -> str:
    """A TOML basic string whose value is ``text``."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif "\ud800" <= ch <= "\udfff":         # TOML has no lone surrogates
            out.append("\\ufffd")
        elif ch < " " or ch == "\x7f":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def header_value(text: str) -> str:
    """``text`` as the value of a one-line metadata field (``Summary:``): no line breaks or
    other control characters."""
    return "".join(ch if ch.isprintable() else " " for ch in text).strip()


# -- names --------------------------------------------------------------------------------------

def bound_names(source: str) -> set[str]:
    """The names Python ``source`` binds at module level (definitions, imports, assignments)."""
    out = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return out



class Names:
    """Identifiers handed out once each: ``take("scale")`` is ``"scale"`` unless that is taken
    (reserved, or handed out before), then ``"scale_"``, ``"scale__"``...  Python identifiers
    are compared as Python compares them (NFKC: ``ﬁ`` is ``fi``).  ``is_reserved`` must pass
    some name ending in ``_`` (a keyword, a macro, a dunder: none ends so)."""

    def __init__(self, reserved=(), is_reserved=None):
        self._taken: set[str] = set()
        self._is_reserved = is_reserved or (lambda n: False)
        self.reserve(*reserved)

    @staticmethod
    def _key(name: str) -> str:
        return unicodedata.normalize("NFKC", name)

    def reserve(self, *names: str) -> None:
        self._taken.update(self._key(n) for n in names)

    def taken(self, name: str) -> bool:
        return self._key(name) in self._taken or self._is_reserved(name)

    def take(self, want: str) -> str:
        name = want
        while self.taken(name) and len(name) < len(want) + 8:
            name += "_"
        n = 2
        while self.taken(name):              # a predicate no trailing "_" gets past
            name, n = f"{want}_{n}_", n + 1
        self.reserve(name)
        return name


_DUNDER = re.compile(r"__[A-Za-z0-9]\w*[A-Za-z0-9]__|__[A-Za-z0-9]__")


def py_reserved(name: str) -> bool:
    """Whether Python means something of its own by ``name``: a keyword or a ``__dunder__``."""
    return keyword.iskeyword(name) or bool(_DUNDER.fullmatch(name))


def py_ident(name: str) -> str:
    """``name`` as a Python identifier: itself when it is one (``1k`` -> ``k_1k``; a keyword is
    for :func:`py_reserved` to turn away)."""
    name = re.sub(r"\W", "_", name) or "k"
    return name if name.isidentifier() else "k_" + name


# C and C++ keywords (C23, C++20 and the alternative tokens), so a header compiles as either
C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while alignas alignof bool constexpr false nullptr static_assert thread_local true
typeof typeof_unqual asm and and_eq bitand bitor catch char8_t char16_t char32_t class co_await
co_return co_yield compl concept const_cast consteval constinit decltype delete dynamic_cast
explicit export friend mutable namespace new noexcept not not_eq operator or or_eq private
protected public reinterpret_cast requires static_cast template this throw try typeid typename
using virtual wchar_t xor xor_eq
""".split())
# object-like macros of the headers kernel.h includes (cuda.h, stddef.h, stdlib.h, stdint.h) and
# of GCC's GNU modes that the patterns in c_reserved do not catch
_C_MACROS = frozenset("""
NULL linux unix i386 NFDBITS WNOHANG WUNTRACED WSTOPPED WEXITED WCONTINUED WNOWAIT
""".split())
_C_PATTERN = re.compile(r"(?:CU|cu[A-Z]|_[A-Z_])[A-Za-z0-9_]*|[A-Z][A-Z0-9]*(?:_[A-Z0-9]*)+|\w*_t")


def c_reserved(name: str) -> bool:
    """Whether a C name may mean something else in a header that includes ``cuda.h``: a
    keyword, a macro (``NULL``, ``linux``, ``CUDA_VERSION``, ``INT32_MAX``: capitals with an
    ``_``), the driver API's own names (``CU...``, ``cu...``), a name reserved to the
    implementation (``_X``, ``__x``) or a ``..._t`` type.  A name ending in ``_`` is none of
    these."""
    if name.endswith("_"):          # no header name ends so: a trailing "_" gets past them
        return False
    return name in C_KEYWORDS or name in _C_MACROS or bool(_C_PATTERN.fullmatch(name)) \
        or name.startswith("__")


def c_ident(name: str) -> str:
    """``name`` as an ASCII C identifier: characters outside ``[A-Za-z0-9_]`` as ``_``, a
    leading digit after ``k_``."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", name) or "k"
    return "k_" + name if name[0].isdigit() else name


# -- what an export takes -----------------------------------------------------------------------

# PEP 440's canonical public version: N(.N)*[{a|b|rc}N][.postN][.devN], ASCII digits only
_VERSION = re.compile(r"([1-9][0-9]*!)?(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))*((a|b|rc)(0|[1-9][0-9]*))?"
                      r"(\.post(0|[1-9][0-9]*))?(\.dev(0|[1-9][0-9]*))?", re.ASCII)
MAX_VERSION = 64


def checked_version(v) -> str:
    """A version as PEP 440 writes it canonically (``0.1.0``, ``1.0rc1``, ``2.0.post1``)."""
    if not isinstance(v, str) or len(v) > MAX_VERSION or not _VERSION.fullmatch(v):
        raise ExportError(f"version={quote(v, 80)}: a version like '0.1.0' (PEP 440 in its "
                          f"canonical form: digits 0-9 and dots, optionally a1, b2, rc1, .post1, "
                          f".dev1; at most {MAX_VERSION} characters)")
    return v


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# what the generated package imports (and cuda-magic, which the notebook does), and torch's own
# op namespaces (torch.ops.<name>)
_IMPORTED = frozenset({"torch", "ctypes", "re", "struct", "sys", "threading", "hashlib", "math",
                       "pathlib", "cuda_magic"})
_TORCH_NAMESPACES = frozenset({
    "aten", "prim", "prims", "debugprims", "rngprims", "higher_order", "inductor", "quantized",
    "mkl", "mkldnn", "onednn", "profiler", "export", "debug_mode_ops", "load_library",
    "loaded_libraries", "import_module"})


# NAME_t types of the headers kernel.h includes (glibc, stdint.h, stddef.h, cuda.h)
_C_TYPES = frozenset("""
blkcnt blksize caddr clock clockid cuuint32 cuuint64 daddr dev div fsblkcnt fsfilcnt fsid gid id
ino int16 int32 int64 int8 int_fast16 int_fast32 int_fast64 int_fast8 int_least16 int_least32
int_least64 int_least8 intmax intptr key ldiv lldiv loff max_align mode nlink off pid pthread
pthread_attr pthread_barrier pthread_barrierattr pthread_cond pthread_condattr pthread_key
pthread_mutex pthread_mutexattr pthread_once pthread_rwlock pthread_rwlockattr pthread_spinlock
ptrdiff quad register sigset size ssize suseconds time timer u_int16 u_int32 u_int64 u_int8
u_quad uid uint16 uint32 uint64 uint8 uint_fast16 uint_fast32 uint_fast64 uint_fast8
uint_least16 uint_least32 uint_least64 uint_least8 uintmax uintptr wchar char8 char16 char32
""".split())


def _identifier(name, what: str) -> str:
    if not isinstance(name, str) or not _IDENT.fullmatch(name) or keyword.iskeyword(name):
        raise ExportError(f"{what}={quote(name, 80)}: a package name is a Python identifier "
                          f"(letters, digits, '_'; not a keyword), e.g. 'scale_ops'")
    return name


def checked_prefix(name, what: str = "name") -> str:
    """A cubin export's C prefix: an ASCII identifier, no Python keyword, and no ``NAME_t`` (the
    type ``kernel.h`` declares) that the C headers already have."""
    name = _identifier(name, what)
    if name in _C_TYPES:
        raise ExportError(f"{what}={name!r}: kernel.h would declare {name}_t, a type the C "
                          f"headers already have; choose another, e.g. '{name}_ops'")
    return name


def checked_package(name, what: str = "name") -> str:
    """A package name: an ASCII identifier that is no keyword, shadows no standard-library
    module or module the package imports, and is no op namespace torch keeps."""
    name = _identifier(name, what)
    if name in _IMPORTED or name in sys.stdlib_module_names:
        kind = "standard-library module" if name in sys.stdlib_module_names else "module"
        raise ExportError(f"{what}={name!r}: a package of that name would shadow the {kind} "
                          f"{name!r}, which the package itself imports or your code may; "
                          f"choose another, e.g. '{name}_ops'")
    if name in _TORCH_NAMESPACES:
        raise ExportError(f"{what}={name!r}: torch keeps torch.ops.{name} for itself, so the "
                          f"package's ops cannot go there; choose another, e.g. '{name}_ops'")
    return name
