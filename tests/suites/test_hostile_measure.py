"""The measuring calls and their views under hostile input, and how a Timing says the L2 stood; CPU.

Launches and ``k.bench`` run through the stub driver of ``benchmarks/fake_driver.py``, extended
here with what ``bench.measure`` calls (events, the flush memset, stream capture, graphs), so
the Timing a bench returns is built by the same code as on a GPU; only the times are made up.
"""

import ctypes
import inspect
import re
import io
import os

import numpy as np
import pytest

import cuda_magic
from cuda_magic import Error
from cuda_magic.cell import build, line_config
from cuda_magic.errors import (ArgumentError, ArgumentRangeError, BenchError, NoKernelError,
                               ShowError, quote)
from cuda_magic.runtime import Kernel
from cuda_magic.runtime.measure import bench, history as bench_history
from cuda_magic.runtime.measure.bench import Timing
from cuda_magic.runtime.measure.peaks import Device

import fake_driver as fd  # benchmarks/ (on sys.path: conftest.py)

SCALE = fd.SCALE

BIG = 10 ** 5000            # more digits than Python's int->str limit (4300)
SHORT = 400                 # characters a short message stays under

# a GPU whose L2 is 1 MiB, so the flush buffer the fake allocates stays small
SMALL_L2 = {"COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0,
            "MULTIPROCESSOR_COUNT": 132, "CLOCK_RATE": 1980000, "MEMORY_CLOCK_RATE": 3201000,
            "GLOBAL_MEMORY_BUS_WIDTH": 6016, "L2_CACHE_SIZE": 1 << 20}


class _Enum:
    def __init__(self, **values):
        self.__dict__.update(values)


class BenchDriver(fd._CountingDriver):
    """The stub driver plus what ``bench.measure`` calls; it records the order of the stream's
    commands (``log``): flushes, event records, launches, graph launches."""

    CUstream_flags = _Enum(CU_STREAM_NON_BLOCKING=1)
    CUstreamCaptureMode = _Enum(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL=1)

    def __init__(self):
        super().__init__()
        self.log, self.capturing, self.captured, self.handles = [], None, {}, 0x9000

    def _new(self):
        self.handles += 1
        return fd._Handle(self.handles)

    def cuEventCreate(self, flags):
        return (fd.CUresult(0), self._new())

    def cuEventRecord(self, e, s):
        self.log.append("event")
        return (fd.CUresult(0),)

    def cuEventSynchronize(self, e):
        return (fd.CUresult(0),)

    def cuEventElapsedTime(self, a, z):
        return (fd.CUresult(0), 0.02)

    def cuEventDestroy(self, e):
        return (fd.CUresult(0),)

    def cuMemsetD8Async(self, ptr, value, n, s):
        self.log.append("flush" if self.capturing is None else "captured flush")
        return (fd.CUresult(0),)

    def cuLaunchKernel(self, *a):
        if self.capturing is not None:
            self.capturing.append("launch")
            return (fd.CUresult(0),)
        self.log.append("launch")
        return super().cuLaunchKernel(*a)

    def cuStreamCreate(self, flags):
        return (fd.CUresult(0), self._new())

    def cuStreamDestroy(self, s):
        return (fd.CUresult(0),)

    def cuStreamBeginCapture(self, s, mode):
        self.capturing = []
        return (fd.CUresult(0),)

    def cuStreamEndCapture(self, s):
        g = self._new()
        self.captured[int(g)], self.capturing = self.capturing, None
        return (fd.CUresult(0), g)

    def cuGraphInstantiate(self, g, flags):
        ex = self._new()
        self.captured[int(ex)] = self.captured[int(g)]
        return (fd.CUresult(0), ex)

    def cuGraphLaunch(self, ex, s):
        self.log.append(("graph", tuple(self.captured[int(ex)])))
        return (fd.CUresult(0),)

    def cuGraphDestroy(self, g):
        return (fd.CUresult(0),)

    def cuGraphExecDestroy(self, ex):
        return (fd.CUresult(0),)


