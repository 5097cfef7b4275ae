"""cuda_magic.export with no GPU: what each format writes (files, manifest, schemas, kernel.h,
kernel.py, the wheel), that it is the same bytes every time, the rules' errors, how a path is
written or refused, the exports' run time (_driver) on its own, %cuda_export and the view."""

from __future__ import annotations

import ast
import base64
import contextlib
import csv
import ctypes
import functools
import hashlib
import importlib
import importlib.util
import io
import itertools
import json
import math
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys
import types
import zipfile

import pytest
from IPython.core.error import UsageError

import cuda_magic
from conftest import ARCH, SAXPY
from cuda_magic import export
from cuda_magic.cell import build
from cuda_magic.compile.toolkit_headers import header_dirs
from cuda_magic.errors import Error, ExportError
from cuda_magic.exports import _driver, torch_package
from cuda_magic.exports.manifest import portable, roots
from cuda_magic.exports.op_rules import rules_for
from cuda_magic.exports.spec import collect

ARCHS = ["sm_90a", "sm_100a"]
SAXPY_RULES = dict(grid="cdiv(n, 256)", block=256, outputs={"y": "like x"})

MULTI = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void split(const float* x, float* lo, float* hi, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { lo[i] = fminf(x[i], 0.f); hi[i] = fmaxf(x[i], 0.f); }
}

extern "C" __global__ void scalars(float* y, int i, unsigned u, long long l, float f, double d,
                                   __half h, __nv_bfloat16 bf, bool b) {
    y[threadIdx.x] = f + (float)d + i + u + l + __half2float(h) + __bfloat162float(bf) + b;
}

extern "C" __global__ void nothing() { }
'''

ODD = r'''
struct Pair { float a; int b; };

