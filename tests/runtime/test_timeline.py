"""The timeline's data on the CPU: buffers written as ``<cuda_magic/timeline.h>`` writes them
(timeline_buffers.py) decoded into events (ranges paired per warp, open ranges, marks, unknown
ids, lost events counted), the summary's figures, the Perfetto JSON checked against the Chrome
trace event format, and ``to_pandas``."""

from __future__ import annotations

import builtins
import json
import math

import pytest

from cuda_magic.errors import ArgumentError
from cuda_magic.runtime import Timeline
from cuda_magic.runtime.measure.timeline import decode, name_id
from cuda_magic.runtime.measure.timeline.events import Event, unknown_name

from timeline_buffers import buffers, fnv1a

GRID, BLOCK = (2, 1, 1), (64, 1, 1)         # two blocks of two warps
T0 = 1_700_000_000_000                      # a %globaltimer reading (ns since 1970)
NAMES = ["producer/load", "consumer:wait", "consumer:math", "epilogue"]


def _decode(warps, capacity=8, names=NAMES, **kw):
    slots, counts = buffers(GRID, BLOCK, capacity, warps)
    return decode(slots, counts, kernel="k", grid=GRID, block=BLOCK, capacity=capacity,
                  names={name_id(n): n for n in names}, argv=("nvrtc", "-DCUDA_MAGIC_TIMELINE"),
                  **kw)


def test_name_ids_are_32_bit_fnv1a_of_the_literals_bytes():
    # the published FNV-1a test vectors, and a name with a non-ASCII character (UTF-8 bytes)
    assert name_id("") == 0x811C9DC5 and name_id("a") == 0xE40C292C
    assert name_id("foobar") == 0xBF9CF968
    assert name_id("ü/load") == fnv1a("ü/load")
    assert unknown_name(0x1A2B3C) == "#001a2b3c"


def test_ranges_pair_per_warp_with_block_warp_sm_and_ns_since_the_origin():
    t = _decode({
        ((0, 0, 0), 0): [(T0 + 100, "producer/load", "begin", 3),
                         (T0 + 400, "producer/load", "end", 3),
                         (T0 + 450, "epilogue", "mark", 3)],
        ((1, 0, 0), 1): [(T0, "consumer:wait", "begin", 7, 5),      # recorded by lane 5
                         (T0 + 900, "consumer:wait", "end", 7)],
    })
    assert t.events == (
        Event("consumer:wait", "range", (1, 0, 0), 1, 7, 0, 900),
        Event("producer/load", "range", (0, 0, 0), 0, 3, 100, 400),
        Event("epilogue", "mark", (0, 0, 0), 0, 3, 450, 450),
    )
    assert (t.recorded, t.lost, t.duration, t.capacity) == (5, 0, 900, 8)
    assert t.names() == ["consumer:wait", "producer/load", "epilogue"]
    assert t.recorder == "the lowest active lane of each warp" and t.warps == 2
    assert t.argv == ("nvrtc", "-DCUDA_MAGIC_TIMELINE") and t.notes == ()


def test_an_end_closes_the_latest_begin_of_its_name_and_one_warp_never_closes_anothers():
    t = _decode({
        ((0, 0, 0), 1): [(T0, "consumer:math", "begin", 1),
                         (T0 + 10, "consumer:math", "begin", 1),      # nested: same name
                         (T0 + 20, "consumer:wait", "begin", 1),
                         (T0 + 30, "consumer:math", "end", 1),
                         (T0 + 40, "consumer:wait", "end", 1),
                         (T0 + 50, "consumer:math", "end", 1)],
        ((0, 0, 0), 0): [(T0 + 5, "consumer:wait", "end", 1)],      # another warp's END
    })
    ranges = sorted((e.name, e.start, e.end) for e in t.events)
    assert ranges == [("consumer:math", 0, 50), ("consumer:math", 10, 30),
                      ("consumer:wait", 20, 40)]
    assert any("1 CM_RANGE_END without a BEGIN in the same warp: consumer:wait" in n
               for n in t.notes)


def test_an_open_range_reaches_the_warps_last_event_and_is_marked_open():
    t = _decode({((1, 0, 0), 0): [(T0, "consumer:wait", "begin", 2),
                                  (T0 + 70, "epilogue", "mark", 2)],
                 ((0, 0, 0), 0): [(T0 + 500, "epilogue", "mark", 4)]})
    wait = next(e for e in t.events if e.kind == "range")
    assert (wait.start, wait.end, wait.open, wait.sm) == (0, 70, True, 2)
    assert t.duration == 500
    row = next(r for r in t.summary() if r["name"] == "consumer:wait")
    assert (row["count"], row["open"], row["median_ns"], row["total_ns"]) == (1, 1, None, None)


