"""TMA tensor maps from arrays (``cuda_magic.tma``) and launches with attributes (clusters,
cooperative, programmatic dependent launch): the checks that name the limit run anywhere; the
launches on the GPU, on torch tensors, against torch.matmul and NumPy."""

from __future__ import annotations

import pytest

import cuda_magic
from corpus import KERNELS
from cuda_magic import ArgumentError
from cuda_magic.runtime.launch.attributes import Attributes, _three, check_grid
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


@pytest.mark.parametrize("array, kw, message", [
    (Cai((8, 64)), dict(box=(32, 16), im2col=((0,), (0,))),
     r"an im2col map has 3 to 5 dimensions \(NWC, NHWC, NDHWC\); this array has 2"),
    (Cai((2, 8, 8, 16)), dict(box=(32, 16), im2col=(-1, -1)), r"im2col=\(-1, -1\)\): \(lower, upper\), each 2 ints over the spatial dim"),
    (Cai((2, 8, 8, 16)), dict(box=(32, 16), im2col=((-1,), (-1,))), r"each 2 ints over"),
    (Cai((2, 8, 8, 16)), dict(box=(32, 16), im2col=((-200, 0), (0, 0))),
     r"lower\[0\]=-200; a rank-4 map's corners are -128 to 127"),
    (Cai((2, 4, 8, 8, 16)), dict(box=(32, 16), im2col=((0, 0, 0), (0, 16, 0))),
     r"upper\[1\]=16; a rank-5 map's corners are -16 to 15"),
    (Cai((2, 8, 8, 16)), dict(box=(32, 16), im2col=((0, 0), (-9, 0))),
     r"spatial dimension 0 \(8\) from 0 to -2 is empty"),
    (Cai((2, 8, 8, 16)), dict(box=(2048, 16), im2col=((0, 0), (0, 0))),
     r"box\[0\]=2048; each is 1 to 1024"),
    (Cai((2, 8, 8, 512)), dict(box=(32, 300), im2col=((0, 0), (0, 0))),
     r"box is \(pixels, channels\): at most 1024 pixels and 256 channels"),
    (Cai((2, 8, 8, 16)), dict(box=(32, 6), im2col=((0, 0), (0, 0))),
     r"a pixel's channels is 24 bytes; it must be a multiple of 16"),
    (Cai((2, 8, 8, 64)), dict(box=(32, 64), im2col=((0, 0), (0, 0)), swizzle="128B"),
     r"a pixel's channels is 256 bytes, more than the 128-byte swizzle span"),
    (Cai((64, 64)), dict(box=(8, 8), data_type="bfloat16"),
     r"data_type='bfloat16'\): elements of 2 bytes; the array's \(float32\) are not"),
    (Cai((64, 64)), dict(box=(8, 8), data_type="float128"), r"data_type='float128'\): one of"),
])
def test_an_im2col_or_data_type_the_driver_would_refuse_is_said_first(array, kw, message):
    with pytest.raises(ArgumentError, match=message):
        tma(array, **kw)


class Interface:
    """An object whose __cuda_array_interface__ is whatever it is given (malformed ones too)."""

    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


def _cai(**kw) -> Interface:
    cai = {"shape": (64, 64), "typestr": "<f4", "data": (1 << 20, False), "strides": None,
           "version": 3}
    cai.update(kw)
    return Interface({k: v for k, v in cai.items() if v is not _GONE})


_GONE = object()
_OPTIONS = r"\): choose one of"