extern "C" __global__ void by_struct(Pair p, float* y) { y[threadIdx.x] = p.a + p.b; }
extern "C" __global__ void indirect(float** rows, int n) { rows[threadIdx.x][0] = n; }
extern "C" __global__ void untyped(const float* x, void* out, int n) {
    if (threadIdx.x < n) ((float*)out)[threadIdx.x] = x[threadIdx.x];
}
'''

BLOCK = 256          # a notebook global, which a rule must not read


def cdiv(a, b):
    """What the exported package gives its rules as ``cdiv`` (so the lambdas here run too)."""
    return -(-a // b)


_names = itertools.count()


def unique(tag: str) -> str:
    """A package name no other test of this process registers ops under."""
    return f"cmx_{tag}_{next(_names)}"


def tree(path) -> dict[str, bytes]:
    """Every file under ``path`` (relative path -> bytes)."""
    root = pathlib.Path(path)
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@contextlib.contextmanager
def imported(parent, name):
    """The generated package ``name`` in ``parent``, imported; sys.path and sys.modules as they
    were afterwards (its torch ops stay registered: each test gives its own name)."""
    parent = str(parent)
    sys.path.insert(0, parent)
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(parent)
        for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[mod]


class Duck:
    """Stands in for a CUDA tensor where a generated launch reads one (no GPU here)."""

    def __init__(self, dtype, ptr=4096, device=0):
        self.dtype, self.ptr, self.device = dtype, ptr, device

    def get_device(self):
        return self.device

    def is_contiguous(self):
        return True

    def data_ptr(self):
        return self.ptr


def launches(pkg, monkeypatch) -> list:
    """The launches the package's ops make, recorded instead of run: (kernel name, device,
    grid, block, shared, values...)."""
    calls = []
    monkeypatch.setattr(pkg._torch, "launch",
                        lambda k, dev, grid, block, shared, *values:
                        calls.append((k.name, dev, grid, block, shared, *values)))
    return calls


# --- module builds, once per file -------------------------------------------------------------

@pytest.fixture(scope="module")
def saxpy():
    return build(SAXPY, {"arch": ARCHS})


@pytest.fixture(scope="module")
def saxpy_nvcc():
    return build(SAXPY, {"arch": ARCH, "compiler": "nvcc"})


@pytest.fixture(scope="module")
def multi():
    return build(MULTI, {"arch": ARCHS})


@pytest.fixture(scope="module")
def odd():
    return build(ODD, {"arch": ARCH})


# --- 1. the torch export: its files and its manifest ---------------------------------------------

@pytest.mark.parametrize("which", ["nvrtc", "nvcc"])
def test_torch_export_files_and_manifest_are_the_builds(which, saxpy, saxpy_nvcc, tmp_path):
    m = saxpy if which == "nvrtc" else saxpy_nvcc
    e = export(m, "torch", tmp_path / "scale_ops", **SAXPY_RULES)
    assert e.format == "torch" and e.name == "scale_ops" and e.path == str(tmp_path / "scale_ops")
    want = {"__init__.py", "_driver.py", "_torch.py", "manifest.json",
            *(f"binaries/scale.{arch}.{m.result_of('scale', arch).format}" for arch in m.archs)}
    assert which == "nvcc" or all(p.endswith(".cubin") for p in want if p.startswith("binaries/"))
    files = tree(tmp_path / "scale_ops")
    assert set(files) == want == set(e.files)
    assert {p: sha(d) for p, d in files.items()} == e.files
    assert {p: len(d) for p, d in files.items()} == e.sizes
    for t in ("_driver.py", "_torch.py"):        # copied verbatim
        assert files[t] == (pathlib.Path(torch_package.__file__).parent / t).read_bytes()
    manifest = json.loads(files["manifest.json"])
    assert manifest == e.manifest and manifest["format"] == "cuda-magic-export/1"
    assert manifest["export"] == "torch" and manifest["source"] == m.source
    assert [b["arch"] for b in manifest["builds"]] == list(m.archs)
    for b in manifest["builds"]:
        r = m.result_of("scale", b["arch"])
        binary = r.binary.encode() if isinstance(r.binary, str) else bytes(r.binary)
        assert b["sha256"] == hashlib.sha256(binary).hexdigest()
        assert files[f"binaries/{b['file']}"] == binary and b["bytes"] == len(binary)
        assert b["file"] == f"scale.{r.arch}.{r.format}" and b["format"] == r.format
        assert b["argv"] == portable(r.argv, roots(), r.compiler) and b["compiler"] == r.compiler == which
        assert all(d not in " ".join(b["argv"]) for d in header_dirs().values())
        assert b["compiler_version"] == r.compiler_version
        res = r.resources["scale"]
        assert b["kernels"]["scale"]["registers"] == res.registers
        assert b["kernels"]["scale"]["spill_stores"] == res.spill_stores
        assert b["kernels"]["scale"]["spill_loads"] == res.spill_loads
    assert manifest["toolchain"] == {which: m.result_of("scale", m.archs[0]).compiler_version}
    # the package's own files are listed with their sha256 (the binaries are in builds)
    assert manifest["files"] == {p: sha(files[p]) for p in ("__init__.py", "_driver.py", "_torch.py")}
    (k,) = manifest["kernels"]
    assert k["name"] == "scale" and k["signature"] == "const float* x, float* y, float a, int n"
    assert [(p["name"], p["offset"], p["size"]) for p in k["params"]] == \
        [("x", 0, 8), ("y", 8, 8), ("a", 16, 4), ("n", 20, 4)]
    assert k["op"]["schema"] == e.ops["scale"] and k["op"]["grid"] == "cdiv(n, 256)"
    assert k["op"]["outputs"] == {"y": "like x"} and k["op"]["mutates"] == []


def test_manifest_lists_every_kernel_of_a_shared_build(multi, tmp_path):
    """Kernels of one cell share its binaries: each build's entry gives every kernel's resources."""
    for fmt in ("torch", "cubin"):
        opts = {} if fmt == "cubin" else dict(grid=1, block=1)
        e = export(multi, fmt, tmp_path / f"{fmt}_ops", **opts)      # not "torch": refused
        assert [b["arch"] for b in e.manifest["builds"]] == ARCHS      # one binary per arch
        for b in e.manifest["builds"]:
            r = multi.result_of("split", b["arch"])
            assert set(b["kernels"]) == {"split", "scalars", "nothing"}, (fmt, b["kernels"])
            for name in ("split", "scalars", "nothing"):
                assert b["kernels"][name]["registers"] == r.resources[name].registers


def test_kernels_of_one_build_share_its_loaded_library(multi, tmp_path):
    """The cell's kernels share a module (and its __device__ globals): in the export they share
    one Build per file, so the binary loads once and its globals are the kernels' own."""
    e = export(multi, "cubin", tmp_path / "shared_c")
    sys.path.insert(0, e.path)
    try:
        kernel = importlib.import_module("kernel")
        for a, b in zip(kernel.split.builds, kernel.scalars.builds):
            assert a is b and a.arch == b.arch
        assert len({id(b) for k in (kernel.split, kernel.scalars, kernel.nothing)
                    for b in k.builds}) == len(ARCHS)
    finally:
        sys.path.remove(e.path)
        sys.modules.pop("kernel", None)
    pytest.importorskip("torch")
    e = export(multi, "torch", tmp_path / unique("shared"), grid=1, block=32)
    with imported(pathlib.Path(e.path).parent, e.name) as pkg:
        assert [id(b) for b in pkg._K_split.builds] == [id(b) for b in pkg._K_nothing.builds]


# --- 2. the same module gives the same bytes ---------------------------------------------------

def test_exports_are_byte_reproducible(saxpy, multi, tmp_path):
    grid = lambda n: cdiv(n, 256)  # noqa: E731
    cases = {
        "torch": (saxpy, dict(grid=grid, block=256, outputs={"y": "like x"})),
        "cubin": (multi, {}),
        "wheel": (saxpy, SAXPY_RULES),
    }
    for fmt, (m, opts) in cases.items():
        one = export(m, fmt, tmp_path / "one" / fmt / "pkg", **opts)
        two = export(m, fmt, tmp_path / "two" / "deeper" / fmt / "pkg", **opts)
        a, b = tree(one.path), tree(two.path)
        assert a.keys() == b.keys() and len(a) >= 4, fmt
        for rel in a:
            assert a[rel] == b[rel], f"{fmt}: {rel} differs between two exports"
        assert one.files == two.files and one.ops == two.ops
    assert any(p.endswith(".whl") for p in a)


# --- 3. schemas -----------------------------------------------------------------------------------

def _schema(m, kernel, **opts):
    (k,) = collect(m, [kernel])
    return torch_package.schema("ns", k, rules_for(k, {"grid": 1, "block": 1, **opts}))


def test_schemas(saxpy, multi):
    assert _schema(saxpy, "scale") == "ns::scale(Tensor x, Tensor(a1!) y, float a, SymInt n) -> ()"
    assert _schema(saxpy, "scale", outputs={"y": "like x"}) == \
        "ns::scale(Tensor x, float a, SymInt n) -> Tensor"
    assert _schema(multi, "split", outputs={"lo": "like x", "hi": "like x"}) == \
        "ns::split(Tensor x, SymInt n) -> (Tensor, Tensor)"
    assert _schema(multi, "split", outputs={"hi": "like x"}) == \
        "ns::split(Tensor x, Tensor(a1!) lo, SymInt n) -> Tensor"
    assert _schema(multi, "scalars") == (
        "ns::scalars(Tensor(a0!) y, SymInt i, SymInt u, SymInt l, float f, float d, float h, "
        "float bf, bool b) -> ()")
    assert _schema(multi, "nothing") == "ns::nothing() -> ()"


@pytest.mark.slow
def test_torch_registers_the_exported_schemas(saxpy, multi, tmp_path):
    torch = pytest.importorskip("torch")
    exports = [
        export(saxpy, "torch", tmp_path / unique("mut"), grid=1, block=1),
        export(saxpy, "torch", tmp_path / unique("out"), **SAXPY_RULES),
        export(multi, "torch", tmp_path / unique("multi"), grid=1, block=32,
               kernels={"split": {"outputs": {"lo": "like x", "hi": "like x"}}}),
        export(multi, "torch", tmp_path / unique("one_out"), kernels=["split"], grid=1, block=32,
               outputs={"hi": "like x"}),
    ]
    assert exports[3].ops["split"].endswith("(Tensor x, Tensor(a1!) lo, SymInt n) -> Tensor")
    assert exports[0].ops["scale"].endswith("(Tensor x, Tensor(a1!) y, float a, SymInt n) -> ()")
    for e in exports:
        with imported(pathlib.Path(e.path).parent, e.name) as pkg:
            assert sorted(pkg.__all__) == sorted(e.ops)
            for kernel, schema in e.ops.items():
                assert str(getattr(getattr(torch.ops, e.name), kernel).default._schema) == schema
                assert getattr(pkg, kernel).__doc__ is not None


# --- 4. the fake impl: torch.compile's view of the op ------------------------------------------

def test_fake_impl_gives_the_outputs(saxpy, multi, tmp_path):
    torch = pytest.importorskip("torch")
    from torch._subclasses.fake_tensor import FakeTensorMode
    out = export(saxpy, "torch", tmp_path / unique("fake"), **SAXPY_RULES)
    two = export(multi, "torch", tmp_path / unique("fake2"), grid=1, block=32,
                 kernels={"split": {"outputs": {"lo": "like x", "hi": "(n, 2)"}}})
    inplace = export(saxpy, "torch", tmp_path / unique("fake3"), grid=1, block=1)
    with imported(tmp_path, out.name) as a, imported(tmp_path, two.name) as b, \
            imported(tmp_path, inplace.name) as c:
        with FakeTensorMode():
            x = torch.empty(1000, device="cuda", dtype=torch.float32)
            y = a.scale(x, 2.0, 1000)
            assert (tuple(y.shape), y.dtype, str(y.device)) == ((1000,), torch.float32, "cuda:0")
            y = getattr(torch.ops, out.name).scale(x, 2.0, 1000)
            assert tuple(y.shape) == (1000,) and y.device.type == "cuda"
            lo, hi = b.split(x, 1000)
            assert (tuple(lo.shape), lo.dtype, str(lo.device)) == ((1000,), torch.float32, "cuda:0")
            assert (tuple(hi.shape), hi.dtype, str(hi.device)) == ((1000, 2), torch.float32, "cuda:0")
            assert c.scale(x, torch.empty_like(x), 2.0, 1000) is None


def test_make_fx_records_the_op(saxpy, tmp_path):
    torch = pytest.importorskip("torch")
    from torch.fx.experimental.proxy_tensor import make_fx
    e = export(saxpy, "torch", tmp_path / unique("fx"), **SAXPY_RULES)
    with imported(tmp_path, e.name):
        op = getattr(torch.ops, e.name).scale
        g = make_fx(lambda x: op(x, 2.0, x.shape[0]) * 2, tracing_mode="symbolic")(
            torch.empty(1000, device="meta"))
    assert f"torch.ops.{e.name}.scale.default(" in g.code
    (node,) = [n for n in g.graph.nodes if n.target is op.default]
    assert node.meta["val"].shape[0] is not None and node.meta["val"].dtype == torch.float32


# --- 5. what the generated Python imports ------------------------------------------------------

def _imports(source: str) -> tuple[set[str], set[str]]:
    """(top-level modules imported absolutely, modules imported relatively) by ``source``."""
    absolute, relative = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            absolute |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                relative |= {node.module} if node.module else {a.name for a in node.names}
            else:
                absolute.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "__import__":
            absolute.add("__import__")
        elif isinstance(node, ast.Attribute) and node.attr == "import_module":
            absolute.add("importlib.import_module")
    return absolute, relative


FORBIDDEN = {"cuda_magic", "cuda", "cupy", "numpy", "numba"}


def test_generated_python_imports_only_stdlib_torch_and_itself(saxpy, multi, tmp_path):
    def rule(n):
        return cdiv(n, 128)

    lo_shape = lambda x: x.shape  # noqa: E731
    stdlib = set(sys.stdlib_module_names)
    t = export(multi, "torch", tmp_path / "t", grid=1, block=128,
               kernels={"split": {"grid": rule, "outputs": {"lo": lo_shape, "hi": "like x"}}})
    assert "def rule(n):" in tree(t.path)["__init__.py"].decode()
    c = export(multi, "cubin", tmp_path / "c")
    files = tree(t.path)
    py = [p for p in files if p.endswith(".py")]
    assert sorted(py) == ["__init__.py", "_driver.py", "_torch.py"]
    for p in py:
        absolute, relative = _imports(files[p].decode())
        assert not absolute & FORBIDDEN, (p, absolute)
        assert absolute <= stdlib | {"torch"}, (p, absolute - stdlib)
        assert all(f"{r}.py" in files for r in relative), (p, relative)
    assert _imports(files["_driver.py"].decode()) == ({"ctypes", "re", "struct", "sys",
                                                       "threading"}, set())
    absolute, relative = _imports(tree(c.path)["kernel.py"].decode())
    assert absolute <= stdlib and not relative and not absolute & FORBIDDEN, absolute


# --- 6. the cubin export: kernel.h under gcc and g++, kernel.py on its own -----------------------

PROGRAM = r'''
#include "kernel.h"

