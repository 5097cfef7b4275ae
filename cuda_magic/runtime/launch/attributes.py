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
process (:mod:`~cuda_magic.runtime.helper.worker`), which checks the GPU's limits again there.

The keywords become one :class:`Attributes` where they arrive (:meth:`Attributes.of`), and that
one value travels on: to the launch (:func:`launch_ex`), ``k.bench``'s timed launches, the
helper process and the tools' spec files.  A new attribute is a field of :class:`Attributes`,
its check in :meth:`Attributes.of` (and :func:`checked` for a limit of the GPU) and its driver
attribute in :meth:`Attributes.driver_attributes`.

cuda.core's ``LaunchConfig`` is the other way to write the same launch: ``k[config](*args)`` or
``k[config, stream](*args)`` (and ``k.bench[config]``, ...) is ``k.launch`` with its grid,
block, cluster, shared memory, cooperative and PDL settings (:func:`from_launch_config`).
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

from ...errors import ArgumentError, quote
from .configuration import checked_dims, checked_shared

__all__ = ["Attributes", "compiled_cluster", "check_grid", "checked", "prepared", "launch_ex",
           "config", "from_launch_config", "flag", "PORTABLE_CLUSTER", "MAX_CLUSTER"]

PORTABLE_CLUSTER = 8       # blocks per cluster every sm_90+ GPU runs
MAX_CLUSTER = 16           # with CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED (H100/H200)

# each kernel's __cluster_dims__ (weakly: a kernel gone takes its entry along), and the
# cuLaunchKernelEx configurations by CUkernel handle (one binding of a kernel: bound again, a
# kernel has a new handle and makes its configurations again)
_CLUSTERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CONFIGS: dict = {}


class Attributes(NamedTuple):
    """The launch attributes of one launch, checked, as one value (cuda.core's ``LaunchConfig``
    is the model): ``cluster`` a shape of 3 ints or None, ``cooperative``, ``pdl`` bools.
    Made by :meth:`of` from the keywords of ``k.launch``, ``k.bench``, ``k.profile``,
    ``k.check`` and ``k.timeline``; None stands for "no attributes" (a plain
    ``cuLaunchKernel``).  Immutable and hashed at C speed (a key of the launch caches); it
    pickles (to the helper process) and has a JSON form (the tools' spec files)."""

    cluster: tuple[int, int, int] | None = None
    cooperative: bool = False
    pdl: bool = False

    @classmethod
    def of(cls, name: str, *, cluster=None, cooperative=False, pdl=False) -> "Attributes | None":
        """The attributes the keywords ask for, each checked (kernel ``name`` in the errors);
        None when they ask for none."""
        cooperative, pdl = flag(cooperative, "cooperative", name), flag(pdl, "pdl", name)
        shape = _three(cluster, "cluster") if cluster is not None else None
        made = cls(shape, cooperative, pdl)
        return made if made != _NONE else None

    def keywords(self) -> dict:
        """``k.launch``'s keywords for these attributes (how the helper process launches)."""
        return self._asdict()

    def words(self, values: bool = False) -> list[str]:
        """The attributes on, by name (``["cluster", "pdl"]``), with ``values`` the shapes too
        (``["cluster=2x1x1", "pdl"]``): what errors and ``Timing.notes`` say."""
        out = []
        for name, v in self.keywords().items():
            if isinstance(v, tuple):
                out.append(f"{name}={'x'.join(map(str, v))}" if values else name)
            elif v:
                out.append(name)
        return out

    def to_json(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.keywords().items()}

    @classmethod
    def from_json(cls, data: dict) -> "Attributes":
        """The attributes :meth:`to_json` wrote (TypeError or ValueError where it did not)."""
        return cls(**{k: tuple(int(c) for c in v) if isinstance(v, list) else bool(v)
                      for k, v in data.items()})

    def driver_attributes(self, drv, func, name: str) -> list:
        """The ``CUlaunchAttribute`` list of ``cuLaunchKernelEx`` for the CUfunction ``func`` of
        kernel ``name`` (a cluster of more than 8 blocks allowed on ``func`` first)."""
        from ..driver import check
        attrs = []
        ID = drv.CUlaunchAttributeID
        cluster = self.cluster
        if cluster is not None:
            size = cluster[0] * cluster[1] * cluster[2]
            if size > PORTABLE_CLUSTER:
                check(drv.cuFuncSetAttribute(
                    func, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                    1), f"{name}: allowing a cluster of {size} blocks (non-portable)")
            a = drv.CUlaunchAttribute()
            a.id = ID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = cluster
            attrs.append(a)
        if self.cooperative:
            a = drv.CUlaunchAttribute()
            a.id = ID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
            a.value.cooperative = 1
            attrs.append(a)
        if self.pdl:
            a = drv.CUlaunchAttribute()
            a.id = ID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            a.value.programmaticStreamSerializationAllowed = 1
            attrs.append(a)
        return attrs


