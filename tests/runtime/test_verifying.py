"""k.verify on the CPU: the stub driver (benchmarks/fake_driver.py) runs each launch as a NumPy
function on the host memory its pointers hold, so what k.verify launches, with which inputs,
sentinels, counts and offsets, and how it judges the runs, is seen without a GPU."""

import ctypes
import re
import struct

import numpy as np
import pytest

from cuda_magic.cell import build, line_config
from cuda_magic.correctness import from_bits, to_bits
from cuda_magic.errors import ArgumentError, VerifyError
from cuda_magic.runtime import Kernel, driver
from cuda_magic.runtime.helper import worker
from cuda_magic.runtime.verify.verifying import block_tile, count_param

import fake_driver as fd  # benchmarks/ (on sys.path: conftest.py)

CELL = r'''
#include <cuda_bf16.h>
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
extern "C" __global__ void block_sum(const float* x, float* partial, int n) { }
extern "C" __global__ void axpy(const float* x, float* y, float a, int n) { }
extern "C" __global__ void to_bf16(const float* x, __nv_bfloat16* y, int n) { }
extern "C" __global__ void gather(const int* idx, const float* x, float* y, int n) { }
extern "C" __global__ void split(const float* x, float* lo, float* hi, int count) { }
'''


def category(v):
    """The category of the first failing output ("pass" when none fails)."""
    return next((o.category for o in v.outputs if not o.passed), "pass")


@pytest.fixture(scope="module")
def module():
    return build(CELL, line_config(arch="sm_90"))


class Emulator:
    """The stub driver's launches, as NumPy functions of (dims, arguments): pointer arguments
    are addresses (``view`` makes arrays of them), scalars their values.  ``seen`` records
    what each launch got."""

    def __init__(self, fake, module):
        self.fake, self.module, self.kernels, self.run = fake, module, {}, {}
        self.seen = []
        fake.on_launch = self.launch

    def kernel(self, name, fn, symbol=None):
        proto = self.module[name]
        k = Kernel(proto.name, proto.params, proto.result, symbol or proto.symbol, False)
        self.fake.register(k)
        self.kernels[k.symbol] = k
        self.run[k.symbol] = fn
        return k.load()

    def launch(self, symbol, dims, params):
        k = self.kernels[symbol]
        values = []
        for i, p in enumerate(k.params):
            slot = ctypes.c_void_p.from_address(params + 8 * i).value
            values.append(ctypes.c_uint64.from_address(slot).value if p.pointer else
                          struct.unpack(p.scalar.code, ctypes.string_at(slot, p.scalar.size))[0])
        self.seen.append((symbol, dims, values))
        self.run[symbol](dims, *values)
        return 0


def view(addr, n, dtype="float32"):
    dt = np.dtype(dtype)
    return np.frombuffer((ctypes.c_char * (n * dt.itemsize)).from_address(addr), dt)


@pytest.fixture
def emu(module):
    fake = fd.install(counting=True)
    yield Emulator(fake, module)
    fd.uninstall(fake)


def scale_as(behaviour):
    """A scale(x, y, a, n) launch that writes y as ``behaviour(x, a, n, launch)`` says."""
    count = {"launch": 0}

    def run(dims, px, py, a, n):
        x, y = view(px, n), view(py, n)
        count["launch"] += 1
        behaviour(x, y, a, n, count["launch"])
    return run


def ok(x, y, a, n, i):
    y[:] = np.float32(a) * x


def ref_scale(x, y, a, n):
    return np.float32(a) * x


X = np.linspace(-3, 3, 1000, dtype=np.float32)


def test_a_correct_kernel_passes_and_the_arguments_are_not_written(emu):
    k = emu.kernel("scale", scale_as(ok))
    x, y = X.copy(), np.full(1000, 7, np.float32)
    v = k.verify(4, 256, x, y, 2.0, 1000, reference=ref_scale)
    assert v.passed and category(v) == "pass" and v.names == ["y"]
    assert v.runs == 2 and v.deterministic is True and v.spread == {"y": 0.0}
    assert emu.fake.launches == 2
    np.testing.assert_array_equal(x, X)
    assert (y == 7).all()
    same = k.verify[4, 256](x, y, 2.0, 1000, reference=ref_scale, runs=3)   # the launch form
    assert same.passed and same.runs == 3 and emu.fake.launches == 5
    assert "sentinel" in k.verify.__doc__ and "edge" in k.verify.__doc__


