"""Source lines of a cubin's machine code: the DWARF line table and NVIDIA's inline records.

``.debug_line`` (``-lineinfo`` or ``-G``) is a DWARF line program whose sequences'
addresses ``.rela.debug_line`` relocates against the kernels' symbols (:func:`line_table`);
the lines each row was inlined at come from NVIDIA's extended opcode 0x90 in the same
program (:func:`inline_table`).  One concept, the line program, read by :func:`_line_unit`.
"""

from __future__ import annotations

import bisect
import struct

from . import _elf
from ._format import BinaryFormatError, as_bytes


class _Reader:
    """Bounds-checked little-endian reads over ``data[pos:end]``; running past ``end`` raises
    :class:`BinaryFormatError` naming ``what``."""

    def __init__(self, data: bytes, pos: int, end: int, what: str):
        self.data, self.pos, self.end, self.what = data, pos, min(end, len(data)), what

    def _take(self, n: int) -> int:
        at = self.pos
        if at + n > self.end:
            raise BinaryFormatError(f"truncated or malformed {self.what}: a read at offset {at} "
                                    f"runs past its end ({self.end})")
        self.pos += n
        return at

    def u(self, n: int) -> int:
        at = self._take(n)
        return int.from_bytes(self.data[at:at + n], "little")

    def s8(self) -> int:
        v = self.u(1)
        return v - 256 if v > 127 else v

    def uleb(self) -> int:
        return self._leb(signed=False)

    def sleb(self) -> int:
        return self._leb(signed=True)

    def _leb(self, signed: bool) -> int:
        value = shift = 0
        while True:
            byte = self.u(1)
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value - (1 << shift) if signed and byte & 0x40 else value

    def cstr(self) -> str:
        end = self.data.find(b"\0", self.pos, self.end)
        if end < 0:
            self._take(self.end - self.pos + 1)          # raises
        text = self.data[self.pos:end].decode("utf-8", "replace")
        self.pos = end + 1
        return text


# DW_LNS_* standard opcodes
_LNS_COPY, _LNS_ADVANCE_PC, _LNS_ADVANCE_LINE, _LNS_SET_FILE = 1, 2, 3, 4
_LNS_CONST_ADD_PC, _LNS_FIXED_ADVANCE_PC = 8, 9
# DW_LNE_* extended opcodes
_LNE_END_SEQUENCE, _LNE_SET_ADDRESS, _LNE_DEFINE_FILE = 1, 2, 3
_LNE_INLINED_AT = 0x90                                  # NVIDIA's: see inline_table


def line_table(cubin: bytes, *, main: str = "cell.cu") -> dict[str, list[tuple[int, str, int]]]:
    """Kernel symbol -> ``(address, file, line)`` rows, sorted by address, from ``.debug_line``.

    The cubin's ``.debug_line`` (``-lineinfo`` or ``-G``) is a DWARF 2/3/4 line
    program (ptxas writes version 3, 32-bit DWARF; 64-bit DWARF is read too,
    version 5 is refused).  Each sequence starts with ``DW_LNE_set_address``
    whose 8 bytes a ``.rela.debug_line`` entry relocates against the kernel's
    symbol (``R_CUDA_64``, symbol + addend): that symbol's section is the
    kernel's ``.text.<symbol>``, the rows' addresses are offsets in it (the
    kernel's own ``__noinline__`` callees' code included), and the key is the
    entry symbol defined in that section.  Rows at one address collapse into the
    last one (the innermost inlined line, what ``nvdisasm -g`` prints); the
    ``DW_LNE_end_sequence`` row (the end address) is not a row.

    Files: the name as the table gives it, joined to its directory (``dir/name``,
    as nvdisasm prints it) unless the name is absolute or its directory is that
    of ``main`` (the compile's own file, named ``cell.cu`` by both backends:
    NVRTC's working directory, nvcc's temporary one), so the cell reads
    ``cell.cu`` and a header beside it its own name.

    NVIDIA's extended opcode 0x90 (two ULEBs) marks inlined code (see
    :func:`inline_table`); it is skipped here.  No ``.debug_line`` (a build
    without ``-lineinfo``): ``{}``.  A malformed one: :class:`BinaryFormatError`.
    """
    rows, _ = _line_rows(cubin, main)
    return {key: [r for _, r in _innermost(found)] for key, found in rows.items()}


