"""The kernel corpus: realistic ``%%cuda`` cells in ``tests/kernels/`` and what each must bind.

One :class:`Case` per file.  ``kernels`` is exactly the set of Python names the cell
binds (name -> parameter count), ``symbols`` the binary entry each one binds to (the
same with NVRTC and nvcc: Itanium mangling, or the plain name for ``extern "C"``).
Binding names: the C++ name when unique in the binary; template instances
``ops::axpy<float, 256>`` -> ``axpy_float_256``; one name in two namespaces ->
``naive_relu`` / ``vec4_relu``; overloads -> name plus the sanitised parameter types
(``scale(float*, float, int)`` -> ``scale_float_ptr_float_int``).  ``aliases`` are other
spellings ``m[...]`` must accept.  ``run(module)`` launches every kernel on NumPy arrays
and checks it against a NumPy reference (GPU tests only).  Cases with ``hangs=True`` deadlock
on the GPU by design (a wrong mbarrier parity, a divergent ``__syncthreads()``): they have no
``run``, every runner that launches kernels leaves them out (:data:`LAUNCHED`), the
compile-only tests build them like any case, and their ``// HANG:`` comments say where each
group of warps waits (:func:`hang_waits`): run them only inside ``isolate(True)``.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import math
import pathlib
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Case", "CASES", "LAUNCHED", "KERNELS", "missing", "include_dir", "hang_waits"]

KERNELS = pathlib.Path(__file__).with_name("kernels")


@dataclass(frozen=True)
class Case:
    file: str
    kernels: dict                   # python name -> number of parameters: exactly what is bound
    symbols: dict                   # python name -> the binary's entry symbol
    flags: tuple = ()               # extra flags for the active compiler's list (prefer //| headers)
    requires: str | None = None     # "cutlass", "curand", "crt": pip packages the headers come from
    compilers: tuple = ("nvrtc", "nvcc")
    run: Callable | None = None     # GPU check: run(module) launches and asserts against NumPy
    aliases: dict = field(default_factory=dict)   # another spelling -> python name
    structs: dict = field(default_factory=dict)   # by-value struct parameter type -> size in bytes
    arch: str | None = None         # an arch the case needs instead of the tests' (sm_100a)
    hangs: bool = False             # deadlocks on the GPU by design: never launched but isolated

    @property
    def id(self) -> str:
        return self.file.removesuffix(".cu")

    @property
    def text(self) -> str:
        return (KERNELS / self.file).read_text()

    def __repr__(self) -> str:
        return f"Case({self.file})"


# --- where the optional headers come from ---------------------------------------------------

def include_dir(requires: str) -> pathlib.Path | None:
    """The include directory that holds ``requires``' headers (``"cutlass"``, ``"curand"``,
    ``"crt"``), found where cuda-magic finds it (pip wheels, site directories, CUDA_HOME, the
    system toolkit: ``headers.header_dirs``), or None when not installed."""
    from cuda_magic.compile.toolkit_headers import header_dirs
    if requires not in ("cutlass", "curand", "crt"):
        raise ValueError(f"unknown requirement {requires!r}")
    path = header_dirs().get(requires)
    return pathlib.Path(path) if path else None


def missing(case: Case, compiler: str) -> str | None:
    """Why ``case`` cannot be built with ``compiler`` here (a pip extra not installed), or None."""
    if compiler == "nvcc":
        from cuda_magic.tools import find
        try:
            find("nvcc")
        except Exception:
            return "nvcc is not installed (pip install 'cuda-magic[nvcc]')"
        if case.requires == "crt":    # nvcc brings its own crt headers
            return None
    if case.requires and include_dir(case.requires) is None:
        return f"{case.file} needs the {case.requires} headers, which are not installed"
    return None


# --- GPU checks -----------------------------------------------------------------------------

def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _close(got, want, rtol, atol, what):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def run_layernorm(m):
    N, C = 37, 300
    r = _rng(1)
    x = r.standard_normal((N, C), dtype=np.float32) * 3 + 1
    w = r.standard_normal(C, dtype=np.float32)
    b = r.standard_normal(C, dtype=np.float32)
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1)
    rs = 1.0 / np.sqrt(x64.var(axis=1) + 1e-5)
    want = (x64 - mu[:, None]) * rs[:, None] * w + b

    out, mean, rstd = np.zeros_like(x), np.zeros(N, np.float32), np.zeros(N, np.float32)
    m["layernorm_warp"][_cdiv(N, 4), 128](out, mean, rstd, x, w, b, N, C)   # 4 warps, 4 rows
    _close(mean, mu, 1e-5, 1e-5, "layernorm_warp mean")
    _close(rstd, rs, 1e-4, 0, "layernorm_warp rstd")
    _close(out, want, 1e-4, 1e-4, "layernorm_warp out")

    out2 = np.zeros_like(x)
    m["layernorm_block"][N, 256](out2, x, w, b, C, 1e-5)
    _close(out2, want, 1e-4, 1e-4, "layernorm_block out")


def run_cg_collectives(m):
    n, r = 1024, _rng(11)
    x = r.standard_normal(n).astype(np.float32)
    k = r.integers(-1000, 1000, n).astype(np.int32)
    sums, mins, maxs = np.zeros(n // 32, np.float32), np.zeros(n // 16, np.int32), np.zeros(n // 16, np.int32)
    xors = np.zeros(n // 16, np.uint32)
    m["tile_reduce"][n // 256, 256](x, k, sums, mins, maxs, xors, n)
    _close(sums, x.astype(np.float64).reshape(-1, 32).sum(axis=1), 1e-5, 1e-5, "tile_reduce sums")
    tiles = k.reshape(-1, 16)
    assert (mins == tiles.min(axis=1)).all() and (maxs == tiles.max(axis=1)).all(), "tile min/max"
    assert (xors == np.bitwise_xor.reduce(tiles.view(np.uint32), axis=1)).all(), "tile xor"

    v = r.integers(-50, 50, n).astype(np.int32)
    inc, exc = np.zeros(n, np.int32), np.zeros(n, np.int32)
    m["warp_scan"][n // 256, 256](v, inc, exc, n)
    want = np.cumsum(v.reshape(-1, 32), axis=1).reshape(-1)
    assert (inc == want).all() and (exc == want - v).all(), "warp_scan"

    key = r.integers(0, 100, n).astype(np.int32)
    rank, size, label = np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int32)
    m["groups"][n // 256, 256](key, rank, size, label, n)
    for w in range(n // 32):
        kw = key[32 * w:32 * (w + 1)]
        odd = (kw & 1) == 1
        assert (rank[32 * w:32 * (w + 1)] == np.where(odd, np.cumsum(odd) - 1, -1)).all(), "rank"
        assert (size[32 * w:32 * (w + 1)] == np.where(odd, odd.sum(), 0)).all(), "size"
        sums_by = {lab: int(kw[kw % 4 == lab].sum()) for lab in range(4)}
        assert (label[32 * w:32 * (w + 1)] == [sums_by[int(c) % 4] for c in kw]).all(), "label"

    h = r.uniform(-4, 4, n).astype(np.float16)
    y = np.zeros(n, np.float16)
    m["half_pairs"][n // 256, 256](h, y, n)
    pair = h[np.arange(n) ^ 1]
    assert (y == (h.astype(np.float32) + pair.astype(np.float32)).astype(np.float16)).all(), "half"

    xs = r.standard_normal(n).astype(np.float32)
    ys = np.zeros(n, np.float32)
    m["staged_reverse"][n // 256, 256](xs, ys)
    assert (ys == xs.reshape(-1, 256)[:, ::-1].reshape(-1)).all(), "staged_reverse"


def run_wmma(m):
    M, N, K = 64, 48, 32
    r = _rng(2)
    a = r.uniform(-1, 1, (M, K)).astype(np.float16)
    bmat = r.uniform(-1, 1, (K, N)).astype(np.float16)
    c = r.uniform(-1, 1, (M, N)).astype(np.float32)
    alpha, beta = 1.5, 0.5
    want = alpha * (a.astype(np.float64) @ bmat.astype(np.float64)) + beta * c
    b_colmajor = np.ascontiguousarray(bmat.T)            # (N, K): B stored column-major
    # 4 x 4 warps per block, each one 16 x 16 tile: a block covers 64 x 64 of C.
    m["wmma_gemm"][(_cdiv(M, 64), _cdiv(N, 64)), (128, 4)](a, b_colmajor, c, M, N, K, alpha, beta)
    # fp16 inputs are exact products in fp32; only the fp32 accumulation order differs.
    _close(c, want, 1e-3, 1e-3, "wmma_gemm")


PHILOX_BYTES = 64   # sizeof(curandStatePhilox4_32_10_t)


def run_curand(m):
    n, per = 1024, 64
    states = np.zeros(n * PHILOX_BYTES, np.uint8)
    m["setup_states"][_cdiv(n, 256), 256](states, 1234, n)
    first = np.zeros((per, n), np.float32)
    m["generate_uniform"][_cdiv(n, 256), 256](states, first, per, n)
    u = first.ravel()
    assert np.all(u > 0) and np.all(u <= 1), "curand_uniform is in (0, 1]"
    sigma = math.sqrt(1 / 12 / u.size)
    assert abs(u.mean() - 0.5) < 6 * sigma, u.mean()
    assert abs(u.var() - 1 / 12) < 0.005, u.var()
    counts = np.histogram(u, bins=16, range=(0, 1))[0]
    expect = u.size / 16
    assert np.all(np.abs(counts - expect) < 6 * math.sqrt(expect)), counts

    # The states were copied back: a second call continues each stream.
    second = np.zeros_like(first)
    m["generate_uniform"][_cdiv(n, 256), 256](states, second, per, n)
    assert not np.array_equal(first, second)

    # Same seed, same numbers; another seed, other numbers.
    again = np.zeros(n * PHILOX_BYTES, np.uint8)
    m["setup_states"][_cdiv(n, 256), 256](again, 1234, n)
    repeat = np.zeros_like(first)
    m["generate_uniform"][_cdiv(n, 256), 256](again, repeat, per, n)
    np.testing.assert_array_equal(repeat, first)
    other = np.zeros(n * PHILOX_BYTES, np.uint8)
    m["setup_states"][_cdiv(n, 256), 256](other, 4321, n)
    different = np.zeros_like(first)
    m["generate_uniform"][_cdiv(n, 256), 256](other, different, per, n)
    assert np.mean(different == first) < 0.01

    z = np.zeros(8192, np.float32)
    m["normal_xorwow"][_cdiv(z.size, 256), 256](z, 42, z.size)
    assert abs(z.mean()) < 6 / math.sqrt(z.size), z.mean()
    assert abs(z.std() - 1) < 0.05, z.std()
    z2 = np.zeros_like(z)
    m["normal_xorwow"][_cdiv(z.size, 256), 256](z2, 42, z.size)
    np.testing.assert_array_equal(z2, z)


def run_cute(m):
    M, N = 64, 256                                     # multiples of the 32 x 128 tile
    src = _rng(3).standard_normal((M, N), dtype=np.float32)
    dst = np.zeros_like(src)
    m["cute_tile_copy"][(M // 32, N // 128), 256](src, dst, M, N)
    np.testing.assert_array_equal(dst, src)
    dst_t = np.zeros((N, M), np.float32)
    m["cute_tile_transpose"][(M // 32, N // 128), 256](src, dst_t, M, N)
    np.testing.assert_array_equal(dst_t, src.T)


def run_cub(m):
    r = _rng(4)
    n = 1000
    x = r.standard_normal(n, dtype=np.float32)
    for block in (128, 256):
        partial = np.zeros(_cdiv(n, block), np.float32)
        m[f"block_sum_{block}"][partial.size, block](x, partial, n)
        padded = np.zeros(partial.size * block, np.float64)
        padded[:n] = x
        _close(partial, padded.reshape(-1, block).sum(axis=1), 1e-5, 1e-4, f"block_sum<{block}>")

    n = 3000
    ints = r.integers(-50, 50, n, dtype=np.int32)
    out = np.zeros_like(ints)
    tile = 256 * 4
    m["block_scan_tile"][_cdiv(n, tile), 256](ints, out, n)
    want = np.concatenate([np.cumsum(ints[s:s + tile]) for s in range(0, n, tile)]).astype(np.int32)
    np.testing.assert_array_equal(out, want)


def run_ns_template(m):
    r = _rng(5)
    n = 5000
    x = r.standard_normal(n, dtype=np.float32)
    y = r.standard_normal(n, dtype=np.float32)
    want = 2.5 * x.astype(np.float64) + y
    m["axpy_float_256"][8, 256](2.5, x, y, n)          # grid-stride: 8 blocks cover 5000
    _close(y, want, 1e-6, 1e-6, "ops::axpy<float, 256>")

    xd, yd = r.standard_normal(n), r.standard_normal(n)
    want_d = -0.75 * xd + yd
    m["ops::axpy<double, 128>"][16, 128](-0.75, xd, yd, n)
    _close(yd, want_d, 1e-14, 1e-14, "ops::axpy<double, 128>")

    out = np.zeros(777, np.int32)
    m["fill_int"][_cdiv(out.size, 128), 128](out, -7, out.size)
    assert np.all(out == -7)
    m["iota"][_cdiv(out.size, 128), 128](out, 10, out.size)
    np.testing.assert_array_equal(out, np.arange(10, 10 + out.size, dtype=np.int32))


def run_typedef_api(m):
    r = _rng(6)
    n, stride = 100, 3
    x = r.standard_normal(n * stride, dtype=np.float32)
    y = r.standard_normal(n * stride, dtype=np.float32)
    want = y.copy()
    want[::stride] = 2.0 * x[::stride] + y[::stride]
    m["saxpy_strided"][1, 128](y, x, 2.0, n, stride)
    _close(y, want, 1e-6, 1e-6, "saxpy_strided")

    src = r.standard_normal(50, dtype=np.float32)
    idx = r.integers(0, src.size, 200, dtype=np.int64)
    out = np.zeros(idx.size, np.float32)
    m["gather"][1, 256](out, src, idx, idx.size)
    np.testing.assert_array_equal(out, src[idx])

    v = r.standard_normal(1000, dtype=np.float32)
    v[r.random(v.size) < 0.3] = 0
    count = np.zeros(1, np.uint64)
    m["count_nonzero"][_cdiv(v.size, 256), 256](v, count, v.size)
    assert int(count[0]) == int(np.count_nonzero(v))


def run_enum_instances(m):
    keys = np.array([5, 1, 7, 3], np.float32)
    m["bitonic_step<Order::Ascending>"][1, 4](keys, 1, 2)     # j=1, k=2: pairs (0,1) up, (2,3) down
    assert keys.tolist() == [1, 5, 7, 3], keys
    m["bitonic_step<Order::Descending>"][1, 4](keys, 1, 2)    # the same pairs, the other way
    assert keys.tolist() == [5, 1, 3, 7], keys
    wide = np.zeros(300, np.int64)
    m["fill_value<int64_t>"][2, 256](wide, np.int64(1) << 40, wide.size)
    assert (wide == 1 << 40).all()
    narrow = np.zeros(300, np.int32)
    m["fill_value<int>"][2, 256](narrow, 7, narrow.size)
    assert (narrow == 7).all()


def run_enable_if_return(m):
    x = np.arange(300, dtype=np.float32)
    m["scale_inplace<float>"][2, 256](x, 0.5, x.size)
    _close(x, np.arange(300) * 0.5, 0, 0, "scale_inplace<float>")
    d = np.arange(300, dtype=np.float64)
    m["scale_inplace_double"][2, 256](d, 3.0, d.size)
    _close(d, np.arange(300) * 3.0, 0, 0, "scale_inplace<double>")
    i = np.arange(300, dtype=np.int32)
    m["add_offset_int"][2, 256](i, -7, i.size)
    assert (i == np.arange(300) - 7).all()


def run_if_variants(m):
    x = np.linspace(-10, 25, 1001, dtype=np.float32)
    y = np.zeros_like(x)
    m["softplus"][_cdiv(x.size, 256), 256](x, y, x.size)
    want = np.where(x > 20, x.astype(np.float64), np.logaddexp(0, x.astype(np.float64)))
    _close(y, want, 1e-4, 1e-5, "softplus (USE_FAST)")

    a = np.arange(300, dtype=np.float32)
    m["scale_f32"][2, 256](a, 0.5, a.size)
    _close(a, np.arange(300) * 0.5, 0, 0, "scale_f32")
    d = np.arange(300, dtype=np.float64)
    m["scale_f64"][2, 256](d, 3.0, d.size)
    _close(d, np.arange(300) * 3.0, 0, 0, "scale_f64")


def run_overloads(m):
    f = np.arange(500, dtype=np.float32)
    m["scale_float_ptr_float_int"][2, 256](f, 2.0, f.size)
    _close(f, np.arange(500) * 2.0, 0, 0, "scale(float*, float, int)")
    d = np.arange(500, dtype=np.float64)
    m["scale_double_ptr_double_int"][2, 256](d, 0.25, d.size)
    _close(d, np.arange(500) * 0.25, 0, 0, "scale(double*, double, int)")

    x = _rng(7).standard_normal(1024, dtype=np.float32)
    want = np.maximum(x, 0)
    y = np.zeros_like(x)
    m["naive_relu"][4, 256](x, y, x.size)
    np.testing.assert_array_equal(y, want)
    y = np.zeros_like(x)
    m["vec4::relu"][1, 256](x, y, x.size)              # 256 threads x 4 elements
    np.testing.assert_array_equal(y, want)


def run_tensormap(m):
    from cuda.bindings import driver as drv

    def ok(result):
        err = result[0] if isinstance(result, tuple) else result
        assert int(err) == 0, err
        return result[1] if isinstance(result, tuple) and len(result) == 2 else None

    rows, cols = 40, 72                                # not multiples of the 16 x 32 box
    src = _rng(8).standard_normal((rows, cols), dtype=np.float32)
    k = m["tma_scale_tile"]
    # The tensor map holds a device address, so the source lives in memory of our own, in
    # the context the module was loaded in (device 0's primary context).
    m.load()
    if int(ok(drv.cuCtxGetCurrent())) == 0:
        ok(drv.cuCtxSetCurrent(ok(drv.cuDevicePrimaryCtxRetain(ok(drv.cuDeviceGet(0))))))
    ptr = ok(drv.cuMemAlloc(src.nbytes))
    try:
        ok(drv.cuMemcpyHtoD(ptr, src.ctypes.data, src.nbytes))
        T = drv.CUtensorMapDataType, drv.CUtensorMapInterleave, drv.CUtensorMapSwizzle, \
            drv.CUtensorMapL2promotion, drv.CUtensorMapFloatOOBfill
        u64, u32 = drv.cuuint64_t, drv.cuuint32_t
        tmap = ok(drv.cuTensorMapEncodeTiled(
            T[0].CU_TENSOR_MAP_DATA_TYPE_FLOAT32, u32(2), ptr,
            [u64(cols), u64(rows)], [u64(cols * 4)],      # innermost dimension first
            [u32(32), u32(16)], [u32(1), u32(1)],         # box = BN x BM, dense
            T[1].CU_TENSOR_MAP_INTERLEAVE_NONE, T[2].CU_TENSOR_MAP_SWIZZLE_NONE,
            T[3].CU_TENSOR_MAP_L2_PROMOTION_NONE, T[4].CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))
        raw = ctypes.string_at(tmap.getPtr(), 128)           # the 128-byte CUtensorMap, by value
        out = np.zeros_like(src)
        k[(_cdiv(cols, 32), _cdiv(rows, 16)), 128](raw, out, rows, cols, -2.0)
        np.testing.assert_array_equal(out, -2.0 * src)
    finally:
        drv.cuMemFree(ptr)


def run_histogram(m):
    r = _rng(9)
    data = r.integers(0, 256, 100_003, dtype=np.uint8)
    data[:5000] = 7                                    # a hot bin: many colliding atomics
    hist = np.zeros(256, np.uint32)
    m["histogram_u8"][64, 256](data, data.size, hist)
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=256))

    words = data[: data.size // 4 * 4].view(np.uint32)  # little-endian: byte k of word = data[4i+k]
    hist4 = np.zeros(256, np.uint32)
    m["histogram_u8x4"][32, 256](words, words.size, hist4)
    np.testing.assert_array_equal(hist4, np.bincount(data[: words.size * 4], minlength=256))


def run_transpose(m):
    height, width = 70, 100
    a = _rng(10).standard_normal((height, width), dtype=np.float32)
    grid = (_cdiv(width, 32), _cdiv(height, 32))
    t = np.zeros((width, height), np.float32)
    m["transpose_tiled"][grid, (32, 8)](t, a, width, height)
    np.testing.assert_array_equal(t, a.T)
    c = np.zeros_like(a)
    m["copy_tiled"][grid, (32, 8)](c, a, width, height)
    np.testing.assert_array_equal(c, a)


def _stdout(launch) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        launch()
    return buf.getvalue()


def run_printf_assert(m):
    x = np.arange(256, dtype=np.float32) / 4
    text = _stdout(lambda: m["print_blocks"][4, 64](x, x.size))
    lines = sorted(ln for ln in text.splitlines() if ln.startswith("block "))
    assert lines == [f"block {b} of 4: x[{64 * b}] = {x[64 * b]:.2f}" for b in range(4)], text

    v = np.ones(64, np.float32)
    v[[1, 5, 9]] = -1                                  # warp 0: 3 negatives; warp 1: 2
    v[[40, 63]] = -2
    text = _stdout(lambda: m["print_negatives"][1, 64](v, v.size))
    assert sorted(ln for ln in text.splitlines() if ln.startswith("warp ")) == \
        ["warp 0: 3 negative", "warp 1: 2 negative"], text

    # A passing assert: the kernel runs and computes (a failing one would end CUDA in the process).
    s = np.linspace(0, 100, 1000, dtype=np.float32)
    y = np.zeros_like(s)
    m["checked_sqrt"][4, 256](s, y, s.size)
    _close(y, np.sqrt(s.astype(np.float64)), 2e-6, 1e-6, "checked_sqrt")


def run_std_headers(m):
    r = _rng(11)
    n = 600
    x = r.standard_normal(n, dtype=np.float32) * 10
    x[[3, 100, 300]] = np.nan
    x[512:] = np.nan                                   # block 2: no numbers at all
    out = np.zeros(2 * _cdiv(n, 256), np.float32)
    m["block_minmax"][_cdiv(n, 256), 256](x, n, out)
    for b in range(_cdiv(n, 256)):
        part = x[256 * b: 256 * (b + 1)]
        finite = part[~np.isnan(part)]
        want = (finite.min(), finite.max()) if finite.size else (np.inf, -np.inf)
        assert tuple(out[2 * b: 2 * b + 2]) == want, (b, out[2 * b: 2 * b + 2], want)

    big = np.float32(2147483520.0)                     # the largest float below 2**31
    v = np.array([-3.7, 2.5, 0.0, 1e10, -1e10, np.nan, big, -2147483648.0, np.inf, -np.inf],
                 np.float32)
    y = np.zeros(v.size, np.int32)
    m["saturate_to_int"][1, 32](v, y, v.size)
    want = np.array([-3, 2, 0, 2**31 - 1, -2**31, 0, 2147483520, -2**31, 2**31 - 1, -2**31],
                    np.int32)
    np.testing.assert_array_equal(y, want)

    w = np.array([1.5, np.nan, np.inf, -np.inf, -0.5], np.float32)
    m["nan_to_num"][1, 32](w, w.size)
    np.testing.assert_array_equal(
        w, np.array([1.5, 0, np.finfo(np.float32).max, -np.finfo(np.float32).max, -0.5], np.float32))

    rows, cols = 50, 33
    a = r.standard_normal((rows, cols), dtype=np.float32)
    a[r.random(a.shape) < 0.1] = np.nan
    idx = np.zeros(rows, np.int32)
    m["row_argmax"][1, 64](a, idx, rows, cols)
    np.testing.assert_array_equal(idx, np.nanargmax(a, axis=1))


def run_template_args(m):
    r = _rng(7)
    x = r.integers(-50, 50, 1000).astype(np.int32)
    out = np.zeros(1, np.int32)
    m["reduce7<int, 256, true>"][_cdiv(x.size, 256), 256](x, out, x.size)
    assert out[0] == -x.sum(), (out[0], -x.sum())
    slots = np.zeros(512, np.int32)
    m.multi_warp_cg_reduce_int_512_64[_cdiv(x.size, 256), 256](x, slots, x.size)
    want = np.zeros(512, np.int64)
    np.add.at(want, (np.arange(x.size) // 64) % 512, x)
    np.testing.assert_array_equal(slots, want)
    f = r.standard_normal(300).astype(np.float32)
    acc = np.full_like(f, 0.25)
    m.combine_128_MODE_MAX[_cdiv(f.size, 128), 128](f, acc, f.size)
    _close(acc, np.maximum(0.25, f), 0, 0, "combine MAX, Scale::One")
    acc2 = np.ones_like(f)
    m.combine_64_MODE_SUM_Scale_Half[_cdiv(f.size, 64), 64](f, acc2, f.size)
    _close(acc2, 1 + f / 2, 1e-6, 0, "combine SUM, Scale::Half")
    y = f.copy()
    m.shape[_cdiv(y.size, 128), 128](y, y.size)
    _close(y, np.clip(f, 0, 1), 0, 0, "shape<> = shape<true, false>")


def run_cub_heat(m):
    n, block = 1000, 256
    x = _rng(21).standard_normal(n, dtype=np.float32)
    blocks = _cdiv(n, block)
    padded = np.zeros(blocks * block, np.float64)
    padded[:n] = x
    partial = np.zeros(blocks, np.float32)
    m["sum_squares"][blocks, block](x, partial, n)
    _close(partial, (padded ** 2).reshape(-1, block).sum(axis=1), 1e-5, 1e-4, "sum_squares")
    m["max_abs"][blocks, block](x, partial, n)
    np.testing.assert_array_equal(partial, np.abs(padded).reshape(-1, block).max(axis=1))


# --- the corpus ------------------------------------------------------------------------------

def run_pdl_implicit(m):
    n = 1000
    x = _rng(21).integers(0, 40000, n).astype(np.uint32)
    y = np.zeros(n, np.uint16)
    m["produce"][_cdiv(n, 256), 256](x, y, n)
    np.testing.assert_array_equal(y, np.minimum(3 * x.astype(np.int64), 65535).astype(np.uint16))
    out = np.zeros(n, np.int64)
    m["consume"][_cdiv(n, 256), 256](y, out, 2**31 - 70000, n)
    np.testing.assert_array_equal(out, np.minimum(y.astype(np.int64) + 2**31 - 70000, 2**31 - 1))
    b = _rng(22).integers(0, 256, 4 * 64).astype(np.uint8)
    words = np.zeros(64, np.uint64)
    m["pack_bytes"][1, 64](b, words, 64)
    np.testing.assert_array_equal(words, b.view("<u4").astype(np.uint64))


def run_constexpr_helpers(m):
    tile, threads, blocks = 16 * 64, 128, 3
    n = tile * blocks - 100
    x = _rng(23).standard_normal(n, dtype=np.float32)
    out = np.zeros(blocks * threads, np.float32)
    m["tile_squares"][blocks, threads](x, out, n)
    padded = np.zeros(tile * blocks, np.float64)
    padded[:n] = x.astype(np.float64) ** 2
    want = padded.reshape(blocks, 8, threads).sum(axis=1).ravel()
    _close(out, want, 1e-5, 1e-5, "tile_squares")
    n2 = 70
    a = np.arange(1, n2 + 1, dtype=np.int32)
    p = np.full(96 + 32, -1, np.int32)
    m["pad_to_warps"][1, 128](a, p, n2)
    np.testing.assert_array_equal(p[:96], np.concatenate([a, np.zeros(26, np.int32)]))
    assert np.all(p[96:] == -1)


def run_wgmma_regs(m):
    n = 1000
    x = _rng(24).standard_normal(n, dtype=np.float32)
    out = np.zeros_like(x)
    m["specialized_scale"][_cdiv(n, 128), 256](x, out, 1.5, n)
    np.testing.assert_array_equal(out, np.float32(1.5) * x)
    out2 = np.zeros_like(x)
    m["fenced_copy"][_cdiv(n, 256), 256](x, out2, n)
    np.testing.assert_array_equal(out2, x)


def _tensor_map(drv, ptr, dtype: str, rows: int, cols: int, itemsize: int, box: tuple,
                swizzle: str = "NONE") -> bytes:
    """A 2-D tiled CUtensorMap over the row-major (rows, cols) array at device address ``ptr``,
    box (box_cols, box_rows), as the 128 bytes a ``__grid_constant__ CUtensorMap`` takes."""
    T = drv.CUtensorMapDataType, drv.CUtensorMapInterleave, drv.CUtensorMapSwizzle, \
        drv.CUtensorMapL2promotion, drv.CUtensorMapFloatOOBfill
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    err, tmap = drv.cuTensorMapEncodeTiled(
        getattr(T[0], f"CU_TENSOR_MAP_DATA_TYPE_{dtype}"), u32(2), ptr,
        [u64(cols), u64(rows)], [u64(cols * itemsize)], [u32(box[0]), u32(box[1])],
        [u32(1), u32(1)], T[1].CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(T[2], f"CU_TENSOR_MAP_SWIZZLE_{swizzle}"), T[3].CU_TENSOR_MAP_L2_PROMOTION_NONE,
        T[4].CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    assert int(err) == 0, err
    return ctypes.string_at(tmap.getPtr(), 128)


def _on_device(drv, array: np.ndarray):
    """A device copy of ``array`` in device 0's primary context (made current): its address."""
    err, ctx = drv.cuCtxGetCurrent()
    if int(ctx) == 0:
        drv.cuCtxSetCurrent(drv.cuDevicePrimaryCtxRetain(drv.cuDeviceGet(0)[1])[1])
    err, ptr = drv.cuMemAlloc(array.nbytes)
    assert int(err) == 0, err
    (err,) = drv.cuMemcpyHtoD(ptr, array.ctypes.data, array.nbytes)
    assert int(err) == 0, err
    return ptr


