"""How a :class:`~cuda_magic.runtime.measure.bench.Timing` and a kernel's History look: text, and HTML
with a small inline SVG plot (no plotting library; styles inline, names escaped); their views,
:class:`TimingView` and :class:`HistoryView`."""

from __future__ import annotations

import time
from html import escape

from .measure import MeasureView

__all__ = ["TimingView", "HistoryView", "ABView", "ab_text", "ab_html", "text", "html", "notes", "wrong", "strip_svg", "history_text",
           "history_html", "history_svg", "duration"]

MONO = "font-family: var(--jp-code-font-family, monospace); font-size: 12px"
CELL = "padding: 1px 12px 1px 0; text-align: left; vertical-align: top; white-space: nowrap"
WARN = "color: #d35400; font-weight: bold"
DIM = "opacity: 0.65"
DOT, BAND, MEDIAN = "#2980b9", "rgba(41,128,185,0.13)", "#c0392b"
KIND_COLOURS = {"regression": "#c0392b", "improvement": "#27ae60", "": "#2980b9"}
MAX_POINTS = 2000          # points a plot draws (evenly spaced when there are more samples)


def duration(ms: float) -> str:
    """4 significant digits in a unit that suits: 12.31 µs, 1.234 ms, 2.500 s."""
    v, unit = (ms * 1e3, "µs") if ms < 1 else (ms, "ms") if ms < 1000 else (ms / 1e3, "s")
    digits = 3 if v < 10 else 2 if v < 100 else 1 if v < 1000 else 0
    return f"{v:.{digits}f} {unit}"


def ci_label(t) -> str:
    """'95% CI' (the interval's coverage is at least that), or its lower coverage."""
    from ..runtime.measure.stats import CI_LEVEL
    return f"{CI_LEVEL:.0%} CI" if t.ci_coverage >= CI_LEVEL else f"{t.ci_coverage:.0%} CI"


def _range(lo: float, hi: float) -> str:
    a, b = duration(lo), duration(hi)
    ua, ub = a.rsplit(" ", 1)[1], b.rsplit(" ", 1)[1]
    return f"{a.rsplit(' ', 1)[0]}–{b}" if ua == ub else f"{a}–{b}"


def _launch(t) -> str:
    return f"{t.kernel}[grid={tuple(t.dims[:3])}, block={tuple(t.dims[3:])}]"


def _num(x: float) -> str:
    return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


def headline(t) -> str:
    """``k[grid=..., block=...]: median 12.31 µs (95% CI 12.28–12.35 µs), min 12.2 µs over 100
    runs, 3,412 GB/s``."""
    lo, hi = t.ci_ms
    out = (f"{_launch(t)}: median {duration(t.median_ms)} "
           f"({ci_label(t)} {_range(lo, hi)}), min {duration(t.min_ms)} over {t.n} runs")
    if t.gbps:
        out += f", {_num(t.gbps)} GB/s"
    if t.tflops:
        out += f", {t.tflops:.3g} TFLOP/s"
    if t.l2.startswith("warm"):
        out += f", L2 {t.l2.split(':')[0]}"
    return out


WRONG = "color: #c0392b; font-weight: bold"
TIMERS = {"cupti": "timed by CUPTI: each kernel's own start and end on the GPU (no launch gap)",
          "events": "timed by CUDA events around each launch (a kernel under ~10 µs also counts "
                    "part of the launch gap; cupti-python times it alone)"}


def wrong(t) -> str | None:
    """The first line of a Timing whose outputs failed ``check=`` after timing."""
    if not t.wrong:
        return None
    return f"OUTPUTS WRONG after timing, so these times do not count: {t.check.reason or t.check}"


