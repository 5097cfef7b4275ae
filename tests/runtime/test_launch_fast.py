"""The launch fast path on the CPU: a stub driver (benchmarks/fake_driver.py) and arrays that read
like CuPy's and PyTorch's.  Nothing about time: that repeat launches take the plan, and that every
check still raises, the first launch and the hundredth alike."""

import ctypes
import sys

import numpy as np
import pytest

from cuda_magic.cell import build, line_config
from cuda_magic.runtime import ArgumentError, ArgumentRangeError, CudaError, driver

import fake_driver as fd  # benchmarks/ (on sys.path: conftest.py)

SCALE = fd.SCALE


@pytest.fixture(params=["bindings", "cupy"])
def fake(request):
    """The stub driver; the plan ends in its cuLaunchKernel, or in the stand-in for CuPy's
    launchKernel (what a GPU runs where CuPy is loaded)."""
    f = fd.install(counting=True, ints=request.param == "cupy")
    yield f
    fd.uninstall(f)


@pytest.fixture(scope="module")
def module():
    return build(SCALE, line_config(arch="sm_90"))


def scale_kernel(fake, module):
    """A fresh, loaded Kernel over the compiled cell, whose launches run y = a * x on host memory."""
    from cuda_magic.runtime import Kernel
    proto = module.scale
    k = Kernel(proto.name, proto.params, proto.result, proto.symbol, False)
    fake.register(k)

    fake.on_launch = fd.scale_on_host
    return k.load()


def host(n=64, dtype="float32"):
    return np.arange(n, dtype=dtype)


def cupy_like(h, **kw):
    return fd.FakeCupy(h.ctypes.data, h.dtype.name, h.shape, **kw)


def torch_like(h, **kw):
    return fd.FakeTorch(h.ctypes.data, h.dtype.name, h.shape, **kw)


@pytest.mark.parametrize("like", [cupy_like, torch_like])
def test_repeat_launches_take_the_plan(fake, module, like):
    k = scale_kernel(fake, module)
    hx, hy = host(), np.zeros(64, np.float32)
    x, y = like(hx), like(hy)
    packer = k._bound[2]
    assert k[1, 64] is k[1, 64]                 # one launcher per configuration
    for i in range(100):
        k[1, 64](x, y, float(i), 64)
    assert fake.launches == 100
    assert packer.full_checks == 2              # x and y, checked in full once
    np.testing.assert_array_equal(hy, 99 * hx)
    hx2 = host() + 1                            # another array of the same type and dtype: quick
    k[1, 64](like(hx2), y, 2.0, 64)
    assert packer.full_checks == 2
    np.testing.assert_array_equal(hy, 2 * hx2)  # its pointer, read at this launch


def bad_launches(like):
    """(name, launch(k), expected error type, message pattern) for every check."""
    hx, hy = host(), np.zeros(64, np.float32)
    x, y = like(hx), like(hy)
    f64 = like(host(dtype="float64"))
    strided = like(hy, contiguous=False)
    freed = like(host())
    (freed.data.mem if hasattr(freed, "data") and freed.data is not None else freed).free()
    return [
        ("dtype", lambda k: k[1, 64](f64, y, 1.0, 64), ArgumentError, r"parameter 'x'.*float64"),
        ("contiguity", lambda k: k[1, 64](x, strided, 1.0, 64), ArgumentError,
         r"parameter 'y'.*not (C-)?contiguous"),
        ("count", lambda k: k[1, 64](x, y, 1.0), ArgumentError, r"scale\(\) takes 4 arguments"),
        ("range", lambda k: k[1, 64](x, y, 1.0, 2**31), ArgumentRangeError,
         r"parameter 'n'.*out of range for int"),
        ("scalar type", lambda k: k[1, 64](x, y, 1.0, 4.0), ArgumentError,
         r"parameter 'n'.*expected an integer"),
        ("freed", lambda k: k[1, 64](freed, y, 1.0, 64), ArgumentError,
         r"parameter 'x'.*memory was freed"),
        ("pointer", lambda k: k[1, 64](1.5, y, 1.0, 64), ArgumentError, r"parameter 'x'.*is a pointer"),
    ], (x, y)


