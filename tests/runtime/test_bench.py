"""k.bench -> Timing: statistics, peaks, clocks, history, views; the helper process; no GPU.

The modules: ``runtime/measure/stats.py``, ``runtime/measure/peaks.py``, ``runtime/measure/bench.py`` (measuring,
Timing), ``runtime/measure/history.py``.

CPU tests use fixed samples and fake device attributes. GPU tests (``-m gpu``) time real
kernels and check what the Timing holds; how fast they ran is benchmarks/bench_measure.py's
(the figures docs/measure.md quotes), never asserted here.
"""

import math
import pickle
import re
import random

import pytest

import cuda_magic
from cuda_magic import detect_arch, view
from cuda_magic.runtime.measure import bench, history as bench_history, peaks
from cuda_magic.runtime import driver
from cuda_magic.runtime.helper import worker
from cuda_magic.runtime.measure.bench import BenchError, Timing, options
from cuda_magic.runtime.measure.history import History, HistoryError
from cuda_magic.runtime.measure.peaks import Clocks, Device
from cuda_magic.runtime.measure.stats import median_ci, quartiles

HAS_GPU = detect_arch() is not None

# An H200 as its driver reports it (CU_DEVICE_ATTRIBUTE_*; driver 580 on the H200 we test on:
# a 6016-bit bus, 60 MiB of L2).
H200 = {"COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0, "MULTIPROCESSOR_COUNT": 132,
        "CLOCK_RATE": 1980000, "MEMORY_CLOCK_RATE": 3201000, "GLOBAL_MEMORY_BUS_WIDTH": 6016,
        "L2_CACHE_SIZE": 62914560}


@pytest.fixture(autouse=True)
def _fresh_history():
    bench_history.clear_history()
    yield
    bench_history.clear_history()


def _binom_cdf(k, n):
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n


# ---- statistics ---------------------------------------------------------------------------------

def test_statistics_from_fixed_samples():
    xs = [float(v) for v in range(1, 22)]
    random.Random(1).shuffle(xs)
    t = Timing.from_samples(xs)
    assert t.n == 21 and t.samples_ms == tuple(xs)          # run order kept
    assert (t.min_ms, t.median_ms, t.max_ms, t.mean_ms) == (1, 11, 21, 11)
    assert (t.q1_ms, t.q3_ms, t.iqr_ms) == (6, 16, 10)
    # 21 samples: ranks 6 and 16 (P(B <= 5) = 1.3% <= 2.5% < P(B <= 6) = 3.9%)
    assert t.ci_ms == (6, 16)
    assert t.ci_coverage == pytest.approx(1 - 2 * _binom_cdf(5, 21))
    assert t.times_ms == xs                                  # BenchResult's name


def test_quartiles_interpolate_like_numpy():
    assert quartiles([1.0, 2.0, 3.0, 4.0]) == (1.75, 2.5, 3.25)
    assert quartiles([5.0]) == (5.0, 5.0, 5.0)
    # the figures bench has always reported, to the last bit (statistics.quantiles rounds
    # these two to 8.977500000000001 and 9.022499999999999: docs/decisions.md)
    xs = [9.0 * (1 + 0.01 * (i / 49 - 0.5)) for i in range(50)]
    assert quartiles(xs) == (8.9775, 9.0, 9.0225)


@pytest.mark.parametrize("n, ranks", [(6, (1, 6)), (10, (2, 9)), (20, (6, 15)), (50, (18, 33)),
                                      (100, (40, 61))])
def test_median_ci_ranks_match_the_tables(n, ranks):
    lo, hi, cover = median_ci([float(i) for i in range(1, n + 1)])
    assert (lo, hi) == ranks
    assert cover >= 0.95
    assert cover == pytest.approx(1 - 2 * _binom_cdf(ranks[0] - 1, n))


def test_median_ci_few_and_many_samples():
    lo, hi, cover = median_ci([1.0, 2.0, 3.0, 4.0, 5.0])     # 5 cannot reach 95%
    assert (lo, hi) == (1, 5) and cover == pytest.approx(1 - 2 / 32)
    xs = [float(i) for i in range(1, 5001)]                   # normal approximation
    lo, hi, cover = median_ci(xs)
    assert lo < 2500.5 < hi and 0.95 <= cover < 0.96
    assert (lo, hi) == (2430, 2571)          # z = 1.9599639845400536 (NormalDist().inv_cdf)
    assert median_ci([float(i) for i in range(1, 100_001)])[:2] == (49690, 50311)
    exact = median_ci(xs[:2000])
    assert exact[0] == 956 and exact[1] == 1045               # continuity with the exact sums
    assert "covers the median with only 94%" in view(Timing.from_samples([1, 2, 3, 4, 5])).text()


