"""One cuda-gdb run: attach to a process whose kernel hangs, read where its warps are, detach.

    cuda-gdb -p PID -batch -nx -q -ex "info cuda kernels" -ex "cuda kernel N" \\
             -ex "info cuda threads" -ex "x/i $pc" ... -ex "info cuda warps sm S" ... -ex detach

What a person would type, in batch mode.  Measured on the H200 (driver 580, CUDA 13.0
toolkit): the attach, the listing of a spinning kernel's warps and the detach take about
2 s.  Attaching stops every thread of the attached process -- ours too when the kernel runs
in this process -- so cuda-gdb writes to a file, never to a pipe that could fill while its
reader is stopped, and runs under ``timeout -s KILL`` (coreutils), a process that is not
stopped, so the diagnosis itself never hangs.

Permission: where Yama's ``ptrace_scope`` is 1 (Ubuntu's default) a process may be attached
only by its ancestors or by the tracer it names: this process names itself
(``prctl(PR_SET_PTRACER, getpid())``: its children, cuda-gdb among them, may attach), and the
helper process names the notebook's (:func:`allow_parent`).  ``ptrace_scope`` 2 (root only)
and 3 (no attaching) are said as such.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from ... import tools
from ...errors import NoDiagnosis

__all__ = ["Warp", "Threads", "Snapshot", "Unavailable", "snapshot", "parse", "allow_parent",
           "allow_children", "TIME_LIMIT", "KERNEL_SLOTS"]

TIME_LIMIT = 60.0          # seconds the whole cuda-gdb run may take
KERNEL_SLOTS = 4           # kernels looked at (cuda-gdb numbers the running ones from 0)
PR_SET_PTRACER = 0x59616D61


Unavailable = NoDiagnosis      # no diagnosis: the message says why

@dataclass(frozen=True)
class Warp:
    """One resident warp, as ``info cuda warps`` lists it."""
    sm: int
    slot: int                       # the warp's slot on the SM ("Wp")
    kernel: int                     # cuda-gdb's kernel number
    block: tuple[int, int, int]
    first_thread: tuple[int, int, int]
    pc: int                         # the virtual PC (an address)
    active: int                     # active lanes mask
    divergent: int


@dataclass(frozen=True)
class Threads:
    """One row of ``info cuda threads``: threads of one block at one PC."""
    kernel: int
    block: tuple[int, int, int]
    first: tuple[int, int, int]
    last: tuple[int, int, int]
    count: int
    pc: int
    file: str
    line: int | None


@dataclass
class Snapshot:
    """What one cuda-gdb run read."""
    kernels: dict = field(default_factory=dict)    # number -> {"grid", "block", "name", "device"}
    bases: dict = field(default_factory=dict)      # number -> the address of its first instruction
    warps: list = field(default_factory=list)      # [Warp]
    threads: list = field(default_factory=list)    # [Threads]
    seconds: float = 0.0
    version: str = ""
    text: str = ""                                 # cuda-gdb's output, for the record


def allow_children() -> None:
    """Let this process's children (cuda-gdb) attach to it under Yama ``ptrace_scope`` 1."""
    _ptracer(os.getpid())


def allow_parent() -> None:
    """Let the parent process's children attach to this one (the helper process calls it: the
    notebook starts cuda-gdb)."""
    _ptracer(os.getppid())


def _ptracer(pid: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PTRACER, pid, 0, 0, 0)
    except (OSError, AttributeError):      # not Linux, or no prctl: nothing to allow
        pass


def _scope() -> int | None:
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _refused() -> str | None:
    scope = _scope()
    if scope == 3:
        return ("attaching a debugger is switched off on this machine (Yama ptrace_scope 3, "
                "until the next reboot)")
    if scope == 2 and os.geteuid() != 0:
        return ("only root may attach a debugger on this machine (Yama ptrace_scope 2); as "
                "root: sysctl kernel.yama.ptrace_scope=1")
    return None


def argv(gdb: str, pid: int, sm_count: int) -> list[str]:
    """cuda-gdb's argv for :func:`snapshot` (under ``timeout`` where coreutils has it)."""
    cmds = ["set pagination off", "set width 0", "set confirm off", "info cuda kernels"]
    for n in range(KERNEL_SLOTS):
        cmds += [f"echo @@kernel {n}\\n", f"cuda kernel {n}", "info cuda threads", "x/i $pc"]
    cmds += [f"info cuda warps sm {s}" for s in range(sm_count)]
    cmds += ["detach"]
    run = [gdb, "-p", str(pid), "-batch", "-nx", "-q"]
    for c in cmds:
        run += ["-ex", c]
    killer = shutil.which("timeout")
    return ([killer, "-s", "KILL", str(int(TIME_LIMIT))] if killer else []) + run


