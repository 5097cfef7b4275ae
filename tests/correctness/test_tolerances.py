"""Tolerance rules: ulp=, reduction=, rtol=/atol= and the per-format defaults, each at its
boundary; the floor that judges a cancelled value at the output's scale; the wider-reference
default; the errors of rules that contradict each other; the table in the help."""

import re

import ml_dtypes
import numpy as np
import pytest

from cuda_magic.correctness import tolerances
from cuda_magic.correctness.verifier import verify
from cuda_magic.correctness.formats import FORMATS, from_bits, to_bits
from cuda_magic.correctness.tolerances import DEFAULT_ULP, WIDER_ULP, check_params, default_ulp, make_rule
from cuda_magic.errors import VerifyError

F32 = FORMATS["float32"]


def stepped(name, value, steps):
    """Bit patterns of ``value`` in format ``name`` and of the value ``steps`` codes above it."""
    c = to_bits([value], name)
    return c, (c.astype(np.int64) + steps).astype(c.dtype)


def test_ulp_n_per_element():
    r = make_rule(F32, ulp=2)
    ex = r.excess(np, np.array([0.0, 2.0, 3.0]), np.zeros(3), np.ones(3))
    assert r.kind == "ulp" and ex.tolist() == [0.0, 1.0, 1.5]
    assert r.passes(np, np.array([0.0, 2.0, 3.0]), np.zeros(3), np.ones(3)).tolist() == [True, True, False]
    ref, two = stepped("float32", 1.0, 2)
    _, three = stepped("float32", 1.0, 3)
    assert verify(two, ref, "float32", ulp=2) and not verify(three, ref, "float32", ulp=2)
    assert r.text == "<= 2 ULP per element"


def test_ulp_zero_is_exact():
    r = make_rule(F32, ulp=0)
    assert r.excess(np, np.array([0.0, 1.0]), np.zeros(2), np.ones(2)).tolist() == [0.0, np.inf]


def test_fractional_ulp_against_a_wider_reference():
    ref = np.random.default_rng(0).uniform(-100, 100, 2000).astype(np.float32)
    rounded = ref.astype(ml_dtypes.float8_e4m3fn)                    # to nearest: <= 0.5 ULP
    truncated = to_bits(np.trunc(ref / 2.0 ** np.floor(np.log2(np.abs(ref))) * 8) / 8
                        * 2.0 ** np.floor(np.log2(np.abs(ref))), "e4m3")
    assert verify(rounded, ref, ulp=0.5)
    v = verify(truncated, ref, "e4m3", ulp=0.5)
    assert not v and 0.5 < v.max_ulp < 1


def test_reduction_bound_is_n_ulp_of_max_ref_times_sqrt_k():
    ref = np.array([1.0, 1e-6, -0.5], np.float32)
    unit = 2.0 ** -23                                          # float32's ULP at max|ref| = 1
    r = make_rule(F32, ulp=1, reduction=16, max_ref=1.0)
    assert r.kind == "reduction" and r.floor == unit * 4
    ok = ref.copy()
    ok[1] += np.float32(3.9 * unit)                            # hundreds of ULPs at 1e-6
    bad = ref.copy()
    bad[1] += np.float32(4.5 * unit)
    assert not verify(ok, ref, ulp=4)                          # per element: far too many ULPs
    assert verify(ok, ref, ulp=1, reduction=16)
    assert not verify(bad, ref, ulp=1, reduction=16)
    default_n = make_rule(F32, reduction=100, max_ref=1.0)    # N: the format's default D
    assert default_n.floor == 64 * unit * 10
    assert r.text == "|out - ref| <= 1 ULP of max|ref| x sqrt(16) = 4.768e-07"


def test_rtol_and_atol():
    ref = np.array([1.0, 100.0], np.float64)
    assert verify(ref + [0.25, -0.25], ref, atol=0.25) and not verify(ref + [0.5, 0], ref, atol=0.25)
    assert verify(ref + [2**-10, 2**-4], ref, rtol=2**-10)
    assert not verify(ref + [0, 2**-3], ref, rtol=2**-10)
    both = make_rule(F32, rtol=1e-3, atol=0.5)
    assert both.excess(np, None, np.array([0.6, 0.5]), np.array([100.0, 0.0])).tolist() == [0.6 / 0.6, 1.0]
    assert verify(ref + [0.5, 0.6], ref, rtol=1e-3, atol=0.5)
    assert not verify(ref + [0.51, 0], ref, rtol=1e-3, atol=0.5)
    assert make_rule(F32, atol=1e-5).text == "|out - ref| <= 1e-05"
    assert make_rule(F32, rtol=1e-3).text == "|out - ref| <= 0.001*|ref|"
    assert both.text == "|out - ref| <= 0.5 + 0.001*|ref|"


@pytest.mark.parametrize("name", list(FORMATS))
def test_the_default_of_each_format_passes_d_ulps_and_fails_d_plus_one(name):
    d = DEFAULT_ULP[name]
    ref, at_d = stepped(name, 1.0, d)
    _, past = stepped(name, 1.0, d + 1)
    v = verify(at_d, ref, name)
    assert v and v.max_ulp == d, str(v)
    assert not verify(past, ref, name)
    assert make_rule(FORMATS[name]).text == (f"<= {d} ULP per element, or {d} ULP of max|ref| "
                                             f"({name} default)")


