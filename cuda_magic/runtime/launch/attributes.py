"""Launch attributes (``cuLaunchKernelEx``): thread-block clusters, cooperative launches and
programmatic dependent launch, checked before the driver sees them.

``k.launch(grid, block, args, cluster=(2, 1, 1), cooperative=True, pdl=True)``.  A cluster
shape must divide the grid and hold at most 8 blocks (the portable size; up to 16 are allowed
by asking the driver for a non-portable size, which is done and said); a kernel compiled with
``__cluster_dims__`` has its shape already (a plain ``k[grid, block]`` launch forms those
clusters), so a different one is an error, and so is a grid its shape does not divide.  A
cooperative grid must fit on the GPU at once (blocks per SM x SMs, the driver's occupancy;
all blocks, x * y * z); ``cooperative`` and ``pdl`` are bools only (:func:`flag`); each error
names the limit.  After a fault or under ``isolate()`` the launch runs in the helper
process (:mod:`.worker`), which checks the GPU's limits again there.

cuda.core's ``LaunchConfig`` is the other way to write the same launch: ``k[config](*args)`` or
``k[config, stream](*args)`` (and ``k.bench[config]``, ...) is ``k.launch`` with its grid,
block, cluster, shared memory, cooperative and PDL settings (:func:`from_launch_config`).
"""

from __future__ import annotations

from ...errors import ArgumentError, quote

__all__ = ["compiled_cluster", "check_grid", "checked", "launch_ex", "from_launch_config",
           "flag", "PORTABLE_CLUSTER", "MAX_CLUSTER"]

PORTABLE_CLUSTER = 8       # blocks per cluster every sm_90+ GPU runs
MAX_CLUSTER = 16           # with CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED (H100/H200)


def compiled_cluster(kernel) -> tuple[int, int, int] | None:
    """The ``__cluster_dims__`` the kernel's binary carries, or None (read once per kernel)."""
    cached = kernel.__dict__.get("_cluster", False)
    if cached is not False:
        return cached
    from ...compile.binary import cluster_dims
    from ...inspect.disasm import cubin
    try:
        elf = cubin(kernel.result)
        dims = cluster_dims(elf).get(kernel.symbol) if elf is not None else None
    except Exception:
        dims = None
    kernel._cluster = dims
    return dims


def from_launch_config(key, name: str) -> dict | None:
    """The keywords of ``k.launch`` (grid, block, shared_mem, stream, cluster, cooperative,
    pdl) that ``k[config]`` or ``k[config, stream]`` stands for, where ``config`` is a
    cuda.core ``LaunchConfig``; None when ``key`` holds none.  cuda.core counts the grid in
    clusters when a cluster is given (grid -> cluster -> block); the launch counts blocks, so
    the grid is multiplied out: ``LaunchConfig(grid=4, cluster=2, block=128)`` is 8 blocks."""
    config, rest = (key[0], key[1:]) if isinstance(key, tuple) and key else (key, ())
    kind = type(config)
    if kind.__name__ != "LaunchConfig" or not kind.__module__.startswith("cuda.core"):
        return None
    if len(rest) > 1:
        raise ArgumentError(f"write {name}[config](*args) or {name}[config, stream](*args) with "
                            f"a cuda.core LaunchConfig")
    cluster = getattr(config, "cluster", None)
    grid, block = _three(config.grid, "grid"), _three(config.block, "block")
    if cluster is not None:
        cluster = _three(cluster, "cluster")
        grid = tuple(g * c for g, c in zip(grid, cluster))
    field = "is_cooperative" if getattr(config, "is_cooperative", None) is not None else \
        "cooperative_launch"                         # an older cuda.core's name
    pdl = "programmatic_stream_serialization"
    return dict(grid=grid, block=block, shared_mem=int(getattr(config, "shmem_size", 0) or 0),
                stream=rest[0] if rest else None, cluster=cluster,
                cooperative=flag(getattr(config, field, False), f"LaunchConfig.{field}", name),
                pdl=flag(getattr(config, pdl, False), f"LaunchConfig.{pdl}", name))


def flag(value, what: str, name: str) -> bool:
    """``value`` of an on/off launch attribute ``what`` (``cooperative``, ``pdl``) of kernel
    ``name``: a bool only, as a string such as ``"no"`` would turn the attribute on."""
    if not isinstance(value, bool):
        raise ArgumentError(f"{name}: {what}={quote(value, 40)}: a bool, True or False")
    return value


def _three(value, what: str) -> tuple[int, int, int]:
    t = (value,) if isinstance(value, int) else tuple(value) if isinstance(value, (tuple, list)) \
        else None
    if not t or len(t) > 3 or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1
                                      for x in t):
        raise ArgumentError(f"{what}={quote(value, 40)}: a positive int or 1 to 3 positive ints")
    return tuple(int(x) for x in t) + (1,) * (3 - len(t))


def check_grid(name: str, grid: tuple, cluster: tuple) -> None:
    """That ``cluster`` divides ``grid`` and is no larger than the hardware allows."""
    size = cluster[0] * cluster[1] * cluster[2]
    if size > MAX_CLUSTER:
        raise ArgumentError(f"{name}: a cluster of {'x'.join(map(str, cluster))} = {size} blocks; "
                            f"at most {MAX_CLUSTER} blocks per cluster ({PORTABLE_CLUSTER} portable)")
    for axis, g, c in zip("xyz", grid, cluster):
        if g % c:
            raise ArgumentError(f"{name}: grid {axis} = {g} is not a multiple of the cluster's "
                                f"{axis} = {c} (clusters tile the grid)")


