"""The ``torch`` export: a Python package that registers each kernel as a
``torch.library.custom_op``, its binaries inside, loaded through the CUDA driver.

The package: the generated ``__init__.py`` (:func:`init_source`), the fixed ``_driver.py``
and ``_torch.py`` (copied from this directory, :func:`template`), ``manifest.json`` and
``binaries/<kernel>.<arch>.<format>``.

Per kernel the op's signature is the kernel's, less the outputs the op allocates: a pointer is
a ``Tensor`` (its dtype checked where the pointee names one), an integer an ``int``, a float a
``float``, ``bool`` a ``bool``; non-const pointers that are not outputs are in
``mutates_args``.  A ``register_fake`` gives the outputs' shapes, so ``torch.compile`` traces
the op without running it; the op launches on PyTorch's current stream, so CUDA graphs
capture it.
"""

from __future__ import annotations

import pathlib

from .rules import Rules
from .spec import Kernel, ParamSpec

__all__ = ["init_source", "schema", "mutated", "template", "TEMPLATES"]

_HERE = pathlib.Path(__file__).resolve().parent
# the files every export holds as they are here: standard library (and torch) only, no cuda-magic
TEMPLATES = ("_driver.py", "_torch.py")
_FLOATS = {"float", "double", "__half", "__nv_bfloat16"}


def template(name: str) -> bytes:
    """A fixed file every export holds (``_driver.py``, ``_torch.py``), as shipped."""
    assert name in TEMPLATES, name
    return (_HERE / name).read_bytes()


def _hint(p: ParamSpec) -> str:
    if p.kind == "pointer":
        return "torch.Tensor"
    if p.type == "bool":
        return "bool"
    return "float" if p.type in _FLOATS else "int"


def _schema_type(p: ParamSpec) -> str:
    return {"torch.Tensor": "Tensor", "bool": "bool", "float": "float", "int": "SymInt"}[_hint(p)]


def mutated(k: Kernel, r: Rules) -> list[ParamSpec]:
    outs = {o.param for o in r.outputs}
    return [p for p in k.params if p.kind == "pointer" and not p.const and p.name not in outs]


def _inputs(k: Kernel, r: Rules) -> list[ParamSpec]:
    outs = {o.param for o in r.outputs}
    return [p for p in k.params if p.name not in outs]


def schema(namespace: str, k: Kernel, r: Rules) -> str:
    """The op's schema as ``torch.library`` infers it from the generated function
    (``scale_ops::scale(Tensor x, float a, SymInt n) -> Tensor``)."""
    written = {p.name for p in mutated(k, r)}
    args = []
    for i, p in enumerate(_inputs(k, r)):
        t = _schema_type(p)
        args.append(f"Tensor(a{i}!) {p.name}" if p.name in written else f"{t} {p.name}")
    n = len(r.outputs)
    ret = "()" if n == 0 else "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
    return f"{namespace}::{k.name}({', '.join(args)}) -> {ret}"


def _returns(r: Rules) -> str:
    n = len(r.outputs)
    return "None" if n == 0 else "torch.Tensor" if n == 1 else \
        f"tuple[{', '.join(['torch.Tensor'] * n)}]"


def _value(p: ParamSpec) -> str:
    if p.kind == "pointer":
        return f"{p.name}.data_ptr()"
    return f"_driver.bf16({p.name}, {p.name!r})" if p.type == "__nv_bfloat16" else p.name


