"""Kernel machine code and the SASS address -> source line table read from real cubins
(NVRTC, nvcc --cubin, nvcc --fatbin), checked against nvdisasm's ``//## File`` markers."""

import re
import struct
import subprocess

import pytest

from cuda_magic import compile_source
from cuda_magic.compile import binary as B
from cuda_magic.compile.binary import _elf, _lines
from cuda_magic.compile.backends import ToolNotFoundError, get_backend
from cuda_magic.compile.binary import (BinaryFormatError, cubin_for, kernel_code, line_of,
                                       line_table)
from cuda_magic.tools import find

from conftest import HEAVY, SAXPY

ARCH = "sm_90a"

# Two levels of forced inlining, loops, a __noinline__ callee (whole-program: copied into
# each caller's .text), an extern "C" kernel, a mangled one and a template instance.
MULTI = r'''
__device__ __forceinline__ float inner(float v) {
    return v * v + 0.5f;
}
__device__ __forceinline__ float poly(float x, int k) {
    float r = 1.0f;
    for (int j = 0; j < k; ++j)
        r = r * x + inner((float)j);
    return r;
}
__device__ __noinline__ float slow(float v) {
    return sqrtf(v) * 3.0f + v;
}
extern "C" __global__ void first(const float* x, float* y, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = poly(x[i], k);
}
__global__ void second(float* y, int n) {
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        s += y[i] * 2.0f;
    y[threadIdx.x] = s + poly(s, 3) + slow(s);
}
template <int N> __global__ void third(float* y) {
    #pragma unroll
    for (int k = 0; k < N; ++k)
        y[threadIdx.x * N + k] = slow(y[k]);
}
template __global__ void third<4>(float*);
'''

CELLS = {"saxpy": (SAXPY, []), "heavy": (HEAVY, ["--maxrregcount=24"]), "multi": (MULTI, [])}
COMPILERS = ("nvrtc", "nvcc-cubin", "nvcc-fatbin")


def _build(name: str, compiler: str, lineinfo: bool) -> bytes:
    src, extra = CELLS[name]
    flags = [*extra, *(["-lineinfo"] if lineinfo else [])]
    if compiler == "nvrtc":
        cuda = {"nvrtc": flags}
    else:
        cuda = {"compiler": "nvcc", "nvcc": flags, "target_format": compiler.split("-")[1]}
    try:
        r = compile_source(src, {"cuda": {"arch": ARCH, **cuda}})
    except ToolNotFoundError as e:
        pytest.skip(str(e))
    cubin = cubin_for(r.binary, r.format, ARCH)
    assert cubin is not None and cubin[:4] == b"\x7fELF", (compiler, r.format)
    return cubin


_BUILDS: dict = {}


def build(name: str, compiler: str, lineinfo: bool) -> bytes:
    key = (name, compiler, lineinfo)
    if key not in _BUILDS:
        _BUILDS[key] = _build(*key)
    return _BUILDS[key]


def nvdisasm(cubin: bytes, tmp_path, *flags: str) -> str:
    try:
        tool = find("nvdisasm")
    except ToolNotFoundError as e:
        pytest.skip(str(e))
    path = tmp_path / "x.cubin"
    path.write_bytes(cubin)
    return subprocess.run([tool, "-c", *flags, str(path)], capture_output=True, text=True,
                          check=True).stdout


_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_MARK = re.compile(r'//## File "([^"]*)", line (\d+)(?: inlined at "([^"]*)", line (\d+))?')
_INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/")


def markers(text: str) -> dict[str, dict[int, list[tuple[str, int, str | None, int | None]]]]:
    """kernel -> address -> the group of ``//## File`` markers in effect (the last group printed
    before it in its section; [] before any), each (file, line, inlined-at file, line)."""
    out: dict = {}
    group: list = []
    kernel, fresh = None, False
    for ln in text.splitlines():
        if m := _SECTION.match(ln):
            kernel, group, fresh = m.group(1), [], False
            out[kernel] = {}
        elif m := _MARK.search(ln):
            if not fresh:
                group, fresh = [], True
            f, n, at_f, at_n = m.groups()
            group.append((f, int(n), at_f, int(at_n) if at_n else None))
        elif kernel and (m := _INSN.match(ln)):
            fresh = False
            out[kernel][int(m.group(1), 16)] = group
    return out


