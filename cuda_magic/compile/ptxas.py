"""Parse ``ptxas -v`` output into per-function resources.

Handles NVRTC's ``ptxas         .`` continuation lines and nvcc's indented
ones, entry functions (kernels) and device functions, and the warnings
ptxas attaches to a function (local memory, spills).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

__all__ = ["Resources", "parse_ptxas", "without"]


@dataclass(frozen=True)
class Resources:
    """One function's resources as ptxas reported them (bytes unless noted)."""

    name: str
    entry: bool = False           # a kernel (``Compiling entry function``)
    arch: str | None = None
    registers: int = 0
    barriers: int = 0
    stack_frame: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    shared: int = 0               # static shared memory (smem)
    constant: int = 0             # constant memory, all banks (cmem[n])
    local: int = 0                # lmem, where ptxas reports it
    cumulative_stack: int = 0
    compile_time_ms: float | None = None
    warnings: tuple[str, ...] = field(default=())

    @property
    def spills(self) -> bool:
        """True when ptxas spilled registers to local memory."""
        return bool(self.spill_stores or self.spill_loads)


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_TIME = re.compile(r"Compile time = ([\d.]+) ms")
_WARN_FN = re.compile(r"function '([^']+)'")
_FIELDS = {
    "barriers": re.compile(r"used (\d+) barriers"),
    "shared": re.compile(r"(\d+) bytes smem"),
    "local": re.compile(r"(\d+) bytes lmem"),
    "cumulative_stack": re.compile(r"(\d+) bytes cumulative stack size"),
}
_CMEM = re.compile(r"(\d+) bytes cmem\[\d+\]")


def parse_ptxas(log: str) -> dict[str, Resources]:
    """All functions ptxas described in ``log``, by (mangled) name, in order."""
    funcs: dict[str, Resources] = {}
    current = props = None

    def update(name: str, **kw) -> None:
        funcs[name] = replace(funcs.get(name) or Resources(name), **kw)

    for raw in log.splitlines():
        line = raw.strip()
        if m := _ENTRY.search(line):
            current = props = m.group(1)
            update(current, entry=True, arch=m.group(2))
        elif m := _PROPS.search(line):
            props = m.group(1)
            if props not in funcs:
                update(props)
        elif (m := _FRAME.search(line)) and props:
            update(props, stack_frame=int(m.group(1)), spill_stores=int(m.group(2)),
                   spill_loads=int(m.group(3)))
        elif (m := _USED.search(line)) and current:
            kw = {k: int(f.group(1)) for k, p in _FIELDS.items() if (f := p.search(line))}
            cmem = sum(int(c) for c in _CMEM.findall(line))
            update(current, registers=int(m.group(1)), constant=cmem, **kw)
        elif (m := _TIME.search(line)) and current:
            update(current, compile_time_ms=float(m.group(1)))
        elif line.startswith("ptxas warning") and (m := _WARN_FN.search(line)):
            name = m.group(1)
            update(name, warnings=(funcs[name].warnings if name in funcs else ()) + (line,))
    return funcs


_OVERRIDE = re.compile(r"for '([^']+)' with")


def without(log: str, names) -> str:
    """``log`` without ptxas's lines about the kernels ``names`` (their entry block, their
    register-limit and warning lines): what a build compiled only as emptied bodies."""
    names = set(names)
    if not names:
        return log
    out, dropping = [], False
    for raw in log.splitlines(keepends=True):
        line = raw.strip()
        if m := _ENTRY.search(line):
            dropping = m.group(1) in names
        elif m := _PROPS.search(line):
            dropping = m.group(1) in names
        elif (m := _OVERRIDE.search(line)) or (line.startswith("ptxas warning")
                                               and (m := _WARN_FN.search(line))):
            if m.group(1) in names:
                continue
        elif not (line.startswith("ptxas") or raw[:1].isspace()):
            dropping = False        # not ptxas's (nor nvcc's indented) lines: another tool's
        if not dropping:
            out.append(raw)
    return "".join(out)
