"""Record tests/data/cupti/kernel_records.json on a GPU machine: 5 launches of ``spin`` and 1 of
``idle`` inside a cupti Recorder (with a cuMemsetD8, which must not show up), compiled with
NVRTC and launched through the driver API.  Needs cupti-python and cuda-python.

    python3 tests/data/cupti/record_sample.py [out.json]
"""

import json
import sys
from pathlib import Path

import numpy as np
from cuda.bindings import driver as cu, nvrtc

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))            # the repository root: cuda_magic
from cuda_magic.runtime.measure import cupti as cm  # noqa: E402

SOURCE = r'''
extern "C" __global__ void spin(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = y[i];
    #pragma unroll 1
    for (int k = 0; k < 400; ++k) a = fmaf(a, 1.0001f, 0.5f);
    y[i] = a;
}
extern "C" __global__ void idle(float* y) {}
'''
N, BLOCK = 1 << 16, 256


def ok(result, what):
    err, *rest = result
    if int(err) != 0:
        raise SystemExit(f"{what} failed: {err}")
    return rest[0] if len(rest) == 1 else rest


def compile_cubin(major, minor) -> bytes:
    prog = ok(nvrtc.nvrtcCreateProgram(SOURCE.encode(), b"spin.cu", 0, [], []), "nvrtcCreateProgram")
    opts = [f"--gpu-architecture=sm_{major}{minor}".encode()]
    err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if int(err) != 0:
        size = ok(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise SystemExit(f"nvrtcCompileProgram failed: {log.decode(errors='replace')}")
    size = ok(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
    cubin = b" " * size
    ok(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
    return cubin


def main(out: Path) -> None:
    why = cm.missing()
    if why:
        raise SystemExit(why)
    ok(cu.cuInit(0), "cuInit")
    dev = ok(cu.cuDeviceGet(0), "cuDeviceGet")
    ctx = ok(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    attr = cu.CUdevice_attribute
    major = ok(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cc")
    minor = ok(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cc")
    name = ok(cu.cuDeviceGetName(64, dev), "cuDeviceGetName").split(b"\0")[0].decode()
    driver = ok(cu.cuDriverGetVersion(), "cuDriverGetVersion")
    cubin = compile_cubin(major, minor)
    module = ok(cu.cuModuleLoadData(cubin), "cuModuleLoadData")
    spin = ok(cu.cuModuleGetFunction(module, b"spin"), "cuModuleGetFunction")
    idle = ok(cu.cuModuleGetFunction(module, b"idle"), "cuModuleGetFunction")
    y = ok(cu.cuMemAlloc(4 * N), "cuMemAlloc")
    y_arg = np.array([int(y)], dtype=np.uint64)
    n_arg = np.array([N], dtype=np.int32)
    spin_args = np.array([y_arg.ctypes.data, n_arg.ctypes.data], dtype=np.uint64)
    idle_args = np.array([y_arg.ctypes.data], dtype=np.uint64)
    grid = (N + BLOCK - 1) // BLOCK
    ok(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    with cm.Recorder(keep_raw=True) as rec:
        ok(cu.cuMemsetD8(y, 0, 4 * N), "cuMemsetD8")
        for _ in range(5):
            ok(cu.cuLaunchKernel(spin, grid, 1, 1, BLOCK, 1, 1, 0, 0, spin_args.ctypes.data, 0),
               "cuLaunchKernel")
        ok(cu.cuLaunchKernel(idle, 1, 1, 1, 32, 1, 1, 0, 0, idle_args.ctypes.data, 0),
           "cuLaunchKernel")
        ok(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    ok(cu.cuMemFree(y), "cuMemFree")
    from importlib.metadata import version
    provenance = (f"recorded by tests/data/cupti/record_sample.py on {name} (sm_{major}{minor}), "
                  f"driver {driver // 1000}.{driver % 1000 // 10}, "
                  f"cupti-python {version('cupti-python')}")
    out.write_text(json.dumps({"_provenance": provenance, "records": rec.raw}, indent=1) + "\n")
    spins = cm.durations_ms(rec.records, "spin")
    print(f"{out}: {len(rec.raw)} records; spin: {', '.join(f'{ms * 1e3:.2f} us' for ms in spins)}")
    if len(spins) != 5 or len(rec.records) != 6:
        raise SystemExit(f"expected 5 spin records and 6 in all: {rec.records}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "kernel_records.json")
