"""Number formats: every code of every small format decoded as ml_dtypes decodes it, rounding
as ml_dtypes rounds (ties included), the value order, the spacing, ULP distances equal to a
brute-force count for every format, and reading arrays of every kind as codes."""

import functools
import math
import subprocess
import sys
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from cuda_magic.correctness import formats
from cuda_magic.correctness.formats import (FORMATS, array_of, codes, format_of, from_bits, to_bits,
                                            ulp_distance)
from cuda_magic.errors import DtypeError, NumbersError

ML = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
      "e5m2": ml_dtypes.float8_e5m2, "e2m3": ml_dtypes.float6_e2m3fn,
      "e3m2": ml_dtypes.float6_e3m2fn, "e2m1": ml_dtypes.float4_e2m1fn}
SMALL = list(ML)                       # every code can be listed
ALL = list(FORMATS)


def all_codes(name):
    f = FORMATS[name]
    return np.arange(1 << f.bits).astype(f.container)


def ml_values(name, c):
    """ml_dtypes' (or NumPy's) values of codes."""
    with np.errstate(invalid="ignore"):        # signalling NaNs
        return c.view(ML[name]).astype(np.float64)


def same(a, b):
    """Equal values, NaN equal to NaN, and the same sign bits of the numbers (so -0 != +0; a
    NaN's sign is not a value: CuPy's float16 -> float64 conversion drops it)."""
    a, b = np.asarray(a), np.asarray(b)
    num = ~np.isnan(a)
    return bool(np.array_equal(a, b, equal_nan=True) and
                np.array_equal(np.signbit(a[num]), np.signbit(b[num])))


@functools.cache
def representable(name):
    """The sorted distinct non-NaN values of a small format (-0 and +0 one value)."""
    v = FORMATS[name].decode(all_codes(name))
    return np.unique(v[~np.isnan(v)])