def snapshot(pid: int, sm_count: int) -> Snapshot:
    """Attach cuda-gdb to ``pid`` and read its resident warps; :class:`Unavailable` says why
    not.  ``sm_count``: the GPU's SMs (one ``info cuda warps sm S`` each)."""
    refused = _refused()
    if refused:
        raise Unavailable(refused)
    try:
        gdb = tools.find("cuda-gdb")
    except tools.ToolNotFoundError as exc:
        raise Unavailable(str(exc)) from None
    if pid == os.getpid():
        allow_children()
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.run(argv(gdb, pid, sm_count), stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=TIME_LIMIT + 10,
                                  env={**os.environ, "PYTHONPATH": ""})
        except subprocess.TimeoutExpired:
            raise Unavailable(f"cuda-gdb did not finish within {TIME_LIMIT:g} s") from None
        except OSError as exc:
            raise Unavailable(f"cuda-gdb could not start ({exc})") from None
        out.seek(0)
        text = out.read().decode(errors="replace")
    snap = parse(text)
    snap.seconds = time.monotonic() - start
    if not snap.warps and not snap.threads:
        why = _why(text, proc.returncode)
        raise Unavailable(why)
    return snap


def _why(text: str, rc: int) -> str:
    low = text.lower()
    if "operation not permitted" in low or "ptrace" in low and "permi" in low:
        return ("cuda-gdb was not allowed to attach (ptrace: operation not permitted); in a "
                "container, run it with --cap-add=SYS_PTRACE")
    if rc in (-9, 137):
        return f"cuda-gdb did not finish within {TIME_LIMIT:g} s and was stopped"
    last = [ln for ln in text.strip().splitlines() if ln.strip()][-3:]
    return "cuda-gdb found no CUDA warps" + (f" (it said: {' | '.join(last)[:300]})" if last else "")


# ---- reading its output -------------------------------------------------------------------

_DIM = r"\((\d+),(\d+),(\d+)\)"
_KERNEL = re.compile(rf"^\*?\s+(\d+)\s+\S+\s+(\d+)\s+\d+\s+\S+\s+0x[0-9a-f]+\s+{_DIM}\s+{_DIM}\s+(.*?)\s*$")
_SM = re.compile(r"^Device (\d+) SM (\d+)\s*$")
_WARP = re.compile(rf"^\*?\s+(\d+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\d+)\s+"
                   rf"{_DIM}\s+{_DIM}\s*$")
_THREADS = re.compile(rf"^\*?\s+{_DIM}\s+{_DIM}\s+{_DIM}\s+{_DIM}\s+(\d+)\s+0x([0-9a-f]+)"
                      rf"(?:\s+(\S.*?))?\s+(\d+)\s*$")     # line 0: no line info
_FOCUS = re.compile(r"Switching focus to CUDA kernel (\d+)")
_AT = re.compile(r"^=>\s+0x([0-9a-f]+)\s+<(.+)\+(\d+)>:")
_ECHO = re.compile(r"^@@kernel (\d+)$")


def _dim(groups, i: int) -> tuple[int, int, int]:
    return int(groups[i]), int(groups[i + 1]), int(groups[i + 2])


def parse(text: str) -> Snapshot:
    """cuda-gdb's output (as :func:`argv` asks for it) -> a :class:`Snapshot`."""
    snap = Snapshot(text=text)
    focus, section, sm = 0, None, None
    for row in text.splitlines():
        m = _FOCUS.search(row)
        if m:
            focus = int(m.group(1))
            continue
        m = _ECHO.match(row.strip())
        if m:
            section, sm = int(m.group(1)), None
            continue
        m = _SM.match(row.strip())
        if m:
            sm, section = int(m.group(2)), None
            continue
        m = _KERNEL.match(row)
        if m and "Active" in row:
            g = m.groups()
            snap.kernels[int(g[0])] = {"device": int(g[1]), "grid": _dim(g, 2),
                                       "block": _dim(g, 5), "name": g[8]}
            continue
        m = _WARP.match(row)
        if m and sm is not None:
            g = m.groups()
            snap.warps.append(Warp(sm, int(g[0]), int(g[4]), _dim(g, 5), _dim(g, 8), int(g[3], 16),
                                   int(g[1], 16), int(g[2], 16)))
            continue
        m = _THREADS.match(row)
        if m and section is not None and focus == section:
            g = m.groups()
            file, line = g[14] or "", int(g[15]) or None
            snap.threads.append(Threads(section, _dim(g, 0), _dim(g, 3), _dim(g, 9), int(g[12]),
                                        int(g[13], 16), file, line))
            continue
        m = _AT.match(row.strip())
        if m and section is not None and focus == section:
            snap.bases[section] = int(m.group(1), 16) - int(m.group(3))
    # rows of a kernel number that did not exist repeat the focused one's: keep one copy
    seen, rows = set(), []
    for t in snap.threads:
        key = (t.block, t.first, t.last, t.pc)
        if key not in seen:
            seen.add(key)
            rows.append(t)
    snap.threads = rows
    return snap
