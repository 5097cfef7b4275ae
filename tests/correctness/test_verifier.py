"""verify() on arrays: every category of a failure, the trivial-output trap (zeros, unchanged,
constant, copy -- also when the tolerance passes them), NaN/Inf/±0 placement, the tile map,
chunked results equal to unchunked ones, the p99, the memory it takes."""

import tracemalloc

import ml_dtypes
import numpy as np
import pytest

from cuda_magic.correctness import verifier as verifier_module
from cuda_magic.correctness.verifier import verify
from cuda_magic.correctness.formats import to_bits
from cuda_magic.errors import VerifyError

RNG = np.random.default_rng(0)
X = RNG.uniform(-2, 2, 1000).astype(np.float32)
GRID = RNG.uniform(1, 2, (64, 64)).astype(np.float32)


def one(v):
    """The only output's check."""
    assert len(v.outputs) == 1
    return v.outputs[0]


# ---------------------------------------------------------------------- pass, and the basics

def test_equal_outputs_pass_with_their_numbers():
    v = verify(X.copy(), X)
    c = one(v)
    assert v and c.passed and c.category == "pass" and c.reason is None
    assert (c.name, c.dtype, c.shape, c.size, c.mismatches) == ("out", "float32", (1000,), 1000, 0)
    assert (c.max_ulp, c.p99_ulp, c.max_abs, c.max_rel, c.worst) == (0, 0, 0, 0, None)
    assert c.tile == (256,) and c.tile_map.tolist() == [0, 0, 0, 0]
    assert (v.runs, v.deterministic, v.where) == (1, None, "host") and v.peak_bytes > 0


def test_the_worst_element_and_the_errors():
    out = GRID.copy()
    out[5, 7] = np.nextafter(out[5, 7], np.float32(9), dtype=np.float32)
    out[9, 1] = (out[9:10, 1].view(np.uint32) + 3).view(np.float32)[0]      # 3 ULPs
    c = one(verify(out, GRID, ulp=8))
    assert c.passed and c.worst == (9, 1) and c.max_ulp == 3 and c.mismatches == 0
    assert c.worst_out == float(out[9, 1]) and c.worst_ref == float(GRID[9, 1])
    assert c.max_abs == float(np.abs(out.astype(np.float64) - GRID).max())
    assert c.max_rel == pytest.approx(float(np.max(np.abs(out.astype(np.float64) - GRID) / GRID)))


def test_a_name_dicts_and_dtypes_per_output():
    v = verify({"y": X, "z": GRID, "extra": X}, {"y": X, "z": GRID + 1}, name="ignored")
    assert v.names == ["y", "z"] and v["y"].passed and not v["z"].passed
    assert not v and v.category == v["z"].category
    assert verify(X, X, name="y").names == ["y"]
    bits = to_bits(X, "e4m3")
    wide = verify({"a": bits, "b": X}, {"a": X, "b": X}, dtype={"a": "e4m3"})
    assert wide and wide["a"].dtype == "e4m3" and wide["b"].dtype == "float32"
    with pytest.raises(VerifyError, match="give out as a dict"):
        verify(X, {"y": X})
    with pytest.raises(VerifyError, match="give ref as a dict"):
        verify({"y": X}, X)


def test_integers_and_bools_are_exact():
    a = np.arange(100, dtype=np.int32)
    assert verify(a, a.astype(np.int64))
    b = a.copy()
    b[50] += 1
    c = one(verify(b, a))
    assert not c.passed and c.mismatches == 1 and c.max_ulp == 1 and c.dtype == "int32"
    assert c.rule == "exact (int32)"
    assert verify(np.array([True, False]), np.array([True, False]))
    assert not verify(np.array([True, False]), np.array([True, True]))
    u = np.array([2**64 - 1, 0], np.uint64)
    assert verify(u, u.copy()) and one(verify(u, u[::-1].copy())).max_ulp == 2.0**64
    with pytest.raises(VerifyError, match="integers are compared exactly with integers"):
        verify(a, a.astype(np.float32))


