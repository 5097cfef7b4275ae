"""C++ names and types as text: the one place that reads and normalises their spelling.

What a demangler prints (``void ns::k<256>(float const*, int)``) and what a programmer
writes (``const std::uint32_t*``) are different texts for one thing.  Here: a demangled
signature split into its name and parameter types (:func:`split_signature`), a demangled
type spelled as a programmer writes it (:func:`c_type`), any spelling of a scalar type
reduced to its canonical one (:func:`canonical_type`, by which the runtime packs values),
and a qualified name's parts (:func:`split_name`, :func:`unqualified`).  Pure text, no
compiler.
"""

from __future__ import annotations

import re

from .. import elements

__all__ = ["split_signature", "c_type", "close_angles", "canonical_type", "split_name",
           "unqualified"]


# Typedefs every CUDA translation unit sees (<cstdint>, <cstddef>, glibc's sys/types.h, cuda.h,
# the CUDA runtime's texture/surface objects, and cuda_fp16.h/cuda_bf16.h's from the element rows),
# by their canonical spelling.
_ALIASES = {
    "int8_t": "signed char", "uint8_t": "unsigned char", "int16_t": "short",
    "uint16_t": "unsigned short", "int32_t": "int", "uint32_t": "unsigned int",
    "int64_t": "long long", "uint64_t": "unsigned long long", "size_t": "unsigned long",
    "ssize_t": "long", "ptrdiff_t": "long", "intptr_t": "long", "uintptr_t": "unsigned long",
    "intmax_t": "long", "uintmax_t": "unsigned long",
    "uint": "unsigned int", "ushort": "unsigned short", "ulong": "unsigned long",
    "CUdeviceptr": "unsigned long long", "CUdeviceptr_v2": "unsigned long long",
    "cudaTextureObject_t": "unsigned long long", "cudaSurfaceObject_t": "unsigned long long",
    "CUtexObject": "unsigned long long", "CUsurfObject": "unsigned long long",
    **elements.aliases(),        # half, nv_bfloat16, ...: the element rows' own typedefs
}

_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct",
               "class", "union", "enum", "typename", "__grid_constant__"}
_INT_WORDS = {"signed", "unsigned", "short", "long", "int", "char"}
# std::, ::std::, cuda::std::, and their versioned inline namespaces (std::__4::, std::__cxx11::)
_STD = re.compile(r"(?<![\w:])(?:::)?(?:cuda::)?std::(?:__\d+::|__cxx11::)?|^::")


def _integer(words: list[str]) -> str | None:
    """The canonical spelling of an integer type written with its words in any order."""
    longs, unsigned = words.count("long"), "unsigned" in words
    if "char" in words:
        return "unsigned char" if unsigned else "signed char" if "signed" in words else "char"
    if "short" in words:
        base = "short"
    elif longs in (1, 2):
        base = "long" * (longs == 1) or "long long"
    elif longs == 0:
        base = "int"
    else:
        return None
    return ("unsigned " if unsigned else "") + base


def canonical_type(text: str) -> str:
    """``"const unsigned long int"`` -> ``"unsigned long"``; ``"std::size_t"`` -> ``"unsigned long"``.

    Qualifiers and ``std::``/``cuda::std::``/``::`` prefixes are dropped, integer words may come
    in any order (``"long unsigned int"``, as demanglers and debuggers write them), and the
    typedefs every CUDA program sees (``uint32_t``, ``size_t``, ``uint``, ``cudaTextureObject_t``)
    map to their scalar; types this table does not know (structs, enums, the cell's own
    typedefs) come back with single spaces.
    """
    words = [w for w in _STD.sub("", " ".join(text.split()).replace(" ::", "::")
                                 .replace(":: ", "::")).split() if w not in _QUALIFIERS]
    if words and set(words) <= _INT_WORDS and (name := _integer(words)):
        return name
    name = " ".join(words)
    return _ALIASES.get(name, name)