def notes(t) -> list[tuple[str, str]]:
    """(level, text) lines under the headline; level "warn" or ""."""
    out = [("", f"IQR {_range(t.q1_ms, t.q3_ms)}, mean {duration(t.mean_ms)}, "
                f"max {duration(t.max_ms)}")]
    if t.check is not None and not t.wrong:
        out.append(("", "outputs checked after timing (check=): they pass, on outputs first "
                        "filled with a sentinel"))
    out.append(("", TIMERS.get(t.timer, f"timed by {t.timer}")))
    if t.ran_on:
        out.append(("", f"ran on {t.ran_on} (cuda_magic.remote)"))
    if t.n < 6:
        out.append(("warn", f"fewer than 6 samples: the interval is the min–max range and covers "
                            f"the median with only {t.ci_coverage:.0%} probability"))
    if t.graph:
        out.append(("", f"CUDA graph of {t.graph} launches per sample, no flush between them; "
                        f"per-launch time = graph time / {t.graph} (launch overhead left out)"))
    d = t.device
    if t.flush:
        what = (f"a {t.flush_bytes / 1e6:,.0f} MB memset on the same stream, outside the timed "
                f"events")
        if t.graph > 1:
            out.append(("", f"L2 flushed before each graph launch (not between its launches): "
                            f"{what}"))
            fits = f" ({d.l2_bytes / 2**20:,.0f} MiB)" if d is not None else ""
            out.append(("warn", f"L2 {t.l2}: the other {t.graph - 1} find in L2 what the launch "
                                f"before left, so a kernel whose data fit in L2{fits} times faster "
                                f"than cold (1.6x for a 16 MB read on an H200); graph=False times "
                                f"every launch cold"))
        else:
            out.append(("", f"L2 {t.l2}, {what}"))
    else:
        out.append(("", f"L2 {t.l2}; data left in L2 by the launch before can make a launch "
                        f"faster than a cold one"))
    if t.warmup:
        out.append(("", f"{t.warmup:,} warmup {'graph launches' if t.graph else 'launches'}"))
    if t.gbps and d is not None:
        out.append(("", f"bandwidth {_num(t.gbps)} GB/s = {t.gbps_of_peak:.1%} of the peak "
                        f"{_num(d.peak_gbps)} GB/s (2 × {d.mem_clock_khz / 1e3:,.0f} MHz × "
                        f"{d.bus_width_bits} bit / 8)"))
    if t.tflops and d is not None:
        per, sure = d.fma_per_clock(t.dtype)
        kind = t.dtype.replace("float", "FP")
        if per is None:
            out.append(("", f"{t.tflops:.3g} TFLOP/s; no {kind} peak known for {d.arch}"))
        else:
            out.append(("", f"compute {t.tflops:.3g} TFLOP/s = {t.tflops_of_peak:.1%} of the "
                            f"{kind} peak {t.peak_tflops:.3g} TFLOP/s ({d.sms} SMs × "
                            f"{d.sm_clock_khz / 1e3:,.0f} MHz × {per} FMA/clock × 2; no tensor "
                            f"cores){'' if sure else f'; the {per} per SM is not confirmed for {d.arch}'}"))
    if t.sol is not None:
        out.append(("", f"speed of light: {t.sol:.1%} of the {t.bound_by} bound, "
                        f"{duration(t.bound_ms)} on this GPU (roofline of nbytes and flops at "
                        f"the peaks above)"))
    c = t.clocks
    if c is not None:
        if c.note:
            out.append(("", c.note))
        elif c.after_mhz is not None:
            top = f" (max {c.max_mhz:,})" if c.max_mhz else ""
            before = f"{c.before_mhz:,} → " if c.before_mhz is not None else ""
            out.append(("", f"SM clock {before}{c.after_mhz:,} MHz{top}"))
            if c.changed:
                out.append(("warn", f"the SM clock changed during the runs ({c.before_mhz:,} → "
                                    f"{c.after_mhz:,} MHz): the times mix clock speeds; locked "
                                    f"clocks (nvidia-smi --lock-gpu-clocks, as root) cannot be set "
                                    f"from the notebook"))
            if c.throttled:
                why = f": {', '.join(c.reasons)}" if c.reasons else ""
                out.append(("warn", f"the SM clock fell or ran below its max during the run"
                                    f"{why}; times may be slower than the GPU can do"))
    out += [("", n) for n in t.notes]
    if d is not None:
        out.append(("dim", f"{d.name} ({d.arch}, {d.sms} SMs, L2 {d.l2_bytes / 2**20:,.0f} MiB)"))
    return out


