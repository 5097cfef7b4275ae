"""Kernel durations from CUPTI's activity records: the GPU's own start and end of each kernel.

``with Recorder() as rec: ...launches...; cuCtxSynchronize`` collects a :class:`KernelRecord`
per kernel that ran in the block (``rec.records``); :func:`durations_ms` picks one kernel's.
NVIDIA's ``cupti-python`` (``pip install 'cuda-magic[cupti]'``) does the recording; works with
13.0 and later.  :func:`decode` reads the records as CUPTI delivers them or as saved with
:func:`record_to_dict`.  Importing this module imports neither ``cupti`` nor CUDA.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ...errors import CuptiError

__all__ = ["KernelRecord", "Recorder", "CuptiError", "missing", "decode", "durations_ms",
           "record_to_dict"]

# CUpti_ActivityKind values of kernel records (cupti_activity.h; the same in 13.0 and 13.4)
KERNEL, CONCURRENT_KERNEL = 3, 10
_KERNEL_KINDS = {KERNEL, CONCURRENT_KERNEL, "KERNEL", "CONCURRENT_KERNEL"}
_BUFFER_BYTES = 8 << 20        # each activity buffer CUPTI asks for (as NVIDIA's samples)


def missing() -> str | None:
    """None when cupti-python imports; else why not, in one line."""
    try:
        from cupti import cupti  # noqa: F401
    except ModuleNotFoundError as e:
        if e.name == "cupti":
            return "cupti-python is not installed (pip install 'cuda-magic[cupti]')"
        return f"cupti-python does not import: {_line(e)}"
    except Exception as e:           # a missing libcupti.so, a wrong NumPy, ...
        return f"cupti-python does not import: {_line(e)}"
    return None


@dataclass(frozen=True)
class KernelRecord:
    """One kernel's run as CUPTI recorded it; times in ns on CUPTI's clock."""

    name: str                  # as the driver sees it: mangled, or the extern "C" name
    start_ns: int
    end_ns: int
    correlation_id: int        # the launching API call's (one per cuGraphLaunch for a graph)
    graph_id: int = 0          # 0: not launched from a CUDA graph

    @property
    def ms(self) -> float:
        """Duration in milliseconds."""
        return (self.end_ns - self.start_ns) / 1e6


def _get(raw, field: str, default=None):
    if isinstance(raw, Mapping):
        return raw.get(field, default)
    return getattr(raw, field, default)


def _kind(raw):
    kind = _get(raw, "kind")
    return kind if isinstance(kind, str) else int(kind) if kind is not None else None


def _decode_one(raw) -> KernelRecord | None:
    if _kind(raw) not in _KERNEL_KINDS:
        return None
    start, end = int(_get(raw, "start", 0)), int(_get(raw, "end", 0))
    if start <= 0 or end < start:      # not finished when flushed, or no timestamps
        return None
    return KernelRecord(str(_get(raw, "name", "")), start, end,
                        int(_get(raw, "correlation_id", 0)), int(_get(raw, "graph_id", 0) or 0))


def decode(raw) -> list[KernelRecord]:
    """Kernel records, sorted by start, from CUPTI activity records (objects) or dicts of the
    same fields (a list, or ``{"records": [...]}`` as saved).  Records of other kinds and kernels
    without both timestamps (still running when flushed) are left out."""
    if isinstance(raw, Mapping):
        raw = raw.get("records", ())
    out = [r for r in map(_decode_one, raw) if r is not None]
    return sorted(out, key=lambda r: (r.start_ns, r.correlation_id))


def _matches(found: str, name: str) -> bool:
    return found == name or found.split("(", 1)[0] == name


def durations_ms(records: Iterable[KernelRecord], name: str) -> list[float]:
    """Durations (ms) of the records named ``name``, in launch order (correlation id, start).
    ``name`` is matched exactly, or to a demangled name's part before ``(``."""
    mine = [r for r in records if _matches(r.name, name)]
    return [r.ms for r in sorted(mine, key=lambda r: (r.correlation_id, r.start_ns))]


