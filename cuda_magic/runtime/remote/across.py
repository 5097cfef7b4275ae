"""One call on several GPUs of the cluster: ``k.bench(..., on="all")``, ``k.verify(..., on=...)``.

:func:`across` runs the same method of a kernel once per GPU, each in a thread of its own whose
launches go to that GPU (:meth:`.session.Remote.using`), all at once: GPUs of different workers
and the GPUs of one worker run side by side.  :class:`Across` is the table of what each
returned (a GPU whose call failed keeps its error, the others their results); a cell compiled
for an arch list runs on each GPU the build that fits it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ...errors import ArgumentError, Error, quote

__all__ = ["Across", "across", "chosen"]


@dataclass
class Across:
    """``method`` of ``kernel`` on each GPU: ``rows`` of ``(GPU, result or the error)``, in the
    cluster's order.  ``results()``: the GPUs that answered; ``errors()``: the others."""

    kernel: str
    method: str
    rows: list

    def results(self) -> list[tuple]:
        return [(g, r) for g, r in self.rows if not isinstance(r, BaseException)]

    def errors(self) -> list[tuple]:
        return [(g, r) for g, r in self.rows if isinstance(r, BaseException)]

    def __getitem__(self, i):
        return self.rows[i][1]

    def __len__(self) -> int:
        return len(self.rows)

    def __bool__(self) -> bool:        # verify: every GPU passed
        return all(not isinstance(r, BaseException) and bool(r) for _, r in self.rows)


def chosen(session, on) -> list:
    """The GPUs of ``session`` (a :class:`~.session.Remote`) that ``on`` names: ``"all"``, or a
    list (or one) of worker addresses, GPU names or ``"worker#index"``; an ArgumentError naming
    what matched nothing."""
    gpus = session.gpus()
    if on == "all":
        return gpus
    names = [on] if isinstance(on, str) else list(on) if isinstance(on, (list, tuple)) else None
    if not names or not all(isinstance(n, str) for n in names):
        raise ArgumentError(f"on={quote(on, 80)}: 'all', or a list of worker addresses, GPU "
                            f"names or 'worker#index'")
    out: list = []
    for n in names:
        hit = [g for g in gpus if n in (g.worker, f"{g.worker}#{g.index}", g.name)]
        if not hit:
            raise ArgumentError(f"on={quote(n, 80)}: no GPU of the cluster is that (it has: "
                                f"{', '.join(f'{g.worker}#{g.index} {g.name}' for g in gpus)})")
        out.extend(g for g in hit if g not in out)
    return out


def across(session, kernel, method: str, on, *args, **kwargs) -> Across:
    """``getattr(kernel, method)(*args, **kwargs)`` on each GPU of ``session`` that ``on``
    names, side by side."""
    gpus = chosen(session, on)

    def one(gpu):
        with session.using(gpu):
            try:
                return getattr(kernel, method)(*args, **kwargs)
            except Error as exc:         # one GPU's failure is its row, not the table's end
                return exc
    with ThreadPoolExecutor(max_workers=len(gpus), thread_name_prefix="cuda-magic on") as pool:
        rows = list(zip(gpus, pool.map(one, gpus)))
    return Across(kernel.name, method, rows)
