"""When a kernel hangs (runtime/hang/): polled waits, the launch time limit, Ctrl-C, the
cuda-gdb diagnosis (read from cuda-gdb's real output on the H200, tests/data/cuda_gdb/), the
watchdog; on the GPU (marked gpu), each hang in a process of its own or in the helper."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import fake_driver as fd
import cuda_magic
from cuda_magic import KernelHangError, build, settings
from cuda_magic.cell import line_config
from cuda_magic.inspect.lines import placed
from cuda_magic.runtime import driver
from cuda_magic.runtime.hang import diagnosis, gdb, waiting, watchdog

DATA = Path(__file__).parent.parent / "data" / "cuda_gdb"
CELL = (DATA / "hang_cell.cu").read_text()


@pytest.fixture(scope="module")
def module():
    return build(CELL, line_config(arch="sm_90a"))


@pytest.fixture
def fake(module):
    watchdog.stop()
    watchdog.WATCH.clear()
    f = fd.install(counting=True)
    for k in module.kernels.values():
        k._bound, k._fast = None, None       # bound by an earlier test's stub: bind again
        k._launchers.clear()
        f.register(k)
    yield f
    watchdog.stop()
    watchdog.WATCH.clear()
    fd.uninstall(f)
    settings.reset("launch_timeout")


@pytest.fixture
def no_gdb(monkeypatch, tmp_path):
    """A PATH with no cuda-gdb (and no CUDA toolkit to find one in)."""
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    for name in ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(gdb.tools, "SYSTEM", {"*": ()})
    monkeypatch.setattr(gdb.tools, "_pathfinder", lambda name: None, raising=False)


@pytest.fixture
def fake_gdb(monkeypatch, tmp_path):
    """A cuda-gdb on PATH that prints what the real one printed for the parity hang."""
    script = tmp_path / "cuda-gdb"
    script.write_text(f"#!/bin/sh\ncat '{DATA / 'parity_hang.gdb.txt'}'\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    return script


# ---- reading cuda-gdb ----------------------------------------------------------------------

def test_parse_reads_kernels_warps_and_the_code_base():
    snap = gdb.parse((DATA / "parity_hang.gdb.txt").read_text())
    assert snap.kernels == {0: {"device": 0, "grid": (8, 1, 1), "block": (256, 1, 1),
                                "name": "parity_hang()"}}
    assert len(snap.warps) == 32            # warps 4-7 of 8 blocks, one block per SM
    assert {w.first_thread[0] // 32 for w in snap.warps} == {4, 5, 6, 7}
    assert len({w.sm for w in snap.warps}) == 8 and all(w.kernel == 0 for w in snap.warps)
    assert {w.pc - snap.bases[0] for w in snap.warps} == {0x230}
    rows = {(t.block, t.first, t.last) for t in snap.threads}
    assert len(rows) == 8 and ((0, 0, 0), (128, 0, 0), (255, 0, 0)) in rows


def test_parse_ignores_the_repeats_of_kernel_numbers_that_do_not_exist():
    text = (DATA / "divergent_sync.gdb.txt").read_text()
    assert text.count("Invalid coordinates requested") == 3      # kernels 1-3: none
    snap = gdb.parse(text)
    assert len(snap.threads) == 8            # kernel 0's rows once, not four times
    assert all(t.line is None for t in snap.threads)     # built without line info: line 0
    assert snap.bases == {0: 0x7FC26B7A0FF0 - 240}


def test_argv_lists_every_sm_and_detaches():
    argv = gdb.argv("/x/cuda-gdb", 1234, 132)
    joined = " ".join(argv)
    assert "-p 1234" in joined and "-batch" in argv and argv[-1] == "detach"
    assert argv.count("-ex") == 4 + 4 * gdb.KERNEL_SLOTS + 132 + 1
    assert "info cuda warps sm 131" in argv and "info cuda warps sm 132" not in argv
    if argv[0] != "/x/cuda-gdb":             # under coreutils' timeout, killed with SIGKILL
        assert argv[1:4] == ["-s", "KILL", str(int(gdb.TIME_LIMIT))]


# ---- placing the warps ---------------------------------------------------------------------

def _diagnose(module, name, fixture):
    k = module.kernels[name]
    snap = gdb.parse((DATA / fixture).read_text())
    return diagnosis.diagnose(snap, k.name, k.symbol, None, lambda: placed(k.result, k.symbol),
                              CELL)


def test_parity_hang_is_placed_on_the_try_wait_line(module):
    d = _diagnose(module, "parity_hang", "parity_hang.gdb.txt")
    assert (d.warps, d.blocks) == (32, 8) and len(d.groups) == 1
    g = d.groups[0]
    assert g.who() == "warps 4-7 of each of the 8 blocks"
    assert "mbarrier" in g.what and g.instruction.startswith("SYNCS.PHASECHK.TRANS64.TRYWAIT")
    # the try_wait's asm statement spans lines 11-12: NVRTC 13.0 builds put it on either
    assert g.line in (11, 12) and CELL.split("\n")[g.line - 1].strip() == g.source.strip()
    assert "inspection build with -lineinfo added (the same machine code)" in d.lines_from
    assert f"warps 4-7 of each of the 8 blocks wait at line {g.line}: an mbarrier wait" in d.text()
    assert g.sms() == "124-131" and "; on SM 124-131" in d.text()     # one block per SM


def test_divergent_sync_is_placed_on_the_barrier_and_the_spin(module):
    d = _diagnose(module, "divergent_sync", "divergent_sync.gdb.txt")
    by_line = {g.line: g for g in d.groups}
    assert set(by_line) == {19, 22}
    bar, spin = by_line[19], by_line[22]
    # the barrier's warps report the PC after BAR.SYNC.DEFER_BLOCKING: placed on the barrier
    assert bar.instruction.startswith("BAR.SYNC") and "__syncthreads" in bar.what
    assert bar.who() == "warps 0-1 of each of the 4 blocks" and "__syncthreads();" in bar.source
    # the spinning warps sit at two PCs of one loop (the compare, the branch): one group
    assert spin.instruction.startswith("LDG.E.STRONG.SYS") and "spin on a memory load" in spin.what
    assert spin.who() == "warps 2-3 of each of the 4 blocks"


def test_without_the_sass_the_pcs_and_cuda_gdbs_lines_remain(module):
    k = module.kernels["divergent_sync"]
    snap = gdb.parse((DATA / "divergent_sync.gdb.txt").read_text())

    def broken():
        raise ValueError("nvdisasm is missing")
    d = diagnosis.diagnose(snap, k.name, k.symbol, None, broken, CELL)
    assert "the SASS could not be read: nvdisasm is missing" in d.lines_from
    assert {g.address for g in d.groups} == {0xF0, 0x80, 0x90}
    assert d.warps == 16


def test_warp_ranges():
    w = diagnosis.warp_ranges
    assert w([((0, 0, 0), 2, 5)]) == "warp 2 of block (0,0,0)"
    assert w([((b, 0, 0), i, 0) for b in range(3) for i in (0, 1, 3)]) == \
        "warps 0-1,3 of each of the 3 blocks"
    mixed = w([((0, 0, 0), 1, 0), ((1, 0, 0), 1, 0), ((2, 0, 0), 4, 0)])
    assert mixed == "warp 1 of 2 blocks ((0,0,0), (1,0,0)); warp 4 of block (2,0,0)"


# ---- polled waits on the stub driver ---------------------------------------------------------

def test_a_numpy_launch_polls_and_never_blocks_in_the_driver(module, fake):
    fake.busy_until = time.monotonic() + 0.3        # the kernel "runs" 0.3 s
    y = np.zeros(256, np.int32)
    start = time.monotonic()
    module.fill[(1,), (256,)](y, 7)
    assert time.monotonic() - start >= 0.29
    assert fake.blocked == 0 and fake.queries > 10
    assert driver.lost() is None


def test_a_hang_past_the_limit_is_a_kernel_hang_error(module, fake, no_gdb):
    waiting.set_launch_timeout(0.3)
    fake.busy_until = float("inf")
    freed = []
    fake.cuMemFree = lambda ptr: freed.append(ptr) or (fd.CUresult(0),)
    start = time.monotonic()
    with pytest.raises(KernelHangError) as info:
        module.parity_hang[(8,), (256,)](np.zeros(2048, np.int32), 2048)
    assert 0.3 <= time.monotonic() - start < 5
    exc = info.value
    assert (exc.kernel, exc.grid, exc.block, exc.interrupted) == \
        ("parity_hang", (8, 1, 1), (256, 1, 1), False)
    text = str(exc)
    assert text.startswith("parity_hang[grid=(8,1,1), block=(256,1,1)] still running after 0.")
    assert "launch time limit of 0.3 s" in text and "CUDA_MAGIC_LAUNCH_TIMEOUT" in text
    assert "Where its warps wait is not known: cuda-gdb was not found" in text
    assert "restart" in text and "isolate=True" in text
    assert exc.diagnosis is None and "cuda-gdb" in exc.why_not
    assert fake.blocked == 0 and freed == []     # its memory is not freed: that would wait
    assert "hung" in driver.lost()               # later launches go to the helper process


def test_ctrl_c_during_the_wait_is_a_kernel_hang_error(module, fake, no_gdb, ctrl_c):
    waiting.set_launch_timeout(60)      # a lost Ctrl-C fails the test instead of hanging it
    fake.busy_until = float("inf")
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KernelHangError) as info:
        module.parity_hang[(8,), (256,)](np.zeros(2048, np.int32), 2048)
    assert info.value.interrupted and "the wait was interrupted (Ctrl-C)" in str(info.value)


def test_ctrl_c_after_the_kernel_ended_is_an_ordinary_interrupt(fake):
    calls = []

    def query(handle):
        calls.append(1)
        if len(calls) == 3:                 # it ends just as Ctrl-C comes
            raise KeyboardInterrupt
        return (fd.CUresult(0) if len(calls) > 3 else fd.CUresult.CUDA_ERROR_NOT_READY,)
    with pytest.raises(KeyboardInterrupt):
        waiting.poll(query, 0)


def test_the_diagnosis_reaches_the_error(module, fake, fake_gdb):
    waiting.set_launch_timeout(0.2)
    fake.busy_until = float("inf")
    with pytest.raises(KernelHangError) as info:
        module.parity_hang[(8,), (256,)](np.zeros(2048, np.int32), 2048)
    exc = info.value
    assert exc.diagnosis is not None and exc.diagnosis.groups[0].line in (11, 12)
    assert "32 warps of 8 blocks resident" in str(exc)
    assert "warps 4-7 of each of the 8 blocks wait at line 1" in str(exc)
    assert ": an mbarrier wait (try_wait" in str(exc)


def test_the_limit_setting():
    try:
        waiting.set_launch_timeout(2.5)
        assert settings.launch_timeout == 2.5 and waiting.launch_timeout() == 2.5
        waiting.set_launch_timeout(None)
        assert settings.launch_timeout is None
        with pytest.raises(Exception, match="set_launch_timeout: the launch time limit"):
            waiting.set_launch_timeout("soon")
    finally:
        settings.reset("launch_timeout")
    assert settings.launch_timeout == 60.0


# ---- the watchdog ----------------------------------------------------------------------------

def test_the_watchdog_reports_a_launch_that_returned_and_hangs(module, fake, no_gdb, capsys):
    waiting.set_launch_timeout(0.3)
    fake.busy_until = 0.0
    x = fd.FakeCupy(0x1000, "int32", (2048,))
    launch = module.parity_hang[(8,), (256,)]
    launch(x, 2048)                    # the full way: it returned at once, as on CuPy arrays
    deadline = time.monotonic() + 3
    while 0 in watchdog.WATCH and time.monotonic() < deadline:
        time.sleep(0.05)               # it ended: not watched any more
    assert 0 not in watchdog.WATCH
    fake.busy_until = float("inf")
    before = len(watchdog.REPORTS)
    launch(x, 2048)                    # the launch plan's way: it is watched too
    assert type(launch).__call__ is not type(launch).__mro__[1].__call__
    assert 0 in watchdog.WATCH
    deadline = time.monotonic() + 5
    while len(watchdog.REPORTS) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(watchdog.REPORTS) == before + 1
    err = capsys.readouterr().err
    assert err.startswith("cuda-magic watchdog: KernelHangError: parity_hang[grid=(8,1,1)")
    assert "restart the Python kernel" in err
    assert "hung" in driver.lost()


def test_the_watchdog_forgets_a_launch_that_ends(module, fake):
    fake.busy_until = time.monotonic() + 0.1
    x = fd.FakeCupy(0x1000, "int32", (2048,))
    module.parity_hang[(8,), (256,)](x, 2048)
    assert 0 in watchdog.WATCH
    deadline = time.monotonic() + 3
    while 0 in watchdog.WATCH and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 0 not in watchdog.WATCH and driver.lost() is None


def test_with_no_limit_nothing_is_reported(module, fake):
    waiting.set_launch_timeout(None)
    fake.busy_until = time.monotonic() + 1.0
    x = fd.FakeCupy(0x1000, "int32", (2048,))
    before = len(watchdog.REPORTS)
    module.parity_hang[(8,), (256,)](x, 2048)
    time.sleep(0.6)
    assert len(watchdog.REPORTS) == before and driver.lost() is None


# ---- on the GPU: each hang in a process of its own (hang_child.py) or in the helper -----------

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


@pytest.mark.gpu
@pytest.mark.hangs
def test_a_numpy_launch_that_hangs_raises_and_the_session_goes_on():
    out = _run("numpy")
    assert "== KernelHangError after" in out, out
    assert "parity_hang[grid=(8,1,1), block=(256,1,1)] still running after 3." in out
    assert "32 warps of 8 blocks resident (read with cuda-gdb" in out
    assert "warps 4-7 of each of the 8 blocks wait at line 1" in out
    assert "an mbarrier wait (try_wait" in out and "SYNCS.PHASECHK.TRANS64.TRYWAIT" in out
    assert "after: True lost: True" in out      # later launches run in the helper process


@pytest.mark.gpu
@pytest.mark.hangs
def test_ctrl_c_ends_the_wait_with_where_the_warps_are():
    out = _run("ctrlc")
    assert "the wait was interrupted (Ctrl-C)" in out, out
    assert "warps 4-7 of each of the 8 blocks wait at line 1" in out
    assert "after: True lost: True" in out


@pytest.mark.gpu
@pytest.mark.hangs
def test_the_watchdog_reports_a_cupy_launch_blocked_in_cupy():
    pytest.importorskip("cupy")
    err = _until("cupy", "restart the Python kernel")
    assert "cuda-magic watchdog: KernelHangError: parity_hang[grid=(8,1,1)" in err, err
    assert "warps 4-7 of each of the 8 blocks wait at line 1" in err


@pytest.mark.gpu
@pytest.mark.hangs
def test_the_watchdog_reports_a_torch_launch_blocked_in_torch():
    pytest.importorskip("torch")
    err = _until("torch", "restart the Python kernel")
    assert "divergent_sync[grid=(4,1,1), block=(128,1,1)]" in err, err
    assert "warps 0-1 of each of the 4 blocks wait at line 19: a __syncthreads()" in err
    assert "warps 2-3 of each of the 4 blocks wait at line 22: a spin on a memory load" in err


@pytest.mark.gpu
@pytest.mark.hangs
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


@pytest.mark.gpu
@pytest.mark.hangs
@pytest.mark.parametrize("file, launch", [
    ("hang_parity.cu", lambda k, n: k.launch((n,), (256,), (np.ones(n * 512, np.float32),
                                                            np.zeros(n * 512, np.float32), 2.0),
                                             isolate=True)),
    ("hang_divergent_sync.cu", lambda k, n: k.launch((n,), (256,), (np.ones(n * 256, np.float32),
                                                                    np.zeros(n * 256, np.float32),
                                                                    n * 256), isolate=True)),
])
def test_the_corpus_hangs_are_diagnosed_to_their_lines(file, launch):
    import corpus
    case = next(c for c in corpus.CASES if c.file == file)
    assert case.hangs
    m = cuda_magic.build(case.text, {"arch": "sm_90a"})
    (k,) = m.kernels.values()
    try:
        cuda_magic.set_launch_timeout(3)
        with pytest.raises(KernelHangError) as info:
            launch(k, 4)
    finally:
        cuda_magic.settings.reset("launch_timeout")
    d = info.value.diagnosis
    assert d is not None, str(info.value)
    found = {g.line for g in d.groups}
    for who, line, what in corpus.hang_waits(case):
        assert line in found, (who, line, what, str(info.value))
    assert "helper process that ran it ends now" in str(info.value)
    assert cuda_magic.lost() is None


def test_the_watchdog_waits_quietly_while_the_driver_is_gone(module, fake, monkeypatch):
    """A launch still watched when the driver goes (here: the fake one removed, as a test's
    teardown does): no traceback from the thread, which stays (launch plans write to WATCH
    without starting one) and watches again once a driver is back."""
    died = []
    monkeypatch.setattr(threading, "excepthook", died.append)
    fake.busy_until = float("inf")
    x = fd.FakeCupy(0x1000, "int32", (2048,))
    module.parity_hang[(8,), (256,)](x, 2048)
    thread = watchdog._thread["t"]
    assert thread.is_alive() and 0 in watchdog.WATCH

    def gone():
        raise cuda_magic.NoGPUError("no driver")
    monkeypatch.setattr(driver, "api", gone)
    time.sleep(3 * watchdog.PERIOD)
    assert thread.is_alive() and died == [] and 0 in watchdog.WATCH
    monkeypatch.undo()
    fake.busy_until = 0.0               # the kernel ended: forgotten once the driver answers
    deadline = time.monotonic() + 3
    while 0 in watchdog.WATCH and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 0 not in watchdog.WATCH and watchdog._thread["t"] is thread and died == []
