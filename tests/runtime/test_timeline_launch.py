"""``k.timeline`` on the CPU, through the stub driver (benchmarks/fake_driver.py): a "GPU" whose
kernel launches write the timeline buffer as ``<cuda_magic/timeline.h>`` does (timeline_buffers.py),
reading the pointers and capacity from the ``cm_timeline`` state the host set, and whose probe
kernel writes %globaltimer/clock64 pairs.  What reaches the driver (the state, the zeroed counts,
the launch with its attributes, the memory freed), the capacity rules and the errors."""

from __future__ import annotations

import ctypes
import enum
import json
import struct

import numpy as np
import pytest

import fake_driver as fd  # benchmarks/ (on sys.path: conftest.py)
from cuda_magic import ArgumentError, CudaError
from cuda_magic.cell import build, line_config
from cuda_magic.runtime import Kernel, Timeline, driver
from cuda_magic.runtime.hang import watchdog
from cuda_magic.runtime.measure.timeline import recording
from cuda_magic.runtime.measure.timeline.build import DEFINE

from corpus import KERNELS
from timeline_buffers import region, write

T0 = 1_760_000_000_000
PIPELINE = (KERNELS / "timeline_pipeline.cu").read_text()


class _Value:
    def __init__(self):
        self.clusterDim = type("dim3", (), {"x": 0, "y": 0, "z": 0})()
        self.cooperative = self.programmaticStreamSerializationAllowed = 0


