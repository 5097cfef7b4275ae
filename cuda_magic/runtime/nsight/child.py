"""The helper process that Nsight Compute and compute-sanitizer watch: one launch, then exit.

    python3 -m cuda_magic.runtime.nsight.child SPEC_DIR [--dry-run]

``SPEC_DIR`` (written by :func:`cuda_magic.runtime.nsight.run.write_spec`, laid out by
:mod:`.helper.specdir`) holds the kernel's binary exactly as the notebook has it
(``module.cubin``, ``.fatbin`` or ``.ptx``), ``spec.json`` (kernel, symbol, parameters, launch
dimensions, the binary's sha256) and one ``argN.npy`` per array argument.  The child checks the
hash, loads the bytes with ``cuLibraryLoadData`` (``driver.load``), marshals the
arguments with the same :class:`~cuda_magic.runtime.launch.packer.Packer` a notebook
launch uses, launches once and synchronises.  ``--dry-run`` stops before CUDA
and prints what it would launch (JSON), for tests.

Exit status: 0 launched and finished; 2 the launch (or a tensor map made again over the
copy of its array) failed (the CUDA error is on stderr and in ``result.json``); 3 the spec is
unreadable or the binary's hash differs.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

from ...settings import TOOL_CHILD as CHILD_ENV   # set in the child: no "try k.check" hint there
from .. import driver
from ..helper.specdir import Loaded, SpecError, read as read_spec, write_result
from ..launch.kernel import Kernel

__all__ = ["main", "launch", "read_spec", "CHILD_ENV"]


def launch(loaded: Loaded) -> None:
    """Load the bytes, launch once on the legacy default stream, wait for the kernel."""
    entry = loaded.program.kernels[loaded.name]
    k = Kernel(loaded.name, entry.params, loaded.program, entry.symbol, False)
    k.launch_raw(loaded.dims, loaded.shared, 0, tuple(loaded.args), loaded.attrs)
    driver.synchronize()


def _summary(loaded: Loaded) -> dict:
    def one(a):
        if hasattr(a, "dtype") and hasattr(a, "shape"):
            return {"array": str(a.dtype), "shape": list(a.shape),
                    "sha256": hashlib.sha256(a.tobytes()).hexdigest()}
        return {"bytes": a.hex()} if isinstance(a, bytes) else {"value": a}
    return {"kernel": loaded.name, "symbol": loaded.symbol, "format": loaded.format,
            "arch": loaded.arch, "sha256": loaded.sha256, "size": len(loaded.binary),
            "dims": list(loaded.dims), "shared": loaded.shared,
            "args": [one(a) for a in loaded.args],
            "attrs": None if loaded.attrs is None else loaded.attrs.to_json()}


def _failed(directory: str, what: str, exc: Exception) -> int:
    """Say why on stderr and in ``result.json``; the exit status 2."""
    name = getattr(exc, "name", "") or type(exc).__name__
    message = str(exc).replace(driver.LOST_NOTE, "")
    print(f"cuda-magic launcher: {what}: {message}", file=sys.stderr)
    write_result(directory, {"ok": False, "error": name, "message": message[:2000]})
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    dry = "--dry-run" in argv
    rest = [a for a in argv if a != "--dry-run"]
    if len(rest) != 1:
        print("usage: python3 -m cuda_magic.runtime.nsight.child SPEC_DIR [--dry-run]", file=sys.stderr)
        return 3
    directory = rest[0]
    os.environ[CHILD_ENV] = "1"
    try:
        loaded = read_spec(directory)
    except SpecError as exc:
        print(f"cuda-magic launcher: {exc}", file=sys.stderr)
        return 3
    except Exception as exc:   # an argument made again on the GPU (a tensor map) failed
        return _failed(directory, rest[0], exc)
    if dry:
        print(json.dumps(_summary(loaded)))
        return 0
    try:
        launch(loaded)
    except Exception as exc:   # the launch failed: the tool's report says why; we say what
        return _failed(directory, loaded.name, exc)
    write_result(directory, {"ok": True, "sha256": loaded.sha256})
    return 0


if __name__ == "__main__":
    sys.exit(main())