def inline_table(cubin: bytes, *, main: str = "cell.cu"
                 ) -> dict[str, list[tuple[int, tuple[tuple[str, int], ...]]]]:
    """Kernel symbol -> ``(address, chain)`` rows, sorted by address: ``chain`` is the innermost
    ``(file, line)`` (what :func:`line_table` gives) followed by each line it was inlined at,
    outwards, the last one not inlined (``nvdisasm -gi``'s markers, in that order).

    NVIDIA's extended opcode 0x90 carries two ULEBs; the first is the 1-based number,
    within the sequence, of the row of the call site, 0 for code not inlined (the second,
    an offset in ``.debug_str``, is not read).  It sets a state, like ``DW_LNS_set_file``:
    every row after it is inlined at that row until the next 0x90 or the end of the
    sequence.  Files as in :func:`line_table`."""
    rows, calls = _line_rows(cubin, main)
    out = {}
    for key, found in rows.items():
        parent = calls[key]
        chains = []
        for i, (address, file, line) in _innermost(found):
            chain, seen = [(file, line)], {i}
            while parent[i] is not None and parent[i] not in seen:    # a loop: malformed, stop
                i = parent[i]
                seen.add(i)
                chain.append(found[i][1:])
            chains.append((address, tuple(chain)))
        out[key] = chains
    return out


def cell_line_table(cubin: bytes, *, main: str = "cell.cu"
                    ) -> dict[str, list[tuple[int, str, int]]]:
    """:func:`line_table`'s rows with each address on the innermost line of ``main`` in its
    inline chain (:func:`inline_table`): library code inlined at a cell line (a CUB call)
    counts on that line; code that reaches no cell line keeps its own row."""
    return {key: [(address, *next((at for at in chain if at[0] == main), chain[0]))
                  for address, chain in rows]
            for key, rows in inline_table(cubin, main=main).items()}


def chain_of(rows: list[tuple[int, tuple]], address: int) -> tuple[tuple[str, int], ...] | None:
    """The inline chain of the row with the greatest address <= ``address`` (rows as
    :func:`inline_table` gives them); None before the first row."""
    i = bisect.bisect_right(rows, address, key=lambda r: r[0])
    return rows[i - 1][1] if i else None


def _innermost(found: list[tuple[int, str, int]]) -> list[tuple[int, tuple[int, str, int]]]:
    """(index, row) of the last row at each address, sorted by address (stable: program order
    within an address)."""
    order = sorted(range(len(found)), key=lambda i: found[i][0])
    return [(i, found[i]) for n, i in enumerate(order)
            if n + 1 == len(order) or found[order[n + 1]][0] != found[i][0]]


def _line_rows(cubin: bytes, main: str) -> tuple[dict, dict]:
    """Kernel symbol -> rows in program order, and -> the index of each row's call site
    (None: not inlined), from ``.debug_line``."""
    data = as_bytes(cubin)
    secs = _elf.sections(data)
    where = [i for i, s in enumerate(secs) if s.name == ".debug_line"]
    if not where:
        return {}, {}
    dl = where[0]
    body = _elf.section_bytes(data, secs[dl])
    symtabs = _elf.all_symbols(data, secs)
    relocs = _relocations(data, secs, dl, symtabs)
    rows: dict[str, list[tuple[int, str, int]]] = {}
    calls: dict[str, list[int | None]] = {}
    at = 0
    while at < len(body):
        at = _line_unit(body, at, main, lambda off, stored: _place(off, stored, relocs, secs, symtabs),
                        rows, calls)
    return rows, calls


def line_of(rows: list[tuple[int, str, int]], address: int) -> tuple[str, int] | None:
    """``(file, line)`` of the row with the greatest address <= ``address``
    (rows as :func:`line_table` gives them); None before the first row."""
    i = bisect.bisect_right(rows, address, key=lambda r: r[0])
    return (rows[i - 1][1], rows[i - 1][2]) if i else None


