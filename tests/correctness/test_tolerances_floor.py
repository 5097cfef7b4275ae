"""The default rule's floor (D ULPs of max|ref|) and its limit: it passes a value that cancelled
to near zero, but elements off by a factor of 2 or more in at most 1% of the output; an output
wrong in its small elements fails, and the verdict says how many elements only the floor passed."""

import numpy as np
import pytest

from cuda_magic.correctness.verifier import verify
from cuda_magic.correctness.formats import to_bits
from cuda_magic.correctness.tolerances import floor_allowance
from cuda_magic.display.verdict import html, text


def exp_ref():
    return np.exp(np.linspace(-20, 20, 1001)).astype(np.float32)


def test_an_output_whose_small_elements_are_zero_fails():
    ref = exp_ref()
    out = ref.copy()
    out[ref < 1] = 0                                  # half the elements, each within the floor
    v = verify(out, ref, name="y")
    c = v["y"]
    assert not v and c.category == "wrong", str(v)
    assert c.floor_far == 500 and c.mismatches == 500 and c.floor_passed == 0
    assert "500 of them off by a factor of 2 or more" in c.reason
    assert "at most 1% of the elements" in c.reason
    assert c.worst_out == 0.0 and 0 < c.worst_ref < 1
    # the same output passes where the user says the error is absolute
    assert verify(out, ref, reduction=1)
    assert verify(out, ref, atol=1.0)


@pytest.mark.parametrize("fmt", ["e2m1", "e2m1x2"])
def test_fp4_output_half_the_reference_fails(fmt):
    x = np.float32([0.5, 1, 1.5, 2] * 25)
    v = verify(to_bits(x, fmt), to_bits(2 * x, fmt), fmt)
    assert not v and v.max_ulp == 2, str(v)
    assert v["out"].floor_far == 75 and v["out"].mismatches == 75
    assert not verify(to_bits(2 * x, fmt), to_bits(x, fmt), fmt)        # twice: the same
    assert verify(to_bits(x, fmt), to_bits(x, fmt), fmt)


def test_one_percent_rounded_up_may_be_off_by_2x():
    assert [floor_allowance(n) for n in (0, 1, 3, 100, 101, 1000, 1001)] == [0, 1, 1, 1, 2, 10, 11]
    ref = np.linspace(1, 2, 1000, dtype=np.float32)
    ref[:20] = np.float32(1e-6)                       # small values beside ones up to 2
    out = ref.copy()
    out[:10] = 0                                      # 10 of 1000: 1%
    v = verify(out, ref)
    assert v and v["out"].floor_passed == 10 and v["out"].floor_far == 10, str(v)
    assert "10 of 1000 elements pass only through the floor (10 off by 2x or more)" in str(v)
    out[10] = 0                                       # 11: more than 1%
    v = verify(out, ref)
    assert not v and v["out"].mismatches == 11 and v["out"].floor_passed == 0, str(v)


def test_a_cancelled_value_still_passes_through_the_floor():
    ref = np.array([1.0, 1e-7, -1.0], np.float32)
    out = ref.copy()
    out[1] = np.float32(1e-7 + 30 * 2.0 ** -23)       # off by a factor of 37: noise at 1e-7
    v = verify(out, ref)
    assert v and v["out"].floor_passed == 1 and v["out"].floor_far == 1
    assert str(v).endswith("; 1 of 3 elements pass only through the floor (1 off by 2x or more)")


@pytest.mark.parametrize("order", ["pairwise", "left to right"])
def test_float32_sums_against_float64_pass_the_default(order):
    """Sums of 1024 normal terms: their near-zero results are many ULPs off, few by 2x."""
    s = np.random.default_rng(0).standard_normal((2000, 1024)).astype(np.float32)
    got = s.sum(axis=1) if order == "pairwise" else np.cumsum(s, axis=1, dtype=np.float32)[:, -1]
    v = verify(got, s.astype(np.float64).sum(axis=1), name="total")
    c = v["total"]
    assert v and c.floor_passed > 0 and c.floor_far <= floor_allowance(c.size), str(v)
    assert f"total: {c.floor_passed} of 2000 elements pass only through the floor" in text(v)


