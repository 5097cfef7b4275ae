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

import ast
import pathlib

from .names import Names, bound_names, py_comment, py_doc, py_ident, py_reserved
from .op_rules import NAMES, Function, Rules
from .spec import KernelSpec, ParamSpec

__all__ = ["init_source", "schema", "mutated", "template", "names", "TEMPLATES", "RESERVED"]

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


def mutated(k: KernelSpec, r: Rules) -> list[ParamSpec]:
    outs = {o.param for o in r.outputs}
    return [p for p in k.params if p.kind == "pointer" and not p.const and p.name not in outs]


def _inputs(k: KernelSpec, r: Rules) -> list[ParamSpec]:
    outs = {o.param for o in r.outputs}
    return [p for p in k.params if p.name not in outs]


def schema(namespace: str, k: KernelSpec, r: Rules, op: str | None = None) -> str:
    """The op's schema as ``torch.library`` infers it from the generated function
    (``scale_ops::scale(Tensor x, float a, SymInt n) -> Tensor``); ``op``: its name (default
    the one :func:`names` gives it alone)."""
    op = op or names([(k, r)])[0]["op"]
    written = {p.name for p in mutated(k, r)}
    args = []
    for i, p in enumerate(_inputs(k, r)):
        t = _schema_type(p)
        args.append(f"Tensor(a{i}!) {p.name}" if p.name in written else f"{t} {p.name}")
    n = len(r.outputs)
    ret = "()" if n == 0 else "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
    return f"{namespace}::{op}({', '.join(args)}) -> {ret}"


def _returns(r: Rules) -> str:
    n = len(r.outputs)
    return "None" if n == 0 else "torch.Tensor" if n == 1 else \
        f"tuple[{', '.join(['torch.Tensor'] * n)}]"


def _value(p: ParamSpec) -> str:
    if p.kind == "pointer":
        return f"{p.name}.data_ptr()"
    return f"_driver.bf16({p.name}, {p.name!r})" if p.type == "__nv_bfloat16" else p.name


_HEAD = '''"""{doc}"""

import hashlib as _hashlib
import math  # noqa: F401  (launch rules may use it)
import pathlib as _pathlib

import torch

from . import _driver, _torch
from ._torch import cdiv  # noqa: F401  (launch rules may use it)

__all__ = {ops!r}
__version__ = {version!r}
_HERE = _pathlib.Path(__file__).resolve().parent
# the files every export holds as they are here: standard library (and torch) only, no cuda-magic
TEMPLATES = ("_driver.py", "_torch.py")


def _read(file, sha256):
    data = (_HERE / "binaries" / file).read_bytes()
    if _hashlib.sha256(data).hexdigest() != sha256:
        raise _driver.CudaError(f"{{file}}: not the binary that was exported (sha256 differs); "
                                f"reinstall {namespace}")
    return data


_BUILDS = {{}}     # file -> its Build: kernels of one build share one loaded library, as in the cell


def _build(arch, fmt, file, sha256):
    if file not in _BUILDS:
        _BUILDS[file] = _driver.Build(arch, fmt, lambda: _read(file, sha256))
    return _BUILDS[file]


'''


# what the generated module binds for itself, the names rules may use, and its submodules
RESERVED = frozenset(bound_names(_HEAD.format(doc="", ops=[], version="", namespace="ns"))
                     | NAMES | {"_driver", "_torch", "binaries"})


