"""Sweeps on GPUs: a real SGEMM sweep picks a faster candidate than the worst, wrong outputs and
faults are recorded while the sweep goes on, a hung candidate is ended; every GPU of the host,
and a Dask cluster (dask-cuda's LocalCUDACluster) when there are two."""

import pathlib

import numpy as np
import pytest

import cuda_magic
from cuda_magic.compile.arch import gpu_archs
from cuda_magic.runtime import driver
from cuda_magic.variants.tune import tune

pytestmark = pytest.mark.gpu

SGEMM = (pathlib.Path(__file__).parent / "kernels" / "tune" / "tiled_sgemm.cu").read_text()
RUN = "sgemm[(cdiv(N, BN), cdiv(M, BM)), (BM // TM) * (BN // TN)](a, b, c, M, N, K)"


@pytest.fixture(scope="module")
def gemm():
    if cuda_magic.detect_arch() is None:
        pytest.skip("needs a GPU")
    M = N = K = 768
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    return {"a": a, "b": b, "c": np.zeros((M, N), np.float32), "M": M, "N": N, "K": K}


def test_sweep_picks_a_faster_candidate_and_binds_it(gemm):
    t = tune(SGEMM, run=RUN, namespace=gemm, repeat=20, flops=2 * 768 ** 3)
    times = [c.time_ms for c in t.candidates if c.time_ms]
    assert len(times) == 18 and t.counts.get("winner") == 1, t.counts
    assert max(times) / t.winner.time_ms > 1.2, times
    assert t.winner.tflops and t.winner.gpu.startswith("GPU ")
    ref = gemm["a"] @ gemm["b"]
    first = [c for c in t.candidates if c.reason.startswith("the reference")]
    assert len(first) == 1 and np.allclose(first[0].outcome.outputs["c"], ref, rtol=1e-3, atol=1e-2)
    # the others were checked in their helper process against it: only the verdict came back
    assert sum(c.outcome is not None and c.outcome.checked for c in t.candidates) >= 10
    assert not gemm["c"].any()             # the caller's array is untouched
    # the winner's kernels, under --run's names, launch here with the same numbers
    c = np.zeros_like(gemm["c"])
    ns = {**gemm, **t.winner.params, "c": c, **t.kernels,
          "cdiv": lambda x, y: -(-x // y)}
    exec(RUN, ns)
    assert np.allclose(c, ref, rtol=1e-3, atol=1e-2)
    assert t.cell.startswith("%%cuda ") and "--instantiate 'sgemm<" in t.cell


def test_wrong_and_faulting_candidates_do_not_stop_the_sweep(gemm):
    t = tune(SGEMM, "BM=[64] BN=[64] TM=[4] TN=[4] FAULT=[0, 1] WRONG=[0, 1]", RUN,
             namespace=gemm, repeat=5)
    status = {(c.params["FAULT"], c.params["WRONG"]): c for c in t.candidates}
    assert status[(0, 0)].status == "winner"
    assert status[(0, 1)].status == "wrong" and "c differs at" in status[(0, 1)].reason
    assert status[(1, 0)].status == "fault" and "ILLEGAL_ADDRESS" in status[(1, 0)].reason
    assert status[(1, 1)].status == "fault"
    assert driver.lost() is None        # the faults ended helpers, not this process's CUDA
    # a reference given by the caller judges every candidate, the first one too
    t = tune(SGEMM, "BM=[64] BN=[64] TM=[4] TN=[4] WRONG=[1, 0]", RUN, namespace=gemm, repeat=5,
             reference={"c": gemm["a"] @ gemm["b"]})
    assert [c.status for c in t.candidates] == ["wrong", "winner"]


def test_a_hung_candidate_times_out_and_the_next_runs():
    src = r'''
    #ifndef SPIN
    #define SPIN 0
    #endif
    extern "C" __global__ void k(float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (SPIN) { long long t0 = clock64(); while (clock64() - t0 < (1LL << 62)) { } }
        if (i < n) y[i] = 2.0f * i;
    }
    '''
    y = np.zeros(1024, np.float32)
    n = 1024
    t = tune(src, "SPIN=[1, 0] block=[128]", "k[cdiv(n, block), block](y, n)", timeout=8, repeat=5)
    assert t.candidates[0].status == "timeout" and "8 s" in t.candidates[0].reason
    assert t.candidates[1].status == "winner"
    assert np.array_equal(t.candidates[1].outcome.outputs["y"], 2.0 * np.arange(1024, dtype=np.float32))


def test_device_arrays_and_launch_only_parameters():
    cupy = pytest.importorskip("cupy")
    src = r'''
    extern "C" __global__ void saxpy(const float* x, float* y, float a, int n) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
            y[i] = a * x[i] + y[i];
    }
    '''
    n = 1 << 20
    x = cupy.arange(n, dtype=cupy.float32)
    y = cupy.ones(n, dtype=cupy.float32)
    t = tune(src, "block=[128, 256, 512] blocks=[132, 264]", "saxpy[blocks, block](x, y, 2.0, n)",
             repeat=10, nbytes=3 * 4 * n)
    assert len(t.candidates) == 6 and all(c.status in ("ok", "winner") for c in t.candidates)
    assert len({id(c.module) for c in t.candidates}) == 1       # launch-only: one build
    out = next(c for c in t.candidates if c.outcome.outputs).outcome.outputs["y"]
    assert np.allclose(out, 2.0 * np.arange(n, dtype=np.float32) + 1.0)
    assert float(y[5].get()) == 1.0 and t.winner.gbps > 100


def test_every_gpu_of_the_host(gemm):
    if len(gpu_archs()) < 2:
        pytest.skip("needs two GPUs")
    t = tune(SGEMM, run=RUN, namespace=gemm, repeat=10)
    used = {c.gpu.split(" (")[0] for c in t.candidates if c.gpu}
    assert used == {"GPU 0", "GPU 1"}, used
    assert t.pool == "2 GPUs of this host" and t.counts.get("winner") == 1


def test_dask_local_cuda_cluster(gemm):
    if len(gpu_archs()) < 2:
        pytest.skip("needs two GPUs")
    dask_cuda = pytest.importorskip("dask_cuda")
    distributed = pytest.importorskip("distributed")
    with dask_cuda.LocalCUDACluster(n_workers=2) as cluster, distributed.Client(cluster) as client:
        t = tune(SGEMM, "BM=[64, 128] BN=[64] TM=[4, 8] TN=[4] FAULT=[0, 1]", RUN,
                 namespace=gemm, repeat=10, client=client)
        assert t.pool == "Dask, 2 workers"
        ran = [c for c in t.candidates if c.params["FAULT"] == 0]
        assert all(c.status in ("ok", "winner") for c in ran), [c.reason for c in ran]
        assert all(c.status == "fault" for c in t.candidates if c.params["FAULT"] == 1)
        workers = {c.gpu.split(" GPU")[0] for c in t.candidates if c.gpu}
        assert len(workers) == 2 and all(w.startswith("tcp://") for w in workers), workers
        first = next(c for c in t.candidates if c.outcome is not None and c.outcome.outputs)
        assert np.allclose(first.outcome.outputs["c"], gemm["a"] @ gemm["b"], rtol=1e-3, atol=1e-2)
        assert any(c.outcome.checked for c in t.candidates if c.outcome is not None)


def test_magic_binds_the_winner(shell, gemm):
    if cuda_magic.detect_arch() is None:
        pytest.skip("needs a GPU")
    shell.user_ns.update(gemm)
    shell.run_line_magic("load_ext", "cuda_magic")
    result = shell.run_cell_magic("cuda_tune", f'--run "{RUN}" --repeat 5 --name t --where "BM == 64"',
                                  SGEMM)
    t = shell.user_ns["t"]
    assert result is t and t.winner is not None
    assert shell.user_ns["sgemm"] is t.kernels["sgemm"]
