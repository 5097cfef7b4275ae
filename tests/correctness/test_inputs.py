"""Input generation for checking kernels: random and edge-case values per number format, the
output sentinel; cross-checked against ml_dtypes' decoding and rounding."""

import ml_dtypes
import numpy as np
import pytest

from cuda_magic.correctness import inputs
from cuda_magic.correctness.formats import FORMATS, from_bits
from cuda_magic.errors import DtypeError

FLOATS = ["float64", "float32", "float16", "bfloat16", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1"]
ML = {"bfloat16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
      "e5m2": ml_dtypes.float8_e5m2, "e2m3": ml_dtypes.float6_e2m3fn,
      "e3m2": ml_dtypes.float6_e3m2fn, "e2m1": ml_dtypes.float4_e2m1fn,
      "float16": np.float16, "float32": np.float32, "float64": np.float64}
INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def values(a, fmt):
    """float64 values of what the generators return for ``fmt``."""
    if a.dtype.kind == "f" and a.dtype.name in ("float16", "float32", "float64"):
        return a.astype(np.float64)
    return from_bits(a.view(FORMATS[fmt].container), fmt)


def bits(a):
    return a.view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("fmt", FLOATS)
def test_random_is_normal_values_rounded_to_nearest_even(fmt):
    a = inputs.random((64, 33), fmt, 7)
    assert a.shape == (64, 33)
    draws = np.random.default_rng(7).standard_normal(64 * 33)
    want = draws.astype(ML[fmt])          # ml_dtypes rounds to nearest even
    if fmt in ("e2m3", "e3m2", "e2m1"):   # saturating: no infinities to overflow to
        want = np.clip(draws, -FORMATS[fmt].max, FORMATS[fmt].max).astype(ML[fmt])
    np.testing.assert_array_equal(values(a, fmt).ravel(), want.astype(np.float64))
    v = values(a, fmt)
    assert np.isfinite(v).all()
    if fmt in ("float64", "float32", "float16", "bfloat16"):
        assert abs(v.mean()) < 0.1 and 0.9 < v.std() < 1.1


@pytest.mark.parametrize("fmt", FLOATS + ["e2m1x2"])
def test_the_same_seed_gives_the_same_bits_and_another_seed_others(fmt):
    for make in (inputs.random, inputs.edge):
        a, b, c = make(500, fmt, 3), make(500, fmt, 3), make(500, fmt, 4)
        assert bits(a).tobytes() == bits(b).tobytes(), make.__name__
        assert bits(a).tobytes() != bits(c).tobytes(), make.__name__
        gen = np.random.default_rng(3)
        assert bits(make(500, fmt, gen)).tobytes() == bits(a).tobytes()   # a Generator too
    assert bits(inputs.random(50, fmt)).tobytes() == bits(inputs.random(50, fmt, 0)).tobytes()


def test_random_with_a_range_is_uniform_in_it():
    a = inputs.random(10000, "float32", 1, low=2.0, high=3.0)
    assert a.min() >= 2.0 and a.max() <= 3.0 and abs(a.mean() - 2.5) < 0.02
    big = inputs.random(1000, "e2m1", 1, low=-100, high=100)       # saturates at +-6
    assert set(np.unique(np.abs(values(big, "e2m1")))) <= {0, 0.5, 1, 1.5, 2, 3, 4, 6}
    assert np.abs(values(big, "e2m1")).max() == 6


@pytest.mark.parametrize("dtype", INTS)
def test_random_integers_in_range(dtype):
    a = inputs.random(5000, dtype, 2)
    assert a.dtype == dtype
    info = np.iinfo(dtype)
    assert a.min() >= max(info.min, -100) and a.max() <= min(info.max, 200)
    assert len(np.unique(a)) > 50
    r = inputs.random(5000, dtype, 2, low=3, high=9)
    assert r.min() == 3 and r.max() == 9              # both ends included


def test_random_bool_and_bad_arguments():
    b = inputs.random(1000, bool, 0)
    assert b.dtype == bool and 300 < b.sum() < 700
    with pytest.raises(DtypeError, match="low=5, high=2"):
        inputs.random(3, np.int32, 0, low=5, high=2)
    with pytest.raises(DtypeError, match="rng="):
        inputs.random(3, "float32", "seed")
    with pytest.raises(DtypeError, match="shape="):
        inputs.random((2, -1), "float32")
    with pytest.raises(DtypeError, match="complex128|not a number format"):
        inputs.edge(3, np.complex128)


@pytest.mark.parametrize("fmt", FLOATS)
def test_edge_holds_every_landmark_and_the_mix(fmt):
    f = FORMATS[fmt]
    a = inputs.edge(20000, fmt, 5)
    marks = inputs.landmarks(fmt)
    assert set(bits(marks).tolist()) <= set(bits(a).tolist())
    v = values(a, fmt)
    nan, inf = np.isnan(v), np.isinf(v)
    zero = v == 0
    finite = np.isfinite(v)
    sub = finite & ~zero & (np.abs(v) < f.tiny)
    huge = finite & (np.abs(v) >= f.max / 2)
    assert 0.05 < zero.mean() < 0.2 and sub.mean() > 0.05 and huge.mean() > 0.05
    assert (np.signbit(v[zero])).any() and (~np.signbit(v[zero])).any()       # -0 and +0
    if f.inf:
        assert 0.02 < inf.mean() < 0.06 and (v[inf] < 0).any() and (v[inf] > 0).any()
    else:
        assert not inf.any()
    if f.nan == "none":
        assert not nan.any()
    else:
        assert 0.02 < nan.mean() < 0.06
    if fmt in ("float32", "float64", "bfloat16", "float16", "e5m2", "e4m3"):
        mags = np.abs(v[finite & ~zero])                # tiny and huge magnitudes both
        assert mags.min() < f.tiny and mags.max() > f.max / 2
        e = np.log2(mags[mags >= f.tiny])
        assert e.max() - e.min() > 0.9 * (2 * f.emax)   # spread over the exponent range
    if f.bits < 8:
        assert bits(a).max() < 1 << f.bits


def test_edge_nans_are_the_formats_own():
    e4 = bits(inputs.edge(5000, "e4m3", 1))
    assert set(e4[np.isnan(from_bits(e4, "e4m3"))].tolist()) <= {0x7F, 0xFF}
    e5 = bits(inputs.edge(5000, "e5m2", 1))
    assert ((e5[np.isnan(from_bits(e5, "e5m2"))] & 0x7C) == 0x7C).all()


def test_landmarks_of_float32():
    m = inputs.landmarks("float32")
    f = np.finfo(np.float32)
    for want in (0.0, f.smallest_subnormal, np.nextafter(f.tiny, 0), f.tiny, 1.0,
                 np.nextafter(np.float32(1), 2), np.nextafter(np.float32(1), 0), f.max, np.inf):
        assert want in m and -want in m
    assert np.isnan(m).sum() == 2 and np.signbit(m[np.isnan(m)]).tolist() == [False, True]
    z = m[m == 0]
    assert sorted(np.signbit(z).tolist()) == [False, True]


@pytest.mark.parametrize("dtype", INTS)
def test_edge_integers_hold_the_extremes(dtype):
    info = np.iinfo(dtype)
    a = inputs.edge(2000, dtype, 1)
    assert a.dtype == dtype
    for v in (info.min, info.max, 0, 1, info.max - 1):
        assert (a == v).any()
    if info.min < 0:
        assert (a == -1).any() and (a == info.min + 1).any()
    assert ((a == info.min) | (a == info.max)).mean() > 0.1      # half of them landmarks
    small = inputs.edge(3, dtype, 1)
    assert small.size == 3 and set(small.tolist()) <= set(inputs.landmarks(dtype).tolist())


@pytest.mark.parametrize("fmt", ["bfloat16", "e4m3", "e5m2", "e2m1"])
def test_ml_dtypes_in_ml_dtypes_out(fmt):
    d = np.dtype(ML[fmt])
    for make in (inputs.random, inputs.edge, inputs.sentinel):
        a = make((8, 4), d) if make is inputs.sentinel else make((8, 4), d, 2)
        assert a.dtype == d and a.shape == (8, 4)
        if make is not inputs.sentinel:        # the same codes as the format name gives
            assert a.view(np.uint8 if d.itemsize == 1 else np.uint16).tobytes() == \
                make((8, 4), fmt, 2).tobytes()


def test_packed_fp4_is_two_codes_a_byte_low_nibble_first():
    p = inputs.edge(300, "e2m1x2", 9)
    assert p.dtype == np.uint8 and p.shape == (300,)
    unpacked = np.stack([p & 0xF, p >> 4], axis=-1).reshape(-1)
    np.testing.assert_array_equal(from_bits(p, "e2m1x2"), from_bits(unpacked, "e2m1"))
    assert set(inputs.landmarks("e2m1").view(np.uint8).tolist()) <= set(unpacked.tolist())
    r = inputs.random((4, 6), "e2m1x2", 1)
    assert r.shape == (4, 6)
    assert inputs.sentinel(3, "e2m1x2").tolist() == [0xFF] * 3


def test_the_sentinel_bits():
    assert bits(inputs.sentinel(2, "float32")).tolist() == [0x7FDA5A5A] * 2
    assert bits(inputs.sentinel(1, "float16")).tolist() == [0x7E5A]
    assert inputs.sentinel(1, "bfloat16").tolist() == [0x7FDA]
    assert bits(inputs.sentinel(1, "float64")).tolist() == [0x7FFA5A5A5A5A5A5A]
    assert inputs.sentinel(1, "e4m3").tolist() == [0x7F]
    assert inputs.sentinel(1, "e5m2").tolist() == [0x7E]
    for fmt in ("float64", "float32", "float16", "bfloat16", "e4m3", "e5m2"):
        assert np.isnan(values(inputs.sentinel(4, fmt), fmt)).all(), fmt
    for fmt in ("e2m3", "e3m2", "e2m1"):          # no NaN: the most negative value
        assert (values(inputs.sentinel(4, fmt), fmt) == -FORMATS[fmt].max).all(), fmt
    assert inputs.sentinel((2, 2), np.int32).tolist() == [[0x5A5A5A5A] * 2] * 2
    assert inputs.sentinel(1, np.uint16).tolist() == [0x5A5A]
    assert inputs.sentinel(1, np.int8).tolist() == [0x5A]
    assert inputs.sentinel(2, bool).tolist() == [True, True]
    s = inputs.sentinel(3, np.float32)
    s[0] = 1                                       # a fresh, writable array
    assert s.flags.writeable


def test_empty_shapes():
    for make in (inputs.random, inputs.edge):
        assert make(0, "float32").size == 0
        assert make((3, 0), "e4m3").shape == (3, 0)
        assert make(0, np.int32).size == 0
    assert inputs.sentinel(0, "bfloat16").size == 0