# ---- peaks --------------------------------------------------------------------------------------

def test_peaks_of_an_h200():
    d = Device.from_attributes(H200, "NVIDIA H200")
    assert d.arch == "sm_90" and d.sms == 132
    assert d.peak_gbps == pytest.approx(4800, rel=0.10)                 # HBM3e, 4.8 TB/s
    assert d.peak_tflops("float32") == pytest.approx(67, rel=0.10)      # 132 x 1.98 GHz x 128 x 2
    assert d.peak_tflops("float32") == pytest.approx(132 * 1.98e9 * 128 * 2 / 1e12)
    assert d.peak_tflops("float64") == pytest.approx(d.peak_tflops("float32") / 2)
    assert d.peak_tflops("fp16") == pytest.approx(d.peak_tflops("float32") * 2)
    assert d.fma_per_clock("float32") == (128, True)


@pytest.mark.parametrize("cc, dtype, per, sure", [
    ((8, 0), "float32", 64, True), ((8, 6), "float32", 128, True), ((7, 5), "float64", 2, True),
    ((7, 0), "float32", 64, True), ((12, 0), "float64", 2, True), ((10, 3), "float32", 128, True),
    ((8, 9), "float16", 128, False), ((11, 0), "float32", None, False)])
def test_fma_table(cc, dtype, per, sure):
    d = Device("x", cc, 10, 1_000_000, 1_000_000, 256, 1 << 20)
    assert d.fma_per_clock(dtype) == (per, sure)
    assert (d.peak_tflops(dtype) is None) == (per is None)


def test_achieved_fraction_of_peak():
    d = Device.from_attributes(H200, "NVIDIA H200")
    t = Timing.from_samples([1.0] * 9, nbytes=2.4e9, flops=33.5e9, device=d)
    assert t.gbps == pytest.approx(2400) and t.tflops == pytest.approx(33.5)
    assert t.gbps_of_peak == pytest.approx(2400 / d.peak_gbps)
    assert t.tflops_of_peak == pytest.approx(0.5, rel=0.01)
    text = view(t).text()
    assert "GB/s" in text and "of the peak" in text and "of the FP32 peak" in text
    assert Timing.from_samples([1.0], nbytes=1e9).gbps_of_peak is None     # no device: no fraction


# ---- options ------------------------------------------------------------------------------------

def test_options_normalise():
    o = options()
    assert o == {"repeat": 100, "warmup": None, "flush": True, "graph": 0, "nbytes": None,
                 "flops": None, "dtype": "float32", "timer": "auto", "fresh_inputs": False,
                 "protocol": None}
    assert options(graph=True)["graph"] == bench.GRAPH_LAUNCHES == 20
    assert options(graph=7)["graph"] == 7
    assert options(graph=0)["graph"] == 0 == options(graph=None)["graph"]
    for kw in ({}, {"graph": True}, {"graph": 7}, {"warmup": 3, "dtype": "double"},
               {"protocol": "sol"}, {"timer": "cupti", "fresh_inputs": True}):
        assert options(**options(**kw)) == options(**kw)   # what the helper process is sent
    assert options(dtype="double")["dtype"] == "float64"
    np = pytest.importorskip("numpy")
    assert options(dtype=np.float16)["dtype"] == "float16"
    assert options(dtype=np.dtype("float64"))["dtype"] == "float64"
    sol = options(protocol="sol", repeat=7, warmup=1)      # the protocol fixes what it names
    assert (sol["repeat"], sol["warmup"], sol["flush"], sol["fresh_inputs"]) == (50, 10, True, True)


@pytest.mark.parametrize("kw, says", [
    ({"timer": "gpu"}, "timer='gpu'"), ({"fresh_inputs": 1}, "fresh_inputs=1"),
    ({"protocol": "fast"}, "protocol='fast'"), ({"protocol": "sol", "graph": True}, "graph"),
    ({"fresh_inputs": True, "graph": 5}, "fresh_inputs=True with graph=")])
def test_the_new_options_are_checked(kw, says):
    with pytest.raises(BenchError, match=re.escape(says)):
        options(**kw)


@pytest.mark.parametrize("kw, match", [
    ({"repeat": 0}, r"repeat=0: the number of timed launches"), ({"repeat": True}, "repeat=True"),
    ({"warmup": -1}, "warmup=-1"), ({"flush": "yes"}, "flush=yes"), ({"graph": -1}, "graph=-1"),
    ({"graph": 2.5}, "graph=2.5"), ({"nbytes": -4}, "nbytes=-4"), ({"flops": "many"}, "flops=many"),
    ({"dtype": "int8"}, r"dtype='int8': the FLOP type")])