def checked(kernel, dims, shared: int, cluster, cooperative: bool, pdl: bool) -> tuple:
    """``(cluster shape or None, cooperative, pdl)`` for :func:`launch_ex`, each limit checked:
    the shape against ``__cluster_dims__`` and the grid, one cluster against what fits on the
    GPU (:func:`cluster_fit`), a cooperative grid against what fits on the GPU at once (blocks
    per SM x SMs)."""
    from .. import driver
    from ..driver import api, check
    shape = _three(cluster, "cluster") if cluster is not None else None
    compiled = compiled_cluster(kernel)
    if shape is not None and compiled is not None and shape != compiled:
        raise ArgumentError(f"{kernel.name}: compiled with __cluster_dims__{compiled}; a launch "
                            f"cannot give it cluster={shape} (leave cluster= out)")
    if shape is not None or compiled is not None:
        check_grid(kernel.name, dims[:3], shape or compiled)
    if driver.elsewhere():                # the helper process checks the rest on its GPU
        return shape, cooperative, pdl
    if shape is not None or compiled is not None:
        kernel.allow_shared(shared)
        cluster_fit(kernel, dims, shared, shape, shape or compiled)
    if cooperative:
        blocks = dims[0] * dims[1] * dims[2]
        per_sm = kernel.occupancy(dims[3] * dims[4] * dims[5], shared)
        drv = api()
        sms = int(check(drv.cuDeviceGetAttribute(
            drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, driver.device()),
            "cuDeviceGetAttribute"))
        if blocks > per_sm * sms:
            raise ArgumentError(f"{kernel.name}: a cooperative grid of {blocks} blocks does not "
                                f"fit on the GPU at once: {per_sm} per SM x {sms} SMs = "
                                f"{per_sm * sms} at this block size and shared memory")
    return shape, cooperative, pdl


def config(kernel, dims, shared: int, stream: int, cluster, cooperative: bool, pdl: bool):
    """``(CUlaunchConfig, CUfunction)`` of one ``cuLaunchKernelEx`` of the loaded ``kernel``
    with these attributes (a cluster of more than 8 blocks allowed first); made once per
    configuration and binding of the kernel."""
    from ..driver import api, check
    key = (tuple(dims), shared, stream, cluster, cooperative, pdl)
    cache = kernel.__dict__.setdefault("_configs", {})
    hit = cache.get(key)
    if hit is not None and hit[2] is kernel._bound:
        return hit[:2]
    drv = api()
    func = check(drv.cuKernelGetFunction(kernel._bound[1]), "cuKernelGetFunction")
    attrs = []
    ID = drv.CUlaunchAttributeID
    if cluster is not None:
        size = cluster[0] * cluster[1] * cluster[2]
        if size > PORTABLE_CLUSTER:
            check(drv.cuFuncSetAttribute(
                func, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                1), f"{kernel.name}: allowing a cluster of {size} blocks (non-portable)")
        a = drv.CUlaunchAttribute()
        a.id = ID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = cluster
        attrs.append(a)
    if cooperative:
        a = drv.CUlaunchAttribute()
        a.id = ID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        a.value.cooperative = 1
        attrs.append(a)
    if pdl:
        a = drv.CUlaunchAttribute()
        a.id = ID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        a.value.programmaticStreamSerializationAllowed = 1
        attrs.append(a)
    cfg = drv.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = dims[:3]
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = dims[3:]
    cfg.sharedMemBytes = shared
    cfg.hStream = drv.CUstream(stream)
    cfg.attrs = attrs
    cfg.numAttrs = len(attrs)
    if len(cache) > 64:
        cache.clear()
    cache[key] = (cfg, func, kernel._bound)
    return cfg, func


def cluster_fit(kernel, dims, shared: int, given, cluster) -> None:
    """An error naming the limit when not one cluster of this shape (``given`` at the launch,
    else ``__cluster_dims__``), block and shared memory fits on the GPU
    (``cuOccupancyMaxActiveClusters`` is 0: the blocks of a cluster run at once on the SMs of
    one GPC, each with its shared memory)."""
    from ..driver import api, check
    cfg, func = config(kernel, dims, shared, 0, given, False, False)
    fit = int(check(api().cuOccupancyMaxActiveClusters(func, cfg), "cuOccupancyMaxActiveClusters"))
    if fit == 0:
        size = cluster[0] * cluster[1] * cluster[2]
        static = kernel.attributes.get("shared", 0)
        per = shared + static
        raise ArgumentError(
            f"{kernel.name}: a cluster of {'x'.join(map(str, cluster))} = {size} blocks of "
            f"{dims[3] * dims[4] * dims[5]} threads does not fit on the GPU "
            f"(cuOccupancyMaxActiveClusters = 0): {per:,} bytes of shared memory per block "
            f"({shared:,} dynamic + {static:,} static), {size * per:,} per cluster, and the "
            f"cluster's blocks must all be resident at once in one GPC: a smaller cluster, "
            f"block or shared memory")


def launch_ex(kernel, dims, shared: int, stream: int, params: int, cluster, cooperative: bool,
              pdl: bool) -> None:
    """One ``cuLaunchKernelEx`` of the loaded ``kernel`` with its attributes."""
    from ..driver import api, call_in_context, check
    drv = api()
    cfg, func = config(kernel, dims, shared, stream, cluster, cooperative, pdl)
    what = ", ".join(w for w, on in (("cluster", cluster), ("cooperative", cooperative),
                                     ("pdl", pdl)) if on)
    err = call_in_context(drv.cuLaunchKernelEx, cfg, func, params, 0)
    check((err,), f"launching {kernel.name}[grid={dims[:3]}, block={dims[3:]}, shared_mem="
                  f"{shared}] with {what}")
