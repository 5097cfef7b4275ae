"""Look inside a compiled result: SASS and PTX.  Lazy and cached on the result.

SASS comes from ``nvdisasm`` (found by :func:`cuda_magic.tools.find`: cuda.pathfinder,
which sees the pip wheels, then CUDA_HOME, PATH, /usr/local/cuda/bin), split per function.  For a fatbin it disassembles the fatbin's
ELF image for the build's arch, so a fatbin's SASS reads exactly as the same
build's cubin (labels, ``-lineinfo`` markers); where that image or nvdisasm is
missing, ``cuobjdump -sass`` is reshaped to nvdisasm's layout.  PTX is the
binary itself for PTX results, the PTX NVRTC made in the same run, or one
extra PTX compile under the same config.

One nvdisasm run per cubin serves both the SASS and the per-line cost
(:mod:`.lines`): ``nvdisasm -c -plr -lrm count`` (:func:`life_ranges`) prints every
instruction with its live-register counts, and :func:`listing` makes of it what
``nvdisasm -c -g -gi`` prints: the counts dropped, the ``-lineinfo`` markers written
from the cubin's own line table (``-plr`` prints none), the alignment ``NOP``s after a
function's last instruction (which ``-plr`` leaves out) put back.  The corpus
(``tests/kernels/``, NVRTC and nvcc, with and without ``-lineinfo``) reads the same,
character for character but the spelling of file paths in markers.  Where it cannot
be sure (``-plr`` skips unreachable code, e.g. in ``-G`` builds: any gap in the
addresses), or the run fails, the plain ``-c -g -gi`` run is made instead.

Each derived value is made once: a second thread asking for it while it is being made
waits for that one (:func:`_cached`), so the background start of a view
(:func:`cuda_magic.inspect.lines.prefetch`) and a tab opened meanwhile share one run.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading

from .. import tools
from ..errors import BinaryFormatError, ListingGapError, ToolNotFoundError
from ..compile.compiler import CompilationResult, NoKernelError, compile_resolved

__all__ = ["sass", "sass_text", "ptx", "split_sass", "has_sass", "cubin",
           "machine_code", "opcode_class", "CLASSES", "life_ranges", "listing"]

_LOCK = threading.Lock()
TOOL_TIMEOUT_S = 600.0      # an nvdisasm run that takes longer is a hung one: an error
WAIT_S = 120.0              # how long a caller waits for another thread making the same value
LIFE_RANGES = ("-c", "-plr", "-lrm", "count")
PLAIN = ("-c", "-g", "-gi")

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
        try:
            proc = subprocess.run([tools.find(tool), *args, path], capture_output=True,
                                  text=True, errors="replace", timeout=TOOL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{tool} {' '.join(args)} ran past {TOOL_TIMEOUT_S:.0f} s "
                               f"and was stopped") from None
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
            return _elf_sass(result, elf)
        except (ToolNotFoundError, RuntimeError):   # fall back to cuobjdump
            pass
    return _cuobjdump_clean(_run("cuobjdump", ["-sass"], binary, ".fatbin"), arch)


def life_ranges(code: CompilationResult, elf: bytes | None = None) -> str:
    """``nvdisasm -c -plr -lrm count`` of ``code``'s cubin (``elf``: that cubin, when the
    caller has it), made once per build (cached on ``code``): what the SASS listing
    (:func:`listing`) and the per-line cost (:mod:`.lines`) are both read from."""
    def make():
        image = elf if elf is not None else cubin(code)
        if image is None:
            raise ValueError(f"no cubin to read in the {code.format} build for {code.arch}")
        return _run("nvdisasm", list(LIFE_RANGES), image, ".cubin")
    return _cached(code, "life_ranges", make)


_PLR_DECORATION = re.compile(r"^\s+//(?!#)")          # the counts' frame and legend lines
_PLR_COUNTS = re.compile(r"\s+//\s*[|+][^/]*[|+]\s*$")  # "   // |   4   |        |   2    |"
_SECTION_BANNER = re.compile(r"^//-+ (\S+)\s+-+\s*$")
_CODE_AT = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/")
_LABEL_LINE = re.compile(r"^\.?[\w.$]+:\s*$")
_STEP = 16                                          # bytes per instruction, sm_70 and later


def listing(plr: str, elf: bytes) -> str:
    """``nvdisasm -c -g -gi``'s text made from ``nvdisasm -c -plr -lrm count``'s (``plr``) of
    the cubin ``elf``: the live-register counts dropped; before an instruction whose
    innermost source line differs from the previous one's, the ``//## File "...", line N``
    markers of its inline chain (from ``.debug_line``: none without line info); after each
    function's last instruction the alignment NOPs up to its section's end.  Raises
    ValueError where ``plr`` does not hold every instruction of a function (a gap in the
    addresses, as ``-plr`` skips unreachable code) or a function's section is unknown."""
    from ..compile import binary as _binary
    chains = _binary.inline_table(elf)
    size = {s.name: s.size for s in _binary.sections(elf) if s.name.startswith(".text.")}
    out: list[str] = []
    state = {"section": None, "next": 0, "columns": False}

    def close() -> None:
        """End the function section open (NOPs to its end, two blank lines as -c has)."""
        section = state["section"]
        if section is None:
            return
        if section not in size:
            raise ListingGapError(f"no ELF section {section}")
        if not state["columns"] and state["next"]:
            raise ListingGapError(f"{section}: no live-register columns (not -plr output)")
        tail = []
        while out and (_LABEL_LINE.match(out[-1]) or not out[-1].strip()):
            tail.append(out.pop())
        out.extend(f"        /*{a:04x}*/                   NOP;"
                   for a in range(state["next"], size[section], _STEP))
        while tail and not tail[0].strip():
            tail.pop(0)
        out.extend(reversed(tail))
        out.extend(["", ""])
        state["section"] = None

    rows: dict[int, tuple] = {}
    last = None
    for line in plr.splitlines():
        m = _SECTION_BANNER.match(line)
        if m:
            close()
            name = m.group(1)
            if name.startswith(".text."):
                state.update(section=name, next=0, columns=False)
                rows, last = dict(chains.get(name[len(".text."):], ())), None
            out.append(line)
            continue
        if state["section"] is None:
            out.append(line)
            continue
        if _PLR_DECORATION.match(line):
            state["columns"] = True
            continue
        line = _PLR_COUNTS.sub("", line)
        at = _CODE_AT.match(line)
        if at:
            address = int(at.group(1), 16)
            if address != state["next"]:
                raise ListingGapError(f"{state['section']}: the instruction at "
                                      f"0x{state['next']:04x} is missing (unreachable code)")
            state["next"] = address + _STEP
            chain = rows.get(address)
            if chain and chain[0] != last:
                last = chain[0]
                out.extend(f'\t//## File "{f}", line {n} inlined at "{g}", line {k}'
                           for (f, n), (g, k) in zip(chain, chain[1:]))
                out.append(f'\t//## File "{chain[-1][0]}", line {chain[-1][1]}')
        out.append(line)
    close()
    while len(out) > 1 and not out[-1].strip() and not out[-2].strip():
        out.pop()
    return "\n".join(out) + "\n"


