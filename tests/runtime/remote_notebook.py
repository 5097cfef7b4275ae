"""The notebook's side of tests/runtime/test_remote.py's GPU test, run as its own process with
``CUDA_VISIBLE_DEVICES=""`` (it sees no GPU): ``python3 remote_notebook.py tcp://host:port``.

In an IPython shell it points cuda-magic at the cluster (``%cuda_config --remote``), compiles
a ``%%cuda`` cell with no ``--arch`` and runs it, its bench, verify, profile and check there,
then a faulting and a hanging kernel; it prints one JSON object of what it saw."""

import json
import sys
import time
import traceback

import numpy as np

CELL = r'''
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * a;
}
extern "C" __global__ void oob(float* y, int n) {
    y[n + 1000000 * (threadIdx.x + 1)] = 1.0f;      // far past the array: an illegal address
}
extern "C" __global__ void spin(volatile int* flag) {
    while (*flag == 0) { }
}
'''


MARKED = r'''
#include <cuda_magic/timeline.h>
extern "C" __global__ void two_phase(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    CM_RANGE_BEGIN("load");
    float v = i < n ? x[i] : 0.0f;
    CM_RANGE_END("load");
    if (i < n) y[i] = v * 2.0f;
    CM_MARK("stored");
}
'''


def main(address: str) -> int:
    from IPython.core.interactiveshell import InteractiveShell
    import cuda_magic
    from cuda_magic import settings
    from cuda_magic.compile.arch import local_arch
    out: dict = {"local_arch": local_arch()}
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "cuda_magic")
    ip.run_line_magic("cuda_config", f"--remote {address}")
    ip.run_cell_magic("cuda", "--name m", CELL)
    m = ip.user_ns["m"]
    out["arch"] = m.scale.result.arch
    out["gpus"] = [(g.name, g.arch) for g in cuda_magic.remote_gpus()]
    n = 1 << 20
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    m.scale[n // 256, 256](x, y, 3.0, n)
    out["launch_ok"] = bool(np.array_equal(y, 3 * x))
    t = m.scale.bench(n // 256, 256, x, y, 2.0, n, repeat=20, nbytes=8 * n)
    out["bench"] = {"median_us": t.median_ms * 1e3, "ran_on": t.ran_on,
                    "gbps": t.gbps, "device": t.device.name if t.device else None}
    table = m.scale.bench(n // 256, 256, x, y, 2.0, n, repeat=20, nbytes=8 * n, on="all")
    out["on_all"] = cuda_magic.display.view(table).text()
    v = m.scale.verify(n // 256, 256, x, y, 2.0, n, reference=lambda x, y, a, n: a * x)
    out["verify"] = {"passed": bool(v), "ran_on": v.ran_on}
    try:
        p = m.scale.profile(n // 256, 256, x, y, 2.0, n)
        out["profile"] = {"duration_us": p.duration_us if hasattr(p, "duration_us") else None,
                          "ran_on": getattr(p, "ran_on", ""), "text": str(p)[:300]}
    except Exception as exc:
        out["profile"] = {"error": f"{type(exc).__name__}: {exc}"[:600]}
    try:
        yy = np.zeros(64, np.float32)
        c = m.oob.check(1, 32, yy, 64)
        out["check"] = {"findings": len(c.findings), "ran_on": getattr(c, "ran_on", ""),
                        "text": str(c)[:400]}
    except Exception as exc:
        out["check"] = {"error": f"{type(exc).__name__}: {exc}"[:600]}
    ip.run_cell_magic("cuda", "--name marked", MARKED)
    xs, ys = np.arange(4096, dtype=np.float32), np.zeros(4096, np.float32)
    try:
        tl = ip.user_ns["marked"].two_phase.timeline(16, 256, xs, ys, 4096)
        out["timeline"] = {"events": len(tl.events), "names": sorted({e.name for e in tl.events}),
                           "written": bool(np.array_equal(ys, 2 * xs))}
    except Exception as exc:
        out["timeline"] = {"error": f"{type(exc).__name__}: {exc}"[:600]}
    yy = np.full(64, 7, np.float32)
    try:
        m.oob[1, 32](yy, 64)
        out["fault"] = "no error"
    except Exception as exc:
        out["fault"] = f"{type(exc).__name__}: {exc}"[:600]
    out["fault_untouched"] = bool((yy == 7).all())
    m.scale[n // 256, 256](x, y, 4.0, n)
    out["after_fault_ok"] = bool(np.array_equal(y, 4 * x))
    settings.put("launch_timeout", 3.0)
    flag = np.zeros(1, np.int32)
    t0 = time.monotonic()
    try:
        m.spin[1, 32](flag)
        out["hang"] = "no error"
    except Exception as exc:
        out["hang"] = f"{type(exc).__name__}: {exc}"[:2000]
    out["hang_s"] = time.monotonic() - t0
    settings.put("launch_timeout", 60.0)
    m.scale[n // 256, 256](x, y, 5.0, n)
    out["after_hang_ok"] = bool(np.array_equal(y, 5 * x))
    cuda_magic.remote(None)
    print("RESULT " + json.dumps(out))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1]))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
