"""How a :class:`~cuda_magic.runtime.nsight.reports.Profile` (``k.profile``) and a
:class:`~cuda_magic.runtime.nsight.reports.Check` (``k.check``) look: plain text and static HTML;
their views, :class:`ProfileView` and :class:`CheckView`.

Everything quoted from the tools and the cell is escaped in HTML.
"""

from __future__ import annotations

import re
from html import escape

from ..runtime.nsight.reports import short_dim
from . import markup
from .measure import MeasureView
from .text import table as text_table

__all__ = ["ProfileView", "CheckView", "profile_text", "profile_html", "lines_text", "check_text", "check_html"]

LINE_HEAD = ["line", "samples", "share", "not issued", "instructions", "L2 sectors", "excess",
             "top stall", "source"]


def _dims(dims) -> str:
    return f"[grid={short_dim(dims[:3])}, block={short_dim(dims[3:])}]" if len(dims) == 6 else ""


def _pct(v) -> str:
    return "n/a" if v is None else f"{v:.1f} %"


def _int(v) -> str:
    return "" if v is None else f"{int(round(v)):,}"


def _duration(us) -> str:
    if us is None:
        return "n/a"
    return f"{us:.2f} µs" if us < 1000 else f"{us / 1000:.3f} ms"


def _top_stall(m: dict) -> str:
    stalls = [(k[len("stall_"):], v) for k, v in m.items() if k.startswith("stall_") and
              k != "stall_selected" and v]
    if not stalls:
        return ""
    k, v = max(stalls, key=lambda t: t[1])
    return f"{k} ({int(v):,})"


def _line_rows(p, n=None) -> list[list[str]]:
    chosen = p.hottest(n) if n else sorted(p.lines.items())
    lines = p.source.split("\n") if p.source else []
    rows = []
    for ln, m in chosen:
        text = lines[ln - 1].strip() if 0 < ln <= len(lines) else ""
        rows.append([str(ln), _int(m.get("samples")),
                     f"{m['samples_pct']:.1f}%" if "samples_pct" in m else "",
                     _int(m.get("samples_not_issued")), _int(m.get("instructions")),
                     _int(m.get("l2_sectors")), _int(m.get("l2_sectors_excessive")),
                     _top_stall(m), text[:70]])
    return rows


def lines_text(p, n: int | None = None) -> str:
    """The per-line metrics (all lines, or the ``n`` hottest by warp stall samples)."""
    if not p.lines:
        return f"no per-line metrics: {p.line_note or 'the report has no source counters'}"
    head = [f"{p.kernel}: per cell line (warp stall samples, executed instructions, L2 sectors); "
            f"{p.line_note}"]
    return "\n".join(head + text_table(LINE_HEAD, _line_rows(p, n)))


def _summary(p) -> list[tuple[str, str]]:
    occ = _pct(p.occupancy_pct) + " achieved"
    if p.theoretical_occupancy_pct is not None:
        occ += f" of {p.theoretical_occupancy_pct:.0f} % theoretical"
    if p.registers is not None:
        occ += f" · {int(p.registers)} registers/thread"
    mem = f"L1/TEX {_pct(p.l1_pct)} · L2 {_pct(p.l2_pct)} · DRAM {_pct(p.dram_pct)}"
    if p.dram_gbps is not None:
        mem += f" ({p.dram_gbps:,.0f} GB/s)"
    clock = "locked to base" if p.clock_control == "base" else "as the GPU set them"
    dur = _duration(p.duration_us) + (f" at SM {p.sm_ghz:.2f} GHz (clocks {clock})"
                                      if p.sm_ghz else "")
    out = [("duration", dur),
           ("speed of light", f"compute (SM) {_pct(p.sm_pct)} · memory {_pct(p.memory_pct)} of peak"),
           ("occupancy", occ), ("throughput", mem)]
    stalls = p.stalls[:5]
    if stalls:
        total = p.cycles_per_issue or sum(v for _, v in p.stalls)
        out.append(("warp stalls", f"{total:.1f} cycles per issued instruction: " + ", ".join(
            f"{k} {v:.1f} ({100 * v / total:.0f}%)" for k, v in stalls)))
    for name in p.asked:
        m = p.metrics.get(name)
        if m is not None:
            v = m.value
            out.append((name, (f"{v:,.6g}" if isinstance(v, float) else str(v)) +
                        (f" {m.unit}" if m.unit else "")))
    return out


def _sentences(text: str, limit: int = 240) -> str:
    """Whole sentences of ``text`` up to about ``limit`` characters."""
    out = ""
    for part in re.split(r"(?<=[.!?])\s+", text.strip()):
        if out and len(out) + len(part) > limit:
            break
        out = f"{out} {part}".strip()
    return out if len(out) <= limit + 80 else out[:limit].rstrip() + "…"


def _advice(p, n: int = 3) -> list[str]:
    return [f"{a.rule} ({a.type}{f', est. speedup {a.speedup:.0f}%' if a.speedup else ''}): "
            f"{_sentences(a.text)}" for a in p.advice if a.type in ("OPT", "WRN")][:n]


