"""A timeline's data: :class:`Event`, :class:`Timeline`, and :func:`decode`, which reads the
buffers ``<cuda_magic/timeline.h>`` writes.

The buffer (see the header's comment): warp ``w`` of block ``b`` (linear, x fastest) owns
region ``r = b * warps_per_block + w``: ``capacity`` slots of 16 bytes (u64 ``%globaltimer``
ns, u32 name id, u32 ``kind | lane << 8 | smid << 16``; kind 0 begin, 1 end, 2 mark) and one
u32 count of the events the warp attempted.  Slots past the count (or past the capacity)
hold nothing.  A warp's events are matched in the order it recorded them: an END closes the
latest open BEGIN of the same name (nested ranges of one name pair inside out); a BEGIN
left open is an open range reaching the warp's last recorded event; an END with no BEGIN
is counted in the notes.  Name ids are 32-bit FNV-1a of the literal's bytes
(:func:`name_id`); an id the source does not explain is named ``#1a2b3c4d``.

Nothing here imports NumPy until :func:`decode` runs.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import ClassVar

from ....errors import ArgumentError, quote

__all__ = ["Event", "Timeline", "decode", "name_id", "unknown_name", "KINDS", "SLOT_BYTES",
           "RECORDER", "slot_dtype"]

KINDS = ("begin", "end", "mark")
SLOT_BYTES = 16
RECORDER = "the lowest active lane of each warp"


def name_id(name: str) -> int:
    """32-bit FNV-1a of ``name``'s UTF-8 bytes: the id the header computes for the literal."""
    h = 2166136261
    for byte in name.encode("utf-8"):
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h


def unknown_name(ident: int) -> str:
    """How an id that no literal of the source hashes to is named: ``#1a2b3c4d``."""
    return f"#{ident:08x}"


def slot_dtype():
    """The NumPy dtype of one slot (little-endian, 16 bytes)."""
    import numpy as np
    return np.dtype([("time", "<u8"), ("name", "<u4"), ("meta", "<u4")])


def _role(name: str) -> str:
    """The part of a name before its first '/' or ':' ("producer/load" -> "producer"), or ""."""
    cut = [i for i in (name.find("/"), name.find(":")) if i > 0]
    return name[:min(cut)] if cut else ""