@pytest.fixture(scope="module")
def module():
    return build(SCALE, line_config(arch="sm_90"))


@pytest.fixture
def fake(monkeypatch):
    f = fd.install(counting=False)
    bd = BenchDriver()
    bd.saved = f.saved
    from cuda_magic.runtime import driver
    driver._state["api"] = bd
    monkeypatch.setattr(bench, "device_info", lambda: Device.from_attributes(SMALL_L2, "Fake GPU"))
    monkeypatch.setattr(bench, "nvml_reader", lambda dev: "SM clock not read (no NVML here)")
    monkeypatch.setattr(bench, "_SCRATCH", {})
    monkeypatch.setattr(bench, "_GATES", {})
    yield bd
    fd.uninstall(bd)
    bench_history.clear_history()


def scale_kernel(fake, module) -> Kernel:
    proto = module.scale
    k = Kernel(proto.name, proto.params, proto.result, proto.symbol, False)
    fake.register(k)
    return k.load()


def short(exc_info, *words):
    """The error is cuda-magic's, one short line (or a few), and names each of ``words``."""
    msg = str(exc_info.value)
    assert isinstance(exc_info.value, Error), type(exc_info.value)
    assert len(msg) < SHORT, msg
    for w in words:
        assert w in msg, (w, msg)
    return msg


# ---- the measuring calls' options ------------------------------------------------------

@pytest.mark.parametrize("call, word", [
    (lambda k: k.profile(1, 4, None, None, 1.0, 4, metrics=5), "metrics"),
    (lambda k: k.profile(1, 4, None, None, 1.0, 4, metrics=[5]), "metrics"),
    (lambda k: k.check(1, 4, None, None, 1.0, 4, options=None), "options"),
    (lambda k: k.check(1, 4, None, None, 1.0, 4, options=5), "options"),
    (lambda k: k.check(1, 4, None, None, 1.0, 4, options=[None]), "options"),
])
def test_profile_and_check_options_of_the_wrong_type(module, call, word):
    """``metrics=5`` and ``options=None`` were a raw TypeError ("'int' object is not iterable")."""
    with pytest.raises(ArgumentError) as exc:
        call(module.scale)
    short(exc, word)


# ---- integers past the int->str limit ---------------------------------------------------

def test_quote_never_fails():
    assert quote(BIG) == quote(-BIG) == "<int>"
    assert quote((1, BIG, "x")) == "(1, <int>, 'x')"       # inside a structure too
    assert quote([BIG] * 100) == "[" + "<int>, " * 8 + "...]"

    class Raises:
        def __repr__(self):
            raise RuntimeError("no repr")
    assert quote(Raises()).startswith("<") and quote([Raises()]).startswith("[<")