@pytest.mark.parametrize("array, kw, message", [
    # unhashable choices: a list or dict is refused naming the keyword
    (Cai((64, 64)), dict(swizzle=["128B"]), r"tma\(swizzle=\['128B'\]" + _OPTIONS),
    (Cai((64, 64)), dict(interleave={}), r"tma\(interleave=\{\}" + _OPTIONS),
    (Cai((64, 64)), dict(l2_promotion=[]), r"tma\(l2_promotion=\[\]" + _OPTIONS),
    (Cai((64, 64)), dict(oob_fill={"a": 1}), r"tma\(oob_fill=\{'a': 1\}" + _OPTIONS),
    (Cai((64, 64)), dict(data_type=["bfloat16"]), r"tma\(data_type=\['bfloat16'\]\): one of"),
    (Cai((64, 64)), dict(swizzle=128), r"tma\(swizzle=128" + _OPTIONS),
    # element_strides: a tuple per dimension, not an int, a string or bools
    (Cai((64, 64)), dict(element_strides=2),
     r"tma\(element_strides=2\): a tuple of one int from 1 to 8 per dimension \(2 here\)"),
    (Cai((64, 64)), dict(element_strides="11"), r"element_strides='11'\): a tuple of one int"),
    (Cai((64, 64)), dict(element_strides=(True, 1)), r"element_strides=\(True, 1\)\): a tuple"),
    # a malformed __cuda_array_interface__: the key and what it must be
    (Interface(5), {}, r"its __cuda_array_interface__ is 5: a dict with 'shape', 'typestr' and"),
    (_cai(shape=_GONE), {}, r"its __cuda_array_interface__ has no 'shape'"),
    (_cai(typestr=_GONE), {}, r"its __cuda_array_interface__ has no 'typestr'"),
    (_cai(data=_GONE), {}, r"its __cuda_array_interface__ has no 'data'"),
    (_cai(shape=64), {}, r"__cuda_array_interface__\['shape'\]=64: a tuple of ints"),
    (_cai(shape=(64.0, 64)), {}, r"\['shape'\]=\(64.0, 64\): a tuple of ints"),
    (_cai(shape="ab"), {}, r"\['shape'\]='ab': a tuple of ints"),
    (_cai(typestr=4), {}, r"\['typestr'\]=4: a NumPy type string such as '<f4'"),
    (_cai(strides=256), {}, r"\['strides'\]=256: None or a tuple of 2 ints"),
    (_cai(strides=(256,)), {}, r"\['strides'\]=\(256,\): None or a tuple of 2 ints"),
    (_cai(strides=(256.0, 4.0)), {}, r"\['strides'\]=\(256.0, 4.0\): None or a tuple"),
    (_cai(data=1 << 20), {}, r"\['data'\]=1048576: a pair \(device address, read-only flag\)"),
    (_cai(data=("x", False)), {}, r"\['data'\]=\('x', False\): a pair"),
    (_cai(data=(1 << 20,)), {}, r"\['data'\]=\(1048576,\): a pair"),
    (_cai(data=(1 << 20, "no")), {}, r"\['data'\]=\(1048576, 'no'\): a pair"),
    (_cai(data=(1 << 64, False)), {}, r"\['data'\]=.*: its address is not a 64-bit unsigned"),
    (_cai(data=(-16, False)), {}, r"\['data'\]=\(-16, False\): its address is not a 64-bit"),
    (_cai(typestr="z" * 10_000), {}, r"dtype z{40}\.\.\. \(10000 characters\) has no "
                                     r"tensor-map type"),
    # dimensions 1 to 2**32, strides not negative (a CuPy x[::-1] view)
    (_cai(shape=(1 << 64, 64)), {}, r"dimension 0 is 18446744073709551616; a tensor map's "
                                    r"dimensions are 1 to 2\*\*32"),
    (_cai(shape=(64, (1 << 32) + 1)), {}, r"dimension 1 is 4294967297; .* 1 to 2\*\*32"),
    (_cai(shape=(0, 64)), {}, r"dimension 0 is 0; a tensor map's dimensions are 1 to"),
    (_cai(shape=(10 ** 5000, 64)), {}, r"dimension 0 is <int>; "),
    (_cai(strides=(-256, 4), data=((1 << 20) + 63 * 256, False)), {},
     r"the stride of dimension 0 is -256 bytes; TMA needs positive strides \(a reversed view "
     r"such as x\[::-1\]\?\): give a contiguous copy"),
    (_cai(strides=(256, -4)), {}, r"the stride of dimension 1 is -4 bytes; TMA needs positive"),
    (_cai(strides=(10 ** 5000, 4)), {}, r"the stride of dimension 0 is <int> bytes"),
    (Cai((64, 64)), dict(box=(64, 10 ** 5000)), r"box\[1\]=<int>; each side is 1 to 256"),
])
def test_bad_keywords_and_malformed_arrays_are_said_naming_the_parameter(array, kw, message):
    """Each is refused before cuda.bindings sees it (no driver here: reaching the encode call
    would fail otherwise), as one ArgumentError naming the keyword or the interface's key."""
    with pytest.raises(ArgumentError, match=message):
        tma(array, **{"box": (64, 32), **kw})


