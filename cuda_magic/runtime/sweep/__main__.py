"""``python3 -m cuda_magic.runtime.sweep``: a sweep's helper process (:mod:`.protocol`)."""

import sys

from cuda_magic.runtime.sweep import protocol

sys.exit(protocol.main())