def _relocations(data: bytes, secs: list[_elf.Section], target: int,
                 symtabs: dict[int, list[_elf.Symbol]]) -> dict[int, tuple[_elf.Symbol, int, bool]]:
    """Offset in section ``target`` -> (symbol, addend, is_rela) of its REL/RELA entries."""
    out = {}
    for s in secs:
        if s.type not in (_elf.SHT_RELA, _elf.SHT_REL) or s.info != target:
            continue
        rela = s.type == _elf.SHT_RELA
        syms = symtabs.get(s.link)
        if syms is None:
            raise BinaryFormatError(f"malformed cubin: {s.name} links to section {s.link}, "
                                    "not a symbol table")
        size = s.entsize or (24 if rela else 16)
        body = _elf.section_bytes(data, s)
        for at in range(0, len(body) - size + 1, size):
            offset, info = struct.unpack_from("<QQ", body, at)
            addend = struct.unpack_from("<q", body, at + 16)[0] if rela else 0
            if info >> 32 >= len(syms):
                raise BinaryFormatError(f"malformed cubin: {s.name} names symbol {info >> 32}, "
                                        f"past the {len(syms)} of its table")
            out[offset] = (syms[info >> 32], addend, rela)
    return out


def _place(offset: int, stored: int, relocs, secs: list[_elf.Section],
           symtabs: dict[int, list[_elf.Symbol]]) -> tuple[str, int]:
    """(kernel key, offset in its .text section) of a DW_LNE_set_address operand at ``offset``
    of .debug_line holding ``stored``."""
    if offset in relocs:
        sym, addend, rela = relocs[offset]
        if not 0 < sym.shndx < len(secs):
            raise BinaryFormatError(f"malformed .debug_line: the address at offset {offset} is "
                                    f"relocated against {sym.name or 'a symbol'} in no section")
        return _owner(sym.shndx, sym, secs, symtabs), sym.value + addend + (0 if rela else stored)
    # No relocation: the one executable section whose address range holds it (a linked image).
    hits = [i for i, s in enumerate(secs)
            if s.flags & _elf.SHF_EXECINSTR and s.addr <= stored < s.addr + s.size]
    if len(hits) != 1:
        raise BinaryFormatError(f"malformed .debug_line: the address 0x{stored:x} at offset {offset} "
                                "has no relocation and is in no single .text section")
    return _owner(hits[0], None, secs, symtabs), stored - secs[hits[0]].addr


def _owner(shndx: int, sym: _elf.Symbol | None, secs, symtabs) -> str:
    """The key of section ``shndx``: the kernel entry defined in it, else ``sym`` if it is a
    function, else a function at its start, else the section name less ``.text.``."""
    defined = [s for syms in symtabs.values() for s in syms if s.shndx == shndx]
    for pick in ([s for s in defined if _elf.is_entry(s)],
                 [sym] if sym is not None and sym.info & 0xF == _elf.STT_FUNC else [],
                 [s for s in defined if s.info & 0xF == _elf.STT_FUNC and s.value == 0]):
        if pick:
            return pick[0].name
    name = secs[shndx].name
    return name[len(".text."):] if name.startswith(".text.") else name


