"""The view of one call on several GPUs of a cluster (``k.bench(..., on="all")``,
``k.verify(..., on=...)``): an :class:`~cuda_magic.runtime.remote.Across`, one row per GPU.

A bench's row: GPU, arch, median, 95% CI of the median, and the share of that GPU's peak
(GB/s or TFLOP/s given ``nbytes``/``flops``); a verify's row: GPU, arch, passed or not and the
verdict's first line.  A GPU whose call failed shows its error in its row."""

from __future__ import annotations

from html import escape

from ..errors import clip
from .measure import MeasureView
from .timing import _range, _table, duration

__all__ = ["AcrossView", "rows"]


def _peak(t) -> str:
    if t.gbps_of_peak:
        return f"{t.gbps_of_peak:.1%} of GB/s peak"
    if t.tflops_of_peak:
        return f"{t.tflops_of_peak:.1%} of {t.dtype} peak"
    return "-"


def rows(a) -> tuple[list[str], list[list[str]]]:
    """The table's head and rows, as text."""
    if a.method == "bench":
        head = ["GPU", "worker", "arch", "median", "95% CI of the median", "of peak"]
    else:
        head = ["GPU", "worker", "arch", "verdict", ""]
    out = []
    for g, r in a.rows:
        first = [f"{g.index}: {g.name}", g.worker, g.arch]
        if isinstance(r, BaseException):       # the error in the last, widest column
            out.append(first + ["failed"] + [""] * (len(head) - 5) +
                       [f"{type(r).__name__}: {clip(str(r), 160)}"])
        elif a.method == "bench":
            out.append(first + [duration(r.median_ms), _range(*r.ci_ms), _peak(r)])
        else:
            lines = str(r).splitlines() or [""]
            out.append(first + ["passed" if r else "FAILED", clip(lines[0], 160)])
    return head, out


class AcrossView(MeasureView):
    """An :class:`~cuda_magic.runtime.remote.Across`: one row per GPU."""

    def text(self) -> str:
        a = self.obj
        head, body = rows(a)
        widths = [max(len(x) for x in col) for col in zip(head, *body)]
        fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
        return "\n".join([f"{a.kernel}.{a.method} on {len(a.rows)} GPU(s)", fmt(head),
                          *(fmt(r) for r in body)])

    def html(self) -> str:
        a = self.obj
        head, body = rows(a)
        return (f'<div class="cuda-magic-across"><div style="font-family: monospace; '
                f'font-weight: bold; margin: 2px 0">{escape(a.kernel)}.{escape(a.method)} on '
                f'{len(a.rows)} GPU(s)</div>'
                f'{_table(head, [[escape(c) for c in r] for r in body])}</div>')
