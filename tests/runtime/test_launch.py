"""End to end on a GPU: %%cuda cells launched on NumPy, CuPy and PyTorch arrays."""

import numpy as np
import pytest

from conftest import SAXPY

pytestmark = pytest.mark.gpu

FLT_MIN = np.float32(1.1754943508222875e-38)


def test_saxpy_numpy(shell):
    shell.run_cell_magic("cuda", "", SAXPY)
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros_like(x)
    shell.user_ns["scale"][4, 256](x, y, 2.5, 1000)
    np.testing.assert_array_equal(y, x * np.float32(2.5))
    assert shell.user_ns["scale"].loaded


def test_saxpy_cupy_and_torch(shell):
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    shell.run_cell_magic("cuda", "", SAXPY)
    k = shell.user_ns["scale"]
    x = cp.arange(4096, dtype=cp.float32)
    y = cp.zeros_like(x)
    k[16, 256](x, y, 3.0, 4096)
    np.testing.assert_array_equal(cp.asnumpy(y), np.arange(4096, dtype=np.float32) * 3)
    tx = torch.arange(4096, dtype=torch.float32, device="cuda")
    ty = torch.empty_like(tx)
    k.launch(grid=16, block=256, args=(tx, ty, -1.0, 4096))
    torch.cuda.synchronize()
    assert torch.equal(ty, -tx)
    with pytest.raises(TypeError, match="parameter 'x'.*float64"):
        k[1, 1](cp.zeros(4, dtype=cp.float64), y, 1.0, 4)
    with pytest.raises(TypeError, match="parameter 'y'.*not C-contiguous"):
        k[1, 1](x, y[::2], 1.0, 4)
    with pytest.raises(TypeError, match="parameter 'x'.*CPU"):
        k[1, 1](torch.zeros(4), ty, 1.0, 4)


def test_two_kernel_headers_ftz(shell):
    cell = r'''
//| nvrtc: [--use_fast_math, --ftz=false]
extern "C" __global__ void half_keep(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x] * 0.5f; }

//| nvrtc: [--use_fast_math, --ftz=true]
extern "C" __global__ void half_ftz(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x] * 0.5f; }
'''
    m = shell.run_cell_magic("cuda", "", cell)
    assert len(m.results) == 2
    assert m.config_of("half_ftz").provenance["nvrtc"] == "kernel:half_ftz"
    x = np.array([FLT_MIN], dtype=np.float32)
    keep, flushed = np.ones(1, np.float32), np.ones(1, np.float32)
    shell.user_ns["half_keep"][1, 1](x, keep)
    shell.user_ns["half_ftz"][1, 1](x, flushed)
    assert keep[0] == np.float32(5.877471754111438e-39)
    assert flushed[0] == 0.0


def test_printf_appears_in_the_cell(shell, capsys):
    shell.run_cell_magic("cuda", "", r'''
extern "C" __global__ void hello(int n) { if (threadIdx.x < n) printf("hello from thread %d\n", threadIdx.x); }
''')
    capsys.readouterr()
    shell.user_ns["hello"][1, 4](3)
    out = capsys.readouterr().out
    assert sorted(out.splitlines()) == [f"hello from thread {i}" for i in range(3)]


