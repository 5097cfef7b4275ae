"""The judge of a sweep's outcomes: each benched candidate's status from its outcome, and its
outputs checked against the reference (the given arrays, as the bits the helpers send back, or
the outputs of the first candidate that ran), as the outcomes arrive.  Each output is read in
the number format its parameter's C type names (a ``__nv_bfloat16*`` output as bfloat16, not
as the ints holding its bits), so ``--rtol``/``--atol`` mean what they mean to
``%%cuda_compare`` and ``k.verify``."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..errors import TuneError
from ..runtime import sweep
from ..arrays import is_array
from ..runtime.helper.encoding import host_copy
from ..correctness.reference import first_difference, references
from .candidates import Candidate

__all__ = ["Judge", "reference_bits"]


def reference_bits(reference):
    """The expected arrays on the host as the bits the helpers send back (a bfloat16 tensor as
    ``uint16``: :func:`~cuda_magic.runtime.helper.encoding.host_copy`), so like is judged with
    like."""
    if reference is None:
        return None
    if isinstance(reference, Mapping):
        return {str(k): _bits(str(k), v) for k, v in reference.items()}
    if is_array(reference):
        return {"": _bits("reference", reference)}
    raise TuneError(f"--reference (reference=) takes {{array name: expected array}} or one array, not "
                    f"{type(reference).__name__}")


def _bits(name: str, a) -> np.ndarray:
    try:
        return np.asarray(host_copy(a))
    except Exception as exc:
        raise TuneError(f"--reference: cannot read array {name!r} ({type(a).__name__}) to the "
                        f"host: {exc}") from None


class Judge:
    """Each benched candidate's status from its outcome, and its outputs against the reference,
    as the outcomes arrive: the reference is the given one, or the outputs of the lowest-index
    candidate that ran, known once every candidate before it has its outcome."""

    def __init__(self, candidates: Sequence[Candidate], reference, rtol, atol, pool=None):
        self.by_index = {c.index: c for c in candidates}
        self.order: list[int] = []          # the benched candidates, by index
        self.ref = reference
        self.rtol, self.atol = rtol, atol
        self.pending: list[Candidate] = []  # ran, not yet checked
        self.pool = pool                    # told the reference: helpers then check the outputs
        self.told = False
        self.refs = None                    # the reference, ready to check with
        self.formats: dict[str, str] = {}   # each output's number format, from its C type

    def expect(self, c: Candidate, job: sweep.Job) -> None:
        self.order.append(c.index)
        for name, fmt in job.formats().items():
            self.formats.setdefault(name, fmt)
        if self.ref is not None and "" in self.ref and len(self.ref) == 1 and len(job.outputs) == 1:
            self.ref = {job.outputs[0]: self.ref[""]}      # one array given: the one output
        self._tell()

    def _tell(self) -> None:
        if self.ref is not None and not self.told and self.pool is not None and "" not in self.ref:
            self.pool.set_reference(self.ref, self.rtol, self.atol, self.formats)
            self.told = True

    def add(self, c: Candidate, o: sweep.Outcome) -> None:
        c.outcome, c.gpu = o, o.gpu
        if not o.ok:
            named = o.error and o.error not in o.message
            c.status, c.reason = o.status, f"{o.error + ': ' if named else ''}{o.message}"
            return
        c.status, c.time_ms = "ok", o.median_ms
        c.samples_ms = tuple(map(sum, zip(*(t.samples_ms for t in o.timings))))
        if o.checked:                       # its helper compared the outputs already
            self._verdict(c, o.wrong)
        else:
            self.pending.append(c)

    def settle(self) -> None:
        if self.ref is None:
            for i in sorted(self.order):
                c = self.by_index[i]
                if c.outcome is None:
                    return                  # an earlier candidate may still be the reference
                if c.status == "ok":
                    self.ref = dict(c.outcome.outputs)
                    c.reason = "the reference (first candidate that ran)"
                    break
            if self.ref is None:
                return
            self._tell()
        for c in self.pending:
            self._check(c)
        self.pending = []

    def _check(self, c: Candidate) -> None:
        outs = c.outcome.outputs
        expected = self.ref
        if "" in expected and len(expected) == 1:
            if len(outs) != 1:
                c.status, c.reason = "error", (f"reference= is one array but --run has "
                                               f"{len(outs)} outputs ({', '.join(outs)}): give "
                                               f"{{name: array}}")
                return
            expected = {next(iter(outs)): expected[""]}
        if self.refs is None or set(self.refs) != set(expected):
            self.refs = references(expected, self.rtol, self.atol, self.formats)
        self._verdict(c, first_difference(outs, self.refs))

    @staticmethod
    def _verdict(c: Candidate, wrong: str | None) -> None:
        if wrong:
            c.status, c.reason = "wrong", wrong
            return
        if c.time_ms:
            seconds = c.time_ms / 1e3
            c.gbps = c.nbytes / seconds / 1e9 if c.nbytes else None
            c.tflops = c.flops / seconds / 1e12 if c.flops else None
