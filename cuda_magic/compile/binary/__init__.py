"""The kernel entries a compiled binary holds: the binary is the truth.

No GPU and no CUDA initialisation; pure Python over ``struct``, plus
``__cxa_demangle`` through :mod:`ctypes`.  One private module per job, this
``__init__`` composing their public names:

``_format``
    the formats (``"cubin"``, ``"ptx"``, ``"fatbin"``) and :class:`BinaryFormatError`.
``_elf``
    a cubin as ELF64 (``e_machine`` EM_CUDA = 190): sections (:func:`sections`), symbols,
    the entry mark.
``_cubin``
    a cubin's entries and parameter layouts (``.nv.info``); :func:`max_threads` (each entry's
    ``__launch_bounds__``), :func:`cluster_dims` (its ``__cluster_dims__``).
``_ptx``
    a PTX module's ``.entry`` names and ``.param`` layouts.
``_fatbin``
    a fatbin's images (:func:`fatbin_images`, :func:`fatbin_extract` through
    ``cuobjdump`` for compressed ones), the cubin for an arch (:func:`cubin_for`).
``_entries``
    :func:`entries` (named and typed :class:`Entry` records), :func:`entry_symbols`,
    :data:`NOT_THE_CELLS`, each entry's machine code (:func:`kernel_code`).
``_lines``
    source lines: the DWARF line table (:func:`line_table`) and NVIDIA's inline
    records (:func:`inline_table`).
``_demangle``
    :func:`demangle`.

C++ type spelling (:func:`split_signature`, :func:`c_type`) lives in
:mod:`cuda_magic.compile.cpptypes`, re-exported here.
"""

from ..cpptypes import c_type, split_signature
from ._demangle import demangle
from ._elf import sections
from ._cubin import cluster_dims, max_threads
from ._entries import NOT_THE_CELLS, Entry, entries, entry_symbols, kernel_code
from ._fatbin import Image, cubin_for, fatbin_extract, fatbin_images
from ._format import BinaryFormatError
from ._lines import cell_line_table, chain_of, inline_table, line_of, line_table

__all__ = ["Entry", "Image", "BinaryFormatError", "entries", "entry_symbols",
           "NOT_THE_CELLS", "demangle", "split_signature", "c_type", "fatbin_images",
           "fatbin_extract", "kernel_code", "line_table", "line_of", "inline_table",
           "cell_line_table", "chain_of", "cubin_for", "max_threads", "cluster_dims", "sections"]
