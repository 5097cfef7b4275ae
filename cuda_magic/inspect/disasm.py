"""Look inside a compiled result: SASS and PTX.  Lazy and cached on the result.

SASS comes from ``nvdisasm`` (found by :func:`cuda_magic.tools.find`: cuda.pathfinder,
which sees the pip wheels, then CUDA_HOME, PATH, /usr/local/cuda/bin), split per function.  For a fatbin it disassembles the fatbin's
ELF image for the build's arch, so a fatbin's SASS reads exactly as the same
build's cubin (labels, ``-lineinfo`` markers); where that image or nvdisasm is
missing, ``cuobjdump -sass`` is reshaped to nvdisasm's layout.  PTX is the
binary itself for PTX results, the PTX NVRTC made in the same run, or one
extra PTX compile under the same config.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading

from .. import tools
from ..errors import ToolNotFoundError
from ..compile.compiler import CompilationResult, NoKernelError, compile_resolved

__all__ = ["sass", "sass_text", "ptx", "split_sass", "has_sass", "cubin",
           "machine_code", "opcode_class", "CLASSES"]

_LOCK = threading.Lock()

# Opcode classes: what the SASS view colours by and the per-line table counts.
_CLASSES = (
    ("tensor", re.compile(r"U?(H|I|D|Q|B)?(MMA|GMMA)|WGMMA|UTC|HGMMA")),
    ("memory", re.compile(r"U?(LD|ST|ATOM|CCTL|SULD|SUST|SUATOM|TLD|TEX)[A-Z0-9]*|U?(RED|REDG|REDAS|"
                          r"MEMBAR|FENCE|ERRBAR|SHFL|LDGSTS|LDGDEPBAR|DEPBAR|UTMA\w*|UBLKCP|SYNCS)")),
    ("control", re.compile(r"U?(BRA|BRX|JMP|JMX|CALL|RET|EXIT|BSSY|BSYNC|BAR|WARPSYNC|NOP|YIELD|"
                           r"BPT|KILL|ELECT|BREAK|ACQBULK|ENDCOLLECTIVE|NANOSLEEP|WARPGROUP|VOTE|"
                           r"MATCH)")),
    ("float", re.compile(r"U?(F|H|D)(ADD|MUL|FMA|MNMX|SETP|SET|SEL|CHK|RND|SWZADD)|MUFU|"
                         r"[FHDI]2[FHDI]|F2FP|HADD2|HMUL2|HFMA2")),
)
CLASSES = ("memory", "float", "integer", "control", "tensor")


def opcode_class(opcode: str) -> str:
    """``"memory"``, ``"float"``, ``"control"``, ``"tensor"`` or ``"integer"`` (the rest)."""
    base = opcode.split(".", 1)[0]
    for name, pattern in _CLASSES:
        if pattern.fullmatch(base):
            return name
    return "integer"
def _run(tool: str, args: list[str], binary: bytes, suffix: str) -> str:
    with tempfile.TemporaryDirectory(prefix="cuda-magic-") as tmp:
        path = os.path.join(tmp, "module" + suffix)
        with open(path, "wb") as f:
            f.write(binary)
        proc = subprocess.run([tools.find(tool), *args, path], capture_output=True,
                              text=True, errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


_ENCODING = re.compile(r"\s*/\* 0x[0-9a-f]{16} \*/\s*$")
_CUOBJDUMP_ARCH = re.compile(r"^\s*arch = (\S+)\s*$")
_CUOBJDUMP_DROP = re.compile(r"^\s*(Fatbin \w+ code:|=+|\w[\w ]* = .*|compressed|code for \S+|"
                             r"\.(target|headerflags|elftype)\b.*|\.{6,})\s*$")


def _cuobjdump_clean(text: str, arch: str | None = None) -> str:
    """``cuobjdump -sass`` in nvdisasm's layout: each ``Function : NAME`` becomes nvdisasm's
    banner and a ``NAME:`` label; the fatbin's banners, ``code for sm_XX``, directives, the
    instruction-encoding comments and the trailing dots go.  With ``arch``, only that arch's
    ELF image is kept when the fatbin holds several."""
    blocks: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in text.splitlines():
        if line.strip().startswith("Fatbin "):
            blocks.append((None, []))
        m = _CUOBJDUMP_ARCH.match(line)
        if m and blocks[-1][0] is None:
            blocks[-1] = (m.group(1), blocks[-1][1])
        if (line.strip() and _ENCODING.fullmatch(line)) or _CUOBJDUMP_DROP.match(line):
            continue
        m = _CUOBJDUMP_FUNC.match(line)
        if m:
            blocks[-1][1].extend([f"//--------------------- .text.{m.group(1)} "
                                  f"--------------------------", f"{m.group(1)}:"])
            continue
        blocks[-1][1].append(_ENCODING.sub("", line))
    with_code = [(a, lines) for a, lines in blocks if any(l.strip() for l in lines)]
    mine = [(a, lines) for a, lines in with_code if arch is not None and a == arch]
    return _labelled([l for _, lines in (mine or with_code) for l in lines])


_ADDRESS = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/")
_BRANCH = re.compile(r"^(\s*/\*[0-9a-f]{4,}\*/\s*(?:@!?U?P\w+\s+)?(?:BRA|BRX|BSSY|SSY|PBK|PCNT|"
                     r"JMP|CALL\.REL)\b[^;]*?)\b0x([0-9a-f]+)(\s*;)")


def _labelled(lines: list[str]) -> str:
    """Branch targets as nvdisasm writes them: ``BRA 0x80 ;`` -> ``BRA `(.L_x_0) ;`` with a
    ``.L_x_0:`` line above the target (numbered in the order first referenced; targets outside
    the function keep their address)."""
    func, where = 0, []               # (function number, address or None) per line
    for line in lines:
        func += line.startswith("//---")
        m = _ADDRESS.match(line)
        where.append((func, int(m.group(1), 16) if m else None))
    code = {w for w in where if w[1] is not None}
    labels: dict[tuple[int, int], str] = {}
    out = []
    for line, (func, _) in zip(lines, where):
        m = _BRANCH.match(line)
        if m and (func, int(m.group(2), 16)) in code:
            name = labels.setdefault((func, int(m.group(2), 16)), f".L_x_{len(labels)}")
            line = f"{m.group(1)}`({name}){m.group(3)}{line[m.end():]}"
        out.append(line)
    text = []
    for line, w in zip(out, where):
        if w in labels:
            text.append(labels[w] + ":")
        text.append(line)
    return "\n".join(text).strip("\n") + "\n"


