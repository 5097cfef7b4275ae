"""runtime/measure/cupti.py: kernel durations from CUPTI's activity records.

CPU tests decode tests/data/cupti/kernel_records.json (tests/data/cupti/record_sample.py records
it on a GPU machine) and drive a Recorder through fake cupti functions; the GPU test records a
real launch.
"""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import cuda_magic
from cuda_magic import detect_arch
from cuda_magic.runtime.measure import cupti as cm

from conftest import SAXPY

SAMPLE = Path(__file__).parent.parent / "data" / "cupti" / "kernel_records.json"


@pytest.fixture
def sample():
    return json.loads(SAMPLE.read_text())


def test_decode_the_sample(sample):
    recs = cm.decode(sample["records"])
    assert cm.decode(sample) == recs                     # {"records": [...]} as saved
    spins = [r for r in recs if r.name == "spin"]
    assert len(spins) == 5 and len(recs) > 5
    assert [r.start_ns for r in recs] == sorted(r.start_ns for r in recs)
    assert [r.correlation_id for r in spins] == sorted(r.correlation_id for r in spins)
    for r in spins:
        assert r.end_ns > r.start_ns > 0 and r.graph_id == 0
        assert r.ms == pytest.approx((r.end_ns - r.start_ns) / 1e6) and 0 < r.ms < 1
    # only kernel records were kept (the script's cuMemsetD8 is not among them)
    assert {d["kind"] for d in sample["records"]} <= {cm.KERNEL, cm.CONCURRENT_KERNEL}


def test_durations_by_name(sample):
    recs = cm.decode(sample)
    spins = cm.durations_ms(recs, "spin")
    assert len(spins) == 5 and all(ms > 0 for ms in spins)
    assert spins == [r.ms for r in sorted((r for r in recs if r.name == "spin"),
                                          key=lambda r: r.correlation_id)]
    others = {r.name for r in recs} - {"spin"}
    assert others and all(len(cm.durations_ms(recs, n)) >= 1 for n in others)
    assert cm.durations_ms(recs, "spi") == [] and cm.durations_ms(recs, "nope") == []


def test_durations_in_launch_order_and_demangled_names():
    recs = [cm.KernelRecord("k(float*, int)", 500, 800, 2), cm.KernelRecord("k", 100, 300, 1),
            cm.KernelRecord("_Z1kPfi", 900, 1000, 3), cm.KernelRecord("k2", 1, 2, 0)]
    assert cm.durations_ms(recs, "k") == [200 / 1e6, 300 / 1e6]
    assert cm.durations_ms(recs, "_Z1kPfi") == [100 / 1e6]


def test_decode_ignores_other_kinds_and_unfinished_kernels():
    raw = [{"kind": 2, "start": 10, "end": 20, "correlation_id": 1, "name": "memset"},   # MEMSET
           {"kind": 10, "start": 0, "end": 0, "correlation_id": 2, "name": "running"},
           {"kind": 3, "start": 50, "end": 70, "correlation_id": 4, "name": "b"},         # KERNEL
           SimpleNamespace(kind=10, start=30, end=45, correlation_id=3, name="a", graph_id=9),
           {"start": 1, "end": 2, "name": "no kind"}]
    recs = cm.decode(raw)
    assert recs == [cm.KernelRecord("a", 30, 45, 3, 9), cm.KernelRecord("b", 50, 70, 4)]


def test_record_to_dict_round_trips():
    k = cm.KernelRecord("spin", 1000, 3500, 7, 2)
    assert cm.decode([json.loads(json.dumps(cm.record_to_dict(k)))]) == [k]
    obj = SimpleNamespace(kind=10, name="spin", start=1000, end=3500, correlation_id=7,
                          graph_id=2, ptr=0xdead, cache_config=object(), _private=1)
    d = cm.record_to_dict(obj)
    assert "ptr" not in d and "cache_config" not in d and "_private" not in d
    assert d["name"] == "spin" and cm.decode([d]) == [k]


def test_missing(monkeypatch):
    assert cm.missing() is None                     # cupti-python is in the test extra
    monkeypatch.setitem(sys.modules, "cupti", None)
    why = cm.missing()
    assert "cupti-python is not installed" in why and "cuda-magic[cupti]" in why
    with pytest.raises(cm.CuptiError, match="not installed"):
        with cm.Recorder():
            pass