int run(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr x, y, rows;
    struct { float a; int b; } pair = {1.0f, 2};
    kx_t m;
    CUresult e;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS)
        return 1;
    if (cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 2;
    if (cuMemAlloc(&x, 1024 * sizeof(float)) != CUDA_SUCCESS
            || cuMemAlloc(&y, 1024 * sizeof(float)) != CUDA_SUCCESS
            || cuMemAlloc(&rows, sizeof(CUdeviceptr)) != CUDA_SUCCESS)
        return 3;
    e = kx_load(&m);
    if (e == CUDA_SUCCESS)
        e = kx_split(&m, 4, 1, 1, 256, 1, 1, 0, NULL, x, y, y, 1024);
    if (e == CUDA_SUCCESS)
        e = kx_scalars(&m, 1, 1, 1, 32, 1, 1, 0, NULL, y, -1, 2u, 3ll, 1.5f, 2.5,
                       (unsigned short)0x3c00, (unsigned short)0x3f80, 1);
    if (e == CUDA_SUCCESS)
        e = kx_nothing(&m, 1, 1, 1, 1, 1, 1, 0, NULL);
    if (e == CUDA_SUCCESS)
        e = kx_by_struct(&m, 1, 1, 1, 32, 1, 1, 0, NULL, &pair, y);
    if (e == CUDA_SUCCESS)
        e = kx_indirect(&m, 1, 1, 1, 1, 1, 1, 0, NULL, rows, 4);
    if (e == CUDA_SUCCESS)
        e = kx_untyped(&m, 1, 1, 1, 32, 1, 1, 64 * 1024, NULL, x, y, 32);
    if (e == CUDA_SUCCESS)
        e = cuCtxSynchronize();
    kx_unload(&m);
    cuMemFree(x);
    cuMemFree(y);
    cuMemFree(rows);
    return e == CUDA_SUCCESS ? 0 : 4;
}

int main(void)
{
    return run();
}
'''


@pytest.fixture(scope="module")
def cubin_kx(tmp_path_factory):
    """MULTI and ODD in one cell, exported as cubin with the prefix kx."""
    m = build(MULTI + ODD, {"arch": ARCHS})
    root = tmp_path_factory.mktemp("cubin")
    return m, export(m, "cubin", root / "kx")


def test_cubin_export_files(cubin_kx):
    m, e = cubin_kx
    files = tree(e.path)
    assert set(files) == {"kernel.h", "kernel.py", "manifest.json",
                          "split.sm_90a.cubin", "split.sm_100a.cubin"}
    assert e.ops == {} and json.loads(files["manifest.json"])["export"] == "cubin"
    for b in e.manifest["builds"]:
        assert sha(files[b["file"]]) == b["sha256"] == sha(m.result_of("split", b["arch"]).binary)
    # each image in kernel.h is its file byte for byte, newest arch first
    images = re.findall(r"/\* (\S+): (\S+) cubin, sha256 ([0-9a-f]{64}) \*/\n"
                        r"static const unsigned char kx_image_0_\d+\[(\d+)\] = \{\n(.*?)\n\};",
                        files["kernel.h"].decode(), re.S)
    assert [(f, a) for f, a, *_ in images] == [("split.sm_100a.cubin", "sm_100a"),
                                               ("split.sm_90a.cubin", "sm_90a")]
    for f, _, digest, size, body in images:
        data = bytes(int(h, 16) for h in re.findall(r"0x([0-9a-f]{2})", body))
        assert data == files[f] and int(size) == len(data) and digest == sha(data)


@pytest.mark.parametrize("compiler", [["gcc", "-x", "c"], ["g++", "-x", "c++"]])
def test_kernel_h_compiles_warning_free(compiler, cubin_kx, tmp_path):
    _, e = cubin_kx
    (tmp_path / "prog.c").write_text(PROGRAM)
    run = subprocess.run([*compiler, "-Wall", "-Wextra", "-Werror", "-c",
                          "-I", header_dirs()["cudart"], "-I", e.path, str(tmp_path / "prog.c"),
                          "-o", str(tmp_path / "prog.o")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stderr == "", run.stderr[-3000:]
    assert (tmp_path / "prog.o").stat().st_size > 0


def test_kernel_h_signatures(cubin_kx):
    _, e = cubin_kx
    h = (pathlib.Path(e.path) / "kernel.h").read_text()
    assert re.search(r"static inline CUresult kx_scalars\(const kx_t\* cm_m,.*?"
                     r"CUstream stream,\s+CUdeviceptr y /\* float\* y \*/,\s+int i,\s+"
                     r"unsigned int u /\* unsigned u \*/,\s+long long l,\s+float f,\s+double d,\s+"
                     r"unsigned short h /\* __half h \*/,\s+"
                     r"unsigned short bf /\* __nv_bfloat16 bf \*/,\s+"
                     r"unsigned char b /\* bool b \*/\)", h, re.S)
    assert re.search(r"kx_by_struct\(.*?const void\* p /\* Pair p \*/,", h, re.S)
    assert "cm_args[0] = (void*)p;" in h                 # a struct: its bytes, as given
    assert "kx_nothing(" in h and "stream, NULL, NULL);" in h


KERNEL_PY = r'''
import importlib.abc, json, sys
BLOCKED = ("cuda_magic", "cuda", "cupy", "numpy", "numba", "torch")
asked = []

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            asked.append(name)
            raise ImportError(name + " is blocked here")

sys.meta_path.insert(0, Block())
if sys.argv[2] == "hide-driver":          # a machine with a driver: as if it had none
    import ctypes
    real = ctypes.CDLL
    def cdll(name, *a, **k):
        if "cuda" in str(name):
            raise OSError(name)
        return real(name, *a, **k)
    ctypes.CDLL = cdll
sys.path[:] = [sys.argv[1]] + [p for p in sys.path if "site-packages" not in p]
import kernel
out = {"asked": asked, "kernels": {}}
for name in sys.argv[3:]:
    k = getattr(kernel, name)
    out["kernels"][name] = {"archs": [b.arch for b in k.builds], "formats": [b.format for b in k.builds],
                            "kinds": list(k.kinds), "params": list(k.params),
                            "sha": [__import__("hashlib").sha256(b.read()).hexdigest() for b in k.builds]}
for attempt in range(2):
    try:
        kernel.split[4, 256](0, 0, 0, 1024)
        out["error"] = None
    except kernel.CudaError as e:
        out["error"] = [type(e).__name__, str(e), e.name]