def test_options_errors(kw, match):
    with pytest.raises(BenchError, match=match):
        options(**kw)


# ---- clocks -------------------------------------------------------------------------------------

def test_clock_notes():
    assert not Clocks(1980, 1980, 1980).throttled
    assert Clocks(1980, 1800, 1980).throttled                  # fell by 9%
    assert Clocks(1700, 1700, 1980).throttled                  # below its max
    assert not Clocks(note="no NVML").throttled
    hot = Timing.from_samples([1.0] * 8, clocks=Clocks(1980, 1755, 1980, ("software power cap",)))
    assert "SM clock 1,980 → 1,755 MHz (max 1,980)" in view(hot).text()
    assert "! the SM clock fell or ran below its max during the run: software power cap" in view(hot).text()
    cold = Timing.from_samples([1.0] * 8, clocks=Clocks(note="SM clock not read (no NVML)"))
    assert "SM clock not read (no NVML)" in view(cold).text() and "!" not in view(cold).text()


# ---- views --------------------------------------------------------------------------------------

def _timing(**kw):
    rng = random.Random(7)
    d = Device.from_attributes(H200, "NVIDIA H200")
    return Timing("k<float>", (64, 1, 1, 256, 1, 1), [0.010 + rng.random() * 1e-3 for _ in range(100)],
                  nbytes=32e6, device=d, flush=True, flush_bytes=2 * H200["L2_CACHE_SIZE"], **kw)


def test_views_render():
    t = _timing(graph=20, warmup=512, clocks=Clocks(1980, 1980, 1980))
    text = view(t).text()
    assert repr(t).startswith("<Timing k<float>: median ") and "cuda_magic.show(t)" in repr(t)
    first = text.split("\n")[0]
    assert first.startswith("k<float>[grid=(64, 1, 1), block=(256, 1, 1)]: median ")
    assert "95% CI" in first and "over 100 runs" in first and "GB/s" in first
    assert "CUDA graph of 20 launches per sample, no flush between them" in text
    assert "L2 flushed before each graph launch" in text and "126 MB memset" in text
    assert "512 warmup graph launches" in text and "NVIDIA H200 (sm_90, 132 SMs, L2 60 MiB)" in text
    html = view(t).html()
    assert "<svg" in html and "k&lt;float&gt;" in html and "k<float>" not in html
    assert html.count("<circle") == 100 and "95% CI of the median" in html

    class P:
        out = ""

        def text(self, s):
            self.out += s
    p = P()
    view(t)._repr_pretty_(p, False)
    assert p.out == text
    big = Timing.from_samples([1.0 + i * 1e-6 for i in range(50_000)])
    assert view(big).html().count("<circle") == 2000                 # plots stay small
    assert t.to_dict()["median_ms"] == t.median_ms and t.to_dict()["device"]["sms"] == 132


def test_timing_pickles():                                     # the helper process sends it back
    t = _timing(clocks=Clocks(1980, 1970, 1980))
    t.median_ms
    u = pickle.loads(pickle.dumps(t))
    assert u == t and u.ci_ms == t.ci_ms and u.device.peak_gbps == t.device.peak_gbps


def test_one_name_for_the_result():
    assert cuda_magic.Timing is Timing and "BenchResult" not in cuda_magic.__all__
    assert "BenchResult" not in cuda_magic.runtime.__all__
    with pytest.warns(DeprecationWarning, match="BenchResult is Timing"):
        assert bench.BenchResult is Timing                   # the old name, deprecated
    from cuda_magic.runtime.launch.kernel import BenchError as KernelBenchError
    assert KernelBenchError is BenchError is cuda_magic.errors.BenchError


def test_each_measuring_name_lives_in_one_module():
    """Statistics, peaks and history have modules of their own; ``runtime.bench`` no longer
    re-exports them, and ``cuda_magic.runtime`` takes each from its own module."""
    from cuda_magic.runtime.measure import stats
    for name in ("CI_LEVEL", "FMA_PER_CLOCK", "UNSURE", "History", "HistoryError", "history",
                 "clear_history", "record"):
        assert not hasattr(bench, name), name
    assert stats.CI_LEVEL == 0.95 and peaks.FMA_PER_CLOCK
    assert cuda_magic.runtime.clear_history is bench_history.clear_history
    assert cuda_magic.runtime.history is cuda_magic.history is bench_history.history
    assert cuda_magic.runtime.device_info is peaks.device_info
    assert Timing.__module__ == "cuda_magic.runtime.measure.bench" and History.__module__ == \
        "cuda_magic.runtime.measure.history"          # display/registry.py names them so


