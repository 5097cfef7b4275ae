"""Exports on the GPU, run where cuda-magic is not: a torch package (opcheck, no graph break
under fullgraph, torch.compile, a CUDA graph's replay, bitwise equal to the notebook's own
launch), the same package installed from its wheel into a fresh venv, the cubin export's
kernel.py, and a C program over kernel.h built with gcc -Wall -Werror."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

OUTSIDE = pathlib.Path(__file__).with_name("outside.py")

CELL = r"""
#include <cuda_bf16.h>

extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

extern "C" __global__ void axpy_inplace(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(a, x[i], y[i]);
}

__global__ void rowsum(const __nv_bfloat16* x, float* out, __nv_bfloat16 w, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.f;
    for (int c = 0; c < cols; ++c) s += __bfloat162float(x[r * cols + c]);
    out[r] = s * __bfloat162float(w);
}

extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
"""

RULES = {
    "scale": dict(grid="cdiv(n, 256)", block=256, outputs={"y": "like x"}),
    "axpy_inplace": dict(grid="cdiv(n, 256)", block=256),
    "rowsum": dict(grid=lambda rows: cdiv(rows, 128), block=128, outputs={"out": "(rows,)"}),
    "matmul": dict(grid="(cdiv(N, 16), cdiv(M, 16))", block=(16, 16), outputs={"C": "(M, N)"}),
}


def cdiv(a, b):
    return -(-a // b)


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _outside(python: str, spec: dict, tmp: pathlib.Path) -> dict:
    f = tmp / f"spec_{spec['kind']}_{len(list(tmp.glob('spec_*')))}.json"
    f.write_text(json.dumps(spec))
    p = subprocess.run([python, "-I", str(OUTSIDE), str(f)], capture_output=True, text=True,
                       env=_clean_env(), cwd=tmp, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """The cell built for sm_100a and sm_90a (the H200 runs the second), each kernel launched the
    notebook's way on torch tensors, inputs and outputs saved."""
    torch = pytest.importorskip("torch")
    from cuda_magic.cell import build
    tmp = tmp_path_factory.mktemp("exported")
    m = build(CELL, {"arch": ["sm_100a", "sm_90a"]})
    g = torch.Generator(device="cuda").manual_seed(7)
    n, rows, cols, M, N, K = 1000, 300, 37, 33, 45, 29
    t = {"x": torch.randn(n, device="cuda", generator=g),
         "y0": torch.randn(n, device="cuda", generator=g),
         "xb": torch.randn(rows, cols, device="cuda", generator=g).bfloat16(),
         "A": torch.randn(M, K, device="cuda", generator=g),
         "B": torch.randn(K, N, device="cuda", generator=g)}
    y = torch.empty_like(t["x"])
    m.scale[cdiv(n, 256), 256](t["x"], y, 2.5, n)
    yi = t["y0"].clone()
    m.axpy_inplace[cdiv(n, 256), 256](yi, t["x"], -0.75, n)
    out = torch.empty(rows, device="cuda")
    m.rowsum[cdiv(rows, 128), 128](t["xb"], out, 0.3, rows, cols)
    C = torch.empty(M, N, device="cuda")
    m.matmul[(cdiv(N, 16), cdiv(M, 16)), (16, 16)](t["A"], t["B"], C, M, N, K)
    torch.cuda.synchronize()
    files = {}
    for name, v in {**t, "y": y, "yi": yi, "out": out, "C": C}.items():
        files[name] = str(tmp / f"{name}.pt")
        torch.save(v.cpu(), files[name])
    calls = [
        {"op": "scale", "args": [files["x"], 2.5, n], "want": files["y"]},
        {"op": "axpy_inplace", "args": [files["y0"], files["x"], -0.75, n], "want": files["yi"],
         "mutated": 0},
        {"op": "rowsum", "args": [files["xb"], 0.3, rows, cols], "want": files["out"]},
        {"op": "matmul", "args": [files["A"], files["B"], M, N, K], "want": files["C"]},
    ]
    return {"m": m, "tmp": tmp, "files": files, "calls": calls, "n": n}


def test_torch_package_runs_outside_the_notebook(notebook):
    from cuda_magic import export
    tmp = notebook["tmp"]
    e = export(notebook["m"], "torch", tmp / "pkg" / "nb_ops", kernels=RULES)
    spec = {"kind": "torch", "package": "nb_ops", "path": str(tmp / "pkg"),
            "calls": notebook["calls"],
            "bad": {"op": "scale", "args": [notebook["files"]["x"], 2.5, notebook["n"]]}}
    r = _outside(sys.executable, spec, tmp)
    assert r["loaded"] == [], r["loaded"]
    assert r["file"].startswith(str(tmp / "pkg"))
    for op, got in r["ops"].items():
        assert got["eager_bitwise"], op
        assert got["compiled_bitwise"], op
        assert got["graph_bitwise"], op
        assert got["graph_breaks"] == 0 and got["graphs"] == 1, (op, got)
        assert set(got["opcheck"].values()) == {"SUCCESS"}, (op, got["opcheck"])
        assert got["picked"] == "sm_90a", op
    errors = r["errors"]
    assert "parameter 'x'" in errors["cpu"] and "cuda()" in errors["cpu"], errors
    assert errors["dtype"].startswith("TypeError") and "torch.float32" in errors["dtype"], errors
    assert "not contiguous" in errors["strided"], errors
    assert sorted(e.ops) == sorted(RULES)


