"""Look inside a compiled result, no GPU needed: SASS and PTX (:mod:`.disasm`), diffs between
builds (:mod:`.diff`), the cost of each source line (:mod:`.lines`) and occupancy per
architecture (:mod:`.occupancy`).  Lazy, and cached on the result."""

from .disasm import (CLASSES, cubin, has_sass, machine_code, opcode_class, ptx, sass,
                   sass_text, split_sass)

# what cuda_magic exports from here (the rest: import it from here or from .disasm)
__all__ = ["sass", "sass_text", "ptx"]