def test_flat_outputs_take_the_references_shape():
    c = one(verify(GRID.reshape(-1).copy(), GRID))
    assert c.passed and c.shape == (64, 64) and c.tile_map.shape == (4, 4)
    assert verify(GRID, GRID.reshape(-1))


# ---------------------------------------------------------------------- categories

def test_missing():
    v = verify({"y": X}, {"y": X, "z": X})
    assert v.category == "missing" and not v and v["z"].reason == "no output named 'z' (the reference has one)"
    assert v["z"].tile_map is None and v.map("z") is None


def test_shape():
    c = one(verify(np.zeros((3, 4), np.float32), np.zeros((4, 3), np.float32)))
    assert c.category == "shape" and not c.passed
    assert c.reason == "out has shape (3, 4), the reference (4, 3)"


def test_zeros_fail_even_where_a_loose_atol_passes_them():
    small = np.full(100, 1e-6, np.float32)
    small[::3] = -2e-6
    c = one(verify(np.zeros(100, np.float32), small, atol=1e-3))
    assert c.mismatches == 0                              # the tolerance alone would pass
    assert not c.passed and c.category == "zeros" and c.trivial == "zeros"
    assert c.reason == ("out is all zeros, the reference is not: it passes the tolerance only "
                        "because the reference is small (max|ref| = 2e-06)")
    big = one(verify(np.zeros(1000, np.float32), X))
    assert big.category == "zeros" and big.reason.startswith("out is all zeros, the reference is not (")


def test_zeros_pass_where_the_reference_is_zero_in_the_outputs_format():
    assert verify(np.zeros(10, np.float32), np.zeros(10, np.float32))
    # float32 values that round to 0 in e4m3 (below half its smallest subnormal, 2**-10)
    tiny = np.full(10, 2.0 ** -12, np.float32)
    assert verify(np.zeros(10, np.uint8), tiny, "e4m3")
    assert not verify(np.zeros(10, np.uint8), np.full(10, 2.0 ** -8, np.float32), "e4m3")


def test_unchanged_fails_even_where_the_tolerance_passes_it():
    before = X * np.float32(1 + 2**-20)                       # close to the result already
    c = one(verify(before.copy(), X, initial=before, rtol=1e-3))
    assert c.mismatches == 0 and c.category == "unchanged" and c.trivial == "unchanged"
    sentinel = np.full(1000, np.nan, np.float32)
    assert one(verify(sentinel.copy(), X, initial=sentinel)).category == "unchanged"
    assert verify(X.copy(), X, initial=X.copy())              # the kernel had nothing to change
    assert one(verify(X.copy(), X, initial=sentinel)).passed
    with pytest.raises(VerifyError, match="initial: out before the launch has 3 elements"):
        verify(X, X, initial=np.zeros(3, np.float32))


def test_constant_fails_even_where_the_tolerance_passes_it():
    ref = np.float32(5) + RNG.uniform(-1e-4, 1e-4, 500).astype(np.float32)
    c = one(verify(np.full(500, 5, np.float32), ref, atol=1e-3))
    assert c.mismatches == 0 and c.category == "constant" and c.trivial == "constant"
    assert c.reason.startswith("out holds one value everywhere, the reference is not: it passes")
    # a reference that varies below the output's resolution is one value in its format
    fine = 1.0 + RNG.uniform(0, 1e-9, 500)
    assert verify(np.ones(500, np.float32), fine)


def test_a_copy_of_an_input_fails_even_where_the_tolerance_passes_it():
    x = X.copy()
    c = one(verify(x.copy(), X + np.float32(1e-4), atol=1e-3, inputs={"n": np.arange(1000), "x": x}))
    assert c.mismatches == 0 and c.category == "copy" and c.trivial == "copy of x"
    assert c.reason.startswith("out is a copy of x, the reference is not")
    assert verify(x.copy(), X, inputs={"x": x})                      # a copy kernel: ref is x too
    # a bfloat16 output that is the float32 input, rounded, while the reference is not
    bf = X.astype(ml_dtypes.bfloat16)
    ref = (X * np.float32(1 + 2**-12)).astype(ml_dtypes.bfloat16)
    assert one(verify(bf, ref, rtol=1e-2, inputs={"x": X})).category == "copy"
    assert verify(bf, ref, rtol=1e-2, inputs={"short": X[:10]})      # other sizes: no copies


