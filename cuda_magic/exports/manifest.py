"""``manifest.json``: how every binary of an export was built, and what each kernel takes.

Per build: its file, arch, format, sha256 (of the bytes the notebook compiled: the same as
``hashlib.sha256(m.result_of(k, arch).binary)``), size, the compiler and its version, the argv
that ran, the resolved config with the layer of each key, and each kernel's registers, spills,
shared/constant memory and stack from ptxas.  Per kernel: its Python name, C++ name, entry
symbol, parameters (declared text, kind, offset and size in the parameter buffer), which builds
hold it and the names the generated files give it; for a torch export, the op's schema and
launch rules.  Plus the cell's source.  Keys sorted, no time stamps and no paths of this
machine: the argv and the config name each include root by its role (``{cuda_include}``,
``{cccl}``, ``{cutlass}``...), nvcc's build directory ``{build}``, and any other path under the
temporary or home directory ``{tmp}``/``{home}``; the precompiled-header flags (how fast a build
ran, not what it made) are left out.  The same module gives the same bytes, here or elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import tempfile

from ..compile.toolkit_headers import header_dirs

__all__ = ["manifest", "dumps", "portable", "roots", "FORMAT"]

FORMAT = "cuda-magic-export/1"
_RESOURCES = ("registers", "spill_stores", "spill_loads", "shared", "constant", "local",
              "stack_frame", "barriers")
# header family -> the role its include directory is recorded as
_ROLES = {"cudart": "cuda_include", "crt": "crt", "curand": "curand", "cccl": "cccl",
          "cutlass": "cutlass", "cutlass-util": "cutlass_util"}
_PCH = ("--create-pch=", "--use-pch=")          # what cuda-magic adds to reuse a header's parse
_PATH_OPTION = re.compile(r"(-I|-isystem|-include|--[\w-]+=|-[\w-]+=)(/.*)", re.S)


def roots(families: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(directory, role) pairs, the longest directory first: each header family's include
    directory (``families``: family -> directory; default where this process found them),
    the temporary directory and the home directory."""
    pairs: dict[str, str] = {}
    for family, d in (header_dirs() if families is None else families).items():
        if family in _ROLES and d:
            pairs.setdefault(os.path.normpath(d), _ROLES[family])
    for d, role in ((tempfile.gettempdir(), "tmp"), (os.path.expanduser("~"), "home")):
        if d and d != os.sep and os.path.isabs(d):
            pairs.setdefault(os.path.normpath(d), role)
    return sorted(pairs.items(), key=lambda p: (-len(p[0]), p[0]))


def _path(path: str, where: list[tuple[str, str]]) -> str:
    for d, role in where:
        if path == d or path.startswith(d + "/"):
            rest = path[len(d):]
            if role == "tmp" and re.match(r"/cuda-magic-[^/]+", rest):    # nvcc's build dir
                return "{build}" + re.sub(r"^/cuda-magic-[^/]+", "", rest)
            return "{" + role + "}" + rest
    return path


def portable(argv, where: list[tuple[str, str]], compiler: str = "") -> list[str]:
    """``argv`` with this machine's paths as roles (see the module docstring); nvcc's own path
    as ``{nvcc}``."""
    out = []
    for i, item in enumerate(argv):
        item = str(item)
        if item.startswith(_PCH):
            continue
        if i == 0 and compiler == "nvcc" and os.path.isabs(item):
            out.append("{nvcc}")
        elif item.startswith("/"):
            out.append(_path(item, where))
        elif m := _PATH_OPTION.fullmatch(item):
            out.append(m[1] + _path(m[2], where))
        else:
            out.append(item)
    return out


def _config(config: dict, where) -> dict:
    return {k: portable(v, where) if isinstance(v, (list, tuple)) else v
            for k, v in config.items()}


def _build(b, kernels, where) -> dict:
    r = b.result
    res = {}
    for k in kernels:
        if any(x.file == b.file for x in k.builds):
            one = r.resources.get(k.symbol)
            res[k.name] = {f: getattr(one, f) for f in _RESOURCES} if one is not None else None
    return {"file": b.file, "arch": b.arch, "format": b.format, "sha256": b.sha256,
            "bytes": len(b.data), "compiler": r.compiler, "compiler_version": r.compiler_version,
            "argv": portable(r.argv, where, r.compiler), "config": _config(r.config.config, where),
            "provenance": r.config.provenance, "kernels": res}


def manifest(name: str, fmt: str, version: str, kernels, source: str, cuda_magic_version: str,
             ops: dict | None = None, files: dict | None = None, names: dict | None = None,
             families: dict[str, str] | None = None) -> dict:
    """The manifest of an export of ``kernels`` (:class:`~.spec.KernelSpec`) from ``source``;
    ``ops``: kernel name -> its op's schema and rules (torch); ``files``: the other files
    written, name -> sha256; ``names``: kernel name -> the names the generated files give it
    (``python``: its attribute; ``c``: its launcher's suffix, ``c_params``: its parameters in
    ``kernel.h``); ``families``: where the header families are (default: found here)."""
    where = roots(families)
    builds, seen = [], set()
    for k in kernels:
        for b in k.builds:
            if b.file not in seen:
                seen.add(b.file)
                builds.append(_build(b, kernels, where))
    toolchain = {}
    for b in builds:
        toolchain.setdefault(b["compiler"], b["compiler_version"])
    out = {"format": FORMAT, "name": name, "export": fmt, "version": version,
           "cuda_magic": cuda_magic_version, "toolchain": toolchain, "source": source,
           "builds": builds,
           "kernels": [{"name": k.name, "cxx": k.cxx, "symbol": k.symbol,
                        "signature": k.signature, "params": [p.json() for p in k.params],
                        "builds": [b.file for b in k.builds],
                        **(names or {}).get(k.name, {}),
                        **({"op": ops[k.name]} if ops and k.name in ops else {})}
                       for k in kernels]}
    if files:
        out["files"] = dict(sorted(files.items()))
    return out


def dumps(m: dict) -> bytes:
    """The manifest's bytes: JSON, keys sorted, two-space indent, UTF-8 (a lone surrogate as its
    ``\\u`` escape), one final newline."""
    text = json.dumps(m, sort_keys=True, indent=2, ensure_ascii=False, default=str) + "\n"
    return text.encode("utf-8", "backslashreplace")
