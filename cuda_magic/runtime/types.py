"""Kernel parameter types: what a C parameter is and how its value is packed.

Pure data, no CUDA.  The cell layer parses declarations into :class:`Param`;
the runtime packs Python values by these tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Param", "Scalar", "SCALARS", "canonical_type"]


@dataclass(frozen=True)
class Scalar:
    """A C scalar type: its ``struct`` code, NumPy dtype name and size in bytes."""

    code: str
    dtype: str
    size: int


# Canonical C spelling -> how it is packed (LP64: long is 8 bytes).
SCALARS: dict[str, Scalar] = {
    "bool": Scalar("?", "bool", 1),
    "char": Scalar("b", "int8", 1),
    "signed char": Scalar("b", "int8", 1),
    "unsigned char": Scalar("B", "uint8", 1),
    "short": Scalar("h", "int16", 2),
    "unsigned short": Scalar("H", "uint16", 2),
    "int": Scalar("i", "int32", 4),
    "unsigned int": Scalar("I", "uint32", 4),
    "long": Scalar("q", "int64", 8),
    "unsigned long": Scalar("Q", "uint64", 8),
    "long long": Scalar("q", "int64", 8),
    "unsigned long long": Scalar("Q", "uint64", 8),
    "float": Scalar("f", "float32", 4),
    "double": Scalar("d", "float64", 8),
    "__half": Scalar("e", "float16", 2),
    "__nv_bfloat16": Scalar("H", "bfloat16", 2),  # packed from float by round-to-nearest-even
}

_ALIASES = {
    "signed": "int", "signed int": "int", "unsigned": "unsigned int",
    "short int": "short", "signed short": "short", "signed short int": "short",
    "unsigned short int": "unsigned short",
    "long int": "long", "signed long": "long", "signed long int": "long",
    "unsigned long int": "unsigned long",
    "long long int": "long long", "signed long long": "long long",
    "signed long long int": "long long", "unsigned long long int": "unsigned long long",
    "int8_t": "signed char", "uint8_t": "unsigned char", "int16_t": "short",
    "uint16_t": "unsigned short", "int32_t": "int", "uint32_t": "unsigned int",
    "int64_t": "long long", "uint64_t": "unsigned long long", "size_t": "unsigned long",
    "ssize_t": "long", "ptrdiff_t": "long", "intptr_t": "long", "uintptr_t": "unsigned long",
    "half": "__half", "nv_half": "__half", "__nv_half": "__half",
    "nv_bfloat16": "__nv_bfloat16", "__bfloat16": "__nv_bfloat16",
}

_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct",
               "class", "union", "enum", "typename", "__grid_constant__"}


def canonical_type(text: str) -> str:
    """``"const unsigned long int"`` -> ``"unsigned long"``; ``"std::size_t"`` -> ``"unsigned long"``.

    Qualifiers and ``std::``/``::`` prefixes are dropped; types this table does
    not know (structs, enums, typedefs) come back with single spaces.
    """
    words = [w for w in re.sub(r"(?<![\w:])(?:::)?std::|^::", "", text.strip()).split()
             if w not in _QUALIFIERS]
    name = " ".join(words)
    return _ALIASES.get(name, name)


@dataclass(frozen=True)
class Param:
    """One kernel parameter as declared.

    ``type`` is the canonical base type (``"float"``, ``"unsigned int"``,
    ``"MyStruct"``), ``pointer`` the number of ``*`` (0: by value), ``const``
    whether a pointer's pointee is const (no copy back), ``declared`` the text
    as written.
    """

    name: str
    type: str
    pointer: int = 0
    const: bool = False
    declared: str = ""

    @property
    def scalar(self) -> Scalar | None:
        """The packing of a by-value scalar or of a pointer's pointee; None for structs/void."""
        return SCALARS.get(self.type)

    def __str__(self) -> str:
        return self.declared or (("const " if self.const else "") + self.type + "*" * self.pointer
                                 + " " + self.name)
