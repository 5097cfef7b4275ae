"""Look inside a compiled result: SASS and PTX.  Lazy and cached on the result.

SASS comes from ``nvdisasm`` for cubins and ``cuobjdump -sass`` for fatbins
(both found with :mod:`cuda.pathfinder`, which sees the pip wheels), split
per function.  PTX is the binary itself for PTX results, the PTX NVRTC made
in the same run, or one extra PTX compile under the same config.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading

from .compile.backends import ToolNotFoundError
from .compile.compiler import CompilationResult, compile_resolved

__all__ = ["sass", "sass_text", "ptx", "find_tool", "split_sass", "has_sass"]

_LOCK = threading.Lock()
_WHEELS = {"nvdisasm": "nvidia-cuda-nvdisasm", "cuobjdump": "nvidia-cuda-cuobjdump"}


def find_tool(name: str) -> str:
    """Path of a CUDA binary utility, or :class:`ToolNotFoundError` saying how to install it."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
        path = find_nvidia_binary_utility(name)
    except Exception:
        path = None
    if not path:
        raise ToolNotFoundError(f"{name} was not found; install it with "
                                f"pip install {_WHEELS.get(name, name)}")
    return path


def _run(tool: str, args: list[str], binary: bytes, suffix: str) -> str:
    with tempfile.TemporaryDirectory(prefix="cuda-magic-") as tmp:
        path = os.path.join(tmp, "module" + suffix)
        with open(path, "wb") as f:
            f.write(binary)
        proc = subprocess.run([find_tool(tool), *args, path], capture_output=True,
                              text=True, errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


_ENCODING = re.compile(r"\s*/\* 0x[0-9a-f]{16} \*/\s*$")


def _cuobjdump_clean(text: str) -> str:
    """Drop the instruction-encoding comments cuobjdump prints beside each instruction."""
    lines = []
    for line in text.splitlines():
        if line.strip() and _ENCODING.fullmatch(line):
            continue
        lines.append(_ENCODING.sub("", line))
    return "\n".join(lines)


# -lineinfo markers name the source by the compiler's working directory (NVRTC:
# the process's cwd; nvcc: a removed temporary directory); show it as cell.cu.
_LINE_FILE = re.compile(r'(//## File )"[^"]*/cell\.cu"')
_NVDISASM_BANNER = re.compile(r"^//-+ (\S+)\s+-+\s*$")
_CUOBJDUMP_FUNC = re.compile(r"^\s*Function : (\S+)\s*$")


def split_sass(text: str) -> dict[str, str]:
    """Split a whole-module disassembly into ``{function name: text}``."""
    funcs: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        m = _NVDISASM_BANNER.match(line)
        if m:
            current = m.group(1)[len(".text."):] if m.group(1).startswith(".text.") else None
            if current is not None:
                funcs.setdefault(current, [])
        m = _CUOBJDUMP_FUNC.match(line)
        if m:
            current = m.group(1)
            funcs.setdefault(current, [])
        if current is not None:
            funcs[current].append(line)
    return {name: "\n".join(lines).strip("\n") + "\n" for name, lines in funcs.items()}


def _cached(result: CompilationResult, what: str, make):
    with _LOCK:
        if what in result.derived:
            return result.derived[what]
    value = make()
    with _LOCK:
        return result.derived.setdefault(what, value)


def _machine_code(result: CompilationResult) -> CompilationResult:
    if result.format != "ptx":
        return result
    fmt = "cubin"
    resolved = result.config.with_value("target_format", fmt, "sass")
    return compile_resolved(result.source, resolved, name_expressions=result.name_expressions)


def sass_text(result: CompilationResult) -> str:
    """The whole module's SASS (for a PTX result: of a cubin built under the same config)."""
    def make():
        code = _machine_code(result)
        if code.format == "fatbin":
            return _cuobjdump_clean(_run("cuobjdump", ["-sass"], code.binary, ".fatbin"))
        return _run("nvdisasm", ["-c", "-g", "-gi"], code.binary, ".cubin")
    return _cached(result, "sass", lambda: _LINE_FILE.sub(r'\1"cell.cu"', make()))


def has_sass(result: CompilationResult) -> bool:
    """Whether :func:`sass` would answer without running a tool."""
    return "sass" in result.derived


def sass(result: CompilationResult, kernel: str | None = None):
    """SASS per function: ``{name: text}``, or one function's text with ``kernel``.

    ``kernel`` may be the name in the binary (mangled for C++) or a name
    expression given at compile time (e.g. ``"add<float>"``).
    """
    funcs = _cached(result, "sass_split", lambda: split_sass(sass_text(result)))
    if kernel is None:
        return dict(funcs)
    name = result.lowered_names.get(kernel, kernel)
    if name not in funcs:
        raise KeyError(f"no function {kernel!r} in the SASS; functions: {', '.join(funcs)}")
    return funcs[name]


def ptx(result: CompilationResult) -> str:
    """The PTX of ``result`` (compiled once more under the same config if needed)."""
    def make():
        if result.format == "ptx":
            return result.binary.decode("utf-8", "replace")
        if result.ptx_text is not None:
            return result.ptx_text
        resolved = result.config.with_value("target_format", "ptx", "ptx")
        return compile_resolved(result.source, resolved,
                                name_expressions=result.name_expressions).binary.decode("utf-8", "replace")
    return _cached(result, "ptx", make)