@pytest.mark.parametrize("behaviour, want", [
    (lambda x, y, a, n, i: None, "unchanged"),
    (lambda x, y, a, n, i: y.fill(0), "zeros"),
    (lambda x, y, a, n, i: y.__setitem__(slice(None), x), "copy"),
    (lambda x, y, a, n, i: y.fill(3.0), "constant"),
    (lambda x, y, a, n, i: y.__setitem__(slice(0, n - 1), np.float32(a) * x[:n - 1]), "tail"),
    (lambda x, y, a, n, i: y.__setitem__(slice(None), np.float32(a) * x[::-1]), "wrong"),
])
def test_the_sentinel_makes_trivial_outputs_fail(emu, behaviour, want):
    k = emu.kernel("scale", scale_as(behaviour))
    v = k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale)
    assert not v.passed and category(v) == want, str(v)


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_outputs_start_from_the_sentinel_and_inputs_are_given_random_or_edge(emu):
    got = {}

    def record(x, y, a, n, i):
        got.setdefault("x", []).append(x.copy())
        got.setdefault("y", []).append(y.copy())
        y[:] = np.float32(a) * x
    k = emu.kernel("scale", scale_as(record))
    k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale,
             inputs="given")
    assert len(got["y"]) == 2 and all((y.view(np.uint32) == 0x7FDA5A5A).all() for y in got["y"])
    np.testing.assert_array_equal(got["x"][0], X)
    seen = {}
    for mode, seed in (("random", 0), ("random", 0), ("random", 1), ("edge", 0)):
        got.clear()
        k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale,
                 inputs=mode, seed=seed)
        x = got["x"][0]
        np.testing.assert_array_equal(got["x"][1].view(np.uint32), x.view(np.uint32))  # both runs
        assert not np.array_equal(x, X)
        seen.setdefault((mode, seed), x)
        if mode == "random":
            np.testing.assert_array_equal(x, seen[("random", seed)])     # the seed decides
            assert np.isfinite(x).all()
        else:
            assert np.isnan(x).any() and np.isinf(x).any() and (x == 0).any()
    assert not np.array_equal(seen[("random", 0)], seen[("random", 1)])
    got.clear()
    k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale,
             inputs={"x": "edge"}, offset=False)
    assert np.isnan(got["x"][0]).any()


def test_random_integers_stay_in_the_range_given(emu):
    got = {}

    def run(dims, pidx, px, py, n):
        idx, x, y = view(pidx, n, np.int32), view(px, 50), view(py, n)
        got["idx"] = idx.copy()
        y[:] = x[idx]
    k = emu.kernel("gather", run)
    idx = np.arange(1000, dtype=np.int32) % 50
    v = k.verify(4, 256, idx, np.arange(50, dtype=np.float32), np.zeros(1000, np.float32), 1000,
                 reference=lambda i, x, y, n: x[i])
    assert v.passed
    assert got["idx"].min() >= 0 and got["idx"].max() <= 49 and not np.array_equal(got["idx"], idx)