def test_ids_the_source_does_not_explain_are_named_by_their_hex():
    t = _decode({((0, 0, 0), 0): [(T0, 0xDEADBEEF, "mark", 0), (T0 + 1, "epilogue", "mark", 0)]})
    assert [e.name for e in t.events] == ["#deadbeef", "epilogue"]
    assert any("#deadbeef" in n and "macro" in n for n in t.notes)


def test_events_past_the_capacity_are_counted_as_lost_never_dropped_silently():
    many = [(T0 + 10 * i, "epilogue", "mark", 0) for i in range(7)]
    t = _decode({((0, 0, 0), 0): many, ((1, 0, 0), 1): many[:2]}, capacity=4)
    assert (t.recorded, t.lost) == (4 + 2, 3)
    assert [e.start for e in t.events if e.block == (0, 0, 0)] == [0, 10, 20, 30]
    assert any("3 events lost: 1 warps filled their 4 slots (capacity=4" in n for n in t.notes)


def test_a_warp_that_filled_its_slots_inside_a_range_leaves_it_open():
    events = [(T0, "consumer:wait", "begin", 0), (T0 + 5, "epilogue", "mark", 0),
              (T0 + 9, "consumer:wait", "end", 0)]
    t = _decode({((0, 0, 0), 0): events}, capacity=2)
    wait = next(e for e in t.events if e.kind == "range")
    assert wait.open and (wait.start, wait.end) == (0, 5) and t.lost == 1


def test_nothing_recorded_says_so():
    t = _decode({})
    assert t.events == () and t.recorded == 0 and t.duration == 0
    assert any("no events recorded" in n for n in t.notes)


def test_buffers_of_the_wrong_size_are_refused_naming_them():
    slots, counts = buffers(GRID, BLOCK, 4, {})
    with pytest.raises(ArgumentError, match="slots.*counts|counts.*slots"):
        decode(slots[:-16], counts, kernel="k", grid=GRID, block=BLOCK, capacity=4)


def test_block_and_warp_come_from_the_region_in_three_dimensions():
    grid, block = (3, 2, 2), (8, 4, 3)          # 96 threads: 3 warps per block
    slots, counts = buffers(grid, block, 2, {((2, 1, 1), 2): [(T0, "epilogue", "mark", 9)]})
    t = decode(slots, counts, kernel="k", grid=grid, block=block, capacity=2,
               names={name_id("epilogue"): "epilogue"})
    (e,) = t.events
    assert (e.block, e.warp, e.sm) == ((2, 1, 1), 2, 9)
    assert t.track(e) == (2 + 3 * (1 + 2 * 1)) * 3 + 2


# --- summary --------------------------------------------------------------------------------

def test_summary_figures_per_range_name_and_role():
    durations = [100, 200, 300, 400, 1000]
    warps = {((b, 0, 0), w): [] for b in range(2) for w in range(2)}
    keys = list(warps)
    for i, d in enumerate(durations):
        warps[keys[i % 4]] += [(T0 + 2000 * i, "consumer:math", "begin", 0),
                               (T0 + 2000 * i + d, "consumer:math", "end", 0)]
    warps[keys[0]] += [(T0 + 9000, "epilogue", "mark", 0), (T0 + 9100, "epilogue", "mark", 0)]
    t = _decode(warps)
    math_row, mark_row = t.summary()
    assert math_row == {"name": "consumer:math", "kind": "range", "role": "consumer", "count": 5,
                        "open": 0, "median_ns": 300, "p90_ns": pytest.approx(760),
                        "total_ns": 2000, "share": pytest.approx(2000 / (9100 * 4))}
    assert mark_row["kind"] == "mark" and mark_row["count"] == 2 and mark_row["role"] == ""
    assert mark_row["median_ns"] is None and mark_row["share"] is None


def test_roles_are_the_part_before_the_first_slash_or_colon():
    t = _decode({((0, 0, 0), 0): [(T0, n, "mark", 0) for n in NAMES]})
    assert [r["role"] for r in t.summary()] == ["producer", "consumer", "consumer", ""]


# --- Perfetto -------------------------------------------------------------------------------

PH = {"X", "i", "M"}


def check_chrome_trace(doc: dict) -> None:
    """The Chrome trace event format (JSON object form) as Perfetto reads it: required keys and
    their types per phase, and timestamps that never go back within a track."""
    assert isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    last: dict = {}
    for ev in doc["traceEvents"]:
        assert ev["ph"] in PH, ev
        assert isinstance(ev["name"], str) and ev["name"]
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        if ev["ph"] == "M":
            assert ev["name"] in ("process_name", "thread_name", "process_sort_index",
                                  "thread_sort_index")
            assert isinstance(ev["args"], dict)
            continue
        assert isinstance(ev["ts"], (int, float)) and math.isfinite(ev["ts"]) and ev["ts"] >= 0
        assert isinstance(ev.get("cat", ""), str) and isinstance(ev.get("args", {}), dict)
        if ev["ph"] == "X":
            assert isinstance(ev["dur"], (int, float)) and ev["dur"] >= 0
        if ev["ph"] == "i":
            assert ev.get("s", "t") in ("g", "p", "t")
        track = (ev["pid"], ev["tid"])
        assert ev["ts"] >= last.get(track, 0), f"ts goes back on track {track}"
        last[track] = ev["ts"]