def _same_file(ours: str, theirs: str) -> bool:
    """Ours is nvdisasm's, less the directory of the cell (see line_table)."""
    return ours == theirs or (not ours.startswith("/") and theirs.endswith("/" + ours))


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("name", sorted(CELLS))
def test_lines_match_nvdisasm(name, compiler, tmp_path):
    cubin = build(name, compiler, True)
    table = line_table(cubin)
    assert set(table) == set(kernel_code(cubin)) == {e.symbol for e in B.entries(cubin, "cubin")}
    for rows in table.values():
        assert rows and [r[0] for r in rows] == sorted({r[0] for r in rows})   # sorted, one per address
        assert rows[0][0] == 0 and (rows[0][1], rows[0][2]) == ("cell.cu", rows[0][2])
    plain, inlined = nvdisasm(cubin, tmp_path, "-g"), nvdisasm(cubin, tmp_path, "-g", "-gi")
    checked = nested = 0
    for text, gi in ((plain, False), (inlined, True)):
        found = markers(text)
        assert set(found) == set(table)
        for kernel, addrs in found.items():
            assert addrs and max(addrs) < len(kernel_code(cubin)[kernel])
            for address, group in addrs.items():
                got = line_of(table[kernel], address)
                if not group:
                    assert got is None, (kernel, hex(address), got)
                    continue
                # -g prints one marker: the innermost line.  -gi prints the innermost first
                # ("line N inlined at ..."), then each call site outwards, the last one bare.
                assert len(group) == 1 or gi
                assert group[-1][2] is None and all(g[2] is not None for g in group[:-1])
                file, line = group[0][:2]
                assert got is not None and got[1] == line and _same_file(got[0], file), \
                    (kernel, hex(address), got, group)
                checked += 1
                nested += len(group) > 2
                if got[0] == "cell.cu":
                    assert file.endswith("/cell.cu")
    assert checked >= 2 * sum(len(v) for v in table.values())
    if name == "multi":
        assert nested, "inner() inlined in poly() inlined in a kernel: two 'inlined at' levels"


def check_chains(cubin: bytes, tmp_path) -> tuple[int, int]:
    """inline_table against ``nvdisasm -gi``: the innermost line everywhere, the whole chain
    where nvdisasm prints one; (chains compared, the deepest)."""
    table = B.inline_table(cubin)
    assert {k: [(a, c[0]) for a, c in v] for k, v in table.items()} == \
        {k: [(a, (f, n)) for a, f, n in v] for k, v in line_table(cubin).items()}

    def same(ours, theirs):
        return ours[1] == theirs[1] and _same_file(ours[0], theirs[0])

    deep = checked = 0
    for kernel, addrs in markers(nvdisasm(cubin, tmp_path, "-g", "-gi")).items():
        before = None
        for address in sorted(addrs):
            chain = B.chain_of(table[kernel], address)
            want = [(f, n) for f, n, _, _ in addrs[address]]
            if not want:
                assert chain is None
                continue
            assert same(chain[0], want[0]), (kernel, hex(address), chain, want)
            # nvdisasm prints a new group where the innermost line changes (an unrolled
            # loop's next trip at the same line prints none): there the whole chain is its
            if chain[0] != before:
                assert len(chain) == len(want) and all(map(same, chain, want)), \
                    (kernel, hex(address), chain, want)
                checked += 1
                deep = max(deep, len(chain))
            before = chain[0]
    return checked, deep


@pytest.mark.parametrize("compiler", COMPILERS)
def test_inline_chains_match_nvdisasm(compiler, tmp_path):
    checked, deep = check_chains(build("multi", compiler, True), tmp_path)
    assert checked >= 10 and deep == 3          # inner() in poly() in a kernel
    assert B.inline_table(build("multi", compiler, False)) == {}