def test_the_formats_and_their_fields():
    assert ALL == ["float64", "float32", "float16", "bfloat16", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1"]
    assert [FORMATS[n].bits for n in ALL] == [64, 32, 16, 16, 8, 8, 6, 6, 4]
    assert [FORMATS[n].nan for n in ALL] == ["ieee"] * 4 + ["e4m3", "ieee", "none", "none", "none"]
    assert [FORMATS[n].inf for n in ALL] == [True] * 4 + [False, True, False, False, False]
    assert [FORMATS[n].container for n in ALL] == [np.uint64, np.uint32] + [np.uint16] * 2 + [np.uint8] * 5


@pytest.mark.parametrize("name", ALL)
def test_max_tiny_eps_match_finfo(name):
    f = FORMATS[name]
    info = np.finfo(np.dtype(name)) if name in ("float64", "float32", "float16") else ml_dtypes.finfo(ML[name])
    assert (f.max, f.tiny, f.eps) == (float(info.max), float(info.tiny), float(info.eps))


@pytest.mark.parametrize("name", SMALL)
def test_decode_every_code_as_ml_dtypes(name):
    c = all_codes(name)
    assert same(FORMATS[name].decode(c), ml_values(name, c))


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_decode_random_bits_as_numpy(name):
    f = FORMATS[name]
    bits = np.random.default_rng(1).integers(0, 1 << f.bits, 20000, dtype=np.uint64).astype(f.container)
    with np.errstate(invalid="ignore"):
        assert same(f.decode(bits), bits.view(np.dtype(name)).astype(np.float64))


@pytest.mark.parametrize("name", SMALL)
def test_special_code_tests_agree_with_the_values(name):
    f, c = FORMATS[name], all_codes(name)
    v = ml_values(name, c)
    assert np.array_equal(f.isnan(c), np.isnan(v))
    assert np.array_equal(f.isinf(c), np.isinf(v))
    assert np.array_equal(f.iszero(c), v == 0)
    assert np.array_equal(f.signbit(c), np.signbit(v))
    assert int(f.isnan(c).sum()) == {"ieee": 2 * ((1 << f.mbits) - 1), "e4m3": 2, "none": 0}[f.nan]


@pytest.mark.parametrize("name", SMALL)
def test_ordered_follows_the_values(name):
    f, c = FORMATS[name], all_codes(name)
    v = f.decode(c)
    keep = ~np.isnan(v)
    order, v = f.ordered(c)[keep], v[keep]
    ranks = np.searchsorted(np.unique(v), v)          # -0 and +0 share a rank
    assert np.array_equal(order - order[v == 0][0], ranks - ranks[v == 0][0])
    assert f.ordered(c[keep][v == 0]).tolist() == [0, 0]


def tie_and_random_values(name, n=20000, seed=0):
    """Random magnitudes over the format's whole range (and past it), exact values, and the
    midpoints between neighbours (ties), both signs."""
    f = FORMATS[name]
    rng = np.random.default_rng(seed)
    exps = rng.integers(f.emin - f.mbits - 2, min(f.emax + 2, 1023), n)
    rand = np.ldexp(rng.uniform(1, 2, n), exps) * rng.choice([-1.0, 1.0], n)
    if name in SMALL:
        vals = representable(name)
        vals = vals[np.isfinite(vals)]
        mids = (vals[:-1] + vals[1:]) / 2
        rand = np.concatenate([rand, vals, mids, np.nextafter(mids, 0),
                               np.nextafter(mids, np.inf)])
    over = [2 * f.max, -3 * f.max] if f.bits < 64 else []
    return np.concatenate([rand, [0.0, -0.0, np.inf, -np.inf], over])


@pytest.mark.parametrize("name", SMALL)
def test_encode_rounds_as_ml_dtypes(name):
    f = FORMATS[name]
    x = tie_and_random_values(name)
    if f.nan != "none":
        x = np.concatenate([x, [np.nan, -np.nan]])
    with np.errstate(over="ignore"):
        want = x.astype(ML[name]).view(np.uint8 if f.bits <= 8 else np.uint16)
    assert np.array_equal(f.encode(x), want)


@pytest.mark.parametrize("name", ["float16", "float32"])
def test_the_rounding_arithmetic_matches_numpy_casts(name):
    # the fp8/fp6/fp4/bfloat16 rounding, run with float16's and float32's fields, rounds as
    # NumPy's own casts do: an independent check of its carries, ties and subnormals
    f = FORMATS[name]
    x = np.concatenate([tie_and_random_values(name), [np.nan]])
    with np.errstate(over="ignore"):
        want = x.astype(np.dtype(name)).view(f.container)
    got = formats._round_to_codes(f, np, x, False)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("name", ["e4m3", "e5m2"])
def test_saturate_gives_the_largest_value(name):
    f = FORMATS[name]
    got = f.decode(f.encode(np.array([1e6, -1e6, np.inf, -np.inf, np.nan, 3.0]), saturate=True))
    assert same(got, [f.max, -f.max, f.max, -f.max, np.nan, 3.0])
    unsat = f.decode(f.encode(np.array([1e6, np.inf])))
    assert same(unsat, [np.nan, np.nan] if name == "e4m3" else [np.inf, np.inf])


@pytest.mark.parametrize("name", ["e2m3", "e3m2", "e2m1"])
def test_formats_without_nan_saturate_and_refuse_nan(name):
    f = FORMATS[name]
    assert same(f.decode(f.encode(np.array([1e9, -np.inf]))), [f.max, -f.max])
    with pytest.raises(DtypeError, match=f"{name} has no NaN"):
        f.encode(np.array([1.0, np.nan]))


def brute_spacing(name, x):
    """Per value: the gap above the largest representable value <= |x| (at and beyond the
    max: the gap below the max)."""
    vals = representable(name)
    vals = vals[np.isfinite(vals) & (vals >= 0)]
    gaps = np.append(np.diff(vals), vals[-1] - vals[-2])
    a = np.minimum(np.abs(np.asarray(x, np.float64)), vals[-1])
    return gaps[np.searchsorted(vals, a, side="right") - 1]


@pytest.mark.parametrize("name", SMALL)
def test_spacing_is_the_gap_between_neighbours(name):
    f = FORMATS[name]
    x = tie_and_random_values(name, 2000)
    x = x[np.isfinite(x)]
    assert np.array_equal(f.spacing(x), brute_spacing(name, x))
    assert f.spacing(np.array([np.inf]))[0] == brute_spacing(name, f.max)
    assert np.isnan(f.spacing(np.array([np.nan]))[0])


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_spacing_is_numpys_spacing(name):
    f, dt = FORMATS[name], np.dtype(name)
    with np.errstate(over="ignore"):
        x = tie_and_random_values(name, 5000).astype(dt)
    x = x[np.isfinite(x) & (np.abs(x) < f.max)]
    assert np.array_equal(f.spacing(x.astype(np.float64)), np.spacing(np.abs(x)).astype(np.float64))
    assert f.spacing(np.array([0.0]))[0] == float(np.finfo(dt).smallest_subnormal)


# ---------------------------------------------------------------------- ULP distances

def random_pairs(name, n=5000, seed=2):
    """Random non-NaN code pairs of a small format."""
    f = FORMATS[name]
    c = all_codes(name)
    c = c[~f.isnan(c)]
    rng = np.random.default_rng(seed)
    return rng.choice(c, n), rng.choice(c, n)


@pytest.mark.parametrize("name", SMALL)
def test_ulp_distance_is_the_rank_difference(name):
    a, b = random_pairs(name)
    table = representable(name)
    f = FORMATS[name]
    want = np.abs(np.searchsorted(table, f.decode(a)) - np.searchsorted(table, f.decode(b)))
    assert np.array_equal(ulp_distance(a, b, dtype=name), want)
    if name != "float16":          # the ml_dtypes arrays themselves: no dtype= needed
        assert np.array_equal(ulp_distance(a.view(ML[name]), b.view(ML[name])), want)
    assert ulp_distance(a, b, dtype=name).dtype == np.uint64


def rank(name, x: float) -> int:
    """The number of representable values from 0 to x (signed), counted with fractions: the
    subnormals one by one, then 2**mbits per binade."""
    f = FORMATS[name]
    if math.isinf(x):
        return int(math.copysign(rank(name, f.max) + 1, x))
    a = Fraction(abs(x))
    if a < Fraction(f.tiny):
        r = a / Fraction(2) ** (f.emin - f.mbits)
    else:
        e = math.frexp(abs(x))[1] - 1
        r = (e - f.emin + 1) * 2 ** f.mbits + (a / Fraction(2) ** e - 1) * 2 ** f.mbits
    assert r.denominator == 1
    return int(r) if x >= 0 else -int(r)


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_ulp_distance_of_near_pairs_is_the_nextafter_steps(name):
    dt = np.dtype(name)
    rng = np.random.default_rng(3)
    with np.errstate(over="ignore"):
        a = tie_and_random_values(name, 300).astype(dt)
    a = a[np.isfinite(a)]
    steps = rng.integers(0, 20, a.size)
    b = a.copy()
    for i, k in enumerate(steps):
        for _ in range(k):
            b[i] = np.nextafter(b[i], dt.type(np.inf))
    assert np.array_equal(ulp_distance(a, b), steps)


@pytest.mark.parametrize("name", ALL)
def test_ulp_distance_of_far_pairs_is_an_independent_count(name):
    dt = ML[name] if name in ML else np.dtype(name)
    rng = np.random.default_rng(4)
    a = rng.permutation(tie_and_random_values(name, 400, seed=5))[:3000]
    with np.errstate(over="ignore"):
        a = a[np.abs(a) <= FORMATS[name].max].astype(dt)
    b = rng.permutation(a)
    want = [abs(rank(name, float(x)) - rank(name, float(y))) for x, y in zip(a, b)]
    got = ulp_distance(a, b)
    assert [int(v) for v in got] == want


def test_ulp_distance_zeros_nan_inf_and_the_old_cases():
    f = np.float32
    one_up = np.nextafter(f(1), f(2))
    tiny = np.finfo(f).tiny
    assert ulp_distance(np.array([1, 1, 0, -0.0, tiny], f),
                        np.array([1, one_up, -0.0, 1e-45, 0], f)).tolist() == [0, 1, 0, 1, 2**23]
    d = ulp_distance(np.array([np.nan, np.nan, 1], f), np.array([np.nan, 1, 1], f))
    assert d.tolist() == [0, np.iinfo(np.uint64).max, 0]
    inf = ulp_distance(np.array([np.inf, np.inf, -np.inf], f), np.array([np.inf, np.finfo(f).max, np.inf], f))
    assert inf.tolist() == [0, 1, 2 * (rank("float32", float(np.finfo(f).max)) + 1)]
    e4 = ulp_distance(np.array([0x7F, 0xFF, 0x00], np.uint8), np.array([0xFF, 0x01, 0x80], np.uint8), "e4m3")
    assert e4.tolist() == [0, np.iinfo(np.uint64).max, 0]      # two NaNs, NaN vs number, +0 vs -0


def test_ulp_distance_of_integers_is_exact_at_the_extremes():
    assert ulp_distance(np.array([5], np.int32), np.array([2], np.int32)).tolist() == [3]
    i64 = np.iinfo(np.int64)
    assert ulp_distance(np.array([i64.max, i64.min]), np.array([i64.min, i64.max])).tolist() == [2**64 - 1] * 2
    u64 = np.array([2**64 - 1, 0], np.uint64)
    assert ulp_distance(u64, u64[::-1]).tolist() == [2**64 - 1] * 2
    assert ulp_distance(np.array([True, False]), np.array([False, False])).tolist() == [1, 0]
    assert ulp_distance(np.array([3], np.int16), np.array([-4], np.int64)).tolist() == [7]


def test_ulp_distance_refuses_other_shapes_and_integers_against_floats():
    with pytest.raises(NumbersError, match="one shape"):
        ulp_distance(np.zeros(2, np.float32), np.zeros(3, np.float32))
    with pytest.raises(NumbersError, match="a holds integers, b float32"):
        ulp_distance(np.zeros(2, np.int32), np.zeros(2, np.float32))


def test_a_wider_reference_gives_fractional_ulps_of_the_output():
    name = "e4m3"
    rng = np.random.default_rng(6)
    ref = (rng.standard_normal(3000) * 20).astype(np.float32)
    out = ref.astype(ML[name])
    d = ulp_distance(out, ref)
    want = np.abs(out.astype(np.float64) - ref) / brute_spacing(name, ref)
    assert d.dtype == np.float64 and np.allclose(d, want, rtol=0, atol=1e-12)
    assert d.max() <= 0.5
    # ties land at exactly 0.5 whichever way they round; truncation anywhere below 1
    vals = representable(name)
    vals = vals[np.isfinite(vals) & (vals > 0)]
    mids = ((vals[:-1] + vals[1:]) / 2).astype(np.float32)
    up, down = to_bits(vals[1:], name), to_bits(vals[:-1], name)
    assert ulp_distance(up, mids, dtype=name).tolist() == [0.5] * mids.size
    assert ulp_distance(down, mids, dtype=name).tolist() == [0.5] * mids.size
    inside = ((vals[:-1] * 0.1 + vals[1:] * 0.9)).astype(np.float32)
    trunc = ulp_distance(down, inside, dtype=name)
    assert 0.5 < trunc.min() and trunc.max() < 1
    nan = ulp_distance(np.array([0x7F, 0x7F, 0x38], np.uint8), np.array([np.nan, 1.0, np.nan]), "e4m3")
    assert nan.tolist() == [0.0, math.inf, math.inf]
    f32 = ulp_distance(np.array([1.0], np.float32), np.array([1.0 + 2**-24]))        # float32 vs float64
    assert f32.tolist() == [0.5]


# ---------------------------------------------------------------------- names, arrays, codes

@pytest.mark.parametrize("given, name", [
    ("bf16", "bfloat16"), ("BFloat16", "bfloat16"), ("float8_e4m3fn", "e4m3"), ("fp8_e4m3", "e4m3"),
    ("e4m3fn", "e4m3"), ("fp8_e5m2", "e5m2"), ("fp4", "e2m1"), ("float4_e2m1fn_x2", "e2m1"),
    ("e2m1x2", "e2m1"), ("float6_e3m2fn", "e3m2"), ("fp6_e2m3", "e2m3"), ("half", "float16"),
    ("torch.float32", "float32"), (np.float64, "float64"), (np.dtype("float16"), "float16"),
    (ml_dtypes.bfloat16, "bfloat16"), (np.dtype(ml_dtypes.float8_e5m2), "e5m2"),
    (ml_dtypes.float4_e2m1fn, "e2m1"), (FORMATS["e3m2"], "e3m2")])
def test_format_of_names_aliases_and_dtypes(given, name):
    assert format_of(dtype=given) is FORMATS[name]


def test_format_of_arrays_and_integers():
    assert format_of(np.zeros(2, ml_dtypes.float6_e2m3fn)) is FORMATS["e2m3"]
    assert format_of([1.5, 2.0]) is FORMATS["float64"]
    assert format_of(np.zeros(2, np.uint8)) is None           # integers, unless dtype= says
    assert format_of(np.zeros(2, np.uint8), "e4m3") is FORMATS["e4m3"]
    for dt in ("int32", np.uint16, bool, "uint8"):
        assert format_of(dtype=dt) is None


@pytest.mark.parametrize("given, shown", [("float8_e4m3", "float8_e4m3"), ("nonsense", "nonsense"),
                                          (np.complex64, "complex64"),
                                          (ml_dtypes.float8_e4m3fnuz, "float8_e4m3fnuz")])
def test_format_of_names_what_it_cannot_read(given, shown):
    with pytest.raises(DtypeError, match=f"dtype='{shown}'"):
        format_of(dtype=given)
    with pytest.raises(DtypeError, match="needs an array x or a dtype"):
        format_of()


def test_codes_of_numpy_ml_dtypes_and_bit_patterns():
    xp, c = codes(np.array([1.0, -2.0], np.float32))
    assert xp is np and c.dtype == np.uint32 and c.tolist() == [0x3F800000, 0xC0000000]
    _, c = codes(np.array([1.0, -0.0], ml_dtypes.bfloat16))
    assert c.dtype == np.uint16 and c.tolist() == [0x3F80, 0x8000]
    _, c = codes(np.array([0x38, 0x7F], np.uint8), "e4m3")
    assert c.tolist() == [0x38, 0x7F]
    _, c = codes(np.array([0x38], np.int8), "fp8_e4m3")          # signed bytes hold bits too
    assert c.dtype == np.uint8 and c.tolist() == [0x38]
    _, c = codes(np.array([[0x21, 0x7F]], np.uint8), "e2m1x2")   # low nibble first
    assert c.shape == (1, 4) and c.tolist() == [[0x1, 0x2, 0xF, 0x7]]
    _, c = codes(np.array([1.0, 6.0], ml_dtypes.float4_e2m1fn))
    assert c.tolist() == [0x2, 0x7]


def test_codes_refuses_what_is_not_codes():
    with pytest.raises(DtypeError, match="holds float32 values, not e4m3 codes"):
        codes(np.zeros(2, np.float32), "e4m3")
    with pytest.raises(DtypeError, match="e2m1 codes have 4 bits"):
        codes(np.array([0x10], np.uint8), "e2m1")
    with pytest.raises(DtypeError, match="2-byte elements"):
        codes(np.zeros(2, np.uint8), "bfloat16")
    with pytest.raises(DtypeError, match="integers have no codes"):
        codes(np.zeros(2, np.int32))


@pytest.mark.parametrize("name", ALL)
def test_to_bits_and_from_bits_round_trip(name):
    f = FORMATS[name]
    x = tie_and_random_values(name, 500)
    c = to_bits(x, name)
    assert c.dtype == f.container
    assert np.array_equal(c, f.encode(x))
    back = from_bits(c, name)
    assert np.array_equal(to_bits(back, name), c)
    if name in SMALL:
        assert same(from_bits(all_codes(name), name), ml_values(name, all_codes(name)))


def test_to_bits_packs_fp4_pairs_low_nibble_first():
    c = to_bits([[0.5, 1.0, 6.0, -6.0]], "e2m1x2")
    assert c.dtype == np.uint8 and c.tolist() == [[0x21, 0xF7]]
    assert from_bits(c, "e2m1x2").tolist() == [[0.5, 1.0, 6.0, -6.0]]
    assert to_bits([1.0, 0.3, 500.0], "e4m3").tolist() == [56, 42, 127]
    assert from_bits([0x38, 0x7F], "e4m3")[0] == 1.0
    with pytest.raises(DtypeError, match="even length"):
        to_bits([1.0, 2.0, 3.0], "e2m1x2")
    with pytest.raises(DtypeError, match="8-bit unsigned"):
        from_bits([300], "e4m3")
    with pytest.raises(DtypeError, match="integer dtype has no bit patterns"):
        to_bits([1.0], "int32")


def test_nothing_from_torch_cupy_or_ml_dtypes_is_imported_for_numpy_arrays():
    code = ("import sys, numpy as np\n"
            "from cuda_magic.correctness import formats, verifier\n"
            "x = np.linspace(-1, 1, 50, dtype=np.float32)\n"
            "formats.codes(x); formats.ulp_distance(x, x); formats.to_bits(x, 'e4m3')\n"
            "assert verifier.verify(x, x.astype(np.float64))\n"
            "print(sorted(m for m in ('torch', 'cupy', 'ml_dtypes') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# ---------------------------------------------------------------------- torch and CuPy

def test_torch_tensors_on_the_cpu():
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, -2.0, 0.5], dtype=torch.bfloat16)
    assert format_of(t) is FORMATS["bfloat16"]
    xp, c = codes(t)
    assert xp is np and c.tolist() == [0x3F80, 0xC000, 0x3F00]
    e4 = torch.tensor([1.0, 448.0], dtype=torch.float32).to(torch.float8_e4m3fn)
    assert codes(e4)[1].tolist() == [0x38, 0x7E]
    assert format_of(dtype=torch.float8_e5m2) is FORMATS["e5m2"]
    assert format_of(dtype=torch.int32) is None
    if hasattr(torch, "float4_e2m1fn_x2"):
        packed = torch.tensor([[0x21, 0xF7]], dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
        assert codes(packed)[1].tolist() == [[0x1, 0x2, 0x7, 0xF]]


@pytest.mark.gpu
def test_torch_cuda_tensors_reach_cupy_or_the_host():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    t = torch.tensor([1.0, -2.0], dtype=torch.bfloat16, device="cuda")
    xp, c = codes(t)
    assert xp.__name__ == ("cupy" if formats._cupy() else "numpy")
    assert formats._to(np, c).tolist() == [0x3F80, 0xC000]


@pytest.mark.gpu
def test_cupy_arrays_decode_encode_and_distance_on_the_device():
    cupy = pytest.importorskip("cupy")
    for name in SMALL:
        f = FORMATS[name]
        c = all_codes(name)
        xp, dc = codes(cupy.asarray(c), name)
        assert xp is cupy
        assert same(f.decode(dc).get(), f.decode(c))
        x = tie_and_random_values(name, 500)
        x = x[~np.isnan(x)]
        assert np.array_equal(f.encode(cupy.asarray(x)).get(), f.encode(x))
        assert np.array_equal(f.spacing(cupy.asarray(x)).get(), f.spacing(x))
    # float32 subnormals survive on the device (CuPy's own casts flush them)
    sub = np.array([1e-45, -3e-39, 1e-40, np.finfo(np.float32).tiny, 1.0], np.float32)
    f32 = FORMATS["float32"]
    assert same(f32.decode(codes(cupy.asarray(sub), "float32")[1]).get(), sub.astype(np.float64))
    a = np.linspace(-3, 3, 101, dtype=np.float32)
    b = np.nextafter(a, np.float32(9))
    assert np.array_equal(ulp_distance(cupy.asarray(a), cupy.asarray(b)).get(), ulp_distance(a, b))
    assert array_of(cupy.zeros(3))[0] is cupy