def test_perfetto_json_is_a_valid_chrome_trace_with_sm_as_pid_and_warp_as_tid(tmp_path):
    t = _decode({
        ((0, 0, 0), 0): [(T0 + 100, "producer/load", "begin", 3), (T0 + 400, "producer/load", "end", 3),
                         (T0 + 450, "epilogue", "mark", 3)],
        ((0, 0, 0), 1): [(T0 + 50, "consumer:wait", "begin", 3), (T0 + 90, "consumer:wait", "end", 3),
                         (T0 + 95, "consumer:math", "begin", 3)],          # left open
        ((1, 0, 0), 1): [(T0, "consumer:wait", "begin", 7), (T0 + 1500, "consumer:wait", "end", 7)],
    })
    path = t.to_perfetto(tmp_path / "k.json")
    assert path == str(tmp_path / "k.json")
    doc = json.loads((tmp_path / "k.json").read_text())
    check_chrome_trace(doc)
    real = [e for e in doc["traceEvents"] if e["ph"] != "M"]
    assert len(real) == len(t.events) == 5
    load = next(e for e in real if e["name"] == "producer/load")
    assert (load["ph"], load["pid"], load["tid"], load["ts"], load["dur"]) == ("X", 3, 0, 0.1, 0.3)
    assert load["cat"] == "producer" and load["args"]["block"] == [0, 0, 0]
    late = next(e for e in real if e["pid"] == 7)
    assert late["tid"] == 1 * 2 + 1 and late["dur"] == 1.5
    assert next(e for e in real if e["name"] == "consumer:math")["args"]["open"] is True
    mark = next(e for e in real if e["ph"] == "i")
    assert (mark["name"], mark["s"], mark["ts"]) == ("epilogue", "t", 0.45)
    names = {(e["pid"], e["args"]["name"]) for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert names == {(3, "SM 3"), (7, "SM 7")}
    assert doc["otherData"]["argv"] == "nvrtc -DCUDA_MAGIC_TIMELINE"


def test_a_path_that_cannot_be_written_is_said_naming_it(tmp_path):
    with pytest.raises(OSError, match=r"to_perfetto: cannot write '.*missing/k\.json': No such file"):
        _small().to_perfetto(tmp_path / "missing" / "k.json")
    with pytest.raises(ArgumentError, match=r"to_perfetto: path=3: a file path"):
        _small().to_perfetto(3)


def test_the_checker_refuses_what_perfetto_would():
    good = {"name": "a", "ph": "X", "ts": 5.0, "dur": 1.0, "pid": 0, "tid": 0}
    for bad in ({**good, "ph": "B?"}, {**good, "ts": "5"}, {**good, "dur": -1},
                {**good, "pid": "0"}):
        with pytest.raises((AssertionError, KeyError)):
            check_chrome_trace({"traceEvents": [bad]})
    with pytest.raises(AssertionError, match="goes back"):
        check_chrome_trace({"traceEvents": [good, {**good, "ts": 4.0}]})


# --- pandas ---------------------------------------------------------------------------------

def _small() -> Timeline:
    return _decode({((0, 0, 0), 1): [(T0, "consumer:wait", "begin", 2),
                                     (T0 + 30, "consumer:wait", "end", 2),
                                     (T0 + 40, "epilogue", "mark", 2)]})


def test_to_pandas_one_row_per_event():
    pandas = pytest.importorskip("pandas")
    df = _small().to_pandas()
    assert isinstance(df, pandas.DataFrame) and len(df) == 2
    assert list(df["name"]) == ["consumer:wait", "epilogue"]
    assert list(df["duration_ns"]) == [30, 0] and list(df["warp"]) == [1, 1]
    assert list(df["role"]) == ["consumer", ""]


def test_to_pandas_without_pandas_says_what_to_install(monkeypatch):
    real = builtins.__import__

    def no_pandas(name, *args, **kw):
        if name == "pandas":
            raise ImportError("No module named 'pandas'")
        return real(name, *args, **kw)
    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(ImportError, match=r"needs pandas \(pip install pandas\).*to_perfetto"):
        _small().to_pandas()


def test_repr_is_one_line():
    assert repr(_small()) == ("<Timeline k grid=(2, 1, 1) block=(64, 1, 1): 2 events from 3 "
                              "recorded, 40 ns>")