# ---- history ------------------------------------------------------------------------------------

class FakeConfig:
    def __init__(self, flags):
        self.flags = flags

    def json(self):
        return '{"nvrtc":%s}' % self.flags


class FakeResult:
    def __init__(self, source, flags='["--use_fast_math"]'):
        self.source, self.config = source, FakeConfig(flags)


class FakeKernel:
    def __init__(self, name, source, flags='["--use_fast_math"]'):
        self.name, self.result = name, FakeResult(source, flags)


def _run(median, spread=0.01, n=50, kernel="k", dims=(8, 1, 1, 256, 1, 1), **kw):
    xs = [median * (1 + spread * (i / (n - 1) - 0.5)) for i in range(n)]
    return Timing(kernel, dims, xs, **kw)


def test_history_marks_regressions_and_improvements():
    k = FakeKernel("k", "v1")
    for i, (median, src) in enumerate([(10.0, "v1"), (10.02, "v2"), (12.0, "v3"), (12.1, "v4"),
                                       (9.0, "v5"), (9.2, "v6")]):
        k.result.source = src
        bench_history.record(k, _run(median), args=(4096,))
    h = cuda_magic.history("k")
    assert isinstance(h, History) and len(h) == 6 and h.latest.median_ms == pytest.approx(9.2)
    assert [m.kind for m in h.marks] == ["", "", "regression", "", "improvement", ""]
    # 9.2 vs 9.0 is +2.2%: above the CI of 9.0 (spread 1%) but under 3%: noise
    assert h.regressions == [2] and h.improvements == [4]
    assert h.marks[2].change == pytest.approx(12.0 / 10.02 - 1) and h.marks[2].against == 1
    assert len({t.source_hash for t in h}) == 6 and len({t.config_hash for t in h}) == 1
    text = view(h).text()
    assert "history of k: 6 runs in this session (1 regression, 1 improvement)" in text
    assert "+19.8% vs #2 regression" in text and "-25.6% vs #4 improvement" in text
    html = view(h).html()
    assert "<svg" in html and html.count("<circle") == 6 and "#c0392b" in html


def test_history_needs_disjoint_cis_and_a_5_percent_change():
    k = FakeKernel("k", "src")
    for median, spread in [(10.0, 0.01), (10.4, 0.01), (11.5, 1.0), (10.0, 0.01), (10.6, 0.01)]:
        bench_history.record(k, _run(median, spread=spread), args=(4096,))
    h = cuda_magic.history("k")
    # +4% with disjoint CIs: drift; +10.6% whose wide CI reaches back under the previous
    # upper bound: noise; -13% likewise; +6% with disjoint CIs: a regression
    assert [m.kind for m in h.marks] == ["", "", "", "", "regression"], h.marks
    assert h.runs[1].ci_ms[0] > h.runs[0].ci_ms[1]
    assert h.runs[2].ci_ms[0] < h.runs[1].ci_ms[1] < h.runs[2].median_ms


def test_history_compares_like_with_like():
    k = FakeKernel("k", "src")
    bench_history.record(k, _run(10.0), args=(4096,))
    bench_history.record(k, _run(20.0), args=(8192,))                   # other arguments: a new setup
    bench_history.record(k, _run(20.0, dims=(16, 1, 1, 256, 1, 1)), args=(8192,))   # other grid
    bench_history.record(k, _run(30.0, flush=True), args=(8192,))       # flush on: another setup
    bench_history.record(k, _run(12.0, timer="cupti"), args=(4096,))    # another timer: another
    bench_history.record(k, _run(13.0, protocol="sol"), args=(4096,))   # ...and another protocol
    bench_history.record(k, _run(10.6), args=(4096,))                   # compared with run 1: +6%
    h = cuda_magic.history(k)                                    # a Kernel works as well as its name
    assert [m.kind for m in h.marks] == ["", "", "", "", "", "", "regression"]
    assert h.marks[6].against == 0
    assert "first of its launch" in view(h).text()


