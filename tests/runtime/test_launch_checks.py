"""Launch attributes checked before the driver sees them, on the CPU: the stub driver
(benchmarks/fake_driver.py) given the calls of ``cuLaunchKernelEx`` and its occupancy queries,
so a test can see which launches reached it.  Cluster shapes against the grid (all three
axes), the non-portable cluster size, the cooperative fit (all three grid axes), and
``cooperative=``/``pdl=`` taking only a bool, at every entry that takes them."""

from __future__ import annotations

import numpy as np
import pytest

import cuda_magic
import fake_driver as fd  # benchmarks/ (on sys.path: conftest.py)
from cuda_magic import ArgumentError
from cuda_magic.runtime import Kernel


class _Value:
    def __init__(self):
        self.clusterDim = type("dim3", (), {"x": 0, "y": 0, "z": 0})()
        self.cooperative = self.programmaticStreamSerializationAllowed = 0


class AttrDriver(fd._CountingDriver):
    """The fake driver with what a launch with attributes calls: ``sms`` SMs holding
    ``per_sm`` blocks each, ``clusters`` clusters at once; ``ex`` records each
    ``cuLaunchKernelEx`` as (grid, cluster or None, cooperative, pdl), ``allowed`` each
    function attribute set."""

    sms, per_sm, clusters = 4, 2, 1

    class CUfunction_attribute(fd.FakeDriver.CUfunction_attribute):
        CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 16

    class CUdevice_attribute:
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16

    class CUlaunchAttributeID:
        CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
        CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6

    class CUlaunchAttribute:
        def __init__(self):
            self.id, self.value = None, _Value()

    class CUlaunchConfig:
        pass

    CUstream = int

    def __init__(self):
        super().__init__()
        self.ex, self.allowed, self.queries = [], [], 0

    def cuFuncSetAttribute(self, func, attr, value):
        self.allowed.append((attr, value))
        return fd._OK

    def cuDeviceGetAttribute(self, attr, dev):
        self.queries += 1
        return (fd.CUresult(0), self.sms)

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, func, block, shared):
        self.queries += 1
        return (fd.CUresult(0), self.per_sm)

    def cuOccupancyMaxActiveClusters(self, func, cfg):
        self.queries += 1
        return (fd.CUresult(0), self.clusters)

    def cuLaunchKernelEx(self, cfg, func, params, extra):
        ids = {a.id: a.value for a in cfg.attrs}
        dim = ids.get(self.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        self.ex.append(((cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ),
                        None if dim is None else (dim.clusterDim.x, dim.clusterDim.y,
                                                  dim.clusterDim.z),
                        self.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE in ids,
                        self.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
                        in ids))
        return fd._OK


def _install() -> AttrDriver:
    """fd.install's state, with this driver as the api (fd.uninstall gives the state back)."""
    from cuda_magic.runtime import driver
    fake = AttrDriver()
    fake.saved = fd.install(counting=True).saved
    driver._state["api"] = fake
    return fake


def _kernel(fake, source=fd.SCALE, arch="sm_90", name="scale") -> Kernel:
    """A fresh Kernel ``name`` of ``source`` (unloaded, nothing cached), known to the fake."""
    proto = getattr(cuda_magic.build(source, cuda_magic.line_config(arch=arch), load=False), name)
    k = Kernel(proto.name, proto.params, proto.result, proto.symbol, False)
    fake.register(k)
    return k


@pytest.fixture
def fake():
    f = _install()
    yield f
    fd.uninstall(f)


ARGS = (np.zeros(64, np.float32), np.zeros(64, np.float32), 2.0, 64)


# --- clusters ------------------------------------------------------------------------------------

def test_a_grid_whose_z_the_cluster_does_not_divide_is_refused_before_the_driver(fake):
    k = _kernel(fake)
    with pytest.raises(ArgumentError, match=r"scale: grid z = 3 is not a multiple of the "
                                            r"cluster's z = 2 \(clusters tile the grid\)"):
        k.launch((2, 2, 3), 32, ARGS, cluster=(1, 1, 2))
    assert fake.ex == [] and fake.launches == 0 and fake.queries == 0
    k.launch((2, 2, 4), 32, ARGS, cluster=(1, 1, 2))            # z divides: it launches
    assert fake.ex == [((2, 2, 4), (1, 1, 2), False, False)]


CLUSTER_Z = r"""
extern "C" __global__ void __cluster_dims__(1, 1, 2) zpair(float* y) {
    y[blockIdx.z] = 1.0f;
}
"""


def test_a_compiled_cluster_that_does_not_divide_the_grid_z_is_refused_at_a_plain_launch(fake):
    """__cluster_dims__(1, 1, 2): k[(2, 2, 3), 32] is refused before any driver call."""
    k = _kernel(fake, CLUSTER_Z, "sm_90a", "zpair")
    with pytest.raises(ArgumentError, match=r"zpair: grid z = 3 is not a multiple of the "
                                            r"cluster's z = 2"):
        k[(2, 2, 3), 32]
    assert fake.launches == 0 and fake.ex == []


@pytest.mark.parametrize("size", [9, 12, 16])
def test_a_non_portable_cluster_of_9_to_16_blocks_is_allowed_and_asked_for(fake, size):
    """Above the 8 portable blocks the launch sets NON_PORTABLE_CLUSTER_SIZE_ALLOWED first."""
    k = _kernel(fake)
    k.launch((2 * size, 1, 1), 32, ARGS, cluster=(size, 1, 1))
    assert fake.ex == [((2 * size, 1, 1), (size, 1, 1), False, False)]
    assert (AttrDriver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
            1) in fake.allowed


def test_a_portable_cluster_asks_for_nothing_and_17_blocks_are_refused(fake):
    k = _kernel(fake)
    k.launch((16, 1, 1), 32, ARGS, cluster=(8, 1, 1))
    assert fake.ex == [((16, 1, 1), (8, 1, 1), False, False)] and fake.allowed == []
    with pytest.raises(ArgumentError, match=r"a cluster of 17x1x1 = 17 blocks; at most 16 "
                                            r"blocks per cluster \(8 portable\)"):
        k.launch((34, 1, 1), 32, ARGS, cluster=(17, 1, 1))
    assert len(fake.ex) == 1


# --- cooperative launches ------------------------------------------------------------------------

@pytest.mark.parametrize("grid", [(8, 1, 1), (4, 2, 1), (2, 2, 2), (1, 1, 8)])
def test_a_cooperative_grid_that_fits_launches(fake, grid):
    """4 SMs x 2 blocks per SM: 8 blocks fit, however the grid spreads them."""
    k = _kernel(fake)
    k.launch(grid, 32, ARGS, cooperative=True)
    assert fake.ex == [(grid, None, True, False)]


@pytest.mark.parametrize("grid, blocks", [((4, 1, 3), 12), ((2, 2, 3), 12), ((4, 2, 2), 16),
                                          ((1, 3, 3), 9)])
def test_the_cooperative_fit_counts_all_three_grid_dimensions(fake, grid, blocks):
    """x alone fits (and x * y in some); x * y * z does not: refused, nothing launched."""
    k = _kernel(fake)
    with pytest.raises(ArgumentError, match=rf"scale: a cooperative grid of {blocks} blocks does "
                                            rf"not fit on the GPU at once: 2 per SM x 4 SMs = 8"):
        k.launch(grid, 32, ARGS, cooperative=True)
    assert fake.ex == [] and fake.launches == 0


# --- cooperative= and pdl= take a bool -----------------------------------------------------------

BAD_FLAGS = ["no", "False", 0, 1, None, 1.0, np.True_, [True]]


@pytest.mark.parametrize("value", BAD_FLAGS, ids=repr)
@pytest.mark.parametrize("what", ["cooperative", "pdl"])
def test_launch_takes_only_a_bool_for_cooperative_and_pdl(fake, what, value):
    k = _kernel(fake)
    with pytest.raises(ArgumentError, match=rf"scale: {what}=.*: a bool, True or False"):
        k.launch(8, 32, ARGS, **{what: value})
    assert fake.ex == [] and fake.launches == 0


def test_a_launch_checked_with_true_does_not_let_1_through(fake):
    """k.launch caches each checked configuration; 1 == True must not find True's plan."""
    k = _kernel(fake)
    k.launch(8, 32, ARGS, pdl=True)
    k.launch(8, 32, ARGS, cooperative=True)
    assert fake.ex == [((8, 1, 1), None, False, True), ((8, 1, 1), None, True, False)]
    for kw in (dict(pdl=1), dict(cooperative=1)):
        with pytest.raises(ArgumentError, match=r"=1: a bool, True or False"):
            k.launch(8, 32, ARGS, **kw)
    assert len(fake.ex) == 2


@pytest.mark.parametrize("method", ["bench", "profile", "check"])
@pytest.mark.parametrize("what", ["cooperative", "pdl"])
def test_bench_profile_and_check_take_only_a_bool(fake, method, what):
    """Refused before any timing or helper process starts."""
    k = _kernel(fake)
    with pytest.raises(ArgumentError, match=rf"scale: {what}='no': a bool, True or False"):
        getattr(k, method)(8, 32, *ARGS, **{what: "no"})
    with pytest.raises(ArgumentError, match=rf"scale: {what}='no': a bool"):
        getattr(k, method)[8, 32](*ARGS, **{what: "no"})
    assert fake.ex == [] and fake.launches == 0


class LaunchConfig:
    """Stands in for cuda.core's LaunchConfig, matched by name and module as the real one is
    (an older cuda.core, a plain class, stores what it is given)."""
    __module__ = "cuda.core._launch_config"

    def __init__(self, grid, block, is_cooperative=False, programmatic_stream_serialization=False):
        self.grid, self.block, self.cluster, self.shmem_size = grid, block, None, 0
        self.is_cooperative = is_cooperative
        self.programmatic_stream_serialization = programmatic_stream_serialization


@pytest.mark.parametrize("field", ["is_cooperative", "programmatic_stream_serialization"])
def test_a_launch_config_takes_only_a_bool_for_its_flags(fake, field):
    k = _kernel(fake)
    config = LaunchConfig(8, 32, **{field: "no"})
    with pytest.raises(ArgumentError, match=rf"scale: LaunchConfig.{field}='no': a bool"):
        k[config]
    with pytest.raises(ArgumentError, match=rf"scale.bench: LaunchConfig.{field}='no': a bool"):
        k.bench[config]
    assert fake.ex == [] and fake.launches == 0
    k[LaunchConfig(8, 32, **{field: True})](*ARGS)
    assert fake.ex == [((8, 1, 1), None, field == "is_cooperative",
                        field == "programmatic_stream_serialization")]


# --- the one value -------------------------------------------------------------------------------

def test_the_attributes_are_one_value_every_entry_takes_by_its_keywords():
    """``Attributes`` is what travels: None for no attributes, its JSON form reads back as
    itself, and each of its fields is a keyword of every entry that takes launch attributes
    (a field added without its keyword would never be asked for)."""
    import inspect

    from cuda_magic.runtime.launch.attributes import Attributes
    from cuda_magic.runtime.measure.timeline.recording import timeline
    assert Attributes.of("k") is None and Attributes.of("k", cluster=None, pdl=False) is None
    a = Attributes.of("k", cluster=2, pdl=True)
    assert a == Attributes(cluster=(2, 1, 1), pdl=True) and hash(a) == hash(Attributes((2, 1, 1),
                                                                                       False, True))
    assert Attributes.from_json(a.to_json()) == a and a.words(values=True) == ["cluster=2x1x1",
                                                                                "pdl"]
    for entry in (Kernel.launch, Kernel.bench.fn, Kernel.profile.fn, Kernel.check.fn, timeline):
        params = inspect.signature(entry).parameters
        assert all(params[f].default == d for f, d in Attributes().keywords().items()), entry
