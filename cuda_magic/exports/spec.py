"""What an export holds, read from a built module: each kernel's parameters as the binary lays
them out, and every build of it (one per arch of an arch list), bytes as compiled.

Pure data, no CUDA: :func:`collect` turns a :class:`~cuda_magic.cell.Module` (or one of its
kernels) into :class:`KernelSpec` records over :class:`BuildSpec` records, named so that the files an
export writes are the same every time (``scale.sm_90a.cubin``).
"""

from __future__ import annotations

import hashlib
import keyword
import struct
import unicodedata
from dataclasses import dataclass

from .. import elements
from ..cell import Module
from ..compile.compiler import CompilationResult
from ..errors import ExportError, NoKernelError, quote
from ..runtime import Kernel
from ..runtime.launch.params import Param

__all__ = ["BuildSpec", "KernelSpec", "ParamSpec", "collect", "TORCH_DTYPES", "DTYPES"]

# pointee type -> (torch dtype name, alignment in bytes beyond the element's own, or 0): a view
# of :mod:`cuda_magic.elements`
TORCH_DTYPES: dict[str, tuple[str, int]] = elements.torch_dtypes()     # vector types included
# torch dtype names an output may be given (``("like x", "float16")``)
DTYPES = ("float32", "float64", "float16", "bfloat16", "bool", "int8", "uint8", "int16",
          "uint16", "int32", "uint32", "int64", "uint64", "float8_e4m3fn", "float8_e5m2",
          "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "complex32", "complex64",
          "complex128")
