"""``export(module, format, path)``: a built module's kernels, taken out of the notebook.

Three formats (docs/export.md):

``"torch"``
    ``path`` becomes a Python package (named after its last component, or ``name=``) that
    registers each kernel as ``torch.library.custom_op`` ``<name>::<kernel>``
    (:mod:`.torch_package`); each op needs its launch rules: ``grid=``, ``block=``, optionally
    ``shared=`` and ``outputs=``.
``"cubin"``
    ``path`` gets the binaries, ``kernel.h``, ``kernel.py`` and ``manifest.json``
    (:mod:`.cubin`).
``"wheel"``
    ``path`` gets ``pyproject.toml`` and the torch package, and ``dist/`` the wheel built from
    them (:mod:`.wheel`).

Every build of the module's arch list goes in, each byte for byte as compiled.  The files are
the same bytes each time for the same module and options.  ``path`` is written whole or not at
all: the export is made beside it and moved in; an existing ``path`` is replaced only when it
is an earlier export of the same name with its files unchanged, or with ``overwrite=True``
(:mod:`.writing`).
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
from dataclasses import dataclass, field

from .._version import __version__
from ..errors import ExportError, quote
from . import cubin, manifest as _manifest, torch_package, wheel
from .names import checked_package, checked_prefix, checked_version
from .op_rules import rules_for
from .spec import collect, source_of
from .writing import write

__all__ = ["export", "Exported", "FORMATS"]

FORMATS = ("torch", "cubin", "wheel")
_RULES = ("grid", "block", "shared", "outputs")


@dataclass(frozen=True)
class Exported:
    """What :func:`export` wrote: ``path``, ``format``, the package or prefix ``name``,
    ``files`` (each file under ``path`` -> its sha256), ``sizes`` (-> bytes), ``ops`` (torch and
    wheel: each op -> its schema), ``wheel`` (the wheel's path, for ``"wheel"``) and the
    ``manifest`` (a dict; ``manifest.json`` holds the same)."""

    path: str
    format: str
    name: str
    files: dict = field(repr=False)
    sizes: dict = field(repr=False)
    ops: dict = field(repr=False)
    manifest: dict = field(repr=False)
    wheel: str | None = None

    def __repr__(self) -> str:
        total = sum(self.sizes.values())
        return (f"<Exported {self.format} {self.name!r} at {self.path}: {len(self.files)} files, "
                f"{total:,} bytes>")


def _by_python_name(per_kernel: dict, ks, module) -> dict:
    """``kernels={...}``'s keys (any spelling ``m[...]`` takes) as the exported kernels' names."""
    out = {}
    for key, opts in per_kernel.items():
        try:
            cxx = module[key].name
        except Exception:
            cxx = None
        k = next((k for k in ks if k.cxx == cxx), None)
        if k is None:
            raise ExportError(f"kernels: no kernel {quote(key, 80)} in this export; it has "
                              f"{', '.join(k.name for k in ks)}")
        if not isinstance(opts, dict):
            raise ExportError(f"kernels[{key!r}]: a dict of {', '.join(_RULES)}, not "
                              f"{quote(opts, 80)}")
        out[k.name] = opts
    return out


def _options(per_kernel: dict, shared: dict, names: list[str]) -> dict[str, dict]:
    """Each kernel's rules: the shared ones, then what ``kernels={name: {...}}`` says for it."""
    return {n: {**shared, **per_kernel.get(n, {})} for n in names}


def _fmt(fmt) -> str:
    if fmt not in FORMATS:
        raise ExportError(f"format {quote(fmt, 80)}: export makes {', '.join(map(repr, FORMATS))}")
    return fmt


def _name_from(path: pathlib.Path, name, fmt: str) -> str:
    """The package name (torch, wheel) or C prefix (cubin).  A torch package is the directory
    ``path`` and is imported by the directory's name, so that name, where it is an identifier,
    must be a name a package can have too; ``name=`` then names the op namespace."""
    check = checked_prefix if fmt == "cubin" else checked_package
    ident = bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", path.name or ""))
    if fmt == "torch" and ident and name is not None and name != path.name:
        check(path.name, "path")
    if name is not None:
        return check(name)
    if ident:
        return check(path.name)
    raise ExportError(f"path {quote(str(path), 80)}: its last part is not a Python identifier, "
                      f"so give the {'prefix' if fmt == 'cubin' else 'package'} a name= "
                      f"('scale_ops')")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def export(obj, format: str, path, *, name: str | None = None, kernels=None, grid=None,
           block=None, shared=None, outputs=None, version: str = "0.1.0",
           overwrite: bool = False) -> Exported:
    """Export a ``%%cuda`` module's kernels (every build of its arch list) as a torch op package
    (``"torch"``), as binaries with a C header, a Python loader and a manifest (``"cubin"``), or
    as a wheel of the torch package (``"wheel"``), into directory ``path``.

    ``obj``: the Module (``%%cuda --name m``) or one of its kernels.  ``kernels``: which to
    export (names; default all), or ``{kernel: {grid=..., block=..., shared=..., outputs=...}}``
    for rules per kernel.  For a torch op, the launch rules (each an int or tuple, an expression
    of the kernel's parameters as a string, or a function whose parameters are named after
    them): ``grid`` and ``block`` (required), ``shared`` (dynamic shared bytes, default 0),
    ``outputs`` (pointers the op allocates and returns instead of taking:
    ``{"y": "like x"}``, ``{"c": "(m, n)"}``, ``{"y": ("like x", "float16")}`` where the pointee
    names no dtype).  ``name``: the package (C prefix) name, default the last part of ``path``.
    ``version``: the package's.  ``overwrite`` (a bool): replace a directory that is not an
    earlier export of this name with its files unchanged.  Returns an :class:`Exported`.

    Examples::

        export(m, "torch", "ops/scale_ops", grid="cdiv(n, 256)", block=256,
               outputs={"y": "like x"})
        export(m.scale, "cubin", "out/scale")
        export(m, "wheel", "dist_src/scale_ops", grid=lambda n: cdiv(n, 256), block=256)
    """
    fmt = _fmt(format)
    if not isinstance(overwrite, bool):
        raise ExportError(f"overwrite={quote(overwrite, 80)}: True or False")
    if not isinstance(path, (str, os.PathLike)):
        raise ExportError(f"path: a directory (str or path), not {quote(path, 80)}")
    path = pathlib.Path(path).expanduser().absolute()
    name = _name_from(path, name, fmt)
    version = checked_version(version)
    if kernels is not None and not isinstance(kernels, (str, list, tuple, dict)):
        raise ExportError(f"kernels={quote(kernels, 80)}: give a kernel's name, a list of names, "
                          f"or a dict of rules per kernel name")
    module, only = source_of(obj)
    per_kernel = kernels if isinstance(kernels, dict) else {}
    ks = collect(module, only if only is not None or per_kernel else kernels)
    shared_rules = {k: v for k, v in (("grid", grid), ("block", block), ("shared", shared),
                                      ("outputs", outputs)) if v is not None}
    if fmt == "cubin":
        if shared_rules or per_kernel:
            raise ExportError(f"{', '.join(shared_rules) or 'kernels={...}'}: launch rules are "
                              f"for a torch op; kernel.h and kernel.py take grid and block at "
                              f"each launch")
        return _cubin(path, name, version, ks, module, __version__, overwrite)
    per = _options(_by_python_name(per_kernel, ks, module), shared_rules, [k.name for k in ks])
    items = [(k, rules_for(k, per[k.name])) for k in ks]
    op_names = [nm["op"] for nm in torch_package.names(items)]
    ops = {k.name: torch_package.schema(name, k, r, op) for (k, r), op in zip(items, op_names)}
    package = _torch_files(name, version, items, ops, module, __version__, fmt,
                           path.name if fmt == "torch" else name)
    if fmt == "torch":
        return _done(path, fmt, name, package, ops, overwrite)
    summary = f"{', '.join(op_names)}: CUDA kernels as PyTorch ops (cuda-magic export)"
    whl = wheel.wheel_bytes(name, version, summary, package, __version__)
    files = {f"{name}/{p}": d for p, d in package.items()}
    files["pyproject.toml"] = wheel.pyproject(name, version, summary).encode()
    files[f"dist/{wheel.wheel_name(name, version)}"] = whl
    return _done(path, fmt, name, files, ops, overwrite, package_manifest=package["manifest.json"],
                 wheel_path=str(path / "dist" / wheel.wheel_name(name, version)))


def _torch_files(name, version, items, schemas, module, cm_version, fmt,
                 import_name=None) -> dict[str, bytes]:
    files = {"__init__.py": torch_package.init_source(name, version, items, cm_version,
                                                      import_name).encode(),
             "_driver.py": torch_package.template("_driver.py"),
             "_torch.py": torch_package.template("_torch.py")}
    for k, _ in items:
        for b in k.builds:
            files[f"binaries/{b.file}"] = b.data
    nms = torch_package.names(items)
    ops = {k.name: {"schema": schemas[k.name], **r.given,
                    "mutates": [p.name for p in torch_package.mutated(k, r)]} for k, r in items}
    m = _manifest.manifest(name, fmt, version, [k for k, _ in items], module.source, cm_version,
                           ops=ops, files={p: _sha(d) for p, d in files.items()
                                           if not p.startswith("binaries/")},
                           names={k.name: {"python": nm["op"]} for (k, _), nm in zip(items, nms)})
    files["manifest.json"] = _manifest.dumps(m)
    return files


def _cubin(path, name, version, ks, module, cm_version, overwrite) -> Exported:
    files = {"kernel.h": cubin.header_source(name, ks, cm_version).encode(),
             "kernel.py": cubin.loader_source(name, ks, cm_version).encode()}
    for k in ks:
        for b in k.builds:
            files[b.file] = b.data
    attrs, (c_kernels, c_params) = cubin.python_names(ks), cubin.c_names(name, ks)
    names = {k.name: {"python": attrs[k.name], "c": c_kernels[k.name],
                      "c_params": c_params[k.name]} for k in ks}
    m = _manifest.manifest(name, "cubin", version, ks, module.source, cm_version,
                           files={p: _sha(d) for p, d in files.items()
                                  if p in ("kernel.h", "kernel.py")}, names=names)
    files["manifest.json"] = _manifest.dumps(m)
    return _done(path, "cubin", name, files, {}, overwrite)


def _done(path, fmt, name, files, ops, overwrite, package_manifest=None,
          wheel_path=None) -> Exported:
    write(path, files, overwrite, name)
    m = json.loads((package_manifest or files["manifest.json"]).decode())
    return Exported(str(path), fmt, name, {p: _sha(d) for p, d in sorted(files.items())},
                    {p: len(d) for p, d in sorted(files.items())}, ops, m, wheel_path)
