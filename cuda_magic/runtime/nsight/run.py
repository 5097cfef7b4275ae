"""One launch under Nsight Compute (``k.profile``) or compute-sanitizer (``k.check``).

Both tools run a helper process, never the notebook's: the notebook writes the
kernel's binary, **the same bytes** it loads itself, plus a small spec
(kernel, symbol, parameters, launch dimensions, the binary's sha256) and the
arguments (NumPy arrays as ``.npy``) into a private temporary directory, and
the tool starts ``python3 -m cuda_magic.runtime.nsight.child DIR``, which checks the
hash, loads the bytes with ``cuLibraryLoadData``, launches once and
synchronises (see :mod:`.launcher`).  Device arrays (CuPy, PyTorch, Numba) are
copied to the host for the child; the child's copies are written, never the
caller's arrays.  A kernel that faults ends only the child, so ``k.check`` works
after a fault has ended CUDA in the notebook.

Parsing the tools' output and the result objects are in :mod:`.reports`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading

from ... import settings, tools as _tools
from ...arrays import library
from . import reports
from ..driver import NoGPUError
from ..helper import specdir
from ..helper.encoding import EncodingError, encode, host_copy
from ..helper.program import Entry, Program
from ..helper.transport import child_env
from ...errors import (ArgumentError, ProfilerPermissionError, ToolNotFoundError, ToolRunError,
                       clip, quote)

__all__ = ["write_spec", "profile", "check", "check_hint", "ToolNotFoundError",
           "ProfilerPermissionError", "ToolRunError", "SANITIZER_TOOLS", "report_dir"]

SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")

_TIMEOUT_S = 600.0
_EXIT_SANITIZER = 86       # --error-exitcode: the sanitizer found errors


# ------------------------------------------------------------------------- the launch spec

def _symbol(kernel) -> str:
    if kernel.symbol:
        return kernel.symbol
    from ...compile.binary import entries
    from ...compile.compiler import match_symbol
    r = kernel.result
    symbols = [e.symbol for e in entries(r.binary, r.format, arch=r.arch)]
    found = match_symbol(kernel.name, symbols)
    if found is None:
        raise ArgumentError(f"kernel '{kernel.name}' is not in the compiled module (it has: "
                            f"{', '.join(symbols) or 'no kernels'})")
    return found


def _describe(a) -> str:
    mod = library(a)
    return {"cupy": "CuPy array", "torch": "PyTorch tensor"}.get(mod, type(a).__name__)


def write_spec(kernel, dims, shared: int, args, directory: str, attrs=None) -> list[str]:
    """Write what the helper process launches into ``directory``: the binary (exact bytes),
    ``spec.json``, the arguments and the launch attributes (an
    :class:`~..launch.attributes.Attributes` or None).  Returns notes for the user (device arrays copied)."""
    import numpy as np
    r = kernel.result
    if len(args) != len(kernel.params):
        raise ArgumentError(f"{kernel.name}() takes {len(kernel.params)} argument"
                            f"{'s' * (len(kernel.params) != 1)} "
                            f"({', '.join(str(p) for p in kernel.params)}), got {len(args)}")
    notes: list[str] = []
    arrays: dict = {}
    encoded = []
    for i, (p, a) in enumerate(zip(kernel.params, args)):
        def array(a, i=i, p=p):
            if not isinstance(a, np.ndarray):
                device = not (library(a) == "torch" and not getattr(a, "is_cuda", True))
                what = _describe(a)
                if a is not args[i]:                   # a TensorMap's array
                    what = f"tensor map's {what} (the map is made again over the copy)"
                try:
                    a = host_copy(a)
                except Exception as exc:
                    if not device:
                        raise
                    raise ArgumentError(f"{kernel.name}(): parameter '{p.name}': the {_describe(a)} "
                                        f"could not be copied to the host for the helper process "
                                        f"({clip(str(exc), 200)}); pass a NumPy array") from None
                if device:
                    notes.append(f"'{p.name}': the {what} was copied to the host for "
                                 f"the helper process; the kernel ran on that copy, your array is "
                                 f"unchanged")
            if a.dtype.hasobject:
                raise ArgumentError(f"{kernel.name}(): parameter '{p.name}': an object array "
                                    f"cannot cross to the helper process")
            arrays[f"arg{i}.npy"] = a
            return f"arg{i}.npy"
        try:
            encoded.append(encode(a, array))
        except EncodingError:
            raise ArgumentError(f"{kernel.name}(): parameter '{p.name}': the helper process takes "
                                f"NumPy arrays, device arrays (copied), numbers, bytes or None, not "
                                f"{type(a).__name__}") from None
    program = Program.of(r, {kernel.name: Entry(_symbol(kernel), kernel.params)},
                         prefix="launcher:")
    specdir.write(directory, program, kernel.name, dims, shared, encoded, arrays, attrs)
    return notes


def _child(directory: str) -> tuple[list[str], dict]:
    """argv and environment of the helper process (this Python, this cuda_magic)."""
    return [sys.executable, "-m", "cuda_magic.runtime.nsight.child", directory], child_env()


def _need_gpu(kernel, what: str) -> None:
    from ...compile.arch import detect_arch
    from ..driver import lost
    require_arch = getattr(kernel, "require_arch", None)
    if require_arch is not None:
        require_arch()          # an arch list without a build for this GPU: the launch's error
    if lost() is None and detect_arch() is None:     # after a fault there was a GPU: go on
        raise NoGPUError(f"{kernel.name}.{what}() needs a GPU: it runs the launch on one under "
                         f"{'Nsight Compute' if what == 'profile' else 'compute-sanitizer'}, and "
                         f"there is no NVIDIA GPU and driver here", "NO_DEVICE")


def _dims_text(dims) -> str:
    return f"{reports.short_dim(dims[:3])}, {reports.short_dim(dims[3:])}"


def _run(argv: list[str], env: dict, what: str, timeout: float) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ToolRunError(f"{what} did not finish in {timeout:.0f} s") from None
    except OSError as exc:
        raise ToolRunError(f"{what} could not start: {exc}") from None


def _child_result(directory: str) -> dict | None:
    return specdir.read_result(directory)


# ------------------------------------------------------------------------- Nsight Compute

_reports = {"dir": None, "n": 0}
_reports_lock = threading.Lock()


def report_dir() -> str:
    """The directory this session keeps its ``.ncu-rep`` files in (made on first use; kept, so
    the Nsight Compute GUI can open them: ``ncu-ui PATH``)."""
    with _reports_lock:
        if _reports["dir"] is None or not os.path.isdir(_reports["dir"]):
            _reports["dir"] = tempfile.mkdtemp(prefix="cuda-magic-ncu-")
        return _reports["dir"]


def _report_path(name: str) -> str:
    d = report_dir()
    with _reports_lock:
        _reports["n"] += 1
        n = _reports["n"]
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:60] or "kernel"
    return os.path.join(d, f"{safe}-{n}.ncu-rep")


# The sections every profile collects (besides ``set``), and the metrics read by name.
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis", "WarpStateStats",
            "SourceCounters")


def _items(value):
    """``value`` (an iterable that is not a str) as a list; None stays None; False if it is not
    iterable (an int...)."""
    if value is None:
        return None
    try:
        return list(value)
    except TypeError:
        return False


def profile(kernel, dims, shared: int, args, *, metrics=None, set: str = "default",
            clock_control: str = "base", timeout: float = _TIMEOUT_S,
            attrs=None) -> "reports.Profile":
    """Run one launch of ``kernel`` under Nsight Compute; a :class:`~.reports.Profile`."""
    items = [m.strip() for m in metrics.split(",") if m.strip()] if isinstance(metrics, str) \
        else _items(metrics)
    if items is False or (items is not None and not all(
            isinstance(m, str) and re.fullmatch(r"[\w.:-]+", m) for m in items)):
        raise ArgumentError(f"metrics={quote(metrics, 80)}: a list of Nsight Compute metric names "
                            f"(ncu --query-metrics lists them), or one comma-separated str")
    metrics = items
    if not isinstance(set, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", set):
        raise ArgumentError(f"set={quote(set, 80)}: a Nsight Compute section set (ncu --list-sets: "
                            f"basic, detailed, full, ...), or 'default'")
    if not isinstance(clock_control, str) or clock_control not in ("base", "none"):
        raise ArgumentError(f"clock_control={quote(clock_control, 80)}: 'base' (ncu's default: "
                            f"clocks locked to base) or 'none' (the clocks the GPU picks)")
    _need_gpu(kernel, "profile")
    ncu = _tools.find("ncu")
    symbol = _symbol(kernel)
    rep = _report_path(kernel.name)
    want = list(dict.fromkeys([*reports.METRICS, *(metrics or ())]))
    with tempfile.TemporaryDirectory(prefix="cuda-magic-tool-") as tmp:
        notes = write_spec(kernel, dims, shared, args, tmp, attrs)
        child, env = _child(tmp)
        argv = [ncu, "--target-processes", "all", "--kernel-name-base", "mangled",
                "--kernel-name", symbol, "--launch-count", "1", "--clock-control", clock_control,
                "--export", rep, "--force-overwrite"]
        if set != "default":
            argv += ["--set", set]
        for s in SECTIONS:
            argv += ["--section", s]
        argv += ["--metrics", ",".join(want), *child]
        proc = _run(argv, env, "ncu", timeout)
        result = _child_result(tmp)
    out = proc.stdout + proc.stderr
    _ncu_errors(out, kernel, result, rep)
    raw = _ncu_import(ncu, rep, ["--page", "raw", "--csv"], timeout)
    pages = {}
    for page, extra in (("source", ["--print-source", "sass"]), ("details", [])):
        try:
            pages[page] = _ncu_import(ncu, rep, ["--page", page, "--csv", *extra], timeout)
        except ToolRunError as exc:
            pages[page] = ""
            notes.append(f"ncu's {page} page is unavailable: {exc}")
    p = reports.parse_profile(raw, pages["source"], pages["details"], kernel=kernel.name,
                              symbol=symbol, report=rep, dims=tuple(dims), notes=notes, set=set,
                              metrics=tuple(metrics or ()), clock_control=clock_control)
    p.tool_version = _version(ncu)
    rows, note = line_rows(kernel.result, symbol, len(p.instructions))
    return reports.assign_lines(p, rows, getattr(kernel.result, "source", "") or "", note)


def _version(tool: str) -> str:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return os.path.basename(tool)
    m = re.search(r"Version\s+(\S+)", out)
    name = "Nsight Compute" if os.path.basename(tool).startswith("ncu") else "compute-sanitizer"
    return f"{name} {m.group(1)}" if m else name


def line_rows(result, symbol: str, instructions: int | None = None):
    """``(rows, note)``: the kernel's line table (``(offset, file, line)``, library code inlined
    at a cell line on that line: :func:`..compile.binary.cell_line_table`) and where it came from:
    the running binary's ``-lineinfo``, or an inspection build with ``-lineinfo`` appended whose
    machine code is byte for byte the running one's.  ``rows`` is None when no line can be
    trusted; the note then says to add ``-lineinfo``."""
    from ...compile import binary as _binary
    from ...inspect.disasm import cubin, machine_code
    from ...inspect.lines import inspection_build
    add = ('add -lineinfo to see cell lines (%%cuda --nvrtc+ "-lineinfo", or a //| nvrtc+: '
           '[-lineinfo] header)')
    try:
        running = cubin(machine_code(result))
    except Exception as exc:           # a PTX build whose cubin cannot be made here
        return None, f"no cell lines: {clip(str(exc), 200)}"
    if running is None:
        return None, "no cell lines: this build has no cubin to read a line table from"
    caveat = ""
    if result.format == "ptx":
        caveat = " (of a cubin built from the same config: the driver compiled this PTX itself)"
        size = len(_binary.kernel_code(running).get(symbol, b"")) // 16
        if instructions is not None and instructions != size:
            return None, (f"no cell lines: the driver's code for this PTX ({instructions} "
                          f"instructions) is not the cubin's ({size}); compile to cubin")
    rows = _binary.cell_line_table(running).get(symbol)
    if rows:
        return rows, "cell lines from the binary's line info (-lineinfo)" + caveat
    try:
        seen = inspection_build(result)
        elf = cubin(seen)
    except Exception as exc:
        return None, f"no cell lines: the build has no line info and a build with -lineinfo " \
                     f"failed ({clip(str(exc), 200)}); {add}"
    if elf is None or _binary.kernel_code(elf).get(symbol) != _binary.kernel_code(running).get(symbol):
        return None, (f"no cell lines: the build has no line info, and with -lineinfo added the "
                      f"machine code differs; {add}")
    rows = _binary.cell_line_table(elf).get(symbol)
    if not rows:
        return None, f"no cell lines: {add}"
    return rows, ("cell lines from an inspection build with -lineinfo added, whose machine code "
                  "is the same as the running binary's" + caveat)


def _ncu_errors(out: str, kernel, result: dict | None, rep: str) -> None:
    if "ERR_NVGPUCTRPERM" in out:
        raise ProfilerPermissionError(
            "ncu: ERR_NVGPUCTRPERM: this user may not read the GPU's performance counters. "
            "Run as root, or let every user profile: set the NVIDIA driver option "
            "NVreg_RestrictProfilingToAdminUsers=0 (a line 'options nvidia "
            "NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d/, then reload the driver or "
            "reboot; in a container, run it with --cap-add=SYS_ADMIN). "
            "See https://developer.nvidia.com/ERR_NVGPUCTRPERM")
    if result is not None and not result.get("ok"):
        raise ToolRunError(f"the launch under ncu failed: {clip(result.get('message', ''), 600)}"
                           f"{_try_check(kernel, result)}")
    if not os.path.exists(rep):
        errors = [ln for ln in out.splitlines() if "==ERROR==" in ln or "==WARNING==" in ln
                  or "launcher:" in ln or "Error" in ln]
        said = clip("\n".join(errors[-8:]) or out.strip()[-800:], 1200)
        if "No kernels were profiled" in out:
            said = f"ncu profiled no kernel named {kernel.symbol or kernel.name}\n{said}"
        raise ToolRunError(f"ncu wrote no report for {kernel.name}:\n{said}")


def _try_check(kernel, result: dict) -> str:
    if result.get("error") in reports.FAULTS:
        return f"\nTo find where: {kernel.name}.check(...) with the same launch"
    return ""


def _ncu_import(ncu: str, rep: str, options: list[str], timeout: float) -> str:
    proc = _run([ncu, "--import", rep, *options], dict(os.environ), "ncu --import", timeout)
    if proc.returncode != 0:
        raise ToolRunError(f"ncu --import {' '.join(options)} failed ({proc.returncode}): "
                           f"{clip(proc.stderr.strip() or proc.stdout.strip(), 600)}")
    return proc.stdout


# ------------------------------------------------------------------------- compute-sanitizer

def check(kernel, dims, shared: int, args, *, tool: str = "memcheck", print_limit: int = 10,
          options=(), timeout: float = _TIMEOUT_S, attrs=None) -> "reports.Check":
    """Run one launch of ``kernel`` under compute-sanitizer; a :class:`~.reports.Check`."""
    if not isinstance(tool, str) or tool not in SANITIZER_TOOLS:
        raise ArgumentError(f"tool={quote(tool, 80)}: one of {', '.join(SANITIZER_TOOLS)}")
    if isinstance(print_limit, bool) or not isinstance(print_limit, int) or print_limit < 1:
        raise ArgumentError(f"print_limit={quote(print_limit, 80)}: the most errors to report, an "
                            f"int >= 1")
    items = None if isinstance(options, str) else _items(options)
    if items is None or items is False or not all(isinstance(o, str) for o in items):
        raise ArgumentError(f"options={quote(options, 80)}: a list of compute-sanitizer flags, one "
                            f"flag per item")
    options = items
    _need_gpu(kernel, "check")
    sanitizer = _tools.find("compute-sanitizer")
    symbol = _symbol(kernel)
    with tempfile.TemporaryDirectory(prefix="cuda-magic-tool-") as tmp:
        notes = write_spec(kernel, dims, shared, args, tmp, attrs)
        child, env = _child(tmp)
        argv = [sanitizer, "--tool", tool, "--print-limit", str(print_limit),
                "--error-exitcode", str(_EXIT_SANITIZER), "--target-processes", "all",
                "--report-api-errors", "no", "--show-backtrace", "device", *options, *child]
        proc = _run(argv, env, "compute-sanitizer", timeout)
        result = _child_result(tmp)
    out = proc.stdout + proc.stderr
    if "========= ERROR SUMMARY" not in out and "COMPUTE-SANITIZER" not in out:
        raise ToolRunError(f"compute-sanitizer failed ({proc.returncode}): "
                           f"{clip(out.strip()[-800:], 1000)}")
    c = reports.parse_check(out, tool=tool, kernel=kernel.name, symbol=symbol, dims=tuple(dims),
                            notes=notes, child=result, exit_code=proc.returncode)
    c.tool_version = _version(sanitizer)
    need = any(s.line is None and s.symbol == symbol for f in c.findings for s in f.sites)
    rows, note = line_rows(kernel.result, symbol) if need else \
        (None, "cell lines from compute-sanitizer (the binary has line info)" if c.findings else "")
    return reports.assign_check_lines(c, rows, getattr(kernel.result, "source", "") or "", note)


def check_hint(kernel, dims, shared: int = 0) -> str:
    """The line a fault's message ends with: the exact ``k.check(...)`` call to find where."""
    if settings.in_tool_child():
        return ""
    names = ", ".join(p.name or f"arg{i}" for i, p in enumerate(kernel.params))
    extra = f", shared_mem={shared}" if shared else ""
    call = f"{kernel.name}.check({_dims_text(dims)}{', ' if names else ''}{names}{extra})"
    return (f"\nTo find the faulting line, block and thread, run the same launch under "
            f"compute-sanitizer (in a helper process, with NumPy arguments): {call}")


def add_check_hint(exc, kernel, dims, shared: int = 0):
    """``exc`` (a CudaError from waiting for ``kernel``) with :func:`check_hint` appended when
    it is a fault that compute-sanitizer can place (illegal address and the like)."""
    if getattr(exc, "name", "") in reports.FAULTS and exc.args:
        hint = check_hint(kernel, dims, shared)
        if hint and hint not in str(exc.args[0]):
            exc.args = (str(exc.args[0]) + hint, *exc.args[1:])
    return exc