def _on(r) -> str:
    """`` on <GPU> of worker <address>`` for a report a remote GPU made (cuda_magic.remote)."""
    return f" on {r.ran_on}" if getattr(r, "ran_on", "") else ""


def profile_text(p) -> str:
    head = f"{p.kernel}{_dims(p.dims)} under {p.tool_version or 'Nsight Compute'}{_on(p)}"
    out = [head] + text_table(["", ""], _summary(p))[1:]
    for a in _advice(p):
        out.append(f"  ncu: {a}")
    if p.lines:
        out.append(lines_text(p, 5))
    elif p.line_note:
        out.append(f"  {p.line_note}")
    out += [f"  note: {n}" for n in p.notes]
    out.append(f"  report: {p.report} (open it in Nsight Compute: ncu-ui {p.report})")
    return "\n".join(out)


def profile_html(p) -> str:
    head = markup.note(f"{p.kernel}{_dims(p.dims)} under {p.tool_version or 'Nsight Compute'}"
                       f"{_on(p)}",
                     "font-weight: bold")
    body = markup.table(["", ""], [[escape(k), escape(v)] for k, v in _summary(p)])
    advice = "".join(markup.note(f"ncu: {a}", "") for a in _advice(p))
    if p.lines:
        rows = [[escape(c) for c in r] for r in _line_rows(p, 8)]
        lines = (markup.note(f"hottest cell lines (warp stall samples); {p.line_note}") +
                 markup.table(LINE_HEAD, rows))
    else:
        lines = markup.note(p.line_note, markup.WARN) if p.line_note else ""
    notes = "".join(markup.note(f"note: {n}", markup.WARN) for n in p.notes)
    rep = markup.note(f"report: {p.report} (open it in Nsight Compute: ncu-ui {p.report})")
    return f'<div class="cuda-magic">{head}{body}{advice}{lines}{notes}{rep}</div>'


# ------------------------------------------------------------------------- compute-sanitizer

def _t(t) -> str:
    return "(" + ",".join(str(x) for x in t) + ")" if t else ""


def _finding_lines(i: int, f) -> list[str]:
    out = [f"{i}. {f.title}"]
    where = []
    if f.block is not None:
        where.append(f"block {_t(f.block)}")
    if f.thread is not None:
        where.append(f"thread {_t(f.thread)}")
    for s in f.sites:
        lead = f"{s.access} " if s.access else ""
        extra = f", thread {_t(s.thread)}" if s.thread else ""
        haz = f" [{s.hazards:,} hazards]" if s.hazards else ""
        mapped = " (mapped by cuda-magic)" if s.mapped else ""
        out.append(f"   {lead}at {s.where}{extra}{haz}{mapped}" +
                   (f", {', '.join(where)}" if where and s is f.sites[0] else ""))
        if s.text is not None:
            out.append(f"     {s.line:>4} | {s.text.rstrip()}")
    if not f.sites and where:
        out.append(f"   {', '.join(where)}")
    out += [f"   {d}" for d in f.details[:6]]
    return out


def check_text(c) -> str:
    state = "no errors" if c.ok else c.summary or f"{len(c.findings)} finding(s)"
    out = [f"{c.tool}: {c.kernel}{_dims(c.dims)} under {c.tool_version or 'compute-sanitizer'}"
           f"{_on(c)}: "
           f"{state}"]
    for i, f in enumerate(c.findings, 1):
        out += _finding_lines(i, f)
    if c.child and not c.child.get("ok", True):
        out.append(f"the launch in the helper process ended with: "
                   f"{c.child.get('message', c.child.get('error', ''))[:300]}")
    if c.line_note:
        out.append(c.line_note)
    out += [f"note: {n}" for n in c.notes]
    return "\n".join(out)


def check_html(c) -> str:
    text = check_text(c)
    first, rest = (text.split("\n", 1) + [""])[:2]
    style = "font-weight: bold" if c.ok else markup.ERR
    return (f'<div class="cuda-magic">{markup.note(first, style)}'
            f'{markup.pre(rest) if rest else ""}</div>')


class ProfileView(MeasureView):
    """A :class:`~cuda_magic.runtime.nsight.reports.Profile` (``k.profile``); ``show(p, "lines")``
    prints its per-line metrics."""

    def text(self) -> str:
        return profile_text(self.obj)

    def html(self) -> str:
        return profile_html(self.obj)

    def lines(self, n: int | None = None) -> str:
        """The per-line metrics (all lines, or the ``n`` hottest)."""
        return lines_text(self.obj, n)

    def part(self, what: str = "summary", kernel: str | None = None, **_) -> str:
        return (self.lines() if what == "lines" else self.text()).rstrip("\n")


class CheckView(MeasureView):
    """A :class:`~cuda_magic.runtime.nsight.reports.Check` (``k.check``)."""

    def text(self) -> str:
        return check_text(self.obj)

    def html(self) -> str:
        return check_html(self.obj)
