"""Relocatable device code (``-rdc=true``): the device link that makes it loadable.

A kernel that launches kernels (dynamic parallelism: ``child<<<g, b>>>(...)`` in device code)
needs relocatable device code, and its binary calls the CUDA device runtime
(``__cudaCDP2LaunchDeviceV2`` and friends), which lives in ``libcudadevrt.a``.  Neither
compiler can make that binary loadable by itself in a notebook: NVRTC has no linker, and nvcc's
``--cubin``/``--fatbin`` stop before the device link.  So when the active compiler's flags ask
for relocatable code, cuda-magic links the binary with nvJitLink (in process, from
``cuda-toolkit[nvjitlink]``) and ``libcudadevrt.a`` (from the CUDA runtime wheel, ``CUDA_HOME``
or the system toolkit) into one cubin, and the log says so with the link's options and inputs
(:func:`link`).  Without ``-rdc=true`` nothing changes.
"""

from __future__ import annotations

import glob
import os
from typing import Sequence
from ..errors import LinkError
from ..tools import cuda_roots

__all__ = ["relocatable", "devrt", "link", "LinkError"]

_RDC = ("-rdc=true", "--relocatable-device-code=true", "-rdc", "--relocatable-device-code")


def relocatable(flags: Sequence[str]) -> bool:
    """Whether ``flags`` ask for relocatable device code (the last spelling wins)."""
    said = False
    it = iter(flags)
    for flag in it:
        if flag in ("-rdc", "--relocatable-device-code"):
            said = next(it, "false") == "true"
        elif flag.split("=", 1)[0] in ("-rdc", "--relocatable-device-code"):
            said = flag.split("=", 1)[1] == "true"
        elif flag in ("-dc", "--device-c"):
            said = True
    return said


def devrt() -> str | None:
    """``libcudadevrt.a``: beside the CUDA runtime headers cuda-magic uses (a pip wheel's
    ``lib``), then the CUDA toolkits of :func:`cuda_magic.tools.cuda_roots` (``$CUDA_HOME``,
    ``$CUDA_PATH``, ``/usr/local/cuda``)."""
    from .toolkit_headers import header_dirs
    roots = []
    if "cudart" in header_dirs():
        roots.append(os.path.dirname(header_dirs()["cudart"]))
    roots += cuda_roots()
    for root in roots:
        for pattern in ("lib/libcudadevrt.a", "lib64/libcudadevrt.a",
                        "targets/*/lib/libcudadevrt.a"):
            found = sorted(glob.glob(os.path.join(root, pattern)))
            if found:
                return found[0]
    return None


def _log(nvjitlink, handle, kind: str) -> str:
    size = getattr(nvjitlink, f"get_{kind}_log_size")(handle)
    if not size:
        return ""
    buf = bytearray(size)
    getattr(nvjitlink, f"get_{kind}_log")(handle, buf)
    return bytes(buf).rstrip(b"\0").decode("utf-8", "replace").strip()


def link(binary: bytes, fmt: str, arch: str) -> tuple[bytes, str]:
    """Link a relocatable ``cubin`` or ``fatbin`` for ``arch`` with the device runtime:
    ``(the linked cubin, a log line saying how)``.  Raises :class:`LinkError`."""
    try:
        from cuda.bindings import nvjitlink
    except ImportError as exc:    # pragma: no cover - a dependency of cuda-magic
        raise LinkError(f"relocatable device code needs nvJitLink ({exc}): "
                        "pip install 'cuda-toolkit[nvjitlink]'") from None
    lib = devrt()
    if lib is None:
        raise LinkError("relocatable device code (-rdc=true) is linked with the CUDA device "
                        "runtime, libcudadevrt.a, which was not found (pip install "
                        "'cuda-toolkit[cudart]', or set CUDA_HOME)")
    options = [f"-arch={arch}"]
    kind = nvjitlink.InputType.FATBIN if fmt == "fatbin" else nvjitlink.InputType.CUBIN
    handle = nvjitlink.create(len(options), options)
    try:
        try:
            nvjitlink.add_data(handle, kind, binary, len(binary), f"cell.{fmt}")
            nvjitlink.add_file(handle, nvjitlink.InputType.LIBRARY, lib)
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            log = _log(nvjitlink, handle, "error") or str(exc)
            raise LinkError(f"the device link (nvJitLink {' '.join(options)}, cell.{fmt}, {lib}) "
                            f"failed:\n{log}") from None
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
        info = _log(nvjitlink, handle, "info")
    finally:
        nvjitlink.destroy(handle)
    version = ".".join(map(str, nvjitlink.version()))
    note = (f"cuda-magic: relocatable device code linked into one cubin by nvJitLink {version} "
            f"({' '.join(options)}) with the device runtime {lib}" + (f"\n{info}" if info else ""))
    return bytes(cubin), note