def text(t) -> str:
    lines = [f"!! {wrong(t)}"] if t.wrong else []
    lines.append(headline(t))
    for level, line in notes(t):
        lines.append(("  ! " if level == "warn" else "  ") + line)
    return "\n".join(lines)


# ---- SVG ------------------------------------------------------------------------------------

def _every(xs, limit=MAX_POINTS):
    if len(xs) <= limit:
        return list(enumerate(xs))
    step = len(xs) / limit
    return [(int(i * step), xs[int(i * step)]) for i in range(limit)]


def _axis(lo: float, hi: float) -> tuple[float, float]:
    pad = (hi - lo) * 0.08 or max(abs(hi) * 0.05, 1e-6)
    return lo - pad, hi + pad


def strip_svg(t, width: int = 460, height: int = 120) -> str:
    """Samples in run order (drift and throttling show as a slope), the IQR band, the median's
    CI band and line; on the right a histogram of the same samples."""
    left, right, top, bottom = 64, 70, 8, 18
    pw, ph = width - left - right, height - top - bottom
    lo, hi = _axis(t.min_ms, t.max_ms)

    def y(v):
        return top + ph - (v - lo) / (hi - lo) * ph

    def x(i):
        return left + (i + 0.5) / t.n * pw
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" style="{MONO}; font-size: 10px">',
             f'<title>{escape(t.kernel)}: {t.n} samples</title>',
             f'<rect x="{left}" y="{y(t.q3_ms):.1f}" width="{pw}" '
             f'height="{max(y(t.q1_ms) - y(t.q3_ms), 0.5):.1f}" fill="{BAND}"/>']
    c_lo, c_hi = t.ci_ms
    parts.append(f'<rect x="{left}" y="{y(c_hi):.1f}" width="{pw}" '
                 f'height="{max(y(c_lo) - y(c_hi), 0.8):.1f}" fill="rgba(192,57,43,0.18)"/>')
    parts += [f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="1.6" fill="{DOT}"/>'
              for i, v in _every(t.samples_ms)]
    parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(t.median_ms):.1f}" '
                 f'y2="{y(t.median_ms):.1f}" stroke="{MEDIAN}" stroke-width="1"/>')
    for v in (t.min_ms, t.median_ms, t.max_ms):
        parts.append(f'<text x="{left - 4}" y="{y(v) + 3:.1f}" text-anchor="end" '
                     f'fill="currentColor">{escape(duration(v))}</text>')
    parts.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}" stroke="currentColor" '
                 f'stroke-opacity="0.4"/>')
    parts.append(f'<text x="{left + pw / 2:.0f}" y="{height - 4}" text-anchor="middle" '
                 f'fill="currentColor" fill-opacity="0.7">run order ({t.n} samples)</text>')
    # histogram, bars growing to the right
    bins = 24
    counts = [0] * bins
    for v in t.samples_ms:
        counts[min(int((v - lo) / (hi - lo) * bins), bins - 1)] += 1
    hx, hw, bh = left + pw + 8, right - 12, ph / bins
    peak = max(counts)
    for k, cnt in enumerate(counts):
        if cnt:
            parts.append(f'<rect x="{hx}" y="{top + ph - (k + 1) * bh:.1f}" '
                         f'width="{cnt / peak * hw:.1f}" height="{max(bh - 0.5, 0.5):.1f}" '
                         f'fill="{DOT}" fill-opacity="0.6"/>')
    parts.append("</svg>")
    return "".join(parts)


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f'<th style="{CELL}; border-bottom: 1px solid rgba(127,127,127,0.5)">{h}</th>'
                 for h in head)
    body = "".join("<tr>" + "".join(f'<td style="{CELL}">{c}</td>' for c in r) + "</tr>"
                   for r in rows)
    return f'<table style="border-collapse: collapse; {MONO}"><thead><tr>{th}</tr></thead>' \
           f'<tbody>{body}</tbody></table>'


