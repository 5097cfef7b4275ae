"""A marked kernel (``<cuda_magic/timeline.h>``, marks compiled out) everywhere else cuda-magic
takes a kernel, on the CPU: bench and verify through the stub driver, compare and tune compile
only, export (cubin and torch) written and imported; none of them sees the timeline's state or
probe kernel."""

from __future__ import annotations

import ctypes
import importlib
import json
import struct
import subprocess
import sys

import numpy as np
import pytest

import cuda_magic
import fake_driver as fd  # benchmarks/ (on sys.path: conftest.py)
from cuda_magic.cell import build, line_config
from cuda_magic.runtime import Kernel

from corpus import KERNELS

PIPELINE = (KERNELS / "timeline_pipeline.cu").read_text()
ARCH = "sm_90a"


@pytest.fixture(scope="module")
def module():
    return build(PIPELINE, line_config(arch=ARCH))


def test_the_ordinary_build_holds_the_cells_kernel_only(module):
    r = module.staged_scale.result
    assert r.kernels == ["staged_scale"] and "-DCUDA_MAGIC_TIMELINE" not in r.argv
    assert "cuda_magic/timeline.h" in r.supplied_headers


def _scale_on_host(symbol, dims, params):
    """staged_scale(x, y, a, tiles_per_block) run on the stub's host memory: y = a * x."""
    slot = [ctypes.c_void_p.from_address(params + 8 * i).value for i in range(4)]
    px, py = (ctypes.c_uint64.from_address(s).value for s in slot[:2])
    a = struct.unpack("f", ctypes.string_at(slot[2], 4))[0]
    n = dims[0] * ctypes.c_int32.from_address(slot[3]).value * 1024
    x = np.frombuffer((ctypes.c_char * (4 * n)).from_address(px), np.float32)
    y = np.frombuffer((ctypes.c_char * (4 * n)).from_address(py), np.float32)
    y[:] = np.float32(a) * x
    return 0


def test_bench_and_verify_take_a_marked_kernel(module):
    fake = fd.install_timing()
    fake.on_launch = _scale_on_host
    try:
        proto = module.staged_scale
        k = Kernel(proto.name, proto.params, proto.result, proto.symbol, False)
        x = np.linspace(-2, 2, 4 * 4 * 1024, dtype=np.float32)
        timing = k.bench[4, 128](x, np.zeros_like(x), np.float32(0.5), 4, repeat=5, warmup=1)
        assert timing.median_ms > 0 and len(timing.samples_ms) == 5 and fake.launches >= 6
        v = k.verify[4, 128](x, np.zeros_like(x), np.float32(0.5), 4,
                             reference=lambda x, y, a, t: np.float32(a) * x, runs=2)
        assert v.passed, v
        assert set(fake.kernels.values()) == {"staged_scale"}, "no timeline build was loaded"
    finally:
        fd.uninstall(fake)


def test_compare_compiles_a_marked_cell():
    c = cuda_magic.compare(PIPELINE, arch=ARCH)
    results = [c.result(name, "staged_scale") for name in c.modules]
    assert len(results) == 2 and all(r.kernels == ["staged_scale"] for r in results)
    assert all("cuda_magic/timeline.h" in r.supplied_headers for r in results)


def test_tune_compiles_a_marked_cell():
    t = cuda_magic.tune(PIPELINE.replace("constexpr int STAGES = 2,", "constexpr int STAGES = S,"),
                        "S=[2,3]", "staged_scale[4, 128](x, y, 0.5, 4)", arch=ARCH,
                        compile_only=True)
    assert len(t.candidates) == 2 and all(c.error is None for c in t.candidates)


def test_a_cubin_export_of_a_marked_cell_is_written_and_imports(module, tmp_path):
    e = cuda_magic.export(module, "cubin", tmp_path / "marked")
    manifest = json.loads((tmp_path / "marked" / "manifest.json").read_text())
    assert [list(b["kernels"]) for b in manifest["builds"]] == [["staged_scale"]]
    run = subprocess.run([sys.executable, "-I", "-c",
                          "import sys; sys.path.insert(0, sys.argv[1]); import kernel; "
                          "print(kernel.staged_scale.name)", e.path],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "staged_scale", run.stderr[-2000:]


def test_a_torch_export_of_a_marked_cell_is_written_and_imports(module, tmp_path):
    torch = pytest.importorskip("torch")
    e = cuda_magic.export(module, "torch", tmp_path / "cmx_marked_ops", grid="x.numel() // 4096",
                          block=128)
    sys.path.insert(0, str(tmp_path))
    try:
        pkg = importlib.import_module("cmx_marked_ops")
        assert list(e.ops) == ["staged_scale"] and pkg.staged_scale.__doc__
        assert str(torch.ops.cmx_marked_ops.staged_scale.default._schema) == e.ops["staged_scale"]
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("cmx_marked_ops")]:
            del sys.modules[name]