def test_a_matrix_product_with_cancellation_passes():
    r = np.random.default_rng(1)
    a, b = r.standard_normal((300, 2048)).astype(np.float32), r.standard_normal((2048, 200)).astype(np.float32)
    v = verify(a @ b, a.astype(np.float64) @ b.astype(np.float64))
    assert v, str(v)


def test_subnormals_flushed_to_zero_do_not_count():
    ref = np.linspace(1, 2, 1000, dtype=np.float32)
    ref[::4] = np.float32(1e-40)                      # a quarter subnormal
    out = np.where(ref < 1e-38, np.float32(0), ref)
    v = verify(out, ref)
    assert v and v["out"].floor_far == 0 and v["out"].floor_passed == 250, str(v)


def test_the_other_rules_have_no_floor_to_count():
    ref = exp_ref()
    out = ref.copy()
    out[ref < 1] = 0
    for kw in (dict(ulp=64), dict(reduction=4), dict(atol=1.0)):
        c = verify(out, ref, **kw)["out"]
        assert c.floor_passed == 0 and c.floor_far == 0
        assert "floor" not in str(c)


def test_the_view_shows_the_count():
    ref = np.array([1.0, 1e-7, -1.0], np.float32)
    out = ref.copy()
    out[1] = np.float32(1e-7 + 30 * 2.0 ** -23)
    v = verify(out, ref, name="y")
    assert "rule: &lt;= 64 ULP per element, or 64 ULP of max|ref| (float32 default); 1 of 3 " \
           "elements pass only through the floor" in html(v)
    assert "y: 1 of 3 elements pass only through the floor" in text(v)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_a_row_summed_to_inf_is_special_though_the_floor_fails_its_zeros():
    """A softmax without the max subtracted: rows whose sum overflows are NaN where exp
    overflowed and 0 elsewhere.  The zeros are off by 2x (the floor's limit fails them), but
    they follow from the NaNs, which are most of the mismatches: the category is "special"."""
    rng = np.random.default_rng(0)
    x = rng.normal(0, 4, (64, 32)).astype(np.float32)
    # eight rows overflow float32's exp: 20 logits near 100 (exp is Inf: NaN), 12 near 84
    # (finite, so 0 where the reference is exp(-12..-21): within the floor, far from 0)
    x[:8, :20] = rng.uniform(100, 101, (8, 20))
    x[:8, 20:] = rng.uniform(80, 88, (8, 12))
    ref = _softmax(x.astype(np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)
        out = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    c = verify(out, ref, "float32", name="y")["y"]
    nan = int(np.isnan(out).sum())
    assert not c and c.category == "special", c.reason
    assert c.nan_misplaced == nan and 0 < c.floor_far < nan, c.reason
    assert f"the rest at special values: {nan} NaN" in c.reason


def test_one_nan_beside_many_zeroed_elements_is_wrong_not_special():
    ref = exp_ref()
    out = ref.copy()
    out[ref < 1] = 0
    out[-1] = np.nan
    c = verify(out, ref, name="y")["y"]
    assert c.category == "wrong" and c.nan_misplaced == 1, c.reason


def test_an_ftz_product_of_a_subnormal_operand_is_not_far():
    """A fast-math (FTZ) ``y = a * x`` on edge inputs: x subnormal is flushed, so y is 0 where
    the float64 reference is a small normal (2 * FLT_MIN).  Those zeros are the flush, not a
    wrong magnitude: below 2**-102 a float32 result does not count as far."""
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, 1000).astype(np.float32)
    tiny = np.finfo(np.float32).tiny
    x[:100] = np.float32(tiny) * rng.uniform(0.1, 0.99, 100).astype(np.float32)   # subnormal
    a = 4.0
    ref = a * x.astype(np.float64)
    out = np.where(np.abs(x) < tiny, np.float32(0), (np.float32(a) * x))
    v = verify(out, ref, "float32", name="y")
    assert v, str(v)
    assert v["y"].floor_far == 0 and v["y"].floor_passed == 100, str(v)
    # above the band the same zeros are far: a wrong magnitude
    big = np.where(np.arange(1000) < 100, np.float32(0), out)
    ref2 = np.where(np.arange(1000) < 100, 1e-30, ref)
    assert not verify(big, ref2, "float32", name="y")