def record_to_dict(rec) -> dict:
    """A record as JSON-able fields: a KernelRecord's in CUPTI's names (``decode`` reads them
    back); a CUPTI record's every number and string (not its buffer address, ``ptr``)."""
    if isinstance(rec, KernelRecord):
        return {"kind": CONCURRENT_KERNEL, "name": rec.name, "start": rec.start_ns,
                "end": rec.end_ns, "correlation_id": rec.correlation_id, "graph_id": rec.graph_id}
    if isinstance(rec, Mapping):
        return dict(rec)
    out = {}
    for field in dir(rec):
        if field.startswith("_") or field == "ptr":
            continue
        try:
            value = getattr(rec, field)
        except Exception:
            continue
        if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
            out[field] = value
        elif isinstance(value, int):
            out[field] = int(value)        # an IntEnum as its number
    return out


# ---- recording ----------------------------------------------------------------------------
#
# CUPTI takes one pair of buffer callbacks per process: they are registered at the first
# Recorder and hand records to whichever Recorder is active.  Records are copied inside the
# callback: the objects CUPTI hands over read a buffer freed when it returns.

_lock = threading.Lock()
_state: dict[str, Any] = {"registered": False, "active": None}


def _buffer_requested():
    return _BUFFER_BYTES, 0            # 0: as many records as fit


def _buffer_completed(activities) -> None:
    rec = _state["active"]
    if rec is not None:
        rec._take(activities)


def _line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _call(name: str, *args):
    """cupti.<name>(*args); its error as a CuptiError naming it."""
    from cupti import cupti
    try:
        return getattr(cupti, name)(*args)
    except Exception as e:
        raise CuptiError(f"CUPTI {name} failed: {_line(e)}") from e


class Recorder:
    """``with Recorder() as rec:`` records every kernel that runs in the block (any context,
    any stream); ``rec.records`` after it.  Synchronize before the block ends: a kernel still
    running then is left out.  One Recorder at a time per process (another entered meanwhile
    raises :class:`CuptiError`); one after another is fine.  ``keep_raw=True`` also keeps each
    kernel record's every field (:func:`record_to_dict`) in ``rec.raw``.

    Raises :class:`CuptiError` when CUPTI cannot record (cupti-python missing, another
    profiler such as Nsight Compute or compute-sanitizer holds CUPTI, a driver too old)."""

    def __init__(self, keep_raw: bool = False):
        self.keep_raw = keep_raw
        self.records: list[KernelRecord] = []
        self.raw: list[dict] = []
        self._found: list[KernelRecord] = []
        self._error: BaseException | None = None

    def _take(self, activities) -> None:
        try:
            for a in activities:
                r = _decode_one(a)
                if r is not None:
                    self._found.append(r)
                if self.keep_raw and _kind(a) in _KERNEL_KINDS:
                    self.raw.append(record_to_dict(a))
        except Exception as e:              # raised at the block's end, not inside CUPTI
            self._error = e

    def __enter__(self) -> "Recorder":
        why = missing()
        if why is not None:
            raise CuptiError(why)
        with _lock:
            if _state["active"] is not None:
                raise CuptiError("another cupti Recorder is recording in this process: "
                                 "CUPTI hands records to one at a time")
            _state["active"] = self
        try:
            if not _state["registered"]:
                _call("activity_register_callbacks", _buffer_requested, _buffer_completed)
                _state["registered"] = True
            _call("activity_enable", CONCURRENT_KERNEL)
        except BaseException:
            _state["active"] = None
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        # Collection stops first, then every buffer is delivered, incomplete ones too (flag 1,
        # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), so none is left for the next Recorder.
        failed = None
        try:
            for name, arg in (("activity_disable", CONCURRENT_KERNEL), ("activity_flush_all", 1)):
                try:
                    _call(name, arg)
                except CuptiError as e:
                    failed = failed or e
        finally:
            _state["active"] = None
        self.records = sorted(self._found, key=lambda r: (r.start_ns, r.correlation_id))
        if exc_type is None:               # the block's own error goes first
            if failed is not None:
                raise failed
            if self._error is not None:
                raise CuptiError(f"reading CUPTI's records failed: {_line(self._error)}") \
                    from self._error