@pytest.mark.parametrize("launch, error, words", [
    (lambda k, x: k[1, 4](x, x, BIG, 4), ArgumentRangeError, ["'a'", "float"]),
    (lambda k, x: k[1, 4](x, x, 1.0, BIG), ArgumentRangeError, ["'n'", "int"]),
    (lambda k, x: k[1, 4](x, x, 1.0, -BIG), ArgumentRangeError, ["'n'"]),
    (lambda k, x: k[-BIG, 4](x, x, 1.0, 4), ArgumentError, ["grid"]),
    (lambda k, x: k[BIG, 4](x, x, 1.0, 4), ArgumentError, ["grid"]),
    (lambda k, x: k[1, (4, BIG)](x, x, 1.0, 4), ArgumentError, ["block"]),
    (lambda k, x: k[1, 4, BIG](x, x, 1.0, 4), ArgumentError, ["shared_mem"]),
    (lambda k, x: k[1, 4, -BIG](x, x, 1.0, 4), ArgumentError, ["shared_mem"]),
    (lambda k, x: k[1, 4, 0, BIG](x, x, 1.0, 4), ArgumentError, ["stream"]),
    (lambda k, x: k.bench(1, 4, x, x, BIG, 4), ArgumentRangeError, ["'a'"]),
    (lambda k, x: k.bench(1, 4, x, x, 1.0, 4, repeat=-BIG), BenchError, ["repeat"]),
    (lambda k, x: k.bench(1, 4, x, x, 1.0, 4, warmup=-BIG), BenchError, ["warmup"]),
    (lambda k, x: k.bench(1, 4, x, x, 1.0, 4, graph=-BIG), BenchError, ["graph"]),
    (lambda k, x: k.bench(1, 4, x, x, 1.0, 4, nbytes=BIG), BenchError, ["nbytes"]),
    (lambda k, x: k.bench(1, 4, x, x, 1.0, 4, flops=-BIG), BenchError, ["flops"]),
    (lambda k, x: k.bench(1, 4, x, x, 1.0, 4, dtype=BIG), BenchError, ["dtype"]),
    (lambda k, x: k.bench(1, 4, x, x, 1.0, 4, flush=BIG), BenchError, ["flush"]),
    (lambda k, x: k.bench(1, 4, x, x, 1.0, 4, shared_mem=BIG), ArgumentError, ["shared_mem"]),
    (lambda k, x: k.bench(1, 4, x, x, 1.0, 4, shared_mem="x"), ArgumentError, ["shared_mem"]),
    (lambda k, x: k.bench(BIG, 4, x, x, 1.0, 4), ArgumentError, ["grid"]),
    (lambda k, x: k.check(1, 4, x, x, 1.0, 4, tool=BIG), ArgumentError, ["tool"]),
    (lambda k, x: k.check(1, 4, x, x, 1.0, 4, print_limit=-BIG), ArgumentError, ["print_limit"]),
    (lambda k, x: k.profile(1, 4, x, x, 1.0, 4, set=BIG), ArgumentError, ["set"]),
    (lambda k, x: k.profile(1, 4, x, x, 1.0, 4, clock_control=BIG), ArgumentError, ["clock_control"]),
    (lambda k, x: k.profile(1, 4, x, x, 1.0, 4, metrics=[BIG]), ArgumentError, ["metrics"]),
])
def test_huge_integers_in_launch_and_bench_arguments(fake, module, launch, error, words):
    """An int of 5,001 digits anywhere a launch, bench, profile or check takes a value was a
    ValueError from quoting it ("Exceeds the limit (4300 digits) for integer string
    conversion"); now it is the short error of that value."""
    k = scale_kernel(fake, module)
    x = np.zeros(4, np.float32)
    with pytest.raises(error) as exc:
        launch(k, x)
    msg = short(exc, *words)
    assert "<int>" in msg or "'x'" in msg                       # the value, quoted
    assert fake.launches == 0 and "launch" not in fake.log


def test_bench_written_like_a_launch(fake, module):
    """k.bench[grid, block](*args) was "'method' object is not subscriptable"."""
    k = scale_kernel(fake, module)
    x = np.zeros(4, np.float32)
    t = k.bench[2, (4, 1)](x, x, 1.0, 4, repeat=3, warmup=0)
    assert t.n == 3 and t.dims == (2, 1, 1, 4, 1, 1)
    t = k.bench[1, 4, 0, None](x, x, 1.0, 4, repeat=2, warmup=0)
    assert t.n == 2
    assert k.bench(1, 4, x, x, 1.0, 4, repeat=2, warmup=0).n == 2       # the call as before
    with pytest.raises(ArgumentError) as exc:
        k.bench[1](x, x, 1.0, 4)
    assert short(exc, "scale.bench[grid, block, shared_mem, stream](*args, ...)")
    with pytest.raises(ArgumentError) as exc:
        k.profile[1, 4, 0, None]                       # profile takes no stream
    assert short(exc, "scale.profile[grid, block, shared_mem](*args, ...)")
    form = k.check[8, 32, 64]
    assert form.args[1:] == (8, 32) and form.keywords == {"shared_mem": 64}
    assert "benchmark harness" in k.bench.__doc__ and "repeat" in str(inspect.signature(k.bench))