def test_the_defaults_floor_judges_a_cancelled_value_at_the_outputs_scale():
    ref = np.array([1.0, 1e-7, -1.0], np.float32)
    out = ref.copy()
    out[1] = np.float32(1e-7 + 30 * 2.0 ** -23)                # millions of ULPs at 1e-7
    assert verify(out, ref)                                   # within 64 ULP of max|ref|
    assert not verify(out, ref, ulp=64)                       # the same D, per element only
    out[1] = np.float32(1e-7 + 70 * 2.0 ** -23)
    assert not verify(out, ref)


def test_one_ulp_of_bfloat16_passes_the_default_and_fails_a_tight_rtol():
    ref = np.random.default_rng(1).uniform(1, 2, 100).astype(ml_dtypes.bfloat16)
    out = (ref.view(np.uint16) + 1).view(ml_dtypes.bfloat16)
    assert verify(out, ref)
    assert not verify(out, ref, rtol=1e-3)


def test_against_a_wider_reference_fp8_is_judged_at_half_an_ulp_plus_noise():
    assert default_ulp(FORMATS["e4m3"], wider=True) == WIDER_ULP == 0.5 + 1 / 64
    assert default_ulp(FORMATS["float32"], wider=True) == 64
    vals = from_bits(np.arange(0x08, 0x7E, dtype=np.uint8), "e4m3")
    mids = ((vals[:-1] + vals[1:]) / 2).astype(np.float32)          # ties
    up = to_bits(vals[1:], "e4m3")
    down = to_bits(vals[:-1], "e4m3")
    away = np.where(np.arange(up.size) % 2 == 0, up, down)             # ties rounded either way
    assert verify(away, mids, "e4m3")
    assert verify(away, mids, "e4m3").max_ulp == 0.5
    inside = (vals[:-1] * 0.2 + vals[1:] * 0.8).astype(np.float32)    # down is 0.8 ULP away
    v = verify(down, inside, "e4m3")
    assert not v and v["out"].category == "precision"
    text = make_rule(FORMATS["e4m3"], wider=True).text
    assert text == ("<= 0.5156 ULP per element, correctly rounded (e4m3 default against "
                    "a wider reference)")
    # no floor at the scale of the largest value: a truncated small element fails beside a
    # large one (with the floor, 1.2 -> 1.125 passed at 0.5 ULP of 2.6's spacing)
    exact = np.float32([1.0625, 1.2, 2.6])
    trunc = to_bits(np.float32([1.0, 1.125, 2.5]), "e4m3")
    v = verify(trunc, exact, "e4m3", name="q")
    assert not v and v["q"].mismatches == 1 and v["q"].worst == (1,)
    assert verify(to_bits(np.float32([1.125, 1.25, 2.5]), "e4m3"), exact, "e4m3")  # ties away
    # float32 output, float64 reference: float32's own default, fractionally
    ref64 = np.random.default_rng(2).uniform(1, 2, 100)
    out32 = (ref64 * (1 + 40 * 2.0 ** -24)).astype(np.float32)
    v = verify(out32, ref64)
    assert v and 30 < v.max_ulp < 64


def test_integers_are_exact():
    r = make_rule(None, dtype="int32")
    assert r.kind == "exact" and r.text == "exact (int32)"
    assert r.excess(np, np.array([0.0, 1.0]), None, None).tolist() == [0.0, np.inf]
    assert not verify(np.array([1, 2], np.int32), np.array([1, 3], np.int32), ulp=5)


@pytest.mark.parametrize("kw, message", [
    (dict(ulp=1, rtol=1e-3), "ulp= and rtol= are two rules"),
    (dict(reduction=8, atol=1e-3), "reduction= and atol= are two rules"),
    (dict(ulp=-1), "ulp=-1: give a finite number >= 0"),
    (dict(atol=float("nan")), "atol=nan"),
    (dict(rtol="0.1"), "rtol='0.1'"),
    (dict(ulp=True), "ulp=True"),
    (dict(reduction=0), "reduction=0: give the number of terms"),
    (dict(reduction=2.5), "reduction=2.5"),
    (dict(reduction=True), "reduction=True"),
])
def test_rules_that_cannot_be_made(kw, message):
    with pytest.raises(VerifyError, match=re.escape(message)):
        check_params(**kw)
    with pytest.raises(VerifyError, match=re.escape(message)):
        verify(np.zeros(2, np.float32), np.zeros(2, np.float32), **kw)


def test_the_table_in_the_help_is_the_defaults():
    doc = tolerances.__doc__
    rows = re.findall(r"^  (\w[\w ,()]*?)\s{2,}(\S+)\s{2,}(.+?)\s*$", doc.split("D (wider ref)")[1], re.M)
    seen = set()
    for names, same, wider in rows:
        if names.startswith("integers"):
            assert same == wider == "exact"
            continue
        for name in re.findall(r"\b(float\d+|bfloat16|e\dm\d)\b", names):
            seen.add(name)
            fmt = FORMATS[name]
            assert float(same) == default_ulp(fmt)
            assert wider == "--" or eval(wider) == default_ulp(fmt, wider=True)
    assert seen == set(FORMATS)
