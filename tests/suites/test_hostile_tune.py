"""Hostile input and interrupts for sweeps (%%cuda_tune, tune()), on the CPU.

Ctrl-C ends what a sweep started: a Dask sweep cancels its tasks and kills its workers' helpers
(a stand-in ``distributed`` module whose "workers" are threads of this process, and a real
``LocalCluster`` of one worker, in a thread or a process), local helpers
end together, and a helper whose notebook was SIGKILLed mid-job exits on its own.  The helpers
are real helper processes (``protocol.main``) on the stub driver (benchmarks/fake_driver.py)
whose jobs never end.  Then the space's range() bounds, NUL and surrogates, --where that
is no condition, tune()'s option types, the write-back of a launch value ending in a backslash,
and what docs/tune.md says --where is.
"""

import concurrent.futures as cf
import os
import pathlib
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types

import numpy as np
import pytest

import cuda_magic
from conftest import ARCH
from cuda_magic.errors import RunError, TuneError
from cuda_magic.runtime.helper.program import Program
from cuda_magic.runtime.sweep import Job, pools
from cuda_magic.variants.candidates import points
from cuda_magic.variants.space import classify, parse_space
from cuda_magic.variants.tune import tune
from cuda_magic.variants.writeback import write_back

ROOT = pathlib.Path(__file__).parents[2]
BENCH = ROOT / "benchmarks"

SCALE = r'''
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
'''

SCALE_T = r'''
template <int BM>
__global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = 0; j < BM; ++j) if (i * BM + j < n) y[i * BM + j] = a * x[i * BM + j];
}
'''

# A sweep helper on the stub driver whose every job runs "forever" (it says so in a file first).
# HOSTILE_TUNE_WATCH=0: one that does not look for its notebook (serve() without main()), as a
# helper stuck where nothing reaches it.
STAND_IN = '''
import os, pathlib, sys, time
import fake_driver
fake_driver.install()
from cuda_magic.runtime.helper import transport
from cuda_magic.runtime.sweep import protocol

def busy(job, gpu="", shared=None, reference=None):
    pathlib.Path(os.environ["HOSTILE_TUNE_DIR"], f"busy-{os.getpid()}").write_text("")
    time.sleep(120)

protocol.label = lambda: "GPU 0 (stand-in)"
protocol.run_job = busy
if os.environ.get("HOSTILE_TUNE_WATCH", "1") == "1":
    sys.exit(protocol.main())
protocol.serve(*transport.serving())
'''


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")       # a zombie has ended (its reaper may be slow)


