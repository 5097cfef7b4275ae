"""The helper-process toolkit on the CPU (cuda_magic/runtime/helper/): the Program record, the
argument encoding (every argument kind, through pickles and through a spec directory), the one
host copy of a device array (bfloat16 as raw bits), the framed transport (messages split across
reads, truncated streams), and the three helpers' launch paths driven by the stub driver
(benchmarks/fake_driver.py): the tools' launcher, a sweep's job and its helper loop, the worker."""

import ctypes
import math
import os
import pickle
import sys
import threading
import time

import numpy as np
import pytest

import cuda_magic
from cuda_magic.cell import build, line_config
from cuda_magic.runtime import NoGPUError
from cuda_magic.runtime.nsight import run as tools
from cuda_magic.runtime.helper import worker, main as worker_main
from cuda_magic.runtime.nsight import child as launcher
from cuda_magic.errors import ArgumentError
from cuda_magic.runtime.helper import encoding, specdir, transport
from cuda_magic.runtime.helper.program import Entry, Program
from cuda_magic.correctness.reference import references
from cuda_magic.runtime.sweep import Job, Launch, protocol, run_job

import fake_driver as fd  # benchmarks/ (on sys.path: conftest.py)

SCALE = fd.SCALE


@pytest.fixture(scope="module")
def module():
    return build(SCALE, line_config(arch="sm_90"))


@pytest.fixture
def fake(module):
    """The stub driver, whose launches of ``scale`` run y = a * x on host memory."""
    f = fd.install(counting=True)
    f.register(module.scale)

    f.on_launch = fd.scale_on_host
    f.cuMemcpyDtoD = lambda dst, src, n: (ctypes.memmove(dst, src, n), (fd.CUresult(0),))[1]
    yield f
    fd.uninstall(f)


# ---- the record -------------------------------------------------------------------------------

def test_a_program_is_the_exact_bytes_and_pickles(module):
    r = module.scale.result
    k = module.scale
    p = Program.of(r, {"scale": Entry(k.symbol, k.params)}, prefix="sweep:")
    assert p.binary == bytes(r.binary) and p.format == r.format and p.arch == r.arch
    assert p.key == "sweep:" + p.sha256 and p.source == r.source
    assert Program.of(r, {}, key=r.key).key == r.key
    assert Program.of(r, {}, source=False).source == ""
    again = pickle.loads(pickle.dumps(p))
    assert again.binary == p.binary and again.kernels == p.kernels and again.key == p.key


# ---- the encoding -----------------------------------------------------------------------------

STRUCT = np.dtype([("a", "<i4"), ("b", "<f4")])
SCALARS = [None, True, False, 3, -2**63, 2**64 - 1, 2.5, -0.0, float("inf"), float("nan"), "c",
           np.float32(1.5), np.float16(0.25), np.float64(-3.0), np.int8(-3), np.uint16(0x3F80),
           np.int64(7), np.uint64(2**64 - 1), np.bool_(True),
           b"\x01\0\0\0\0\0\x80?", bytearray(b"\x02\x03"), memoryview(b"\x04\x05\x06"),
           np.array((1, 2.0), STRUCT)[()]]
ARRAYS = [np.arange(6, dtype=np.float32), np.linspace(-1, 1, 5), np.ones(3, np.float16),
          np.arange(-4, 4, dtype=np.int8), np.array([0x3F80, 0x7FC0, 0x8000], np.uint16),   # bf16 bits
          np.array([True, False]), np.arange(4, dtype=np.complex64), np.zeros(2, STRUCT),
          np.float32(2.0) * np.ones((2, 3), np.float32), np.array(5, np.int32), np.empty(0, np.float64)]


def _expected(a):
    """What a value is rebuilt as: plain Python numbers, bytes for byte-likes and structs."""
    if isinstance(a, (bytes, bytearray, memoryview)) or isinstance(a, np.void):
        return bytes(a) if not isinstance(a, np.void) else a.tobytes()
    if type(a).__module__ == "numpy":
        return a.item()
    return a


