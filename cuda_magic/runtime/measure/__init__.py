"""Measuring: ``k.bench`` (:mod:`.bench`, its :class:`~.bench.Timing`), the statistics of its
samples (:mod:`.stats`), the GPU's peaks and clocks (:mod:`.peaks`), the session's bench history
(:mod:`.history`), and the intra-kernel timeline's host side (:mod:`.timeline`)."""