@pytest.mark.parametrize("keyword", ["repeat", "warmup", "graph"])
def test_bench_counts_have_a_ceiling(fake, module, keyword):
    """repeat=10**9 (a typo) went on to create two billion CUDA events and never returned."""
    k = scale_kernel(fake, module)
    x = np.zeros(4, np.float32)
    with pytest.raises(BenchError) as exc:
        k.bench(1, 4, x, x, 1.0, 4, **{keyword: 10**9})
    assert short(exc, keyword, "at most 100,000")
    t = k.bench(1, 4, x, x, 1.0, 4, **{"repeat": 3, "warmup": 1, keyword: 100_000})  # the ceiling
    assert {"repeat": t.n, "warmup": t.warmup, "graph": t.graph}[keyword] == 100_000


# ---- a Module's keys -------------------------------------------------------------------

@pytest.mark.parametrize("key", [5, None, BIG, 1.5, b"scale", ["scale"], ("scale",)],
                         ids=["5", "None", "BIG", "1.5", "bytes", "list", "tuple"])
def test_module_keys_that_are_not_names(module, key):
    """``m[5]``/``m[None]`` were a TypeError from ``re.sub``; an unhashable key a TypeError from
    the dict.  Now a cuda-magic error naming the key: a TypeError (not a str) that is also the
    NoKernelError (a KeyError) a missing kernel is."""
    with pytest.raises(TypeError) as exc:
        module[key]
    assert isinstance(exc.value, NoKernelError) and isinstance(exc.value, KeyError)
    msg = short(exc, "str")
    assert quote(key, 80) in msg
    for call in (lambda: module.result_of(key), lambda: module.config_of(key),
                 lambda: module.kernel_for(key, "sm_90")):
        with pytest.raises(NoKernelError):
            call()
    with pytest.raises(NoKernelError) as exc:
        module.result_of("scale", BIG)               # an arch that is not a name: quoted
    short(exc, "<int>")
    assert module["scale"] is module.scale           # names still work


# ---- show(file=...) --------------------------------------------------------------------

def _closed():
    s = io.StringIO()
    s.close()
    return s


@pytest.mark.parametrize("make", [lambda: 5, object, io.BytesIO, _closed,
                                  lambda: open(os.devnull),                  # read-only
                                  lambda: open(os.devnull, "wb")])           # binary
def test_show_to_a_file_that_is_not_a_writable_text_stream(make):
    """``show(..., file=x)`` was an AttributeError (no ``write``), a TypeError (bytes stream),
    a ValueError (closed) or io.UnsupportedOperation (read-only); now a ShowError naming file."""
    t = Timing.from_samples([0.01] * 10)
    f = make()
    try:
        with pytest.raises(ShowError) as exc:
            cuda_magic.show(t, file=f)
        short(exc, "file=")
    finally:
        if hasattr(f, "close"):
            f.close()
    out = io.StringIO()
    cuda_magic.show(t, file=out)                     # a text stream still works
    assert out.getvalue().startswith("kernel[grid=")

    class Collect(io.TextIOBase):                    # writable() is False: only write() is defined
        def __init__(self):
            self.got = []

        def write(self, s):
            self.got.append(s)
            return len(s)
    c = Collect()
    cuda_magic.show(t, file=c)
    assert "".join(c.got) == out.getvalue()


def test_show_still_raises_its_own_errors_first():
    t = Timing.from_samples([0.01] * 10)
    with pytest.raises(ShowError, match="what="):
        cuda_magic.show(t, "nope", file=io.StringIO())
    with pytest.raises(ShowError) as exc:
        cuda_magic.show(t, BIG, file=io.StringIO())  # quoting the part cannot fail
    short(exc, "what=")


