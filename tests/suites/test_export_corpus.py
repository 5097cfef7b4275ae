"""Every corpus kernel (tests/kernels/, corpus.py) exported, with no GPU: each case x compiler
as cubin (kernel.h under gcc -Wall -Wextra -Werror in a C program; manifest sha256s; kernel.py's
parameter buffers as the binaries lay them out) and each kernel as a torch op (its schema as
torch registers it), or refused naming the parameter a torch op cannot carry."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import itertools
import pathlib
import re
import subprocess
import sys

import pytest

from corpus import BUILDS, build_case
from cuda_magic import export
from cuda_magic.compile.binary import entries
from cuda_magic.compile.toolkit_headers import header_dirs
from cuda_magic.errors import ExportError
from cuda_magic.exports.spec import collect

pytestmark = pytest.mark.slow

_names = itertools.count()
_cubins: dict = {}


def _binary(r) -> bytes:
    return r.binary.encode() if isinstance(r.binary, str) else bytes(r.binary)


def _cubin(case, compiler, tmp_path_factory):
    """The case built with ``compiler`` and exported as cubin (prefix ``corp``), once."""
    key = (case.file, compiler)
    if key not in _cubins:
        m = build_case(case, compiler)
        root = tmp_path_factory.mktemp(f"{case.id}-{compiler}")
        _cubins[key] = (m, export(m, "cubin", root / "corp"))
    return _cubins[key]


def _calls(m, kernels) -> str:
    """A C statement per kernel launching it with zeroed arguments (structs: zeroed bytes),
    by the names kernel.h gives (``fill_int64_t`` is ``fill_int64_t_``: ``_t`` names are C's)."""
    from cuda_magic.exports.cubin import c_names
    c_name = c_names("corp", kernels)[0]
    out = []
    for k in kernels:
        args = []
        for p in k.params:
            if p.kind in ("pointer", "reference", "function"):
                args.append("(CUdeviceptr)0")
            elif p.kind == "scalar":
                args.append("0")
            else:
                args.append("zeros")
        out.append(f"    if (e == CUDA_SUCCESS) e = corp_{c_name[k.name]}(&m, 1, 1, 1, 32, 1, 1, 0, NULL"
                   + "".join(f", {a}" for a in args) + ");\n")
    return "".join(out)


@pytest.mark.parametrize("case, compiler", BUILDS)
def test_kernel_h_compiles_in_a_c_program(case, compiler, tmp_path_factory, tmp_path):
    m, e = _cubin(case, compiler, tmp_path_factory)
    ks = collect(m)
    biggest = max([p.size for k in ks for p in k.params] + [1])
    program = ('#include "kernel.h"\n\nint main(void)\n{\n    corp_t m;\n'
               f'    static const unsigned char zeros[{biggest}] = {{0}};\n'
               '    CUresult e = corp_load(&m);\n    (void)zeros;\n'
               + _calls(m, ks) +
               '    corp_unload(&m);\n    return (int)e;\n}\n')
    (tmp_path / "prog.c").write_text(program)
    run = subprocess.run(["gcc", "-x", "c", "-Wall", "-Wextra", "-Werror", "-c",
                          "-I", header_dirs()["cudart"], "-I", e.path, str(tmp_path / "prog.c"),
                          "-o", str(tmp_path / "prog.o")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stderr == "", run.stderr[-3000:]


@pytest.mark.parametrize("case, compiler", BUILDS)
def test_manifest_sha256_is_the_binary(case, compiler, tmp_path_factory):
    m, e = _cubin(case, compiler, tmp_path_factory)
    root = pathlib.Path(e.path)
    by_file = {}
    for k in e.manifest["kernels"]:
        for f in k["builds"]:
            by_file.setdefault(f, []).append(k["cxx"])
    assert set(by_file) == {b["file"] for b in e.manifest["builds"]}
    for b in e.manifest["builds"]:
        data = (root / b["file"]).read_bytes()
        assert b["sha256"] == hashlib.sha256(data).hexdigest() and b["bytes"] == len(data)
        for cxx in by_file[b["file"]]:
            assert hashlib.sha256(_binary(m.result_of(cxx, b["arch"]))).hexdigest() == b["sha256"]


@pytest.mark.parametrize("case, compiler", BUILDS)
def test_kernel_py_buffers_are_the_binarys(case, compiler, tmp_path_factory):
    m, e = _cubin(case, compiler, tmp_path_factory)
    spec = importlib.util.spec_from_file_location(f"corp_kernel_{next(_names)}",
                                                  pathlib.Path(e.path) / "kernel.py")
    loader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loader)
    names = m.python_names()
    assert set(names) <= set(loader.__all__)
    for name, nk in names.items():
        k = getattr(loader, name)
        r = m.result_of(nk.name)
        (entry,) = [x for x in entries(r.binary, r.format) if x.symbol == nk.symbol]
        end = max((off + size for off, size in entry.params), default=0)
        assert k._struct.size == end, (name, k._struct.format, entry.params)
        assert len(k.params) == len(entry.params) == len(k.kinds)


_CANNOT = ("struct", "reference", "function", "unknown")


@pytest.mark.parametrize("case, compiler", BUILDS)
def test_each_kernel_as_a_torch_op(case, compiler, tmp_path):
    m = build_case(case, compiler)
    made = []
    for name in m.python_names():
        pkg = f"corp_{re.sub(r'[^A-Za-z0-9_]', '_', case.id)}_{compiler}_{next(_names)}"
        try:
            e = export(m, "torch", tmp_path / pkg, kernels=[name], grid=1, block=1)
        except ExportError as err:
            (k,) = collect(m, [name])
            found = re.search(r"parameter '(\w+)' \(", str(err))
            assert found, f"{name}: {err}"
            (p,) = [p for p in k.params if p.name == found[1]]
            assert p.kind in _CANNOT or (p.kind == "pointer" and p.pointer > 1), (name, p, str(err))
            assert "'cubin'" in str(err)
            assert not (tmp_path / pkg).exists()
            continue
        assert list(e.ops) == [name]
        made.append(e)
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(tmp_path))
    try:
        for e in made:
            importlib.import_module(e.name)
            for kernel, schema in e.ops.items():
                assert str(getattr(getattr(torch.ops, e.name), kernel).default._schema) == schema
    finally:
        sys.path.remove(str(tmp_path))
        for e in made:
            sys.modules.pop(e.name, None)