def _same(x, y):
    if isinstance(x, float) and math.isnan(x):
        return isinstance(y, float) and math.isnan(y)
    return type(x) is type(y) and x == y and (not isinstance(x, float) or
                                              math.copysign(1, x) == math.copysign(1, y))


def _encode_all(args):
    arrays = {}

    def array(a):
        arrays[f"arg{len(arrays)}.npy"] = encoding.host_copy(a)
        return f"arg{len(arrays) - 1}.npy"
    return [encoding.encode(a, array) for a in args], arrays


def test_every_scalar_kind_round_trips_through_pickles_and_json():
    encoded, arrays = _encode_all(SCALARS)
    assert arrays == {}
    kinds = [e[0] for e in encoded]
    assert kinds[0] == "null" and kinds[-4:] == ["bytes"] * 4 and kinds[1:-4] == ["value"] * 18
    sent = pickle.loads(pickle.dumps(encoded))
    import json
    as_json = [encoding.from_json(d) for d in json.loads(json.dumps([encoding.to_json(e) for e in encoded]))]
    for a, e1, e2 in zip(SCALARS, sent, as_json):
        want = _expected(a)
        assert _same(encoding.decode(e1, {}), want), (a, e1)
        assert _same(encoding.decode(e2, {}), want), (a, e2)


def test_every_array_kind_round_trips_through_a_spec_directory(tmp_path, module):
    encoded, arrays = _encode_all(ARRAYS)
    assert [e[0] for e in encoded] == ["array"] * len(ARRAYS)
    k = module.scale
    p = Program.of(k.result, {"scale": Entry(k.symbol, k.params)}, prefix="launcher:")
    specdir.write(str(tmp_path), p, "scale", (1, 1, 1, 32, 1, 1), 0, encoded, arrays)
    loaded = specdir.read(str(tmp_path))
    assert loaded.binary == p.binary and loaded.sha256 == p.sha256 and loaded.symbol == k.symbol
    assert loaded.params == k.params and loaded.dims == (1, 1, 1, 32, 1, 1)
    for a, got in zip(ARRAYS, loaded.args):       # a 0-d array is saved as one element
        assert got.dtype == a.dtype and got.shape == (a.shape or (1,)) and got.tobytes() == a.tobytes()
    sent = pickle.loads(pickle.dumps((encoded, arrays)))     # the pipes' way
    for a, e in zip(ARRAYS, sent[0]):
        got = encoding.decode(e, sent[1])
        assert got.dtype == a.dtype and got.tobytes() == a.tobytes()


def test_an_unknown_kind_or_value_is_an_encoding_error(tmp_path):
    with pytest.raises(encoding.EncodingError, match="object"):
        encoding.encode(object(), lambda a: "x")
    assert encoding.encode(object(), lambda a: "x", other=lambda a: ("value", 1)) == ("value", 1)
    o = object()
    assert encoding.encode(o, lambda a: "x", plain=False) == ("value", o)   # pickles: as it is
    with pytest.raises(encoding.EncodingError, match="unknown argument kind 'tensor'"):
        encoding.from_json({"kind": "tensor"})
    with pytest.raises(encoding.EncodingError):
        encoding.decode(("tensor",), {})


class _Bf16Tensor:
    """What host_copy reads of a torch.Tensor holding bfloat16 (bits) or float32 values."""

    def __init__(self, values, dtype="bfloat16", cuda=True):
        self.values, self.dtype_name, self.is_cuda = values, dtype, cuda

    @property
    def dtype(self):
        return f"torch.{self.dtype_name}"

    def detach(self):
        return self

    def data_ptr(self):
        return 0

    def view(self, dtype):
        assert dtype == "int16"
        return _Bf16Tensor(self.values.view(np.int16), "int16", self.is_cuda)

    def float(self):
        bits = self.values.astype(np.uint32) << 16
        return _Bf16Tensor(bits.view(np.float32), "float32", self.is_cuda)

    def cpu(self):
        return self

    def numpy(self):
        if self.dtype_name == "bfloat16":
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self.values


