"""Remote GPUs on the CPU: a ``distributed.LocalCluster`` with process workers on this machine,
whose helper processes launch on the stub driver (benchmarks/remote_site/sitecustomize.py:
``scale`` computes y = a * x; a = -1 faults, -2 hangs, -3 runs for 30 s).

Arguments go in and outputs come back in place; the binary crosses once per worker; a fault,
a hang, a killed worker and Ctrl-C leave the notebook working and the caller's arrays
untouched; a build the remote GPU cannot load is refused before anything is sent; with no
arch a compile targets the remote GPU; ``on="all"`` is a table of one row per GPU."""

from __future__ import annotations

import os
import pathlib
import signal
import threading
import time

import numpy as np
import pytest

import cuda_magic
import fake_driver as fd  # benchmarks/ (on sys.path: conftest.py)
from cuda_magic import settings
from cuda_magic.cell import build, line_config
from cuda_magic.compile.arch import detect_arch
from cuda_magic.errors import (ArgumentError, ConfigError, CudaError, KernelHangError,
                               RemoteError)
from cuda_magic.runtime import driver
from cuda_magic.runtime.remote import Across, session as remote_session

distributed = pytest.importorskip("distributed")

HERE = pathlib.Path(__file__).resolve().parents[1]
SITE = HERE.parent / "benchmarks" / "remote_site"
BENCHMARKS = HERE.parent / "benchmarks"


