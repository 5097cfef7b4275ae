"""Outputs against a reference (cuda_magic/correctness/reference.py): Reference and
first_difference say what verify says; array_diffs reads every format."""

import ml_dtypes
import numpy as np
import pytest

from cuda_magic.correctness.formats import to_bits
from cuda_magic.correctness.reference import (ArrayDiff, Reference, array_diffs, differs,
                                              first_difference, float_dtype, references,
                                              subnormal)
from cuda_magic.errors import DtypeError


def test_the_sweeps_judges_say_what_verify_says():
    ref = np.array([1.0, 2.0, np.nan, np.inf], np.float32)
    r = Reference("y", ref)
    assert r.why(ref.copy()) is None
    assert r.why(np.array([1.0, 2.5, np.nan, np.inf], np.float32)) == (
        "wrong: y: 1 of 4 elements outside the rule (worst at y[1]: 2.5, expected 2.0)")
    assert r.why(np.array([1.0, 2.0, 0.0, np.inf], np.float32)).startswith("special: y: ")
    assert "shape" in differs("y", np.zeros(3), np.zeros(4), None, None)
    # rtol/atol when given decide, as verify's rtol/atol rule
    assert differs("y", np.float32([1.0, 2.1]), np.float32([1.0, 2.0]), 0.1, None) is None
    refs = references({"y": ref, "n": np.arange(3)})
    assert first_difference({"y": ref, "n": np.array([0, 1, 3])}, refs).startswith("wrong: n: 1 of 3")
    assert first_difference({"y": ref}, refs) is None                        # "n" not written: skipped
    assert subnormal(np.array([1e-40, 1.0, 0.0], np.float32)).tolist() == [True, False, False]
    assert subnormal(np.zeros(2, ml_dtypes.float8_e5m2)).tolist() == [False, False]
    assert float_dtype("float32") == np.float32
    with pytest.raises(DtypeError, match="dtype=int32"):
        float_dtype("int32")
    rows = array_diffs("y", {"a": np.array([1.0, 1e-40], np.float32),
                             "b": np.array([np.nextafter(np.float32(1), np.float32(2)), 0], np.float32)}, "a")
    assert [type(d) for d in rows] == [ArrayDiff, ArrayDiff]
    assert (rows[1].differ, rows[1].flushed, rows[1].max_ulp) == (2, 1, 71362)


@pytest.mark.parametrize("bits", [np.uint16, np.int16])      # int16: a bf16 tensor's view
def test_references_read_bit_patterns_in_the_format_named(bits):
    """%%cuda_tune's judge: a bfloat16 output held as bits, one ULP from the reference, is
    right under rtol=1e-2 (as verify and %%cuda_compare say), far from it wrong."""
    x = np.linspace(-3, 3, 64)
    ref = to_bits(x, "bfloat16").view(bits)
    near, far = ref + 1, ref.copy()
    far[7] += 300
    refs = references({"y": ref}, rtol=1e-2, formats={"y": "bfloat16"})
    assert first_difference({"y": near}, refs) is None
    assert first_difference({"y": far}, refs).startswith("wrong: y: 1 of 64")
    # without a format the bits are integers, compared exactly
    assert first_difference({"y": near}, references({"y": ref}, rtol=1e-2)).startswith("wrong: y: 64 of 64")
    # an array of its own format (or of another width) keeps it: the name does not apply
    assert references({"y": x.astype(np.float32)}, formats={"y": "bfloat16"})["y"].dtype is None
    assert references({"y": ref.astype(np.int32)}, formats={"y": "bfloat16"})["y"].dtype is None


def test_array_diffs_reads_every_format():
    """Rows for bfloat16 bits, packed fp4 and ml_dtypes fp8 in each format's own ULPs."""
    x = np.linspace(-3, 3, 64)
    a = to_bits(x, "bfloat16")
    b = a.copy()
    b[5] += 1
    b[9] += 3
    base, row = array_diffs("y", {"base": a, "v": b}, "base", dtype="bfloat16")
    assert (base.differ, row.dtype, row.differ, row.max_ulp) == (0, "bfloat16", 2, 3)
    p = to_bits(x, "e2m1x2")
    q = p.copy()
    q[3] ^= 1                                       # the low nibble: element 6
    row = array_diffs("y", {"base": p, "v": q}, "base", dtype="e2m1x2")[1]
    assert (row.dtype, row.size, row.differ, row.max_ulp) == ("e2m1", 64, 1, 1)
    assert np.flatnonzero(row.ulp).tolist() == [6]
    f = x.astype(ml_dtypes.float8_e4m3fn)
    g = f.copy()
    g[2] = np.nan
    row = array_diffs("y", {"base": f, "v": g}, "base")[1]
    assert row.dtype == "e4m3" and row.max_ulp == np.iinfo(np.uint64).max
