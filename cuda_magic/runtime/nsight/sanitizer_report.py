"""What compute-sanitizer said about one launch, as data: :class:`Check`.

Pure parsing, no CUDA and no tools: :func:`parse_check` reads compute-sanitizer's text (the
``=========`` lines of memcheck, racecheck, initcheck, synccheck) into findings
(:class:`Finding`) and their sites (:class:`Site`); :func:`assign_check_lines` gives a site
without a line (a build without ``-lineinfo``) its cell line from the kernel's line table.
Running the tool is in :mod:`.tools`; the views are in :mod:`cuda_magic.display.reports`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Check", "Finding", "Site", "parse_check", "assign_check_lines", "FAULTS"]

# Kernel faults that compute-sanitizer can place (line, block, thread).
FAULTS = ("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_MISALIGNED_ADDRESS",
          "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",
          "CUDA_ERROR_HARDWARE_STACK_ERROR")


@dataclass
class Site:
    """Where in the code: the kernel symbol and offset, and the cell line when known."""

    symbol: str
    offset: int
    file: str | None = None
    line: int | None = None
    access: str | None = None          # racecheck: "Read", "Write"
    thread: tuple | None = None        # racecheck hazards: the accessing thread
    hazards: int | None = None         # racecheck analysis: hazards between the two accesses
    mapped: bool = False               # the line came from our line table, not the tool
    text: str | None = None            # the cell's source line

    @property
    def where(self) -> str:
        if self.line is None:
            return f"{self.symbol}+{self.offset:#x}"
        if self.file in (None, "cell.cu") or (self.file or "").endswith("/cell.cu"):
            return f"cell line {self.line}"
        return f"{self.file}:{self.line}"


@dataclass
class Finding:
    """One error compute-sanitizer reported."""

    kind: str                          # "error", "warning", "api"
    title: str                         # "Invalid __global__ write of size 4 bytes"
    sites: list = field(default_factory=list)
    block: tuple | None = None
    thread: tuple | None = None
    details: list = field(default_factory=list)

    @property
    def line(self) -> int | None:
        return next((s.line for s in self.sites if s.line is not None and
                     s.where.startswith("cell line")), None)


@dataclass
class Check:
    """One launch under compute-sanitizer: ``findings`` (first ``print_limit`` of them), the
    tool's ``summary`` line, ``errors`` (its count), ``ok``; ``output`` is the tool's text."""

    tool: str
    kernel: str
    symbol: str
    dims: tuple
    findings: list
    summary: str
    errors: int | None
    output: str = field(repr=False, default="")
    exit_code: int | None = None
    child: dict | None = None          # the helper's own result: {"ok": ..., "error": ...}
    notes: list = field(default_factory=list)
    line_note: str = ""
    source: str = field(default="", repr=False)
    tool_version: str = ""             # "compute-sanitizer 2025.3.1.0"

    @property
    def ok(self) -> bool:
        return not self.findings and not self.errors and bool((self.child or {}).get("ok", True))

    def __repr__(self) -> str:
        state = "no errors" if self.ok else f"{len(self.findings)} finding(s)"
        return f"<Check {self.tool} {self.kernel}: {state}; {self.summary}>"


_PREFIX_LINE = re.compile(r"^========= ?(.*)$")
_SITE = (r"at\s+(?P<sym>[^\s+]+)\+0x(?P<off>[0-9a-fA-F]+)(?:\s+in\s+(?P<file>\S+?):(?P<line>\d+))?"
         r"(?:\s+\[(?P<haz>[\d,]+)\s+hazards?\])?")
_AT = re.compile(r"(?:(?:and\s+)?(?P<access>\w+)\s+access\s+)?" + _SITE)
_THREAD_AT = re.compile(r"^(?P<access>\w+)\s+Thread\s+\((?P<t>\d+,\s*\d+,\s*\d+)\)\s+" + _SITE)
_BY = re.compile(r"by thread \((\d+,\s*\d+,\s*\d+)\) in block \((\d+,\s*\d+,\s*\d+)\)")
_BLOCK = re.compile(r"in block \((\d+,\s*\d+,\s*\d+)\)")
_SUMMARY = re.compile(r"^(?:ERROR|RACECHECK|SYNCCHECK|INITCHECK|MEMCHECK) SUMMARY:.*")
_COUNT = re.compile(r"(?:ERROR SUMMARY: ([\d,]+) errors?|\(([\d,]+) errors?,)")


def _triple(t: str) -> tuple:
    return tuple(int(x) for x in t.replace(" ", "").split(","))


def _site(m, thread=None) -> Site:
    line = int(m.group("line")) if m.group("line") else None
    file = m.group("file")
    if file and (file == "cell.cu" or file.endswith("/cell.cu")):
        file = "cell.cu"
    haz = m.group("haz")
    return Site(m.group("sym"), int(m.group("off"), 16), file, line, m.group("access"),
                thread, int(haz.replace(",", "")) if haz else None)


def parse_check(text: str, *, tool: str, kernel: str = "", symbol: str = "", dims: tuple = (),
                notes=(), child=None, exit_code=None) -> Check:
    """A :class:`Check` from compute-sanitizer's output (the ``=========`` lines)."""
    blocks: list[list[str]] = []
    summary = ""
    current: list[str] | None = None
    for raw in text.splitlines():
        m = _PREFIX_LINE.match(raw)
        if not m:
            continue
        body = m.group(1).rstrip()
        if not body.strip():
            current = None
            continue
        if _SUMMARY.match(body.strip()):
            summary = body.strip()
            current = None
            continue
        if not body.startswith(" "):
            current = [body]
            blocks.append(current)
        elif current is not None:
            current.append(body.strip())
    findings = []
    for b in blocks:
        title = b[0].strip()
        if title in ("COMPUTE-SANITIZER", "Target application returned an error") or \
                title.startswith(("Saved host backtrace", "LEAK SUMMARY")):
            continue
        kind = "api" if title.startswith("Program hit") else \
            "warning" if title.lower().startswith("warning") else "error"
        f = Finding(kind, re.sub(r"^(Error|Warning):\s*", "", title).rstrip(" :"))
        bm = _BLOCK.search(title)
        if bm:
            f.block = _triple(bm.group(1))
        first = _AT.search(title)
        if first and " at " in title:
            f.sites.append(_site(first))
            f.title = re.sub(r"\s+(\w+\s+access\s+)?at\s+\S+\+0x.*$", "", f.title).strip()
            if f.title.endswith(" between"):
                f.title += " these accesses"
        for ln in b[1:]:
            t = _THREAD_AT.match(ln)
            if t:
                f.sites.append(_site(t, _triple(t.group("t"))))
                continue
            by = _BY.search(ln)
            if by:
                f.thread, f.block = _triple(by.group(1)), _triple(by.group(2))
                continue
            a = _AT.match(ln)
            if a and ln.startswith(("at ", "and ")):
                f.sites.append(_site(a))
                continue
            if ln.startswith(("Saved host backtrace", "Host Frame:")):
                continue
            f.details.append(ln)
        findings.append(f)
    c = _COUNT.search(summary)
    errors = int((c.group(1) or c.group(2)).replace(",", "")) if c else None
    return Check(tool, kernel, symbol, tuple(dims), findings, summary, errors, text, exit_code,
                 child, list(notes))


def assign_check_lines(c: Check, rows, source: str = "", note: str = "") -> Check:
    """Give each site without a line (a build without ``-lineinfo``) its line from ``rows``, the
    kernel's line table; attach the cell's source text."""
    from ...compile.binary import line_of
    c.source, c.line_note = source, note
    lines = source.split("\n") if source else []
    for f in c.findings:
        for s in f.sites:
            if s.line is None and rows is not None and s.symbol == c.symbol:
                at = line_of(rows, s.offset)
                if at is not None:
                    s.file, s.line, s.mapped = at[0], at[1], True
            if s.line and (s.file in (None, "cell.cu")) and 0 < s.line <= len(lines):
                s.text = lines[s.line - 1]
    return c
