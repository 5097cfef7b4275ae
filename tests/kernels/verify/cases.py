"""The verify corpus: kernels in this folder, each launched by ``k.verify`` against a NumPy
reference, and the verdict each must get: "pass" (a correct kernel: a reduction in another
order, atomics, fast math, one ULP off in bfloat16, fp8 ties rounded the other way...) or the
category of its bug (:data:`cuda_magic.correctness.verdict.CATEGORIES`).

One :class:`Case` per (kernel, launch): ``launch()`` gives ``(grid, block, args)`` (sizes
chosen so the bug shows: n = 1000 with blocks of 256, so the last block is partial),
``reference`` is called with host copies of the arguments, ``rule`` holds the other keywords
of ``k.verify`` (the tolerance, ``inputs``, ``inplace``, ``runs``, ``tile``).  ``expect`` is
one category, or a tuple of the ones a race can honestly end in (whether its runs differ is
up to the GPU's scheduling).  tests/suites/test_verify_corpus.py compiles every file and runs
every case.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from cuda_magic.correctness import from_bits, to_bits

__all__ = ["Case", "CASES", "FOLDER", "KERNELS"]

FOLDER = pathlib.Path(__file__).parent
N, B = 1000, 256                       # a partial last block
G = -(-N // B)


@dataclass(frozen=True)
class Case:
    name: str                   # unique id
    file: str
    kernel: str
    launch: Callable            # () -> (grid, block, args)
    reference: Callable         # host copies of the arguments -> the outputs
    expect: str | tuple         # "pass", a category, or the categories a race may end in
    rule: dict = field(default_factory=dict)     # more keywords of k.verify
    note: str = ""

    @property
    def correct(self) -> bool:
        return self.expect == "pass"

    @property
    def expected(self) -> tuple:
        return self.expect if isinstance(self.expect, tuple) else (self.expect,)

    @property
    def text(self) -> str:
        return (FOLDER / self.file).read_text()

    def __repr__(self) -> str:
        return f"Case({self.name})"


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _f32(n=N, seed=0, scale=1.0) -> np.ndarray:
    return (_rng(seed).standard_normal(n) * scale).astype(np.float32)


def _out(n=N, dtype=np.float32) -> np.ndarray:
    return np.zeros(n, dtype)


def _blocks(x, n, fn, size=B) -> np.ndarray:
    """``fn`` over each block of ``size`` of ``x[:n]`` (float64 for sums)."""
    return np.array([fn(x[s:min(s + size, n)]) for s in range(0, n, size)])


def _f64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


# --- the references ------------------------------------------------------------------------------

def scale_ref(x, y, a, n):
    with np.errstate(over="ignore", invalid="ignore"):
        return np.float32(a) * x[:n]


def scale_past_end_ref(x, y, a, n):
    y[:n] = np.float32(a) * x[:n]         # y[n] keeps what it had: nothing may write it
    return y


def axpy_ref(x, y, z, a, n):
    return np.float32(a) * x + y


def exp_ref(x, y, n):
    return np.exp(_f64(x))


def neg_recip_ref(x, y, n):
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return np.float32(1) / -x[:n]


def reverse_ref(x, y, n):
    return x.reshape(-1, 1024)[:, ::-1].reshape(-1)


def block_sums_ref(x, partial, n):
    return _blocks(_f64(x), n, np.sum)


def dot_ref(x, y, partial, n):
    return _blocks(_f64(x) * _f64(y), n, np.sum)


def total_ref(x, total, n):
    return total + _f64(x[:n]).sum()


def transpose_ref(a, out, rows, cols):
    return a.reshape(rows, cols).T


def _stencil(x, n):
    x = _f64(x[:n])
    p = np.concatenate([[0.0], x, [0.0]])
    return 0.25 * p[:-2] + 0.5 * p[1:-1] + 0.25 * p[2:]


def stencil_ref(x, y, n):
    return _stencil(x, n)


def blur_ref(x, y, h, w):
    p = np.pad(_f64(x).reshape(h, w), 1)
    return sum(p[r:r + h, c:c + w] for r in range(3) for c in range(3)) / 9.0


def _gemm64(a, b, M, N, K):
    return from_bits(a, "bfloat16").reshape(M, K) @ from_bits(b, "bfloat16").reshape(K, N)


def gemm_ref(a, b, c, M, N, K):
    return _gemm64(a, b, M, N, K)


def gemm_bf16_ref(a, b, c, M, N, K):
    """float32 products summed by NumPy, rounded to bfloat16: a reference in the output's
    own format (a kernel's one-ULP differences in rounding pass)."""
    a32 = from_bits(a, "bfloat16").reshape(M, K).astype(np.float32)
    b32 = from_bits(b, "bfloat16").reshape(K, N).astype(np.float32)
    return to_bits(a32 @ b32, "bfloat16")


def splitk_ref(a, b, c, M, N, K):
    return _f64(c) + _gemm64(a, b, M, N, K)


def quant_ref(limit):
    def ref(x, y, scale, n):
        return np.clip(np.float32(scale) * x, -limit, limit)
    return ref


def dequant_ref(q, y, scale, n):
    return (from_bits(q, "e4m3") * np.float32(scale)).astype(np.float32)


def clip_ref(limit):
    def ref(x, y, n):
        return np.clip(x, -limit, limit)
    return ref


def block_max_ref(x, partial, n):
    return _blocks(x, n, np.max)


def global_max_ref(x, best, n):
    return np.maximum(best, x[:n].max())


def histogram_ref(data, bins, n):
    return bins + np.bincount(data[:n], minlength=256).astype(np.uint32)


def int_sum_ref(x, total, n):
    return total + x[:n].sum(dtype=np.int64).astype(np.int32)


def scan_ref(x, y, n):
    out = np.empty(n, np.int64)
    for s in range(0, n, B):
        out[s:s + B] = np.cumsum(x[s:min(s + B, n)].astype(np.int64))
    return out.astype(np.int32)


def softmax_ref(x, y, cols):
    v = _f64(x).reshape(-1, cols)
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# --- the launches -------------------------------------------------------------------------------

def elementwise(grid=G, n=N, size=N):
    return lambda: (grid, B, (_f32(size), _out(size), 2.0, n))


def unary(n=N, x=None, grid=None, block=B):
    def launch():
        return (grid or -(-n // block), block, (_f32(n) if x is None else x(), _out(n), n))
    return launch


def _ties() -> np.ndarray:
    """Values halfway between neighbouring e4m3 values (subnormals included), both signs,
    among random ones: where rounding to nearest even and away from zero part."""
    grid = np.unique(np.abs(from_bits(np.arange(0x7F, dtype=np.uint8), "e4m3")))
    mids = (grid[:-1] + grid[1:]) / 2
    x = np.concatenate([mids, -mids, _f32(N - 2 * mids.size, 5) * 16])
    return _rng(6).permutation(x).astype(np.float32)


def quant(scale, x=None, n=N):
    return lambda: (G, B, (_f32(n) if x is None else x(), _out(n, np.uint8), scale, n))


def gemm(out=np.uint16, split=1, M=64, Nc=48, K=256):
    def launch():
        r = _rng(7)
        a = to_bits(r.standard_normal((M, K)), "bfloat16")
        b = to_bits(r.standard_normal((K, Nc)), "bfloat16")
        return ((-(-Nc // 16), -(-M // 16), split), (16, 16), (a, b, np.zeros((M, Nc), out), M, Nc, K))
    return launch


def reduce_to(parts=G, grid=G, with_y=False, total=False):
    def launch():
        out = np.zeros(1 if total else parts, np.float32)
        xs = (_f32(), _f32(seed=1)) if with_y else (_f32(),)
        return (grid, B, (*xs, out, N))
    return launch


def transpose(grid=(3, 4), rows=100, cols=70):
    def launch():
        return (grid, (32, 8), (_f32(rows * cols).reshape(rows, cols), np.zeros((cols, rows), np.float32),
                                rows, cols))
    return launch


def blur(h=100, w=90):
    return lambda: ((-(-w // 16), -(-h // 16)), (16, 16), (_f32(h * w).reshape(h, w),
                                                           np.zeros((h, w), np.float32), h, w))


def histogram(n=5000):
    def launch():
        data = _rng(8).integers(0, 256, n).astype(np.uint8)
        return (4, B, (data, np.zeros(256, np.uint32), n))
    return launch


def ints(total=False):
    def launch():
        x = _rng(9).integers(-100, 101, N).astype(np.int32)
        return (G, B, (x, np.zeros(1 if total else N, np.int32), N))
    return launch


def softmax(scale=1.0, rows=37, cols=300):
    return lambda: (rows, 128, (_f32(rows * cols, 10, scale).reshape(rows, cols),
                                np.zeros((rows, cols), np.float32), cols))


def negative(n=N):
    return lambda: -1.0 - np.abs(_f32(n, 11))


EDGE = dict(inputs="edge")
RACE = ("nondeterministic", "wrong")
TILE32 = dict(tile=(32, 32))


def _cases() -> list[Case]:
    E, P, R, Q, S, T, M, I, X = ("elementwise.cu", "precise.cu", "reduce.cu", "quantize.cu",
                                 "stencil.cu", "transpose.cu", "maxreduce.cu", "integers.cu",
                                 "softmax.cu")
    c = Case
    return [
        # ---- correct
        c("scale", E, "scale", elementwise(), scale_ref, "pass"),
        c("scale-edge", E, "scale", elementwise(), scale_ref, "pass", EDGE,
          "edge values, the count cut to 769, x one element off alignment"),
        c("scale-grid-stride", E, "scale_grid_stride", lambda: (2, 128, (_f32(), _out(), 2.0, N)),
          scale_ref, "pass"),
        c("scale-vec4", E, "scale_vec4", lambda: (1, B, (_f32(1002), _out(1002), 2.0, 1002)),
          scale_ref, "pass", note="float4 loads, n % 4 = 2 done one by one"),
        c("axpy-fma", E, "axpy_fma", lambda: (G, B, (_f32(), _f32(seed=1), _out(), 2.0, N)),
          axpy_ref, "pass", note="one rounding (fmaf) against NumPy's two"),
        c("exp-accurate", P, "exp_accurate", unary(x=lambda: _rng(3).uniform(-20, 20, N).astype(np.float32)),
          exp_ref, "pass", dict(ulp=2, inputs="given"), "expf within its documented 2 ULP"),
        c("neg-recip-edge", P, "neg_recip", unary(), neg_recip_ref, "pass", EDGE),
        c("reverse-blocks", P, "reverse_blocks", unary(n=64 * 1024, block=1024), reverse_ref, "pass"),
        c("block-sum-tree", R, "block_sum_tree", reduce_to(), block_sums_ref, "pass",
          dict(reduction=B), "tree order against NumPy's pairwise float64 sum"),
        c("block-sum-shfl", R, "block_sum_shfl", reduce_to(), block_sums_ref, "pass",
          dict(reduction=B), "warp shuffles"),
        c("block-sum-serial", R, "block_sum_serial", reduce_to(), block_sums_ref, "pass",
          dict(reduction=B), "one thread, left to right"),
        c("total-sum-atomic", R, "total_sum_atomic", reduce_to(grid=2, total=True), total_ref, "pass",
          dict(reduction=N, inplace=["total"], inputs={"x": "random"}),
          "atomics in any order, judged as a reduction of n terms"),
        c("dot-tree", R, "dot_tree", reduce_to(with_y=True), dot_ref, "pass", dict(reduction=B)),
        c("transpose-tiled", T, "transpose_tiled", transpose(), transpose_ref, "pass", TILE32),
        c("transpose-naive", T, "transpose_naive", transpose(), transpose_ref, "pass", TILE32),
        c("transpose-unpadded", T, "transpose_unpadded", transpose(), transpose_ref, "pass", TILE32),
        c("stencil3", S, "stencil3", unary(), stencil_ref, "pass"),
        c("stencil3-direct", S, "stencil3_direct", unary(), stencil_ref, "pass"),
        c("blur3x3", S, "blur3x3", blur(), blur_ref, "pass"),
        c("gemm-bf16-vs-bf16", "gemm_bf16.cu", "gemm_bf16", gemm(), gemm_bf16_ref, "pass",
          note="fp32 sums rounded to bf16 against NumPy's fp32 sums rounded to bf16: one ULP apart at ties"),
        c("gemm-bf16-vs-f64", "gemm_bf16.cu", "gemm_bf16", gemm(), gemm_ref, "pass"),
        c("gemm-bf16-tiled", "gemm_bf16.cu", "gemm_bf16_tiled", gemm(), gemm_ref, "pass"),
        c("gemm-bf16-splitk", "gemm_bf16.cu", "gemm_bf16_splitk", gemm(out=np.float32, split=4),
          splitk_ref, "pass", dict(reduction=256, inplace=["c"]),
          "split-K: four fp32 partial sums added into C by atomics"),
        c("quant-e4m3", Q, "quant_e4m3", quant(16.0), quant_ref(448), "pass"),
        c("quant-e4m3-ties-away", Q, "quant_e4m3_ties_away", quant(1.0, _ties), quant_ref(448), "pass",
          dict(inputs="given"), "ties away from zero: exactly 0.5 ULP from a float32 reference"),
        c("quant-e5m2", Q, "quant_e5m2", quant(16.0), quant_ref(57344), "pass"),
        c("dequant-e4m3", Q, "dequant_e4m3",
          lambda: (G, B, (to_bits(_f32() * 8, "e4m3", saturate=True), _out(), 0.5, N)), dequant_ref,
          "pass"),
        c("quant-e2m3", Q, "quant_e2m3", lambda: (G, B, (_f32(scale=2.0), _out(N, np.uint8), N)),
          clip_ref(7.5), "pass"),
        c("quant-fp4", Q, "quant_fp4", lambda: (2, B, (_f32(scale=2.0), _out(N // 2, np.uint8), N // 2)),
          clip_ref(6.0), "pass", note="two codes per byte against float32 values"),
        c("block-max-edge", M, "block_max", reduce_to(), block_max_ref, "pass", EDGE,
          "NaN propagates as in np.max"),
        c("global-max-atomic", M, "global_max_atomic",
          lambda: (G, B, (_f32(), np.full(1, -np.inf, np.float32), N)), global_max_ref, "pass",
          dict(inplace=["best"], inputs={"x": "random"})),
        c("histogram", I, "histogram256", histogram(), histogram_ref, "pass",
          dict(inplace=["bins"], inputs={"data": "random"})),
        c("int-sum-atomic", I, "int_sum_atomic", ints(total=True), int_sum_ref, "pass",
          dict(inplace=["total"], inputs={"x": "random"})),
        c("block-scan", I, "block_scan_inclusive", ints(), scan_ref, "pass"),
        c("softmax", X, "softmax_rows", softmax(), softmax_ref, "pass"),
        c("softmax-fast", X, "softmax_rows_fast", softmax(), softmax_ref, "pass",
          note="__expf: a few ULP, inside float32's default"),

        # ---- wrong
        c("scale-tail", E, "scale_tail", elementwise(), scale_ref, "tail", note="i < n - 1"),
        c("scale-grid-rounded-down", E, "scale", elementwise(grid=N // B), scale_ref, "tail",
          note="grid n / 256: the partial block never runs"),
        c("scale-zeros", E, "scale_zeros", elementwise(), scale_ref, "zeros"),
        c("scale-nothing", E, "scale_nothing", elementwise(), scale_ref, "unchanged"),
        c("scale-constant", E, "scale_constant", elementwise(), scale_ref, "constant"),
        c("scale-copy", E, "scale_copy", elementwise(), scale_ref, "copy"),
        c("scale-reversed", E, "scale_reversed", elementwise(), scale_ref, "wrong"),
        c("scale-past-end", E, "scale_past_end", elementwise(size=N + 1), scale_past_end_ref, "tail",
          note="i <= n writes y[n], which the reference leaves as it was"),
        c("exp-fast", P, "exp_fast", unary(x=lambda: _rng(3).uniform(-20, 20, N).astype(np.float32)),
          exp_ref, "precision", dict(ulp=2, inputs="given"), "__expf where 2 ULP is asked for"),
        c("neg-recip-signed-zero", P, "neg_recip_signed_zero", unary(), neg_recip_ref, "special", EDGE,
          "1 / (0 - x): +Inf at x = +0"),
        c("reverse-blocks-racy", P, "reverse_blocks_racy", unary(n=64 * 1024, block=1024), reverse_ref,
          RACE, dict(runs=4), "no __syncthreads between the shared store and load"),
        c("total-sum-whole-blocks", R, "total_sum_whole_blocks", reduce_to(grid=2, total=True), total_ref,
          "wrong", dict(reduction=N, inplace=["total"], inputs={"x": "random"}),
          "n / 256 blocks: the last partial block dropped"),
        c("block-sum-nosync", "reduce_bugs.cu", "block_sum_nosync", reduce_to(), block_sums_ref, RACE,
          dict(reduction=B, runs=4), "no __syncthreads in the tree"),
        c("block-sum-short", "reduce_bugs.cu", "block_sum_short", reduce_to(), block_sums_ref, "wrong",
          dict(reduction=B), "the loop stops one step early"),
        c("block-sum-pad-last", "reduce_bugs.cu", "block_sum_pad_last", reduce_to(), block_sums_ref,
          "tail", dict(reduction=B), "the partial block padded with x[n-1]"),
        c("dot-self", "reduce_bugs.cu", "dot_self", reduce_to(with_y=True), dot_ref, "wrong",
          dict(reduction=B)),
        c("transpose-not-flipped", T, "transpose_tile_not_flipped", transpose(), transpose_ref, "wrong",
          TILE32),
        c("transpose-grid-rounded-down", T, "transpose_tiled", transpose(grid=(2, 3)), transpose_ref,
          "tail", TILE32, "grid rows / 32, cols / 32: the partial tiles never run"),
        c("stencil3-no-halo", S, "stencil3_no_halo", unary(), stencil_ref, "tile-edge"),
        c("stencil3-clamped-end", S, "stencil3_clamped_end", unary(), stencil_ref, "tail"),
        c("blur3x3-no-halo", S, "blur3x3_no_halo", blur(), blur_ref, "tile-edge"),
        c("gemm-bf16-f16acc", "gemm_bf16.cu", "gemm_bf16_f16acc", gemm(K=16384), gemm_bf16_ref,
          "precision", note="fp16 accumulator in a bf16 GEMM"),
        c("gemm-bf16-truncated", "gemm_bf16.cu", "gemm_bf16_truncated", gemm(), gemm_ref, "precision",
          dict(ulp=0.5), "toward zero where correctly rounded is asked for"),
        c("gemm-bf16-k-short", "gemm_bf16.cu", "gemm_bf16_k_short", gemm(K=16), gemm_ref, "wrong",
          note="K = 16: the product left out is large next to the sums"),
        c("quant-e4m3-truncated", Q, "quant_e4m3_truncated", quant(16.0), quant_ref(448), "precision",
          note="truncation instead of round to nearest even"),
        c("quant-e4m3-nosat", Q, "quant_e4m3_nosat", quant(300.0), quant_ref(448), "special",
          note="__NV_NOSAT: NaN past 464 where saturation was meant"),
        c("quant-e4m3-as-e5m2", Q, "quant_e4m3_as_e5m2", quant(16.0), quant_ref(448), "wrong"),
        c("quant-fp4-truncated", Q, "quant_fp4_truncated",
          lambda: (2, B, (_f32(scale=2.0), _out(N // 2, np.uint8), N // 2)), clip_ref(6.0), "precision"),
        c("block-max-fmaxf", M, "block_max_fmaxf", reduce_to(), block_max_ref, "special", EDGE,
          "fmaxf drops the NaN np.max keeps"),
        c("block-max-from-zero", M, "block_max_from_zero",
          lambda: (G, B, (negative()(), np.zeros(G, np.float32), N)), block_max_ref, "zeros",
          dict(inputs="given"), "max started at 0: all-negative blocks give 0"),
        c("histogram-racy", I, "histogram256_racy", histogram(), histogram_ref, RACE,
          dict(inplace=["bins"], inputs={"data": "random"}, runs=4)),
        c("block-scan-exclusive", I, "block_scan_exclusive", ints(), scan_ref, "wrong"),
        c("softmax-no-max", X, "softmax_rows_no_max", softmax(scale=60.0), softmax_ref, "special",
          dict(inputs="given"), "exp overflows without the max subtracted: Inf / Inf"),
        c("softmax-one-warp", X, "softmax_rows_one_warp", softmax(), softmax_ref, "wrong",
          note="the sum leaves out all warps but the first"),
    ]


CASES = _cases()
KERNELS = sorted({(c.file, c.kernel) for c in CASES})
