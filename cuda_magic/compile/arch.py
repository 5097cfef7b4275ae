"""Find the GPU's architecture, if there is one.  Never initialises CUDA on import."""

from __future__ import annotations

import functools

__all__ = ["detect_arch", "arch_for"]


def arch_for(major: int, minor: int) -> str:
    """``sm_<major><minor>``, with the ``a`` suffix from compute capability 9.0 up."""
    return f"sm_{major}{minor}" + ("a" if major >= 9 else "")


@functools.cache
def detect_arch() -> str | None:
    """The arch of GPU 0, e.g. ``"sm_90a"``, or ``None`` without a driver or GPU."""
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