def html(t) -> str:
    lo, hi = t.ci_ms
    rows = [["median", escape(duration(t.median_ms))],
            [f"{ci_label(t)} of the median", escape(_range(lo, hi))],
            ["IQR (q1–q3)", escape(_range(t.q1_ms, t.q3_ms))],
            ["min / mean / max", escape(f"{duration(t.min_ms)} / {duration(t.mean_ms)} / "
                                        f"{duration(t.max_ms)}")],
            ["samples", str(t.n)], ["L2", escape(t.l2)]]
    if t.gbps:
        frac = f" ({t.gbps_of_peak:.1%} of peak)" if t.gbps_of_peak else ""
        rows.append(["GB/s", escape(f"{_num(t.gbps)}{frac}")])
    if t.tflops:
        frac = f" ({t.tflops_of_peak:.1%} of {t.dtype} peak)" if t.tflops_of_peak else ""
        rows.append(["TFLOP/s", escape(f"{t.tflops:.3g}{frac}")])
    lines = []
    for level, line in notes(t)[1:]:
        style = WARN if level == "warn" else DIM
        lines.append(f'<div style="{MONO}; {style}; margin: 1px 0">'
                     f'{"! " if level == "warn" else ""}{escape(line)}</div>')
    head = f'<div style="{MONO}; font-weight: bold; margin: 2px 0">{escape(_launch(t))}</div>'
    body = (f'<div style="display: flex; gap: 16px; align-items: flex-start; flex-wrap: wrap">'
            f'{_table(["", ""], rows)}{strip_svg(t)}</div>')
    bad = (f'<div style="{MONO}; {WRONG}; margin: 2px 0">{escape(wrong(t))}</div>'
           if t.wrong else "")
    return f'<div class="cuda-magic-timing">{bad}{head}{body}{"".join(lines)}</div>'


# ---- history --------------------------------------------------------------------------------

HISTORY_HEAD = ["#", "when", "source", "config", "launch", "median", "95% CI", "GB/s", "change"]


def _history_rows(h) -> list[list[str]]:
    rows = []
    for i, (t, m) in enumerate(zip(h.runs, h.marks), 1):
        lo, hi = t.ci_ms
        change = "" if m.change is None else f"{m.change:+.1%} vs #{m.against + 1}"
        if m.kind:
            change += f" {m.kind}"
        elif m.change is not None:
            change += " (noise)"
        rows.append([str(i), time.strftime("%H:%M:%S", time.localtime(t.when)),
                     t.source_hash[:7] or "-", t.config_hash[:7] or "-", t.launch_hash[:7] or "-",
                     duration(t.median_ms), _range(lo, hi),
                     _num(t.gbps) if t.gbps else "-", change or "first of its launch"])
    return rows


LEGEND = ("regression: 95% CI wholly above the previous comparable run's and median > 5% "
          "slower; improvement: wholly below it and > 5% faster; comparable: same launch (grid, block, "
          "arguments, flush, graph)")


def history_text(h) -> str:
    from .text import table
    n = len(h.runs)
    out = [f"history of {h.kernel}: {n} run{'s' * (n != 1)} in this session "
           f"({len(h.regressions)} regression{'s' * (len(h.regressions) != 1)}, "
           f"{len(h.improvements)} improvement{'s' * (len(h.improvements) != 1)})"]
    out += table(HISTORY_HEAD, _history_rows(h))
    out.append(f"  {LEGEND}")
    return "\n".join(out)


