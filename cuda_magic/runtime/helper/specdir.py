"""The spec directory: one launch written to files, for the process a CUDA tool watches.

Nsight Compute and compute-sanitizer start the process they watch and own its stdin and
stdout, so that launch cannot come over a pipe (:mod:`.transport`): the notebook writes it
into a private directory and the tool runs ``python3 -m cuda_magic.runtime.nsight.child DIR``.
The directory holds the binary exactly as the notebook has it (``module.cubin``,
``.fatbin`` or ``.ptx``), the cell's source (``cell.cu``), ``spec.json`` (kernel, symbol,
parameters, launch dimensions and attributes, the binary's sha256, the arguments in
:mod:`.encoding`'s JSON form) and one ``.npy`` per array argument; the child writes
``result.json``.
"""

from __future__ import annotations

import dataclasses
import json
import os

from . import encoding
from .program import Entry, Program
from ..launch.attributes import Attributes
from ...errors import SpecError

__all__ = ["SPEC", "RESULT", "BINARY", "VERSION", "SpecError", "Loaded", "write", "read",
           "write_result", "read_result"]

SPEC = "spec.json"
RESULT = "result.json"
SOURCE = "cell.cu"
BINARY = {"cubin": "module.cubin", "fatbin": "module.fatbin", "ptx": "module.ptx"}
VERSION = 1


@dataclasses.dataclass
class Loaded:
    """A spec read back: the Program and the one launch of its kernel ``name``."""

    program: Program
    name: str
    dims: tuple
    shared: int
    args: list
    attrs: Attributes | None = None     # the launch attributes (cuLaunchKernelEx), or None

    @property
    def symbol(self) -> str:
        return self.program.kernels[self.name].symbol

    @property
    def params(self) -> tuple:
        return self.program.kernels[self.name].params

    @property
    def binary(self) -> bytes:
        return self.program.binary

    @property
    def format(self) -> str:
        return self.program.format

    @property
    def arch(self) -> str:
        return self.program.arch

    @property
    def source(self) -> str:
        return self.program.source

    @property
    def sha256(self) -> str:
        return self.program.key.removeprefix("launcher:")


def write(directory: str, program: Program, name: str, dims, shared: int, args: list,
          arrays: dict, attrs=None) -> None:
    """Write one launch of ``program``'s kernel ``name``: ``args`` encoded (arrays named by
    their file), ``arrays`` (file name -> NumPy array) saved beside them, ``attrs`` the launch's
    :class:`~..launch.attributes.Attributes` or None."""
    import numpy as np
    entry = program.kernels[name]
    for file, a in arrays.items():
        np.save(os.path.join(directory, file), np.ascontiguousarray(a) if a.flags.c_contiguous
                or not a.size else a, allow_pickle=False)
    spec = {"version": VERSION, "kernel": name, "symbol": entry.symbol,
            "format": program.format, "arch": program.arch, "sha256": program.sha256,
            "params": [dataclasses.asdict(p) for p in entry.params],
            "dims": list(dims), "shared": int(shared), "args": [encoding.to_json(a) for a in args],
            "attrs": None if attrs is None else attrs.to_json()}
    with open(os.path.join(directory, BINARY[program.format]), "wb") as f:
        f.write(program.binary)
    with open(os.path.join(directory, SOURCE), "w", encoding="utf-8") as f:
        f.write(program.source)
    with open(os.path.join(directory, SPEC), "w", encoding="utf-8") as f:
        json.dump(spec, f)


def read(directory: str) -> Loaded:
    """Read ``spec.json``, the binary and the arguments; :class:`SpecError` if anything is off."""
    import hashlib
    from ..launch.params import Param
    try:
        with open(os.path.join(directory, SPEC), encoding="utf-8") as f:
            spec = json.load(f)
        if spec.get("version") != VERSION:
            raise SpecError(f"spec version {spec.get('version')!r}, expected {VERSION}")
        fmt = spec["format"]
        with open(os.path.join(directory, BINARY[fmt]), "rb") as f:
            binary = f.read()
        source = ""
        if os.path.exists(os.path.join(directory, SOURCE)):
            with open(os.path.join(directory, SOURCE), encoding="utf-8") as f:
                source = f.read()
        params = tuple(Param(**p) for p in spec["params"])
        args = [_arg(directory, a) for a in spec["args"]]
        attrs = spec.get("attrs")
        if attrs is not None:
            attrs = Attributes.from_json(attrs)
    except SpecError:
        raise
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise SpecError(f"unreadable launch spec in {directory}: {type(exc).__name__}: {exc}") from None
    digest = hashlib.sha256(binary).hexdigest()
    if digest != spec["sha256"]:
        raise SpecError(f"the binary's sha256 is {digest}, the spec says {spec['sha256']}")
    program = Program("launcher:" + digest, binary, fmt, spec["arch"],
                      {spec["kernel"]: Entry(spec["symbol"], params)}, source)
    return Loaded(program, spec["kernel"], tuple(spec["dims"]), int(spec["shared"]), args, attrs)


def _arg(directory: str, a: dict):
    try:
        arg = encoding.from_json(a)
    except encoding.EncodingError as exc:
        raise SpecError(str(exc)) from None
    if arg[0] in (encoding.ARRAY, encoding.TENSORMAP):
        import numpy as np
        host = np.load(os.path.join(directory, arg[1]), allow_pickle=False)
        return host if arg[0] == encoding.ARRAY else encoding.decode(arg, {arg[1]: host})
    return encoding.decode(arg, {})


def write_result(directory: str, result: dict) -> None:
    """The child's ``result.json`` (nothing if it cannot be written)."""
    try:
        with open(os.path.join(directory, RESULT), "w", encoding="utf-8") as f:
            json.dump(result, f)
    except OSError:
        pass


def read_result(directory: str) -> dict | None:
    """``result.json`` as the child wrote it (None: it wrote none)."""
    try:
        with open(os.path.join(directory, RESULT), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