def names(items) -> list[dict]:
    """Per (KernelSpec, Rules) of ``items``, the module-level names the package gives its op
    (``op``: the function and the op's name) and what the op uses (``K``, ``launch``,
    ``outputs``, ``fake``, ``dtype`` by parameter, ``rules`` by rule key, ``defs``: the name a
    def rule keeps), none of them one the module uses for itself or a parameter's, none twice."""
    taken = Names(RESERVED, py_reserved)
    out = [{"op": taken.take(py_ident(k.name))} for k, _ in items]
    for (k, r), nm in zip(items, out):
        nm["defs"] = {f.key: taken.take(f.name) for f in r.functions if f.name}
    taken.reserve(*(p.name for k, _ in items for p in k.params))
    for (k, r), nm in zip(items, out):
        n = nm["op"]
        nm.update(K=taken.take(f"_K_{n}"), launch=taken.take(f"_launch_{n}"),
                  outputs=taken.take(f"_outputs_{n}"), fake=taken.take(f"_{n}_fake"))
        nm["dtype"] = {p.name: taken.take(f"_{n}_{p.name}") for p in k.params
                       if p.kind == "pointer"}
        nm["rules"] = {}
        for f in r.functions:
            key, _, param = f.key.partition(" ")
            nm["rules"][f.key] = taken.take(f"_{key}_{n}" + (f"_{param}" if param else ""))
    return out


def _call(rule, nm: dict) -> str:
    """A rule as the Python expression the launch evaluates."""
    if isinstance(rule, Function):
        return f"{nm['rules'][rule.key]}({', '.join(rule.args)})"
    return rule


def _definition(f: Function, nm: dict) -> str:
    """A rule function as the module holds it: ``_grid_k = lambda n: ...``, or the def (renamed
    where its name is taken) and ``_block_k = block_rule``."""
    alias = nm["rules"][f.key]
    if f.name is None:
        return f"{alias} = {f.source}"
    name, source = nm["defs"][f.key], f.source
    if name != f.name:
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == f.name:
                node.name = name
            elif isinstance(node, ast.Name) and node.id == f.name:
                node.id = name
        source = ast.unparse(tree)
    return f"{source}\n\n\n{alias} = {name}"


def _launch(k: KernelSpec, r: Rules, nm: dict) -> list[str]:
    """``_launch_<op>``: each tensor checked in one line, then the launch."""
    tensors = [p for p in k.params if p.kind == "pointer"]
    out_dtypes = {o.param for o in r.outputs}
    lines = [f"def {nm['launch']}({', '.join(p.name for p in k.params)}):",
             f"    _dev = {tensors[0].name}.get_device()" if tensors else
             "    _dev = _torch.device()"]
    for i, p in enumerate(tensors):
        checks = []
        has_dtype = p.tensor is not None or p.name in out_dtypes
        if has_dtype:
            checks.append(f"{p.name}.dtype is not {nm['dtype'][p.name]}")
        checks.append(f"not {p.name}.is_contiguous()")
        checks.append("_dev < 0" if i == 0 else f"{p.name}.get_device() != _dev")
        align = p.tensor[1] if p.tensor is not None else 0
        if align:
            checks.append(f"{p.name}.data_ptr() % {align}")
        want = nm["dtype"][p.name] if has_dtype else "None"
        lines.append(f"    if {' or '.join(checks)}:")
        lines.append(f"        raise _torch.bad({nm['K']}, {p.name!r}, {p.name}, {want}, {align}, "
                     f"{'None' if i == 0 else '_dev'})")
    values = ", ".join(_value(p) for p in k.params)
    return lines + [f"    _torch.launch({nm['K']}, _dev, {_call(r.grid, nm)}, "
                    f"{_call(r.block, nm)}, {_call(r.shared, nm)}, {values})", "", ""]


