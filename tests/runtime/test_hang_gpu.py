"""Hangs on the GPU: each hang runs in a process of its own (hang_child.py) or in the helper
process (isolate), so the test process survives.  The stub-driver half is test_hang.py."""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import cuda_magic
from cuda_magic import KernelHangError

pytestmark = pytest.mark.gpu
HERE = Path(__file__).parent
CHILD = [sys.executable, str(HERE / "hang_child.py")]
ROOT = HERE.parent.parent


def _env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH")) if p)}


def _run(case: str) -> str:
    return subprocess.run(CHILD + [case], capture_output=True, text=True, timeout=120,
                          env=_env()).stdout


def _until(case: str, text: str, limit: float = 90.0) -> str:
    """Start the child, read its stderr until ``text`` shows (the watchdog's report), kill it."""
    import threading
    proc = subprocess.Popen(CHILD + [case], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env())
    seen: list = []
    reader = threading.Thread(target=lambda: seen.extend(iter(proc.stderr.readline, "")),
                              daemon=True)
    reader.start()
    deadline = time.monotonic() + limit
    try:
        while time.monotonic() < deadline and text not in "".join(seen):
            time.sleep(0.2)
        time.sleep(1.0)
        alive = proc.poll() is None            # still blocked in the library's own wait
    finally:
        proc.kill()
        proc.wait()
    assert alive, "".join(seen)
    return "".join(seen)


def test_a_numpy_launch_that_hangs_raises_and_the_session_goes_on():
    out = _run("numpy")
    assert "== KernelHangError after" in out, out
    assert "parity_hang[grid=(8,1,1), block=(256,1,1)] still running after 3." in out
    assert "32 warps of 8 blocks resident (read with cuda-gdb" in out
    assert "warps 4-7 of each of the 8 blocks wait at line 1" in out
    assert "an mbarrier wait (try_wait" in out and "SYNCS.PHASECHK.TRANS64.TRYWAIT" in out
    assert "after: True lost: True" in out      # later launches run in the helper process


def test_ctrl_c_ends_the_wait_with_where_the_warps_are():
    out = _run("ctrlc")
    assert "the wait was interrupted (Ctrl-C)" in out, out
    assert "warps 4-7 of each of the 8 blocks wait at line 1" in out
    assert "after: True lost: True" in out


def test_the_watchdog_reports_a_cupy_launch_blocked_in_cupy():
    pytest.importorskip("cupy")
    err = _until("cupy", "restart the Python kernel")
    assert "cuda-magic watchdog: KernelHangError: parity_hang[grid=(8,1,1)" in err, err
    assert "warps 4-7 of each of the 8 blocks wait at line 1" in err


def test_the_watchdog_reports_a_torch_launch_blocked_in_torch():
    pytest.importorskip("torch")
    err = _until("torch", "restart the Python kernel")
    assert "divergent_sync[grid=(4,1,1), block=(128,1,1)]" in err, err
    assert "warps 0-1 of each of the 4 blocks wait at line 19: a __syncthreads()" in err
    assert "warps 2-3 of each of the 4 blocks wait at line 22: a spin on a memory load" in err


def test_an_isolated_hang_ends_only_the_helper():
    m = cuda_magic.build((ROOT / "tests/data/cuda_gdb/hang_cell.cu").read_text(),
                         {"arch": "sm_90a"})
    try:
        cuda_magic.set_launch_timeout(3)
        with pytest.raises(KernelHangError) as info:
            m.kernels["divergent_sync"].launch((4,), (128,), (np.zeros(512, np.int32),
                                                             np.zeros(1, np.int32)), isolate=True)
        text = str(info.value)
        assert "warps 0-1 of each of the 4 blocks wait at line 19" in text, text
        assert "warps 2-3 of each of the 4 blocks wait at line 22" in text
        assert "helper process that ran it ends now" in text
        y = np.zeros(256, np.int32)
        m.kernels["fill"][(1,), (256,)](y, 7)            # this process's CUDA is untouched
        assert (y == 7).all() and cuda_magic.lost() is None
    finally:
        cuda_magic.settings.reset("launch_timeout")