# ---- how the L2 was treated, in the Timing and every view ------------------------------

WARM_GRAPH = "warm after the first launch of each graph of 20"


def _views(t):
    out = io.StringIO()
    cuda_magic.show(t, file=out)
    return cuda_magic.view(t).text(), cuda_magic.view(t).html(), out.getvalue()


def test_bench_graph_says_the_l2_is_warm_inside_the_graph(fake, module):
    """``k.bench(graph=True)`` flushes the L2 before each graph of 20 launches only, so every
    launch but the first of a graph finds what the one before left in L2.  The Timing records
    it (``l2``) and the text, the HTML and ``show`` say it; a one-by-one bench says cold."""
    k = scale_kernel(fake, module)
    t = k.bench(1, 4, None, None, 1.0, 4, repeat=6, warmup=1, graph=True)
    timed = fake.log[fake.log.index("flush"):]
    graph = ("graph", ("launch",) * 20)
    assert timed[:4] == ["flush", "event", graph, "event"]        # one flush per graph of 20
    assert timed.count("flush") == 6 and "captured flush" not in fake.log
    assert t.l2.startswith(WARM_GRAPH) and t.to_dict()["l2"] == t.l2
    text, html, shown = _views(t)
    for view in (text, html, shown):
        assert WARM_GRAPH in view, view
    assert WARM_GRAPH in text.split("\n")[0]                     # in the headline itself
    assert ">L2</td>" in html                                    # a row of the table

    fake.log.clear()
    one = k.bench(1, 4, None, None, 1.0, 4, repeat=6, warmup=1)
    assert fake.log[fake.log.index("flush"):][:4] == ["flush", "event", "launch", "event"]
    assert one.l2.startswith("cold") and "L2 warm" not in cuda_magic.view(one).text()
    off = k.bench(1, 4, None, None, 1.0, 4, repeat=6, warmup=1, flush=False, graph=4)
    assert off.l2.startswith("warm") and "graph of 4" not in off.l2
    for view in _views(off):
        assert off.l2 in view


@pytest.mark.parametrize("kw, l2", [
    ({"flush": True, "graph": 20}, WARM_GRAPH),
    ({"flush": True, "graph": 5}, "warm after the first launch of each graph of 5"),
    ({"flush": True}, "cold"),
    ({}, "warm"),                                   # a Timing from elsewhere: nothing flushed
])
def test_timings_built_by_hand_say_how_the_l2_was_treated(kw, l2):
    t = Timing.from_samples([0.01] * 10, **kw)
    assert t.l2.startswith(l2)
    for view in _views(t):
        assert t.l2 in view


@pytest.mark.parametrize("name", [BIG, 5, ["k"]], ids=["BIG", "5", "list"])
def test_history_of_names_that_are_not_names(name):
    """``clear_history(["k"])`` was a TypeError from the dict (unhashable), ``clear_history(5)``
    did nothing; both are the HistoryError ``history(5)`` already was, quoting the value."""
    for call in (cuda_magic.history, cuda_magic.clear_history):
        with pytest.raises(cuda_magic.HistoryError) as exc:
            call(name)
        short(exc, quote(name))


# ---- timing you can defend: A/B, check=, fresh inputs, speed of light, clocks ------------------

def _planted(fake, ms_of):
    """Event pairs time whatever launch lies between them: ``ms_of(handle, i)`` for the i-th
    pair read (the stub's events say nothing of their own)."""
    order, launch, record = [], fake.cuLaunchKernel, fake.cuEventRecord
    fake.cuEventRecord = lambda e, s: (order.append(("e", int(e))), record(e, s))[1]
    fake.cuLaunchKernel = lambda f, *a: (order.append(("l", int(f))), launch(f, *a))[1]
    count = [0]

    def elapsed(a, z):
        i = len(order) - 1 - order[::-1].index(("e", int(a)))
        f = next(h for kind, h in order[i:] if kind == "l")
        count[0] += 1
        return (fd.CUresult(0), ms_of(f, count[0]))
    fake.cuEventElapsedTime = elapsed