# names the generated Python uses inside an op's functions: a C parameter so named gets a
# trailing "_" (names the package binds per kernel step aside for the parameters instead)
RESERVED = frozenset({"torch", "cdiv", "math", "self", "_dev", "_torch", "_driver"})
_EXTENSIONS = {"cubin": "cubin", "fatbin": "fatbin", "ptx": "ptx"}


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: ``name`` (its C name, or ``arg<i>`` when unnamed; a Python keyword gets a
    trailing ``_``), ``declared`` (the C text), ``kind`` (:attr:`Param.kind`), ``type`` (the
    pointee's or value's canonical type), ``const``, and where the binary puts it:
    ``offset``/``size`` in bytes and ``code``, its ``struct`` code."""

    name: str
    declared: str
    kind: str
    type: str
    pointer: int
    const: bool
    offset: int
    size: int
    code: str

    @property
    def tensor(self) -> tuple[str, int] | None:
        """``(torch dtype, alignment)`` of the tensors it takes; None when any dtype goes
        (``void*``, a struct's pointer) or it is not a one-level pointer."""
        return TORCH_DTYPES.get(self.type) if self.kind == "pointer" and self.pointer == 1 else None

    def json(self) -> dict:
        return {"name": self.name, "declared": self.declared, "kind": self.kind, "type": self.type,
                "pointer": self.pointer, "const": self.const, "offset": self.offset,
                "size": self.size}


@dataclass(frozen=True)
class BuildSpec:
    """One binary as compiled (``data`` byte for byte) and the file an export writes it to."""

    file: str
    result: CompilationResult

    @property
    def data(self) -> bytes:
        b = self.result.binary
        return b.encode() if isinstance(b, str) else bytes(b)

    @property
    def arch(self) -> str:
        return self.result.arch

    @property
    def format(self) -> str:
        return self.result.format

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class KernelSpec:
    """One kernel to export: ``name`` (its Python name), ``cxx`` (the name shown in the
    notebook), ``symbol`` (its entry in the binary), ``params`` and its ``builds`` (arch order)."""

    name: str
    cxx: str
    symbol: str
    params: tuple[ParamSpec, ...]
    builds: tuple[BuildSpec, ...]

    @property
    def signature(self) -> str:
        return ", ".join(p.declared for p in self.params)

    @property
    def struct_format(self) -> str:
        """The ``struct`` format of its parameter buffer (``=``, no implicit padding)."""
        out, pos = ["="], 0
        for p in self.params:
            out.append(f"{p.offset - pos}x" if p.offset > pos else "")
            out.append(p.code)
            pos = p.offset + p.size
        return "".join(out)


def _code(p: Param, size: int) -> str:
    kind = p.kind
    if kind in ("pointer", "reference", "function"):
        return "Q"
    if kind == "scalar":
        return p.scalar.code
    return f"{size}s"


def _python_name(name: str, i: int, taken: set[str]) -> str:
    if not name or not name.isidentifier() or name.startswith("__"):
        name = f"arg{i}"
    while keyword.iskeyword(name) or name in RESERVED or \
            unicodedata.normalize("NFKC", name) in taken:
        name += "_"
    return name


def _params(k: Kernel, r: CompilationResult) -> tuple[ParamSpec, ...]:
    entry = next((e for e in r.entries if e.symbol == k.symbol), None)
    layout = entry.params if entry is not None else None
    if layout is None:
        raise ExportError(f"{k.name}: the {r.arch} binary does not say how its parameters are laid "
                          f"out, so an export cannot pack them")
    if len(layout) != len(k.params):
        raise ExportError(f"{k.name}: the cell declares {len(k.params)} parameters but the {r.arch} "
                          f"binary's kernel takes {len(layout)}")
    out, taken = [], set()
    for i, (p, (offset, size)) in enumerate(zip(k.params, layout)):
        code = _code(p, size)
        if struct.calcsize("=" + code) != size:
            raise ExportError(f"{k.name}: parameter '{p.name}' ({p}) is "
                              f"{struct.calcsize('=' + code)} bytes as declared, {size} in the "
                              f"{r.arch} binary")
        name = _python_name(p.name, i, taken)
        taken.add(unicodedata.normalize("NFKC", name))
        out.append(ParamSpec(name, str(p), p.kind, p.type, p.pointer, p.const, int(offset),
                             int(size), code))
    return tuple(out)


def _select(module: Module, kernels) -> list[str]:
    if kernels is None:
        return list(module.kernels)
    if isinstance(kernels, str):
        kernels = [kernels]
    if not isinstance(kernels, (list, tuple, set, frozenset)):
        raise ExportError(f"kernels={quote(kernels, 80)}: give a kernel's name, a list of names, "
                          f"or a dict of rules per kernel name")
    names = []
    for key in kernels:
        try:
            k = module[key]
        except NoKernelError as e:
            raise ExportError(f"kernels: {e}") from None
        names.append(k.name)
    if not names:
        raise ExportError("kernels: an empty list exports nothing; leave it out for every kernel")
    return list(dict.fromkeys(names))


def source_of(obj) -> tuple[Module, list[str] | None]:
    """The module an export reads and which of its kernels: a Module (every kernel) or a Kernel
    bound from one (that kernel)."""
    if isinstance(obj, Module):
        return obj, None
    module = getattr(obj, "module", None) if isinstance(obj, Kernel) else None
    if isinstance(module, Module):
        return module, [obj.name]
    what = "a Kernel that no %%cuda module holds" if isinstance(obj, Kernel) else \
        type(obj).__name__
    raise ExportError(f"export takes a %%cuda Module (--name NAME binds it) or one of its kernels, "
                      f"not {what}")


def collect(module: Module, kernels=None) -> tuple[KernelSpec, ...]:
    """The kernels to export (``kernels``: names in any spelling ``m[...]`` takes; default every
    kernel), each with every build of it, in the module's arch order."""
    if not module.kernels:
        raise ExportError(_no_kernels(module))
    python = {k.name: name for name, k in module.python_names().items()}
    files: dict[int, str] = {}            # id(result) -> its file name
    out = []
    for name in _select(module, kernels):
        k = module.kernels[name]
        builds = []
        for arch in module.archs:
            try:
                r = module.result_of(name, arch)
            except NoKernelError:
                continue
            if id(r) not in files:
                stem = python[name]
                files[id(r)] = f"{stem}.{r.arch}.{_EXTENSIONS[r.format]}"
            builds.append(BuildSpec(files[id(r)], r))
        params = _params(k, builds[0].result)
        for b in builds[1:]:
            other = _params(k, b.result)
            if [(p.offset, p.size) for p in other] != [(p.offset, p.size) for p in params]:
                raise ExportError(f"{name}: its parameters are laid out differently in the "
                                  f"{b.arch} build than in the {builds[0].arch} build")
        out.append(KernelSpec(python[name], name, k.symbol, params, tuple(builds)))
    used = [k.name for k in out]
    if len(set(used)) != len(used):
        raise ExportError(f"two kernels have the same Python name: {quote(used, 120)}")
    return tuple(out)


def _no_kernels(module: Module) -> str:
    """Why a module with no kernels exports nothing, and what to do."""
    templates = getattr(module, "templates", ())
    if templates:
        hint = next((t for t in templates if "<" in t), None)
        return (f"the cell has no kernels to export: {', '.join(templates)} "
                f"{'is a template' if len(templates) == 1 else 'are templates'} with no instance "
                f"in the binary; instantiate "
                + (f"one (--instantiate \"{hint}\" on the %%cuda line)" if hint else "one")
                + " and export again")
    return ("the cell has no kernels to export: it declares no __global__ function (a "
            "__device__ function cannot be launched on its own)")