class TimelineDriver(fd.TimingDriver):
    """The timing stub plus what a timeline calls: the module's globals, memset, launches with
    attributes; ``events(block, warp)`` says what each warp of a launch records."""

    class CUlaunchAttributeID:
        CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
        CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6

    class CUlaunchAttribute:
        def __init__(self):
            self.id, self.value = None, _Value()

    class CUlaunchConfig:
        pass

    CUstream = int

    def __init__(self, events=None):
        super().__init__()
        self.globals: dict[bytes, ctypes.Array] = {}
        self.states: list[tuple] = []          # the cm_timeline state at each launch
        self.ex: list[tuple] = []              # (cluster, cooperative, pdl) of cuLaunchKernelEx
        self.probes = 0
        self.events = events or (lambda where, warp: [(T0 + 10 * warp, "done", "mark", 0)])
        self.memsets: list[tuple] = []

    def cuLibraryGetGlobal(self, lib, name):
        buf = self.globals.setdefault(bytes(name), ctypes.create_string_buffer(32))
        return (fd.CUresult(0), ctypes.addressof(buf), 32)

    def cuMemsetD8(self, ptr, value, n):
        ctypes.memset(int(ptr), value, n)
        self.memsets.append((int(ptr), n))
        return fd._OK

    def cuKernelGetAttribute(self, attr, handle, dev):
        return (fd.CUresult(0), 0)

    def cuFuncSetAttribute(self, func, attr, value):
        return fd._OK

    def cuOccupancyMaxActiveClusters(self, func, cfg):
        return (fd.CUresult(0), 4)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launches += 1
        return self._run(self.kernels[int(f)], (gx, gy, gz), (bx, by, bz), int(params))

    def cuLaunchKernelEx(self, cfg, func, params, extra):
        ids = {a.id: a.value for a in cfg.attrs}
        ID = self.CUlaunchAttributeID
        dim = ids.get(ID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        self.ex.append((None if dim is None else (dim.clusterDim.x, dim.clusterDim.y,
                                                  dim.clusterDim.z),
                        ID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE in ids,
                        ID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION in ids))
        self.launches += 1
        return self._run(self.kernels[int(func)], (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ),
                         (cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ), int(params))

    def _run(self, symbol, grid, block, params):
        arg = [ctypes.c_void_p.from_address(params + 8 * i).value for i in range(2)]
        if symbol == recording.PROBE:
            self.probes += 1
            out = ctypes.c_uint64.from_address(arg[0]).value
            samples = ctypes.c_uint32.from_address(arg[1]).value
            rows = np.ctypeslib.as_array((ctypes.c_uint64 * (grid[0] * (1 + 2 * samples)))
                                         .from_address(out)).reshape(grid[0], -1)
            for b in range(grid[0]):        # 10 ns per sample: the 32 ns tick shows as a step
                rows[b, 0] = b
                rows[b, 1::2] = T0 + (np.arange(samples) * 10) // 32 * 32
                rows[b, 2::2] = 1000 + np.arange(samples) * 17
            return fd._OK
        state = struct.unpack("<QQQII", bytes(self.globals[b"cm_timeline"]))
        self.states.append(state)
        slots_ptr, counts_ptr, nonce, capacity, version = state
        wpb = (block[0] * block[1] * block[2] + 31) // 32
        warps = grid[0] * grid[1] * grid[2] * wpb
        slots = (ctypes.c_char * (warps * capacity * 16)).from_address(slots_ptr)
        counts = (ctypes.c_char * (warps * 4)).from_address(counts_ptr)
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    for w in range(wpb):
                        write(slots, counts, capacity, region(grid, block, (x, y, z), w),
                              self.events((x, y, z), w))
        return fd._OK


@pytest.fixture
def fake():
    f = TimelineDriver()
    f.saved = fd.install(counting=True).saved
    driver._state["api"] = f
    recording._RESOLUTION.clear()
    yield f
    watchdog.stop()            # what a launch on device arrays armed (test_hang.py does the same)
    watchdog.WATCH.clear()
    fd.uninstall(f)
    recording._RESOLUTION.clear()


@pytest.fixture(scope="module")
def module():
    return build(PIPELINE, line_config(arch="sm_90a"))


def _kernel(module) -> Kernel:
    proto = module.staged_scale
    return Kernel(proto.name, proto.params, proto.result, proto.symbol, False)


def _args(tiles=16):
    x = np.arange(tiles * 1024, dtype=np.float32)
    return x, np.zeros_like(x), np.float32(-0.5), 4


def pipeline_events(where, warp):
    """What the pipeline's warps record: warp 0 loads two stages, the others wait then compute."""
    b = where[0] * 10_000
    if warp == 0:
        return [(T0 + b, "producer/load", "begin", where[0]), (T0 + b + 300, "producer/load", "end", where[0]),
                (T0 + b + 310, "producer/load", "begin", where[0]), (T0 + b + 600, "producer/load", "end", where[0])]
    return [(T0 + b + 5, "consumer/wait", "begin", where[0], 4), (T0 + b + 320, "consumer/wait", "end", where[0]),
            (T0 + b + 330, "consumer/math", "begin", where[0]), (T0 + b + 900, "consumer/math", "end", where[0]),
            (T0 + b + 950, "done", "mark", where[0])]


def test_a_timeline_launch_sets_the_state_zeroes_the_counts_and_decodes_the_events(fake, module):
    fake.events = pipeline_events
    k = _kernel(module)
    t = k.timeline[4, 128](*_args())
    assert isinstance(t, Timeline)
    assert (t.kernel, t.grid, t.block, t.capacity) == ("staged_scale", (4, 1, 1), (128, 1, 1), 256)
    assert DEFINE in t.argv and t.resolution_ns == 32 and t.sm_count == 132
    assert (t.recorded, t.lost) == (4 * (4 + 3 * 5), 0)
    assert t.names() == ["producer/load", "consumer/wait", "consumer/math", "done"]
    (slots, counts, nonce, capacity, version), = fake.states
    assert (capacity, version) == (256, recording.VERSION) and 0 <= nonce < 2**64
    assert (counts, 4 * 16) in fake.memsets                 # 16 warps' counts zeroed first
    first_load = next(e for e in t.events if e.name == "producer/load" and e.block == (0, 0, 0))
    waits = [e for e in t.events if e.name == "consumer/wait" and e.block == (0, 0, 0)]
    assert len(waits) == 3 and all(w.end >= first_load.end for w in waits)
    assert {e.sm for e in t.events if e.block == (2, 0, 0)} == {2}
    assert fake.probes == 1 and fake.memory == {}, "the buffers and the staged arrays freed"
    rows = {r["name"]: r for r in t.summary()}
    assert rows["consumer/math"]["count"] == 12 and rows["consumer/math"]["role"] == "consumer"


def test_the_written_numpy_output_comes_back_and_the_probe_runs_once_per_process(fake, module):
    def scale(where, warp):
        return [(T0 + warp, "consumer/math", "mark", 0)]
    fake.events = scale
    k = _kernel(module)
    k.timeline(4, 128, *_args())
    k.timeline[4, 128](*_args())
    assert fake.probes == 1 and len(fake.states) == 2
    assert fake.states[0][2] != fake.states[1][2], "a new nonce per launch"


def test_device_arrays_go_by_pointer_and_the_launch_is_waited_for(fake, module):
    ptr = fake.cuMemAlloc(2 * 16 * 1024 * 4)[1]
    x, y = fd.FakeCupy(ptr, "float32", (16 * 1024,)), fd.FakeCupy(ptr + 16 * 1024 * 4, "float32",
                                                                   (16 * 1024,))
    queries = fake.queries
    t = _kernel(module).timeline[4, 128](x, y, -0.5, 4)
    assert t.recorded == 16 and fake.queries > queries      # a polled wait on the stream
    fake.cuMemFree(ptr)
    assert fake.memory == {}


def test_a_small_capacity_counts_what_it_drops(fake, module):
    fake.events = lambda where, warp: [(T0 + i, "done", "mark", 0) for i in range(10)]
    t = _kernel(module).timeline[4, 128](*_args(), capacity=3)
    assert t.capacity == 3 and fake.states[0][3] == 3
    assert (t.recorded, t.lost) == (16 * 3, 16 * 7)
    assert any("112 events lost: 16 warps filled their 3 slots (capacity=3" in n for n in t.notes)


def test_the_default_capacity_is_cut_to_fit_the_budget_and_says_so(fake, module, monkeypatch):
    monkeypatch.setattr(recording, "BUDGET", 16 * 16 * 100)      # 100 slots for 16 warps
    t = _kernel(module).timeline[4, 128](*_args())
    assert t.capacity == 100 and fake.states[0][3] == 100
    assert any("capacity cut to 100 events per warp to fit" in n and "capacity= sets it" in n
               for n in t.notes)
    monkeypatch.setattr(recording, "BUDGET", 16 * 16 - 1)
    with pytest.raises(ArgumentError, match="give capacity= .events per warp. to allocate it"):
        _kernel(module).timeline[4, 128](*_args())


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "64", 1 << 30])
def test_a_bad_capacity_is_refused_naming_it_before_anything_runs(fake, module, bad):
    with pytest.raises(ArgumentError, match=r"staged_scale\.timeline: capacity=.*events per warp"):
        _kernel(module).timeline[4, 128](*_args(), capacity=bad)
    assert fake.launches == 0