def test_reference_forms(emu, module):
    def run(dims, px, plo, phi, count):
        x, lo, hi = view(px, count), view(plo, count), view(phi, count)
        lo[:], hi[:] = np.minimum(x, 0), np.maximum(x, 0)
    k = emu.kernel("split", run)
    args = (X, np.zeros(1000, np.float32), np.zeros(1000, np.float32), 1000)

    def in_place(x, lo, hi, count):
        lo[:], hi[:] = np.minimum(x, 0), np.maximum(x, 0)
    for ref in (lambda x, lo, hi, c: (np.minimum(x, 0), np.maximum(x, 0)),
                lambda x, lo, hi, c: {"hi": np.maximum(x, 0), "lo": np.minimum(x, 0)},
                lambda x, lo, hi, c: [np.minimum(x, 0).reshape(1, -1), np.maximum(x, 0)],
                in_place):
        v = k.verify(4, 256, *args, reference=ref)
        assert v.passed and v.names == ["lo", "hi"], str(v)
    swapped = k.verify(4, 256, *args, reference=lambda x, lo, hi, c: (np.maximum(x, 0),
                                                                      np.minimum(x, 0)))
    assert not swapped.passed
    one = k.verify(4, 256, *args, reference=lambda x, lo, hi, c: np.maximum(x, 0), outputs="hi")
    assert one.passed and one.names == ["hi"]
    for bad, pattern in [
        (lambda x, lo, hi, c: np.minimum(x, 0), r"one value for 2 outputs \(lo, hi\)"),
        (lambda x, lo, hi, c: (x, x, x), r"3 values for 2 outputs"),
        (lambda x, lo, hi, c: {"lo": x}, r"no 'hi'"),
        (lambda x, lo, hi, c: {"lo": x, "hi": x, "mid": x}, r"'mid', not an output"),
        (lambda x, lo, hi, c: (x[:999], x), r"gave 'lo' of shape \(999,\); the output 'lo' has "
                                            r"shape \(1000,\)"),
    ]:
        with pytest.raises(VerifyError, match=pattern):
            k.verify(4, 256, *args, reference=bad)


def test_bad_outputs_and_parameters_are_named(emu):
    k = emu.kernel("scale", scale_as(ok))
    args = (X, np.zeros(1000, np.float32), 2.0, 1000)
    for kw, pattern in [
        (dict(outputs=["z"]), r"'z' is not a parameter of scale \(its parameters: x, y, a, n\)"),
        (dict(outputs=["a"]), r"'a' \(float a\) is passed by value"),
        (dict(outputs=[]), r"at least one"),
        (dict(runs=0), r"runs=0"),
        (dict(inputs="noise"), r"inputs='noise'"),
        (dict(inputs={"q": "edge"}), r"'q' is not a pointer parameter of scale"),
        (dict(inputs={"x": "loud"}), r"inputs\['x'\]='loud'"),
        (dict(inplace=["x"]), r"inplace: 'x' is not one of the outputs \(y\)"),
        (dict(reference=3), r"reference=3: give a function"),
        (dict(ulp=1, rtol=1e-3), r"ulp= and rtol="),
    ]:
        kw.setdefault("reference", ref_scale)
        with pytest.raises(VerifyError, match=pattern):
            k.verify(4, 256, *args, **kw)
    with pytest.raises(VerifyError, match="outputs: 'y' was given float"):
        k.verify(4, 256, X, 1.5, 2.0, 1000, reference=ref_scale, outputs=["y"])
    with pytest.raises(VerifyError, match="no non-const pointer parameter given an array"):
        k.verify(4, 256, X, None, 2.0, 1000, reference=ref_scale)
    with pytest.raises(ArgumentError, match=r"takes 4 arguments"):
        k.verify(4, 256, X, reference=ref_scale)
    assert emu.fake.launches == 0


def test_in_place_outputs_start_from_input_values(emu):
    def run(dims, px, py, a, n):
        x, y = view(px, n), view(py, n)
        y[:] = np.float32(a) * x + y
    k = emu.kernel("axpy", run)
    y0 = np.linspace(5, 6, 1000, dtype=np.float32)
    ref = lambda x, y, a, n: np.float32(a) * x + y      # noqa: E731
    v = k.verify(4, 256, X, y0, 2.0, 1000, reference=ref, inplace=["y"], inputs="given")
    assert v.passed, str(v)
    r = k.verify(4, 256, X, y0, 2.0, 1000, reference=ref, inplace="y")      # y random too
    assert r.passed
    # the kernel reads y's start: a reference that ignores it fails
    assert not k.verify(4, 256, X, y0, 2.0, 1000, reference=lambda x, y, a, n: np.float32(a) * x
                        + np.float32(5), inplace="y", inputs="given").passed