def cubin(result: CompilationResult) -> bytes | None:
    """The machine code of ``result`` as one cubin (ELF): the binary itself, or its fatbin's
    image for the build's arch (decompressed with cuobjdump when it is compressed); None for
    PTX or a fatbin without such an image."""
    from ..compile import binary as _binary
    if result.format != "fatbin":
        return _binary.cubin_for(result.binary, result.format, result.arch)
    try:
        elf = _binary.cubin_for(result.binary, "fatbin", result.arch)
        if elf is None:           # compressed SASS images: cuobjdump decompresses them
            images = list(_binary.fatbin_extract(result.binary, "elf"))
            exact = [d for a, d in images if a == result.arch]
            elf = exact[0] if exact else images[0][1] if len(images) == 1 else None
    except Exception:             # not a fatbin we can read, or no cuobjdump: the fallback says
        return None
    return elf


def _fatbin_sass(result: CompilationResult) -> str:
    binary, arch = result.binary, result.arch
    elf = cubin(result)
    if elf is not None:
        try:
            return _run("nvdisasm", ["-c", "-g", "-gi"], elf, ".cubin")
        except (ToolNotFoundError, RuntimeError):   # fall back to cuobjdump
            pass
    return _cuobjdump_clean(_run("cuobjdump", ["-sass"], binary, ".fatbin"), arch)


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


def machine_code(result: CompilationResult) -> CompilationResult:
    """``result``, or for a PTX result the cubin built under the same config (cached)."""
    if result.format != "ptx":
        return result
    fmt = "cubin"
    resolved = result.config.with_value("target_format", fmt, "sass")
    return compile_resolved(result.source, resolved, name_expressions=result.name_expressions)


def sass_text(result: CompilationResult) -> str:
    """The whole module's SASS (for a PTX result: of a cubin built under the same config)."""
    def make():
        code = machine_code(result)
        if code.format == "fatbin":
            return _fatbin_sass(code)
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
    return pick(result, funcs, kernel, "function", "in the SASS; functions")


def pick(result: CompilationResult, table: dict, kernel: str | None, what: str, where: str):
    """``table`` (keyed by the names in the binary) copied, or its entry for ``kernel`` (a name
    in the binary or a name expression given at compile time); a clear error if it has none."""
    if kernel is None:
        return dict(table)
    name = result.lowered_names.get(kernel, kernel)
    if name not in table:
        raise NoKernelError(f"no {what} {kernel!r} {where}: {', '.join(table)}")
    return table[name]


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