def test_wheel_installs_into_a_fresh_venv_and_runs(notebook):
    from cuda_magic import export
    tmp = notebook["tmp"]
    e = export(notebook["m"], "wheel", tmp / "wheel" / "nb_wheel", kernels=RULES)
    size = os.path.getsize(e.wheel)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=_clean_env())
    python = str(venv / "bin" / "python")
    # the fresh venv sees this environment's PyTorch (a .pth line: the directory torch is in)
    # and nothing else of it; cuda-magic is not installed anywhere it looks
    import torch
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    pathlib.Path(site, "outer_torch.pth").write_text(
        os.path.dirname(os.path.dirname(torch.__file__)) + "\n")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", e.wheel],
                   check=True, env=_clean_env())
    spec = {"kind": "torch", "package": "nb_wheel", "path": None, "calls": notebook["calls"][:2]}
    r = _outside(python, spec, tmp)
    assert r["loaded"] == []
    assert r["file"].startswith(str(venv)), r["file"]
    for op, got in r["ops"].items():
        assert got["eager_bitwise"] and got["graph_bitwise"] and got["compiled_bitwise"], op
    print(f"wheel: {size} bytes")


@pytest.mark.parametrize("target", ["cubin", "ptx"])
def test_cubin_loader_runs_outside_the_notebook(notebook, target):
    from cuda_magic import export
    from cuda_magic.cell import build
    tmp = notebook["tmp"] / f"loader_{target}"
    m = notebook["m"] if target == "cubin" else \
        build(CELL, {"arch": ["sm_80", "sm_90"], "target_format": "ptx"})
    export(m, "cubin", tmp / "cub" / "nb_c")
    f, n = notebook["files"], notebook["n"]
    spec = {"kind": "cubin", "path": str(tmp / "cub" / "nb_c"), "calls": [
        {"kernel": "axpy_inplace", "grid": [cdiv(n, 256)], "block": [256],
         "args": [f["y0"], f["x"], -0.75, n], "want": f["yi"], "mutated": 0},
        {"kernel": "rowsum", "grid": [cdiv(300, 128)], "block": [128],
         "args": [f["xb"], "nan:" + f["out"], 0.3, 300, 37], "want": f["out"], "mutated": 1}]}
    r = _outside(sys.executable, spec, tmp)
    assert r["loaded"] == []
    for k, got in r["kernels"].items():     # PTX: the newest arch the GPU runs, compiled there
        assert got["bitwise"] and got["picked"] == ("sm_90a" if target == "cubin" else "sm_90"), \
            (k, got)


C_PROGRAM = r"""
#include <stdio.h>
#include <math.h>
#include "kernel.h"

int main(void)
{
    enum { N = 1000 };
    static float x[N], y[N];
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr dx, dy;
    nb_h_t m;
    int i, bad = 0;
    for (i = 0; i < N; ++i)
        x[i] = (float)i * 0.25f - 3.0f;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx))
        return 2;
    if (nb_h_load(&m) != CUDA_SUCCESS)
        return 3;
    if (cuMemAlloc(&dx, sizeof x) || cuMemAlloc(&dy, sizeof y) || cuMemcpyHtoD(dx, x, sizeof x))
        return 4;
    if (nb_h_scale(&m, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, dx, dy, 2.5f, N) != CUDA_SUCCESS)
        return 5;
    if (cuCtxSynchronize() || cuMemcpyDtoH(y, dy, sizeof y))
        return 6;
    for (i = 0; i < N; ++i)
        bad += y[i] != 2.5f * x[i];
    printf("%d of %d wrong\n", bad, N);
    nb_h_unload(&m);
    return bad != 0;
}
"""


def _cuda_include() -> str:
    for d in ("/usr/local/cuda/include", os.path.join(os.environ.get("CUDA_HOME", ""), "include")):
        if os.path.exists(os.path.join(d, "cuda.h")):
            return d
    from cuda_magic.compile.toolkit_headers import header_dirs
    return header_dirs()["cudart"]


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_c_program_over_kernel_h_launches_the_kernel(notebook, compiler):
    from cuda_magic import export
    from cuda_magic.cell import build
    tmp = notebook["tmp"] / f"c_{compiler}"
    m = notebook["m"] if compiler == "nvrtc" else \
        build(CELL, {"arch": ["sm_100a", "sm_90a"], "compiler": "nvcc"})
    export(m, "cubin", tmp / "nb_h")
    (tmp / "nb_h" / "prog.c").write_text(C_PROGRAM)
    gcc = shutil.which("gcc") or shutil.which("cc")
    libs = [d for d in ("/usr/local/cuda/lib64/stubs", "/usr/local/cuda/lib64") if os.path.isdir(d)]
    subprocess.run([gcc, "-Wall", "-Werror", "prog.c", "-o", "prog", f"-I{_cuda_include()}",
                    *[f"-L{d}" for d in libs], "-lcuda"], cwd=tmp / "nb_h", check=True)
    p = subprocess.run([str(tmp / "nb_h" / "prog")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "0 of 1000 wrong", (p.returncode, p.stdout,
                                                                         p.stderr)