def test_tail_1d():
    out = X.copy()
    out[995:] = 0
    c = one(verify(out, X))
    assert c.category == "tail" and c.mismatches == 5
    assert "all in the last tile of the grid along axis 0 (tile (256,), grid (4,))" in c.reason
    assert c.tile_map.tolist() == [0, 0, 0, 5]


def test_tail_2d_and_nan_sentinels_in_the_tail_are_a_tail():
    ref = RNG.uniform(1, 2, (40, 40)).astype(np.float32)
    out = ref.copy()
    out[:, 33:] = np.nan                                  # the partial last column of tiles
    c = one(verify(out, ref, tile=(16, 16)))
    assert c.category == "tail" and c.tile_map.shape == (3, 3)
    assert c.tile_map[:, 2].tolist() == [16 * 7, 16 * 7, 8 * 7] and c.tile_map[:, :2].sum() == 0
    assert "along axis 1" in c.reason and c.nan_misplaced == 40 * 7


def test_tile_edge():
    out = GRID.copy()
    out[::16] += 1                                        # the first row of every tile
    c = one(verify(out, GRID))
    assert c.category == "tile-edge" and c.mismatches == 4 * 64
    assert c.tile_map.tolist() == [[16] * 4] * 4
    assert "on the first or last row/column of their tile (tile (16, 16)), in 16 tiles" in c.reason
    inner = GRID.copy()
    inner[5::16, 5] += 1                                  # the inside of the tiles
    assert one(verify(inner, GRID)).category != "tile-edge"
    one_tile = GRID.copy()
    one_tile[0, 3] += 1                                   # an edge of one tile only
    assert one(verify(one_tile, GRID)).category != "tile-edge"


def test_special_nan_inf_and_flushed_subnormals():
    out = X.copy()
    where = RNG.choice(900, 20, replace=False)
    out[where] = np.nan
    c = one(verify(out, X))
    assert c.category == "special" and c.nan_misplaced == 20 and "20 NaN" in c.reason
    assert np.isinf(c.max_ulp)
    ref = X.copy()
    ref[[10, 300, 600]] = np.array([1e-40, -3e-42, 2e-39], np.float32)     # subnormals
    flushed = ref.copy()
    flushed[[10, 300, 600]] = 0
    c = one(verify(flushed, ref, ulp=4))
    assert c.category == "special" and "3 zero where the other side is subnormal" in c.reason
    big = np.full(300, np.finfo(np.float32).max, np.float32)
    inf = big.copy()
    inf[[3, 150, 299]] = np.inf                           # one ULP past max: still not equal
    c = one(verify(inf, big, ulp=1))
    assert not c.passed and c.category == "special" and c.inf_misplaced == 3


def test_nan_must_be_nan_and_zero_signs_pass_but_are_counted():
    ref = np.array([np.nan, 1.0, 0.0, -0.0, np.inf, -np.inf] * 50, np.float32)
    out = ref.copy()
    out[2], out[3] = -0.0, 0.0
    c = one(verify(out, ref))
    assert c.passed and c.zero_sign_misplaced == 2 and c.nan_misplaced == 0
    out[0] = 1.0
    c = one(verify(out, ref, atol=10))
    assert not c.passed and c.nan_misplaced == 1
    out[0], out[4] = np.nan, 1e30
    assert one(verify(out, ref, atol=1e31)).inf_misplaced == 1


def test_precision():
    out = X.copy()
    idx = RNG.choice(1000, 40, replace=False)
    out[idx] = (out[idx].view(np.uint32) + 3).view(np.float32)          # 3 ULPs each
    c = one(verify(out, X, ulp=1))
    assert c.category == "precision" and c.mismatches == 40 and "by at most 3x the bound" in c.reason
    assert c.max_ulp == 3
    far = X.copy()
    far[idx] = (far[idx].view(np.uint32) + 17).view(np.float32)         # beyond 16x the bound
    assert one(verify(far, X, ulp=1)).category == "wrong"


