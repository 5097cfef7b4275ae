"""A live status line for slow work: "compiling with nvcc… 1.2 s".

Nothing shows for work under :data:`DELAY` seconds.  In a notebook the line is an
output updated in place (and emptied when the work ends, the result's view says how
long it took); in a terminal it is one line on stderr, finished with where the work got to
(when it said more since: "tuning: 0/12 builds compiled… tuning: 12/12 builds compiled: 3.1 s")
and the time taken.
"""

from __future__ import annotations

import html
import sys
import time

__all__ = ["Status", "DELAY"]

DELAY = 0.5     # seconds of work before the status shows
EVERY = 0.2     # seconds between updates of a notebook's status line


class Status:
    """Called as ``status(what, seconds)`` while work runs (a :func:`progress` listener);
    ``live`` (a notebook) updates an output in place, otherwise one terminal line."""

    def __init__(self, live: bool, stream=None):
        self.live, self.stream = live, stream
        self.handle = None          # the notebook output, once shown
        self.shown_at: float | None = None
        self.started = time.monotonic()
        self.what = ""              # what the line shows
        self.latest = ""            # what the work said last

    def __call__(self, what: str, seconds: float) -> None:
        self.latest = what
        if seconds < DELAY:
            return
        if not self.live:           # one line, printed once; close() ends it
            if self.handle is None:
                self.handle, self.what = True, what
                print(f"{what}…", end="", file=self.stream or sys.stderr, flush=True)
            return
        now = time.monotonic()
        if self.shown_at is not None and now - self.shown_at < EVERY and what == self.what:
            return
        self.what, self.shown_at = what, now
        from IPython.display import HTML, display
        line = f"{what}… {seconds:.1f} s"
        bundle = HTML(f'<div style="font-family: monospace; opacity: 0.7">{html.escape(line)}</div>')
        if self.handle is None:
            self.handle = display(bundle, display_id=True)
        else:
            self.handle.update(bundle)

    def close(self) -> None:
        """End the status: a notebook's line is emptied, a terminal's gets the time taken."""
        if self.handle is None:
            return
        if self.live:
            from IPython.display import HTML
            self.handle.update(HTML(""))
        else:       # the line was printed once: it ends with where the work got to, if further
            end = f" {self.latest}:" if self.latest != self.what else ""
            print(f"{end} {time.monotonic() - self.started:.1f} s",
                  file=self.stream or sys.stderr, flush=True)
        self.handle = None

    def __enter__(self) -> "Status":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
