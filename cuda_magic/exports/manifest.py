"""``manifest.json``: how every binary of an export was built, and what each kernel takes.

Per build: its file, arch, format, sha256 (of the bytes the notebook compiled: the same as
``hashlib.sha256(m.result_of(k, arch).binary)``), size, the compiler and its version, the exact
argv that ran, the resolved config with the layer of each key, and each kernel's registers,
spills, shared/constant memory and stack from ptxas.  Per kernel: its Python name, C++ name,
entry symbol, parameters (declared text, kind, offset and size in the parameter buffer) and
which builds hold it; for a torch export, the op's schema and launch rules.  Plus the cell's
source.  Keys sorted, no time stamps and no paths of the export: the same module gives the
same bytes.
"""

from __future__ import annotations

import json

__all__ = ["manifest", "dumps", "FORMAT"]

FORMAT = "cuda-magic-export/1"
_RESOURCES = ("registers", "spill_stores", "spill_loads", "shared", "constant", "local",
              "stack_frame", "barriers")


def _build(b, kernels) -> dict:
    r = b.result
    res = {}
    for k in kernels:
        if any(x.file == b.file for x in k.builds):
            one = r.resources.get(k.symbol)
            res[k.name] = {f: getattr(one, f) for f in _RESOURCES} if one is not None else None
    return {"file": b.file, "arch": b.arch, "format": b.format, "sha256": b.sha256,
            "bytes": len(b.data), "compiler": r.compiler, "compiler_version": r.compiler_version,
            "argv": list(r.argv), "config": r.config.config, "provenance": r.config.provenance,
            "kernels": res}


def manifest(name: str, fmt: str, version: str, kernels, source: str, cuda_magic_version: str,
             ops: dict | None = None, files: dict | None = None) -> dict:
    """The manifest of an export of ``kernels`` (:class:`~.spec.Kernel`) from ``source``;
    ``ops``: kernel name -> its op's schema and rules (torch); ``files``: the other files
    written, name -> sha256."""
    builds, seen = [], set()
    for k in kernels:
        for b in k.builds:
            if b.file not in seen:
                seen.add(b.file)
                builds.append(_build(b, kernels))
    toolchain = {}
    for b in builds:
        toolchain.setdefault(b["compiler"], b["compiler_version"])
    out = {"format": FORMAT, "name": name, "export": fmt, "version": version,
           "cuda_magic": cuda_magic_version, "toolchain": toolchain, "source": source,
           "builds": builds,
           "kernels": [{"name": k.name, "cxx": k.cxx, "symbol": k.symbol,
                        "signature": k.signature, "params": [p.json() for p in k.params],
                        "builds": [b.file for b in k.builds],
                        **({"op": ops[k.name]} if ops and k.name in ops else {})}
                       for k in kernels]}
    if files:
        out["files"] = dict(sorted(files.items()))
    return out


def dumps(m: dict) -> bytes:
    """The manifest's bytes: JSON, keys sorted, two-space indent, UTF-8, one final newline."""
    return (json.dumps(m, sort_keys=True, indent=2, ensure_ascii=False, default=str) + "\n").encode()