FAULT_SCENARIO = r'''
import numpy as np, pytest
from IPython.core.interactiveshell import InteractiveShell
from cuda_magic.runtime import CudaError, isolate, lost
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "cuda_magic")
shell.run_cell_magic("cuda", "", """
extern "C" __global__ void bad(int* p) { volatile int* q = (int*)0x100; q[threadIdx.x] = *p; }
extern "C" __global__ void shout(int n) { printf("n=%d\\n", n); }
extern "C" __global__ void twice(const float* x, float* y, int n) { if (threadIdx.x < n) y[threadIdx.x] = 2 * x[threadIdx.x]; }
""")
bad, shout, twice = shell.user_ns["bad"], shell.user_ns["shout"], shell.user_ns["twice"]
p = np.zeros(4, dtype=np.int32)
x = np.arange(8, dtype=np.float32)
y = np.zeros_like(x)
twice[1, 8](x, y, 8)                       # CUDA works in this process
import cupy as cp
before = cp.arange(8, dtype=cp.float32)
isolate(True)                              # a fault in the helper leaves this process alone
with pytest.raises(CudaError, match="CUDA_ERROR_ILLEGAL_ADDRESS.*helper process"):
    bad[1, 32](p)
isolate(False)
assert lost() is None
twice[1, 8](before, cp.zeros(8, cp.float32), 8)
print("isolated fault: ok")
with pytest.raises(CudaError, match="CUDA_ERROR_ILLEGAL_ADDRESS") as info:
    bad[1, 32](p)                          # in this process: reported, and CUDA here is lost
assert "helper process" in str(info.value) and lost() is not None
print("fault:", str(info.value).split(".")[0])
shell.run_cell_magic("cuda", "", """
extern "C" __global__ void scale_after(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * a;
}""")                                      # a later cell compiles ...
scale_after = shell.user_ns["scale_after"]
scale_after[1, 8](x, y, 2.0, 8)            # ... and launches (in a fresh helper process)
assert (y == 2 * x).all(), y
assert scale_after.attributes["registers"] > 0
shout[1, 1](7)
with pytest.raises(CudaError, match="ILLEGAL_ADDRESS"):
    bad[1, 32](p)                          # a second fault ends only the helper
scale_after[1, 8](x, y, 3.0, 8)
assert (y == 3 * x).all(), y
with pytest.raises(TypeError, match="helper process.*NumPy"):
    scale_after[1, 8](x, before, 3.0, 8)    # device memory cannot go to the helper
print("after: ok")
'''


def test_fault_then_later_cells_compile_and_launch(tmp_path):
    """A fault ends CUDA in a process (driver 580 allows no recovery): run it in its own."""
    import os
    import subprocess
    import sys
    pytest.importorskip("cupy")
    script = tmp_path / "fault.py"
    script.write_text(FAULT_SCENARIO)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "isolated fault: ok"
    assert lines[1].startswith("fault: ") and "CUDA_ERROR_ILLEGAL_ADDRESS" in lines[1]
    assert lines[2:] == ["n=7", "after: ok"]


def test_template_instantiation(shell):
    shell.run_cell_magic("cuda", '--instantiate "axpy<float>" --instantiate "axpy<double>" --name m', r'''
template <typename T>
__global__ void axpy(T a, const T* x, T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
''')
    for dt, name in ((np.float32, "axpy_float"), (np.float64, "axpy_double")):
        x = np.arange(100, dtype=dt)
        y = np.ones(100, dtype=dt)
        shell.user_ns[name][1, 128](2, x, y, 100)
        np.testing.assert_array_equal(y, 1 + 2 * x)
    assert shell.user_ns["m"]["axpy<double>"] is shell.user_ns["axpy_double"]


def test_attributes_and_bench(shell):
    m = shell.run_cell_magic("cuda", "", SAXPY)
    k = shell.user_ns["scale"]
    attrs = k.attributes
    assert attrs["registers"] == m.result.resources["scale"].registers
    assert attrs["max_threads_per_block"] >= 256
    x = np.ones(1 << 20, dtype=np.float32)
    b = k.bench(4096, 256, x, np.empty_like(x), 2.0, 1 << 20, repeat=20, nbytes=8 << 20)
    assert len(b.times_ms) == 20 and 0 < b.min_ms <= b.median_ms < 10
    assert b.gbps > 0 and "GB/s" in repr(b)


def test_every_format_and_compiler_launches(shell):
    x = np.arange(64, dtype=np.float32)
    for line in ("--target-format ptx", "--compiler nvcc", "--compiler nvcc --target-format cubin",
                 '--compiler nvcc --ptxas ""'):
        name = "k_" + str(abs(hash(line)))
        src = SAXPY.replace('extern "C" ', "").replace("scale", name)  # C++ names: mangled
        shell.run_cell_magic("cuda", line, src)
        y = np.zeros_like(x)
        shell.user_ns[name][1, 64](x, y, 0.5, 64)
        np.testing.assert_array_equal(y, x * 0.5, err_msg=line)