def _two(fake, module):
    a, b = scale_kernel(fake, module), scale_kernel(fake, module)
    return a, b, int(a.handle_and_packer(0)[0]), int(b.handle_and_packer(0)[0])


def test_ab_finds_a_planted_5_percent_and_alternates_the_order(fake, module):
    import random
    a, b, ha, hb = _two(fake, module)
    r = random.Random(7)
    _planted(fake, lambda f, i: (0.95 if f == hb else 1.0) * 0.02 * r.lognormvariate(0, 0.01))
    x = np.ones(64, np.float32)
    res = cuda_magic.ab(a, b, 1, 64, x, x, 2.0, 64, rounds=12, repeat=5, warmup=0)
    assert res.decision.called == "faster" and res.faster == res.names[1]
    assert 0.93 < res.ci[0] < res.ratio < res.ci[1] < 0.97
    assert re.match(r"scale \(B\) is [45]\.\d% faster than scale \(A\) \(95% CI", res.words), res.words
    assert len(res.ratios) == 12 and res.a.n == res.b.n == 60
    # rounds alternate which kernel goes first: A B, B A, ...
    launched = [h for h in fake.log if h == "launch"]
    assert len(launched) == 120
    text = cuda_magic.display.timing.ab_text(res)
    assert text.startswith(res.words) and "12 rounds of 5 timed launches" in text
    # k.bench(against=) is the same call
    again = a.bench(1, 64, x, x, 2.0, 64, against=b, repeat=5, warmup=0)
    assert isinstance(again, cuda_magic.AB) and again.decision.called == "faster"


def test_ab_of_equal_kernels_calls_no_winner(fake, module):
    import random
    a, b, ha, hb = _two(fake, module)
    r = random.Random(3)
    _planted(fake, lambda f, i: 0.02 * r.lognormvariate(0, 0.01))
    x = np.ones(64, np.float32)
    res = cuda_magic.ab(a, b, 1, 64, x, x, 2.0, 64, rounds=20, repeat=5, warmup=0)
    assert res.decision.called == "" and res.faster is None
    assert res.words.startswith("no difference between") and "95% CI" in res.words


def test_ab_verdict_on_planted_ratios():
    """The statistics alone: a real 5% difference is found in every one of 300 planted A/Bs
    (1% noise per round median); equal kernels are called in none of 300 at 0.5% noise and
    in at most 1% of 1,000 at 2% noise (the 95% interval must clear 1 +- 0.5%)."""
    import random
    from cuda_magic.runtime.measure.ab import decide

    def ratios(seed, diff, noise, n=20):
        r = random.Random(seed)
        return [diff * r.lognormvariate(0, noise) / r.lognormvariate(0, noise) for _ in range(n)]
    assert all(decide(ratios(s, 0.95, 0.01)).called == "faster" for s in range(300))
    assert all(decide(ratios(s, 1.05, 0.01)).called == "slower" for s in range(300))
    assert not any(decide(ratios(s, 1.0, 0.005)).called for s in range(300))
    assert sum(bool(decide(ratios(s, 1.0, 0.02)).called) for s in range(1000)) <= 10
    d = decide([1.0] * 20)
    assert d.called == "" and d.ratio == d.low == d.high == 1.0


def test_ab_refuses_what_it_cannot_do(fake, module):
    a, b, *_ = _two(fake, module)
    x = np.ones(4, np.float32)
    for kw, word in (({"check": lambda *s: None}, "check="), ({"rounds": 0}, "rounds=0"),
                     ({"tolerance": 2}, "tolerance=2"), ({"bogus": 1}, "bogus")):
        with pytest.raises(BenchError) as exc:
            cuda_magic.ab(a, b, 1, 4, x, x, 1.0, 4, **kw)
        short(exc, word)
    with pytest.raises(BenchError) as exc:
        cuda_magic.ab(a, "b", 1, 4, x, x, 1.0, 4)
    short(exc, "b is str")