@pytest.fixture(scope="module")
def cluster():
    """One process worker whose processes (and helpers) load the stub driver."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(SITE), str(BENCHMARKS), str(HERE.parent), saved) if p)
    try:
        c = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                     dashboard_address=":0", worker_dashboard_address=None)
        client = distributed.Client(c, set_as_default=False)
        yield c, client
        client.close()
        c.close()
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


@pytest.fixture
def far(cluster):
    _, client = cluster
    session = cuda_magic.remote(client)
    yield session
    cuda_magic.remote(None)


@pytest.fixture(scope="module")
def module():
    return build(fd.SCALE, line_config(arch="sm_90a"))


def _xy(n=64):
    return np.arange(n, dtype=np.float32), np.zeros(n, np.float32)


def test_a_launch_runs_on_the_worker_and_writes_back_in_place(far, module):
    x, y = _xy()
    module.scale[1, 64](x, y, 3.0, 64)
    assert y.tolist() == (3 * x).tolist()
    module.scale.launch(1, 64, (x, y, 2.0, 64))
    assert y.tolist() == (2 * x).tolist()
    g, = cuda_magic.remote_gpus()
    assert g.name == "Fake GPU (stub driver)" and g.arch == "sm_90a" and g.driver == "13.0"
    assert g.worker.startswith("tcp://127.0.0.1:") and g.memory == 141 << 30


def test_the_binary_crosses_once_per_worker(far, module):
    x, y = _xy()
    before = far.sent_bytes
    for _ in range(3):
        module.scale[1, 64](x, y, 1.0, 64)
    sent = far.sent_bytes - before
    assert sent in (0, len(bytes(module.scale.result.binary)))     # 0: an earlier test sent it
    assert far.sent_bytes == len(bytes(module.scale.result.binary))
    held = far.host(far.gpu().worker).held().result()
    assert held == [module.scale.result.key]


def test_two_kernels_of_one_binary_each_run_after_it_was_sent_once(far):
    m = build(fd.SCALE + fd.SCALE.replace("void scale(", "void scale_again("),
              line_config(arch="sm_90a"))
    x, y = _xy()
    before = far.sent_bytes
    m.scale[1, 64](x, y, 2.0, 64)
    m.scale_again[1, 64](x, y, 3.0, 64)          # the binary is there: only its name is new
    assert y.tolist() == (3 * x).tolist()
    assert far.sent_bytes - before == len(bytes(m.scale.result.binary))


def test_device_arrays_are_refused_with_the_reason(far, module):
    x, y = _xy()
    with pytest.raises(ArgumentError, match=r"parameter 'x': kernels now run on the remote GPU "
                                            r"Fake GPU .*which takes NumPy arrays and numbers, "
                                            r"not ndarray \(it lives on this machine's GPU\)"):
        module.scale[1, 64](fd.FakeCupy(0x1000), y, 1.0, 64)


def test_a_fault_on_the_worker_names_it_and_the_next_launch_works(far, module):
    x, y = _xy()
    y[:] = 7
    with pytest.raises(CudaError, match=r"ILLEGAL_ADDRESS.*\[on Fake GPU \(stub driver\) "
                                        r"\(GPU 0 of worker tcp://.*\), whose helper ended"):
        module.scale[1, 64](x, y, -1.0, 64)
    assert (y == 7).all()                 # nothing written
    assert driver.lost() is None          # the notebook's CUDA is untouched
    module.scale[1, 64](x, y, 4.0, 64)
    assert y.tolist() == (4 * x).tolist()


def test_a_hang_on_the_worker_is_a_hang_error_and_the_next_launch_works(far, module):
    x, y = _xy()
    with settings.override(launch_timeout=1.0):
        t0 = time.monotonic()
        with pytest.raises(KernelHangError, match=r"(?s)scale\[grid=\(1,1,1\), block=\(64,1,1\)\] "
                                                  r"still running after .* launch time limit of "
                                                  r"1 s.*Where its warps wait is not known: .*\(on "
                                                  r"the worker\).*\[on Fake GPU .*worker "
                                                  r"tcp://") as info:
            module.scale[1, 64](x, y, -2.0, 64)
        assert time.monotonic() - t0 < 30
    assert info.value.kernel == "scale" and info.value.block == (64, 1, 1)
    module.scale[1, 64](x, y, 5.0, 64)
    assert y.tolist() == (5 * x).tolist()


def test_ctrl_c_stops_the_remote_helper(far, module, ctrl_c):
    x, y = _xy()
    y[:] = 9
    main = threading.main_thread().ident
    timer = threading.Timer(1.0, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        module.scale[1, 64](x, y, -3.0, 64)       # 30 s on the worker
    assert (y == 9).all()
    module.scale[1, 64](x, y, 6.0, 64)            # not queued behind the 30 s launch
    assert time.monotonic() - t0 < 20
    assert y.tolist() == (6 * x).tolist()


def test_a_build_the_remote_gpu_cannot_load_is_refused_before_sending(far):
    m = build(fd.SCALE, line_config(arch="sm_100a"))
    x, y = _xy()
    before = far.sent_bytes
    with pytest.raises(CudaError, match=r"built for sm_100a, and Fake GPU .* is sm_90a: it "
                                        r"cannot load that build"):
        m.scale[1, 64](x, y, 1.0, 64)
    assert far.sent_bytes == before


def test_an_arch_list_runs_the_build_that_fits_the_remote_gpu(cluster):
    m = build(fd.SCALE, line_config(arch="sm_80,sm_90a"))     # no GPU here: bound to sm_80
    assert m.scale.result.arch == "sm_80"
    _, client = cluster
    far = cuda_magic.remote(client)
    try:
        x, y = _xy()
        m.scale[1, 64](x, y, 2.0, 64)
        assert y.tolist() == (2 * x).tolist()
        sm90 = m.kernel_for("scale", "sm_90a").result.key
        assert sm90 in far.host(far.gpu().worker).held().result()
        assert m.scale.result.key not in far.host(far.gpu().worker).held().result()
    finally:
        cuda_magic.remote(None)


def test_with_no_arch_a_compile_targets_the_remote_gpu(far):
    assert detect_arch() == "sm_90a"
    r = cuda_magic.compile_source(fd.SCALE, {"cuda": {}})
    assert r.arch == "sm_90a" and r.config.provenance["arch"] == "detected"


def test_on_all_is_one_row_per_gpu(far, module):
    x, y = _xy()
    table = module.scale.bench(1, 64, x, y, 2.0, 64, repeat=5, on="all")
    assert isinstance(table, Across) and len(table) == 1 and not table.errors()
    (g, t), = table.results()
    assert t.ran_on == g.label and t.median_ms > 0
    text = cuda_magic.display.view(table).text()
    assert "scale.bench on 1 GPU(s)" in text and "0: Fake GPU (stub driver)" in text
    assert "µs" in text
    one = module.scale.bench(1, 64, x, y, 2.0, 64, repeat=5, on=[g.worker])
    assert [r[0] for r in one.rows] == [g]
    with pytest.raises(ArgumentError, match=r"on='nope': no GPU of the cluster is that"):
        module.scale.bench(1, 64, x, y, 2.0, 64, on="nope")
    verdicts = module.scale.verify(1, 64, x, y, 2.0, 64, reference=lambda x, y, a, n: a * x,
                                   on="all")
    assert bool(verdicts) and verdicts[0].ran_on == g.label
    assert cuda_magic.display.view(verdicts[0]).text().splitlines()[0].endswith(f" · on {g.label}")
    assert f"ran on {g.label}" in cuda_magic.display.view(t).text()


def test_remote_none_runs_here_again(cluster, module):
    _, client = cluster
    cuda_magic.remote(client)
    assert driver.elsewhere()
    cuda_magic.remote(None)
    assert driver.remote() is None and not driver.elsewhere()
    assert detect_arch() is None                  # this machine has no GPU
    with pytest.raises(RemoteError, match="no remote cluster"):
        cuda_magic.remote_gpus()


def test_a_scheduler_that_does_not_answer_is_named():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(remote_session, "CONNECT_TIMEOUT_S", 1.0)
        with pytest.raises(RemoteError, match=r"no Dask scheduler answered at "
                                              r"tcp://127.0.0.1:9"):
            cuda_magic.remote("tcp://127.0.0.1:9")
    assert driver.remote() is None
    with pytest.raises(ArgumentError, match=r"remote\(42\): a distributed.Client"):
        cuda_magic.remote(42)
    with pytest.raises(ConfigError, match=r"remote: a Dask scheduler address"):
        settings.put("remote", "not an address")


def test_a_cluster_with_no_gpu_is_refused_at_connect(monkeypatch):
    """Workers without the stub driver on this machine see no GPU: remote() says so, and
    launches stay here."""
    monkeypatch.setenv("PYTHONPATH", str(HERE.parent))      # not the stub's site directory
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", worker_dashboard_address=None) as c, \
            distributed.Client(c, set_as_default=False) as client:
        with pytest.raises(RemoteError, match=r"the Dask cluster at tcp://.* has no GPU: its 1 "
                                              r"worker\(s\) see none"):
            cuda_magic.remote(client)
    assert driver.remote() is None


def test_a_cluster_that_goes_away_is_an_error_naming_it(cluster, module):
    """The module's cluster fixture set the stub's site directory: this second cluster's
    workers have the stub GPU too.  Closed under a session, its next launch is a short error."""
    c = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                 dashboard_address=":0", worker_dashboard_address=None)
    client = distributed.Client(c, set_as_default=False)
    try:
        far = cuda_magic.remote(client)
        x, y = _xy()
        module.scale[1, 64](x, y, 2.0, 64)
        worker = far.gpu().worker
        c.close()
        y[:] = 5
        with pytest.raises(RemoteError, match=rf"the Dask worker {worker} .*did not answer"):
            module.scale[1, 64](x, y, 3.0, 64)
        assert (y == 5).all()
    finally:
        cuda_magic.remote(None)
        client.close()


def test_a_worker_killed_mid_call_is_an_error_naming_it(cluster, module):
    c, client = cluster
    far = cuda_magic.remote(client)
    try:
        x, y = _xy()
        y[:] = 3
        worker = far.gpu().worker
        pid = client.run(os.getpid, workers=[worker])[worker]
        killer = threading.Timer(1.5, lambda: os.kill(pid, signal.SIGKILL))
        killer.start()
        with pytest.raises(RemoteError, match=rf"the Dask worker {worker} .*did not answer.*"
                                              rf"nothing was written into your arrays"):
            module.scale[1, 64](x, y, -3.0, 64)
        killer.join()
        assert (y == 3).all()
        client.wait_for_workers(1, timeout=60)           # the nanny starts a new one
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                far.refresh()
                module.scale[1, 64](x, y, 2.0, 64)
                break
            except RemoteError:
                time.sleep(0.5)
        assert y.tolist() == (2 * x).tolist()
    finally:
        cuda_magic.remote(None)


# ---- the GPU machine: a notebook that sees no GPU, a worker that has one ----------------------

def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.gpu
def test_a_gpu_less_notebook_compiles_for_and_runs_on_a_remote_gpu(tmp_path):
    """``dask scheduler`` + ``dask worker`` with the GPU, and a notebook process with
    ``CUDA_VISIBLE_DEVICES=""`` (tests/runtime/remote_notebook.py): a %%cuda cell with no
    --arch compiles for the worker's GPU and runs there; bench, verify, ncu and
    compute-sanitizer run there; a faulting and a hanging kernel leave the notebook working."""
    import json
    import subprocess
    import sys
    if cuda_magic.detect_arch() is None:
        pytest.skip("no NVIDIA GPU/driver here")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE.parent), env.get("PYTHONPATH")) if p)
    logs = [open(tmp_path / f"{n}.log", "w") for n in ("scheduler", "worker")]
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--port",
                               str(port), "--dashboard-address", ":0"], env=env,
                              stdout=logs[0], stderr=subprocess.STDOUT)]
    try:
        time.sleep(3)
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                       address, "--nworkers", "1", "--nthreads", "1",
                                       "--dashboard-address", ":0"], env=env,
                                      stdout=logs[1], stderr=subprocess.STDOUT))
        with distributed.Client(address, timeout=60, set_as_default=False) as c:
            c.wait_for_workers(1, timeout=60)
        notebook = dict(env, CUDA_VISIBLE_DEVICES="")
        run = subprocess.run([sys.executable, str(HERE / "runtime" / "remote_notebook.py"),
                              address], env=notebook, capture_output=True, text=True, timeout=400)
        line = next((ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")), None)
        assert line is not None, run.stdout[-3000:] + run.stderr[-3000:]
        out = json.loads(line[len("RESULT "):])
        print(json.dumps(out, indent=1))
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        for f in logs:
            f.close()
    gpu = cuda_magic.detect_arch()
    print(json.dumps(out))
    assert out["local_arch"] is None                      # the notebook saw no GPU
    assert out["arch"] == gpu and out["gpus"][0][1] == gpu
    assert out["launch_ok"] and out["after_fault_ok"] and out["after_hang_ok"]
    assert "GPU 0 of worker tcp://" in out["bench"]["ran_on"] and out["bench"]["median_us"] > 0
    assert "scale.bench on 1 GPU(s)" in out["on_all"] and "% of GB/s peak" in out["on_all"]
    assert out["verify"]["passed"] and "GPU 0 of worker" in out["verify"]["ran_on"]
    assert out["profile"].get("duration_us", 0) > 0, out["profile"]
    assert out["check"].get("findings", 0) >= 1, out["check"]
    assert out["fault"].startswith("CudaError") and "GPU 0 of worker tcp://" in out["fault"]
    assert out["fault_untouched"]
    assert out["hang"].startswith("KernelHangError") and "GPU 0 of worker" in out["hang"]
    assert "launch time limit of 3 s" in out["hang"] and "warp 0 of block (0,0,0)" in out["hang"]
    assert "could not be read" not in out["hang"]           # placed on the notebook's build
    assert out["hang_s"] < 30          # 3 s, cuda-gdb, the helper killed (not waited for)
    assert out["timeline"].get("events", 0) >= 16 * 8 * 2, out["timeline"]
    assert out["timeline"]["written"] and "load" in out["timeline"]["names"]


def test_the_table_keeps_a_failed_gpu_in_its_row():
    from cuda_magic.runtime.measure.bench import Timing
    from cuda_magic.runtime.remote import GPU
    g1 = GPU("tcp://10.0.0.5:40123", 0, "NVIDIA H200", "sm_90a", 141 << 30, "13.0")
    g2 = GPU("tcp://10.0.0.6:40555", 1, "NVIDIA B200", "sm_100a", 180 << 30, "13.0")
    t = Timing("scale", (4096, 1, 1, 256, 1, 1), tuple(0.0123 + 0.0001 * i for i in range(20)))
    table = Across("scale", "bench", [(g1, t), (g2, CudaError("built for sm_90a", "X"))])
    assert table.results() == [(g1, t)] and [g for g, _ in table.errors()] == [g2]
    lines = cuda_magic.display.view(table).text().splitlines()
    assert lines[0] == "scale.bench on 2 GPU(s)"
    assert lines[2].split()[:6] == ["0:", "NVIDIA", "H200", "tcp://10.0.0.5:40123", "sm_90a",
                                    "13.25"]
    assert lines[3].split()[:6] == ["1:", "NVIDIA", "B200", "tcp://10.0.0.6:40555", "sm_100a",
                                    "failed"]
    assert lines[3].endswith("CudaError: built for sm_90a")
    assert "<table" in cuda_magic.display.view(table)._repr_html_()


def test_a_tls_cluster_by_its_address_and_security(cluster, module):
    """Dask's TLS (docs/remote.md, Security): ``remote("tls://...", security=...)`` connects,
    and a launch's arrays go there and back over it.  (Dask's throwaway certificates here;
    a real cluster's come from its admin.)"""
    pytest.importorskip("cryptography")
    from distributed.security import Security
    security = Security.temporary()
    c = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                 protocol="tls", security=security, dashboard_address=":0",
                                 worker_dashboard_address=None)
    try:
        assert c.scheduler_address.startswith("tls://")
        far = cuda_magic.remote(c.scheduler_address, security=security)
        x, y = _xy()
        module.scale[1, 64](x, y, 4.0, 64)
        assert y.tolist() == (4 * x).tolist()
        assert far.gpu().worker.startswith("tls://")
    finally:
        cuda_magic.remote(None)
        c.close()
