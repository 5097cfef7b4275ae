"""Find the GPU's architecture, if there is one.  Never initialises CUDA on import."""

from __future__ import annotations

import functools
import re
import threading
from typing import Callable

__all__ = ["detect_arch", "detect_arch_soon", "local_arch", "set_target_gpu", "arch_for", "pick_arch",
           "gpu_archs"]


def arch_for(major: int, minor: int) -> str:
    """``sm_<major><minor>``, with the ``a`` suffix from compute capability 9.0 up."""
    return f"sm_{major}{minor}" + ("a" if major >= 9 else "")


_TARGET: dict = {"gpu": None}     # what detect_arch() asks instead of GPU 0 (set_target_gpu)


def set_target_gpu(arch_of: Callable[[], str | None] | None) -> None:
    """Make ``arch_of()`` what :func:`detect_arch` answers: the arch of the GPU launches go to
    when it is not this machine's (``cuda_magic.remote()`` sets it, asking the remote GPU once);
    None: this machine's GPU 0 again.  The compile layer only holds the function."""
    _TARGET["gpu"] = arch_of


def detect_arch() -> str | None:
    """The arch of the GPU launches go to, e.g. ``"sm_90a"``: this machine's GPU 0, or under
    ``cuda_magic.remote()`` the remote GPU's; ``None`` without one."""
    arch_of = _TARGET["gpu"]
    return arch_of() if arch_of is not None else local_arch()


@functools.cache
def local_arch() -> str | None:
    """The arch of this machine's GPU 0, e.g. ``"sm_90a"``, or ``None`` without a driver or GPU."""
    try:
        from cuda.bindings import driver
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        err, dev = driver.cuDeviceGet(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        attr = driver.CUdevice_attribute
        err1, major = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        err2, minor = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
        if err1 != driver.CUresult.CUDA_SUCCESS or err2 != driver.CUresult.CUDA_SUCCESS:
            return None
        return arch_for(int(major), int(minor))
    except Exception:  # no libcuda (cuda.bindings raises a RuntimeError subclass), no wheel
        return None


detect_arch.cache_clear = local_arch.cache_clear     # type: ignore[attr-defined]


def detect_arch_soon() -> Callable[[], str | None]:
    """Start :func:`detect_arch` in a thread, so that it overlaps a compile (the first call
    imports the driver bindings and calls ``cuInit``: ~80 ms with no GPU); the function
    returned waits for its answer."""
    box: dict = {}
    worker = threading.Thread(target=lambda: box.setdefault("arch", detect_arch()),
                              name="cuda-magic detect arch", daemon=True)
    worker.start()

    def answer() -> str | None:
        worker.join()
        return box.get("arch")
    return answer


_CC = re.compile(r"sm_(\d+)(\d)([af]?)")


def _cc(arch: str) -> tuple[int, int, str] | None:
    m = _CC.fullmatch(arch)
    return (int(m.group(1)), int(m.group(2)), m.group(3)) if m else None


def pick_arch(archs, gpu: str | None, ptx: bool = False) -> str | None:
    """Which of ``archs`` (an arch list's builds) runs on a GPU of arch ``gpu``, or None.

    The exact arch first (``sm_90a`` on an ``sm_90a`` GPU), then the same compute capability
    with another suffix (``sm_90`` on it), then machine code the GPU runs by binary
    compatibility: a plain or ``f`` build of the same major version and a lower minor
    (``sm_80`` on ``sm_86``), the highest first.  PTX builds (``ptx=True``) also run on any
    newer GPU (the driver compiles them); ``a`` builds only on their own compute capability.
    """
    if gpu is None:
        return None
    if gpu in archs:
        return gpu
    want = _cc(gpu)
    if want is None:
        return None
    ranked = []
    for arch in archs:
        cc = _cc(arch)
        if cc is None:
            continue
        if cc[:2] == want[:2]:
            ranked.append((0, 0, arch))
        elif cc[2] != "a" and cc[0] == want[0] and cc[1] < want[1]:
            ranked.append((1, -cc[1], arch))
        elif ptx and cc[2] != "a" and cc[:2] < want[:2]:
            ranked.append((2, -(cc[0] * 10 + cc[1]), arch))
    return min(ranked)[2] if ranked else None


def gpu_archs() -> list[str]:
    """The arch of every GPU this process sees (``CUDA_VISIBLE_DEVICES`` applies), in device
    order; ``[]`` without a driver or GPU."""
    try:
        from cuda.bindings import driver
        ok = driver.CUresult.CUDA_SUCCESS
        if driver.cuInit(0)[0] != ok:
            return []
        err, count = driver.cuDeviceGetCount()
        if err != ok:
            return []
        attr = driver.CUdevice_attribute
        out = []
        for i in range(count):
            err, dev = driver.cuDeviceGet(i)
            e1, major = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
            e2, minor = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
            if err != ok or e1 != ok or e2 != ok:
                return out
            out.append(arch_for(int(major), int(minor)))
        return out
    except Exception:  # no libcuda, no wheel
        return []
