"""What the cell's declaration parser produces: :class:`KernelDecl`, :class:`TemplateParam`,
:class:`SignatureError` (a declaration it cannot read)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..runtime.launch.params import Param
from ..errors import SignatureError

__all__ = ["KernelDecl", "TemplateParam", "SignatureError", "ANONYMOUS"]

ANONYMOUS = "(anonymous namespace)"    # how demangled names spell an unnamed namespace


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
