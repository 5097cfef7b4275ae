"""Kernel parameter types: what a C parameter is and how its value is packed.

Pure data, no CUDA.  The cell layer parses declarations into :class:`Param`;
the runtime packs Python values by :data:`SCALARS` (a view of :mod:`cuda_magic.elements`), keyed by the canonical spelling of
:func:`~cuda_magic.compile.cpptypes.canonical_type` (re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import elements
from ...compile.cpptypes import canonical_type

__all__ = ["Param", "Scalar", "SCALARS", "canonical_type"]


@dataclass(frozen=True)
class Scalar:
    """A C scalar type: its ``struct`` code, NumPy dtype name and size in bytes."""

    code: str
    dtype: str
    size: int


# Canonical C spelling -> how it is packed (LP64: long is 8 bytes): a view of the element rows
SCALARS: dict[str, Scalar] = {t: Scalar(*row) for t, row in elements.scalars().items()}


@dataclass(frozen=True)
class Param:
    """One kernel parameter as declared.

    ``type`` is the canonical base type (``"float"``, ``"unsigned int"``,
    ``"MyStruct"``; the signature ``"float(float)"`` of a function pointer; the
    text as written for an ``unknown`` one), ``pointer`` the number of ``*``
    (0: by value), ``const`` whether a pointer's (or reference's) innermost
    pointee is const (no copy back), ``declared`` the text as written.
    ``reference``: declared ``T& x`` (the ABI passes an 8-byte address);
    ``function``: a pointer to a function (``float (*f)(float)``);
    ``unknown``: a declaration the parser could not read (the launch takes
    only raw bytes of the compiled parameter's size for it).
    """

    name: str
    type: str
    pointer: int = 0
    const: bool = False
    declared: str = ""
    reference: bool = False
    function: bool = False
    unknown: bool = False

    @property
    def scalar(self) -> Scalar | None:
        """The packing of a by-value scalar or of a pointer's (reference's) pointee; None for
        structs, void, functions and unknown declarations."""
        return None if self.function or self.unknown else SCALARS.get(self.type)

    @property
    def kind(self) -> str:
        """How the parameter is passed: "unknown", "function" (a function pointer), "reference",
        "pointer", "scalar" or "struct" (any other by-value type)."""
        if self.unknown:
            return "unknown"
        if self.function and self.pointer <= 1:
            return "function"
        if self.reference:
            return "reference"
        if self.pointer:
            return "pointer"
        return "scalar" if self.scalar is not None else "struct"

    @property
    def size(self) -> int | None:
        """Bytes the parameter takes in the kernel's parameter buffer, when the declaration alone
        tells (None for structs and unknown declarations: the driver knows)."""
        kind = self.kind
        if kind in ("function", "reference", "pointer"):
            return 8
        return self.scalar.size if kind == "scalar" else None

    def __str__(self) -> str:
        if self.declared:
            return self.declared
        if self.function:
            ret, _, args = self.type.partition("(")
            return f"{ret} ({'*' * self.pointer}{'&' * self.reference}{self.name})({args}"
        return (("const " if self.const else "") + self.type + "*" * self.pointer
                + "&" * self.reference + " " + self.name)