_NONE = Attributes()


def compiled_cluster(kernel) -> tuple[int, int, int] | None:
    """The ``__cluster_dims__`` the kernel's binary carries, or None (read once per kernel)."""
    cached = _CLUSTERS.get(kernel, False)
    if cached is not False:
        return cached
    from ...compile.binary import cluster_dims
    from ...inspect.disasm import cubin
    try:
        elf = cubin(kernel.result)
        dims = cluster_dims(elf).get(kernel.symbol) if elf is not None else None
    except Exception:
        dims = None
    _CLUSTERS[kernel] = dims
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


def prepared(kernel, grid, block, shared_mem, attrs: Attributes | None) -> tuple:
    """``(dims, shared, attrs)`` of a launch of ``kernel`` with ``attrs`` (None: none), each
    checked (:func:`checked`): what ``k.launch`` with attributes, ``k.bench``, ``k.profile``,
    ``k.check`` and ``k.timeline`` launch."""
    dims, shared = checked_dims(grid, "grid") + checked_dims(block, "block"), checked_shared(shared_mem)
    if attrs is not None:
        checked(kernel, dims, shared, attrs)
    return dims, shared, attrs


def checked(kernel, dims, shared: int, attrs: Attributes) -> None:
    """Each limit of ``attrs`` checked for this launch of ``kernel``: the cluster shape
    against ``__cluster_dims__`` and the grid, one cluster against what fits on the GPU
    (:func:`cluster_fit`), a cooperative grid against what fits on the GPU at once (blocks
    per SM x SMs)."""
    from .. import driver
    from ..driver import api, check
    shape = attrs.cluster
    compiled = compiled_cluster(kernel)
    if shape is not None and compiled is not None and shape != compiled:
        raise ArgumentError(f"{kernel.name}: compiled with __cluster_dims__{compiled}; a launch "
                            f"cannot give it cluster={shape} (leave cluster= out)")
    if shape is not None or compiled is not None:
        check_grid(kernel.name, dims[:3], shape or compiled)
    if driver.elsewhere():                # the helper process checks the rest on its GPU
        return
    if shape is not None or compiled is not None:
        kernel.allow_shared(shared)
        cluster_fit(kernel, dims, shared, shape, shape or compiled)
    if attrs.cooperative:
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


def config(kernel, handle, dims, shared: int, stream: int, attrs: Attributes):
    """``(CUlaunchConfig, CUfunction)`` of one ``cuLaunchKernelEx`` of the loaded ``kernel``
    (``handle`` its CUkernel) with these attributes; made once per configuration and binding."""
    from ..driver import api, check
    key = (id(handle), tuple(dims), shared, stream, attrs)
    hit = _CONFIGS.get(key)
    if hit is not None and hit[2] is handle:
        return hit[:2]
    drv = api()
    func = check(drv.cuKernelGetFunction(handle), "cuKernelGetFunction")
    attributes = attrs.driver_attributes(drv, func, kernel.name)
    cfg = drv.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = dims[:3]
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = dims[3:]
    cfg.sharedMemBytes = shared
    cfg.hStream = drv.CUstream(stream)
    cfg.attrs = attributes
    cfg.numAttrs = len(attributes)
    if len(_CONFIGS) > 256:
        _CONFIGS.clear()
    _CONFIGS[key] = (cfg, func, handle)
    return cfg, func


def cluster_fit(kernel, dims, shared: int, given, cluster) -> None:
    """An error naming the limit when not one cluster of this shape (``given`` at the launch,
    else ``__cluster_dims__``), block and shared memory fits on the GPU
    (``cuOccupancyMaxActiveClusters`` is 0: the blocks of a cluster run at once on the SMs of
    one GPC, each with its shared memory)."""
    from ..driver import api, check
    cfg, func = config(kernel, kernel.handle_and_packer(shared)[0], dims, shared, 0,
                       Attributes(cluster=given))
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


def launch_ex(kernel, handle, dims, shared: int, stream: int, params: int,
              attrs: Attributes) -> None:
    """One ``cuLaunchKernelEx`` of the loaded ``kernel`` (``handle`` its CUkernel) with its
    attributes."""
    from ..driver import api, call_in_context, check
    drv = api()
    cfg, func = config(kernel, handle, dims, shared, stream, attrs)
    err = call_in_context(drv.cuLaunchKernelEx, cfg, func, params, 0)
    check((err,), f"launching {kernel.name}[grid={dims[:3]}, block={dims[3:]}, shared_mem="
                  f"{shared}] with {', '.join(attrs.words())}")
