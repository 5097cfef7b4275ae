"""A process that hangs a kernel on purpose, for tests/runtime/test_hang.py (GPU only):
``python3 tests/runtime/hang_child.py CASE``.  It prints what the user would see; cases that
block in CuPy's or PyTorch's own wait never end (the test kills them)."""

import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np

import cuda_magic

CELL = (Path(__file__).parent.parent / "data" / "cuda_gdb" / "hang_cell.cu").read_text()


def main(case: str) -> None:
    m = cuda_magic.build(CELL, {"arch": "sm_90a"})
    parity, divergent, fill = (m.kernels[n] for n in ("parity_hang", "divergent_sync", "fill"))
    cuda_magic.set_launch_timeout(3)
    out = np.zeros(8 * 256, np.int32)
    start = time.monotonic()
    if case == "ctrlc":
        cuda_magic.set_launch_timeout(None)
        # Python's handler, as a user's shell has it (a run started in the background inherits
        # SIGINT ignored: tests/conftest.py's ctrl_c)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    if case in ("numpy", "ctrlc"):
        try:
            parity[(8,), (256,)](out, out.size)
        except cuda_magic.KernelHangError as exc:
            print(f"== KernelHangError after {time.monotonic() - start:.1f} s\n{exc}", flush=True)
        y = np.zeros(256, np.int32)
        fill[(1,), (256,)](y, 7)             # CUDA here is lost: the helper process runs it
        print("after:", bool((y == 7).all()), "lost:", cuda_magic.lost() is not None, flush=True)
        os._exit(0)
    if case == "cupy":
        import cupy as cp
        x = cp.zeros(8 * 256, dtype=cp.int32)
        parity[(8,), (256,)](x, x.size)
        print("launched", flush=True)
        cp.cuda.Device().synchronize()
    if case == "torch":
        import torch
        x = torch.zeros(4 * 128, dtype=torch.int32, device="cuda")
        flag = torch.zeros(1, dtype=torch.int32, device="cuda")
        divergent[(4,), (128,)](x, flag)
        print("launched", flush=True)
        x.cpu()
    print("never", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