def test_importing_touches_no_cupti():
    import subprocess
    code = ("import sys, cuda_magic.runtime.measure.cupti; "
            "assert 'cupti' not in sys.modules and 'cuda.bindings.driver' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ---- a Recorder on fake cupti functions -------------------------------------------------------

class FakeCupti:
    """activity_* functions that deliver ``pending`` at the flush, as CUPTI would."""

    def __init__(self):
        self.callbacks = None
        self.calls = []
        self.pending = []

    def activity_register_callbacks(self, requested, completed):
        self.calls.append("register")
        self.callbacks = (requested, completed)

    def activity_enable(self, kind):
        self.calls.append(("enable", int(kind)))

    def activity_disable(self, kind):
        self.calls.append(("disable", int(kind)))

    def activity_flush_all(self, flag):
        self.calls.append(("flush", flag))
        size, most = self.callbacks[0]()
        assert size > 0 and most == 0
        self.callbacks[1](self.pending)
        self.pending = []


@pytest.fixture
def fake(monkeypatch):
    from cupti import cupti
    f = FakeCupti()
    for name in ("activity_register_callbacks", "activity_enable", "activity_disable",
                 "activity_flush_all"):
        monkeypatch.setattr(cupti, name, getattr(f, name))
    monkeypatch.setattr(cm, "_state", {"registered": False, "active": None})
    return f


def _kernel(name, start, corr):
    return SimpleNamespace(kind=10, name=name, start=start, end=start + 2000,
                           correlation_id=corr, graph_id=0, ptr=1)


def test_recorder_on_fakes(fake):
    with cm.Recorder(keep_raw=True) as rec:
        fake.pending = [_kernel("spin", 300, 2), _kernel("spin", 100, 1),
                        SimpleNamespace(kind=2, start=1, end=2, correlation_id=9)]
    assert [r.correlation_id for r in rec.records] == [1, 2]
    assert cm.durations_ms(rec.records, "spin") == [0.002, 0.002]
    assert len(rec.raw) == 2 and "ptr" not in rec.raw[0]
    assert fake.calls == ["register", ("enable", 10), ("disable", 10), ("flush", 1)]
    with cm.Recorder() as again:                    # one after another: registered once
        fake.pending = [_kernel("other", 5000, 3)]
    assert [r.name for r in again.records] == ["other"] and fake.calls.count("register") == 1


def test_two_recorders_at_once_are_refused(fake):
    with cm.Recorder():
        with pytest.raises(cm.CuptiError, match="another cupti Recorder"):
            with cm.Recorder():
                pass
    with cm.Recorder():                             # and the first one's end frees the slot
        pass


def test_a_cupti_error_names_the_function(fake, monkeypatch):
    from cupti import cupti

    def refuse(kind):
        raise cupti.cuptiError(int(cupti.Result.ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED))

    monkeypatch.setattr(cupti, "activity_enable", refuse)
    with pytest.raises(cm.CuptiError) as e:
        with cm.Recorder():
            pass
    assert isinstance(e.value, RuntimeError) and "\n" not in str(e.value)
    assert "activity_enable" in str(e.value)
    assert "ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" in str(e.value)
    assert cm._state["active"] is None              # the next Recorder may try again


def test_a_failed_flush_still_disables(fake, monkeypatch):
    from cupti import cupti

    def broken(flag):
        raise cupti.cuptiError(int(cupti.Result.ERROR_UNKNOWN))

    monkeypatch.setattr(cupti, "activity_flush_all", broken)
    with pytest.raises(cm.CuptiError, match="activity_flush_all failed: ERROR_UNKNOWN"):
        with cm.Recorder():
            pass
    assert ("disable", 10) in fake.calls and cm._state["active"] is None
    with pytest.raises(ZeroDivisionError):          # the block's own error is not hidden
        with cm.Recorder():
            1 / 0


def test_no_driver_is_an_error_not_a_hang(monkeypatch):
    if detect_arch() is not None:
        pytest.skip("a driver is here")
    monkeypatch.setattr(cm, "_state", {"registered": False, "active": None})
    with pytest.raises(cm.CuptiError, match="CUPTI activity_register_callbacks failed"):
        with cm.Recorder():
            pass


# ---- GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_records_a_launch():
    np = pytest.importorskip("numpy")
    if cm.missing():
        pytest.skip(cm.missing())
    from cuda_magic.runtime import driver
    k = cuda_magic.build(SAXPY, {"arch": detect_arch()})["scale"].load()
    n = 1 << 20
    x, y = np.ones(n, np.float32), np.zeros(n, np.float32)
    k[n // 256, 256](x, y, 2.0, n)                   # the first launch copies in and loads
    driver.synchronize()
    with cm.Recorder() as rec:
        k[n // 256, 256](x, y, 3.0, n)
        driver.synchronize()
    assert float(y[0]) == 3.0
    mine = [r for r in rec.records if r.name == k.symbol]
    assert len(mine) == 1, rec.records
    assert 0 < mine[0].ms < 100 and cm.durations_ms(rec.records, k.symbol) == [mine[0].ms]