@pytest.mark.parametrize("like", [cupy_like, torch_like])
def test_the_first_and_the_hundredth_launch_raise_the_same(fake, module, like):
    cases, (x, y) = bad_launches(like)
    for name, bad, exc, pattern in cases:
        first = scale_kernel(fake, module)         # a fresh kernel: this is its first launch
        with pytest.raises(exc, match=pattern) as one:
            bad(first)
        warm = scale_kernel(fake, module)
        for _ in range(100):
            warm[1, 64](x, y, 1.0, 64)
        with pytest.raises(exc, match=pattern) as hundredth:
            bad(warm)
        assert (type(one.value), str(one.value)) == (type(hundredth.value), str(hundredth.value)), name
        warm[1, 64](x, y, 1.0, 64)                 # and the launcher still works after


@pytest.mark.parametrize("like", [cupy_like, torch_like])
def test_what_changes_on_the_same_array_is_checked_per_launch(fake, module, like):
    k = scale_kernel(fake, module)
    hx, hy = host(), np.zeros(64, np.float32)
    x, y = like(hx), like(hy)
    for _ in range(10):
        k[1, 64](x, y, 1.0, 64)
    if like is cupy_like:
        x._c_contiguous = False                    # the same object, no longer contiguous
        with pytest.raises(ArgumentError, match="parameter 'x'.*not C-contiguous"):
            k[1, 64](x, y, 1.0, 64)
        x._c_contiguous = True
        x.dtype = np.dtype("float64")              # the same object, another dtype
        with pytest.raises(ArgumentError, match="parameter 'x'.*float64"):
            k[1, 64](x, y, 1.0, 64)
        x.dtype = np.dtype("float32")
        k[1, 64](x, y, 1.0, 64)
        x.data.mem.free()
    else:
        x._contiguous = False
        with pytest.raises(ArgumentError, match="parameter 'x'.*not contiguous"):
            k[1, 64](x, y, 1.0, 64)
        x._contiguous = True
        x.dtype = fd.TORCH_DTYPES["float64"]
        with pytest.raises(ArgumentError, match="parameter 'x'.*float64"):
            k[1, 64](x, y, 1.0, 64)
        x.dtype = fd.TORCH_DTYPES["float32"]
        x.is_cuda = False
        with pytest.raises(ArgumentError, match="parameter 'x'.*CPU"):
            k[1, 64](x, y, 1.0, 64)
        x.is_cuda = True
        k[1, 64](x, y, 1.0, 64)
        x.free()
    with pytest.raises(ArgumentError, match="parameter 'x'.*memory was freed"):
        k[1, 64](x, y, 1.0, 64)


def test_a_changed_dtype_between_launches_raises(fake, module):
    k = scale_kernel(fake, module)
    y = cupy_like(np.zeros(64, np.float32))
    for dtype in ("float32", "float64", "float32", "int32"):
        x = cupy_like(host(dtype=dtype))
        if dtype == "float32":
            k[1, 64](x, y, 1.0, 64)
        else:
            with pytest.raises(ArgumentError, match=f"parameter 'x'.*{dtype}"):
                k[1, 64](x, y, 1.0, 64)


class Interface:
    """An object with __cuda_array_interface__ (as Numba's device arrays): read per launch."""

    def __init__(self, h):
        self.h = h

    @property
    def __cuda_array_interface__(self):
        h = self.h
        return {"data": (h.ctypes.data, False), "typestr": h.dtype.str, "shape": h.shape,
                "strides": None, "version": 3}


def test_cuda_array_interface_is_read_per_launch(fake, module):
    k = scale_kernel(fake, module)
    packer = k._bound[2]
    hy = np.zeros(64, np.float32)
    x, y = Interface(host()), Interface(hy)
    k[1, 64](x, y, 1.0, 64)
    checks = packer.full_checks
    x.h = host() * 3                               # the same object, another pointer
    k[1, 64](x, y, 2.0, 64)
    assert packer.full_checks == checks            # a (typestr, shape, strides) seen before
    np.testing.assert_array_equal(hy, 6 * host())
    x.h = host(dtype="float64")
    with pytest.raises(ArgumentError, match="parameter 'x'.*float64"):
        k[1, 64](x, y, 1.0, 64)
    x.h = host().reshape(8, 8)[:, ::2].copy().reshape(-1)  # a new (shape): checked in full, passes
    k[1, 32](x, y, 1.0, 32)
    assert packer.full_checks == checks + 3