def _skips_after(calls: int):
    """An on_launch for SCALE that does its work only on its first ``calls`` launches."""
    done = [0]

    def on_launch(symbol, dims, params):
        done[0] += 1
        return fd.scale_on_host(symbol, dims, params) if done[0] <= calls else 0
    return on_launch


@pytest.mark.parametrize("reference", ["function", "arrays", "dict"])
def test_check_after_timing_catches_a_kernel_that_skips_work(fake, module, reference):
    """The kernel does its work on the first launch only: timing alone rewards it; check=
    launches it once more on outputs filled with a sentinel, so the skip shows."""
    k = scale_kernel(fake, module)
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    ref = {"function": lambda x, y, a, n: a * x, "arrays": 2.0 * x,
           "dict": {"reference": lambda x, y, a, n: a * x, "ulp": 0}}[reference]
    fake.on_launch = _skips_after(10 ** 9)
    good = k.bench(1, 64, x, y, 2.0, 64, repeat=4, warmup=0, check=ref)
    assert good.check is not None and bool(good.check) and not good.wrong
    assert "outputs checked after timing" in cuda_magic.display.timing.text(good)
    fake.on_launch = _skips_after(1)
    bad = k.bench(1, 64, x, y, 2.0, 64, repeat=4, warmup=0, check=ref)
    assert bad.wrong and not bool(bad.check)
    text = cuda_magic.display.timing.text(bad)
    assert text.startswith("!! OUTPUTS WRONG after timing") and "unchanged" in text
    html = cuda_magic.display.timing.html(bad)
    assert html.index("OUTPUTS WRONG") < html.index("scale[grid=") and "#c0392b" in html
    assert bad.to_dict()["check"]["passed"] is False


def test_check_takes_only_a_reference(fake, module):
    k = scale_kernel(fake, module)
    x = np.ones(4, np.float32)
    for check, word in ((5, "check=5"), ({"reference": None, "ulps": 1}, "'ulps'")):
        with pytest.raises(BenchError) as exc:
            k.bench(1, 4, x, x, 1.0, 4, check=check)
        short(exc, word)


def test_fresh_inputs_rotate_shifted_copies_of_the_const_inputs(fake, module):
    k = scale_kernel(fake, module)
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    seen = []

    def on_launch(symbol, dims, params):
        slot = [ctypes.c_void_p.from_address(params + 8 * i).value for i in range(4)]
        px = ctypes.c_uint64.from_address(slot[0]).value
        seen.append(np.ctypeslib.as_array((ctypes.c_float * 64).from_address(px)).copy())
        return 0
    fake.on_launch = on_launch
    t = k.bench(1, 64, x, y, 2.0, 64, repeat=8, warmup=0, fresh_inputs=True)
    assert len(seen) == 8
    for i in range(8):
        assert sorted(seen[i]) == sorted(x)             # the same values ...
        assert not np.array_equal(seen[i], seen[(i + 1) % 8])   # ... never as the last launch read
    assert np.array_equal(seen[0], x) and np.array_equal(x, np.arange(64))   # x itself untouched
    assert any("fresh inputs" in n and "x" in n for n in t.notes)
    with pytest.raises(BenchError) as exc:      # nothing const to shift
        k2 = scale_kernel(fake, module)
        k2.bench(1, 64, None, y, 2.0, 64, repeat=2, warmup=0, fresh_inputs=True)
    short(exc, "fresh_inputs=True", "const pointer")