def _ends(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return not _alive(pid)


def _kill(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _busy(folder: pathlib.Path, count: int, within: float = 90) -> list[int]:
    """The pids of ``count`` stand-in helpers once each is inside a job."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        pids = [int(p.name.split("-")[1]) for p in folder.glob("busy-*")]
        if len(pids) >= count:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"only {len(list(folder.glob('busy-*')))} of {count} helpers got a job")


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """Helpers started by the sweep's pools are the stand-in; yields the folder of busy marks."""
    (tmp_path / "hostile_tune_helper.py").write_text(STAND_IN)
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setattr(pools, "MODULE", "hostile_tune_helper")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(tmp_path), str(BENCH), os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setenv("HOSTILE_TUNE_DIR", str(marks))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    yield marks
    _kill(int(p.name.split("-")[1]) for p in marks.glob("busy-*"))


_JOB = Job(0, Program("sweep:none", b"", "cubin", ARCH), ())


# ---- 6: Ctrl-C stops a Dask sweep; a helper outlives no notebook ------------------------------

def _fake_distributed():
    """``distributed`` as DaskPool uses it: a Client whose tasks run in threads of this process
    (one "worker": this process), recording cancel() and run()."""
    mod = types.ModuleType("distributed")

    class Client:
        def __init__(self):
            self.threads = cf.ThreadPoolExecutor(4, thread_name_prefix="fake dask worker")
            self.submitted, self.cancelled, self.ran = [], [], []

        def scheduler_info(self):
            return {"workers": {"tcp://fake:1": {}}}

        def scatter(self, data, broadcast=False):
            return data

        def submit(self, fn, *args, pure=True):
            f = self.threads.submit(fn, *args)
            self.submitted.append(f)
            return f

        def run(self, fn, *args, **kw):
            self.ran.append(fn.__name__)
            return {"tcp://fake:1": fn(*args, **kw)}

        def cancel(self, futures, force=False):
            self.cancelled.extend(futures)
            for f in futures:
                f.cancel()

    def wait(fs, timeout=None, return_when="ALL_COMPLETED"):
        done, rest = cf.wait(fs, timeout, return_when=return_when)
        if not done:
            raise TimeoutError
        return done, rest

    def get_worker():
        raise ValueError("not on a worker")

    mod.Client, mod.wait, mod.get_worker = Client, wait, get_worker
    return mod


def test_ctrl_c_stops_a_dask_sweep_and_ends_its_workers_helpers(stand_in, monkeypatch, ctrl_c):
    fake = _fake_distributed()
    monkeypatch.setitem(sys.modules, "distributed", fake)
    monkeypatch.setitem(pools._worker, "helper", None)
    monkeypatch.setitem(pools._worker, "stopped", set())
    client = fake.Client()
    x = np.ones(256, np.float32)
    y = np.zeros_like(x)
    got = {}

    def interrupt():
        got["pids"] = _busy(stand_in, 1)
        os.kill(os.getpid(), signal.SIGINT)
    timer = threading.Thread(target=interrupt, daemon=True)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            tune(SCALE, "block=[64, 128, 256]", "scale[1, block](x, y, 2.0, 256)", arch=ARCH,
                 client=client, timeout=60, namespace={"x": x, "y": y})
        timer.join(5)
        (pid,) = got["pids"]
        # every task was cancelled, the worker's helper killed: the running task returned at
        # once, and the queued ones started no helper
        assert len(client.submitted) == 3 and set(client.cancelled) == set(client.submitted)
        assert "_dask_stop" in client.ran
        assert _ends(pid, 5), "the worker's helper is still running after Ctrl-C"
        cf.wait(client.submitted, 10)
        assert all(f.done() for f in client.submitted)
        assert len(list(stand_in.glob("busy-*"))) == 1
    finally:
        _kill(got.get("pids", ()))
        client.threads.shutdown(wait=False, cancel_futures=True)
        if pools._worker["helper"] is not None:
            pools._worker["helper"].close()


@pytest.mark.slow
@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_ctrl_c_stops_a_sweep_on_a_real_local_cluster(stand_in, monkeypatch, processes, ctrl_c):
    """The same Ctrl-C against a real ``distributed.LocalCluster`` of one worker with one thread:
    its worker in a thread of this process, or in a process of its own (the stand-in helper set
    there by ``client.run``).  The running task's helper is killed, the other two tasks are
    cancelled or return at once without a helper, and the cluster stays usable."""
    distributed = pytest.importorskip("distributed")
    monkeypatch.setitem(pools._worker, "helper", None)
    monkeypatch.setitem(pools._worker, "stopped", set())
    x = np.ones(256, np.float32)
    y = np.zeros_like(x)
    got = {}
    sweeping = threading.Event()

    def interrupt():
        try:
            got["pids"] = _busy(stand_in, 1, within=60)
        finally:            # no helper busy in time: stop the sweep anyway, the asserts say why
            if sweeping.is_set():
                os.kill(os.getpid(), signal.SIGINT)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=processes,
                                  dashboard_address=":0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        if processes:       # the worker's own pools module starts the stand-in helper
            client.run(setattr, pools, "MODULE", "hostile_tune_helper")
        timer = threading.Thread(target=interrupt, daemon=True)
        sweeping.set()
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                tune(SCALE, "block=[64, 128, 256]", "scale[1, block](x, y, 2.0, 256)",
                     arch=ARCH, client=client, timeout=60, namespace={"x": x, "y": y})
            sweeping.clear()
            timer.join(10)
            assert "pids" in got, "no task's helper got a job within 60 s"
            (pid,) = got["pids"]
            assert _ends(pid, 10), "the worker's helper is still running after Ctrl-C"
            # nothing of the sweep is left on the cluster: its tasks are forgotten or finished
            deadline = time.monotonic() + 20
            while any(client.processing().values()) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert all(not tasks for tasks in client.processing().values()), client.processing()
            assert len(list(stand_in.glob("busy-*"))) == 1     # no queued task started a helper
            assert client.submit(sum, [1, 2], pure=False).result(timeout=30) == 3
        finally:
            sweeping.clear()        # a sweep that ended on its own is not interrupted later
            _kill(got.get("pids", ()))
            if pools._worker["helper"] is not None:
                pools._worker["helper"].close()


PARENT = '''
import sys
from cuda_magic.runtime.sweep import pools
from cuda_magic.runtime.sweep.jobs import Job
from cuda_magic.runtime.helper.program import Program
pools.MODULE = "hostile_tune_helper"
h = pools.Helper(None)
h.share("t", {})
print(h.proc.pid, flush=True)
h.run(Job(0, Program("sweep:none", b"", "cubin", "sm_90a"), (), timeout=600))
'''


def test_a_helper_exits_when_its_notebook_is_sigkilled_mid_job(stand_in):
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                  [str(ROOT), os.environ["PYTHONPATH"]])})
    try:
        pid = int(parent.stdout.readline())
        _busy(stand_in, 1)                          # the helper is inside a job
        parent.kill()                               # the notebook is SIGKILLed
        parent.wait()
        assert _ends(pid, 5), "the helper outlived its notebook"
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()


