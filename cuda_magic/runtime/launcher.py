"""The helper process that Nsight Compute and compute-sanitizer watch: one launch, then exit.

    python3 -m cuda_magic.runtime.launcher SPEC_DIR [--dry-run]

``SPEC_DIR`` (written by :func:`cuda_magic.runtime.tools.write_spec`) holds the
kernel's binary exactly as the notebook has it (``module.cubin``, ``.fatbin`` or
``.ptx``), ``spec.json`` (kernel, symbol, parameters, launch dimensions, the
binary's sha256) and one ``argN.npy`` per array argument.  The child checks the
hash, loads the bytes with ``cuLibraryLoadData`` (``driver.load``), marshals the
arguments with the same :class:`~cuda_magic.runtime.args.Packer` a notebook
launch uses, launches once and synchronises.  ``--dry-run`` stops before CUDA
and prints what it would launch (JSON), for tests.

Exit status: 0 launched and finished; 2 the launch failed (the CUDA error is on
stderr and in ``result.json``); 3 the spec is unreadable or the binary's hash
differs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys

from ..settings import TOOL_CHILD as CHILD_ENV   # set in the child: no "try k.check" hint there

SPEC = "spec.json"
RESULT = "result.json"
BINARY = {"cubin": "module.cubin", "fatbin": "module.fatbin", "ptx": "module.ptx"}
VERSION = 1


def child_env(**extra: str) -> dict:
    """The environment of a helper process: this one's, with this cuda_magic first on
    PYTHONPATH, :data:`CHILD_ENV` set, and ``extra`` on top."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env[CHILD_ENV] = "1"
    env.update(extra)
    return env


class SpecError(Exception):
    """The spec directory is unreadable or the binary is not the one the spec names."""


@dataclasses.dataclass
class Loaded:
    """A spec read back: what the child launches."""

    name: str
    symbol: str
    format: str
    arch: str
    binary: bytes
    sha256: str
    params: tuple
    dims: tuple
    shared: int
    args: list
    source: str = ""


def read_spec(directory: str) -> Loaded:
    """Read ``spec.json``, the binary and the arguments; :class:`SpecError` if anything is off."""
    from .types import Param
    try:
        with open(os.path.join(directory, SPEC), encoding="utf-8") as f:
            spec = json.load(f)
        if spec.get("version") != VERSION:
            raise SpecError(f"spec version {spec.get('version')!r}, expected {VERSION}")
        fmt = spec["format"]
        with open(os.path.join(directory, BINARY[fmt]), "rb") as f:
            binary = f.read()
        source = ""
        if os.path.exists(os.path.join(directory, "cell.cu")):
            with open(os.path.join(directory, "cell.cu"), encoding="utf-8") as f:
                source = f.read()
        params = tuple(Param(**p) for p in spec["params"])
        args = [_arg(directory, a) for a in spec["args"]]
    except SpecError:
        raise
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise SpecError(f"unreadable launch spec in {directory}: {type(exc).__name__}: {exc}") from None
    digest = hashlib.sha256(binary).hexdigest()
    if digest != spec["sha256"]:
        raise SpecError(f"the binary's sha256 is {digest}, the spec says {spec['sha256']}")
    return Loaded(spec["kernel"], spec["symbol"], fmt, spec["arch"], binary, digest, params,
                  tuple(spec["dims"]), int(spec["shared"]), args, source)


def _arg(directory: str, a: dict):
    kind = a["kind"]
    if kind == "array":
        import numpy as np
        return np.load(os.path.join(directory, a["file"]), allow_pickle=False)
    if kind == "bytes":
        return bytes.fromhex(a["hex"])
    if kind == "null":
        return None
    if kind == "value":
        return a["value"]
    raise SpecError(f"unknown argument kind {kind!r}")


class _Binary:
    """What a Kernel needs of a CompilationResult."""

    def __init__(self, loaded: Loaded):
        self.key, self.binary, self.format = "launcher:" + loaded.sha256, loaded.binary, loaded.format
        self.arch, self.source = loaded.arch, loaded.source


def launch(loaded: Loaded) -> None:
    """Load the bytes, launch once on the legacy default stream, wait for the kernel."""
    from . import driver
    from .kernel import Kernel
    k = Kernel(loaded.name, loaded.params, _Binary(loaded), loaded.symbol, False)
    k._run(loaded.dims, loaded.shared, 0, tuple(loaded.args))
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
            "args": [one(a) for a in loaded.args]}


def _write_result(directory: str, result: dict) -> None:
    try:
        with open(os.path.join(directory, RESULT), "w", encoding="utf-8") as f:
            json.dump(result, f)
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    dry = "--dry-run" in argv
    rest = [a for a in argv if a != "--dry-run"]
    if len(rest) != 1:
        print("usage: python3 -m cuda_magic.runtime.launcher SPEC_DIR [--dry-run]", file=sys.stderr)
        return 3
    directory = rest[0]
    os.environ[CHILD_ENV] = "1"
    try:
        loaded = read_spec(directory)
    except SpecError as exc:
        print(f"cuda-magic launcher: {exc}", file=sys.stderr)
        return 3
    if dry:
        print(json.dumps(_summary(loaded)))
        return 0
    try:
        launch(loaded)
    except Exception as exc:   # the launch failed: the tool's report says why; we say what
        from .driver import LOST_NOTE
        name = getattr(exc, "name", "") or type(exc).__name__
        message = str(exc).replace(LOST_NOTE, "")
        print(f"cuda-magic launcher: {loaded.name}: {message}", file=sys.stderr)
        _write_result(directory, {"ok": False, "error": name, "message": message[:2000]})
        return 2
    _write_result(directory, {"ok": True, "sha256": loaded.sha256})
    return 0


if __name__ == "__main__":
    sys.exit(main())