def test_runs_that_differ(emu):
    def noisy(step):
        def b(x, y, a, n, i):
            y[:] = np.float32(a) * x
            y.view(np.int32)[::7] += step * (i % 2)      # odd launches off by `step` ULPs
        return b
    k = emu.kernel("scale", scale_as(noisy(1)))
    v = k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale, runs=4)
    assert v.passed and v.deterministic is False and v.spread["y"] == 1.0     # atomics order
    k = emu.kernel("scale", scale_as(noisy(1 << 20)))
    v = k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale, runs=2)
    assert not v.passed and category(v) == "nondeterministic" and v.deterministic is False
    assert "differs between runs" in v["y"].reason and v.spread["y"] >= 1 << 20
    # fails in every run, the runs within the rule of each other: not a race, the failure's own
    def wrong_but_close(x, y, a, n, i):
        y[:] = np.float32(a) * x[::-1]
        y.view(np.int32)[::7] += i % 2
    k = emu.kernel("scale", scale_as(wrong_but_close))
    v = k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale)
    assert v.deterministic is False and category(v) == "wrong"
    assert k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale,
                    runs=1).deterministic is None


def test_edge_passes_cut_the_count_and_offset_the_inputs(emu):
    got = []

    def record(x, y, a, n, i):
        got.append(n)
        y[:] = np.float32(a) * x
    k = emu.kernel("scale", scale_as(record))
    with np.errstate(over="ignore", invalid="ignore"):
        v = k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale,
                     inputs="edge")
    assert v.passed, str(v)
    assert v.names == ["y", "y (n=769)", "y (x +1 element)"]      # 3 * 256 + 1
    assert got == [1000, 1000, 769, 999]
    (*_, values) = emu.seen[-1]
    assert values[0] % 16 == 4 and values[3] == 999          # x one float past an aligned address

    def past_n(x, y, a, n, i):
        m = min(n + 1, 1000)                                  # writes y[n] too
        y2 = view(y.ctypes.data, m)
        y2[:] = np.float32(a) * view(x.ctypes.data, m)
    k = emu.kernel("scale", scale_as(past_n))
    with np.errstate(over="ignore", invalid="ignore"):
        v = k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale,
                     inputs="edge", offset=False)
    assert v["y"].passed and not v["y (n=769)"].passed
    assert v["y (n=769)"].mismatches == 1 and v["y (n=769)"].worst == (769,)
    assert v.names == ["y", "y (n=769)"]


def test_an_offset_input_that_faults_is_a_failure(emu):
    aligned = []

    def run(dims, px, py, a, n):
        aligned.append(px % 16 == 0)
        view(py, n)[:] = np.float32(a) * view(px, n)
    k = emu.kernel("scale", run)
    launch = emu.fake.on_launch

    def faulting(symbol, dims, params):          # as a float4 load of a misaligned x would
        r = launch(symbol, dims, params)
        return r if aligned[-1] else 700
    emu.fake.on_launch = faulting
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            v = k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale,
                         inputs="edge")
        finally:
            driver._state["lost"] = None          # the stub's CUDA is not really lost
    off = v["y (x +1 element)"]
    assert not off.passed and off.category == "wrong"
    assert "x one element (4 bytes) past an aligned address failed" in off.reason
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in off.reason
    assert v["y"].passed and v["y (n=769)"].passed and aligned == [True, True, True, False]


def test_partial_sums_have_a_tile_per_block(emu):
    def run(dims, px, pp, n):
        x, part = view(px, n), view(pp, dims[0])
        padded = np.zeros(dims[0] * 256, np.float64)
        padded[:n] = x
        part[:] = padded.reshape(-1, 256).sum(axis=1)
        part[-1] += 1.0                                  # the last block wrong
    k = emu.kernel("block_sum", run)
    ref = lambda x, p, n: np.add.reduceat(x.astype(np.float64), np.arange(0, n, 256))  # noqa: E731
    v = k.verify(4, 256, X, np.zeros(4, np.float32), 1000, reference=ref, reduction=256)
    assert category(v) == "tail" and v["partial"].tile == (1,)
    assert v.map().tolist() == [0, 0, 0, 1]


