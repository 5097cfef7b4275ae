"""Which timer times a bench: CUDA events, or CUPTI's record of each kernel's own start and
end (:mod:`.cupti`); the recorder started and stopped around the timed launches, and events
standing in, with a note, wherever CUPTI cannot record.
"""

from __future__ import annotations

from typing import Any

from ...errors import BenchError

__all__ = ["choose", "start", "stop", "abandon"]


def choose(timer: str) -> tuple[str, Any, str]:
    """(the timer asked, a :class:`.cupti.Recorder` or None, a note): "auto" is CUPTI when
    cupti-python imports; "cupti" without it is a BenchError saying how to get it."""
    if timer == "events":
        return timer, None, ""
    from . import cupti
    why = cupti.missing()
    if why is not None:
        if timer == "cupti":
            raise BenchError(f"timer='cupti': {why}")
        return "events", None, ""
    return "cupti", cupti.Recorder(), ""


def start(recorder) -> tuple[Any, str]:
    """``recorder`` started, or (None, why not: CUDA events time it instead)."""
    from .cupti import CuptiError
    try:
        recorder.__enter__()
    except CuptiError as exc:
        return None, f"CUDA events timed it: CUPTI could not record ({exc})"
    return recorder, ""


def stop(recorder, kernel, expected: int) -> tuple[tuple | None, str]:
    """(each timed launch's duration from CUPTI, in launch order, "") or (None, why the event
    times stand): CUPTI failed, or did not give one record per timed launch."""
    from . import cupti
    try:
        recorder.__exit__(None, None, None)
    except cupti.CuptiError as exc:
        return None, f"CUDA events timed it: CUPTI could not record ({exc})"
    ms = cupti.durations_ms(recorder.records, kernel.symbol or kernel.name)
    if len(ms) != expected:
        return None, (f"CUDA events timed it: CUPTI gave {len(ms)} records of {kernel.name} "
                      f"for {expected} timed launches")
    return tuple(ms), ""


def abandon(recorder) -> None:
    """Stop a recorder whose timing failed (its records are not wanted)."""
    try:
        recorder.__exit__(None, None, None)
    except Exception:
        pass