def _kernel_block(namespace: str, k: KernelSpec, r: Rules, nm: dict) -> str:
    n = nm["op"]
    builds = "".join(f"\n     _build({b.arch!r}, {b.format!r}, {b.file!r}, {b.sha256!r}),"
                     for b in k.builds)
    lines = [f"# -- {py_comment(f'{k.cxx}({k.signature})')}", "",
             f"{nm['K']} = _driver.LoadedKernel(",
             f"    {k.name!r}, {k.symbol!r}, {k.signature!r},",
             f"    {k.struct_format!r}, {tuple(p.offset for p in k.params)!r},",
             f"    {tuple(p.name for p in k.params)!r},",
             f"    ({builds}\n    ))"]
    for p in k.params:
        if p.kind == "pointer" and p.tensor is not None:
            lines.append(f"{nm['dtype'][p.name]} = _torch.dtype({p.tensor[0]!r})")
    for o in r.outputs:
        if next(p for p in k.params if p.name == o.param).tensor is None:
            lines.append(f"{nm['dtype'][o.param]} = _torch.dtype({o.dtype!r})")
    lines += ["", ""]
    for f in r.functions:
        lines += [_definition(f, nm), "", ""]
    ins = ", ".join(p.name for p in _inputs(k, r))
    if r.outputs:
        allocs = [f"torch.empty({_call(o.shape, nm)}, dtype={nm['dtype'][o.param]}, device="
                  + (f"{o.device}.device)" if o.device else "torch.device('cuda'))")
                  for o in r.outputs]
        lines += [f"def {nm['outputs']}({ins}):", f"    return ({', '.join(allocs)},)", "", ""]
    lines += _launch(k, r, nm)
    allp = ", ".join(p.name for p in k.params)
    written = tuple(p.name for p in mutated(k, r))
    hints = ", ".join(f"{p.name}: {_hint(p)}" for p in _inputs(k, r))
    writes = [f"writes {m}" for m in written] + [f"returns {o.param} ({o.spec})" for o in r.outputs]
    doc = f"{k.cxx}({k.signature}): {'; '.join(writes) or 'reads only'}."
    lines += [f"@torch.library.custom_op({namespace + '::' + n!r}, mutates_args={written!r})",
              f"def {n}({hints}) -> {_returns(r)}:",
              f"    {py_doc(doc)}"]
    if r.outputs:
        outs = ", ".join(o.param for o in r.outputs)
        lines += [f"    ({outs},) = {nm['outputs']}({ins})", f"    {nm['launch']}({allp})",
                  f"    return {outs}"]
        fake = f"{nm['outputs']}({ins})" + ("" if len(r.outputs) > 1 else "[0]")
    else:
        lines.append(f"    {nm['launch']}({allp})")
        fake = "None"
    lines += ["", "", f"@{n}.register_fake", f"def {nm['fake']}({ins}):", f"    return {fake}",
              "", ""]
    return "\n".join(lines)


def init_source(namespace: str, version: str, items, cuda_magic_version: str,
                module: str | None = None) -> str:
    """The generated ``__init__.py`` of package ``namespace`` for ``items`` ((KernelSpec, Rules)
    pairs), imported as ``module`` (its directory's name; default ``namespace``)."""
    nms = names(items)
    schemas = "\n".join(f"    {schema(namespace, k, r, nm['op'])}" for (k, r), nm in zip(items, nms))
    (first_k, first_r), first = items[0], nms[0]["op"]
    example = ", ".join(p.name for p in _inputs(first_k, first_r))
    module = module or namespace
    imports = f"import torch, {module}" if module.isidentifier() else \
        f"import importlib, torch; {namespace} = importlib.import_module({module!r})"
    doc = f"""{namespace}: kernels of a cuda-magic notebook cell, as PyTorch ops.

    {imports}
    {module if module.isidentifier() else namespace}.{first}({example})      # or torch.ops.{namespace}.{first}

Ops:
{schemas}

Each kernel's binaries (one per arch) are in binaries/, loaded through the CUDA driver at the
first call on each GPU; manifest.json says how each was built.  Generated by cuda-magic
{cuda_magic_version}: running it needs PyTorch and a GPU driver, no compiler and no cuda-magic.
"""
    head = _HEAD.format(doc=py_doc(doc)[3:-3], ops=[nm["op"] for nm in nms], version=version,
                        namespace=namespace)
    return head + "".join(_kernel_block(namespace, k, r, nm)
                          for (k, r), nm in zip(items, nms)).rstrip() + "\n"
