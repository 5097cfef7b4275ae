"""Verdict and OutputCheck: plain frozen data, pass/fail as bool, one line per output, lookup by
name, the tile map, and the copy k.verify makes with its runs."""

import dataclasses

import numpy as np
import pytest

from cuda_magic.correctness.verifier import verify
from cuda_magic.correctness.verdict import CATEGORIES, TRAPS, OutputCheck, Verdict
from cuda_magic.errors import VerifyError


def check(name="y", passed=True, category="pass", reason=None, **kw):
    base = dict(dtype="float32", shape=(4,), size=4, rule="<= 2 ULP per element",
                tile=(256,), tile_map=np.zeros(1, np.int64))
    return OutputCheck(name=name, passed=passed, category=category, reason=reason, **{**base, **kw})


def test_bool_passed_and_the_first_failure():
    ok, bad = check("y"), check("z", False, "tail", "3 of 4 elements outside the rule", max_ulp=7.0)
    v = Verdict((ok, bad))
    assert not v and not v.passed and bool(Verdict((ok,)))
    assert not bad and ok
    assert (v.category, v.reason, v.max_ulp) == ("tail", "z: 3 of 4 elements outside the rule", 7.0)
    assert (Verdict((ok,)).category, Verdict((ok,)).reason) == ("pass", None)
    assert Verdict(()).passed and Verdict(()).max_ulp == 0.0


def test_lookup_by_name_and_the_map():
    tiles = np.array([0, 2, 1])
    v = Verdict((check("y", tile_map=tiles), check("z")))
    assert v.names == ["y", "z"] and v["y"].tile_map is tiles and v.map("y") is tiles
    with pytest.raises(KeyError, match="no output named 'w'; the outputs are y, z"):
        v["w"]
    with pytest.raises(VerifyError, match="name one of the outputs y, z"):
        v.map()
    assert Verdict((check("y", tile_map=tiles),)).map() is tiles


def test_one_line_per_output():
    ok = check("y", max_ulp=1.0, p99_ulp=0.0)
    bad = check("z", False, "tail", "13 of 1000 elements outside the rule, all in the last tile",
                max_ulp=3.0, p99_ulp=0.5, p99_exact=False)
    gone = check("w", False, "missing", "no output named 'w' (the reference has one)")
    assert str(Verdict((ok, bad, gone))).splitlines() == [
        "y: PASS, max 1 ULP (p99 0), <= 2 ULP per element",
        "z: FAIL tail: 13 of 1000 elements outside the rule, all in the last tile; max 3 ULP "
        "(p99 <= 0.5), <= 2 ULP per element",
        "w: FAIL missing: no output named 'w' (the reference has one)"]


def test_frozen_and_comparable_without_the_arrays():
    a, b = check(tile_map=np.zeros(2)), check(tile_map=np.ones(2))
    assert a == b                                   # tile maps do not take part in ==
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.passed = False
    with pytest.raises(dataclasses.FrozenInstanceError):
        Verdict((a,)).runs = 2
    assert "tile_map" not in repr(a)


def test_with_runs_is_a_copy_that_marks_failures_that_changed_between_runs():
    ok, bad, steady = check("y"), check("z", False, "wrong", "2 of 4 elements outside the rule"), \
        check("s", False, "tail", "1 of 4 elements outside the rule")
    v = Verdict((ok, bad, steady), peak_bytes=10)
    spread = {"y": 3.0, "z": 5.0, "s": 0.0}
    w = v.with_runs(2, False, spread)
    assert (v.runs, v.deterministic, v.spread) == (1, None, None)          # the original stays
    assert (w.runs, w.deterministic, w.spread, w.peak_bytes) == (2, False, spread, 10)
    assert w["y"] == ok                                                    # passing: unchanged
    assert w["z"].category == "nondeterministic"
    assert w["z"].reason == "differs between runs (by up to 5 ULP); 2 of 4 elements outside the rule"
    assert w["s"].category == "tail"                                       # the same every run
    assert w.with_runs(3, False, spread)["z"].reason == w["z"].reason      # not marked twice
    assert str(w).splitlines()[-1] == "2 runs, NOT bit for bit"
    assert str(v.with_runs(2, True, {"y": 0.0})).splitlines()[-1] == "2 runs, bit for bit"


def test_the_category_names():
    assert CATEGORIES[:6] == ("missing", "shape", "zeros", "unchanged", "constant", "copy")
    assert TRAPS == ("zeros", "unchanged", "constant", "copy")
    assert set(CATEGORIES) >= {"tail", "tile-edge", "special", "precision", "wrong", "nondeterministic"}


def test_a_verdict_from_verify_is_this_data():
    x = np.linspace(1, 2, 300, dtype=np.float32)
    v = verify({"a": x, "b": x}, {"a": x, "b": x + 1})
    assert isinstance(v, Verdict) and all(isinstance(o, OutputCheck) for o in v.outputs)
    assert v.category in CATEGORIES and v.reason.startswith("b: ")
    assert str(v).splitlines()[0].startswith("a: PASS, max 0 ULP (p99 0), <= 64 ULP per element")
