"""What a magic shows around its compiles: a live status line while they run, and when one fails,
the failed compile's view before its error stops the cell."""

from __future__ import annotations

from contextlib import contextmanager

from IPython.display import display

from ..compile.backends import CompileError
from ..compile.parallel import progress
from ..display import ErrorView
from ..display.progress import Status


@contextmanager
def compiling(shell, quiet: bool = False):
    """Around the compiles of one magic (``%%cuda``, ``%%cuda_compare``, ``%%cuda_tune``).

    While they run: a status line once a compile takes over half a second, an output updated
    in place in a notebook (a kernel's shell), a line on stderr in a terminal; none if
    ``quiet``.  A :class:`CompileError` coming out is displayed as its view (the compiler's
    log), marked ``shown`` (its traceback is then one line ending "shown above") and raised
    again, which stops the cell.
    """
    try:
        with _status(shell, quiet):
            yield
    except CompileError as exc:
        display(ErrorView(exc))
        exc.shown = True
        raise


@contextmanager
def _status(shell, quiet: bool):
    if quiet:
        yield
        return
    with Status(live=getattr(shell, "kernel", None) is not None) as status, progress(status):
        yield