def test_wrong():
    out = X.copy()
    out[100:400:7] *= 3
    c = one(verify(out, X))
    assert c.category == "wrong" and c.reason.startswith("43 of 1000 elements outside the rule (worst at out[")


def test_the_categories_in_order_of_precedence():
    # tail, tile-edge, special, precision, wrong: the first that applies
    out = X.copy()
    out[-3:] = np.nan                                    # special values, and in the tail
    assert one(verify(out, X)).category == "tail"
    zeros = np.zeros(1000, np.float32)
    assert one(verify(zeros, X, inputs={"z": zeros})).category == "zeros"     # zeros before copy
    assert one(verify(zeros, X, initial=zeros.copy())).category == "zeros"    # ...and unchanged


# ---------------------------------------------------------------------- tiles

def test_tile_shapes():
    c = one(verify(GRID, GRID, tile=(8, 32)))
    assert c.tile == (8, 32) and c.tile_map.shape == (8, 2)
    c = one(verify(GRID, GRID, tile=100))                       # 1-D tile: the flattened output
    assert c.tile == (100,) and c.tile_map.shape == (41,)
    cube = np.zeros((3, 20, 20), np.float32)
    c = one(verify(cube, cube))
    assert c.tile == (1, 16, 16) and c.tile_map.shape == (3, 2, 2)
    s = one(verify(np.float32(2), np.float32(2)))
    assert s.passed and s.shape == () and s.tile_map.shape == (1,)
    for bad in [(0, 4), (2, 2, 2), "ab", (1.5, 2), ()]:
        with pytest.raises(VerifyError, match="tile="):
            verify(GRID, GRID, tile=bad)


def test_verdict_map_is_the_tile_map():
    out = GRID.copy()
    out[40, 3] += 1
    v = verify(out, GRID)
    assert v.map()[2, 0] == 1 and v.map().sum() == 1 and v.map() is v["out"].tile_map


# ---------------------------------------------------------------------- chunks

def fields(c):
    """An OutputCheck's fields but the p99's (which chunks may make approximate)."""
    d = {k: ("nan" if isinstance(v, float) and np.isnan(v) else v) for k, v in vars(c).items()}
    for k in ("p99_ulp", "p99_exact", "tile_map"):
        d.pop(k)
    return d


def scenarios():
    out = X.copy()
    out[[3, 400, 999]] = [np.nan, np.inf, 0.0]
    out[600:620] = (out[600:620].view(np.uint32) + 100).view(np.float32)
    tail = X.copy()
    tail[-2:] = 0
    const = np.full(1000, 7, np.float32)
    ref_const = np.full(1000, 7, np.float32)
    ref_const[-1] = 7.5                                  # differs only in the last chunk
    before = X.copy()
    before[-1] = 0                                       # differs from out only at the end
    grid = GRID.copy()
    grid[::16] += 1
    bits = to_bits(X, "e4m3")
    bits[::50] += 1
    return [(out, X, {}), (tail, X, {}), (const, ref_const, {}), (X.copy(), X, {"initial": before}),
            (X.copy(), X + 1, {"inputs": {"x": X}}), (grid, GRID, {}), (bits, X, {"dtype": "e4m3"}),
            (np.arange(1000), np.arange(1000)[::-1].copy(), {}), (X.copy(), X, {"reduction": 64})]


@pytest.mark.parametrize("case", range(9))
@pytest.mark.parametrize("chunk", [7, 64, 999])
def test_chunked_results_equal_unchunked(case, chunk):
    out, ref, kw = scenarios()[case]
    whole, parts = one(verify(out, ref, **kw)), one(verify(out, ref, chunk=chunk, **kw))
    assert fields(parts) == fields(whole)
    assert np.array_equal(parts.tile_map, whole.tile_map)
    assert whole.p99_exact
    assert parts.p99_ulp >= whole.p99_ulp if np.isfinite(whole.p99_ulp) else np.isinf(parts.p99_ulp)