@pytest.fixture
def encoded(monkeypatch):
    """cuTensorMapEncodeTiled recorded, not run (no driver here): its calls' arguments."""
    from cuda.bindings import driver as drv
    calls = []
    monkeypatch.setattr(drv, "cuTensorMapEncodeTiled",
                        lambda *a: calls.append(a) or (drv.CUresult(0), drv.CUtensorMap()))
    return calls


@pytest.mark.parametrize("swizzle, span", [("32B", 32), ("64B", 64), ("128B", 128)])
@pytest.mark.parametrize("typestr", ["<f4", "<u2", "|u1"])
def test_a_box_exactly_the_swizzle_span_is_accepted_and_one_step_more_is_not(
        encoded, swizzle, span, typestr):
    """The box's innermost side may fill the swizzle span exactly (128 bytes under 128B: 32
    floats); the next multiple of 16 bytes is refused before the driver."""
    size = int(typestr[2:])
    t = tma(Cai((64, 256), typestr), box=(8, span // size), swizzle=swizzle)
    assert t.box == (8, span // size) and len(encoded) == 1
    assert encoded[0][8].name == f"CU_TENSOR_MAP_SWIZZLE_{swizzle}"
    with pytest.raises(ArgumentError, match=rf"the innermost side is {span + 16} bytes, more "
                                            rf"than the {span}-byte swizzle span"):
        tma(Cai((64, 256), typestr), box=(8, (span + 16) // size), swizzle=swizzle)
    if size == 1:                                  # 129 bytes: not a multiple of 16 either
        with pytest.raises(ArgumentError, match=r"innermost side is \d+ bytes"):
            tma(Cai((64, 256), typestr), box=(8, span + 1), swizzle=swizzle)
    assert len(encoded) == 1


def test_a_valid_layout_reaches_the_encode_call_in_the_driver_s_order(encoded):
    """The checks above pass a good array through: rank, address, dimensions and strides
    innermost first, as cuTensorMapEncodeTiled takes them."""
    t = tma(_cai(strides=(512, 4)), box=(16, 32), swizzle="128B", element_strides=[1, 2])
    (kind, rank, address, dims, strides, box, es, *_), = encoded
    assert (int(rank), address) == (2, 1 << 20)
    assert [int(d) for d in dims] == [64, 64] and [int(s) for s in strides] == [512]
    assert [int(b) for b in box] == [32, 16] and [int(e) for e in es] == [2, 1]
    assert t.recipe["element_strides"] == [1, 2] and t.dtype == "float32"


def test_a_tensor_map_crosses_to_a_tool_as_its_array_and_recipe(tmp_path, monkeypatch):
    """k.profile / k.check run the launch in another process, where this process's device
    address means nothing: the spec carries the map's array and the keywords that made it, and
    the child makes the map again over its own copy; the launch attributes cross too."""
    import json

    import numpy as np
    from cuda_magic.runtime import device_array, tensormap
    from cuda_magic.runtime.nsight import run as tools
    from cuda_magic.runtime.helper.specdir import read
    from cuda_magic.runtime.tensormap import TensorMap
    m = cuda_magic.build((KERNELS / "tensormap.cu").read_text(),
                         cuda_magic.line_config(arch="sm_90a"), load=False)
    host = np.arange(40 * 72, dtype=np.float32).reshape(40, 72)
    t = TensorMap(bytes(128))
    t.array = host
    t.recipe = {"box": [16, 32], "swizzle": "none", "interleave": "none", "l2_promotion": "none",
                "oob_fill": "zero", "element_strides": [1, 1], "data_type": "float32",
                "im2col": None}
    out = np.zeros_like(host)
    tools.write_spec(m.tma_scale_tile, (3, 3, 1, 128, 1, 1), 0, (t, out, 40, 72, -2.0),
                     str(tmp_path), Attributes(cluster=(3, 1, 1), pdl=True))
    spec = json.loads((tmp_path / "spec.json").read_text())
    assert spec["args"][0] == {"kind": "tensormap", "file": "arg0.npy", "recipe": t.recipe}
    assert spec["attrs"] == {"cluster": [3, 1, 1], "cooperative": False, "pdl": True}
    made = []
    monkeypatch.setattr(device_array.DeviceArray, "upload", classmethod(lambda cls, a: ("copy", a)))
    monkeypatch.setattr(tensormap, "tma", lambda a, **kw: made.append((a, kw)) or b"map")
    loaded = read(str(tmp_path))
    assert loaded.args[0] == b"map" and loaded.attrs == Attributes((3, 1, 1), False, True)
    (copy, again), kw = made[0]
    assert copy == "copy" and again.tobytes() == host.tobytes() and kw == t.recipe


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
    assert _three(2, "cluster") == (2, 1, 1) and _three((2, 2), "cluster") == (2, 2, 1)
    for bad in (0, (1, 2, 3, 4), "2", (2, 0), True):
        with pytest.raises(ArgumentError, match=r"cluster=.*a positive int or 1 to 3"):
            _three(bad, "cluster")


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
    CUtensorMap; a cuda.core TensorMapDescriptor where cuda.core's argument packer is missing:
    the error says what to use (the GPU test passes a real one)."""
    from cuda_magic.runtime.launch.packer import Packer
    from cuda_magic.runtime.launch.params import Param
    from cuda_magic.runtime.tensormap import TensorMap
    pk = Packer("k", [Param("tmap", "CUtensorMap", declared="const CUtensorMap tmap")], [(0, 128)])
    i, _, conv = pk.convs[0]
    assert conv(TensorMap(bytes(range(128))), []) == bytes(range(128))
    from cuda.bindings import driver as drv
    raw = drv.CUtensorMap()
    assert len(conv(raw, [])) == 128

    class TensorMapDescriptor:          # cuda.core's, as far as a launch can see it
        pass
    with pytest.raises(ArgumentError, match=r"parameter 'tmap'.*no kernel-argument packer "
                                            r"\(_kernel_arg_handler\).*cuda_magic.tma"):
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
        with torch.cuda.stream(s):      # on s: torch's streams do not wait for the default one
            buf.zero_()
        m.produce.launch((n + 255) // 256, 256, (buf, n), stream=s)
        m.consume.launch((n + 255) // 256, 256, (buf, res, n), stream=s, pdl=True)
        s.synchronize()
        np.testing.assert_array_equal(res.cpu().numpy(), 3 * np.arange(n, dtype=np.int32) + 1)


@pytest.mark.gpu
def test_hostile_tma_and_attribute_values_on_the_gpu():
    """What the CPU tests pin, against the real driver and arrays: CuPy's x[::-1] (negative
    strides) is refused as such, not cuda.bindings' OverflowError; a box exactly the 128-byte
    swizzle span encodes; the cooperative fit counts a 3-D grid; "no" is not a bool."""
    torch = pytest.importorskip("torch")
    cp = pytest.importorskip("cupy")
    x = cp.zeros((64, 64), dtype=cp.float32)
    with pytest.raises(ArgumentError, match=r"stride of dimension 0 is -256 bytes; TMA needs "
                                            r"positive strides"):
        tma(x[::-1], box=(16, 32))
    assert tma(x, box=(16, 32), swizzle="128B").swizzle == "128B"      # 32 floats: 128 bytes
    with pytest.raises(ArgumentError, match=r"144 bytes, more than the 128-byte swizzle span"):
        tma(x, box=(16, 36), swizzle="128B")

    m = cuda_magic.build(RUNTIME_CLUSTER)
    n = 1 << 16
    data = torch.randint(0, 100, (n,), dtype=torch.int32, device="cuda")
    partial = torch.zeros(132 * 4, dtype=torch.int32, device="cuda")
    total = torch.zeros(1, dtype=torch.int32, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    m.grid_sum.launch((sms, 1, 2), 256, (data, partial, total, n), cooperative=True)
    assert total.item() == int(data.sum().item())
    with pytest.raises(ArgumentError, match=rf"a cooperative grid of {sms * 64} blocks does not "
                                            rf"fit on the GPU at once"):
        m.grid_sum.launch((sms, 1, 64), 1024, (data, partial, total, n), cooperative=True)
    for kw in (dict(cooperative="no"), dict(pdl="no")):
        with pytest.raises(ArgumentError, match=r"grid_sum: (cooperative|pdl)='no': a bool"):
            m.grid_sum.launch(sms, 256, (data, partial, total, n), **kw)
    out = torch.zeros(3 * 12, dtype=torch.int32, device="cuda")
    m.ranks.launch((2, 2, 3), 32, (out,), cluster=(1, 1, 3))
    with pytest.raises(ArgumentError, match=r"grid z = 3 is not a multiple of the cluster's z = 2"):
        m.ranks.launch((2, 2, 3), 32, (out,), cluster=(1, 1, 2))


@pytest.mark.gpu
def test_a_cuda_core_launch_config_launches_its_clusters():
    """k[LaunchConfig(grid=2, cluster=4, block=32)]: 2 clusters of 4 blocks (cuda.core counts
    the grid in clusters), in a launch and in k.bench[config]."""
    torch = pytest.importorskip("torch")
    from cuda.core import LaunchConfig
    m = cuda_magic.build(RUNTIME_CLUSTER)
    out = torch.zeros(3 * 8, dtype=torch.int32, device="cuda")
    m.ranks[LaunchConfig(grid=2, cluster=4, block=32)](out)
    got = out.view(8, 3).cpu().numpy()
    assert got[:, 0].tolist() == [0, 1, 2, 3] * 2 and set(got[:, 1]) == {4}
    assert got[:, 2].tolist() == [1, 2, 3, 0, 5, 6, 7, 4]
    out = torch.zeros(3 * 64, dtype=torch.int32, device="cuda")
    timing = m.ranks.bench[LaunchConfig(grid=8, cluster=(8, 1, 1), block=32)](out, repeat=10)
    assert "each launch with cluster=8x1x1 (cuLaunchKernelEx)" in timing.notes
    assert out.view(64, 3)[:, 1].tolist() == [8] * 64


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


@pytest.mark.gpu
def test_an_im2col_map_gathers_each_filter_tap_with_its_padding():
    """A 3 x 3 filter over an NHWC tensor padded 1 in H and 0 in W: tap (r, s) of output pixel
    (oh, ow) reads input (oh - 1 + r, ow + s), zeros in the padding (the bounding box)."""
    import numpy as np
    torch = pytest.importorskip("torch")
    m = cuda_magic.build((KERNELS / "tma_im2col.cu").read_text())
    N, H, W, C, R, S = 2, 8, 6, 16, 3, 3
    x = torch.randn(N, H, W, C, device="cuda", generator=torch.Generator(device="cuda").manual_seed(5))
    t = tma(x, box=(32, 16), im2col=((-1, 0), (1 - (R - 1), 0 - (S - 1))))
    assert t.im2col == ((-1, 0), (-1, -2)) and "im2col" in repr(t)
    out = torch.full((R * S, 32, C), float("nan"), device="cuda")
    m.im2col_taps[(S, R), 128](t, out, 0, -1, 0)            # image 0, from (h, w) = (-1, 0)
    torch.cuda.synchronize()
    pad = np.pad(x.cpu().numpy(), ((0, 0), (1, 1), (0, 0), (0, 0)))
    oh, ow = np.divmod(np.arange(32), W - (S - 1))           # 8 x 4 output pixels
    want = np.stack([pad[0, oh + r, ow + s] for r in range(R) for s in range(S)])
    np.testing.assert_array_equal(out.cpu().numpy(), want)


@pytest.mark.gpu
def test_a_cuda_core_tensor_map_descriptor_is_taken_as_it_is():
    cp = pytest.importorskip("cupy")
    from cuda.core.utils import StridedMemoryView
    m = cuda_magic.build((KERNELS / "tensormap.cu").read_text())
    rows, cols = 40, 72
    src = cp.random.standard_normal((rows, cols), dtype=cp.float32)
    out = cp.zeros_like(src)
    view = (StridedMemoryView.from_dlpack(src, stream_ptr=-1)
            if hasattr(StridedMemoryView, "from_dlpack")
            else StridedMemoryView(src, stream_ptr=-1))
    desc = view.as_tensor_map(box_dim=(16, 32))
    m.tma_scale_tile[((cols + 31) // 32, (rows + 15) // 16), 128](desc, out, rows, cols, 3.0)
    cp.testing.assert_array_equal(out, 3.0 * src)


@pytest.mark.gpu
def test_bench_check_and_profile_take_attributes_and_tensor_maps(capsys):
    """k.bench with cluster=; k.check and k.profile of a TMA kernel (the map made again over
    the helper's copy) and of a cluster launch; printf from an attribute launch is captured."""
    cp = pytest.importorskip("cupy")
    m = cuda_magic.build(RUNTIME_CLUSTER)
    out = cp.zeros(3 * 64, dtype=cp.int32)
    timing = m.ranks.bench(64, 32, out, cluster=(4, 1, 1), repeat=20)
    assert timing.n == 20 and timing.median_ms > 0
    assert "each launch with cluster=4x1x1 (cuLaunchKernelEx)" in timing.notes
    assert out.reshape(64, 3)[:, 1].get().tolist() == [4] * 64     # the timed launches' clusters
    c = m.ranks.check(64, 32, out, cluster=(4, 1, 1))
    assert c.ok, c          # the helper ran the cluster launch (without clusters map_shared_rank faults)

    t = cuda_magic.build((KERNELS / "tensormap.cu").read_text())
    rows, cols = 40, 72
    src = cp.random.standard_normal((rows, cols), dtype=cp.float32)
    dst = cp.zeros_like(src)
    grid = ((cols + 31) // 32, (rows + 15) // 16)
    c = t.tma_scale_tile.check(grid, 128, tma(src, box=(16, 32)), dst, rows, cols, -2.0)
    assert c.ok and c.child == {"ok": True, "sha256": c.child["sha256"]}, c
    assert any(n.startswith("'tmap': the tensor map's CuPy array (the map is made again over the "
                            "copy) was copied to the host") for n in c.notes), c.notes
    p = t.tma_scale_tile.profile(grid, 128, tma(src, box=(16, 32)), dst, rows, cols, -2.0)
    assert p.duration_us > 0

    say = cuda_magic.build(r'''
#include <cstdio>
extern "C" __global__ void __cluster_dims__(2, 1, 1) hello(int n) {
    if (threadIdx.x == 0) printf("block %d of %d\n", (int)blockIdx.x, n);
}''')
    capsys.readouterr()
    say.hello.launch(2, 32, (2,), pdl=True)
    printed = capsys.readouterr().out
    assert sorted(printed.splitlines()) == ["block 0 of 2", "block 1 of 2"], printed


@pytest.mark.gpu
def test_shared_memory_limits_are_named():
    import numpy as np
    m = cuda_magic.build(r"""
extern "C" __global__ void big(float* out, int words) {
    extern __shared__ float buf[];
    for (int i = threadIdx.x; i < words; i += blockDim.x) buf[i] = i;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = buf[words - 1];
}""")
    out = np.zeros(16, np.float32)
    with pytest.raises(ArgumentError, match=r"big: 300,000 bytes of dynamic shared memory \+ 0 "
                                            r"static = 300,000; this GPU gives a block at most "
                                            r"[\d,]+ bytes"):
        m.big[1, 256, 300_000](out, 10)
    most = m.big.attributes["max_dynamic_shared"]
    from cuda_magic.runtime.launch import attributes as launch_attrs
    m.big.allow_shared(200_000)
    from cuda_magic.runtime.driver import api, check
    cfg, func = launch_attrs.config(m.big, m.big.handle_and_packer(0)[0], (16, 1, 1, 1024, 1, 1),
                                    200_000, 0,
                                    launch_attrs.Attributes(cluster=(16, 1, 1)))
    fit = int(check(api().cuOccupancyMaxActiveClusters(func, cfg), "probe"))
    print("max active clusters of 16 x 200 KB:", fit, "max dynamic", most)
    if fit == 0:
        with pytest.raises(ArgumentError, match=r"a cluster of 16x1x1 = 16 blocks .* does not fit"):
            m.big.launch(16, 1024, (out, 10), 200_000, cluster=16)
    else:
        m.big.launch(16, 1024, (out, 10), 200_000, cluster=16)
        assert out[0] == 9


@pytest.mark.gpu
def test_launches_with_attributes_run_in_the_helper_process():
    """Under isolate() (as after a fault) cluster, cooperative and PDL launches and k.bench with
    a cluster run in the helper process on NumPy arrays; a cooperative grid too large for the
    helper's GPU is refused there, naming the limit, across the pipe."""
    import numpy as np
    m = cuda_magic.build(RUNTIME_CLUSTER)
    cuda_magic.isolate()
    try:
        out = np.zeros(3 * 8, np.int32)
        m.ranks.launch(8, 32, (out,), cluster=(4, 1, 1))
        got = out.reshape(8, 3)
        assert got[:, 0].tolist() == [0, 1, 2, 3] * 2 and set(got[:, 1]) == {4}
        assert got[:, 2].tolist() == [1, 2, 3, 0, 5, 6, 7, 4]
        out = np.zeros(3 * 64, np.int32)
        timing = m.ranks.bench(64, 32, out, cluster=8, repeat=10)
        assert "each launch with cluster=8x1x1 (cuLaunchKernelEx)" in timing.notes
        n = 1 << 16
        x = np.random.default_rng(0).integers(0, 100, n, dtype=np.int32)
        partial, total = np.zeros(132 * 4, np.int32), np.zeros(1, np.int32)
        m.grid_sum.launch(8, 256, (x, partial, total, n), cooperative=True)
        assert total[0] == int(x.sum())
        buf, res = np.zeros(n, np.int32), np.zeros(n, np.int32)
        m.produce.launch(n // 256, 256, (buf, n))
        m.consume.launch(n // 256, 256, (buf, res, n), pdl=True)
        np.testing.assert_array_equal(res, 3 * np.arange(n, dtype=np.int32) + 1)
        with pytest.raises(ArgumentError, match=r"a cooperative grid of .* does not fit on the "
                                                r"GPU at once: \d+ per SM x \d+ SMs"):
            m.grid_sum.launch(132 * 64, 1024, (x, partial, total, n), cooperative=True)
    finally:
        cuda_magic.isolate(False)


def test_a_cluster_no_gpc_can_hold_is_refused_naming_its_shared_memory(monkeypatch):
    """cuOccupancyMaxActiveClusters = 0 (what the driver says for a cluster that can never be
    placed): the error gives the blocks, threads and shared memory per block and per cluster."""
    from types import SimpleNamespace

    from cuda_magic.runtime import driver
    from cuda_magic.runtime.launch import attributes as launch_attrs
    fits = {"n": 0}
    monkeypatch.setattr(launch_attrs, "config", lambda *a: ("cfg", "func"))
    monkeypatch.setattr(driver, "api", lambda: SimpleNamespace(
        cuOccupancyMaxActiveClusters=lambda func, cfg: (0, fits["n"])))
    k = SimpleNamespace(name="big", attributes={"shared": 1024},
                        handle_and_packer=lambda shared: ("handle", "packer"))
    with pytest.raises(ArgumentError, match=r"big: a cluster of 16x1x1 = 16 blocks of 1024 threads "
                                            r"does not fit on the GPU \(cuOccupancyMaxActiveClusters"
                                            r" = 0\): 201,024 bytes of shared memory per block "
                                            r"\(200,000 dynamic \+ 1,024 static\), 3,216,384 per "
                                            r"cluster"):
        launch_attrs.cluster_fit(k, (16, 1, 1, 1024, 1, 1), 200_000, (16, 1, 1), (16, 1, 1))
    fits["n"] = 3
    launch_attrs.cluster_fit(k, (16, 1, 1, 1024, 1, 1), 200_000, (16, 1, 1), (16, 1, 1))


class LaunchConfig:
    """Stands in for cuda.core's LaunchConfig (whose cluster= needs a driver to construct):
    matched by its name and module, as the runtime matches the real one."""
    __module__ = "cuda.core._launch_config"

    def __init__(self, grid, block, cluster=None, shmem_size=None, is_cooperative=False,
                 programmatic_stream_serialization=False):
        self.grid, self.block, self.cluster, self.shmem_size = grid, block, cluster, shmem_size
        self.is_cooperative = is_cooperative
        self.programmatic_stream_serialization = programmatic_stream_serialization


def test_a_launch_config_is_the_launch_its_fields_say():
    """cuda.core counts the grid in clusters when a cluster is given; the launch counts blocks."""
    from cuda_magic.runtime.launch.attributes import from_launch_config
    got = from_launch_config(LaunchConfig((4, 2), 128, cluster=2, shmem_size=4096,
                                          is_cooperative=True,
                                          programmatic_stream_serialization=True), "k")
    assert got == dict(grid=(8, 2, 1), block=(128, 1, 1), shared_mem=4096, stream=None,
                       cluster=(2, 1, 1), cooperative=True, pdl=True)
    got = from_launch_config((LaunchConfig(3, (16, 16)), 7), "k")
    assert got == dict(grid=(3, 1, 1), block=(16, 16, 1), shared_mem=0, stream=7, cluster=None,
                       cooperative=False, pdl=False)
    assert from_launch_config((4, 128), "k") is None
    with pytest.raises(ArgumentError, match=r"write k\[config\]\(\*args\) or k\[config, stream\]"):
        from_launch_config((LaunchConfig(1, 1), 0, 0), "k")
    with pytest.raises(ArgumentError, match=r"grid=0: a positive int"):
        from_launch_config(LaunchConfig(0, 32), "k")


def test_k_of_a_launch_config_launches_with_its_keywords(monkeypatch):
    """k[config](*args), k.bench[config] and k.verify[config]: each the keyword launch its
    fields say; a form without the attribute refuses a config that asks for it."""
    import fake_driver as fd
    import numpy as np

    from cuda_magic.runtime import Kernel
    proto = cuda_magic.build(fd.SCALE, cuda_magic.line_config(arch="sm_90"), load=False).scale
    fake = fd.install(counting=True)
    try:
        k = Kernel(proto.name, proto.params, proto.result, proto.symbol, False)
        fake.register(k)
        seen = []
        fake.on_launch = lambda symbol, dims, params: (seen.append(tuple(dims)),
                                                       fd.scale_on_host(symbol, dims, params))[1]
        x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
        k[LaunchConfig(2, 32)](x, y, 3.0, 64)            # no attribute: a plain launch
        assert seen == [(2, 1, 1, 32, 1, 1)]
        np.testing.assert_array_equal(y, 3 * x)
    finally:
        fd.uninstall(fake)

    calls = []
    monkeypatch.setattr(Kernel, "launch", lambda self, *a, **kw: calls.append((a, kw)))
    k[LaunchConfig(2, 32, cluster=4, programmatic_stream_serialization=True), 5](x, y, 3.0, 64)
    assert calls == [((), dict(args=(x, y, 3.0, 64), grid=(8, 1, 1), block=(32, 1, 1),
                               shared_mem=0, stream=5, cluster=(4, 1, 1), cooperative=False,
                               pdl=True))]
    bench = k.bench[LaunchConfig(2, 32, cluster=4)]
    assert bench.args[1:] == ((8, 1, 1), (32, 1, 1))
    assert bench.keywords == dict(shared_mem=0, stream=None, cluster=(4, 1, 1),
                                  cooperative=False, pdl=False)
    assert "stream" not in k.profile[LaunchConfig(2, 32, cluster=4)].keywords
    with pytest.raises(ArgumentError, match=r"scale.verify takes no cluster; the LaunchConfig "
                                            r"asks for it"):
        k.verify[LaunchConfig(2, 32, cluster=4)]
    with pytest.raises(ArgumentError, match=r"scale.profile takes no stream"):
        k.profile[LaunchConfig(2, 32), 3]