def _elf_sass(code: CompilationResult, elf: bytes) -> str:
    """The SASS of the cubin ``elf`` of ``code``: made from the one ``-plr`` run the per-line
    cost reads too (:func:`listing`), else (that run failed, or its text does not give
    the whole listing) one plain ``nvdisasm -c -g -gi`` run."""
    try:
        return listing(life_ranges(code, elf), elf)
    except ToolNotFoundError:
        raise
    except (RuntimeError, ValueError, BinaryFormatError):
        return _run("nvdisasm", list(PLAIN), elf, ".cubin")


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


class _Making:
    """A value some thread is making (kept in ``derived`` under ``(_Making, what)``)."""

    def __init__(self):
        self.done = threading.Event()


def _cached(result: CompilationResult, what: str, make):
    """``result.derived[what]``, made by ``make()`` the first time.  While another thread is
    making it, wait for that one (at most :data:`WAIT_S`; if it failed or is still running
    after that, make it here): one nvdisasm run, not two."""
    derived, key = result.derived, (_Making, what)
    with _LOCK:
        if what in derived:
            return derived[what]
        making = derived.get(key)
        mine = making is None
        if mine:
            making = derived[key] = _Making()
    if not mine:
        making.done.wait(WAIT_S)
        with _LOCK:
            if what in derived:
                return derived[what]
        value = make()                   # it failed (or hangs): make it here, say why here
        with _LOCK:
            return derived.setdefault(what, value)
    try:
        value = make()
    except BaseException:
        with _LOCK:
            derived.pop(key, None)
        making.done.set()
        raise
    with _LOCK:
        value = derived.setdefault(what, value)
        derived.pop(key, None)
    making.done.set()
    return value


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
        return _elf_sass(code, code.binary)
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
