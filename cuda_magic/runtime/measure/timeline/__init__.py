"""An intra-kernel timeline: ``k.timeline[grid, block](*args)`` -> :class:`Timeline`.

Marks in the cell (``#include <cuda_magic/timeline.h>``; ``CM_RANGE_BEGIN("name")``,
``CM_RANGE_END("name")``, ``CM_MARK("name")``) compile to nothing in an ordinary build; the
instrumented build (:mod:`.build`) records one event per mark per warp, which
:mod:`.recording` launches and reads back and :mod:`.events` decodes.  See docs/timeline.md.
"""

from .events import Event, Timeline, decode, name_id

__all__ = ["Timeline", "Event", "decode", "name_id"]