def test_bit_patterns_of_a_format_named_by_the_parameter(emu):
    def run(dims, px, py, n):
        view(py, n, np.uint16)[:] = to_bits(view(px, n), "bfloat16")
    k = emu.kernel("to_bf16", run)
    v = k.verify(4, 256, X, np.zeros(1000, np.uint16), 1000, reference=lambda x, y, n: x)
    assert v.passed and v["y"].dtype == "bfloat16", str(v)
    got = []

    def record(dims, px, py, n):
        got.append(view(py, n, np.uint16).copy())
        view(py, n, np.uint16)[:] = 0x3F80             # 1.0 everywhere
    k = emu.kernel("to_bf16", record)
    v = k.verify(4, 256, X, np.zeros(1000, np.uint16), 1000, reference=lambda x, y, n: x)
    assert category(v) == "constant"
    assert (got[0] == 0x7FDA).all() and np.isnan(from_bits(got[0], "bfloat16")).all()


def test_another_kernel_as_the_reference(emu):
    k = emu.kernel("scale", scale_as(ok))
    twice = emu.kernel("scale", scale_as(lambda x, y, a, n, i: y.__setitem__(slice(None), x * 2)),
                       symbol="scale_twice")
    assert k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=twice).passed
    assert not k.verify(4, 256, X, np.zeros(1000, np.float32), 3.0, 1000,
                        reference=twice).passed
    assert k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000,
                    reference=twice[8, 128]).passed
    assert [d for sym, d, _ in emu.seen if sym == "scale_twice"][-1] == (8, 1, 1, 128, 1, 1)
    other = emu.kernel("block_sum", lambda *a: None)
    with pytest.raises(VerifyError, match="takes 3 arguments, scale 4"):
        k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=other)


def test_in_the_helper_process_numpy_arguments_and_no_offset_launch(emu, monkeypatch):
    k = emu.kernel("scale", scale_as(ok))
    calls = []

    def call(kernel, op, dims, shared, args, attrs):
        calls.append((op, dims, [type(a).__name__ for a in args], attrs))
        x, y, a, n = args
        y[:n] = np.float32(a) * x[:n]
    monkeypatch.setattr(worker, "call", call)
    monkeypatch.setitem(driver._state, "isolated", True)
    with np.errstate(over="ignore", invalid="ignore"):
        v = k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale,
                     inputs="edge")
    assert v.passed and v.names == ["y", "y (n=769)"]
    assert [c[0] for c in calls] == ["run"] * 3 and emu.fake.launches == 0
    assert all(c[2] == ["ndarray", "ndarray", "float", "int"] and c[3] is None for c in calls)


def test_block_tiles():
    assert block_tile((1000,), (4, 1, 1), (256, 1, 1)) == (256,)
    assert block_tile((1000,), (2,), (256,)) == (256,)           # grid-stride
    assert block_tile((40,), (40,), (256,)) == (1,)              # one element per block
    assert block_tile((1,), (40,), (256,)) is None
    assert block_tile((37, 300), (37,), (256,)) == (1, 300)      # a row per block
    assert block_tile((70, 100), (4, 3), (32, 8)) == (32, 32)    # a (32, 8) block, 32 x 32 tile
    assert block_tile((70, 100), (3, 4), (32, 8)) == (32, 32)    # a transpose of (100, 70)
    assert block_tile((64, 64), (4, 4), (16, 16)) == (16, 16)
    assert block_tile((5, 64, 64), (4, 4), (16, 16)) == (5, 16, 16)
    assert block_tile((100,), (2,), (256,)) is None               # does not map


def test_count_param(emu, module):
    k = emu.kernel("scale", scale_as(ok))
    assert count_param(k, (X, X, 2.0, 1000)) == 3
    assert count_param(emu.kernel("split", lambda *a: None), (X, X, X, 10)) == 3