# ---- 7: Ctrl-C with busy local helpers ends them together ------------------------------------



@pytest.mark.parametrize("watching", [False, True])
def test_busy_local_helpers_end_together(stand_in, monkeypatch, watching):
    """4 helpers busy in a job: closing the pool (what Ctrl-C does) asks all of them to end before
    it waits for any, so they share one grace period (was: ask one, wait up to 2 s, kill it, then
    the next); helpers that watch their input (every real one) end without the kill.  Checked
    by the order of what happened, not by a wall-clock figure."""
    monkeypatch.setenv("HOSTILE_TUNE_WATCH", "1" if watching else "0")
    pool = pools.LocalPool([0, 1, 2, 3])
    procs = [h.proc for h in pool.helpers]
    events = []
    end = pools.Helper.end

    def recorded_end(self):
        events.append("end")
        return end(self)
    monkeypatch.setattr(pools.Helper, "end", recorded_end)
    for proc in procs:
        kill = proc.kill
        proc.kill = lambda kill=kill: (events.append("kill"), kill())
    try:
        for i in range(4):
            pool.submit(Job(i, _JOB.program, (), timeout=600))
        pids = _busy(stand_in, 4)
        assert sorted(pids) == sorted(p.pid for p in procs)
        pool.close()
        assert all(p.poll() is not None for p in procs)
        # (the busy jobs' threads end their helpers again once they see them go: more "end"s)
        assert events[:4] == ["end"] * 4, events
        assert events.count("kill") == (0 if watching else 4), events
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


# ---- 8: range() bounds are capped before use ---------------------------------------------------

@pytest.mark.parametrize("spec, words", [
    ("X=range(100000000000000000000)", "at most 18 digits"),
    ("X=range(" + "9" * 5000 + ")", "at most 18 digits"),
    ("X=range(1, -" + "9" * 30 + ", -1)", "at most 18 digits"),
    ("X=range(1, 10, 0)", "step of range() cannot be 0"),
    ("X=range(0, 10, -0)", "step of range() cannot be 0"),
])
def test_range_in_the_space_text_is_capped_and_a_zero_step_refused(spec, words):
    with pytest.raises(TuneError) as info:
        parse_space(spec)
    assert info.value.key == "X" and words in str(info.value) and len(str(info.value)) < 200


def test_a_huge_range_in_a_space_dict_is_refused_before_it_is_built():
    with pytest.raises(TuneError, match="'X' has too many values") as info:
        parse_space({"X": range(10 ** 20)})
    assert info.value.key == "X"
    # range(10**9) as a list would need 8 GB: in 1 GB of address space it is refused unbuilt
    script = textwrap.dedent('''
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from cuda_magic.variants.space import parse_space, TuneError
        try:
            parse_space({"X": range(10 ** 9)})
        except TuneError as exc:
            print("TuneError", exc.key, exc)
    ''')
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.startswith("TuneError X tune parameter 'X' has 1000000000 values"), \
        out.stdout + out.stderr[-500:]
    assert parse_space("X=range(-3, 4, 3)") == {"X": (-3, 0, 3)}


# ---- 9: NUL and surrogates, --where that is no condition, tune()'s option types -----------------

@pytest.mark.parametrize("spec", ["X=[a\x00b]", "X=[1, 'a\ud800']", "X=a\udc80", "X=[\x00]"])
def test_nul_or_a_lone_surrogate_in_a_space_value_names_the_parameter(spec):
    with pytest.raises(TuneError) as info:
        parse_space(spec)
    assert info.value.key == "X" and ("NUL" in str(info.value) or "surrogate" in str(info.value))
    str(info.value).encode("utf-8")          # printable wherever it is shown


@pytest.mark.parametrize("spec, problem", [
    ("X=[!!bool maybe]", "cannot read the bool value 'maybe'"),
    ("X=[&a 1, *a]", "anchors and aliases"),
    ("X=[" * 40 + "1" + "]" * 40, "nested more than 32 deep"),
])
def test_a_value_yaml_cannot_read_names_the_parameter_and_the_problem(spec, problem):
    # the space's values are read by the //| header's YAML loader: its limits hold here too
    with pytest.raises(TuneError, match="tune parameter 'X': cannot read") as info:
        parse_space(spec)
    assert info.value.key == "X" and problem in str(info.value) and "//|" not in str(info.value)


@pytest.mark.parametrize("where", ["(yield)", "await x", "[(yield) for _ in ()]",
                                   "(yield from BM)", "5 if (yield) else 6"])
