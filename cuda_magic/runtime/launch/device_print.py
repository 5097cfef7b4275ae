"""What a kernel prints on the GPU: device ``printf`` output and the driver's assert messages,
captured from the process's file descriptors into the cell's ``sys.stdout``/``sys.stderr``,
and a failed device ``assert`` turned into its condition and cell line."""

from __future__ import annotations

import ctypes
import os
import re
import sys
import tempfile

from ..driver import CudaError

__all__ = ["captured", "assert_message"]

_libc = None


_ASSERT = re.compile(r"(?:^|/)cell\.cu:(\d+): (.*?): block: \[(\d+,\d+,\d+)\], "
                     r"thread: \[(\d+,\d+,\d+)\] Assertion `(.*)` failed", re.M)


def assert_message(printed: str, source: str) -> str | None:
    """'device assert failed at cell line N: `cond` ...' from what the GPU printed, or None."""
    m = _ASSERT.search(printed)
    if m is None:
        return None
    line, func, block, thread, cond = m.groups()
    lines = source.splitlines()
    quoted = f"\n  {int(line):>4} | {lines[int(line) - 1]}" if 0 < int(line) <= len(lines) else ""
    return (f"device assert failed at cell line {line}: `{cond}` in {func}, block ({block}), "
            f"thread ({thread}){quoted}")


def captured(run, source: str = "") -> None:
    """Run ``run`` with file descriptors 1 and 2 redirected, then write what the GPU printed to
    sys.stdout (device printf) and sys.stderr (the driver's assert messages); a failed device
    ``assert`` becomes part of the CudaError (its condition and cell line)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    _libc.fflush(None)
    saved = [os.dup(1), os.dup(2)]
    failed, texts = None, []
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            run()
        except CudaError as exc:
            failed = exc
        finally:
            _libc.fflush(None)  # the driver writes device printf through C stdio
            for fd, old, tmp, stream in ((1, saved[0], out, sys.stdout), (2, saved[1], err, sys.stderr)):
                os.dup2(old, fd)
                os.close(old)
                tmp.seek(0)
                texts.append(tmp.read().decode(errors="replace"))
                if texts[-1]:
                    stream.write(texts[-1])
                    stream.flush()
    if failed is not None:
        note = assert_message("\n".join(texts), source) if failed.name == "CUDA_ERROR_ASSERT" else None
        if note:
            raise CudaError(f"{failed}\n{note}", failed.name, failed.code) from None
        raise failed