@pytest.mark.parametrize("kw, message", [
    (dict(outputs=5), "outputs=5: name the parameters the kernel writes: a name or a list of names"),
    (dict(outputs=["y", 5]), "outputs=['y', 5]"),
    (dict(inplace=5), "inplace=5: name the outputs the kernel also reads"),
    (dict(tile=1.5), "tile=1.5: give the tile shape"),
    (dict(tile={"y": 1.5}), "tile=1.5: give the tile shape"),
    (dict(tile=(0,)), "tile=(0,): give the tile shape, a tuple of ints from 1 to 2**62"),
    (dict(seed=-1), "seed=-1: give an int >= 0"),
    (dict(seed=1.5), "seed=1.5: give an int >= 0"),
    (dict(runs=10 ** 9), "runs=1000000000: at most 100,000 launches"),
    (dict(runs=10 ** 5000), "runs=<int>: at most 100,000 launches"),
    (dict(runs=1.5), "runs=1.5: the number of launches must be an int >= 1"),
    (dict(offset="no"), "offset='no': True"),
    (dict(ulp=10 ** 400), "ulp=1000000"),
    (dict(reduction=10 ** 400), "reduction=1000000"),
])
def test_keywords_are_checked_before_the_gpu_is_touched(emu, monkeypatch, kw, message):
    k = emu.kernel("scale", scale_as(ok))
    allocs, called = [], []
    alloc = emu.fake.cuMemAlloc
    monkeypatch.setattr(emu.fake, "cuMemAlloc", lambda n: (allocs.append(n), alloc(n))[1])

    def reference(x, y, a, n):
        called.append(1)
        return np.float32(a) * x
    with pytest.raises(VerifyError, match=re.escape(message)) as e:
        k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=reference, **kw)
    assert len(str(e.value)) < 200
    assert emu.fake.launches == 0 and allocs == [] and called == []


def test_runs_up_to_the_cap_are_taken(emu):
    from cuda_magic.runtime.measure.options import MAX_COUNT
    assert MAX_COUNT == 100_000
    k = emu.kernel("scale", scale_as(ok))
    v = k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale,
                 runs=np.int64(3), tile=np.int64(256), seed=np.int64(10 ** 18))
    assert v.passed and v.runs == 3 and type(v.runs) is int and emu.fake.launches == 3


def test_determinism_compares_bits(emu):
    """NaN outputs of a deterministic kernel agree (NaN != NaN as values); -0 where another run
    wrote +0 does not (-0 == +0 as values)."""
    x = X.copy()
    x[::10] = np.nan
    k = emu.kernel("scale", scale_as(ok))
    v = k.verify(4, 256, x, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale,
                 inputs="given", runs=3)
    assert v.passed and v.deterministic is True and v.spread == {"y": 0.0}, str(v)
    assert "3 runs, bit for bit" in str(v)

    def signed_zero(x, y, a, n, i):
        y[:] = np.float32(a) * x
        y[::100] = np.float32(-0.0) if i % 2 else np.float32(0.0)
    k = emu.kernel("scale", scale_as(signed_zero))
    z = X.copy()
    z[::100] = 0
    v = k.verify(4, 256, z, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale,
                 inputs="given", runs=2)
    assert v.passed and v.deterministic is False and v.spread == {"y": 0.0}, str(v)
    assert "NOT bit for bit" in str(v)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_bits_equal_is_bitwise(kind):
    from cuda_magic.arrays import bits_equal
    nan = np.array([1.0, np.nan, 3.0], np.float32)
    zero, minus = np.array([0.0, 1.0], np.float32), np.array([-0.0, 1.0], np.float32)
    other_nan = nan.copy()
    other_nan.view(np.uint32)[1] ^= 1                 # another NaN payload: other bits
    if kind == "torch":
        import torch
        nan, zero, minus, other_nan = (torch.from_numpy(a) for a in (nan, zero, minus, other_nan))
    assert bits_equal(nan, nan.clone() if kind == "torch" else nan.copy())
    assert not bits_equal(zero, minus)
    assert not bits_equal(nan, other_nan)


def test_many_runs_are_judged_as_they_come(emu, monkeypatch):
    """A racy kernel's runs are not kept: each is judged when it ends, so the launch arrays
    alive at each launch stay as many however many runs there were."""
    import gc
    import weakref
    from cuda_magic.runtime.verify import verifying
    made, live = [], []
    like = verifying.like
    monkeypatch.setattr(verifying, "like", lambda *a: (r := like(*a), made.append(weakref.ref(r)))[0])

    def racy(x, y, a, n, i):
        gc.collect()
        live.append(sum(r() is not None for r in made))
        y[:] = np.float32(a) * x
        y[i % 1000] += 1                              # a different element off in each run
    k = emu.kernel("scale", scale_as(racy))
    v = k.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000, reference=ref_scale, runs=12)
    assert not v.passed and category(v) == "nondeterministic" and v.deterministic is False
    assert len(live) == 12 and max(live[2:]) == min(live[2:]), live