def test_history_keyed_by_name_and_bounded(monkeypatch):
    monkeypatch.setattr(bench_history, "HISTORY_RUNS", 3)
    monkeypatch.setattr(bench_history, "HISTORY_KERNELS", 2)
    for i in range(5):
        bench_history.record(FakeKernel("a", f"v{i}"), _run(1.0 + i, kernel="a"))
    assert [t.median_ms for t in cuda_magic.history("a")] == pytest.approx([3, 4, 5])
    bench_history.record(FakeKernel("b", "x"), _run(1.0, kernel="b"))
    bench_history.record(FakeKernel("c", "x"), _run(1.0, kernel="c"))   # 'a' is the oldest: dropped
    with pytest.raises(HistoryError, match=r"no bench of 'a' in this session; benched so far: b, c"):
        cuda_magic.history("a")
    cfg = [FakeKernel("c", "x", '["--use_fast_math","--ftz=true"]')]
    bench_history.record(cfg[0], _run(1.0, kernel="c"))
    assert len({t.config_hash for t in cuda_magic.history("c")}) == 2


def test_history_errors():
    with pytest.raises(HistoryError, match=r"no bench of 'nope' in this session; time it with "
                                           r"k.bench\(grid, block, \*args\) first"):
        cuda_magic.history("nope")
    with pytest.raises(HistoryError, match="give a Kernel or a kernel's name, not 3"):
        cuda_magic.history(3)
    lines = HistoryError("x")._render_traceback_()
    assert lines[-1] == "HistoryError: x"


# ---- the helper process -------------------------------------------------------------------------

SRC = 'extern "C" __global__ void scale(const float* x, float* y, float a, int n) ' \
      '{ int i = threadIdx.x; if (i < n) y[i] = a * x[i]; }'


@pytest.fixture(scope="module")
def scale():
    return cuda_magic.build(SRC, {"arch": detect_arch() or "sm_90a"})["scale"]


def test_bench_in_the_helper_process_sends_the_options(scale, monkeypatch):
    sent = {}

    def call(kernel, op, *payload):
        sent.update(op=op, payload=payload)
        return Timing.from_samples([0.01] * 10, kernel.name, payload[0])
    monkeypatch.setattr(worker, "call", call)
    monkeypatch.setitem(driver._state, "isolated", True)
    t = scale.bench(2, 32, None, None, 2.0, 64, repeat=10, graph=True, flush=False, nbytes=512,
                    dtype="fp64")
    dims, shared, args, opts, attrs = sent["payload"]
    assert sent["op"] == "bench" and dims == (2, 1, 1, 32, 1, 1) and shared == 0 and attrs is None
    assert args == (None, None, 2.0, 64)
    assert opts == {"repeat": 10, "warmup": None, "flush": False, "graph": 20, "nbytes": 512,
                    "flops": None, "dtype": "float64", "timer": "auto", "fresh_inputs": False,
                    "protocol": None}
    assert t.config_hash and t.source_hash and cuda_magic.history("scale").latest is t


def test_helper_process_unpacks_the_options(scale, monkeypatch):
    """The helper's side: ``worker_main.serve`` calls ``Kernel.bench`` with the options as
    keywords, on the arguments rebuilt from the message ``worker.message`` makes."""
    import os
    import numpy as np
    from cuda_magic.runtime.launch import kernel as kernel_module
    from cuda_magic.runtime.helper import main as worker_main
    from cuda_magic.runtime.helper import transport
    from cuda_magic.runtime.launch.attributes import Attributes
    seen = {}

    def fake_bench(self, grid, block, *args, **kw):
        seen.update(grid=grid, block=block, args=args, kw=kw)
        return Timing.from_samples([1.0], self.name)
    monkeypatch.setattr(kernel_module.Kernel, "bench", fake_bench)
    opts = options(repeat=5, graph=3)
    x = np.arange(4, dtype=np.float32)
    sent = worker.message(scale, "bench", (2, 1, 1, 32, 1, 1), 0, (x, None, 1.0, 4), opts,
                          Attributes(cluster=(2, 1, 1), pdl=True))
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()
    transport.send(from_parent, sent)
    os.close(from_parent)                       # then the input ends: serve returns
    worker_main.serve(to_child, from_child)
    os.close(from_child)
    status, (result, printed, arrays) = transport.recv(to_parent)
    assert status == "ok" and result.kernel == "scale" and arrays == []
    assert seen["grid"] == (2, 1, 1) and seen["block"] == (32, 1, 1)
    assert seen["kw"] == {"shared_mem": 0, **opts, "cluster": (2, 1, 1), "cooperative": False,
                          "pdl": True}          # the launch attributes, checked again there
    assert seen["args"][1:] == (None, 1.0, 4) and np.array_equal(seen["args"][0], x)
    with pytest.raises(EOFError):
        transport.recv(to_parent)
    os.close(to_child)
    os.close(to_parent)


