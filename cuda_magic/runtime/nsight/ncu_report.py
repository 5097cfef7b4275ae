"""What Nsight Compute said about one launch, as data: :class:`Profile`.

Pure parsing, no CUDA and no tools: :func:`parse_profile` reads ``ncu --import REP --csv
--page raw`` (one row per profiled launch: metric names, then units, then values), the
``--page source --print-source sass`` table (metrics per SASS instruction, by address) and
``--page details`` (ncu's rule advice).  :func:`assign_lines` puts the instructions on cell
lines through the cubin's line table (``-lineinfo``), or through an inspection build with
``-lineinfo`` appended whose machine code is byte for byte the running binary's (as
:mod:`cuda_magic.inspect.lines` does).  Running ncu is in :mod:`.tools`; the views are in
:mod:`cuda_magic.display.reports`.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

__all__ = ["Profile", "Metric", "Instruction", "Advice", "parse_profile", "parse_raw",
           "parse_source", "parse_details", "assign_lines", "number", "scaled", "METRICS",
           "LINE_METRICS"]


# Read by name for the Profile's fields; always collected.
METRICS = ("gpu__time_duration.sum",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed",
           "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
           "sm__warps_active.avg.pct_of_peak_sustained_active",
           "sm__maximum_warps_per_active_cycle_pct",
           "l1tex__throughput.avg.pct_of_peak_sustained_active",
           "lts__throughput.avg.pct_of_peak_sustained_elapsed",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed",
           "dram__bytes.sum.per_second",
           "smsp__cycles_active.avg",
           "sm__cycles_elapsed.avg.per_second",
           "launch__registers_per_thread")

# Columns of ncu's source page summed per line, under these keys (and every "stall_*" column).
LINE_METRICS = {
    "Warp Stall Sampling (All Samples)": "samples",
    "Warp Stall Sampling (Not-issued Samples)": "samples_not_issued",
    "Instructions Executed": "instructions",
    "Thread Instructions Executed": "thread_instructions",
    "L2 Theoretical Sectors Global": "l2_sectors",
    "L2 Theoretical Sectors Global Ideal": "l2_sectors_ideal",
    "L2 Theoretical Sectors Global Excessive": "l2_sectors_excessive",
    "L1 Conflicts Shared N-Way": "shared_conflicts",
}

_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")


# ------------------------------------------------------------------------- numbers and units

@dataclass(frozen=True)
class Metric:
    """One ncu metric as the report gives it: the value (a float, or text) and its unit."""

    value: float | str | None
    unit: str = ""

    def __float__(self) -> float:
        return float(self.value) if isinstance(self.value, (int, float)) else float("nan")


def number(text: str) -> float | str | None:
    """``"65,536"`` -> 65536.0, ``"219.552000"`` -> 219.552; text that is no number stays text;
    ``""``, ``"-"``, ``"n/a"`` -> None."""
    t = (text or "").strip()
    if t in ("", "-", "n/a", "N/A", "no data"):
        return None
    try:
        return float(t.replace(",", ""))
    except ValueError:
        return t


_PREFIX = {"n": 1e-9, "u": 1e-6, "µ": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "K": 1e3, "M": 1e6,
           "G": 1e9, "T": 1e12, "P": 1e15}


def scaled(m: Metric | None, to: str) -> float | None:
    """The value in ``to`` units: ``"us"`` (from ns/us/ms/s or nsecond...), ``"GB/s"`` (from
    byte/s..Tbyte/s), ``"GHz"`` (from hz..Ghz, cycle/nsecond...)."""
    if m is None or not isinstance(m.value, float):
        return None
    unit = m.unit.strip()
    if to == "us":
        mm = re.fullmatch(r"([numµ]?)(?:s|sec|second|seconds)", unit)
        return m.value * _PREFIX[mm.group(1)] / 1e-6 if mm else None
    if to == "GB/s":
        mm = re.fullmatch(r"([kKMGTP]?)(?:byte|B)/(?:s|sec|second)", unit)
        return m.value * _PREFIX[mm.group(1)] / 1e9 if mm else None
    if to == "GHz":
        mm = re.fullmatch(r"([kKMGT]?)(?:hz|Hz)", unit)
        if mm:
            return m.value * _PREFIX[mm.group(1)] / 1e9
        mm = re.fullmatch(r"cycle/([numµ]?)(?:s|sec|second)", unit)
        return m.value / _PREFIX[mm.group(1)] / 1e9 if mm else None
    raise ValueError(f"unknown unit {to!r}")


# ------------------------------------------------------------------------- ncu's pages

def _csv_rows(text: str) -> list[list[str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]   # drop ==PROF==/==WARNING==
    return list(csv.reader(io.StringIO("\n".join(lines))))


def parse_raw(text: str) -> list[dict[str, Metric]]:
    """``ncu --import REP --csv --page raw``: one ``{metric: Metric}`` per profiled launch (the
    launch's identification columns, "Kernel Name", "Grid Size"..., are in it too)."""
    rows = _csv_rows(text)
    if len(rows) < 3:
        return []
    head, units = rows[0], rows[1]
    out = []
    for values in rows[2:]:
        out.append({h: Metric(number(v) if u or _numeric(v) else v.strip(), u)
                    for h, u, v in zip(head, units, values)})
    return out


def _numeric(v: str) -> bool:
    return re.fullmatch(r"\s*-?[\d,]+(\.\d+)?\s*", v or "") is not None


@dataclass
class Instruction:
    """One SASS instruction of the source page: offset in the kernel's code, text, metrics."""

    offset: int
    sass: str
    metrics: dict
    file: str | None = None
    line: int | None = None


def parse_source(text: str) -> dict[str, list[Instruction]]:
    """``ncu --import REP --csv --page source --print-source sass``: per kernel, its instructions
    (offsets from the kernel's first instruction) with their metrics (LINE_METRICS keys and
    the ``stall_*`` columns; numbers only)."""
    out: dict[str, list[Instruction]] = {}
    name, head, base = None, None, None
    for row in _csv_rows(text):
        if len(row) >= 2 and row[0] == "Kernel Name":
            name, head, base = row[1], None, None
            out.setdefault(name, [])
            continue
        if row and row[0] == "Address":
            head = row
            continue
        if name is None or head is None or not row or not row[0].startswith("0x"):
            continue
        address = int(row[0], 16)
        base = address if base is None else base
        metrics = {}
        for h, v in zip(head[2:], row[2:]):
            key = LINE_METRICS.get(h) or (h if h.startswith("stall_") and "(" not in h else None)
            val = number(v)
            if key and isinstance(val, float):
                metrics[key] = val
        out[name].append(Instruction(address - base, row[1].strip(), metrics))
    return out


@dataclass(frozen=True)
class Advice:
    """One of ncu's rules that fired: its name, type (OPT, WRN, INF), text and estimated speedup."""

    rule: str
    type: str
    text: str
    speedup: float | None = None


def parse_details(text: str) -> list[Advice]:
    """``ncu --import REP --csv --page details``: the rules that fired (OPT and WRN first)."""
    rows = _csv_rows(text)
    if not rows:
        return []
    head = rows[0]
    idx = {h: i for i, h in enumerate(head)}
    need = ("Rule Name", "Rule Type", "Rule Description")
    if not all(h in idx for h in need):
        return []
    out, seen = [], set()
    for r in rows[1:]:
        if len(r) <= idx["Rule Description"] or not r[idx["Rule Name"]]:
            continue
        sp = idx.get("Estimated Speedup")
        speed = number(r[sp]) if sp is not None and sp < len(r) else None
        a = Advice(r[idx["Rule Name"]], r[idx["Rule Type"]], r[idx["Rule Description"]].strip(),
                   speed if isinstance(speed, float) else None)
        if (a.rule, a.text) not in seen:
            seen.add((a.rule, a.text))
            out.append(a)
    order = {"WRN": 0, "OPT": 1, "INF": 2}
    return sorted(out, key=lambda a: (order.get(a.type, 3), -(a.speedup or 0)))


# ------------------------------------------------------------------------- Profile

@dataclass
class Profile:
    """One launch under Nsight Compute.

    ``duration_us`` (``gpu__time_duration.sum``), ``sm_pct`` and ``memory_pct`` (speed of
    light: compute and memory throughput as % of peak), ``occupancy_pct`` (achieved) and
    ``theoretical_occupancy_pct``, ``l1_pct``/``l2_pct``/``dram_pct`` (throughput % of peak),
    ``dram_gbps``, ``sm_ghz`` (the clock it ran at: ncu locks clocks to base by default),
    ``registers``; ``stalls``: (reason, cycles per issued instruction), largest first;
    ``advice``: ncu's rules that fired; ``metrics``: every metric of the report by name
    (``p["dram__bytes.sum"]``); ``lines``: cell line -> summed per-instruction metrics
    (``samples`` = warp stall samples, ``instructions`` executed, ``stall_*``...);
    ``report``: the ``.ncu-rep`` file, for the Nsight Compute GUI.
    """

    kernel: str
    symbol: str
    dims: tuple
    report: str
    metrics: dict = field(repr=False)
    advice: list = field(default_factory=list, repr=False)
    instructions: list = field(default_factory=list, repr=False)
    lines: dict = field(default_factory=dict, repr=False)
    other_lines: dict = field(default_factory=dict, repr=False)   # (file, line) -> metrics
    line_note: str = ""
    source: str = field(default="", repr=False)
    notes: list = field(default_factory=list)
    set: str = "default"
    asked: tuple = ()              # the metrics the caller asked for
    clock_control: str = "base"
    tool_version: str = ""         # "Nsight Compute 2025.3.1.0"

    def __getitem__(self, name: str):
        m = self.metrics.get(name)
        if m is None:
            raise KeyError(f"{name!r} is not in this report (ask for it: metrics=[{name!r}])")
        return m.value

    def _m(self, name: str) -> float | None:
        m = self.metrics.get(name)
        return m.value if m is not None and isinstance(m.value, float) else None

    @property
    def duration_us(self) -> float | None:
        return scaled(self.metrics.get("gpu__time_duration.sum"), "us")

    @property
    def duration_ms(self) -> float | None:
        d = self.duration_us
        return None if d is None else d / 1e3

    sm_pct = property(lambda self: self._m("sm__throughput.avg.pct_of_peak_sustained_elapsed"))
    memory_pct = property(lambda self: self._m(
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"))
    occupancy_pct = property(lambda self: self._m("sm__warps_active.avg.pct_of_peak_sustained_active"))
    theoretical_occupancy_pct = property(lambda self: self._m("sm__maximum_warps_per_active_cycle_pct"))
    l1_pct = property(lambda self: self._m("l1tex__throughput.avg.pct_of_peak_sustained_active"))
    l2_pct = property(lambda self: self._m("lts__throughput.avg.pct_of_peak_sustained_elapsed"))
    dram_pct = property(lambda self: self._m("dram__throughput.avg.pct_of_peak_sustained_elapsed"))
    registers = property(lambda self: self._m("launch__registers_per_thread"))

    @property
    def dram_gbps(self) -> float | None:
        return scaled(self.metrics.get("dram__bytes.sum.per_second"), "GB/s")

    @property
    def sm_ghz(self) -> float | None:
        return scaled(self.metrics.get("sm__cycles_elapsed.avg.per_second"), "GHz")

    @property
    def cycles_per_issue(self) -> float | None:
        """Warp cycles per issued instruction (what the stall reasons add up to)."""
        return self._m("smsp__average_warps_active_per_inst_executed.ratio")

    @property
    def stalls(self) -> list[tuple[str, float]]:
        """(reason, warp cycles per issued instruction) from WarpStateStats, largest first;
        ``selected`` (issuing) is not a stall and is left out."""
        out = []
        for name, m in self.metrics.items():
            s = _STALL.match(name)
            if s and s.group(1) != "selected" and isinstance(m.value, float) and m.value > 0:
                out.append((s.group(1), m.value))
        return sorted(out, key=lambda t: -t[1])

    def hottest(self, n: int = 5, by: str = "samples") -> list[tuple[int, dict]]:
        """The ``n`` cell lines with the most ``by`` (warp stall samples by default)."""
        ranked = [(ln, m) for ln, m in self.lines.items() if m.get(by)]
        return sorted(ranked, key=lambda t: (-t[1][by], t[0]))[:n]

    def __repr__(self) -> str:
        d = self.duration_us
        return (f"<Profile {self.kernel} {d:.1f} µs, SM {self.sm_pct or 0:.0f}%, memory "
                f"{self.memory_pct or 0:.0f}% of peak; {self.report}>" if d is not None else
                f"<Profile {self.kernel}; {self.report}>")


def parse_profile(raw: str, source: str = "", details: str = "", *, kernel: str, symbol: str,
                  report: str = "", dims: tuple = (), notes=(), set: str = "default",
                  metrics: tuple = (), clock_control: str = "base") -> Profile:
    """A :class:`Profile` from ncu's raw page (and its source and details pages)."""
    launches = parse_raw(raw)
    if not launches:
        raise ValueError("ncu's raw page holds no profiled launch")
    found = launches[0]
    instructions = parse_source(source) if source else {}
    instrs = instructions.get(symbol) or instructions.get(kernel) or \
        (next(iter(instructions.values())) if len(instructions) == 1 else [])
    p = Profile(kernel, symbol, tuple(dims), report, found, parse_details(details) if details else [],
                instrs, notes=list(notes), set=set, asked=tuple(metrics),
                clock_control=clock_control)
    missing = [m for m in metrics if m not in found]
    if missing:
        p.notes.append(f"not in the report: {', '.join(missing)} (check the names: ncu "
                       f"--query-metrics)")
    return p


def assign_lines(p: Profile, rows, source: str = "", note: str = "") -> Profile:
    """Put each instruction on its line (``rows``: the kernel's line table, ``(offset, file,
    line)``) and sum the metrics per cell line into ``p.lines``."""
    from ...compile.binary import line_of
    p.source, p.line_note = source, note
    if rows is None:
        return p
    lines: dict = {}
    other: dict = {}
    for ins in p.instructions:
        at = line_of(rows, ins.offset)
        if at is None:
            continue
        ins.file, ins.line = at
        target = lines.setdefault(ins.line, {}) if ins.file == "cell.cu" else \
            other.setdefault(at, {})
        target["sass"] = target.get("sass", 0) + 1
        for k, v in ins.metrics.items():
            target[k] = target.get(k, 0) + v
    total = sum(i.metrics.get("samples", 0) for i in p.instructions)
    for m in list(lines.values()) + list(other.values()):
        if total:
            m["samples_pct"] = 100.0 * m.get("samples", 0) / total
    p.lines = dict(sorted(lines.items()))
    p.other_lines = other
    return p
