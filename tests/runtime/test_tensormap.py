"""TMA tensor maps from arrays (``cuda_magic.tma``) and launches with attributes (clusters,
cooperative, programmatic dependent launch): the checks that name the limit run anywhere; the
launches on the GPU, on torch tensors, against torch.matmul and NumPy."""

from __future__ import annotations

import pytest

import cuda_magic
from corpus import KERNELS
from cuda_magic import ArgumentError
from cuda_magic.runtime.launch_attrs import _cluster, check_grid
from cuda_magic.runtime.tensormap import tma


class Cai:
    """A device array as __cuda_array_interface__ describes one (no GPU behind it)."""

    def __init__(self, shape, typestr="<f4", address=1 << 20, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (address, False), "strides": strides,
                                         "version": 3}


@pytest.mark.parametrize("array, kw, message", [
    (Cai((64, 64)), dict(box=(64, 300)), r"box\[1\]=300; each side is 1 to 256 elements"),
    (Cai((64, 64)), dict(box=(64,)), r"one int per dimension of the array \(shape \(64, 64\)\)"),
    (Cai((64, 64)), dict(box=(128, 64)), r"box\[0\]=128 is larger than the array's dimension 0"),
    (Cai((64, 64), address=(1 << 20) + 4), dict(box=(64, 64)), r"not a multiple of 16 bytes"),
    (Cai((64, 63)), dict(box=(64, 63)), r"stride of dimension 0 is 252 bytes"),
    (Cai((64, 64), strides=(512, 8)), dict(box=(64, 64)), r"innermost dimension is not dense"),
    (Cai((64, 64)), dict(box=(64, 6)), r"the innermost side is 24 bytes; it must be a multiple of 16"),
    (Cai((64, 64)), dict(box=(64, 64), swizzle="64B"),
     r"the innermost side is 256 bytes, more than the 64-byte swizzle span"),
    (Cai((64, 64)), dict(box=(64, 64), swizzle="256B"), r"swizzle='256B'\): choose one of"),
    (Cai((64, 64)), dict(box=(8, 8), element_strides=(9, 1)), r"element_strides=.*1 to 8"),
    (Cai((2,) * 6), dict(box=(1,) * 6), r"1 to 5 dimensions; this array has 6"),
    (Cai((64, 64), typestr="<c8"), dict(box=(8, 8)), r"dtype complex64 has no tensor-map type"),
])
def test_a_layout_the_driver_would_refuse_is_said_first(array, kw, message):
    with pytest.raises(ArgumentError, match=message):
        tma(array, **kw)


def test_host_arrays_are_refused_with_what_to_do():
    import numpy as np
    with pytest.raises(ArgumentError, match=r"a NumPy array lives on the host.*CuPy array or a "
                                            r"PyTorch tensor on the GPU"):
        tma(np.zeros((64, 64), np.float32), box=(64, 64))


@pytest.mark.parametrize("grid, cluster, message", [
    ((6, 1, 1), (4, 1, 1), r"grid x = 6 is not a multiple of the cluster's x = 4"),
    ((8, 3, 1), (2, 2, 1), r"grid y = 3 is not a multiple of the cluster's y = 2"),
    ((64, 1, 1), (32, 1, 1), r"32 blocks; at most 16 blocks per cluster \(8 portable\)"),
])
def test_cluster_shapes_are_checked_against_the_grid(grid, cluster, message):
    with pytest.raises(ArgumentError, match=message):
        check_grid("k", grid, cluster)
    check_grid("k", (8, 4, 1), (2, 2, 1))


def test_cluster_values():
    assert _cluster(2) == (2, 1, 1) and _cluster((2, 2)) == (2, 2, 1)
    for bad in (0, (1, 2, 3, 4), "2", (2, 0), True):
        with pytest.raises(ArgumentError, match=r"cluster=.*a positive int or 1 to 3"):
            _cluster(bad)