def _kernel_block(namespace: str, k: Kernel, r: Rules) -> str:
    n = k.name
    builds = "".join(f"\n     _build({b.arch!r}, {b.format!r}, {b.file!r}, {b.sha256!r}),"
                     for b in k.builds)
    lines = [f"# -- {k.cxx}({k.signature})", "",
             f"_K_{n} = _driver.Kernel(",
             f"    {n!r}, {k.symbol!r}, {k.signature!r},",
             f"    {k.struct_format!r}, {tuple(p.offset for p in k.params)!r},",
             f"    {tuple(p.name for p in k.params)!r},",
             f"    ({builds}\n    ))"]
    tensors = [p for p in k.params if p.kind == "pointer"]
    for p in tensors:
        if p.tensor is not None:
            lines.append(f"_{n}_{p.name} = _torch.dtype({p.tensor[0]!r})")
    out_dtypes = {o.param: o.dtype for o in r.outputs}
    for o in r.outputs:
        if next(p for p in k.params if p.name == o.param).tensor is None:
            lines.append(f"_{n}_{o.param} = _torch.dtype({o.dtype!r})")
    lines += ["", ""]
    for d in r.defs:
        lines += [d, "", ""]
    ins = ", ".join(p.name for p in _inputs(k, r))
    if r.outputs:
        lines.append(f"def _outputs_{n}({ins}):")
        allocs = []
        for o in r.outputs:
            device = f"{o.device}.device" if o.device else "torch.device('cuda')"
            allocs.append(f"torch.empty({o.shape}, dtype=_{n}_{o.param}, device={device})")
        lines += [f"    return ({', '.join(allocs)},)", "", ""]
    allp = ", ".join(p.name for p in k.params)
    lines.append(f"def _launch_{n}({allp}):")
    if tensors:
        first = tensors[0]
        lines.append(f"    _dev = {first.name}.get_device()")
    else:
        lines.append("    _dev = _torch.device()")
    for i, p in enumerate(tensors):
        checks = []
        has_dtype = p.tensor is not None or p.name in out_dtypes
        if has_dtype:
            checks.append(f"{p.name}.dtype is not _{n}_{p.name}")
        checks.append(f"not {p.name}.is_contiguous()")
        checks.append("_dev < 0" if i == 0 else f"{p.name}.get_device() != _dev")
        align = p.tensor[1] if p.tensor is not None else 0
        if align:
            checks.append(f"{p.name}.data_ptr() % {align}")
        want = f"_{n}_{p.name}" if has_dtype else "None"
        lines.append(f"    if {' or '.join(checks)}:")
        lines.append(f"        raise _torch.bad(_K_{n}, {p.name!r}, {p.name}, {want}, {align}, "
                     f"{'None' if i == 0 else '_dev'})")
    values = ", ".join(_value(p) for p in k.params)
    lines += [f"    _torch.launch(_K_{n}, _dev, {r.grid}, {r.block}, {r.shared}, {values})", "", ""]
    written = tuple(p.name for p in mutated(k, r))
    hints = ", ".join(f"{p.name}: {_hint(p)}" for p in _inputs(k, r))
    writes = [f"writes {m}" for m in written] + [f"returns {o.param} ({o.spec})" for o in r.outputs]
    lines += [f"@torch.library.custom_op({namespace + '::' + n!r}, mutates_args={written!r})",
              f"def {n}({hints}) -> {_returns(r)}:",
              f'    """{k.cxx}({k.signature}): {"; ".join(writes) or "reads only"}."""']
    if r.outputs:
        names = ", ".join(o.param for o in r.outputs)
        lines += [f"    ({names},) = _outputs_{n}({ins})",
                  f"    _launch_{n}({allp})",
                  f"    return {names}"]
        fake = f"_outputs_{n}({ins})" + ("" if len(r.outputs) > 1 else "[0]")
    else:
        lines.append(f"    _launch_{n}({allp})")
        fake = "None"
    lines += ["", "", f"@{n}.register_fake", f"def _{n}_fake({ins}):", f"    return {fake}", "", ""]
    return "\n".join(lines)


def init_source(namespace: str, version: str, items, cuda_magic_version: str) -> str:
    """The generated ``__init__.py`` of package ``namespace`` for ``items`` ((Kernel, Rules)
    pairs)."""
    schemas = "\n".join(f"    {schema(namespace, k, r)}" for k, r in items)
    first_k, first_r = items[0]
    example = ", ".join(p.name for p in _inputs(first_k, first_r))
    head = f'''"""{namespace}: kernels of a cuda-magic notebook cell, as PyTorch ops.

    import torch, {namespace}
    {namespace}.{first_k.name}({example})      # or torch.ops.{namespace}.{first_k.name}

Ops:
{schemas}

Each kernel's binaries (one per arch) are in binaries/, loaded through the CUDA driver at the
first call on each GPU; manifest.json says how each was built.  Generated by cuda-magic
{cuda_magic_version}: running it needs PyTorch and a GPU driver, no compiler and no cuda-magic.
"""

import hashlib
import math  # noqa: F401  (launch rules may use it)
import pathlib

import torch

from . import _driver, _torch
from ._torch import cdiv  # noqa: F401  (launch rules may use it)

__all__ = {[k.name for k, _ in items]!r}
__version__ = {version!r}
_HERE = pathlib.Path(__file__).resolve().parent
# the files every export holds as they are here: standard library (and torch) only, no cuda-magic
TEMPLATES = ("_driver.py", "_torch.py")


def _read(file, sha256):
    data = (_HERE / "binaries" / file).read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise _driver.CudaError(f"{{file}}: not the binary that was exported (sha256 differs); "
                                f"reinstall {namespace}")
    return data


_BUILDS = {{}}     # file -> its Build: kernels of one build share one loaded library, as in the cell


def _build(arch, fmt, file, sha256):
    if file not in _BUILDS:
        _BUILDS[file] = _driver.Build(arch, fmt, lambda: _read(file, sha256))
    return _BUILDS[file]


'''
    return head + "".join(_kernel_block(namespace, k, r) for k, r in items).rstrip() + "\n"