# ---- without a GPU ------------------------------------------------------------------------------

@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU errors")
def test_no_gpu_errors(scale):
    with pytest.raises(BenchError, match="repeat=0"):           # settings are checked first
        scale.bench(1, 32, None, None, 1.0, 4, repeat=0)
    with pytest.raises(cuda_magic.NoGPUError, match=r"^scale\.bench: launching kernels needs an "
                                                    r"NVIDIA GPU") as exc:
        scale.bench(1, 32, None, None, 1.0, 4)
    lines = exc.value._render_traceback_()
    assert len(lines) <= 15 and not any("cuda_magic/" in ln for ln in lines)
    with pytest.raises(cuda_magic.NoGPUError, match="needs an NVIDIA GPU"):
        peaks.device_info()
    with pytest.raises(HistoryError):                            # nothing was recorded
        cuda_magic.history("scale")


# ---- on a GPU -----------------------------------------------------------------------------------

from bench_measure import KERNELS, SPIN       # benchmarks/: the figures of these kernels


@pytest.fixture(scope="module")
def gpu():
    m = cuda_magic.build(KERNELS)
    return m, peaks.device_info()


def _figure(*parts):
    print("FIGURE", *parts)


@pytest.mark.gpu
def test_gpu_statistics_sane(gpu):
    np = pytest.importorskip("numpy")
    m, dev = gpu
    n4 = 1 << 22                                  # 64 MiB in, 64 MiB out: docs/measure.md's
    x = np.ones(4 * n4, np.float32)
    y = np.empty_like(x)
    t = m["copy"].bench(dev.sms * 4, 512, x, y, n4, nbytes=2 * 16 * n4)
    assert t.n == 100 and t.min_ms <= t.q1_ms <= t.median_ms <= t.q3_ms <= t.max_ms
    lo, hi = t.ci_ms
    assert lo <= t.median_ms <= hi and t.ci_coverage >= 0.95
    assert t.flush and t.warmup >= 1 and t.device == dev
    assert 0 < t.gbps_of_peak < 1.05            # above the peak would be a wrong timing
    _figure(f"device {dev}")
    _figure(f"peaks: {dev.peak_gbps:.0f} GB/s, FP32 {dev.peak_tflops('float32'):.1f} TFLOP/s, "
            f"FP64 {dev.peak_tflops('float64'):.1f}, FP16 {dev.peak_tflops('float16'):.1f}")
    _figure(f"copy 64 MiB: {t.gbps:.0f} GB/s = {t.gbps_of_peak:.1%} of peak; "
            f"median {t.median_ms * 1e3:.1f} us CI {lo * 1e3:.1f}-{hi * 1e3:.1f} IQR "
            f"{t.iqr_ms * 1e3:.2f} us; warmup {t.warmup}")
    _figure(f"clocks {t.clocks}")
    cuda_magic.show(t)
    assert "<svg" in view(t).html()


@pytest.mark.gpu
def test_gpu_peaks_of_the_h200(gpu):
    m, dev = gpu
    if "H200" not in dev.name:
        pytest.skip(f"not an H200: {dev.name}")
    assert dev.peak_gbps == pytest.approx(4800, rel=0.10)
    assert dev.peak_tflops("float32") == pytest.approx(67, rel=0.10)
    iters, threads = 4096, dev.sms * 4 * 256
    t = m["fma_chains"].bench(dev.sms * 4, 256, None, 1.0001, 0.5, iters, repeat=20,
                              flops=2 * 8 * iters * threads)
    _figure(f"fma_chains: {t.tflops:.1f} TFLOP/s = {t.tflops_of_peak:.1%} of FP32 peak; {t.clocks}")
    assert 0 < t.tflops_of_peak < 1.05          # above the peak would be a wrong timing


@pytest.mark.gpu
def test_gpu_flush_makes_an_l2_sized_read_slower(gpu):
    cp = pytest.importorskip("cupy")
    m, dev = gpu
    n4 = (16 << 20) // 16                         # 16 MB: fits in the L2 (60 MiB on an H200)
    assert 16 << 20 < dev.l2_bytes / 2
    x = cp.ones(4 * n4, cp.float32)
    out = cp.zeros(1, cp.float32)
    args = (dev.sms * 4, 512, x, out, n4)
    cold = m["read_sum"].bench(*args, repeat=50, flush=True, nbytes=16 << 20)
    warm = m["read_sum"].bench(*args, repeat=50, flush=False, nbytes=16 << 20)
    _figure(f"read 16 MB: flush on {cold.median_ms * 1e3:.2f} us ({cold.gbps:.0f} GB/s), "
            f"off {warm.median_ms * 1e3:.2f} us ({warm.gbps:.0f} GB/s), "
            f"ratio {cold.median_ms / warm.median_ms:.2f}")
    assert cold.flush and not warm.flush and cold.flush_bytes == 2 * dev.l2_bytes
    assert cold.launch_hash != warm.launch_hash        # flush on and off are not compared


