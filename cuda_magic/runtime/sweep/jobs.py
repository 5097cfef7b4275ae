"""A sweep's jobs as plain data: what one candidate needs on a GPU, and what became of it.

A :class:`Job` holds the :class:`~cuda_magic.runtime.helper.program.Program` to load (**the
bytes compiled in the notebook**, its kernels' symbols and parameters), the launches to replay
in order (their arguments as :mod:`~cuda_magic.runtime.helper.encoding` describes them), the
job's own arrays by name (NumPy; the pool adds those every job shares), which arrays are
outputs, and :func:`~cuda_magic.runtime.measure.bench.options` for timing.  An :class:`Outcome` is
the answer.  They pickle: they cross to the helpers (:mod:`.protocol`) and to Dask workers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ... import elements
from ..helper.program import Program
from ...errors import SweepError

__all__ = ["SweepError", "Launch", "Job", "Outcome"]


@dataclass(frozen=True)
class Launch:
    """One recorded launch: ``kernel`` names an entry of the job's Program; ``dims`` is grid
    + block (6 ints); each argument is ``("array", name)``, ``("value", v)``, ``("bytes", b)``
    or ``("null",)`` (:mod:`~cuda_magic.runtime.helper.encoding`)."""

    kernel: str
    dims: tuple
    shared: int
    args: tuple


@dataclass
class Job:
    """Everything one candidate needs on a GPU (see the module's docstring)."""

    index: int
    program: Program              # the binary and its kernels (python name -> Entry)
    launches: tuple               # of Launch
    outputs: tuple = ()           # names of the arrays to send back
    arrays: dict = field(default_factory=dict)   # this job's own arrays; the pool adds the shared ones
    bench: dict | None = None     # bench.options(...); None: replay once, time nothing
    timeout: float = 60.0         # seconds for the whole job on the GPU

    def formats(self) -> dict[str, str]:
        """The number format of each array a launch passes to a parameter whose C type names
        one (``{"y": "bfloat16"}`` for a ``__nv_bfloat16*``; :mod:`cuda_magic.elements`): how
        its bit patterns are read when the outputs are judged."""
        out: dict[str, str] = {}
        for launch in self.launches:
            params = self.program.kernels[launch.kernel].params
            for p, arg in zip(params, launch.args):
                fmt = elements.format_of_cpp(p.type) if p.pointer == 1 or p.reference else None
                if arg[0] == "array" and fmt:
                    out.setdefault(arg[1], fmt)
        return out


@dataclass
class Outcome:
    """What a job came to: ``status`` is ``ok``, ``fault`` (a kernel fault: its helper ended),
    ``error`` (a launch or argument failed, the helper goes on) or ``timeout``."""

    index: int
    status: str
    message: str = ""
    error: str = ""               # the CUDA error's name, when there is one
    outputs: dict = field(default_factory=dict)
    timings: tuple = ()           # one Timing per launch
    gpu: str = ""                 # which GPU ran it ("GPU 1 (NVIDIA H200)")
    seconds: float = 0.0          # wall time of the job in its helper
    checked: bool = False         # the helper compared the outputs with the reference ...
    wrong: str | None = None      # ... and found this difference (None: they match)
    wall: float = 0.0             # seconds from sending the job to its answer (this process)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def median_ms(self) -> float | None:
        """The candidate's time: the sum of its launches' medians."""
        return sum(t.median_ms for t in self.timings) if self.timings else None