_Bf16Tensor.__module__ = "torch"


def test_a_bfloat16_tensor_comes_to_the_host_as_its_raw_bits(monkeypatch):
    """The one bits form: the unsigned container of cuda_magic.elements (uint16)."""
    import types
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(int16="int16"))
    bits = np.array([0x3F80, 0xC000, 0x7FC0, 0x0001], np.uint16)     # 1, -2, NaN, a subnormal
    for cuda in (True, False):
        host = encoding.host_copy(_Bf16Tensor(bits, cuda=cuda))
        assert host.dtype == np.uint16 and host.tolist() == bits.tolist()
    f32 = np.array([1.0, 2.5], np.float32)
    host = encoding.host_copy(_Bf16Tensor(f32, "float32"))
    assert host.dtype == np.float32 and host.tolist() == [1.0, 2.5]
    # a sweep's reference (tune) is the same bits its helpers send back
    from cuda_magic.variants import comparison
    from cuda_magic.variants.judge import reference_bits
    assert reference_bits({"y": _Bf16Tensor(bits)})["y"].view(np.uint16).tolist() == bits.tolist()
    # a report of numbers reads the values: a comparison's arrays are float32, exactly
    values = encoding.host_copy(_Bf16Tensor(bits), "values")
    assert values.dtype == np.float32 and values[:2].tolist() == [1.0, -2.0]
    assert np.isnan(values[2]) and values[3] == np.float32(2.0 ** -133)    # the subnormal stays
    assert comparison._host("y", _Bf16Tensor(bits)).tolist()[:2] == [1.0, -2.0]


def test_device_arrays_copy_through_their_interface(fake):
    h = np.arange(8, dtype=np.float32)
    like_cupy = fd.FakeCupy(h.ctypes.data, "float32", (8,))
    got = encoding.host_copy(like_cupy)
    assert got.tolist() == h.tolist() and got.ctypes.data != h.ctypes.data

    class Numba:
        __cuda_array_interface__ = like_cupy.__cuda_array_interface__

        def copy_to_host(self):
            return h[::-1]
    assert encoding.host_copy(Numba()).tolist() == h[::-1].tolist()
    assert encoding.host_copy(h) is h


# ---- the transport ----------------------------------------------------------------------------

def test_a_frame_split_across_reads_arrives_whole():
    r, w = os.pipe()
    msg = ("arrays", {"x": np.arange(100_000, dtype=np.float64)})
    data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    frame = transport.FRAME.pack(len(data)) + data

    def trickle():       # the length in three pieces, the body in many, with pauses
        for piece in (frame[:3], frame[3:5], frame[5:8]):
            os.write(w, piece)
            time.sleep(0.01)
        for i in range(8, len(frame), 50_000):
            os.write(w, frame[i:i + 50_000])
        os.close(w)
    t = threading.Thread(target=trickle)
    t.start()
    got = transport.recv(r, time.monotonic() + 30)
    t.join()
    assert got[0] == "arrays" and np.array_equal(got[1]["x"], msg[1]["x"])
    with pytest.raises(EOFError) as exc:        # then the end, between frames: a plain EOF
        transport.recv(r)
    assert not isinstance(exc.value, transport.StreamEnded)
    os.close(r)


@pytest.mark.parametrize("cut", [3, 8, 20])
def test_a_truncated_stream_says_so(cut):
    r, w = os.pipe()
    data = pickle.dumps(("ok", list(range(100))))
    os.write(w, (transport.FRAME.pack(len(data)) + data)[:cut])
    os.close(w)
    with pytest.raises(transport.StreamEnded, match="the stream ended inside a frame|after a frame's"
                                                    " length") as exc:
        transport.recv(r)
    assert isinstance(exc.value, EOFError)                  # the helpers' handlers catch it
    assert f"of {transport.FRAME.size if cut < 8 else len(data)} bytes" in str(exc.value)
    os.close(r)