def test_inline_state_is_per_sequence():
    """0x90's call-site row counts from the sequence's first row; one past the rows seen so
    far (malformed) reads as not inlined, as does every row after the end of a sequence."""
    # one unit by hand: rows 1 (cell.cu:5), 2 (h.cuh:9 inlined at 1), then a new sequence
    # whose row 1 (cell.cu:7) is followed by h.cuh:3 inlined at row 2 (not yet seen), then
    # h.cuh:4 inlined at its row 1
    header = bytes([1, 1, 1, 0xFB, 14, 13]) + bytes([0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1]) + \
        b"\0" + b"cell.cu\0\0\0\0" + b"h.cuh\0\0\0\0" + b"\0"
    seq = lambda rows: b"".join(rows)
    set_addr = bytes([0, 9, 2]) + bytes(8)
    inl = lambda at: bytes([0, 3, 0x90, at, 0])
    end = bytes([0, 1, 1])
    program = seq([set_addr, bytes([3, 4, 1]),                       # line 5, copy
                   inl(1), bytes([4, 2, 3, 4, 2, 16, 1]),            # file 2, line 9, pc+16
                   end,
                   set_addr, bytes([3, 6, 1]),                       # line 7
                   inl(2), bytes([4, 2, 3, 0x7C, 2, 32, 1]),         # file 2, line 3, pc+32
                   inl(1), bytes([3, 1, 2, 16, 1]),                  # line 4 at row 1, pc+16
                   end])
    body = struct.pack("<IHI", 2 + 4 + len(header) + len(program), 3, len(header)) + header + program
    rows, calls = {}, {}
    _lines._line_unit(body, 0, "cell.cu", lambda off, stored: ("k", stored), rows, calls)
    assert rows["k"] == [(0, "cell.cu", 5), (16, "h.cuh", 9), (0, "cell.cu", 7), (32, "h.cuh", 3),
                         (48, "h.cuh", 4)]
    assert calls["k"] == [None, 0, None, None, 2]


def _source_lines(name):
    return len(CELLS[name][0].splitlines())


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("name", sorted(CELLS))
def test_lineinfo_keeps_the_code(name, compiler, tmp_path):
    with_lines, without = build(name, compiler, True), build(name, compiler, False)
    code = kernel_code(with_lines)
    assert code == kernel_code(without)
    assert all(len(c) % 128 == 0 and c for c in code.values())      # whole sections, 16-byte SASS
    assert line_table(without) == {}
    rows = [r for v in line_table(with_lines).values() for r in v]
    assert all(f != "cell.cu" or 1 <= line <= _source_lines(name) for _, f, line in rows)
    if name == "heavy":                                               # spills under 24 registers
        assert re.search(r"\bSTL\b", nvdisasm(without, tmp_path))
    if name == "multi":
        assert set(code) == {"first", "_Z6secondPfi", "_Z5thirdILi4EEvPf"}


def test_fatbin_and_cubin_agree():
    """nvcc --fatbin's sm_90a image is nvcc --cubin's code and lines."""
    for lineinfo in (True, False):
        a, b = build("multi", "nvcc-cubin", lineinfo), build("multi", "nvcc-fatbin", lineinfo)
        assert kernel_code(a) == kernel_code(b)
        assert line_table(a) == line_table(b)


def test_cubin_for():
    b = get_backend("nvcc")
    try:
        fat = b.compile(SAXPY, arch=ARCH, target_format="fatbin",
                        flags=["-gencode=arch=compute_80,code=sm_80"], ptxas=[])
        packed = b.compile(SAXPY, arch=ARCH, target_format="fatbin",
                           flags=["-Xfatbin=-compress-all"], ptxas=[])
    except ToolNotFoundError as e:
        pytest.skip(str(e))
    cubin = compile_source(SAXPY, {"cuda": {"arch": ARCH}})
    assert cubin.format == "cubin" and cubin_for(cubin.binary, "cubin", ARCH) == cubin.binary
    assert cubin_for(b".version 8.0", "ptx", ARCH) is None
    sm90 = cubin_for(fat.binary, "fatbin", ARCH)
    sm80 = cubin_for(fat.binary, "fatbin", "sm_80")
    assert sm90 and sm80 and sm90 != sm80
    assert [e.symbol for e in B.entries(sm80, "cubin")] == ["scale"]
    assert cubin_for(fat.binary, "fatbin", "sm_90") == sm90          # same number, no 'a'
    assert cubin_for(fat.binary, "fatbin", "sm_100") is None
    assert all(i.compressed for i in B.fatbin_images(packed.binary))
    assert cubin_for(packed.binary, "fatbin", ARCH) is None
    with pytest.raises(ValueError, match="fmt must be"):
        cubin_for(cubin.binary, "elf", ARCH)
    with pytest.raises(BinaryFormatError, match="expected a fatbin"):
        cubin_for(cubin.binary, "fatbin", ARCH)


def test_line_of():
    rows = [(0, "cell.cu", 3), (0x20, "cell.cu", 5), (0x40, "h.h", 1)]
    assert line_of(rows, 0) == ("cell.cu", 3)
    assert line_of(rows, 0x10) == ("cell.cu", 3)
    assert line_of(rows, 0x20) == ("cell.cu", 5)
    assert line_of(rows, 0x1000) == ("h.h", 1)
    assert line_of(rows[1:], 0x10) is None
    assert line_of([], 0) is None


