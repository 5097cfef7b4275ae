"""What a binary is: the three formats, their magic numbers, and the error for bytes that are
none of them (:class:`BinaryFormatError`)."""

from __future__ import annotations

import struct

from ...errors import BinaryFormatError

FORMATS = ("cubin", "ptx", "fatbin")
ELF_MAGIC = b"\x7fELF"
FATBIN_MAGIC = struct.pack("<I", 0xBA55ED50)


def as_bytes(binary) -> bytes:
    """A cubin or fatbin as ``bytes``; text is refused (it can only be PTX)."""
    if isinstance(binary, str):
        raise BinaryFormatError("a cubin or fatbin is bytes, not text")
    return bytes(binary)