out["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
print(json.dumps(out))
'''


def _has_driver() -> bool:
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def test_kernel_py_runs_without_cuda_magic(cubin_kx, tmp_path):
    m, e = cubin_kx
    kernels = ["split", "scalars", "nothing", "by_struct", "indirect", "untyped"]
    run = subprocess.run([sys.executable, "-I", "-c", KERNEL_PY, e.path,
                          "hide-driver" if _has_driver() else "as-is", *kernels],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout)
    assert out["asked"] == [] and out["loaded"] == []
    digests = [sha(m.result_of("split", a).binary) for a in ARCHS]
    for name in kernels:
        k = out["kernels"][name]
        assert k["archs"] == ARCHS and k["formats"] == ["cubin", "cubin"] and k["sha"] == digests
    assert out["kernels"]["scalars"]["kinds"] == ["p", "v", "v", "v", "v", "v", "v", "b", "v"]
    assert out["kernels"]["by_struct"]["kinds"] == ["s8", "p"]
    assert out["kernels"]["indirect"]["kinds"] == ["p", "v"]
    assert out["kernels"]["nothing"] == {**out["kernels"]["nothing"], "kinds": [], "params": []}
    name, message, code = out["error"]
    assert name == "CudaError" and code == "CUDA_ERROR_NO_DEVICE"
    assert message.startswith("no CUDA driver here (libcuda.so.1 cannot be loaded)")
    assert "needs an NVIDIA GPU and its driver" in message


def test_kernel_py_refuses_a_changed_binary(multi, tmp_path):
    e = export(multi, "cubin", tmp_path / "kx")
    spec = importlib.util.spec_from_file_location(unique("kernel"), tmp_path / "kx" / "kernel.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.split.builds[0].read() == (tmp_path / "kx" / "split.sm_90a.cubin").read_bytes()
    (tmp_path / "kx" / "split.sm_90a.cubin").write_bytes(b"\x7fELF not it")
    with pytest.raises(mod.CudaError, match=r"split.sm_90a.cubin: not the binary that was "
                                            r"exported \(sha256 differs\)"):
        mod.split.builds[0].read()
    assert e.manifest["kernels"][0]["builds"] == ["split.sm_90a.cubin", "split.sm_100a.cubin"]


# --- 7. the run time's pieces that need no driver ----------------------------------------------

@pytest.mark.parametrize("archs, cc, ptx, want", [
    (["sm_90a", "sm_100a"], (9, 0), (), "sm_90a"),              # its own arch
    (["sm_90a", "sm_100a"], (10, 0), (), "sm_100a"),
    (["sm_80", "sm_86"], (8, 6), (), "sm_86"),                  # exact before lower minor
    (["sm_80", "sm_86"], (8, 9), (), "sm_86"),                  # same major, highest lower minor
    (["sm_80"], (8, 6), (), "sm_80"),
    (["sm_120"], (12, 1), (), "sm_120"),
    (["sm_100f"], (10, 3), (), "sm_100f"),                      # a family build, lower minor
    (["sm_90a"], (9, 1), (), None),                             # 'a': its own CC only
    (["sm_100a"], (10, 3), (), None),
    (["sm_80"], (9, 0), (), None),                              # machine code: not a newer major
    (["sm_90"], (8, 9), (), None),                              # nor an older GPU
    (["sm_80"], (9, 0), ("sm_80",), "sm_80"),                   # PTX: any newer GPU
    (["sm_75", "sm_80"], (9, 0), ("sm_75", "sm_80"), "sm_80"),  # ... the highest
    (["sm_80", "sm_75"], (8, 0), ("sm_75",), "sm_80"),          # machine code before PTX
    (["sm_90a"], (10, 0), ("sm_90a",), None),                   # 'a' PTX: not on a newer GPU
    (["sm_90"], (8, 0), ("sm_90",), None),                      # PTX: not on an older GPU
    ([], (9, 0), (), None),
    (["compute_90", "bogus"], (9, 0), (), None),
])
def test_pick(archs, cc, ptx, want):
    assert _driver.pick(archs, *cc, ptx) == want


def _bits_to_float(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


BF16_BITS = [
    0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3DCCCCCD, 0x40490FDB, 0x477FE000,
    0x3F808000,                  # 1 + 2^-8: halfway, to even (down)
    0x3F818000,                  # halfway, to even (up)
    0x3F808001, 0x3F807FFF,      # just above / below halfway
    0xBF818000,                  # halfway, negative
    0x00000001, 0x00008000, 0x00018000, 0x007FFFFF, 0x80008001,     # subnormals
    0x7F7FFFFF, 0x7F7F7FFF, 0xFF7FFFFF,                             # the largest floats
    0x7F800000, 0xFF800000,                                         # infinities
    0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000, 0xFFC00001,     # NaNs
]


def test_bf16_rounds_like_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    import numpy as np
    with np.errstate(invalid="ignore"):         # the NaNs
        want = np.array(BF16_BITS, dtype=np.uint32).view(np.float32) \
            .astype(ml_dtypes.bfloat16).view(np.uint16).tolist()
    got = [_driver.bf16(_bits_to_float(b)) for b in BF16_BITS]
    assert [hex(g) for g in got] == [hex(w) for w in want]
    assert _driver.bf16(1.0) == 0x3F80 and _driver.bf16(-2) == 0xC000
    assert _driver.bf16(float("nan")) == 0x7FC0 and _driver.bf16(-float("nan")) == 0xFFC0


def test_bf16_of_a_double_beyond_float_range_names_the_parameter():
    """An op's __nv_bfloat16 argument comes as a Python float, converted through float32 as the
    notebook's launch converts it: past float32's range it is an error naming the parameter, as
    the notebook's launch raises one (not a bare struct OverflowError)."""
    with pytest.raises(OverflowError, match=r"^parameter 'w': 1e\+39 is out of range for bfloat16$"):
        _driver.bf16(1e39, "w")
    with pytest.raises(OverflowError, match="parameter 'w'"):
        _driver.bf16(-1e300, "w")
    assert _driver.bf16(3.0e38) == 0x7F62   # large but within float32: rounded, not an error


def test_dims():
    assert _driver.dims(5) == (5, 1, 1)
    assert _driver.dims((2, 3)) == (2, 3, 1) and _driver.dims([1, 2, 3]) == (1, 2, 3)
    assert _driver.dims((7,)) == (7, 1, 1) and _driver.dims((1 << 32) - 1) == ((1 << 32) - 1, 1, 1)
    for bad in (0, -1, 1 << 32, (), (1, 2, 3, 4), (0, 1), (4, -2), "4", None, 2.5, (1, "x")):
        with pytest.raises(ValueError, match=r"^block must be a positive int or 1 to 3 positive "
                                             r"ints, not "):
            _driver.dims(bad, "block")
    with pytest.raises(ValueError, match=r"^grid must be .*, not 0$"):
        _driver.dims(0)


def test_stream_handle_and_pointer():
    class S:
        cuda_stream = 77

    class C:
        ptr = 78

    class D:
        def __cuda_stream__(self):
            return (0, 79)

    assert [_driver.stream_handle(s) for s in (None, 0, 5, S(), C(), D())] == [0, 0, 5, 77, 78, 79]

    class CAI:
        __cuda_array_interface__ = {"data": (8192, False)}

    assert [_driver.pointer(v, "x") for v in (None, 12, CAI(), Duck(None, ptr=4096))] == \
        [0, 12, 8192, 4096]
    with pytest.raises(TypeError, match=r"parameter 'x': give a device address .* not str"):
        _driver.pointer("0x10", "x")


def _kernel(kinds=("p", "s8", "b", "v", "v")):
    return _driver.LoadedKernel("k", "k", "const float* x, Pair p, __nv_bfloat16 w, int n, float f",
                          "=Q8sHxxif", (0, 8, 16, 20, 24), ("x", "p", "w", "n", "f"), (), kinds)


def test_kernel_values_convert_each_argument():
    k = _kernel()
    assert k._struct.size == 28
    pair = struct.pack("=fi", 1.5, 2)
    assert k.values([Duck(None, ptr=1 << 40), pair, 1.0, 3, 0.5]) == \
        [1 << 40, pair, 0x3F80, 3, 0.5]
    assert k.values([None, bytearray(8), _bits_to_float(0x3F808000), -1, 2]) == \
        [0, b"\0" * 8, 0x3F80, -1, 2]
    k.values([0, memoryview(pair), 0.0, 0, 0.0])            # anything bytes() takes
    plain = _driver.LoadedKernel("v", "v", "int a", "=i", (0,), ("a",), ())
    assert plain.kinds == ("v",) and plain.values([5]) == [5]


def test_kernel_values_errors():
    k = _kernel()
    with pytest.raises(TypeError, match=r"^k\(const float\* x, Pair p, __nv_bfloat16 w, int n, "
                                        r"float f\) takes 5 arguments, given 4$"):
        k.values([0, b"\0" * 8, 1.0, 3])
    with pytest.raises(TypeError, match=r"takes 5 arguments, given 6"):
        k.values([0, b"\0" * 8, 1.0, 3, 0.5, 1])
    with pytest.raises(TypeError, match=r"parameter 'p' takes 8 bytes \(the struct as the kernel "
                                        r"lays it out\), given 4$"):
        k.values([0, b"\0" * 4, 1.0, 3, 0.5])
    with pytest.raises(TypeError, match=r"parameter 'p' takes 8 bytes .*given 9$"):
        k.values([0, b"\0" * 9, 1.0, 3, 0.5])
    with pytest.raises(TypeError, match=r"parameter 'x': give a device address"):
        k.values(["x", b"\0" * 8, 1.0, 3, 0.5])


def test_launching_without_a_driver_says_so(monkeypatch):
    def no_library(name, *args, **kwargs):
        raise OSError(f"{name}: cannot open shared object file")

    if _has_driver():                   # as on a machine without one
        monkeypatch.setattr(_driver.ctypes, "CDLL", no_library)
        monkeypatch.setattr(_driver, "_state", {})
    k = _kernel()
    with pytest.raises(_driver.CudaError, match=r"^no CUDA driver here \(libcuda.so.1 cannot be "
                                                r"loaded\)") as err:
        k[1, 32](0, b"\0" * 8, 1.0, 3, 0.5)
    assert err.value.name == "CUDA_ERROR_NO_DEVICE"


# --- 8. the rules' errors name what is wrong ----------------------------------------------------

def rule_with(b):
    return lambda n: cdiv(n, b)


@pytest.mark.parametrize("what, options, message", [
    ("no grid", dict(block=256), r"^scale: give grid= for the torch op"),
    ("no block", dict(grid=1), r"^scale: give block= for the torch op"),
    ("syntax", dict(grid="cdiv(n,", block=256),
     r"^grid of scale: 'cdiv\(n,' is not a Python expression"),
    ("unknown name", dict(grid="cdiv(m, 256)", block=256),
     r"^grid of scale: 'cdiv\(m, 256\)' uses m, which the exported package does not have; an "
     r"expression may use the kernel's parameters \(a, n, x, y\)"),
    ("block name", dict(grid=1, block="threads"), r"^block of scale: 'threads' uses threads"),
    ("shared name", dict(grid=1, block=1, shared="smem * 4"), r"^shared of scale: 'smem \* 4' "
                                                              r"uses smem"),
    ("closure", dict(grid=rule_with(256), block=256),
     r"^grid of scale: <lambda> reads b from the function around it"),
    ("bool", dict(grid=True, block=1), r"^grid of scale: give an int, a tuple, .* not True"),
    ("float", dict(grid=1, block=2.5), r"^block of scale: give an int, .* not 2.5"),
    ("output const", dict(grid=1, block=1, outputs={"x": "like x"}),
     r"^outputs of scale: 'x' is 'const float\* x', not a non-const pointer; outputs are "
     r"pointers the kernel writes: y$"),
    ("output scalar", dict(grid=1, block=1, outputs={"n": "like x"}),
     r"^outputs of scale: 'n' is 'int n', not a non-const pointer"),
    ("output unknown", dict(grid=1, block=1, outputs={"z": "like x"}),
     r"^outputs of scale: 'z' is not a parameter"),
    ("like non-input", dict(grid=1, block=1, outputs={"y": "like q"}),
     r"^outputs of scale: 'y': 'like q' names no input tensor; the op's input tensors are x$"),
    ("like itself", dict(grid=1, block=1, outputs={"y": "like y"}), r"'like y' names no input"),
    ("like a scalar", dict(grid=1, block=1, outputs={"y": "like n"}), r"'like n' names no input"),
    ("shape name", dict(grid=1, block=1, outputs={"y": "(rows, n)"}),
     r"^outputs of scale: 'y': '\(rows, n\)' uses rows"),
    ("outputs list", dict(grid=1, block=1, outputs=["y"]), r"^outputs of scale: a dict"),
    ("option", dict(grid=1, block=1, kernels={"scale": {"threads": 1}}),
     r"^scale: no option threads; a torch op takes grid, block, shared, outputs$"),
    ("kernel", dict(grid=1, block=1, kernels=["nope"]), r"^kernels: .*nope"),
])
def test_rule_errors_name_the_thing(what, options, message, saxpy, tmp_path):
    with pytest.raises(ExportError, match=message):
        export(saxpy, "torch", tmp_path / "pkg", **options)
    assert not (tmp_path / "pkg").exists()


def test_function_rule_errors(saxpy, tmp_path):
    uses_global = lambda n: cdiv(n, BLOCK)  # noqa: E731
    with pytest.raises(ExportError, match=r"^grid of scale: <lambda> uses BLOCK from the notebook, "
                                          r"which the package cannot see"):
        export(saxpy, "torch", tmp_path / "pkg", grid=uses_global, block=256)
    not_a_param = lambda rows: cdiv(rows, 256)  # noqa: E731
    with pytest.raises(ExportError, match=r"^grid of scale: <lambda> takes rows, which the kernel "
                                          r"has no parameter of; its parameters are a, n, x, y$"):
        export(saxpy, "torch", tmp_path / "pkg", grid=not_a_param, block=256)

    def star(*args):
        return 1
    with pytest.raises(ExportError, match=r"^block of scale: give star plain parameters"):
        export(saxpy, "torch", tmp_path / "pkg", grid=1, block=star)

    def reads_global(n):
        return BLOCK
    with pytest.raises(ExportError, match=r"^block of scale: reads_global uses BLOCK from the "
                                          r"notebook"):
        export(saxpy, "torch", tmp_path / "pkg", grid=1, block=reads_global)
    output_of_y = lambda y: y.shape  # noqa: E731    (y is the output: not an input)
    with pytest.raises(ExportError, match=r"^outputs of scale: 'y': <lambda> takes y, which the "
                                          r"kernel has no parameter of"):
        export(saxpy, "torch", tmp_path / "pkg", grid=1, block=1, outputs={"y": output_of_y})
    assert not (tmp_path / "pkg").exists()


def test_a_callable_without_code_is_an_export_error(saxpy, tmp_path):
    """A partial (or a builtin, a callable object) has no source to copy: an ExportError that
    names the rule, not an AttributeError."""
    for fn in (functools.partial(cdiv, b=256), len):
        with pytest.raises(ExportError, match=r"^grid of scale: "):
            export(saxpy, "torch", tmp_path / "pkg", grid=fn, block=256)
    assert not (tmp_path / "pkg").exists()


def test_parameters_a_torch_op_cannot_carry(odd, tmp_path):
    with pytest.raises(ExportError, match=r"^by_struct: parameter 'p' \(Pair p\) is a struct; a "
                                          r"torch op passes tensors and numbers: export it as "
                                          r"'cubin'"):
        export(odd, "torch", tmp_path / "pkg", kernels=["by_struct"], grid=1, block=1)
    with pytest.raises(ExportError, match=r"^indirect: parameter 'rows' \(float\*\* rows\) is a "
                                          r"pointer to a pointer; .*export it as 'cubin'"):
        export(odd, "torch", tmp_path / "pkg", kernels=["indirect"], grid=1, block=1)
    with pytest.raises(ExportError, match=r"^outputs of untyped: 'out' is void\* out: no dtype "
                                          r"follows from that; give \(shape, dtype\)"):
        export(odd, "torch", tmp_path / "pkg", kernels=["untyped"], grid=1, block=1,
               outputs={"out": "like x"})
    assert not (tmp_path / "pkg").exists()
    e = export(odd, "torch", tmp_path / "pkg", kernels=["untyped"], grid=1, block=1,
               outputs={"out": ("(n, 2)", "float16")})
    assert e.ops["untyped"] == "pkg::untyped(Tensor x, SymInt n) -> Tensor"
    assert "_untyped_out = _torch.dtype('float16')" in tree(e.path)["__init__.py"].decode()
    export(odd, "cubin", tmp_path / "kx")                 # cubin takes them all


@pytest.mark.parametrize("args, options, message", [
    (("cubin",), dict(grid=1), r"^grid: launch rules are for a torch op; kernel.h and kernel.py "
                               r"take grid and block at each launch$"),
    (("cubin",), dict(block=1, outputs={"y": "like x"}), r"^block, outputs: launch rules"),
    (("cubin",), dict(kernels={"scale": {"grid": 1}}), r"^kernels=\{...\}: launch rules"),
    (("onnx",), {}, r"^format 'onnx': export makes 'torch', 'cubin', 'wheel'$"),
    (("TORCH",), {}, r"^format 'TORCH'"),
    (("torch",), dict(name="9lives", grid=1, block=1), r"^name='9lives': a package name is a "
                                                       r"Python identifier"),
    (("torch",), dict(name="class", grid=1, block=1), r"^name='class': a package name"),
    (("torch",), dict(name="a-b", grid=1, block=1), r"^name='a-b': a package name"),
    (("wheel",), dict(version="one", grid=1, block=1), r"^version='one': a version like '0.1.0' \(PEP 440"),
    (("wheel",), dict(version=1, grid=1, block=1), r"^version=1: a version like"),
])
def test_format_name_and_version_errors(args, options, message, saxpy, tmp_path):
    with pytest.raises(ExportError, match=message):
        export(saxpy, *args, tmp_path / "pkg", **options)
    assert not (tmp_path / "pkg").exists()


def test_path_errors(saxpy, tmp_path):
    with pytest.raises(ExportError, match=r"^path '.*/my-ops': its last part is not a Python "
                                          r"identifier, so give the package a name="):
        export(saxpy, "torch", tmp_path / "my-ops", grid=1, block=1)
    with pytest.raises(ExportError, match=r"so give the prefix a name="):
        export(saxpy, "cubin", tmp_path / "2d")
    assert not (tmp_path / "my-ops").exists() and not (tmp_path / "2d").exists()
    e = export(saxpy, "torch", tmp_path / "my-ops", name="my_ops", grid=1, block=1)
    assert e.name == "my_ops" and e.ops["scale"].startswith("my_ops::scale(")
    with pytest.raises(ExportError, match=r"^path: a directory \(str or path\), not 5$"):
        export(saxpy, "torch", 5, grid=1, block=1)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ExportError, match=r"^path '.*afile' is a file; an export writes a "
                                          r"directory$"):
        export(saxpy, "cubin", tmp_path / "afile")
    assert (tmp_path / "afile").read_text() == "x"
    with pytest.raises(ExportError, match=r"^export takes a %%cuda Module .* not str$"):
        export("m", "cubin", tmp_path / "x")


# --- 9. lambdas and defs as rules ---------------------------------------------------------------

def test_lambda_and_def_rules_go_into_the_package(saxpy, tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")

    def block_rule(n):
        """Smaller blocks for short arrays."""
        return 128 if n < 4096 else 256

    grid = lambda n: cdiv(n, 128 if n < 4096 else 256)  # noqa: E731
    shape = lambda x: (x.shape[0],)  # noqa: E731
    e = export(saxpy, "torch", tmp_path / unique("fn"), grid=grid, block=block_rule,
               outputs={"y": shape})
    init = tree(e.path)["__init__.py"].decode()
    assert "_grid_scale = lambda n: cdiv(n, 128 if n < 4096 else 256)" in init
    assert "def block_rule(n):\n    \"\"\"Smaller blocks for short arrays.\"\"\"" in init
    assert "_block_scale = block_rule" in init and "_shape_scale_y = lambda x: (x.shape[0],)" in init
    assert e.manifest["kernels"][0]["op"]["grid"] == "<lambda>"
    assert e.manifest["kernels"][0]["op"]["block"] == "block_rule"
    with imported(tmp_path, e.name) as pkg:
        assert pkg._grid_scale(1000) == 8 and pkg._grid_scale(10000) == 40
        assert pkg._block_scale(1000) == 128 and pkg._block_scale(10000) == 256
        calls = launches(pkg, monkeypatch)
        pkg._launch_scale(Duck(torch.float32, 4096), Duck(torch.float32, 8192), 2.0, 10000)
        assert calls == [("scale", 0, 40, 256, 0, 4096, 8192, 2.0, 10000)]
        (y,) = pkg._outputs_scale(torch.empty(7, device="meta"), 2.0, 7)
        assert y.shape == (7,) and y.dtype == torch.float32


def test_expression_rules_reach_the_launch(saxpy, tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    e = export(saxpy, "torch", tmp_path / unique("expr"), grid="(cdiv(n, 256), 2)",
               block="(256,)", shared="n * 4 if n < 1024 else 0")
    with imported(tmp_path, e.name) as pkg:
        calls = launches(pkg, monkeypatch)
        pkg._launch_scale(Duck(torch.float32, 256), Duck(torch.float32, 512), 0.5, 1000)
        assert calls == [("scale", 0, (4, 2), (256,), 4000, 256, 512, 0.5, 1000)]
        with pytest.raises(ValueError, match=r"parameter 'x' is on cpu; the kernel reads GPU "
                                             r"memory: move it with .cuda\(\)"):
            pkg._launch_scale(torch.empty(4), Duck(torch.float32), 0.5, 4)
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode(), pytest.raises(TypeError, match=r"parameter 'x' takes torch.float32 "
                                                              r"tensors, not torch.float16"):
            pkg._launch_scale(torch.empty(4, dtype=torch.float16, device="cuda"),
                              Duck(torch.float32), 0.5, 4)
        assert len(calls) == 1


def test_math_in_a_rule_works_in_the_package(saxpy, tmp_path, monkeypatch):
    """The rules may use math (the errors say so): the package must have it."""
    torch = pytest.importorskip("torch")
    e = export(saxpy, "torch", tmp_path / unique("math"),
               grid="math.ceil(n / 256)", block="math.gcd(n, 256)")
    with imported(tmp_path, e.name) as pkg:
        calls = launches(pkg, monkeypatch)
        pkg._launch_scale(Duck(torch.float32), Duck(torch.float32), 1.0, 1000)
        assert calls == [("scale", 0, 4, 8, 0, 4096, 4096, 1.0, 1000)]


def test_a_lambda_calling_an_imported_module(saxpy, tmp_path):
    """This file imports math, so Python compiles ``math.ceil(...)`` in its lambdas as an
    attribute load, not a method call: the lambda is still found and copied."""
    grid = lambda n: math.ceil(n / 256)  # noqa: E731
    e = export(saxpy, "torch", tmp_path / "pkg", grid=grid, block=256)
    assert "_grid_scale = lambda n: math.ceil(n / 256)" in tree(e.path)["__init__.py"].decode()


def test_a_parameter_named_dev_reaches_the_kernel(tmp_path, monkeypatch):
    """The generated launch's own names do not shadow the kernel's parameters."""
    torch = pytest.importorskip("torch")
    m = build('extern "C" __global__ void fill(float* y, int dev) { y[threadIdx.x] = dev; }',
              {"arch": ARCH})
    e = export(m, "torch", tmp_path / unique("dev"), grid=1, block=32)
    with imported(tmp_path, e.name) as pkg:
        calls = launches(pkg, monkeypatch)
        pkg._launch_fill(Duck(torch.float32, 4096), 7)
        assert calls == [("fill", 0, 1, 32, 0, 4096, 7)]


def test_a_lambda_in_a_multi_line_dict(saxpy, tmp_path):
    """Rules kept in a dict written over several lines (``**rules``): the lambda's line is not a
    statement of its own.  Either the lambda goes in or the export says to give a def or an
    expression: never a SyntaxError from inside the export."""
    rules = {
        "grid": lambda n: cdiv(n, 256),
        "block": 256,
    }
    try:
        e = export(saxpy, "torch", tmp_path / unique("dict"), **rules)
    except ExportError as err:
        assert "lambda" in str(err) and "def" in str(err)
        assert os.listdir(tmp_path) == []
    else:
        assert "lambda n: cdiv(n, 256)" in tree(e.path)["__init__.py"].decode()


# --- 10. writing: whole or not at all ----------------------------------------------------------

def test_a_foreign_directory_is_refused_and_left_alone(saxpy, tmp_path):
    d = tmp_path / "pkg"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    (d / "sub").mkdir()
    (d / "sub" / "data.bin").write_bytes(b"\x01\x02")
    before = tree(d)
    for fmt, opts in (("torch", dict(grid=1, block=1)), ("cubin", {}), ("wheel", dict(grid=1, block=1))):
        with pytest.raises(ExportError, match=r"^path '.*pkg' holds files that are not an "
                                              r"export; choose an empty or new directory, or "
                                              r"pass overwrite=True$"):
            export(saxpy, fmt, d, **opts)
    assert tree(d) == before and sorted(os.listdir(tmp_path)) == ["pkg"]
    e = export(saxpy, "cubin", d, overwrite=True)
    assert set(tree(d)) == set(e.files) and not (d / "notes.txt").exists()
    assert sorted(os.listdir(tmp_path)) == ["pkg"]


def test_an_empty_directory_is_taken(saxpy, tmp_path):
    (tmp_path / "pkg").mkdir()
    e = export(saxpy, "cubin", tmp_path / "pkg")
    assert set(tree(tmp_path / "pkg")) == set(e.files)


def test_an_earlier_export_is_replaced(saxpy, tmp_path):
    d = tmp_path / "pkg"
    first = export(saxpy, "cubin", d)
    assert "kernel.h" in tree(d)
    second = export(saxpy, "torch", d, grid=1, block=32)
    assert set(tree(d)) == set(second.files) and "kernel.h" not in tree(d)
    third = export(saxpy, "torch", d, grid=2, block=64)
    assert third.files["__init__.py"] != second.files["__init__.py"]
    assert {p: sha(b) for p, b in tree(d).items()} == third.files
    wheel = export(saxpy, "wheel", tmp_path / "w", grid=1, block=1)
    export(saxpy, "wheel", tmp_path / "w", grid=2, block=1)            # a wheel export too
    assert tree(tmp_path / "w").keys() == set(wheel.files)
    assert sorted(os.listdir(tmp_path)) == ["pkg", "w"]                # nothing left beside them
    assert first.files != third.files


def test_a_directory_holding_an_export_and_other_files_is_not_an_export(saxpy, tmp_path):
    """A project directory with a torch export inside it (proj/scale_ops) is not an earlier
    export of proj: exporting to proj must not delete the project's own files."""
    export(saxpy, "torch", tmp_path / "proj" / "scale_ops", grid=1, block=1)
    (tmp_path / "proj" / "train.py").write_text("precious")
    before = tree(tmp_path / "proj")
    with pytest.raises(ExportError, match=r"holds files that are not an export"):
        export(saxpy, "cubin", tmp_path / "proj", name="kx")
    assert tree(tmp_path / "proj") == before


def test_a_failed_write_leaves_the_earlier_export(saxpy, tmp_path, monkeypatch):
    d = tmp_path / "pkg"
    export(saxpy, "torch", d, grid=1, block=1)
    before = tree(d)
    real = pathlib.Path.write_bytes
    written = []

    def failing(self, data):
        written.append(self)
        if len(written) > 2:
            raise OSError(28, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(pathlib.Path, "write_bytes", failing)
    with pytest.raises(ExportError, match="No space left on device"):
        export(saxpy, "torch", d, grid=4, block=64, outputs={"y": "like x"})
    monkeypatch.undo()
    assert len(written) == 3 and all(d not in p.parents for p in written)
    assert tree(d) == before
    assert sorted(os.listdir(tmp_path)) == ["pkg"]          # no temporary directory beside it
    with pytest.raises(ExportError):                        # and into a new path: nothing
        monkeypatch.setattr(pathlib.Path, "write_bytes", failing)
        export(saxpy, "cubin", tmp_path / "new")
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["pkg"]


# --- 11. the wheel ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def wheel_export(saxpy, tmp_path_factory):
    root = tmp_path_factory.mktemp("wheel")
    return export(saxpy, "wheel", root / "scale_ops", version="1.2.3", **SAXPY_RULES)


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_wheel_contents(wheel_export):
    e = wheel_export
    root = pathlib.Path(e.path)
    assert e.wheel == str(root / "dist" / "scale_ops-1.2.3-py3-none-any.whl")
    files = tree(root)
    package = {p: d for p, d in files.items() if p.startswith("scale_ops/")}
    assert set(files) == {"pyproject.toml", "dist/scale_ops-1.2.3-py3-none-any.whl", *package}
    assert {p.split("/", 1)[1] for p in package} == {
        "__init__.py", "_driver.py", "_torch.py", "manifest.json",
        "binaries/scale.sm_90a.cubin", "binaries/scale.sm_100a.cubin"}
    assert os.path.getsize(e.wheel) < 1_000_000
    info = "scale_ops-1.2.3.dist-info"
    with zipfile.ZipFile(e.wheel) as z:
        infos = z.infolist()
        entries = {i.filename: z.read(i) for i in infos}
        assert z.testzip() is None
    assert set(entries) == set(package) | {f"{info}/{n}" for n in
                                           ("METADATA", "WHEEL", "RECORD", "top_level.txt")}
    assert [i.filename for i in infos][-1] == f"{info}/RECORD"
    for p, data in package.items():
        assert entries[p] == data, p
    for i in infos:
        assert i.date_time == (1980, 1, 1, 0, 0, 0), i.filename
        assert (i.external_attr >> 16) & 0o777 == 0o644
    meta = entries[f"{info}/METADATA"].decode()
    assert "Name: scale_ops\n" in meta and "Version: 1.2.3\n" in meta
    assert "Requires-Dist: torch>=2.4\n" in meta
    wheel = entries[f"{info}/WHEEL"].decode()
    assert "Tag: py3-none-any\n" in wheel and "Root-Is-Purelib: true\n" in wheel
    assert entries[f"{info}/top_level.txt"] == b"scale_ops\n"
    rows = list(csv.reader(io.StringIO(entries[f"{info}/RECORD"].decode())))
    assert sorted(r[0] for r in rows) == sorted(entries)
    for path, digest, size in rows:
        if path == f"{info}/RECORD":
            assert digest == size == ""
        else:
            assert digest == _record_hash(entries[path]) and int(size) == len(entries[path]), path
    assert json.loads(package["scale_ops/manifest.json"])["export"] == "wheel"
    assert e.manifest == json.loads(package["scale_ops/manifest.json"])
    toml = files["pyproject.toml"].decode()
    assert 'name = "scale_ops"' in toml and 'version = "1.2.3"' in toml
    assert 'packages = ["scale_ops"]' in toml


@pytest.mark.slow
def test_the_wheel_installs_into_a_fresh_venv(wheel_export, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True,
                   timeout=300)
    py = str(venv / "bin" / "python")
    run = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-deps", wheel_export.wheel],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    installed = {p: d for p, d in tree(pathlib.Path(site) / "scale_ops").items()
                 if "__pycache__" not in p}
    ours = tree(pathlib.Path(wheel_export.path) / "scale_ops")
    assert installed == ours
    assert (pathlib.Path(site) / "scale_ops-1.2.3.dist-info" / "RECORD").is_file()


@pytest.mark.slow
def test_pyproject_builds_the_same_package(wheel_export, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(wheel_export.path, src, ignore=shutil.ignore_patterns("dist"))
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                          "--no-build-isolation", str(src), "-w", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    (whl,) = out.glob("*.whl")
    assert whl.name == "scale_ops-1.2.3-py3-none-any.whl"
    with zipfile.ZipFile(whl) as z:
        built = {n: z.read(n) for n in z.namelist() if n.startswith("scale_ops/")}
    with zipfile.ZipFile(wheel_export.wheel) as z:
        ours = {n: z.read(n) for n in z.namelist() if n.startswith("scale_ops/")}
    assert built == ours


# --- 12. %cuda_export ---------------------------------------------------------------------------

A = f"--arch {ARCH}"


@pytest.fixture
def magic(shell):
    return shell


def test_magic_after_cuda_magic_export(shell, tmp_path):
    """``cuda_magic.export(...)`` first (which imports the module that defines it), then
    %cuda_export: the magic still exports, and ``cuda_magic.exports.export`` is still the
    function (no submodule of that name for the import system to bind over it)."""
    shell.run_cell_magic("cuda", A + " --name m", SAXPY)
    cuda_magic.export(shell.user_ns["m"], "cubin", tmp_path / "first")
    e = shell.run_line_magic("cuda_export", f"m cubin {tmp_path}/kx")
    assert e.format == "cubin" and (tmp_path / "kx" / "kernel.h").is_file()
    assert cuda_magic.exports.export is cuda_magic.export
    assert callable(cuda_magic.exports.export) and not isinstance(cuda_magic.exports.export,
                                                                  types.ModuleType)


def test_magic_options_without_commas(magic, tmp_path):
    magic.run_cell_magic("cuda", A + " --name m", SAXPY)
    e = magic.run_line_magic("cuda_export", f'm torch {tmp_path}/scale_ops grid="cdiv(n, 256)" '
                                            f'block=256 outputs={{"y": "like x"}}')
    assert e.format == "torch" and e.name == "scale_ops"
    assert e.ops == {"scale": "scale_ops::scale(Tensor x, float a, SymInt n) -> Tensor"}
    op = e.manifest["kernels"][0]["op"]
    assert (op["grid"], op["block"], op["outputs"]) == ("cdiv(n, 256)", "256", {"y": "like x"})
    e = magic.run_line_magic("cuda_export", f'm wheel "{tmp_path}/with space/w_ops" grid=(2, 1) '
                                            f'block=(128, 2) version="2.0"')
    assert e.path == f"{tmp_path}/with space/w_ops" and e.wheel.endswith("w_ops-2.0-py3-none-any.whl")
    assert e.manifest["kernels"][0]["op"]["grid"] == "(2, 1)"


def test_magic_lambda_option_reaches_the_package(magic, tmp_path):
    magic.run_cell_magic("cuda", A + " --name m", SAXPY)
    e = magic.run_line_magic("cuda_export", f"m torch {tmp_path}/lam_ops "
                                            f"grid=lambda n: cdiv(n, 128) block=128 "
                                            f"name='{unique('lam')}'")
    init = tree(e.path)["__init__.py"].decode()
    assert "_grid_scale = lambda n: cdiv(n, 128)" in init
    assert "_grid_scale(n)" in init
    ns = {}
    exec(compile(re.search(r"^_grid_scale = .*$", init, re.M)[0], "<grid>", "exec"),
         {"cdiv": cdiv}, ns)
    assert ns["_grid_scale"](1000) == 8


def test_magic_exports_a_bound_kernel(magic, tmp_path):
    two = ('extern "C" __global__ void keep(const float* x, float* y) { y[threadIdx.x] = x[0]; }\n'
           'extern "C" __global__ void drop(float* y) { y[threadIdx.x] = 0.f; }\n')
    magic.run_cell_magic("cuda", A + " --name two", two)
    e = magic.run_line_magic("cuda_export", f"keep cubin {tmp_path}/kx")
    assert [k["name"] for k in e.manifest["kernels"]] == ["keep"]
    files = tree(e.path)
    assert "kx_keep(" in files["kernel.h"].decode() and "drop" not in files["kernel.py"].decode()
    e = magic.run_line_magic("cuda_export", f"two['drop'] torch {tmp_path}/drop_ops grid=1 block=32")
    assert list(e.ops) == ["drop"]


@pytest.mark.parametrize("line, kind, message", [
    ("m", UsageError, r"^write %cuda_export OBJECT FORMAT PATH \[KEY=EXPR \.\.\.\]"),
    ("m torch", UsageError, r"^write %cuda_export OBJECT FORMAT PATH"),
    ("nope torch {p} grid=1 block=1", UsageError, r"^OBJECT 'nope': NameError: name 'nope' is "
                                                  r"not defined$"),
    ("m torch {p} grid=(", UsageError, r"^%cuda_export options 'grid=\(': write them as Python "
                                       r"keyword arguments .*SyntaxError"),
    ("m torch {p} grid=undefined block=1", UsageError, r"NameError: name 'undefined' is not "
                                                       r"defined"),
    ("m onnx {p}", ExportError, r"^format 'onnx': export makes"),
    ("m torch {p} block=1", ExportError, r"^scale: give grid= for the torch op"),
    ("m torch {p} grid=1 block=1 bogus=3", (UsageError, Error), r"bogus"),
])
def test_magic_bad_lines_are_one_line_errors(magic, tmp_path, line, kind, message):
    magic.run_cell_magic("cuda", A + " --name m", SAXPY)
    with pytest.raises(kind, match=message) as err:
        magic.run_line_magic("cuda_export", line.format(p=tmp_path / "pkg"))
    assert "\n" not in str(err.value)
    if isinstance(err.value, Error):
        assert len(err.value._render_traceback_()) == 1
    assert not (tmp_path / "pkg").exists()


def test_magic_with_nothing_shows_its_usage(shell):
    with pytest.raises(UsageError, match=r"(?s)required: object, format, path.*\nusage: "
                                         r"%cuda_export object format path"):
        shell.run_line_magic("cuda_export", "")


# --- 13. the view -------------------------------------------------------------------------------

def test_the_view_text(saxpy, tmp_path, capsys):
    e = export(saxpy, "torch", tmp_path / "scale_ops", **SAXPY_RULES)
    cuda_magic.show(e)
    text = capsys.readouterr().out
    assert cuda_magic.view(e).text() == text.rstrip("\n")
    assert text.startswith(f"exported scale as torch 'scale_ops' to {tmp_path}/scale_ops: 6 files")
    assert "scale_ops::scale(Tensor x, float a, SymInt n) -> Tensor" in text
    for b in e.manifest["builds"]:
        r = saxpy.result_of("scale", b["arch"])
        row = re.search(rf"^\s*{re.escape(b['file'])}\s+{b['arch']}\s+nvrtc \S+\s+(\w+)\s+(.*)$",
                        text, re.M)
        assert row and row[1] == sha(r.binary)[:16]
        assert row[2].strip() == f"scale: {r.resources['scale'].registers} reg, 0/0"
    assert f"sys.path.insert(0, {str(tmp_path)!r})" in text
    assert "import scale_ops; scale_ops.scale(x, a, n)" in text
    c = export(saxpy, "cubin", tmp_path / "kx")
    out = cuda_magic.view(c).text()
    assert "ops:" not in out and f'#include "{tmp_path}/kx/kernel.h"' in out
    assert "kx_scale(&m, grid..., block..., 0, stream, x, y, a, n)" in out


def test_the_view_html_escapes(saxpy, tmp_path):
    parent = tmp_path / "a<b>&'c"
    e = export(saxpy, "wheel", parent / "scale_ops", **SAXPY_RULES)
    html = cuda_magic.view(e)._repr_html_()
    assert "a&lt;b&gt;&amp;&#x27;c" in html and "a<b>" not in html and "<b>&" not in html
    assert "scale_ops::scale(Tensor x, float a, SymInt n) -&gt; Tensor" in html
    for b in e.manifest["builds"]:
        assert f">{b['file']}</td>" in html and f">{b['sha256'][:16]}</td>" in html
    assert ">scale_ops/__init__.py</td>" in html and "pip install " in html
    assert html.startswith('<div class="cuda-magic-export">') and html.endswith("</pre></div>")
    assert "a<b>&'c" in cuda_magic.view(e).text()                    # text as it is
