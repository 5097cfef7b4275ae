"""``k.bench``'s keywords, checked: :func:`options`, and the protocols and timers it knows.

One job: turn what the user typed into the dict :func:`.bench.measure` takes (and the helper
process is sent), or a :class:`BenchError` naming the keyword that is wrong.
"""

from __future__ import annotations

from ...errors import BenchError, quote
from .peaks import flop_type

__all__ = ["options", "check_rules", "GRAPH_LAUNCHES", "MAX_COUNT", "TIMERS", "PROTOCOLS"]

GRAPH_LAUNCHES = 20        # launches per graph for graph=True
MAX_COUNT = 100_000        # the most repeat, warmup and graph may ask for: a typo's 10**9 timed
                           # launches would hold two billion CUDA events and never end


def _said(value) -> str:
    """``value`` as the messages say it: ``str`` cut to 40 characters, or where ``str`` fails
    (an int past the int->str digit limit) :func:`~cuda_magic.errors.quote`."""
    try:
        return str(value)[:40]
    except Exception:
        return quote(value, 40)


def _count(value, name: str, low: int, what: str, allow_none: bool = False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise BenchError(f"{name}={_said(value)}: {what}")
    if value > MAX_COUNT:
        raise BenchError(f"{name}={_said(value)}: at most {MAX_COUNT:,} ({what})")
    return value


def _amount(value, name: str, what: str):
    if value is None:
        return None
    ok = not isinstance(value, bool) and isinstance(value, (int, float))
    try:
        ok = ok and 0 < float(value) < float("inf")     # an int too large for a float: no
    except OverflowError:
        ok = False
    if not ok:
        raise BenchError(f"{name}={_said(value)}: {what}, a number > 0")
    return value


TIMERS = ("auto", "events", "cupti")
PROTOCOLS = {   # name: what it fixes (docs/measure.md says where each comes from)
    "sol": {"warmup": 10, "repeat": 50, "trials": 3, "flush": True, "flush_bytes": 256 << 20,
            "fresh_inputs": True},
}


def options(repeat=100, warmup=None, flush=True, graph=False, nbytes=None, flops=None,
            dtype="float32", timer="auto", fresh_inputs=False, protocol=None) -> dict:
    """``bench``'s keywords, checked (:class:`BenchError` naming the one that is wrong) and
    normalised: ``graph`` becomes the number of launches per graph (0: none); ``protocol``
    fixes the keywords it names (:data:`PROTOCOLS`; its ``trials`` and ``flush_bytes`` are
    read by :func:`measure`)."""
    if protocol is not None and protocol not in PROTOCOLS:
        raise BenchError(f"protocol={quote(protocol, 40)}: one of {', '.join(map(repr, PROTOCOLS))} "
                         f"or None")
    if timer not in TIMERS:
        raise BenchError(f"timer={quote(timer, 40)}: 'auto' (CUPTI when cupti-python is installed, "
                         f"else CUDA events), 'events' or 'cupti'")
    if not isinstance(fresh_inputs, bool):
        raise BenchError(f"fresh_inputs={_said(fresh_inputs)}: True (each timed launch reads "
                         f"inputs shifted from the last) or False")
    fixed = PROTOCOLS.get(protocol, {})
    if fixed:
        if graph not in (False, None, 0):
            raise BenchError(f"protocol={protocol!r} times launches one by one: leave graph out")
        repeat, warmup, flush = fixed["repeat"], fixed["warmup"], fixed["flush"]
        fresh_inputs = fixed["fresh_inputs"]
    if fresh_inputs and graph not in (False, None, 0):
        raise BenchError("fresh_inputs=True with graph=: a CUDA graph replays the same "
                         "arguments; leave one out")
    out = {"repeat": _count(repeat, "repeat", 1, "the number of timed launches, an int >= 1"),
           "warmup": _count(warmup, "warmup", 0, "launches before timing, an int >= 0 (None: "
                            "about 25 ms of launches)", allow_none=True)}
    if not isinstance(flush, bool):
        raise BenchError(f"flush={_said(flush)}: True (write a buffer of twice the L2 before "
                         f"each timed launch) or False")
    if graph is True:
        graph = GRAPH_LAUNCHES
    elif graph is False or graph is None or (type(graph) is int and graph == 0):
        graph = 0                  # 0 too: what this returns, so options(**options(...)) holds
    else:
        graph = _count(graph, "graph", 1, "True, False or the number of launches per CUDA graph")
    out.update(flush=flush, graph=graph,
               nbytes=_amount(nbytes, "nbytes", "bytes one launch reads and writes"),
               flops=_amount(flops, "flops", "floating-point operations one launch does"),
               dtype=flop_type(dtype), timer=timer, fresh_inputs=fresh_inputs,
               protocol=protocol)
    return out


_CHECK_RULES = ("reference", "ulp", "rtol", "atol", "reduction", "outputs", "inplace", "tile")


def check_rules(check) -> dict | None:
    """``bench``'s ``check=`` as ``verify``'s keywords (None: no check): a reference (a
    function, a Kernel, the expected array(s): a tuple in output order or a dict by name), or
    a dict of ``reference`` and verify's rules."""
    if check is None:
        return None
    if isinstance(check, dict) and "reference" in check:
        unknown = [k for k in check if k not in _CHECK_RULES]
        if unknown:
            raise BenchError(f"check: {', '.join(map(repr, unknown))} is not one of "
                             f"{', '.join(_CHECK_RULES)}")
        rules = dict(check)
    else:
        rules = {"reference": check}
    ref = rules["reference"]
    if not callable(ref):               # the expected arrays: a reference that returns them
        if isinstance(ref, (str, bytes, int, float)) or ref is None:
            raise BenchError(f"check={ref!r}: a reference function, a kernel, or the expected "
                             f"output array(s)")
        rules["reference"] = lambda *args: ref
    return rules