def _percentile(values: list[int], q: float) -> float:
    """The ``q``-th percentile of sorted ``values``, interpolated linearly (NumPy's default)."""
    pos = (len(values) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


@dataclass(frozen=True)
class Event:
    """One range or mark of one warp; times in ns since the timeline's origin."""

    name: str                       # the literal given to CM_RANGE_BEGIN/END or CM_MARK
    kind: str                       # "range" or "mark"
    block: tuple[int, int, int]     # blockIdx
    warp: int                       # warp index inside the block (linear thread index // 32)
    sm: int                         # %smid when it was recorded (a range: at its BEGIN)
    start: int                      # ns since the origin (the launch's earliest event)
    end: int                        # ns; == start for a mark; an open range: the warp's last event
    open: bool = False              # a range whose END never came (kernel ended, or buffer full)

    @property
    def duration(self) -> int:
        return self.end - self.start

    @property
    def role(self) -> str:
        return _role(self.name)


@dataclass(frozen=True)
class Timeline:
    """What ``k.timeline[grid, block](*args)`` recorded: events per warp, in ns, and how much was
    lost.  ``summary()`` per range name, ``to_perfetto(path)`` for Perfetto, ``to_pandas()``."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    events: tuple[Event, ...]       # sorted by (start, sm, block, warp)
    capacity: int                   # event slots per warp
    recorded: int                   # events written
    lost: int                       # events dropped because a warp's slots were full
    resolution_ns: int | None       # %globaltimer's tick on this GPU (None: unknown)
    duration: int                   # ns from the origin to the last event
    argv: tuple[str, ...]           # the instrumented build's exact argv
    sm_count: int | None = None     # the GPU's SMs (None: unknown)
    recorder: str = RECORDER        # who records
    notes: tuple[str, ...] = ()
    Event: ClassVar[type[Event]] = Event    # its records' type (a Timeline made by hand)

    @property
    def warps_per_block(self) -> int:
        return (self.block[0] * self.block[1] * self.block[2] + 31) // 32

    def track(self, event: Event) -> int:
        """The warp's index in the launch: linear block * warps_per_block + warp."""
        x, y, z = event.block
        return (x + self.grid[0] * (y + self.grid[1] * z)) * self.warps_per_block + event.warp

    @property
    def warps(self) -> int:
        """How many warps recorded at least one event."""
        return len({(e.block, e.warp) for e in self.events})

    def names(self) -> list[str]:
        """Range and mark names in first-seen order (the colour order of the views)."""
        return list(dict.fromkeys(e.name for e in self.events))

    def summary(self) -> list[dict]:
        """One row per range name, then per mark name, in :meth:`names` order: ``name``,
        ``kind`` ("range"/"mark"), ``role``, ``count``, ``open`` (ranges never closed),
        ``median_ns``, ``p90_ns``, ``total_ns`` (closed ranges only), ``share``
        (``total_ns / (duration * warps that recorded)``: the part of the warps' time spent
        in it).  Marks: ``count`` only (the figures None)."""
        groups: dict[tuple[str, str], list[Event]] = {}
        for e in self.events:
            groups.setdefault((e.name, e.kind), []).append(e)
        span = self.duration * self.warps
        rows = []
        for kind in ("range", "mark"):
            for name in self.names():
                events = groups.get((name, kind))
                if not events:
                    continue
                closed = sorted(e.duration for e in events if not e.open)
                row = {"name": name, "kind": kind, "role": _role(name), "count": len(events),
                       "open": len(events) - len(closed), "median_ns": None, "p90_ns": None,
                       "total_ns": None, "share": None}
                if kind == "range" and closed:
                    total = sum(closed)
                    row.update(median_ns=_percentile(closed, 50), p90_ns=_percentile(closed, 90),
                               total_ns=total, share=total / span if span else None)
                rows.append(row)
        return rows

    def to_perfetto(self, path) -> str:
        """Write the events as Chrome trace JSON (what Perfetto and chrome://tracing open):
        one "X" event per range, one "i" per mark; pid = SM, tid = the warp's index in the
        launch; ts and dur in microseconds.  Returns the path written."""
        try:
            path = os.fspath(path)
        except TypeError:
            raise ArgumentError(f"to_perfetto: path={quote(path, 80)}: a file path (a str or "
                                f"os.PathLike)") from None
        text = json.dumps(self._trace(), separators=(",", ":"))
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise OSError(exc.errno, f"to_perfetto: cannot write {quote(path, 200)}: "
                                     f"{exc.strerror or exc}") from None
        return path

    def _trace(self) -> dict:
        tracks: dict[tuple[int, int], list[dict]] = {}
        threads: dict[tuple[int, int], str] = {}
        for e in self.events:
            key = (e.sm, self.track(e))
            threads[key] = f"block {e.block} warp {e.warp}"
            item = {"name": e.name, "cat": e.role or e.kind, "ts": e.start / 1000,
                    "pid": e.sm, "tid": key[1],
                    "args": {"block": list(e.block), "warp": e.warp, "sm": e.sm}}
            if e.kind == "range":
                item.update(ph="X", dur=e.duration / 1000)
                item["args"]["open"] = e.open
            else:
                item.update(ph="i", s="t")
            tracks.setdefault(key, []).append(item)
        out = []
        for sm in sorted({k[0] for k in tracks}):
            out.append({"name": "process_name", "ph": "M", "pid": sm, "tid": 0,
                        "args": {"name": f"SM {sm}"}})
            out.append({"name": "process_sort_index", "ph": "M", "pid": sm, "tid": 0,
                        "args": {"sort_index": sm}})
        for key in sorted(tracks):
            out.append({"name": "thread_name", "ph": "M", "pid": key[0], "tid": key[1],
                        "args": {"name": threads[key]}})
            out += sorted(tracks[key], key=lambda i: (i["ts"], -i.get("dur", 0)))
        return {"traceEvents": out, "displayTimeUnit": "ns",
                "otherData": {"kernel": self.kernel, "grid": str(self.grid),
                              "block": str(self.block), "recorder": self.recorder,
                              "recorded": str(self.recorded), "lost": str(self.lost),
                              "resolution_ns": str(self.resolution_ns),
                              "argv": " ".join(self.argv)}}

    def to_pandas(self):
        """A pandas DataFrame, one row per event (ImportError without pandas)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Timeline.to_pandas() needs pandas (pip install pandas); without "
                              "it, .events holds the same rows and .to_perfetto(path) writes "
                              "them for Perfetto") from None
        rows = [{"name": e.name, "kind": e.kind, "role": e.role, "block_x": e.block[0],
                 "block_y": e.block[1], "block_z": e.block[2], "warp": e.warp, "sm": e.sm,
                 "start_ns": e.start, "end_ns": e.end, "duration_ns": e.duration, "open": e.open}
                for e in self.events]
        columns = ["name", "kind", "role", "block_x", "block_y", "block_z", "warp", "sm",
                   "start_ns", "end_ns", "duration_ns", "open"]
        return pandas.DataFrame(rows, columns=columns)

    def __repr__(self) -> str:
        lost = f", {self.lost} lost" if self.lost else ""
        return (f"<Timeline {self.kernel} grid={self.grid} block={self.block}: "
                f"{len(self.events)} events from {self.recorded} recorded{lost}, "
                f"{self.duration:,} ns>")


def decode(slots, counts, *, kernel: str, grid, block, capacity: int, names=None,
           argv=(), resolution_ns: int | None = None, sm_count: int | None = None,
           notes=()) -> Timeline:
    """A :class:`Timeline` from the raw buffers of one launch: ``slots`` (bytes or an array of
    ``regions * capacity`` 16-byte slots) and ``counts`` (one u32 per warp region), laid out
    as the header writes them for this ``grid`` and ``block``.  ``names``: id -> name (the
    literals of the source, :func:`name_id`); others are named ``#1a2b3c4d``."""
    import numpy as np
    grid, block = tuple(grid), tuple(block)
    wpb = (block[0] * block[1] * block[2] + 31) // 32
    regions = grid[0] * grid[1] * grid[2] * wpb
    counts = np.frombuffer(counts, "<u4") if not isinstance(counts, np.ndarray) else counts
    table = np.frombuffer(slots, slot_dtype()) if not isinstance(slots, np.ndarray) or \
        slots.dtype != slot_dtype() else slots
    if counts.size != regions or table.size != regions * capacity:
        raise ArgumentError(f"decode: {table.size} slots and {counts.size} counts do not fit "
                            f"grid={grid}, block={block}: {regions} warps x {capacity} slots "
                            f"(capacity) and {regions} counts")
    counts = counts.astype(np.int64)
    kept = np.minimum(counts, capacity)
    lost = int(np.maximum(counts - capacity, 0).sum())
    mask = np.arange(capacity)[None, :] < kept[:, None]
    region = np.nonzero(mask)[0]
    flat = table.reshape(regions, capacity)[mask]
    names = dict(names or {})
    unknown: set[int] = set()
    origin = int(flat["time"].min()) if flat.size else 0
    events, unmatched = _match(region.tolist(), (flat["time"].astype(np.int64) - origin).tolist(),
                               flat["name"].tolist(), flat["meta"].tolist(), names, unknown,
                               grid, wpb)
    events.sort(key=lambda e: (e.start, e.sm, e.block, e.warp))
    end = int(flat["time"].max()) - origin if flat.size else 0
    notes = list(notes)
    if lost:
        full = int((counts > capacity).sum())
        notes.append(f"{lost:,} events lost: {full:,} warps filled their {capacity} slots "
                     f"(capacity={capacity}; a larger capacity= keeps them)")
    if unmatched:
        notes.append(f"{sum(unmatched.values())} CM_RANGE_END without a BEGIN in the same warp: "
                     + ", ".join(sorted(unmatched)[:5]))
    if unknown:
        notes.append("ids no literal of the source hashes to (a name from a macro?): "
                     + ", ".join(unknown_name(i) for i in sorted(unknown)[:5]))
    if not flat.size:
        notes.append("no events recorded: the kernel did not reach a mark")
    return Timeline(kernel=kernel, grid=grid, block=block, events=tuple(events),
                    capacity=capacity, recorded=int(kept.sum()), lost=lost,
                    resolution_ns=resolution_ns, duration=end, argv=tuple(argv),
                    sm_count=sm_count, notes=tuple(notes))


def _match(region, time, name, meta, names, unknown, grid, wpb):
    """Events of each warp, BEGIN and END paired per name; (events, unmatched END names)."""
    events: list[Event] = []
    unmatched: dict[str, int] = {}
    i, n = 0, len(region)
    gx, gy = grid[0], grid[1]
    while i < n:
        r = region[i]
        j = i
        while j < n and region[j] == r:
            j += 1
        b, w = divmod(r, wpb)
        where = (b % gx, b // gx % gy, b // (gx * gy))
        last = time[j - 1]
        opened: dict[str, list[tuple[int, int]]] = {}
        for k in range(i, j):
            ident, kind, sm = name[k], meta[k] & 0xFF, meta[k] >> 16
            label = names.get(ident)
            if label is None:
                unknown.add(ident)
                label = unknown_name(ident)
            if kind == 0:
                opened.setdefault(label, []).append((time[k], sm))
            elif kind == 1:
                stack = opened.get(label)
                if stack:
                    start, at = stack.pop()
                    events.append(Event(label, "range", where, w, at, start, time[k]))
                else:
                    unmatched[label] = unmatched.get(label, 0) + 1
            else:
                events.append(Event(label, "mark", where, w, sm, time[k], time[k]))
        for label, stack in opened.items():
            for start, at in stack:
                events.append(Event(label, "range", where, w, at, start, max(last, start), True))
        i = j
    return events, unmatched