@pytest.mark.gpu
def test_gpu_graph_takes_launch_overhead_out(gpu):
    m, _ = gpu
    plain = m["empty"].bench(1, 32, repeat=200, flush=False)
    graphed = m["empty"].bench(1, 32, repeat=50, flush=False, graph=True)
    flushed = m["empty"].bench(1, 32, repeat=50, graph=True)
    _figure(f"empty kernel: events around each launch {plain.median_ms * 1e3:.2f} us, "
            f"graph of 20 {graphed.median_ms * 1e3:.3f} us per launch "
            f"(flush before each graph: {flushed.median_ms * 1e3:.3f})")
    assert graphed.graph == 20 and graphed.n == 50 and plain.graph == 0 and plain.n == 200
    assert flushed.flush and not graphed.flush
    assert "CUDA graph of 20 launches" in view(graphed).text()


@pytest.mark.gpu
def test_gpu_history_marks_a_slower_edit():
    np = pytest.importorskip("numpy")
    spin = SPIN
    out = np.zeros(1, np.float32)
    fast = cuda_magic.build("#define ITERS 1000\n" + spin)["spin"]
    fast.bench(132, 128, out, 4, repeat=30)
    again = cuda_magic.build("#define ITERS 1000\n" + spin + "\n// a comment\n")["spin"]
    again.bench(132, 128, out, 4, repeat=30)
    slow = cuda_magic.build("#define ITERS 3000\n" + spin)["spin"]   # the edit: 3x the loop
    slow.bench(132, 128, out, 4, repeat=30)
    h = cuda_magic.history("spin")
    cuda_magic.show(h)
    # +135% on an H200; whether the comment edit stays unmarked (drift) is bench_measure.py's
    assert len(h) == 3 and 2 in h.regressions and h.marks[2].change > 0.5
    assert h.marks[1].against == 0 and h.marks[2].against == 1
    assert len({t.source_hash for t in h}) == 3 and len({t.launch_hash for t in h}) == 1
    _figure("history: " + ", ".join(f"{t.median_ms * 1e3:.1f} us {m.kind}" for t, m in zip(h, h.marks)))


@pytest.mark.gpu
def test_gpu_cupy_and_torch_arrays(gpu):
    m, dev = gpu
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    n4 = 1 << 20
    x, y = cp.ones(4 * n4, cp.float32), cp.zeros(4 * n4, cp.float32)
    cp.cuda.get_current_stream().synchronize()      # the bench's own stream does not wait for it
    t1 = m["copy"].bench(dev.sms * 4, 256, x, y, n4, repeat=10, nbytes=32 * n4,
                         stream=cp.cuda.Stream(non_blocking=True))
    assert float(y.sum()) == 4 * n4
    tx = torch.ones(4 * n4, device="cuda")
    ty = torch.zeros_like(tx)
    t2 = m["copy"].bench(dev.sms * 4, 256, tx, ty, n4, repeat=10, graph=4)
    torch.cuda.synchronize()
    assert float(ty.sum()) == 4 * n4 and t1.gbps > 0 and t2.graph == 4
    assert t1.launch_hash != t2.launch_hash           # the graph setting differs


@pytest.mark.gpu
def test_gpu_bench_in_the_helper_process(gpu):
    np = pytest.importorskip("numpy")
    m, dev = gpu
    n4 = 1 << 16
    x, y = np.ones(4 * n4, np.float32), np.zeros(4 * n4, np.float32)
    cuda_magic.isolate(True)
    try:
        t = m["copy"].bench(dev.sms, 256, x, y, n4, repeat=10, graph=True, nbytes=32 * n4)
    finally:
        cuda_magic.isolate(False)
    assert t.n == 10 and t.graph == 20 and t.device.sms == dev.sms
    assert cuda_magic.history("copy").latest.median_ms == t.median_ms
    _figure(f"helper process: {t.median_ms * 1e3:.2f} us per launch; {t.clocks}")


# ---- timing you can defend (GPU): timers side by side, a work-skipping kernel, A/B -------------