def test_a_compiled_cluster_shape_is_checked_at_a_plain_launch():
    """__cluster_dims__(2, 1, 1): an odd grid is refused before any driver call (no GPU)."""
    m = cuda_magic.build((KERNELS / "cluster_dsmem.cu").read_text(),
                         cuda_magic.line_config(arch="sm_90a"), load=False)
    with pytest.raises(ArgumentError, match=r"cluster_swap: grid x = 3 is not a multiple of the "
                                            r"cluster's x = 2"):
        m.cluster_swap[3, 256]
    with pytest.raises(ArgumentError, match=r"compiled with __cluster_dims__\(2, 1, 1\); a launch "
                                            r"cannot give it cluster=\(4, 1, 1\)"):
        m.cluster_swap.launch(4, 256, (None, None, 0), cluster=(4, 1, 1))


def test_tensor_map_arguments_a_launch_takes_and_one_it_cannot():
    """A CUtensorMap parameter takes 128 bytes (a TensorMap is bytes) and cuda.bindings'
    CUtensorMap; cuda.core's TensorMapDescriptor hides its bytes: the error says what to use."""
    from cuda_magic.runtime.packer import Packer
    from cuda_magic.runtime.types import Param
    from cuda_magic.runtime.tensormap import TensorMap
    pk = Packer("k", [Param("tmap", "CUtensorMap", declared="const CUtensorMap tmap")], [(0, 128)])
    i, _, conv = pk.convs[0]
    assert conv(TensorMap(bytes(range(128))), []) == bytes(range(128))
    from cuda.bindings import driver as drv
    raw = drv.CUtensorMap()
    assert len(conv(raw, [])) == 128

    class TensorMapDescriptor:          # cuda.core's, as far as a launch can see it
        pass
    with pytest.raises(ArgumentError, match=r"parameter 'tmap'.*cuda.core's TensorMapDescriptor "
                                            r"keeps its 128 bytes to itself.*cuda_magic.tma"):
        conv(TensorMapDescriptor(), [])


# --- on the GPU --------------------------------------------------------------------------------

RUNTIME_CLUSTER = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// no __cluster_dims__: the launch gives the shape; each block writes its rank and the
// cluster's size, and reads its neighbour's block index through distributed shared memory
extern "C" __global__ void ranks(int* out) {
    __shared__ int me;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) me = blockIdx.x;
    cluster.sync();
    int* other = cluster.map_shared_rank(&me, (cluster.block_rank() + 1) % cluster.num_blocks());
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x] = cluster.block_rank();
        out[3 * blockIdx.x + 1] = cluster.num_blocks();
        out[3 * blockIdx.x + 2] = *other;
    }
    cluster.sync();
}

// a grid-wide barrier: only a cooperative launch may sync the grid
extern "C" __global__ void grid_sum(const int* in, int* partial, int* total, int n) {
    cg::grid_group grid = cg::this_grid();
    int s = 0;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) s += in[i];
    atomicAdd(&partial[blockIdx.x], s);
    grid.sync();
    if (grid.thread_rank() == 0) {
        int t = 0;
        for (int b = 0; b < gridDim.x; ++b) t += partial[b];
        *total = t;
    }
}

