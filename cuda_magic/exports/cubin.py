"""The ``cubin`` export: the binaries as compiled, a C header that loads and launches them on the
CUDA driver API (``kernel.h``), a Python loader on the driver through ctypes (``kernel.py``)
and ``manifest.json``.

``kernel.h`` holds every build's bytes as an array (no file to find at run time) and, per
kernel, ``<name>_<kernel>(&m, grid, block, shared, stream, params...)``: pointers, references
and function pointers as ``CUdeviceptr``, numbers as their C type (``__half`` and
``__nv_bfloat16`` as their 16 bits in an ``unsigned short``), structs as a pointer to their
bytes.  ``<name>_load(&m)`` loads each build group, trying its arch images newest first (the
driver refuses the ones the GPU cannot run) and finds each kernel.  Static inline functions
and static const arrays only, so it compiles under ``-Wall -Werror`` as C and as C++.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re

from .names import (Names, bound_names, c_comment, c_ident, c_reserved, c_string, py_doc,
                    py_ident, py_reserved)
from .spec import KernelSpec, ParamSpec
from .torch_package import template

__all__ = ["header_source", "loader_source", "kinds", "c_names", "python_names", "LAUNCHER"]

_C_SCALARS = {
    "bool": "unsigned char", "char": "char", "signed char": "signed char",
    "unsigned char": "unsigned char", "short": "short", "unsigned short": "unsigned short",
    "int": "int", "unsigned int": "unsigned int", "long": "long long",
    "unsigned long": "unsigned long long", "long long": "long long",
    "unsigned long long": "unsigned long long", "float": "float", "double": "double",
    "__half": "unsigned short", "__nv_bfloat16": "unsigned short",
}
_ARCH = re.compile(r"sm_(\d+)(\d)([af]?)")


def _c_param(p: ParamSpec, name: str) -> tuple[str, bool]:
    """(declaration, passed by its address) of one parameter of a launcher, named ``name``."""
    if p.kind in ("pointer", "reference", "function"):
        return f"CUdeviceptr {name}", True
    if p.kind == "scalar":
        return f"{_C_SCALARS[p.type]} {name}", True
    return f"const void* {name}", False       # a struct: its bytes, as the kernel lays them out


def _order(builds) -> list:
    """Images newest arch first, machine code before PTX: the order a loader tries them in."""
    def key(b):
        m = _ARCH.fullmatch(b.arch)
        cc = (int(m[1]), int(m[2])) if m else (0, 0)
        return (-cc[0], -cc[1], b.format == "ptx", b.arch)
    return sorted(builds, key=key)


def _groups(kernels) -> list[tuple]:
    """The build groups (the builds of one config, one per arch) and the kernels in each."""
    groups: dict[tuple, list] = {}
    for k in kernels:
        groups.setdefault(tuple(b.file for b in k.builds), [k.builds, []])[1].append(k)
    return [(tuple(builds), ks) for builds, ks in groups.values()]


def _array(name: str, data: bytes) -> str:
    rows = [",".join(f"0x{b:02x}" for b in data[i:i + 16]) for i in range(0, len(data), 16)]
    return f"static const unsigned char {name}[{len(data)}] = {{\n  " + ",\n  ".join(rows) + "\n};\n"


# the launchers' own parameters and locals, and the handles struct's field, which no user name is
LAUNCHER = ("cm_m", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_bytes",
            "stream", "cm_args", "cm_e")
_FIELDS = ("module",)


def _globals(name: str, groups) -> set[str]:
    """The file-scope names ``kernel.h`` declares for itself."""
    out = {f"{name.upper()}_KERNEL_H", f"{name}_t", f"{name}_load", f"{name}_unload",
           f"{name}_load_group_"}
    for gi, (builds, _) in enumerate(groups):
        out.add(f"{name}_images_{gi}")
        out |= {f"{name}_image_{gi}_{ii}" for ii in range(len(builds))}
    return out


def c_names(name: str, kernels) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``kernel.h``'s names: per kernel (by Python name) its own (the handle's field; the
    launcher is ``<name>_<it>``), and its parameters' in the launcher: the user's, made ASCII
    and given a trailing ``_`` where the header or C means something else by them."""
    own = _globals(name, _groups(kernels))
    ks = Names(_FIELDS, lambda n: c_reserved(n) or f"{name}_{n}" in own)
    kernel_names = {k.name: ks.take(c_ident(k.name)) for k in kernels}
    launchers = {f"{name}_{c}" for c in kernel_names.values()}
    params = {}
    for k in kernels:
        ps = Names((*LAUNCHER, *own, *launchers), c_reserved)
        params[k.name] = [ps.take(c_ident(p.name)) for p in k.params]
    return kernel_names, params