def test_scalar_types_struct_and_dynamic_shared(shell):
    shell.run_cell_magic("cuda", "", r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
struct Affine { float a; double b; int c; };
extern "C" __global__ void mix(double* out, __half h, __nv_bfloat16 b, unsigned long long u, char c,
                               bool flag, Affine s, size_t z) {
    out[0] = __half2float(h); out[1] = __bfloat162float(b); out[2] = (double)u; out[3] = c;
    out[4] = flag; out[5] = s.a; out[6] = s.b; out[7] = s.c; out[8] = (double)z;
}
extern "C" __global__ void big_shared(int* out) {
    extern __shared__ int buf[];
    buf[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = buf[(threadIdx.x + 1) % blockDim.x];
}
''')
    out = np.zeros(9)
    s = np.zeros((), dtype=[("a", "<f4"), ("pad", "V4"), ("b", "<f8"), ("c", "<i4"), ("pad2", "V4")])
    s["a"], s["b"], s["c"] = 1.5, -2.25, 7
    s = s[()]  # a structured scalar
    shell.user_ns["mix"][1, 1](out, 0.5, 3.0, 2**40, 65, True, s, 2**33)
    np.testing.assert_array_equal(out, [0.5, 3.0, 2.0**40, 65, 1, 1.5, -2.25, 7, 2.0**33])
    o = np.zeros(256, dtype=np.int32)
    shell.user_ns["big_shared"][1, 256, 100 * 1024](o)   # > 48 KiB: the attribute is raised for us
    np.testing.assert_array_equal(o, (np.arange(256) + 1) % 256)


def test_bad_arguments_name_the_parameter(shell):
    shell.run_cell_magic("cuda", "", SAXPY)
    k = shell.user_ns["scale"]
    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match=r"scale\(\) takes 4 arguments"):
        k[1, 4](x, x, 1.0)
    with pytest.raises(TypeError, match="parameter 'x'.*pointer"):
        k[1, 4](1.5, x, 1.0, 4)
    with pytest.raises(OverflowError, match="parameter 'n'.*out of range for int"):
        k[1, 4](x, x, 1.0, 2**31)
    with pytest.raises(TypeError, match="parameter 'n'.*expected an integer"):
        k[1, 4](x, x, 1.0, 4.0)
    with pytest.raises(TypeError, match="parameter 'y'.*not C-contiguous"):
        k[1, 4](x, np.zeros((4, 2), np.float32)[:, 0], 1.0, 4)
    k[1, 4](x, x, 1.0, 4)  # nothing was left half-staged


def test_ptx_the_driver_refuses_goes_through_nvjitlink(shell, monkeypatch):
    """PTX newer than the driver (NVRTC 13.5 PTX on a 13.0 driver) is linked to cubin by nvJitLink."""
    from cuda_magic.runtime import driver
    m = shell.run_cell_magic("cuda", "--target-format ptx --compile-only", SAXPY.replace("scale", "scale_ptx"))
    real = driver.api().cuLibraryLoadData
    refused = []

    def refuse_ptx(image, *rest):            # this driver accepts its own NVRTC's PTX: act as an older one
        if image.lstrip().startswith(b"//") and not refused:
            refused.append(image)
            return driver.api().CUresult.CUDA_ERROR_UNSUPPORTED_PTX_VERSION, None
        return real(image, *rest)
    monkeypatch.setattr(driver.api(), "cuLibraryLoadData", refuse_ptx)
    x = np.arange(32, dtype=np.float32)
    y = np.zeros_like(x)
    m["scale_ptx"][1, 32](x, y, 4.0, 32)
    np.testing.assert_array_equal(y, 4 * x)
    lib = driver.load(m.result.key, m.result.binary, "ptx", m.result.arch)
    assert refused and lib.image[:4] == b"\x7fELF" and "compiled to cubin with nvJitLink" in lib.jit_note


def test_ptx_too_new_for_driver_and_nvjitlink_names_both(shell):
    from cuda_magic.runtime import CudaError
    m = shell.run_cell_magic("cuda", "--target-format ptx --compile-only", SAXPY)
    import re
    from cuda_magic.runtime import driver
    ptx = re.sub(rb"\.version \d+\.\d+", b".version 99.9", m.result.binary)
    with pytest.raises(CudaError, match=r"PTX \(ISA 99\.9\) is newer than the CUDA \d+\.\d+ driver.*"
                                        r"nvJitLink could not"):
        driver.load("too-new", ptx, "ptx", m.result.arch)


def test_streams_from_cupy_and_torch(shell):
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    shell.run_cell_magic("cuda", "", SAXPY)
    k = shell.user_ns["scale"]
    x = cp.arange(1 << 16, dtype=cp.float32)
    y = cp.zeros_like(x)
    s = cp.cuda.Stream(non_blocking=True)
    cp.cuda.get_current_stream().synchronize()   # x, y are written there; s does not wait for it
    k[256, 256, 0, s](x, y, 2.0, 1 << 16)
    s.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(y), 2 * np.arange(1 << 16, dtype=np.float32))
    ts = torch.cuda.Stream()
    tx = torch.ones(1024, device="cuda")
    ty = torch.zeros_like(tx)
    ts.wait_stream(torch.cuda.current_stream())    # torch's streams do not wait for the default one
    k.launch(grid=4, block=256, args=(tx, ty, 5.0, 1024), stream=ts)
    ts.synchronize()
    assert torch.equal(ty, 5 * tx)
    with pytest.raises(TypeError, match="stream must be"):
        k[1, 1, 0, "default"](x, y, 1.0, 1)


def test_the_view_shows_the_driver_figures_once_loaded(shell):
    from cuda_magic import view
    m = shell.run_cell_magic("cuda", "", SAXPY)     # loaded at once when there is a GPU
    attrs = m.scale.attributes
    w = view(m).widget()
    resources = w.tab.children[1].children[0].value
    assert "driver: max threads" in resources and "not loaded" not in w.children[0].value
    assert f">{attrs['max_threads_per_block']}<" in resources and f">{attrs['binary_version']}<" in resources
    text = shell.display_formatter.format(m)[0]["text/plain"]
    assert "max threads" in text and "not loaded" not in text
    # occupancy: the driver's blocks per SM beside the computed ones, and they agree
    assert "\n    driver " in text and "(!)" not in text
    assert "(differs)" not in resources and ">driver<" in resources


ASSERT_SCENARIO = r'''
import sys
import numpy as np, pytest
from IPython.core.interactiveshell import InteractiveShell
from cuda_magic.runtime import CudaError, isolate
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "cuda_magic")
isolate(sys.argv[2] == "helper")
shell.run_cell_magic("cuda", f"--compiler {sys.argv[1]}", """#include <cstdio>
#include <cassert>
extern "C" __global__ void checked(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    assert(x[i] >= 0.0f);
    if (i == 0) printf("checked %d values\\n", n);
    y[i] = sqrtf(x[i]);
}
""")
checked = shell.user_ns["checked"]
x = np.arange(8, dtype=np.float32); y = np.zeros_like(x)
checked[1, 8](x, y, 8)
assert np.allclose(y, np.sqrt(x))
x[5] = -1
with pytest.raises(CudaError) as info:
    checked[1, 8](x, y, 8)
print("error:", str(info.value).replace("\n", " | "))
x[5] = 4
checked[1, 8](x, y, 8)                   # the helper process takes over
assert y[5] == 2
print("after: ok")
'''


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("where", ["here", "helper"])
def test_printf_and_a_failing_device_assert(tmp_path, compiler, where):
    """<cstdio>/<cassert> under both compilers; a failed assert names its condition and cell line."""
    import os
    import subprocess
    import sys
    script = tmp_path / "assert.py"
    script.write_text(ASSERT_SCENARIO)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, str(script), compiler, where], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "checked 8 values", lines
    error = next(line for line in lines if line.startswith("error: "))
    assert "CUDA_ERROR_ASSERT" in error
    assert "device assert failed at cell line 6: `x[i] >= 0.0f` in " in error, error
    assert "thread (5,0,0)" in error and "6 |     assert(x[i] >= 0.0f);" in error
    assert lines[-1] == "after: ok"


def _fresh_scale(shell):
    """A Kernel that has never launched (each %%cuda run binds new Kernel objects)."""
    shell.run_cell_magic("cuda", "", SAXPY)
    return shell.user_ns["scale"]


def test_cached_launches_raise_what_the_first_launch_raises(shell):
    """Repeat launches take the plan (Packer.fast); every check still raises, the same way."""
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    makers = {"cupy": lambda a: cp.asarray(a), "torch": lambda a: torch.from_numpy(a).cuda()}
    for name, make in makers.items():
        x, y = make(np.arange(64, dtype=np.float32)), make(np.zeros(64, np.float32))
        f64, wide = make(np.zeros(64)), make(np.zeros(128, np.float32))
        freed = make(np.ones(64, np.float32))
        if name == "torch":
            freed.untyped_storage().resize_(0)
        else:
            freed.data.mem.free()
        cases = {
            "dtype": lambda k: k[1, 64](f64, y, 1.0, 64),
            "contiguity": lambda k: k[1, 64](x, wide[::2], 1.0, 64),
            "count": lambda k: k[1, 64](x, y, 1.0),
            "range": lambda k: k[1, 64](x, y, 1.0, 2**31),
            "freed": lambda k: k[1, 64](freed, y, 1.0, 64),
        }
        for case, bad in cases.items():
            first = _fresh_scale(shell)
            with pytest.raises((TypeError, OverflowError)) as one:
                bad(first)
            warm = _fresh_scale(shell)
            for _ in range(100):
                warm[1, 64](x, y, 2.0, 64)
            assert warm._bound[2].full_checks == 2
            with pytest.raises((TypeError, OverflowError)) as hundredth:
                bad(warm)
            assert (type(one.value), str(one.value)) == (type(hundredth.value), str(hundredth.value))
            if case == "freed":
                assert "memory was freed" in str(one.value), one.value
            warm[1, 64](x, y, 3.0, 64)
            torch.cuda.synchronize()
            np.testing.assert_array_equal(cp.asnumpy(cp.asarray(y)), 3 * np.arange(64, dtype=np.float32),
                                          err_msg=f"{name} {case}")
    hx, hy = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    warm[1, 64](hx, hy, 4.0, 64)                   # NumPy arrays: still copied there and back
    np.testing.assert_array_equal(hy, 4 * hx)


def test_a_launch_from_a_new_thread(shell):
    """The plan launches by CUfunction; a thread with no current context goes the full way once."""
    import threading
    cp = pytest.importorskip("cupy")
    k = _fresh_scale(shell)
    x, y = cp.arange(64, dtype=cp.float32), cp.zeros(64, cp.float32)
    k[1, 64](x, y, 1.0, 64)
    errors = []

    def run():
        try:
            for a in (2.0, 3.0):
                k[1, 64](x, y, a, 64)
        except Exception as exc:           # pragma: no cover - reported below
            errors.append(exc)
    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert not errors, errors
    cp.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(cp.asnumpy(y), 3 * np.arange(64, dtype=np.float32))


def test_the_plan_calls_cupys_launch_where_cupy_is_loaded(shell, monkeypatch):
    """With CuPy loaded the plan's last call is CuPy's launchKernel (driver.int_launch), on
    any array and stream; settings.plan_launch = "bindings" keeps cuda.bindings' cuLaunchKernel.  A
    launch the driver refuses raises the same CudaError on a warm launcher as on a first."""
    from cuda_magic import settings
    from cuda_magic.runtime import CudaError, lost
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    x, y = cp.arange(1024, dtype=cp.float32), cp.zeros(1024, cp.float32)
    tx = torch.arange(1024, dtype=torch.float32, device="cuda")
    ty = torch.zeros_like(tx)
    s = cp.cuda.Stream(non_blocking=True)
    for mode, via in (("auto", "cupy"), ("bindings", "bindings")):
        monkeypatch.setattr(settings, "plan_launch", mode)
        k = _fresh_scale(shell)
        for a in (1.0, 2.0, 3.0):
            k[4, 256](x, y, a, 1024)
            k[4, 256](tx, ty, -a, 1024)
        assert k._bound[2].via == via
        cp.cuda.runtime.deviceSynchronize()
        assert bool((y == 3 * x).all()) and torch.equal(ty, -3 * tx)
        for a in (4.0, 5.0):
            k[4, 256, 0, s](x, y, a, 1024)
        s.synchronize()
        assert bool((y == 5 * x).all())
        with pytest.raises(CudaError) as warm:
            k[1, 2048](x, y, 1.0, 1024)             # more threads than a block can have
        with pytest.raises(CudaError) as first:
            _fresh_scale(shell)[1, 2048](x, y, 1.0, 1024)
        assert str(warm.value) == str(first.value) and "block=(2048, 1, 1)" in str(warm.value)
        assert lost() is None
        k[4, 256](x, y, 6.0, 1024)                  # and it still launches
        cp.cuda.runtime.deviceSynchronize()
        assert bool((y == 6 * x).all())