def run_tma_wgmma_gemm(m):
    import ml_dtypes
    from cuda.bindings import driver as drv
    M, N, K = 128, 192, 256
    r = _rng(31)
    a = r.standard_normal((M, K), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = r.standard_normal((N, K), dtype=np.float32).astype(ml_dtypes.bfloat16)
    m.load()
    pa, pb = _on_device(drv, a), _on_device(drv, b)
    try:
        ta = _tensor_map(drv, pa, "BFLOAT16", M, K, 2, (64, 64), "128B")
        tb = _tensor_map(drv, pb, "BFLOAT16", N, K, 2, (64, 64), "128B")
        c = np.zeros((M, N), np.float32)
        m["tma_wgmma_gemm"][(N // 64, M // 64), 128](ta, tb, c, M, N, K)
        ref = a.astype(np.float64) @ b.astype(np.float64).T
        _close(c, ref, 1e-3, 1e-3 * np.abs(ref).max(), "tma_wgmma_gemm")
    finally:
        drv.cuMemFree(pa)
        drv.cuMemFree(pb)


def run_warp_specialized(m):
    from cuda.bindings import driver as drv
    tiles = 16                                 # two blocks of eight 32 x 32 tiles
    x = _rng(32).standard_normal((tiles * 32, 32), dtype=np.float32)
    m.load()
    px = _on_device(drv, x)
    try:
        t = _tensor_map(drv, px, "FLOAT32", tiles * 32, 32, 4, (32, 32))
        # not ws_scale_greedy: it asks for more registers than the SM has, and would hang
        for name, block in (("ws_scale_regs", 256), ("ws_scale", 256)):
            out = np.zeros_like(x)
            m[name][tiles // 8, block](t, out, -0.5)
            np.testing.assert_array_equal(out, np.float32(-0.5) * x, err_msg=name)
    finally:
        drv.cuMemFree(px)


def run_cluster_dsmem(m):
    n = 8 * 256
    x = _rng(33).standard_normal(n, dtype=np.float32)
    out = np.zeros_like(x)
    m["cluster_swap"][n // 256, 256](x, out, n)
    want = x.reshape(-1, 2, 256)[:, ::-1].reshape(-1)     # each pair of blocks swaps its slices
    np.testing.assert_array_equal(out, want)


def run_pipeline_concepts(m):
    n = 1000
    x = _rng(25).integers(0, 2**62, n, dtype=np.uint64)
    out = np.zeros_like(x)
    m["staged_twice"][_cdiv(n, 256), 256](x, out, n)
    np.testing.assert_array_equal(out, x * np.uint64(2))
    f = _rng(26).standard_normal(n, dtype=np.float32)
    yf = np.zeros_like(f)
    m["axpb_float"][_cdiv(n, 256), 256](f, yf, 2.0, 0.5, n)
    _close(yf, 2 * f.astype(np.float64) + 0.5, 1e-6, 1e-6, "axpb_float")
    i = np.arange(n, dtype=np.int32)
    yi = np.zeros_like(i)
    m["axpb_int32_t"][_cdiv(n, 256), 256](i, yi, 3, -7, n)
    np.testing.assert_array_equal(yi, 3 * i - 7)


def run_dynamic_parallelism(m):
    rows, cols = 37, 300
    mat = _rng(31).standard_normal((rows, cols), dtype=np.float32)
    factors = _rng(32).standard_normal(rows, dtype=np.float32)
    want = mat * factors[:, None]
    m["scale_rows"][_cdiv(rows, 32), 32](mat, factors, rows, cols)   # child grids finish first
    np.testing.assert_array_equal(mat, want)
    out = np.zeros((rows, cols), np.float32)
    m["fill_then_scale"][_cdiv(rows, 32), 32](out, rows, cols, 1.5, -2.0)
    np.testing.assert_array_equal(out, np.repeat(((1.5 + np.arange(rows)) * -2.0)
                                                 .astype(np.float32)[:, None], cols, axis=1))


def run_pdl_devrt(m):
    rows, cols = 37, 300
    n = rows * cols
    x = _rng(33).standard_normal(n, dtype=np.float32)
    bias = _rng(34).standard_normal(cols, dtype=np.float32)
    y, out = np.zeros(n, np.float32), np.zeros(n, np.float32)
    m["scale_rows"].launch(_cdiv(n, 256), 256, (x, y, np.float32(1.5), n))
    m["add_bias"].launch(_cdiv(n, 256), 256, (y, bias, out, n, cols), pdl=True)
    np.testing.assert_array_equal(out, np.float32(1.5) * x + np.tile(bias, rows))
    mat = out.reshape(rows, cols).copy()
    m["relaunch"][_cdiv(rows, 32), 32](mat, rows, cols)
    np.testing.assert_array_equal(mat, -out.reshape(rows, cols))


def run_timeline_pipeline(m):
    tiles, per_block = 16, 4                  # four blocks of four 1024-float tiles
    x = _rng(35).standard_normal(tiles * 1024, dtype=np.float32)
    for block in (128, 64):
        y = np.zeros_like(x)
        m["staged_scale"][tiles // per_block, block](x, y, np.float32(-0.5), per_block)
        np.testing.assert_array_equal(y, np.float32(-0.5) * x, err_msg=f"block {block}")


def run_cub_umbrella(m):
    n = 1000
    x = _rng(27).standard_normal(n, dtype=np.float32)
    blocks = _cdiv(n, 128)
    out = np.zeros(2 * blocks, np.float32)
    m["block_sum_max"][blocks, 128](x, out, n)
    pad = np.concatenate([x.astype(np.float64), np.zeros(blocks * 128 - n)]).reshape(blocks, 128)
    _close(out[0::2], pad.sum(axis=1), 1e-4, 1e-4, "block sums")
    np.testing.assert_array_equal(out[1::2], [x[b * 128:(b + 1) * 128].max() for b in range(blocks)])
    v = _rng(28).integers(-50, 50, n).astype(np.int32)
    s = np.zeros_like(v)
    m["warp_prefix"][_cdiv(n, 128), 128](v, s, n)
    seg = np.concatenate([v, np.zeros(_cdiv(n, 32) * 32 - n, np.int32)]).reshape(-1, 32)
    np.testing.assert_array_equal(s, np.cumsum(seg, axis=1).ravel()[:n])
    o = np.zeros_like(x)
    m["cg_copy_twice"][_cdiv(n, 256), 256](x, o, n)
    np.testing.assert_array_equal(o, 2 * x)


CASES: tuple[Case, ...] = (
    Case("layernorm_cg.cu", {"layernorm_warp": 8, "layernorm_block": 6},
         {"layernorm_warp": "layernorm_warp", "layernorm_block": "layernorm_block"},
         run=run_layernorm),
    Case("cg_collectives.cu", {"tile_reduce": 7, "warp_scan": 4, "groups": 5, "half_pairs": 3,
                               "staged_reverse": 2},
         {"tile_reduce": "tile_reduce", "warp_scan": "warp_scan", "groups": "groups",
          "half_pairs": "half_pairs", "staged_reverse": "staged_reverse"},
         run=run_cg_collectives),
    Case("wmma_gemm.cu", {"wmma_gemm": 8}, {"wmma_gemm": "wmma_gemm"},
         requires="crt", run=run_wmma),
    Case("curand_init.cu", {"setup_states": 3, "generate_uniform": 4, "normal_xorwow": 3},
         {"setup_states": "setup_states", "generate_uniform": "generate_uniform",
          "normal_xorwow": "normal_xorwow"},
         requires="curand", run=run_curand),
    # NVRTC: the newest nvidia-cutlass wheel (4.2) and CCCL 3 (CUDA 13) declare std::tuple_size
    # differently under NVRTC; test_corpus.py checks the error says so and what to do.
    Case("cute_copy.cu", {"cute_tile_copy": 4, "cute_tile_transpose": 4},
         {"cute_tile_copy": "cute_tile_copy", "cute_tile_transpose": "cute_tile_transpose"},
         requires="cutlass", run=run_cute, compilers=("nvcc",)),
    Case("cub_block.cu", {"block_sum_128": 3, "block_sum_256": 3, "block_scan_tile": 3},
         {"block_sum_128": "_Z9block_sumILi128EEvPKfPfi",
          "block_sum_256": "_Z9block_sumILi256EEvPKfPfi",
          "block_scan_tile": "block_scan_tile"},
         aliases={"block_sum<128>": "block_sum_128", "block_sum<256>": "block_sum_256"},
         run=run_cub),
    Case("ns_template.cu", {"axpy_float_256": 4, "axpy_double_128": 4, "fill_int": 3, "iota": 3},
         {"axpy_float_256": "_ZN3ops4axpyIfLi256EEEvT_PKS1_PS1_i",
          "axpy_double_128": "_ZN3ops4axpyIdLi128EEEvT_PKS1_PS1_i",
          "fill_int": "_ZN3ops4fillIiEEvPT_S1_i",
          "iota": "_ZN3ops4util4iotaEPiii"},
         aliases={"ops::axpy<float, 256>": "axpy_float_256", "ops::axpy<double,128>": "axpy_double_128",
                  "ops::fill<int>": "fill_int", "ops::util::iota": "iota"},
         run=run_ns_template),
    Case("typedef_api.cu", {"saxpy_strided": 5, "gather": 4, "count_nonzero": 3},
         {"saxpy_strided": "saxpy_strided", "gather": "gather", "count_nonzero": "count_nonzero"},
         run=run_typedef_api),
    Case("enum_instances.cu", {"bitonic_step_Order_Ascending": 3,
                               "bitonic_step_Order_Descending": 3, "fill_value_int": 3,
                               "fill_value_int64_t": 3},
         {"bitonic_step_Order_Ascending": "_Z12bitonic_stepIL5Order0EEvPfii",
          "bitonic_step_Order_Descending": "_Z12bitonic_stepIL5Order1EEvPfii",
          "fill_value_int": "_Z10fill_valueIiEvPT_S0_i",
          "fill_value_int64_t": "_Z10fill_valueIlEvPT_S0_i"},
         aliases={"bitonic_step<Order::Ascending>": "bitonic_step_Order_Ascending",
                  "bitonic_step<Order::Descending>": "bitonic_step_Order_Descending",
                  "fill_value<int64_t>": "fill_value_int64_t", "fill_value<int>": "fill_value_int"},
         run=run_enum_instances),
    Case("enable_if_return.cu", {"scale_inplace_float": 3, "scale_inplace_double": 3,
                                 "add_offset_int": 3},
         {"scale_inplace_float":
          "_Z13scale_inplaceIfEN6detail9enable_ifIXsr6detail7is_realIT_EE5valueEvE4typeEPS2_S2_i",
          "scale_inplace_double":
          "_Z13scale_inplaceIdEN6detail9enable_ifIXsr6detail7is_realIT_EE5valueEvE4typeEPS2_S2_i",
          "add_offset_int":
          "_Z10add_offsetIiEN6detail9enable_ifIXntsr6detail7is_realIT_EE5valueEvE4typeEPS2_S2_i"},
         aliases={"scale_inplace<float>": "scale_inplace_float"},
         run=run_enable_if_return),
    Case("if_variants.cu", {"softplus": 3, "scale_f32": 3, "scale_f64": 3},
         {"softplus": "softplus", "scale_f32": "scale_f32", "scale_f64": "scale_f64"},
         run=run_if_variants),
    Case("overloads.cu", {"scale_float_ptr_float_int": 3, "scale_double_ptr_double_int": 3,
                          "naive_relu": 3, "vec4_relu": 3},
         {"scale_float_ptr_float_int": "_Z5scalePffi",
          "scale_double_ptr_double_int": "_Z5scalePddi",
          "naive_relu": "_ZN5naive4reluEPKfPfi", "vec4_relu": "_ZN4vec44reluEPKfPfi"},
         aliases={"naive::relu": "naive_relu", "vec4::relu": "vec4_relu"},
         run=run_overloads),
    Case("tensormap.cu", {"tma_scale_tile": 5}, {"tma_scale_tile": "tma_scale_tile"},
         structs={"CUtensorMap": 128}, run=run_tensormap),
    Case("histogram.cu", {"histogram_u8": 3, "histogram_u8x4": 3},
         {"histogram_u8": "histogram_u8", "histogram_u8x4": "histogram_u8x4"},
         run=run_histogram),
    Case("transpose.cu", {"transpose_tiled": 4, "copy_tiled": 4},
         {"transpose_tiled": "transpose_tiled", "copy_tiled": "copy_tiled"},
         run=run_transpose),
    Case("printf_assert.cu", {"print_blocks": 2, "checked_sqrt": 3, "print_negatives": 2},
         {"print_blocks": "print_blocks", "checked_sqrt": "checked_sqrt",
          "print_negatives": "print_negatives"},
         run=run_printf_assert),
    Case("std_headers.cu", {"block_minmax": 3, "saturate_to_int": 3, "nan_to_num": 2,
                            "row_argmax": 4},
         {"block_minmax": "block_minmax", "saturate_to_int": "saturate_to_int",
          "nan_to_num": "nan_to_num", "row_argmax": "row_argmax"},
         run=run_std_headers),
    Case("cub_heat.cu", {"sum_squares": 3, "max_abs": 3},
         {"sum_squares": "sum_squares", "max_abs": "max_abs"}, run=run_cub_heat),
    # names as written in the explicit instantiations, never 256u / 512ul / (Mode)1 / <true, false>
    Case("template_args.cu", {"reduce7_int_256_true": 3, "multi_warp_cg_reduce_int_512_64": 3,
                              "combine_128_MODE_MAX": 3, "combine_64_MODE_SUM_Scale_Half": 3,
                              "shape": 2},
         {"reduce7_int_256_true": "_Z7reduce7IiLj256ELb1EEvPKT_PS0_j",
          "multi_warp_cg_reduce_int_512_64": "_Z20multi_warp_cg_reduceIiLm512ELm64EEvPKT_PS0_m",
          "combine_128_MODE_MAX": "_Z7combineILi128EL4Mode1EL5Scale1EEvPKfPfi",
          "combine_64_MODE_SUM_Scale_Half": "_Z7combineILi64EL4Mode0EL5Scale2EEvPKfPfi",
          "shape": "_Z5shapeILb1ELb0EEvPfi"},
         aliases={"reduce7<int, 256, true>": "reduce7_int_256_true",
                  "reduce7<int, 256u, true>": "reduce7_int_256_true",
                  "multi_warp_cg_reduce<int,512,64>": "multi_warp_cg_reduce_int_512_64",
                  "combine<128, MODE_MAX>": "combine_128_MODE_MAX", "shape<>": "shape",
                  "shape<true, false>": "shape"},
         run=run_template_args),
    # What nvcc gives implicitly and a second corpus of real code trips on
    Case("pdl_implicit.cu", {"produce": 3, "consume": 4, "pack_bytes": 3},
         {"produce": "_Z7producePKjPtj", "consume": "_Z7consumePKtPllj",
          "pack_bytes": "_Z10pack_bytesPKhPmj"}, run=run_pdl_implicit),
    Case("constexpr_helpers.cu", {"tile_squares": 3, "pad_to_warps": 3},
         {"tile_squares": "_Z12tile_squaresPKfPfi", "pad_to_warps": "_Z12pad_to_warpsPKiPii"},
         run=run_constexpr_helpers),
    Case("wgmma_regs.cu", {"specialized_scale": 4, "fenced_copy": 3},
         {"specialized_scale": "_Z17specialized_scalePKfPffi", "fenced_copy": "_Z11fenced_copyPKfPfi"},
         run=run_wgmma_regs),
    Case("tma_wgmma_gemm.cu", {"tma_wgmma_gemm": 6}, {"tma_wgmma_gemm": "tma_wgmma_gemm"},
         structs={"CUtensorMap": 128}, run=run_tma_wgmma_gemm),
    Case("warp_specialized.cu", {"ws_scale_regs": 3, "ws_scale": 3, "ws_scale_greedy": 3},
         {"ws_scale_regs": "ws_scale_regs", "ws_scale": "ws_scale",
          "ws_scale_greedy": "ws_scale_greedy"}, structs={"CUtensorMap": 128},
         run=run_warp_specialized),
    Case("cluster_dsmem.cu", {"cluster_swap": 3}, {"cluster_swap": "cluster_swap"},
         run=run_cluster_dsmem),
    Case("tma_im2col.cu", {"im2col_taps": 5}, {"im2col_taps": "im2col_taps"},
         structs={"CUtensorMap": 128}),
    # Blackwell only: compiled and inspected here; the GPU machine (an H200) cannot run it
    Case("tcgen05_mma.cu", {"tcgen05_gemm": 6}, {"tcgen05_gemm": "tcgen05_gemm"},
         structs={"CUtensorMap": 128}, arch="sm_100a"),
    Case("pipeline_concepts.cu", {"staged_twice": 3, "axpb_float": 5, "axpb_int32_t": 5},
         {"staged_twice": "_Z12staged_twicePKmPmi", "axpb_float": "_Z4axpbIfEvPKT_PS0_S0_S0_i",
          "axpb_int32_t": "_Z4axpbIiEvPKT_PS0_S0_S0_i"}, run=run_pipeline_concepts),
    # CCCL 3.0's <cub/cub.cuh> (CUDA 13.0's nvcc) instantiates cub::detail::EmptyKernel<void>
    # itself: never bound (NOT_THE_CELLS, compile/binary/_entries.py)
    Case("cub_umbrella.cu", {"block_sum_max": 3, "warp_prefix": 3, "cg_copy_twice": 3},
         {"block_sum_max": "_Z13block_sum_maxPKfPfi", "warp_prefix": "_Z11warp_prefixPKiPii",
          "cg_copy_twice": "_Z13cg_copy_twicePKfPfi"}, run=run_cub_umbrella),
    Case("dynamic_parallelism.cu",
         {"scale_row": 3, "fill_row": 3, "scale_rows": 4, "fill_then_scale": 5},
         {"scale_row": "_Z9scale_rowPffi", "fill_row": "_Z8fill_rowPffi",
          "scale_rows": "_Z10scale_rowsPfPKfii", "fill_then_scale": "_Z15fill_then_scalePfiiff"},
         run=run_dynamic_parallelism),
    # what NVIDIA's docs tell NVRTC users: the PDL functions from <cuda_device_runtime_api.h>,
    # -rdc=true (NVRTC then declares the device runtime itself), beside the pre-include
    # marks for k.timeline (<cuda_magic/timeline.h>, supplied to both compilers): nothing in
    # this ordinary build
    Case("timeline_pipeline.cu", {"staged_scale": 4}, {"staged_scale": "staged_scale"},
         run=run_timeline_pipeline),
    Case("pdl_devrt.cu", {"scale_rows": 4, "add_bias": 5, "negate_row": 2, "relaunch": 3},
         {"scale_rows": "_Z10scale_rowsPKfPffi", "add_bias": "_Z8add_biasPKfS0_Pfii",
          "negate_row": "_Z10negate_rowPfi", "relaunch": "_Z8relaunchPfii"},
         run=run_pdl_devrt),
    # kernels that hang on the GPU by design (hangs=True: no generic runner launches them; the
    # GPU tests of the hang diagnosis run them inside isolate(True)); the deadlock check
    # (inspect/deadlock.py) says nothing of the first and warns of the second before the launch
    Case("hang_parity.cu", {"parity_pipeline": 3}, {"parity_pipeline": "parity_pipeline"},
         hangs=True),
    Case("hang_divergent_sync.cu", {"divergent_stage": 3}, {"divergent_stage": "divergent_stage"},
         hangs=True),
)

# Kernels a file defines but must never be bound (inside #if 0 and the like).
NOT_BOUND = {"if_variants.cu": ("softplus_old",)}

assert len({c.file for c in CASES}) == len(CASES)
assert all(c.run is None for c in CASES if c.hangs)
LAUNCHED = tuple(c for c in CASES if not c.hangs)     # what a runner that launches may launch
assert all(set(c.kernels) == set(c.symbols) for c in CASES)
assert all(re.fullmatch(r"[A-Za-z_]\w*", name) for c in CASES for name in c.kernels)


def _params():
    import pytest
    return [pytest.param(case, compiler, id=f"{case.id}-{compiler}")
            for case in CASES for compiler in case.compilers]


BUILDS = _params()     # every case x compiler, as pytest params ``case, compiler``


def hang_waits(case: Case) -> list[tuple[str, int, str]]:
    """``(which warps, line, what)`` per ``// HANG: <warps> wait(s) at line N (<what>)`` comment
    of a case that hangs: where the hang diagnosis must find each group of warps."""
    found = re.findall(r"^// HANG: (.+?) waits? at line (\d+) \((.+)\)\s*$", case.text, re.M)
    return [(who, int(line), what) for who, line, what in found]


def skip_unless_gpu_runs(case: Case) -> None:
    """Skip the test when ``case`` is built for an arch (``Case.arch``) the GPU here cannot run
    (the sm_100a kernels on an sm_90 GPU)."""
    import pytest

    from cuda_magic.compile.arch import detect_arch
    gpu = detect_arch()
    if case.arch and gpu and case.arch.rstrip("af") != gpu.rstrip("af"):
        pytest.skip(f"{case.file} is built for {case.arch}; the GPU is {gpu}")


def build_case(case: Case, compiler: str):
    """``case`` built (not loaded) with ``compiler`` for the tests' arch; skips the test when the
    compiler or the case's headers are not installed."""
    import shlex

    import pytest

    import cuda_magic
    from conftest import ARCH
    reason = missing(case, compiler)
    if reason:
        pytest.skip(reason)
    extra = {compiler: shlex.join(case.flags)} if case.flags else {}
    return cuda_magic.build(case.text, cuda_magic.line_config(arch=case.arch or ARCH,
                                                              compiler=compiler, **extra), load=False)