def _line_unit(body: bytes, at: int, main: str, place, rows: dict, calls: dict | None = None) -> int:
    """Run the line program of the unit at ``at``; add its rows to ``rows`` (and to ``calls``
    the index in ``rows[key]`` of each row's call site, None when not inlined); the next
    unit's offset."""
    what = f".debug_line (unit at offset {at})"
    r = _Reader(body, at, len(body), what)
    length, offsize = r.u(4), 4
    if length == 0xFFFFFFFF:
        length, offsize = r.u(8), 8
    elif length >= 0xFFFFFFF0:
        raise BinaryFormatError(f"malformed {what}: reserved unit length 0x{length:x}")
    end = r.pos + length
    if end > len(body):
        raise BinaryFormatError(f"truncated {what}: the unit's {length} bytes run past the "
                                f"section's end ({len(body)})")
    r.end = end
    version = r.u(2)
    if version == 5:
        raise BinaryFormatError(f"{what}: DWARF 5 line tables are not supported (2-4 are)")
    if version not in (2, 3, 4):
        raise BinaryFormatError(f"malformed {what}: DWARF version {version}")
    header_length = r.u(offsize)
    program = r.pos + header_length
    min_inst = r.u(1)
    max_ops = r.u(1) if version >= 4 else 1
    r.u(1)                                              # default_is_stmt
    line_base, line_range, opcode_base = r.s8(), r.u(1), r.u(1)
    if program > end:
        raise BinaryFormatError(f"truncated or malformed {what}: header length {header_length} "
                                f"runs past the unit's end")
    if not line_range or not max_ops or not opcode_base:
        raise BinaryFormatError(f"malformed {what}: line_range {line_range}, "
                                f"max ops per instruction {max_ops}, opcode_base {opcode_base}")
    lengths = [r.u(1) for _ in range(opcode_base - 1)]
    dirs = []
    while (d := r.cstr()):
        dirs.append(d)
    files: list[tuple[str, int]] = []

    def read_file():
        name = r.cstr()
        if name:
            index = r.uleb()
            r.uleb(), r.uleb()                          # mtime, size
            files.append((name, index))
        return name

    while read_file():
        pass
    main_dir = next((d for n, d in files if n == main), None)

    def file_name(index: int) -> str:
        if not 0 < index <= len(files):
            raise BinaryFormatError(f"malformed {what}: file {index} of {len(files)}")
        name, d = files[index - 1]
        if name.startswith("/") or d == 0 or d == main_dir:
            return name
        if d > len(dirs):
            raise BinaryFormatError(f"malformed {what}: directory {d} of {len(dirs)}")
        return dirs[d - 1].rstrip("/") + "/" + name

    r.pos = program
    key = None

    address, op_index, file, line = 0, 0, 1, 1
    base = inlined = 0             # the sequence's first row in rows[key]; 0x90's call-site row

    def advance(ops: int):
        nonlocal address, op_index
        total = op_index + ops
        address += min_inst * (total // max_ops)
        op_index = total % max_ops

    def emit():
        if key is None:
            raise BinaryFormatError(f"malformed {what}: a row at offset {r.pos} before any "
                                    "DW_LNE_set_address")
        found = rows.setdefault(key, [])
        if calls is not None:                          # a call site not yet seen: not inlined
            calls.setdefault(key, []).append(base + inlined - 1
                                             if 0 < inlined <= len(found) - base else None)
        found.append((address, file_name(file), line))

    while r.pos < end:
        op = r.u(1)
        if op >= opcode_base:                           # special opcode
            adjusted = op - opcode_base
            advance(adjusted // line_range)
            line += line_base + adjusted % line_range
            emit()
        elif op == 0:                                   # extended opcode
            size = r.uleb()
            if size == 0:
                continue
            start = r.pos
            sub = r.u(1)
            if sub == _LNE_END_SEQUENCE:
                key = None
                address, op_index, file, line, inlined = 0, 0, 1, 1, 0
            elif sub == _LNE_SET_ADDRESS:
                if size - 1 not in (4, 8):
                    raise BinaryFormatError(f"malformed {what}: a {size - 1}-byte address at "
                                            f"offset {r.pos}")
                fresh = key is None
                key, address = place(r.pos, r.u(size - 1))
                op_index = 0
                if fresh:
                    base = len(rows.get(key, ()))
            elif sub == _LNE_DEFINE_FILE:
                read_file()
            elif sub == _LNE_INLINED_AT:
                inlined = r.uleb()                      # then an offset in .debug_str
            r.pos = start + size                        # skips unknown ones (discriminator)
            if r.pos > end:
                raise BinaryFormatError(f"truncated {what}: extended opcode 0x{sub:x} at offset "
                                        f"{start} runs past the unit's end")
        elif op == _LNS_COPY:
            emit()
        elif op == _LNS_ADVANCE_PC:
            advance(r.uleb())
        elif op == _LNS_ADVANCE_LINE:
            line += r.sleb()
        elif op == _LNS_SET_FILE:
            file = r.uleb()
        elif op == _LNS_CONST_ADD_PC:
            advance((255 - opcode_base) // line_range)
        elif op == _LNS_FIXED_ADVANCE_PC:
            address += r.u(2)
            op_index = 0
        else:                          # set_column, negate_stmt, set_isa, flags, unknown ones
            for _ in range(lengths[op - 1]):
                r.uleb()
    return end
