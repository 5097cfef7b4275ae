"""Framed pickles over a pipe: how the notebook and a helper process talk.

Each message is one pickle behind its length (8 bytes, little-endian).  The helper is
``python3 -m MODULE`` (:func:`spawn`) with the protocol on its stdin and stdout; in the helper
:func:`serving` keeps the original stdout for the frames and points fd 1 at stderr, so whatever
the kernels or libraries print cannot corrupt a frame.  :func:`recv` waits until a deadline
if given (``TimeoutError``); a stream that ends between frames is an ``EOFError``, one that
ends inside a frame a :class:`StreamEnded` (an ``EOFError`` too) saying how much was missing.

The worker (:mod:`..worker`) and the sweep's helpers (:mod:`..sweep`) use this.  The launch
that Nsight Compute or compute-sanitizer watches cannot: the tool starts that process itself
and owns its stdin and stdout (its own report goes there), so it reads a spec directory
instead (:mod:`.specdir`, the documented ``python3 -m cuda_magic.runtime.nsight.child SPEC_DIR``).
"""

from __future__ import annotations

import fcntl
import os
import pickle
import select
import struct
import subprocess
import sys
import time

from ...settings import TOOL_CHILD
from ...errors import StreamEnded

__all__ = ["FRAME", "StreamEnded", "send", "recv", "read", "spawn", "serving", "child_env", "visible_device"]

FRAME = struct.Struct("<Q")
PIPE_BYTES = 1 << 20        # a helper's pipes (Linux F_SETPIPE_SZ; the default is 64 KiB)
_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def send(fd: int, obj) -> None:
    """Write ``obj`` as one frame."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    for view in (memoryview(FRAME.pack(len(data))), memoryview(data)):   # no joined copy
        while view:
            n = os.write(fd, view)
            view = view[n:]


def read(fd: int, n: int, deadline: float | None, what: str = "a frame") -> bytearray:
    """Exactly ``n`` bytes (as many reads as it takes); ``TimeoutError`` past ``deadline``
    (``time.monotonic()``), ``EOFError`` at the end of the stream before the first byte,
    :class:`StreamEnded` after it."""
    buf = bytearray(n)              # read in place: no chunks joined afterwards
    view, left = memoryview(buf), n
    while left:
        if deadline is not None:
            wait_s = deadline - time.monotonic()
            if wait_s <= 0 or not select.select([fd], [], [], wait_s)[0]:
                raise TimeoutError
        got = os.readv(fd, [view[n - left:]])
        if not got:
            if left == n:
                raise EOFError
            raise StreamEnded(f"the stream ended inside {what}: {n - left} of {n} bytes came")
        left -= got
    return buf


def recv(fd: int, deadline: float | None = None):
    """The next frame's object (see :func:`read` for the errors)."""
    head = read(fd, FRAME.size, deadline, "a frame's length")
    (n,) = FRAME.unpack(head)
    try:
        body = read(fd, n, deadline)
    except StreamEnded:
        raise
    except EOFError:
        raise StreamEnded(f"the stream ended after a frame's length: 0 of {n} bytes came") from None
    return pickle.loads(body)


def child_env(tool_child: bool = True, **extra: str) -> dict:
    """The environment of a helper process: this one's, with this cuda_magic first on
    PYTHONPATH, ``settings.TOOL_CHILD`` set (unless ``tool_child=False``: the worker, whose
    faults should still say how to find them with ``k.check``), and ``extra`` on top."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    if tool_child:
        env[TOOL_CHILD] = "1"
    env.update(extra)
    return env


def visible_device(index: int) -> str:
    """The ``CUDA_VISIBLE_DEVICES`` value that shows a child process only this process's GPU
    ``index`` (as this process counts them): its entry in this process's own
    ``CUDA_VISIBLE_DEVICES`` list (``"3,1"``: GPU 1 is ``"1"``, GPU 0 is ``"3"``; a UUID stays a
    UUID), else the index itself."""
    mine = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if "CUDA_VISIBLE_DEVICES" in os.environ and 0 <= index < len(mine):
        return mine[index]
    return str(index)


def spawn(module: str, env: dict, stderr=None) -> subprocess.Popen:
    """``python3 -m module`` with pipes on stdin and stdout (``stderr``: where its stderr goes;
    None: this process's)."""
    proc = subprocess.Popen([sys.executable, "-m", module], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=stderr, env=env)
    for pipe in (proc.stdin, proc.stdout):     # 1 MiB pipes: big arrays cross in fewer turns
        try:
            fcntl.fcntl(pipe.fileno(), _SETPIPE_SZ, PIPE_BYTES)
        except OSError:                        # not Linux, or over /proc/sys/fs/pipe-max-size
            pass
    return proc


def serving() -> tuple[int, int]:
    """In the helper: the protocol's (input, output) file descriptors; fd 1 now writes to
    stderr, so nothing printed reaches the frames."""
    out = os.dup(1)
    os.dup2(2, 1)
    return 0, out