def test_numpy_arrays_are_still_copied_back(fake, module):
    k = scale_kernel(fake, module)
    x, y = cupy_like(host()), cupy_like(np.zeros(64, np.float32))
    for _ in range(100):
        k[1, 64](x, y, 1.0, 64)
    hx, hy = host(), np.zeros(64, np.float32)
    k[1, 64](hx, hy, 3.0, 64)
    np.testing.assert_array_equal(hy, 3 * hx)
    assert not fake.memory                         # staged copies freed


def test_isolated_and_lost_launches_leave_the_fast_path(fake, module, monkeypatch):
    from cuda_magic.runtime.helper import worker
    k = scale_kernel(fake, module)
    x, y = cupy_like(host()), cupy_like(np.zeros(64, np.float32))
    for _ in range(3):
        k[1, 64](x, y, 1.0, 64)
    calls = []
    monkeypatch.setattr(worker, "call", lambda kernel, what, *a: calls.append(what))
    driver._state["isolated"] = True
    k[1, 64](x, y, 1.0, 64)
    driver._state["isolated"] = False
    driver._state["lost"] = "a fault"
    k[1, 64](x, y, 1.0, 64)
    driver._state["lost"] = None
    assert calls == ["run", "run"] and fake.launches == 3


def test_launch_errors_and_a_new_thread_context(fake, module):
    k = scale_kernel(fake, module)
    x, y = cupy_like(host()), cupy_like(np.zeros(64, np.float32))
    k[1, 64](x, y, 1.0, 64)
    run, answers = fake.on_launch, [201]            # CUDA_ERROR_INVALID_CONTEXT once: retried

    def flaky(*a):
        return answers.pop() if answers else run(*a)
    fake.on_launch = flaky
    k[1, 64](x, y, 1.0, 64)
    assert fake.launches == 3
    fake.on_launch = lambda *a: 700
    with pytest.raises(CudaError, match=r"launching scale\[grid=\(1, 1, 1\).*ILLEGAL_ADDRESS") as info:
        k[1, 64](x, y, 1.0, 64)
    assert info.value.name == "CUDA_ERROR_ILLEGAL_ADDRESS" and driver.lost()


def test_a_call_in_a_thread_new_to_cuda_is_made_again_in_the_primary_context(monkeypatch):
    """driver.call_in_context, the retry of every launch (cuLaunchKernel, cuLaunchKernelEx)."""
    made, answers = [], [0, 201]
    monkeypatch.setattr(driver, "context", lambda: made.append("context"))

    def call(*args):
        made.append(args)
        return (answers.pop(),)
    assert driver.call_in_context(call, 1, 2) == 0 and made == [(1, 2), "context", (1, 2)]
    made[:], answers[:] = [], [0]
    assert driver.call_in_context(call, 3, err=201) == 0 and made == ["context", (3,)]
    made[:] = []
    assert driver.call_in_context(call, 3, err=700) == 700 and made == []    # another error: as is


def test_the_plan_follows_the_kind_of_array_and_stops_rewriting_itself(fake, module):
    k = scale_kernel(fake, module)
    packer = k._bound[2]
    hx, hy = host(), np.zeros(64, np.float32)
    k[1, 64](cupy_like(hx), cupy_like(hy), 1.0, 64)
    assert packer.compiles == 2                    # written when asked, again after the first pack
    for i in range(40):                            # CuPy and torch in turn, None for x now and then
        like = (cupy_like, torch_like)[i % 2]
        k[1, 64](like(hx), like(hy), float(i), 64)
        np.testing.assert_array_equal(hy, i * hx)
    assert packer.compiles <= 18                   # then the plan calls the quick checks instead
    checks = packer.full_checks
    for i in range(4):
        like = (cupy_like, torch_like)[i % 2]
        k[1, 64](like(hx), like(hy), 2.0, 64)
    assert packer.full_checks == checks + 8        # type changes go the full way, and pass
    k2 = scale_kernel(fake, module)
    k2[1, 64](None, cupy_like(hy), 1.0, 0)         # a null pointer is a value the plan knows too
    checks = k2._bound[2].full_checks
    k2[1, 64](None, cupy_like(hy), 1.0, 0)
    assert k2._bound[2].full_checks == checks


MORE = r'''
struct Three { float a, b, c; };
extern "C" __global__ void three(float* y, Three t) { y[0] = t.a + t.b + t.c; }
'''