// programmatic dependent launch: the second kernel waits for the first's results
extern "C" __global__ void produce(int* buf, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) buf[i] = 3 * i;
    asm volatile("griddepcontrol.launch_dependents;");
}
extern "C" __global__ void consume(const int* buf, int* out, int n) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = buf[i] + 1;
}
"""


@pytest.mark.gpu
def test_tma_gemm_on_torch_tensors_matches_torch_matmul():
    torch = pytest.importorskip("torch")
    m = cuda_magic.build((KERNELS / "tma_wgmma_gemm.cu").read_text())
    g = torch.Generator(device="cuda").manual_seed(3)
    M, N, K = 256, 128, 512
    a = torch.randn(M, K, device="cuda", generator=g).bfloat16()
    b = torch.randn(N, K, device="cuda", generator=g).bfloat16()
    c = torch.empty(M, N, device="cuda")
    ta, tb = tma(a, box=(64, 64), swizzle="128B"), tma(b, box=(64, 64), swizzle="128B")
    assert len(ta) == 128 and ta.array is a and ta.box == (64, 64)
    m.tma_wgmma_gemm[(N // 64, M // 64), 128](ta, tb, c, M, N, K)
    torch.cuda.synchronize()
    ref = torch.matmul(a.float(), b.float().T)
    torch.testing.assert_close(c, ref, rtol=1.6e-2, atol=1e-2)          # bf16 tolerance
    assert (c - ref).abs().max().item() < 1e-3 * ref.abs().max().item()  # fp32 accumulation


@pytest.mark.gpu
def test_a_tma_copy_on_cupy_and_a_bindings_tensor_map():
    cp = pytest.importorskip("cupy")
    m = cuda_magic.build((KERNELS / "tensormap.cu").read_text())
    rows, cols = 40, 72
    src = cp.random.standard_normal((rows, cols), dtype=cp.float32)
    out = cp.zeros_like(src)
    m.tma_scale_tile[((cols + 31) // 32, (rows + 15) // 16), 128](
        tma(src, box=(16, 32)), out, rows, cols, -2.0)
    cp.testing.assert_array_equal(out, -2.0 * src)


@pytest.mark.gpu
def test_clusters_cooperative_and_pdl_launches():
    import numpy as np
    torch = pytest.importorskip("torch")
    m = cuda_magic.build(RUNTIME_CLUSTER)
    out = torch.zeros(3 * 8, dtype=torch.int32, device="cuda")
    m.ranks.launch(8, 32, (out,), cluster=(4, 1, 1))
    got = out.view(8, 3).cpu().numpy()
    assert got[:, 0].tolist() == [0, 1, 2, 3] * 2 and set(got[:, 1]) == {4}
    assert got[:, 2].tolist() == [1, 2, 3, 0, 5, 6, 7, 4]        # the neighbour's block
    out = torch.zeros(3 * 16, dtype=torch.int32, device="cuda")
    m.ranks.launch(16, 32, (out,), cluster=16)                   # non-portable: 16 blocks
    assert out.view(16, 3)[:, 1].tolist() == [16] * 16
    with pytest.raises(ArgumentError, match="grid x = 6 is not a multiple"):
        m.ranks.launch(6, 32, (out,), cluster=4)

    n = 1 << 20
    x = torch.randint(0, 100, (n,), dtype=torch.int32, device="cuda")
    partial = torch.zeros(132 * 4, dtype=torch.int32, device="cuda")
    total = torch.zeros(1, dtype=torch.int32, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    m.grid_sum.launch(sms, 256, (x, partial, total, n), cooperative=True)
    assert total.item() == int(x.sum().item())
    with pytest.raises(ArgumentError, match=r"a cooperative grid of .* does not fit on the GPU "
                                            r"at once: \d+ per SM x \d+ SMs"):
        m.grid_sum.launch(sms * 64, 1024, (x, partial, total, n), cooperative=True)

    buf = torch.zeros(n, dtype=torch.int32, device="cuda")
    res = torch.zeros(n, dtype=torch.int32, device="cuda")
    s = torch.cuda.Stream()
    for _ in range(3):
        buf.zero_()
        m.produce.launch((n + 255) // 256, 256, (buf, n), stream=s)
        m.consume.launch((n + 255) // 256, 256, (buf, res, n), stream=s, pdl=True)
        s.synchronize()
        np.testing.assert_array_equal(res.cpu().numpy(), 3 * np.arange(n, dtype=np.int32) + 1)


@pytest.mark.gpu
def test_more_than_48_kb_of_dynamic_shared_memory_is_allowed_and_said_once(capfd):
    import numpy as np
    m = cuda_magic.build(r"""
extern "C" __global__ void far_end(float* out, int words) {
    extern __shared__ float buf[];
    for (int i = threadIdx.x; i < words; i += blockDim.x) buf[i] = i;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = buf[words - 1];
}""")
    out = np.zeros(1, np.float32)
    words = 100_000 // 4
    m.far_end[1, 256, 100_000](out, words)
    m.far_end[1, 256, 100_000](out, words)
    assert out[0] == words - 1
    err = capfd.readouterr().err
    assert err.count("far_end: 100,000 bytes of dynamic shared memory asked for: its limit "
                     "raised from 48 KB") == 1, err