def test_a_buffer_the_gpu_cannot_hold_is_an_error_naming_capacity(fake, module, monkeypatch):
    oom = enum.IntEnum("CUresult", {"CUDA_ERROR_OUT_OF_MEMORY": 2})(2)

    def refuse(nbytes):
        return (oom, 0) if nbytes > 1 << 20 else fd.FakeDriver.cuMemAlloc(fake, nbytes)
    monkeypatch.setattr(fake, "cuMemAlloc", refuse)
    monkeypatch.setattr(fake, "cuGetErrorString", lambda err: (fd.CUresult(0), b"out of memory"))
    with pytest.raises(ArgumentError, match=r"capacity=100000 x 16 warps x 16 bytes = 25,600,000 "
                                            r"bytes could not be allocated \(CUDA_ERROR_OUT_OF_MEMORY\)"
                                            r": a smaller capacity="):
        _kernel(module).timeline[4, 128](*_args(), capacity=100_000)
    assert fake.launches == 0 and fake.memory == {}


@pytest.mark.parametrize("kw, ex", [({"cluster": (2, 1, 1)}, ((2, 1, 1), False, False)),
                                    ({"pdl": True}, (None, False, True))])
def test_launch_attributes_reach_the_driver(fake, module, kw, ex):
    t = _kernel(module).timeline[4, 128](*_args(), **kw)
    assert fake.ex == [ex] and t.recorded == 16


def test_a_launch_config_form_and_shared_memory_pass_through(fake, module):
    t = _kernel(module).timeline[4, 128, 0](*_args())
    assert t.recorded == 16
    with pytest.raises(ArgumentError, match="staged_scale.timeline"):
        _kernel(module).timeline[4, 128, 0, None](*_args())     # no stream: the default one


def test_a_cell_without_marks_says_to_include_the_header(fake):
    m = build(fd.SCALE, line_config(arch="sm_90a"))
    k = Kernel(m.scale.name, m.scale.params, m.scale.result, m.scale.symbol, False)
    with pytest.raises(ArgumentError, match=r"scale\.timeline: the cell has no marks to record; "
                                            r"#include <cuda_magic/timeline.h>"):
        k.timeline[1, 32](np.zeros(4, np.float32), np.zeros(4, np.float32), 1.0, 4)
    assert fake.launches == 0