DEFEND = r'''
extern "C" __global__ void wait_cycles(float* out, long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
    if (cycles < 0) out[0] = 1.f;
}

__device__ int lazy_calls;
extern "C" __global__ void lazy_scale(const float* x, float* y, float a, int n) {
    // does its work on the first launch only, then returns at once: timing alone rewards it
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (lazy_calls > 0) return;
    if (i < n) y[i] = a * x[i];
    __syncthreads();
    if (i == 0) lazy_calls = 1;
}

extern "C" __global__ void honest_scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
'''


@pytest.fixture(scope="module")
def defend():
    return cuda_magic.build(DEFEND), peaks.device_info()


@pytest.mark.gpu
def test_gpu_cupti_times_the_kernel_alone(defend):
    """A 20 µs busy wait (in SM cycles): CUPTI's durations sit at the wait, the events' a few
    µs above at most; the Timing says which timer ran."""
    pytest.importorskip("cupti")
    m, dev = defend
    cycles = int(20e-6 * dev.sm_clock_khz * 1e3)
    cu = m["wait_cycles"].bench(1, 32, None, cycles, repeat=50, timer="cupti", flush=False)
    ev = m["wait_cycles"].bench(1, 32, None, cycles, repeat=50, timer="events", flush=False)
    assert cu.timer == "cupti" and ev.timer == "events", cu.notes
    assert cu.n == 50 and 0.019 < cu.median_ms < 0.040, cu
    assert ev.median_ms >= cu.median_ms * 0.98
    assert "timed by CUPTI" in cuda_magic.display.timing.text(cu)
    graphed = m["wait_cycles"].bench(1, 32, None, cycles, repeat=5, graph=4, timer="cupti")
    assert graphed.timer == "cupti" and graphed.n == 5       # a graph's 4 records: one sample
    assert 0.019 < graphed.median_ms < 0.040


@pytest.mark.gpu
def test_gpu_check_catches_a_kernel_that_works_only_once(defend):
    np = pytest.importorskip("numpy")
    m, _ = defend
    x = np.arange(4096, dtype=np.float32)
    y = np.zeros_like(x)
    ref = lambda x, y, a, n: a * x          # noqa: E731
    honest = m["honest_scale"].bench(16, 256, x, y, 2.0, 4096, repeat=20, check=ref)
    assert not honest.wrong and bool(honest.check)
    lazy = m["lazy_scale"].bench(16, 256, x, y, 2.0, 4096, repeat=20, check=ref)
    assert lazy.wrong and lazy.check.category == "unchanged", str(lazy.check)
    assert cuda_magic.display.timing.text(lazy).startswith("!! OUTPUTS WRONG after timing")
    fresh = m["honest_scale"].bench(16, 256, x, y, 2.0, 4096, repeat=8, fresh_inputs=True,
                                    check=ref)
    assert not fresh.wrong and any("fresh inputs" in n for n in fresh.notes)


@pytest.mark.gpu
def test_gpu_ab_finds_a_known_5_percent_and_no_difference_between_equals(defend):
    m, dev = defend
    cycles = int(20e-6 * dev.sm_clock_khz * 1e3)
    other = cuda_magic.build(DEFEND + "\n// another build\n")
    k = m["wait_cycles"]
    same = cuda_magic.ab(k, other["wait_cycles"], 1, 32, None, cycles, flush=False)
    assert same.decision.called == "", same.words          # the same wait: no winner
    itself = k.bench(1, 32, None, cycles, against=other["wait_cycles"], flush=False, repeat=5)
    assert isinstance(itself, cuda_magic.AB) and itself.decision.called == ""
    # a kernel whose wait is 5% longer
    five = cuda_magic.build(DEFEND.replace("clock64() - t0 < cycles",
                                           "clock64() - t0 < cycles + cycles / 20"))
    res = cuda_magic.ab(k, five["wait_cycles"], 1, 32, None, cycles, flush=False)
    assert res.decision.called == "slower", res.words
    assert 1.03 < res.ratio < 1.07 and "slower than" in res.words


@pytest.mark.gpu
def test_gpu_protocol_sol_and_speed_of_light(defend):
    np = pytest.importorskip("numpy")
    m, dev = defend
    n = 1 << 22
    x, y = np.ones(n, np.float32), np.zeros(n, np.float32)
    t = m["honest_scale"].bench(n // 256, 256, x, y, 2.0, n, protocol="sol", nbytes=8 * n)
    assert t.n == 150 and t.flush_bytes == 256 << 20 and t.protocol == "sol"
    assert t.bound_by == "memory" and 0.05 < t.sol <= 1.05, (t.sol, t.median_ms)