def split_name(name: str) -> tuple[str, str, bool]:
    """``ns::k<256>`` -> ("ns", "k", True): namespace, base name, whether it has template args."""
    depth, cut, base_end = 0, -1, len(name)
    for i, ch in enumerate(name):
        if ch in "<(":
            if ch == "<" and depth == 0 and base_end == len(name) and i > cut + 1:
                base_end = i
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == ":" and depth == 0 and name[i:i + 2] == "::":
            cut, base_end = i + 1, len(name)
    head = name[:cut - 1] if cut > 0 else ""
    base = name[cut + 1:base_end] if cut >= 0 else name[:base_end]
    return head, base.strip(), base_end < len(name)


def unqualified(name: str) -> str:
    """``ns::k<256>`` -> ``k<256>``: the name without its namespace."""
    ns = split_name(name)[0]
    return name[len(ns) + 2:] if ns else name


# ---------------------------------------------------------------- demangled signatures

def _scan(text: str):
    """``(index, char, depth)`` for each char, depth counted over ()[]{} and <>
    (``<``/``>`` only outside parentheses, where demanglers put expressions)."""
    stack: list[str] = []
    for i, ch in enumerate(text):
        if ch in "([{" or (ch == "<" and "(" not in stack):
            stack.append(ch)
            yield i, ch, len(stack) - 1
        elif ch in ")]}" or (ch == ">" and stack and stack[-1] == "<"):
            if stack:
                stack.pop()
            yield i, ch, len(stack)
        else:
            yield i, ch, len(stack)


def split_signature(signature: str) -> tuple[str, tuple[str, ...]]:
    """``"void ns::k<256>(float*, int)"`` -> ``("ns::k<256>", ("float*", "int"))``.

    Drops a leading return type; keeps nested template arguments with commas,
    function-pointer parameters (``int (*)(int)``), ``(anonymous namespace)``
    and lambda names (``{lambda(int)#1}``) whole.  ``f(void)`` and ``f()``
    have no parameters.  Text without a parameter list comes back as the
    name with no parameters.  Spellings are the input's (see :func:`c_type`).
    """
    text = signature.strip()
    if not text.endswith(")"):
        return text, ()
    depth, open_ = 0, None
    for i in range(len(text) - 1, -1, -1):      # the parenthesis matching the last one
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                open_ = i
                break
    if open_ is None:
        return text, ()
    head, inner = text[:open_].rstrip(), text[open_ + 1:-1]
    cut = 0
    for i, ch, d in _scan(head):                # the name follows the last top-level space
        if ch == " " and d == 0:
            cut = i + 1
    name = head[cut:]
    params, start = [], 0
    for i, ch, d in _scan(inner):
        if ch == "," and d == 0:
            params.append(inner[start:i].strip())
            start = i + 1
    params.append(inner[start:].strip())
    params = [p for p in params if p]
    if params == ["void"]:
        params = []
    return name, tuple(params)


def close_angles(text: str) -> str:
    """``a<b<int> >`` -> ``a<b<int>>``: the demangler's closing angles as C++11 writes them."""
    while "> >" in text:
        text = text.replace("> >", ">>")
    return text


def c_type(spelling: str) -> str:
    """A demangled type as a C++ programmer writes it.

    The pointee's ``const``/``volatile`` moves to the front (``float const*``
    -> ``const float*``, ``char const* const*`` -> ``const char* const*``;
    ``unsigned int const*`` -> ``const unsigned int*``), ``> >`` becomes
    ``>>`` and ``float *`` ``float*``.  Function-pointer types and everything else are left as they are.
    """
    text = close_angles(" ".join(spelling.split())).replace(" *", "*").replace(" &", "&")
    for i, ch, d in _scan(text):
        if d:
            continue
        if ch in "*&(":
            break                               # a qualifier after this applies to the pointer
        m = re.match(r" (const|volatile)(?: (const|volatile))?(?=$|[*& ])", text[i:])
        if ch == " " and m:
            base = text[:i]
            quals = " ".join(q for q in m.groups() if q)
            return f"{quals} {base}{text[i + m.end():]}"
    return text