# ---------------------------------------------------------------- malformed and other encodings

def _sections(cubin: bytes):
    secs = _elf.sections(cubin)
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    (shentsize,) = struct.unpack_from("<H", cubin, 0x3A)
    index = next(i for i, s in enumerate(secs) if s.name == ".debug_line")
    return secs, index, shoff + index * shentsize


def _with_size(cubin: bytes, size: int) -> bytes:
    """The cubin with .debug_line's sh_size set to ``size``."""
    _, _, header = _sections(cubin)
    out = bytearray(cubin)
    struct.pack_into("<Q", out, header + 32, size)
    return bytes(out)


def test_truncated_debug_line():
    cubin = build("multi", "nvrtc", True)
    secs, index, _ = _sections(cubin)
    full = secs[index].size
    for size in (2, 11, 30, full // 2, full - 1):
        with pytest.raises(BinaryFormatError, match=r"truncated.*\.debug_line"):
            line_table(_with_size(cubin, size))
    assert line_table(_with_size(cubin, full)) == line_table(cubin)
    with pytest.raises(BinaryFormatError, match="truncated cubin"):
        line_table(_with_size(cubin, len(cubin)))                  # past the end of the file
    with pytest.raises(BinaryFormatError):
        line_table(cubin[:len(cubin) // 2])                        # section headers cut off
    assert issubclass(BinaryFormatError, ValueError)


def _unit(cubin: bytes):
    """(.debug_line body, place) of a real cubin: ``place`` as line_table resolves addresses."""
    data = bytes(cubin)
    secs = _elf.sections(data)
    index = next(i for i, s in enumerate(secs) if s.name == ".debug_line")
    symtabs = _elf.all_symbols(data, secs)
    relocs = _lines._relocations(data, secs, index, symtabs)
    return _elf.section_bytes(data, secs[index]), \
        lambda off, stored: _lines._place(off, stored, relocs, secs, symtabs)


def _run(body: bytes, place) -> dict:
    rows: dict = {}
    at = 0
    while at < len(body):
        at = _lines._line_unit(body, at, "cell.cu", place, rows)
    return {k: sorted(set(v)) for k, v in rows.items()}


def test_dwarf_versions_and_64bit():
    """The same line program re-encoded as DWARF 2, as 4 (max ops per instruction), as 64-bit
    DWARF: the same rows; version 5 and a bad header: BinaryFormatError."""
    body, place = _unit(build("multi", "nvcc-cubin", True))
    length, version, header_length = struct.unpack_from("<IHI", body)
    assert version == 3 and 10 + header_length < len(body)
    rest, after = body[10:4 + length], body[4 + length:]
    want = _run(body, place)
    assert want and set(want) == {"first", "_Z6secondPfi", "_Z5thirdILi4EEvPf"}

    v2 = struct.pack("<IHI", length, 2, header_length) + rest + after
    assert _run(v2, place) == want
    v4 = struct.pack("<IHI", length + 1, 4, header_length + 1) + rest[:1] + b"\1" + rest[1:] + after
    assert _run(v4, lambda off, stored: place(off - 1, stored)) == want
    d64 = struct.pack("<IQHQ", 0xFFFFFFFF, length + 4, 3, header_length) + rest + after
    assert _run(d64, lambda off, stored: place(off - 12, stored)) == want

    with pytest.raises(BinaryFormatError, match="DWARF 5"):
        _run(struct.pack("<IHI", length, 5, header_length) + rest, place)
    with pytest.raises(BinaryFormatError, match="version 7"):
        _run(struct.pack("<IHI", length, 7, header_length) + rest, place)
    with pytest.raises(BinaryFormatError, match="reserved unit length"):
        _run(struct.pack("<I", 0xFFFFFFF3) + body[4:], place)
    with pytest.raises(BinaryFormatError, match="line_range 0"):
        _run(body[:13] + b"\0" + body[14:], place)                # line_range is byte 13
    with pytest.raises(BinaryFormatError, match="header length"):
        _run(struct.pack("<IHI", length, 3, length + 50) + rest, place)
    with pytest.raises(BinaryFormatError, match="no relocation"):
        _run(body, lambda off, stored: place(off + 1, stored))   # no relocation at that offset