def test_which_call_the_plan_ends_in(monkeypatch):
    """CuPy's launchKernel where CuPy is loaded (driver.int_launch), for every signature;
    cuda.bindings' cuLaunchKernel without it, or with settings.plan_launch = "bindings"."""
    from cuda_magic import settings
    from cuda_magic.runtime import Kernel
    cell = build(SCALE + MORE, line_config(arch="sm_90"))
    got = {}
    for ints in (True, False):
        f = fd.install(counting=True, ints=ints)
        try:
            for mode in ("auto", "bindings"):
                monkeypatch.setattr(settings, "plan_launch", mode)
                for name, args, check in (
                        ("scale", (host(), np.zeros(64, np.float32), 2.0, 64), None),
                        ("three", (np.zeros(1, np.float32), np.array([1, 2, 4], np.float32).tobytes()),
                         7.0)):
                    proto = cell[name]
                    k = Kernel(proto.name, proto.params, proto.result, proto.symbol, False)
                    f.layouts[proto.symbol] = [(0, 8), (8, 12)] if name == "three" else \
                        fd.natural_layout(proto.params)
                    hy = args[1] if name == "scale" else args[0]
                    x, y = (cupy_like(args[0]), cupy_like(args[1])) if name == "scale" else \
                        (cupy_like(args[0]), None)

                    def run(symbol, dims, params, name=name, hy=hy):
                        slot = [ctypes.c_void_p.from_address(params + 8 * i).value for i in range(2)]
                        py = ctypes.c_uint64.from_address(slot[0 if name == "three" else 1]).value
                        out = np.ctypeslib.as_array((ctypes.c_float * hy.size).from_address(py))
                        if name == "three":
                            out[0] = sum((ctypes.c_float * 3).from_address(slot[1]))
                        else:
                            px = ctypes.c_uint64.from_address(slot[0]).value
                            out[:] = 2 * np.ctypeslib.as_array((ctypes.c_float * hy.size).from_address(px))
                        return 0
                    f.on_launch = run
                    k.load()
                    before = f.launches
                    for _ in range(3):
                        k[1, 1](x, y, 2.0, 64) if name == "scale" else k[1, 1](x, args[1])
                    assert f.launches == before + 3
                    got[ints, mode, name] = k._bound[2].via
                    if name == "scale":
                        np.testing.assert_array_equal(hy, 2 * args[0])
                    else:
                        assert hy[0] == check
        finally:
            fd.uninstall(f)
    assert got == {(True, "auto", "scale"): "cupy", (True, "auto", "three"): "cupy",
                   (True, "bindings", "scale"): "bindings", (True, "bindings", "three"): "bindings",
                   (False, "auto", "scale"): "bindings", (False, "auto", "three"): "bindings",
                   (False, "bindings", "scale"): "bindings", (False, "bindings", "three"): "bindings"}


def test_int_launch_is_cupys_only_where_cupy_is_loaded(monkeypatch):
    import types
    launch_kernel = object()
    cupy, cuda = types.ModuleType("cupy"), types.ModuleType("cupy.cuda")
    cdrv, crt = types.ModuleType("cupy.cuda.driver"), types.ModuleType("cupy.cuda.runtime")
    cdrv.launchKernel, crt.is_hip = launch_kernel, False
    cupy.cuda, cuda.driver, cuda.runtime = cuda, cdrv, crt
    bindings = types.ModuleType("cuda.bindings.driver")
    monkeypatch.setitem(driver._state, "api", bindings)
    monkeypatch.delenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", raising=False)

    def found():
        driver._state.pop("int_launch", None)
        return driver.int_launch()
    try:
        monkeypatch.delitem(sys.modules, "cupy", raising=False)
        assert found() is None                          # CuPy not imported: not imported for this
        for name, mod in (("cupy", cupy), ("cupy.cuda", cuda), ("cupy.cuda.driver", cdrv),
                          ("cupy.cuda.runtime", crt)):
            monkeypatch.setitem(sys.modules, name, mod)
        assert found() is launch_kernel
        assert driver.int_launch() is launch_kernel     # kept
        monkeypatch.setenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "1")
        assert found() is None                          # stream 0 would mean another stream
        monkeypatch.setenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0")
        crt.is_hip = True
        assert found() is None                          # a ROCm build of CuPy
        crt.is_hip = False
        monkeypatch.setitem(driver._state, "api", fd.FakeDriver())
        assert found() is None                          # not cuda.bindings' driver
    finally:
        driver._state.pop("int_launch", None)