def test_p99_exact_in_one_chunk_and_from_the_histogram_in_many():
    ref = np.ones(1000, np.float32)
    steps = np.zeros(1000, np.uint32)
    steps[:20] = 3                                       # 2% at 3 ULP
    steps[:5] = 1000                                     # 0.5% at 1000 ULP
    out = (ref.view(np.uint32) + steps).view(np.float32)
    whole = one(verify(out, ref, ulp=10000))
    assert (whole.p99_ulp, whole.p99_exact, whole.max_ulp) == (3, True, 1000)
    parts = one(verify(out, ref, ulp=10000, chunk=100))
    assert (parts.p99_ulp, parts.p99_exact) == (3, True)          # below 256: counted exactly
    steps[:20] = 300
    out = (ref.view(np.uint32) + steps).view(np.float32)
    assert one(verify(out, ref, ulp=10000)).p99_ulp == 300
    approx = one(verify(out, ref, ulp=10000, chunk=100))
    assert (approx.p99_ulp, approx.p99_exact) == (512, False)      # the bucket (256, 512]
    assert "p99 <= 512" in str(approx)
    with pytest.raises(VerifyError, match="chunk=0"):
        verify(out, ref, chunk=0)


def test_the_extra_memory_is_of_the_chunk_not_the_output():
    n, chunk = 1 << 20, 1 << 14
    out = RNG.standard_normal(n).astype(np.float32)
    for ref, kw in [(out.astype(np.float64), {}), (out.copy(), {"initial": out * 2, "inputs": {"x": out}})]:
        tracemalloc.start()
        v = verify(out, ref, chunk=chunk, **kw)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert v and peak <= v.peak_bytes < n * 8          # less than one float64 copy
        assert v.peak_bytes >= chunk * verifier_module._BYTES_PER_ELEMENT


# ---------------------------------------------------------------------- other array kinds

def test_ml_dtypes_arrays_and_bit_patterns_give_one_verdict():
    ref = X.astype(ml_dtypes.bfloat16)
    out = (ref.view(np.uint16) + 1).view(ml_dtypes.bfloat16)
    a, b = one(verify(out, ref)), one(verify(out.view(np.uint16), ref.view(np.uint16), "bf16"))
    assert fields(a) == fields(b) and a.passed and a.max_ulp == 1
    packed = to_bits(X.reshape(10, 100), "e2m1x2")
    c = one(verify(packed, X.reshape(10, 100), "e2m1x2", ulp=0.5))
    assert c.shape == (10, 100) and c.dtype == "e2m1"
    assert c.mismatches == int(np.count_nonzero(np.abs(X) > 6.25))      # beyond e2m1's max


def test_torch_tensors_on_the_cpu():
    torch = pytest.importorskip("torch")
    ref = torch.tensor(X).to(torch.bfloat16)
    out = ref.clone()
    out[10] = out[10] * 2
    c = one(verify(out, ref))
    assert c.dtype == "bfloat16" and c.mismatches == 1 and c.worst == (10,)
    assert verify(torch.tensor(X).to(torch.float8_e4m3fn), torch.tensor(X))


@pytest.mark.gpu
def test_cupy_arrays_are_checked_on_the_device():
    cupy = pytest.importorskip("cupy")
    for out, ref, kw in scenarios():
        dev = {k: ({n: cupy.asarray(a) for n, a in v.items()} if isinstance(v, dict) else
                   cupy.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        host, gpu = verify(out, ref, **kw), verify(cupy.asarray(out), cupy.asarray(ref), **dev)
        assert gpu.where == "device" and host.where == "host"
        assert fields(one(gpu)) == fields(one(host))
        assert np.array_equal(one(gpu).tile_map, one(host).tile_map)
        assert one(gpu).p99_ulp == one(host).p99_ulp
        mixed = verify(cupy.asarray(out), ref, **kw)
        assert fields(one(mixed)) == fields(one(host))
    parts = verify(cupy.asarray(X), cupy.asarray(X), chunk=100)
    assert parts and parts.where == "device"


@pytest.mark.gpu
def test_torch_cuda_tensors():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    ref = torch.tensor(X, device="cuda").to(torch.bfloat16)
    out = ref.clone()
    out[10] = out[10] * 2
    c = one(verify(out, ref, chunk=100))
    assert c.mismatches == 1 and c.worst == (10,)
    from cuda_magic.correctness.formats import _cupy
    assert verify(out, ref).where == ("device" if _cupy() else "host")