def history_svg(h, width: int = 460, height: int = 140) -> str:
    """Each run's median with its CI as a whisker; regressions red, improvements green."""
    left, right, top, bottom = 64, 12, 8, 18
    pw, ph = width - left - right, height - top - bottom
    lo, hi = _axis(min(t.ci_ms[0] for t in h.runs), max(t.ci_ms[1] for t in h.runs))
    n = len(h.runs)

    def y(v):
        return top + ph - (v - lo) / (hi - lo) * ph

    def x(i):
        return left + (i + 0.5) / n * pw
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" style="{MONO}; font-size: 10px">',
             f'<title>{escape(h.kernel)}: median per run</title>']
    points = []
    for i, (t, m) in enumerate(zip(h.runs, h.marks)):
        c_lo, c_hi = t.ci_ms
        colour = KIND_COLOURS[m.kind]
        parts.append(f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{y(c_lo):.1f}" '
                     f'y2="{y(c_hi):.1f}" stroke="{colour}" stroke-width="1.5"/>')
        parts.append(f'<circle cx="{x(i):.1f}" cy="{y(t.median_ms):.1f}" r="3" fill="{colour}">'
                     f'<title>#{i + 1} {escape(duration(t.median_ms))} {m.kind}</title></circle>')
        points.append(f"{x(i):.1f},{y(t.median_ms):.1f}")
    parts.insert(2, f'<polyline points="{" ".join(points)}" fill="none" stroke="currentColor" '
                    f'stroke-opacity="0.3"/>')
    for v in (lo, hi):
        parts.append(f'<text x="{left - 4}" y="{y(v) + 3:.1f}" text-anchor="end" '
                     f'fill="currentColor">{escape(duration(v))}</text>')
    parts.append(f'<text x="{left + pw / 2:.0f}" y="{height - 4}" text-anchor="middle" '
                 f'fill="currentColor" fill-opacity="0.7">run (oldest first)</text>')
    parts.append("</svg>")
    return "".join(parts)


def history_html(h) -> str:
    rows = []
    for r, m in zip(_history_rows(h), h.marks):
        cells = [escape(c) for c in r]
        if m.kind:
            cells[-1] = f'<span style="color: {KIND_COLOURS[m.kind]}; font-weight: bold">' \
                        f'{cells[-1]}</span>'
        rows.append(cells)
    head = (f'<div style="{MONO}; font-weight: bold; margin: 2px 0">history of '
            f'{escape(h.kernel)}: {len(h.runs)} runs</div>')
    return (f'<div class="cuda-magic-history">{head}{history_svg(h)}'
            f'{_table(HISTORY_HEAD, rows)}<div style="{MONO}; {DIM}">{escape(LEGEND)}</div></div>')


class TimingView(MeasureView):
    """A :class:`~cuda_magic.runtime.measure.bench.Timing` (``k.bench``)."""

    def text(self) -> str:
        return text(self.obj)

    def html(self) -> str:
        return html(self.obj)


class HistoryView(MeasureView):
    """A kernel's :class:`~cuda_magic.runtime.measure.history.History` (``cuda_magic.history``)."""

    def text(self) -> str:
        return history_text(self.obj)

    def html(self) -> str:
        return history_html(self.obj)


# ---- A/B ------------------------------------------------------------------------------------

def ab_text(r) -> str:
    """The verdict first, then each kernel's median over the same rounds."""
    a, b = r.names
    lines = [r.words, f"  {r.rounds} rounds of {r.repeat} timed launches each, in turns "
                      f"(A B, B A, ...), same arguments, same flush; verdict on the per-round "
                      f"ratios {b}/{a}"]
    for name, t in ((a, r.a), (b, r.b)):
        lo, hi = t.ci_ms
        lines.append(f"  {name}: median {duration(t.median_ms)} ({ci_label(t)} {_range(lo, hi)}) "
                     f"over {t.n} launches, {TIMERS.get(t.timer, t.timer).split(':')[0]}")
    return "\n".join(lines)


def ab_html(r) -> str:
    d = r.decision
    colour = {"faster": "#27ae60", "slower": "#c0392b"}.get(d.called, "currentColor")
    head, *rest = ab_text(r).split("\n")
    body = "".join(f'<div style="{MONO}; {DIM}; margin: 1px 0">{escape(x.strip())}</div>'
                   for x in rest)
    return (f'<div class="cuda-magic-ab"><div style="{MONO}; font-weight: bold; color: {colour}; '
            f'margin: 2px 0">{escape(head)}</div>{body}</div>')


class ABView(MeasureView):
    """An A/B verdict (:func:`cuda_magic.ab`)."""

    def text(self) -> str:
        return ab_text(self.obj)

    def html(self) -> str:
        return ab_html(self.obj)