def test_where_that_is_not_a_condition_names_where(where):
    params = classify(parse_space("BM=[1, 2]"), cuda_magic.cell.parse_cell(SCALE_T))
    with pytest.raises(TuneError) as info:
        points(params, where)
    assert info.value.key == "where" and "--where" in str(info.value)


def test_run_that_is_no_statement_is_one_message():
    with pytest.raises(RunError, match=r"--run '\(yield\)': not Python"):
        tune(SCALE_T, "BM=[1]", "(yield)", arch=ARCH, compile_only=True, namespace={})


def test_one_instantiate_string_is_one_instance_not_its_characters():
    t = tune(SCALE_T, "BM=[1, 2]", arch=ARCH, compile_only=True, instantiate="scale<4>")
    assert [c.status for c in t.candidates] == ["compiled", "compiled"], \
        [c.reason for c in t.candidates]
    assert "scale<4>" in t.candidates[0].module.kernels


def test_numpy_numbers_are_numbers():
    t = tune(SCALE_T, {"BM": [np.int64(1), np.int32(2)], "block": np.array([64, 128])},
             arch=ARCH, compile_only=True, timeout=np.int64(5), min_occupancy=np.float32(0.0),
             rtol=np.float64(1e-3), repeat=np.int64(3), warmup=np.int64(0),
             nbytes=np.int64(64))
    assert [c.params for c in t.candidates] == [
        {"BM": 1, "block": 64}, {"BM": 1, "block": 128}, {"BM": 2, "block": 64},
        {"BM": 2, "block": 128}]
    assert all(type(v) is int for c in t.candidates for v in c.params.values())
    assert parse_space({"F": [np.float32(0.5), np.bool_(True)]}) == {"F": (0.5, True)}


@pytest.mark.parametrize("kw, key", [
    ({"where": 5}, "where"), ({"run": 5}, "run"), ({"run": [b"k[1, 1]()"]}, "run"),
    ({"instantiate": 5}, "instantiate"), ({"instantiate": [1]}, "instantiate"),
    ({"group": 5}, "group"), ({"gpus": "01"}, "gpus"), ({"gpus": [0.5]}, "gpus"),
    ({"keep_spills": "no"}, "keep_spills"), ({"compile_only": None}, "compile_only"),
    ({"force": 1}, "force"), ({"flush": "yes"}, "flush"), ({"timeout": np.bool_(True)}, "timeout"),
    ({"min_occupancy": "0.5"}, "min_occupancy"), ({"namespace": [1]}, "namespace"),
])
def test_tune_option_types_are_checked_and_named(kw, key):
    args = {"arch": ARCH, "compile_only": True, **kw}
    with pytest.raises(TuneError) as info:
        tune(SCALE_T, "BM=[1]", **args)
    assert info.value.key == key and len(str(info.value)) < 200, str(info.value)


# ---- 10: write-back: a launch value ending in a backslash ---------------------------------------

def test_a_launch_value_ending_in_a_backslash_does_not_swallow_the_next_line():
    cell = "//| nvrtc+: [-lineinfo]\n#define FACTOR 3.0f\n" + SCALE.replace("a * x[i]", "FACTOR * x[i]")
    t = tune(cell, {"block": [256], "tag": ["a\\"]}, arch=ARCH, compile_only=True)
    (c,) = t.candidates
    text = write_back(cell, t.options, None, c, {"block": 256, "tag": "a\\"})
    assert not any(ln.rstrip().endswith("\\") for ln in text.split("\n")
                   if ln.lstrip().startswith("//")), text
    body = text.split("\n", 1)[1]
    m = cuda_magic.build(body, cuda_magic.line_config(arch=ARCH))   # FACTOR is still defined
    assert "scale" in m.kernels
    assert '// tuned launch: block=256, tag="a\\\\"' in text


# ---- 12: docs say what --where is ----------------------------------------------------------------

def test_docs_say_where_is_the_users_own_code_with_the_names_it_sees():
    docs = (ROOT / "docs" / "tune.md").read_text()
    para = next(p for p in docs.split("\n\n") if '`--where "BM * BN <= 16384"`' in p)
    flat = " ".join(para.split())
    assert "restrict" not in flat.lower() and "safe" not in flat.lower()
    assert "your own code, like a cell" in flat and "not a sandbox" in flat
    m = re.search(r"the space's names and ((?:`\w+`(?:, | and )?)+) in scope", flat)
    assert m, flat
    named = re.findall(r"`(\w+)`", m.group(1))
    params = classify(parse_space("BM=[1, 2]"), cuda_magic.cell.parse_cell(SCALE_T))
    for name in named:                       # each name the docs give works in --where
        assert points(params, f"{name}(BM, 1) >= 0" if name != "abs" else "abs(BM) > 0")
    with pytest.raises(TuneError, match="NameError"):   # and the docs list them all
        points(params, "len([BM]) > 0")
