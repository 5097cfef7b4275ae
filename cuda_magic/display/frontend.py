"""What the frontend can show, and a live status line in a widget pane.

:func:`in_kernel` (a Jupyter kernel: HTML and widgets can be shown), :func:`widgets_available`
(ipywidgets importable) and :func:`live` (a pane that counts the seconds while work runs) are
what every view module asks; they live here, below the views, so no view imports another's
package to ask.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from . import markup

__all__ = ["in_kernel", "widgets_available", "live"]


def in_kernel() -> bool:
    """True inside a Jupyter kernel (a frontend that can show HTML and widgets)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return getattr(get_ipython(), "kernel", None) is not None


def widgets_available() -> bool:
    """True when ipywidgets imports."""
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


@contextmanager
def live(pane, what: str, every: float = 0.25):
    """While the block runs, ``pane`` (an HTML widget) reads "⏳ what … 1.2 s", the time
    counted by a timer thread (widget updates reach the browser from any thread)."""
    started = time.monotonic()
    pane.value = markup.note(f"⏳ {what} …")
    done = threading.Event()

    def count():
        while not done.wait(every):
            pane.value = markup.note(f"⏳ {what} … {time.monotonic() - started:.1f} s")
    timer = threading.Thread(target=count, name="cuda-magic status", daemon=True)
    timer.start()
    try:
        yield
    finally:
        done.set()
        timer.join()