def test_protocol_sol_runs_three_trials_with_a_256_mib_flush(fake, module):
    k = scale_kernel(fake, module)
    x = np.arange(64, dtype=np.float32)
    t = k.bench(1, 64, x, np.zeros(64, np.float32), 2.0, 64, protocol="sol")
    assert t.n == 150 and t.protocol == "sol" and t.flush_bytes == 256 << 20 and t.warmup == 10
    assert fake.log.count("flush") == 150
    assert "protocol 'sol'" in t.notes[0] and "3 trials of 50" in t.notes[0]
    assert any("fresh inputs" in n for n in t.notes)


def test_sol_is_the_roofline_bound_over_the_median():
    d = Device.from_attributes(SMALL_L2, "Fake GPU")           # 4,815 GB/s, 66.9 TFLOP/s FP32
    t = Timing.from_samples([0.01] * 10, nbytes=24e6, device=d)
    assert t.bound_by == "memory" and t.bound_ms == pytest.approx(24e6 / (d.peak_gbps * 1e9) * 1e3)
    assert t.sol == pytest.approx(t.bound_ms / 0.01)
    c = Timing.from_samples([0.01] * 10, nbytes=1e3, flops=5e8, device=d)
    assert c.bound_by == "compute" and c.sol == pytest.approx(5e8 / (d.peak_tflops() * 1e12) * 1e3 / 0.01)
    assert Timing.from_samples([0.01] * 10, device=d).sol is None
    assert "speed of light: " in cuda_magic.display.timing.text(t)
    assert t.to_dict()["sol"] == t.sol


def test_a_clock_change_during_the_runs_is_said():
    from cuda_magic.runtime.measure.peaks import Clocks
    t = Timing.from_samples([0.01] * 10, clocks=Clocks(1980, 1755, 1980))
    assert t.clocks.changed
    assert "the SM clock changed during the runs (1,980 → 1,755 MHz)" in \
        cuda_magic.display.timing.text(t)
    steady = Timing.from_samples([0.01] * 10, clocks=Clocks(1980, 1980, 1980))
    assert not steady.clocks.changed and "changed" not in cuda_magic.display.timing.text(steady)


def test_the_timer_is_said_and_cupti_asked_for_without_it_is_an_error(fake, module, monkeypatch):
    from cuda_magic.runtime.measure import cupti
    k = scale_kernel(fake, module)
    x = np.ones(4, np.float32)
    monkeypatch.setattr(cupti, "missing", lambda: "cupti-python is not installed (pip install "
                                                  "'cuda-magic[cupti]')")
    t = k.bench(1, 4, x, x, 1.0, 4, repeat=2, warmup=0)           # auto: events
    assert t.timer == "events" and "timed by CUDA events" in cuda_magic.display.timing.text(t)
    with pytest.raises(BenchError) as exc:
        k.bench(1, 4, x, x, 1.0, 4, repeat=2, warmup=0, timer="cupti")
    short(exc, "timer='cupti'", "cuda-magic[cupti]")


def test_verdict_of_two_benches_apart():
    """decide_apart: 5% found in each of 100 planted pairs of 50 samples at 1% noise (its
    interval holding 1.05 in about 95); equal ones called in none of 200 at 1% noise."""
    import random
    from cuda_magic.runtime.measure.ab import decide_apart

    def samples(r, scale, n=50):
        return [scale * r.lognormvariate(0, 0.01) for _ in range(n)]
    covered = 0
    for s in range(100):
        r = random.Random(s)
        d = decide_apart(samples(r, 1.0), samples(r, 1.05))
        assert d.called == "slower"
        covered += d.low <= 1.05 <= d.high
    assert covered >= 90            # a 95% interval: about 95 of 100 hold the true ratio
    calls = 0
    for s in range(200):
        r = random.Random(1000 + s)
        calls += bool(decide_apart(samples(r, 1.0), samples(r, 1.0)).called)
    assert calls == 0
    with pytest.raises(BenchError):
        decide_apart([], [1.0])