# --- on the GPU: NumPy, CuPy and PyTorch arguments, the helper process ------------------------

GPU_CELL = r'''
#include <cuda_bf16.h>
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
extern "C" __global__ void scale_tail(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 1) y[i] = a * x[i];
}
extern "C" __global__ void to_bf16(const float* x, __nv_bfloat16* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16(x[i]);
}
'''


@pytest.fixture(scope="module")
def gpu():
    return build(GPU_CELL, line_config())


@pytest.mark.gpu
def test_numpy_arguments_on_the_gpu(gpu):
    x, y = X.copy(), np.zeros(1000, np.float32)
    v = gpu.scale.verify(4, 256, x, y, 2.0, 1000, reference=ref_scale)
    assert v.passed and v.deterministic and v.where == "host", str(v)
    with np.errstate(all="ignore"):
        e = gpu.scale.verify[4, 256](x, y, 2.0, 1000, reference=ref_scale, inputs="edge")
    assert e.passed and e.names == ["y", "y (n=769)", "y (x +1 element)"], str(e)
    t = gpu.scale_tail.verify(4, 256, x, y, 2.0, 1000, reference=ref_scale)
    assert category(t) == "tail" and t["y"].mismatches == 1
    assert (y == 0).all() and np.array_equal(x, X)
    b = gpu.to_bf16.verify(4, 256, x, np.zeros(1000, np.uint16), 1000, reference=lambda x, y, n: x)
    assert b.passed and b["y"].dtype == "bfloat16"


@pytest.mark.gpu
def test_cupy_arguments_are_judged_on_the_device(gpu):
    cupy = pytest.importorskip("cupy")
    x, y = cupy.asarray(X), cupy.zeros(1000, cupy.float32)
    seen = []

    def ref(x, y, a, n):
        seen.append(type(x).__module__)
        return np.float32(a) * x
    v = gpu.scale.verify(4, 256, x, y, 2.0, 1000, reference=ref)
    assert v.passed and v.where == "device" and seen == ["numpy"], str(v)
    with np.errstate(all="ignore"):
        e = gpu.scale.verify(4, 256, x, y, 2.0, 1000, reference=ref_scale, inputs="edge")
    assert e.passed and len(e.names) == 3, str(e)
    assert category(gpu.scale_tail.verify(4, 256, x, y, 2.0, 1000, reference=ref_scale)) == "tail"
    assert int((y != 0).sum()) == 0


@pytest.mark.gpu
def test_torch_arguments_and_a_bf16_output(gpu):
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(X).cuda()
    y = torch.zeros(1000, dtype=torch.float32, device="cuda")
    seen = []

    def ref(x, y, a, n):
        seen.append((type(x).__module__, str(x.device)))
        return a * x
    v = gpu.scale.verify(4, 256, x, y, 2.0, 1000, reference=ref)
    assert v.passed and seen == [("torch", "cpu")], str(v)
    yb = torch.zeros(1000, dtype=torch.bfloat16, device="cuda")
    b = gpu.to_bf16.verify(4, 256, x, yb, 1000, reference=lambda x, y, n: x.to(torch.bfloat16))
    assert b.passed and b["y"].dtype == "bfloat16", str(b)
    assert category(gpu.scale_tail.verify(4, 256, x, y, 2.0, 1000, reference=ref_scale)) == "tail"


@pytest.mark.gpu
def test_in_the_helper_process_on_the_gpu(gpu):
    from cuda_magic.runtime import isolate
    isolate(True)
    try:
        with np.errstate(all="ignore"):
            v = gpu.scale.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000,
                                 reference=ref_scale, inputs="edge")
        assert v.passed and v.names == ["y", "y (n=769)"], str(v)
        assert category(gpu.scale_tail.verify(4, 256, X, np.zeros(1000, np.float32), 2.0, 1000,
                                              reference=ref_scale)) == "tail"
    finally:
        isolate(False)