def test_a_silent_helper_times_out():
    r, w = os.pipe()
    with pytest.raises(TimeoutError):
        transport.recv(r, time.monotonic() + 0.05)
    os.close(r)
    os.close(w)


# ---- the launch paths, on the stub driver -----------------------------------------------------

def test_the_tools_launcher_launches_the_spec(fake, module, tmp_path):
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    tools.write_spec(module.scale, (1, 1, 1, 64, 1, 1), 0, (x, y, 3.0, 64), str(tmp_path))
    loaded = launcher.read_spec(str(tmp_path))
    launcher.launch(loaded)
    assert loaded.args[1].tolist() == (3 * x).tolist() and y.tolist() == [0.0] * 64
    assert fake.launches == 1


def _job(module, own=True, reference=None):
    k = module.scale
    program = Program.of(k.result, {"scale": Entry(k.symbol, k.params)}, prefix="sweep:",
                         source=False)
    x = np.arange(64, dtype=np.float32)
    launch = Launch("scale", (1, 1, 1, 64, 1, 1), 0,
                    (("array", "x"), ("array", "y"), ("value", 2.0), ("value", 64)))
    arrays = {"x": x, "y": np.zeros(64, np.float32)} if own else {"y": np.zeros(64, np.float32)}
    return Job(3, program, (launch,), ("y",), arrays), x


def test_a_sweep_job_replays_and_is_judged_in_the_helper(fake, module):
    job, x = _job(module)
    out = run_job(job, "GPU 0 (stub)")
    assert out.ok and not out.checked and out.outputs["y"].tolist() == (2 * x).tolist()
    out = run_job(job, "GPU 0 (stub)", reference=references({"y": 2 * x}))
    assert out.ok and out.checked and out.wrong is None and out.outputs == {}
    out = run_job(job, "GPU 0 (stub)", reference=references({"y": 3 * x}))
    assert out.checked and out.wrong.startswith("wrong: y: 63 of 64 elements outside the rule")
    assert fake.memory == {}                    # every buffer freed


def test_the_sweep_helper_loop_over_pipes(fake, module, monkeypatch):
    monkeypatch.setattr(protocol, "label", lambda: "GPU 0 (stub)")
    job, x = _job(module, own=False)
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()
    for m in ((protocol.ARRAYS, {"x": x}), (protocol.REFERENCE, ({"y": 2 * x}, None, None)), job):
        transport.send(from_parent, m)
    os.close(from_parent)
    protocol.serve(to_child, from_child)
    os.close(from_child)
    assert transport.recv(to_parent) == (protocol.READY, "GPU 0 (stub)")
    out = transport.recv(to_parent)
    assert out.index == 3 and out.ok and out.checked and out.wrong is None
    with pytest.raises(EOFError):
        transport.recv(to_parent)
    os.close(to_child)
    os.close(to_parent)


def served(sent) -> tuple:
    """The worker loop's answer to one message, over pipes in this process."""
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()
    transport.send(from_parent, sent)
    os.close(from_parent)                       # then the input ends: serve returns
    worker_main.serve(to_child, from_child)
    os.close(from_child)
    try:
        return transport.recv(to_parent)
    finally:
        os.close(to_child)
        os.close(to_parent)


def test_the_worker_loop_copies_written_arrays_back(fake, module):
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    sent = worker.message(module.scale, "run", (1, 1, 1, 64, 1, 1), 0, (x, y, 4.0, 64), None)
    assert sent[2] == "scale" and sent[1].key == module.scale.result.key
    status, (result, printed, arrays) = served(sent)
    assert status == "ok" and result is None and [i for i, _ in arrays] == [1]   # y, not const x
    assert arrays[0][1].tolist() == (4 * x).tolist()