def header_source(name: str, kernels, cuda_magic_version: str) -> str:
    """``kernel.h`` for ``kernels`` (:class:`~.spec.KernelSpec`), the C prefix ``name``."""
    guard = f"{name.upper()}_KERNEL_H"
    groups = _groups(kernels)
    cn, cp = c_names(name, kernels)
    decls = "\n".join(f" *   {c_comment(f'{k.cxx}({k.signature})')}" for k in kernels)
    first = kernels[0]
    example = ", ".join(cp[first.name])
    out = [f"""/* {name}: kernels of a cuda-magic notebook cell, on the CUDA driver API.
 *
 *   #include "kernel.h"                 cc prog.c -I<cuda>/include -lcuda
 *   {name}_t m;                          after cuInit and with a context current
 *   CUresult e = {name}_load(&m);
 *   e = {name}_{cn[first.name]}(&m, grid_x, grid_y, grid_z, block_x, block_y, block_z,
 *       shared_bytes, stream, {example});
 *   {name}_unload(&m);
 *
 * Kernels, as the cell declares them:
{decls}
 * Pointers are CUdeviceptr; __half and __nv_bfloat16 values their 16 bits; a struct is a
 * pointer to its bytes.  Each image below is one file of this export byte for byte
 * (manifest.json: how each was built).  Generated by cuda-magic {c_comment(cuda_magic_version)}.
 */
#ifndef {guard}
#define {guard}

#include <cuda.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {{
#endif
"""]
    for gi, (builds, _) in enumerate(groups):
        images = []
        for ii, b in enumerate(_order(builds)):
            data = b.data + (b"\0" if b.format == "ptx" and not b.data.endswith(b"\0") else b"")
            out.append(f"/* {c_comment(f'{b.file}: {b.arch} {b.format}, sha256 {b.sha256}')} */\n"
                       + _array(f"{name}_image_{gi}_{ii}", data))
            images.append(f"{name}_image_{gi}_{ii}")
        out.append(f"static const void* const {name}_images_{gi}[{len(images)}] = "
                   f"{{{', '.join(images)}}};\n")
    fields = "".join(f"    CUfunction {cn[k.name]};\n" for k in kernels)
    out.append(f"""
typedef struct {{
    CUmodule module[{len(groups)}];
{fields}}} {name}_t;

/* Load one build group: its images in order until the driver takes one. */
static inline CUresult {name}_load_group_(CUmodule* cm_module, const void* const* cm_images,
                                          size_t cm_count)
{{
    CUresult cm_e = CUDA_ERROR_NO_BINARY_FOR_GPU;
    size_t cm_i;
    for (cm_i = 0; cm_i < cm_count; ++cm_i) {{
        cm_e = cuModuleLoadData(cm_module, cm_images[cm_i]);
        if (cm_e != CUDA_ERROR_NO_BINARY_FOR_GPU && cm_e != CUDA_ERROR_UNSUPPORTED_PTX_VERSION
                && cm_e != CUDA_ERROR_INVALID_PTX)
            return cm_e;
    }}
    return cm_e;
}}

static inline CUresult {name}_unload({name}_t* cm_m)
{{
    CUresult cm_e = CUDA_SUCCESS, cm_one;
    size_t cm_i;
    for (cm_i = 0; cm_i < {len(groups)}; ++cm_i) {{
        if (cm_m->module[cm_i]) {{
            cm_one = cuModuleUnload(cm_m->module[cm_i]);
            if (cm_e == CUDA_SUCCESS)
                cm_e = cm_one;
            cm_m->module[cm_i] = NULL;
        }}
    }}
    return cm_e;
}}

/* Load every build (the context current now is where they run) and find each kernel. */
static inline CUresult {name}_load({name}_t* cm_m)
{{
    CUresult cm_e;
    size_t cm_i;
    for (cm_i = 0; cm_i < {len(groups)}; ++cm_i)
        cm_m->module[cm_i] = NULL;
""")
    for gi, (builds, ks) in enumerate(groups):
        out.append(f"    cm_e = {name}_load_group_(&cm_m->module[{gi}], {name}_images_{gi}, "
                   f"{len(builds)});\n    if (cm_e != CUDA_SUCCESS) goto fail;\n")
        for k in ks:
            out.append(f"    cm_e = cuModuleGetFunction(&cm_m->{cn[k.name]}, cm_m->module[{gi}], "
                       f"{c_string(k.symbol)});\n    if (cm_e != CUDA_SUCCESS) goto fail;\n")
    out.append(f"    return CUDA_SUCCESS;\nfail:\n    {name}_unload(cm_m);\n    return cm_e;\n}}\n")
    for k in kernels:
        out.append(_launcher(name, k, cn[k.name], cp[k.name]))
    out.append(f"""
#ifdef __cplusplus
}}
#endif

#endif /* {guard} */
""")
    return "".join(out)