def test_no_timeline_under_isolate_or_after_a_fault(fake, module):
    driver._state["isolated"] = True
    with pytest.raises(ArgumentError, match=r"isolate\(False\) first"):
        _kernel(module).timeline[4, 128](*_args())
    driver._state["isolated"], driver._state["lost"] = False, "CUDA_ERROR_ILLEGAL_ADDRESS"
    with pytest.raises(CudaError, match="restart the Python kernel"):
        _kernel(module).timeline[4, 128](*_args())
    assert fake.launches == 0


def test_a_failed_probe_leaves_the_resolution_unknown_and_says_why(fake, module, monkeypatch):
    real = fake._run

    def run(symbol, grid, block, params):
        return (fd.CUresult(1),) if symbol == recording.PROBE else real(symbol, grid, block, params)
    monkeypatch.setattr(fake, "_run", run)
    t = _kernel(module).timeline[4, 128](*_args())
    assert t.resolution_ns is None and any("its probe failed" in n for n in t.notes)


def test_the_probe_reads_a_tick_and_finds_a_timer_running_backwards():
    rows = np.zeros((2, 1 + 2 * 4), np.uint64)
    rows[:, 0] = [5, 9]
    rows[:, 1::2] = [[100, 100, 132, 164], [200, 232, 220, 264]]   # SM 9 goes back once
    rows[:, 2::2] = [[1, 2, 3, 4], [1, 2, 3, 4]]
    tick, notes = recording.tick_of(rows)
    assert tick == 32
    assert notes == ("%globaltimer ran backwards against clock64 on SM 9: order events of "
                     "those SMs with care",)
    flat = np.zeros((1, 1 + 2 * 3), np.uint64)
    assert recording.tick_of(flat) == (None, ("%globaltimer did not move during the probe: "
                                              "resolution unknown",))


# --- on the GPU ----------------------------------------------------------------------------------

MARKS = r"""
#include <cuda_magic/timeline.h>
// Lanes 0-15 and 16-31 of each warp mark on divergent paths (two recorders per warp, from the
// warp's first event on: its counter's reset taken by one of them); then every warp times a range.
extern "C" __global__ void split_marks(int* out, int rounds) {
    const int lane = threadIdx.x % 32;
    for (int r = 0; r < rounds; ++r) {
        if (lane < 16) CM_MARK("low"); else CM_MARK("high");
    }
    CM_RANGE_BEGIN("write");
    const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    out[b * blockDim.x * blockDim.y * blockDim.z + t] = b;
    CM_RANGE_END("write");
}
"""


def _first(t, name, where, warp=None):
    """The earliest range ``name`` of block ``where`` (of ``warp`` if given)."""
    return min((e for e in t.events if e.name == name and e.block == where
                and (warp is None or e.warp == warp)), key=lambda e: e.start)


def _pipeline_checks(t, blocks, warps):
    for b in range(blocks):
        load = _first(t, "producer/load", (b, 0, 0), 0)
        for w in range(1, warps):
            wait = _first(t, "consumer/wait", (b, 0, 0), w)
            assert load.end <= wait.end, (b, w, load, wait)


@pytest.mark.gpu
@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_the_pipeline_timeline_shows_consumers_waiting_for_the_producers_first_stage(compiler, tmp_path):
    import cuda_magic
    from test_timeline import check_chrome_trace
    m = cuda_magic.build(PIPELINE, cuda_magic.line_config(compiler=compiler))
    x, y, a, per_block = _args()
    t = m.staged_scale.timeline[4, 128](x, y, a, per_block)
    np.testing.assert_array_equal(y, a * x)           # the instrumented build still computes
    assert (t.lost, t.recorded) == (0, 4 * (13 + 3 * 17)), t.notes
    assert DEFINE in t.argv and t.recorder == "the lowest active lane of each warp"
    _pipeline_checks(t, 4, 4)
    rows = {r["name"]: r for r in t.summary()}
    assert rows["consumer/wait"]["count"] == 4 * 3 * 4 and rows["consumer/wait"]["role"] == "consumer"
    assert rows["producer/load"]["count"] == 16 and rows["done"]["kind"] == "mark"
    assert 0 < rows["consumer/math"]["share"] < 1
    assert t.sm_count and all(0 <= e.sm < 4 * t.sm_count for e in t.events)
    assert all(e.start >= 0 and e.end <= t.duration for e in t.events)
    check_chrome_trace(json.loads(open(t.to_perfetto(tmp_path / "pipeline.json")).read()))
    print(f"\n{compiler}: {len(t.events)} events, {t.duration} ns, %globaltimer tick "
          f"{t.resolution_ns} ns; notes {t.notes}")