def test_a_launch_with_attributes_runs_in_the_worker_checked_there(fake, module, monkeypatch):
    """After a fault or under isolate(), k.launch(cluster=...) goes to the worker with its
    attributes, where k.launch checks them again on that GPU; a tensor map cannot cross."""
    from cuda_magic.runtime import Kernel
    from cuda_magic.runtime.launch.attributes import Attributes
    from cuda_magic.runtime.tensormap import TensorMap
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    sent = worker.message(module.scale, "run", (4, 1, 1, 16, 1, 1), 0, (x, y, 4.0, 64),
                          Attributes(cluster=(2, 1, 1), cooperative=True))
    calls = []
    monkeypatch.setattr(Kernel, "launch", lambda self, *a, **kw: calls.append((a, kw)))
    assert served(sent)[0] == "ok"
    (grid, block, args, shared), kw = calls[0]
    assert (grid, block, shared) == ((4, 1, 1), (16, 1, 1), 0) and args[2:] == (4.0, 64)
    assert kw == {"cluster": (2, 1, 1), "cooperative": True, "pdl": False}
    t = TensorMap(bytes(128))
    t.recipe, t.array = {"box": [8]}, fd.FakeCupy(0)
    with pytest.raises(ArgumentError, match=r"parameter 'x': kernels now run in a helper process "
                                            r".* a tensor map describes device memory"):
        worker.message(module.scale, "run", (1, 1, 1, 8, 1, 1), 0, (t, y, 1.0, 8), None)


def test_the_worker_process_answers_or_says_there_is_no_gpu(module):
    k = module.scale
    with pytest.raises(ArgumentError, match="takes NumPy arrays and numbers, not ndarray"):
        worker.call(k, "run", (1, 1, 1, 1, 1, 1), 0, (fd.FakeCupy(0), None, 1.0, 1), None)
    try:
        x = np.ones(8, np.float32)
        y = np.zeros(8, np.float32)
        try:
            worker.call(k, "run", (1, 1, 1, 8, 1, 1), 0, (x, y, 2.0, 8), None)
        except NoGPUError as exc:            # the helper's own error, across the pipe
            assert cuda_magic.detect_arch() is None and "NVIDIA GPU" in str(exc)
        else:
            assert y.tolist() == [2.0] * 8
        assert worker._state["proc"] is not None and worker._state["proc"].poll() is None
    finally:
        worker.stop()
    assert worker._state["proc"] is None


# ---- which GPU a helper process sees: CUDA_VISIBLE_DEVICES picks it by this process's index ---

@pytest.mark.parametrize("env, expected", [
    (None, ["0", "1", "2"]),
    ("3,1", ["3", "1", "2"]),                 # beyond the list (never a device here): the index
    (" GPU-aa , GPU-bb", ["GPU-aa", "GPU-bb", "2"]),
    ("", ["0", "1", "2"]),
])
def test_a_helper_sees_the_gpu_this_process_counts_as_index(monkeypatch, env, expected):
    if env is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", env)
    assert [transport.visible_device(i) for i in range(3)] == expected


def test_a_tune_pool_and_a_remote_host_start_each_helper_on_its_own_gpu(monkeypatch):
    from cuda_magic.runtime.remote import host as remote_host
    from cuda_magic.runtime.sweep import pools
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    spawned = []

    class Proc:
        stdin = stdout = None

        def poll(self):
            return None
    monkeypatch.setattr(transport, "spawn",
                        lambda module, env, stderr=None: spawned.append(env["CUDA_VISIBLE_DEVICES"])
                        or Proc())
    pool = pools.LocalPool([0, 1])
    assert [h.gpu for h in pool.helpers] == ["3", "1"] and spawned == ["3", "1"]
    spawned.clear()
    monkeypatch.setattr(remote_host, "_HOSTS", {})     # the host registers itself: not kept
    host = remote_host.Host("token")
    host._helper(1), host._helper(0)
    assert spawned == ["1", "3"]