def _launcher(name: str, k: KernelSpec, c: str, params: list[str]) -> str:
    """``<name>_<c>(&m, grid..., block..., shared_bytes, stream, params...)``."""
    decls = [_c_param(p, n) for p, n in zip(k.params, params)]
    decl = "".join(f",\n    {d}" + (f" /* {c_comment(p.declared)} */" if d != p.declared else "")
                   for (d, _), p in zip(decls, k.params))
    out = [f"""
/* {c_comment(f'{k.cxx}({k.signature})')} */
static inline CUresult {name}_{c}(const {name}_t* cm_m,
    unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
    unsigned int block_x, unsigned int block_y, unsigned int block_z,
    unsigned int shared_bytes, CUstream stream{decl})
{{
"""]
    if k.params:
        out.append(f"    void* cm_args[{len(k.params)}];\n")
        for i, ((_, by_address), n) in enumerate(zip(decls, params)):
            out.append(f"    cm_args[{i}] = {f'(void*)&{n}' if by_address else f'(void*){n}'};\n")
    out.append(f"""    if (shared_bytes > 48 * 1024) {{
        CUresult cm_e = cuFuncSetAttribute(cm_m->{c},
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared_bytes);
        if (cm_e != CUDA_SUCCESS)
            return cm_e;
    }}
    return cuLaunchKernel(cm_m->{c}, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                          shared_bytes, stream, {'cm_args' if k.params else 'NULL'}, NULL);
}}
""")
    return "".join(out)


def kinds(k: KernelSpec) -> tuple[str, ...]:
    """How the loader converts each argument (see ``_driver.LoadedKernel``)."""
    out = []
    for p in k.params:
        if p.kind in ("pointer", "reference", "function"):
            out.append("p")
        elif p.kind == "scalar":
            out.append("b" if p.type == "__nv_bfloat16" else "v")
        else:
            out.append(f"s{p.size}")
    return tuple(out)


def _driver_body() -> str:
    """``_driver.py`` after its docstring: the body a single-file loader holds."""
    text = template("_driver.py").decode()
    doc = ast.parse(text).body[0]
    lines = text.splitlines(keepends=True)
    return "".join(lines[doc.end_lineno:]).lstrip("\n")


_TAIL = '''

# -- the kernels of this export ------------------------------------------------------------

import hashlib as _hashlib
import pathlib as _pathlib

_HERE = _pathlib.Path(__file__).resolve().parent


def _read(file, sha256):
    data = (_HERE / file).read_bytes()
    if _hashlib.sha256(data).hexdigest() != sha256:
        raise CudaError(f"{file}: not the binary that was exported (sha256 differs)")
    return data


_BUILDS = {}     # file -> its Build: kernels of one build share one loaded library, as in the cell


def _build(arch, fmt, file, sha256):
    if file not in _BUILDS:
        _BUILDS[file] = Build(arch, fmt, lambda: _read(file, sha256))
    return _BUILDS[file]

'''


@functools.cache
def _loader_reserved() -> frozenset:
    """What ``kernel.py`` binds at module level for itself, and the builtins its code calls."""
    source = _driver_body() + _TAIL
    used = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    return frozenset(bound_names(source) | (used & set(dir(builtins))))


def python_names(kernels) -> dict[str, str]:
    """Each kernel's attribute in ``kernel.py`` (by Python name): its Python name, with a
    trailing ``_`` where the loader uses that name itself (``LoadedKernel``, ``ctypes``, ``len``)."""
    taken = Names(_loader_reserved(), py_reserved)
    return {k.name: taken.take(py_ident(k.name)) for k in kernels}


def loader_source(name: str, kernels, cuda_magic_version: str) -> str:
    """``kernel.py``: one file, the driver run time and each kernel bound to its builds."""
    attrs = python_names(kernels)
    decls = "\n".join(f"    {attrs[k.name]}: {k.cxx}({k.signature})" for k in kernels)
    first = kernels[0]
    example = ", ".join(p.name for p in first.params)
    doc = f'''{name}: kernels of a cuda-magic notebook cell, launched through the CUDA driver (ctypes).

    import kernel                                   # this file: Python and a GPU driver only
    kernel.{attrs[first.name]}[grid, block]({example})
    kernel.{attrs[first.name]}[grid, block, shared_bytes, stream]({example})

Pointers take device addresses (ints) or arrays (PyTorch, CuPy, Numba); a launch goes to the
GPU of the context current on the calling thread (GPU 0 where none is) and picks the build
for that GPU's arch (manifest.json: how each was built).  Kernels:
{decls}

Generated by cuda-magic {cuda_magic_version}.
'''
    tail = [_TAIL]
    for k in kernels:
        builds = "".join(f"\n     _build({b.arch!r}, {b.format!r}, {b.file!r}, {b.sha256!r}),"
                         for b in k.builds)
        tail.append(f"""
{attrs[k.name]} = LoadedKernel(
    {k.name!r}, {k.symbol!r}, {k.signature!r},
    {k.struct_format!r}, {tuple(p.offset for p in k.params)!r},
    {tuple(p.name for p in k.params)!r},
    ({builds}
    ), {kinds(k)!r})
""")
    tail.append(f"\n__all__ = __all__ + {[attrs[k.name] for k in kernels]!r}\n")
    return py_doc(doc) + "\n\n" + _driver_body() + "".join(tail)