@pytest.mark.gpu
def test_globaltimer_resolution_is_measured_and_runs_forward_on_every_sm():
    import cuda_magic
    m = cuda_magic.build(PIPELINE)
    t = m.staged_scale.timeline[4, 128](*_args())
    assert t.resolution_ns is not None and 1 <= t.resolution_ns <= 1000, t.notes
    assert not [n for n in t.notes if "backwards" in n or "resolution" in n], t.notes
    print(f"\n%globaltimer resolution on this GPU: {t.resolution_ns} ns")


@pytest.mark.gpu
def test_a_warp_specialised_tma_kernel_from_the_corpus():
    torch = pytest.importorskip("torch")
    import cuda_magic
    m = cuda_magic.build((KERNELS / "warp_specialized.cu").read_text())
    tiles = 16                                        # two blocks of eight 32 x 32 tiles
    x = torch.randn(tiles * 32, 32, device="cuda")
    for name in ("ws_scale", "ws_scale_regs"):
        out = torch.zeros_like(x)
        t = getattr(m, name).timeline[tiles // 8, 256](cuda_magic.tma(x, box=(32, 32)), out, -0.5)
        torch.cuda.synchronize()
        assert torch.equal(out, -0.5 * x), name
        assert t.lost == 0 and set(t.names()) == {"producer/issue", "producer/wait",
                                                 "consumer/wait", "consumer/scale"}, t.names()
        for b in range(2):
            issue = _first(t, "producer/issue", (b, 0, 0), 0)
            for w in range(4, 8):                     # the consumer warpgroup's warps
                assert _first(t, "consumer/wait", (b, 0, 0), w).end >= issue.end, (name, b, w)
        rows = {r["name"]: r for r in t.summary()}
        assert rows["consumer/scale"]["count"] == 2 * 4 * 8 and rows["producer/issue"]["count"] == 16


@pytest.mark.gpu
def test_an_overflow_is_counted_and_the_kernel_still_runs():
    import cuda_magic
    m = cuda_magic.build(PIPELINE)
    x, y, a, per_block = _args()
    t = m.staged_scale.timeline[4, 128](x, y, a, per_block, capacity=2)
    np.testing.assert_array_equal(y, a * x)
    assert (t.capacity, t.recorded, t.lost) == (2, 4 * 4 * 2, 4 * (11 + 3 * 15))
    assert any("224 events lost: 16 warps filled their 2 slots (capacity=2" in n for n in t.notes)


@pytest.mark.gpu
@pytest.mark.parametrize("kw", [{"cluster": (2, 1, 1)}, {"pdl": True}])
def test_cluster_and_pdl_launches(kw):
    import cuda_magic
    m = cuda_magic.build(PIPELINE)
    x, y, a, per_block = _args()
    t = m.staged_scale.timeline[4, 128](x, y, a, per_block, **kw)
    np.testing.assert_array_equal(y, a * x)
    assert t.lost == 0 and t.recorded == 4 * (13 + 3 * 17)
    _pipeline_checks(t, 4, 4)


@pytest.mark.gpu
def test_divergent_recorders_and_many_blocks_per_sm_count_exactly():
    """Every block of a grid several times the GPU's size finds stale counters in shared memory
    (the previous block's, the previous launch's): each warp still records exactly its events,
    its two divergent paths included."""
    import cuda_magic
    m = cuda_magic.build(MARKS)
    grid, block, rounds = (64, 3, 2), (32, 3, 1), 5
    out = np.zeros(64 * 3 * 2 * 96, np.int32)
    for _ in range(2):
        t = m.split_marks.timeline[grid, block](out, rounds)
        assert t.lost == 0 and t.recorded == 64 * 3 * 2 * 3 * (2 * rounds + 2), t.notes
        per_warp: dict = {}
        for e in t.events:
            per_warp.setdefault((e.block, e.warp), []).append(e.name)
        assert len(per_warp) == 64 * 3 * 2 * 3
        for names in per_warp.values():
            assert sorted(names) == sorted(["low"] * rounds + ["high"] * rounds + ["write"])
        assert {e.block for e in t.events} == {(x, y, z) for x in range(64) for y in range(3)
                                               for z in range(2)}
    np.testing.assert_array_equal(out, np.repeat(np.arange(64 * 3 * 2), 96))
