"""Kernel objects: ``k[grid, block](*args)``, ``k.launch(...)``, ``k.attributes``, ``k.bench(...)``.

One concept: a compiled kernel and every way to run it. Launching is here; ``bench``,
``profile``, ``check``, ``verify`` and ``timeline`` are its methods, each a check of its
keywords and a hand-off to the module that does the work (``..measure``, ``..nsight``,
``..verify``), and their docstrings are the ``?`` help.
"""

from __future__ import annotations

import dataclasses

import functools
import sys
from typing import Sequence

from ...compile.compiler import CompilationResult
from ...errors import ArgumentError, KernelHangError
from .. import driver
from ..driver import CudaError, api, check
from ..hang import waiting, watchdog
from ..helper import worker
from ..measure import bench as _bench, history as bench_history
from ..measure.bench import BenchError, Timing  # noqa: F401  (kernel.BenchError)
from ..measure.timeline.recording import timeline as _timeline
from . import attributes as launch_attrs, device_print
from .attributes import Attributes, flag, prepared
from .configuration import checked_dims, checked_shared, stream_handle
from .form import launch_form
from .packer import Packer
from .params import Param
from .staging import release
from .subscript import Launcher, configured

__all__ = ["Kernel"]

_ATTRIBUTES = {
    "registers": "CU_FUNC_ATTRIBUTE_NUM_REGS",
    "shared": "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES",
    "constant": "CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES",
    "local": "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES",
    "max_threads_per_block": "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
    "max_dynamic_shared": "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
    "ptx_version": "CU_FUNC_ATTRIBUTE_PTX_VERSION",
    "binary_version": "CU_FUNC_ATTRIBUTE_BINARY_VERSION",
}


def _remote_for(on):
    """The ``cuda_magic.remote()`` session an ``on=`` call runs on; an error without one."""
    far = driver.remote()
    if far is None:
        raise ArgumentError(f"on={on!r}: runs on the GPUs of a Dask cluster: "
                            f"cuda_magic.remote('tcp://host:8786') first")
    return far


class Kernel:
    """A compiled kernel, launchable on arrays.

    ``k[grid, block](*args)`` or ``k[grid, block, shared_mem, stream](*args)``
    (grid and block: an int or a tuple of up to three), or
    ``k.launch(grid=, block=, args=, shared_mem=0, stream=None, cluster=None,
    cooperative=False, pdl=False)``, or ``k[config](*args)`` / ``k[config, stream](*args)``
    with a cuda.core ``LaunchConfig`` (its grid counts clusters when it has a cluster).
    Arguments follow the C signature (``k.params``): NumPy arrays are copied
    to the GPU and back (non-const pointers) after the kernel finished;
    CuPy/PyTorch/Numba arrays go by pointer, asynchronously on ``stream``
    (default: the legacy default stream, which orders with CuPy's and
    PyTorch's defaults); Python numbers are cast to the declared type.
    Kernels whose source uses ``printf``/``assert`` synchronise after each
    launch so their output appears in the cell.
    """

    unavailable: str | None = None   # set when no build of an arch list runs on this GPU
    module = None                    # the %%cuda Module that holds it (what export() reads)
    timeline = launch_form(_timeline)   # k.timeline[grid, block](*args): runtime/measure/timeline/

    def __init__(self, name: str, params: Sequence[Param], result: CompilationResult,
                 symbol: str | None = None, printf: bool = False):
        self.name, self.params, self.result = name, tuple(params), result
        self.symbol = symbol
        self.printf = printf
        self._bound = None          # (library, CUkernel, Packer, cuLaunchKernel)
        self._fast = None           # the launch plan's class and handles, at the first launcher
        self._launchers: dict = {}
        self._checked: dict = {}    # k.launch with attributes: key -> (dims, shared, stream, attrs)
        self._max_dynamic = 48 * 1024

    # -- loading ---------------------------------------------------------------------------
    def _bind(self):
        b = self._bound
        if b is not None:
            return b
        self.require_arch()
        r = self.result
        lib = driver.load(r.key, r.binary, r.format, r.arch)
        symbol = self.symbol or self._find_symbol(lib)
        handle = lib.kernel(symbol)
        packer = Packer(self.name, self.params, self._layout(handle))
        self.symbol = symbol
        self._bound = b = (lib, handle, packer, api().cuLaunchKernel)
        self._max_dynamic = 48 * 1024
        self._fast = None
        return b

    def spare_packer(self) -> Packer:
        """A Packer of its own, whose packed arguments the next ``k(...)`` does not overwrite
        (``bench(fresh_inputs=True)`` keeps one packed argument list per set)."""
        _, handle, _, _ = self._bind()
        return Packer(self.name, self.params, self._layout(handle))

    def handle_and_packer(self, shared: int):
        """(CUkernel handle, Packer) of the kernel, loaded now if it is not, with ``shared`` bytes
        of dynamic shared memory allowed: what ``bench.measure`` launches and packs with."""
        b = self._bind()
        if shared > self._max_dynamic:
            self._allow_shared(b[1], shared)
        return b[1], b[2]

    def require_arch(self) -> None:
        """Raise the launch's CudaError when no build of an arch list runs on this GPU (what
        ``k.profile``/``k.check`` ask before starting a tool)."""
        if self.unavailable:
            raise CudaError(f"{self.name}: {self.unavailable}", "CUDA_ERROR_NO_BINARY_FOR_GPU")

    def _find_symbol(self, lib) -> str:
        from ...compile.compiler import match_symbol
        symbols = lib.symbols()
        found = match_symbol(self.name, symbols)
        if found is None:
            raise CudaError(f"kernel '{self.name}' is not in the compiled module (it has: "
                            f"{', '.join(symbols) or 'no kernels'})", "CUDA_ERROR_NOT_FOUND")
        return found

    @staticmethod
    def _layout(handle) -> list[tuple[int, int]]:
        drv = api()
        out = []
        while True:
            err, offset, size = drv.cuKernelGetParamInfo(handle, len(out))
            if err == drv.CUresult.CUDA_ERROR_INVALID_VALUE:  # past the last parameter
                return out
            check((err,), "cuKernelGetParamInfo")
            out.append((int(offset), int(size)))

    def load(self) -> "Kernel":
        """Load the module now (otherwise the first launch does); returns the kernel."""
        self._bind()
        return self

    @property
    def loaded(self) -> bool:
        return self._bound is not None

    # -- launching -------------------------------------------------------------------------
    def __getitem__(self, key):
        try:
            launcher = self._launchers.get(key)
        except TypeError:  # an unhashable stream object
            launcher = None
        if launcher is None:
            given = launch_attrs.from_launch_config(key, self.name)
            if given is not None:          # a cuda.core LaunchConfig: k.launch's keywords
                return functools.partial(configured, self, given)
            if not isinstance(key, tuple) or not 2 <= len(key) <= 4:
                raise ArgumentError(f"launch as {self.name}[grid, block](*args), "
                                    f"{self.name}[grid, block, shared_mem, stream](*args) or "
                                    f"{self.name}[cuda.core LaunchConfig](*args)")
            grid, block = checked_dims(key[0], "grid"), checked_dims(key[1], "block")
            shared = checked_shared(key[2] if len(key) > 2 else 0)
            compiled = launch_attrs.compiled_cluster(self)
            if compiled is not None:       # __cluster_dims__: the clusters must tile the grid
                launch_attrs.check_grid(self.name, grid, compiled)
            launcher = Launcher(self, grid + block, shared,
                                 stream_handle(key[3] if len(key) > 3 else None))
            if len(self._launchers) > 64:
                self._launchers.clear()
            try:
                self._launchers[key] = launcher
            except TypeError:  # an unhashable stream object
                pass
        return launcher

    def launch(self, grid, block, args: Sequence = (), shared_mem: int = 0, stream=None, *,
               cluster=None, cooperative: bool = False, pdl: bool = False,
               isolate: bool = False) -> None:
        """Launch with keywords: ``k.launch(grid=(64,), block=256, args=(x, y, 2.0, n))``.

        Launch attributes (``cuLaunchKernelEx``, :mod:`cuda_magic.runtime.launch.attributes`):
        ``cluster=(2, 1, 1)`` thread-block clusters of that shape (it must divide the grid; at
        most 16 blocks, 8 portable); ``cooperative=True`` a cooperative launch (grid-wide
        ``cg::this_grid().sync()``; the grid must fit on the GPU at once); ``pdl=True``
        programmatic dependent launch (the kernel may start before the previous one on the
        stream ends; ``cudaGridDependencySynchronize`` / ``griddepcontrol.wait`` waits).
        ``isolate=True``: this launch runs in the helper process (NumPy arguments), as under
        ``cuda_magic.isolate(True)``: if the kernel hangs or faults, only the helper ends."""
        isolate = flag(isolate, "isolate", self.name)
        if not isolate and cluster is None and cooperative is False and pdl is False:
            self[grid, block, shared_mem, stream](*args)
            return
        cooperative, pdl = flag(cooperative, "cooperative", self.name), flag(pdl, "pdl", self.name)
        plan, key = None, None
        if not isolate:
            key = (grid, block, shared_mem, stream, cluster, cooperative, pdl)
            try:
                plan = self._checked.get(key)      # checked once per configuration
            except TypeError:                      # a list, an unhashable stream object
                key = None
        if plan is None:
            dims, shared, attrs = prepared(self, grid, block, shared_mem, Attributes.of(
                self.name, cluster=cluster, cooperative=cooperative, pdl=pdl))
            if isolate:
                self.require_arch()
                return worker.call(self, "run", dims, shared, tuple(args), attrs)
            plan = (dims, shared, stream_handle(stream), attrs)
            if key is not None and not driver.elsewhere():
                if len(self._checked) > 64:
                    self._checked.clear()
                self._checked[key] = plan
        self.launch_raw(*plan[:3], tuple(args), plan[3])

    def __call__(self, *args, **kwargs):
        raise ArgumentError(f"give the launch configuration first: {self.name}[grid, block](*args)")

    def launch_raw(self, dims, shared, stream, args, attrs=None) -> None:
        """One launch the full way, with everything already in the runtime's own form: ``dims``
        grid + block (6 ints), ``shared`` bytes, ``stream`` an int handle (0: the legacy
        default stream), ``args`` a tuple.  What ``k[grid, block](*args)`` does after checking
        its key; the entry for the helper processes (the worker, the sweep's helpers, the
        tools' launcher), which replay launches recorded elsewhere.  After a fault, or under
        ``isolate()``, it goes to the worker.  ``attrs``: the launch's
        :class:`~.attributes.Attributes` for ``cuLaunchKernelEx`` (None: none), in the helper
        process too."""
        b = self._bound
        if b is None or driver.elsewhere():
            self.require_arch()
            if driver.elsewhere():
                return worker.call(self, "run", dims, shared, args, attrs)
            b = self._bind()
        if shared > self._max_dynamic:
            self._allow_shared(b[1], shared)
        staged: list = []
        launch = None
        try:
            params = b[2].pack(args, staged)
            if staged or self.printf:
                launch = waiting.Launch.of(self, dims)
            if attrs is not None:
                def run():
                    launch_attrs.launch_ex(self, b[1], dims, shared, stream, params, attrs)
                    if self.printf:
                        self._printed(stream, launch)
                if self.printf:
                    device_print.captured(run, getattr(self.result, "source", ""))
                else:
                    run()
            elif self.printf:
                device_print.captured(lambda: self._launch(b[1], dims, shared, stream, params, True,
                                                           waited=launch),
                                      getattr(self.result, "source", ""))
            else:
                err = b[3](b[1], *dims, shared, stream, params, 0)[0]
                if err != 0:
                    self._launch(b[1], dims, shared, stream, params, False, err)
        except KernelHangError:
            raise                      # staged memory stays: freeing it would wait for the kernel
        except BaseException:
            if staged:
                release(staged, stream, copy_back=False)
            raise
        if staged:
            try:
                release(staged, stream, copy_back=True, launch=launch)
            except CudaError as exc:   # the kernel faulted: offer the k.check(...) that finds where
                from ..nsight.run import add_check_hint
                raise add_check_hint(exc, self, dims, shared)
        elif not self.printf:
            watchdog.note(stream, self, dims)    # it returned at once: watch for a hang

    def _printed(self, stream: int, launch) -> None:
        """Wait for a printf kernel (polled), then synchronise once so the driver flushes what
        it printed."""
        waiting.stream(stream, launch, f"running {self.name}")
        check(api().cuCtxSynchronize(), f"running {self.name}")

    def _launch(self, handle, dims, shared, stream, params, sync: bool, err: int = 0,
                waited=None) -> None:
        err = driver.call_in_context(api().cuLaunchKernel, handle, *dims, shared, stream, params, 0,
                                     err=err)
        if err != 0:
            check((err,), f"launching {self.name}[grid={dims[:3]}, block={dims[3:]}, "
                          f"shared_mem={shared}]")
        if sync:
            self._printed(stream, waited)

    def allow_shared(self, shared: int) -> None:
        """Bind the kernel and raise its dynamic shared memory limit to ``shared`` bytes if it
        is above it (a launch over 48 KB does this; said once per kernel)."""
        b = self._bind()
        if shared > self._max_dynamic:
            self._allow_shared(b[1], shared)

    def _allow_shared(self, handle, shared: int) -> None:
        drv = api()
        A = drv.CUfunction_attribute
        most = int(check(drv.cuDeviceGetAttribute(
            drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            driver.device()), "cuDeviceGetAttribute"))
        static = int(check(drv.cuKernelGetAttribute(A.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, handle,
                                                    driver.device()), "cuKernelGetAttribute"))
        if shared + static > most:
            raise ArgumentError(f"{self.name}: {shared:,} bytes of dynamic shared memory + "
                                f"{static:,} static = {shared + static:,}; this GPU gives a block "
                                f"at most {most:,} bytes (MAX_SHARED_MEMORY_PER_BLOCK_OPTIN): at "
                                f"most {max(most - static, 0):,} dynamic")
        check(drv.cuKernelSetAttribute(A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared,
                                       handle, driver.device()),
              f"allowing {shared} bytes of dynamic shared memory for {self.name}")
        if not self.__dict__.get("_said_shared"):       # said once per kernel
            self._said_shared = True
            print(f"{self.name}: {shared:,} bytes of dynamic shared memory asked for: its limit "
                  f"raised from 48 KB (cuKernelSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                  file=sys.stderr)
        self._max_dynamic = shared

    # -- inspecting and timing -------------------------------------------------------------
    @property
    def attributes(self) -> dict[str, int]:
        """The driver's view of the loaded kernel: registers, shared/constant/local bytes, ..."""
        if driver.elsewhere():
            return worker.call(self, "attributes")
        _, handle, _, _ = self._bind()
        drv = api()
        out = {}
        for key, attr in _ATTRIBUTES.items():
            out[key] = int(check(drv.cuKernelGetAttribute(getattr(drv.CUfunction_attribute, attr),
                                                           handle, driver.device()), attr))
        return out

    def occupancy(self, block: int, shared: int = 0) -> int:
        """Resident blocks per SM at ``block`` threads and ``shared`` bytes of dynamic shared
        memory, as the driver computes it (``cuOccupancyMaxActiveBlocksPerMultiprocessor``).
        ``Module.occupancy`` shows it beside the figure computed from the binary."""
        if driver.elsewhere():
            return worker.call(self, "occupancy", block, shared)
        self.allow_shared(shared)                   # as a launch would: the opt-in
        _, handle, _, _ = self._bind()
        drv = api()
        func = check(drv.cuKernelGetFunction(handle), "cuKernelGetFunction")
        return int(check(drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(func, int(block), int(shared)),
                         "cuOccupancyMaxActiveBlocksPerMultiprocessor"))

    @launch_form
    def bench(self, grid, block, *args, repeat: int = 100, warmup: int | None = None,
              flush: bool = True, graph: bool | int = False, nbytes: float | None = None,
              flops: float | None = None, dtype: str = "float32", shared_mem: int = 0,
              stream=None, cluster=None, cooperative: bool = False, pdl: bool = False, on=None,
              timer: str = "auto", check=None, fresh_inputs: bool = False,
              protocol: str | None = None, against=None):
        """Time the kernel like a benchmark harness; returns a :class:`Timing`.

        Warmup launches first (``warmup=None``: about 25 ms of them), then ``repeat`` timed
        launches; with ``flush`` (default) a memset of twice the L2 on the same stream before
        each, outside the timing. ``timer``: "auto" (CUPTI's own start and end of each kernel
        when cupti-python is installed, else CUDA events), "events" (a pair of CUDA events
        around each launch: a few microseconds of launch gap on kernels under ~10 us) or
        "cupti"; the Timing says which ran. ``graph=True`` (or a number of launches, default
        20; 0 or False: none) times CUDA graphs of that many launches and reports graph time /
        launches, leaving launch overhead out; the flush then runs before each graph only, so
        the L2 is warm after each graph's first launch (the Timing's ``l2`` and its views say
        so). ``nbytes``/``flops`` per launch give GB/s and TFLOP/s as a fraction of the
        device's peak, and ``Timing.sol`` the speed-of-light bound (``dtype``: float32,
        float64 or float16). The Timing shows median, 95% CI of the median, IQR, the SM
        clock (and says when it changed during the runs), and a plot; it is kept in
        ``cuda_magic.history(name)``.  NumPy arguments are copied to the GPU once, before
        timing, and not copied back.

        ``check``: after the timed runs, one more launch on outputs first filled with a
        sentinel, judged against ``check`` by ``k.verify``'s rules (the reference of
        ``k.verify``: a function, another kernel, or the expected arrays; or a dict with
        ``reference`` and ``ulp``/``rtol``/``atol``/``reduction``/``outputs``): a kernel that
        did its work only once, or skipped it, fails; the Timing's ``check`` is the Verdict,
        and its view says first when the outputs are wrong.  ``fresh_inputs=True``: the timed
        launches rotate copies of the const pointer inputs, each shifted, so no launch can
        reuse the last one's answer.  ``protocol="sol"``: SOL-ExecBench's protocol (10
        warm-up + 3 trials of 50 timed launches, 256 MiB flushed before each, inputs shifted
        every launch).  ``against``: another kernel, timed in turns with this one on the same
        arguments: returns :func:`cuda_magic.ab`'s verdict instead of a Timing.

        Written like a launch, ``k.bench[grid, block](*args, repeat=...)`` is the same call
        (``k.bench[grid, block, shared_mem, stream]`` too).  ``cluster``, ``cooperative``,
        ``pdl``: the launch attributes of :meth:`launch`, on every timed launch.  ``on``:
        under ``cuda_magic.remote()``, "all" or a list of the cluster's GPUs: the same bench on
        each, side by side; returns an :class:`~cuda_magic.runtime.remote.Across` table (GPU,
        median, CI, % of peak).  See docs/measure.md and docs/remote.md.
        """
        if against is not None:
            from ..measure.ab import ab
            if on is not None or check is not None or cluster is not None or cooperative or pdl:
                raise BenchError("against= times two kernels in turns here: leave on=, check= "
                                 "and the launch attributes out")
            return ab(self, against, grid, block, *args, repeat=repeat, warmup=warmup,
                      flush=flush, graph=graph, nbytes=nbytes, flops=flops, dtype=dtype,
                      shared_mem=shared_mem, stream=stream, timer=timer,
                      fresh_inputs=fresh_inputs, protocol=protocol)
        if on is not None:
            return _remote_for(on).across(self, "bench", on, grid, block, *args, repeat=repeat, warmup=warmup,
                          flush=flush, graph=graph, nbytes=nbytes, flops=flops, dtype=dtype,
                          shared_mem=shared_mem, stream=stream, cluster=cluster,
                          cooperative=cooperative, pdl=pdl, timer=timer, check=check,
                          fresh_inputs=fresh_inputs, protocol=protocol)
        opts = _bench.options(repeat=repeat, warmup=warmup, flush=flush, graph=graph,
                              nbytes=nbytes, flops=flops, dtype=dtype, timer=timer,
                              fresh_inputs=fresh_inputs, protocol=protocol)
        rules = _bench.check_rules(check)
        dims, shared_mem, attrs = prepared(self, grid, block, shared_mem, Attributes.of(
            self.name, cluster=cluster, cooperative=cooperative, pdl=pdl))
        if driver.elsewhere():
            self.require_arch()
            timing = worker.call(self, "bench", dims, shared_mem, args, opts, attrs)
        else:
            timing = _bench.measure(self, dims, args, shared_mem, stream_handle(stream), attrs=attrs,
                                    **opts)
        if rules is not None:
            timing.check = self.verify(grid, block, *args, inputs="given", runs=1, offset=False,
                                       shared_mem=shared_mem, **rules)
        return bench_history.record(self, timing, args)

    @launch_form
    def profile(self, grid, block, *args, shared_mem: int = 0, metrics=None, set: str = "default",
                clock_control: str = "base", cluster=None, cooperative: bool = False,
                pdl: bool = False):
        """Run this launch once under Nsight Compute (ncu), in a helper process that loads the
        same binary bytes; returns a :class:`~cuda_magic.runtime.nsight.reports.Profile`: duration,
        speed of light, occupancy, L1/L2/DRAM throughput, warp stalls, per-line metrics
        (``.lines``) and the ``.ncu-rep`` path. ``metrics``: more metric names to collect;
        ``set``: an ncu section set (``basic``, ``full``...) on top of ours; ``cluster``,
        ``cooperative``, ``pdl``: the launch attributes of :meth:`launch`. See docs/profiling.md.
        """
        from ..nsight import run as tools
        dims, shared, attrs = prepared(self, grid, block, shared_mem, Attributes.of(
            self.name, cluster=cluster, cooperative=cooperative, pdl=pdl))
        if driver.remote() is not None:           # ncu runs on the worker, beside its GPU
            self.require_arch()
            return worker.call(self, "profile", dims, shared, args, dict(
                metrics=metrics, set=set, clock_control=clock_control), attrs)
        return tools.profile(self, dims, shared, args, metrics=metrics, set=set,
                             clock_control=clock_control, attrs=attrs)

    @launch_form
    def check(self, grid, block, *args, tool: str = "memcheck", shared_mem: int = 0,
              print_limit: int = 10, options=(), cluster=None, cooperative: bool = False,
              pdl: bool = False):
        """Replay this launch under compute-sanitizer (``tool``: memcheck, racecheck, initcheck,
        synccheck) in a helper process with the same binary bytes; returns a
        :class:`~cuda_magic.runtime.nsight.reports.Check`: the first errors with cell line, block and
        thread. ``options``: more compute-sanitizer flags, one per item; ``cluster``,
        ``cooperative``, ``pdl``: the launch attributes of :meth:`launch`. See docs/profiling.md.
        """
        from ..nsight import run as tools
        dims, shared, attrs = prepared(self, grid, block, shared_mem, Attributes.of(
            self.name, cluster=cluster, cooperative=cooperative, pdl=pdl))
        if driver.remote() is not None:           # compute-sanitizer runs on the worker
            self.require_arch()
            return worker.call(self, "check", dims, shared, args, dict(
                tool=tool, print_limit=print_limit, options=options), attrs)
        return tools.check(self, dims, shared, args, tool=tool, print_limit=print_limit,
                           options=options, attrs=attrs)

    @launch_form
    def verify(self, grid, block, *args, reference, outputs=None, inputs="random", runs: int = 2,
               shared_mem: int = 0, ulp=None, rtol=None, atol=None, reduction=None, tile=None,
               seed: int = 0, inplace=(), offset: bool = True, on=None):
        """Launch the kernel on fresh inputs and check what it writes against ``reference``;
        returns a :class:`~cuda_magic.correctness.Verdict` (``bool(v)``: all outputs pass; its
        view: per output the ULP errors, the worst element, the mismatch map).
        ``k.verify[grid, block](*args, reference=...)`` is the same call.

        Outputs: the non-const pointer parameters given an array (``outputs=[names]`` to say).
        Before each launch every output is filled with a sentinel (floats: a NaN pattern;
        fp6/fp4: their most negative value; integers: 0x5A bytes), which verify() is given as
        the initial contents: a kernel that writes nothing is "unchanged", one that writes
        zeros "zeros". ``inplace=[names]``: outputs the kernel also reads (``y = a*x + y``):
        they start from input values instead. The arrays passed are never written.

        ``inputs``: "given" (the arrays as passed), "random" (seeded by ``seed``: normal values
        for floats; integers uniform between the min and max of the array passed, so indices
        stay valid), "edge" (±0, ±Inf, NaN, subnormals, huge and tiny magnitudes; integers
        their extremes); a dict ``{name: mode}`` sets it per array (the others "given").
        Scalars are passed as given.  With "edge" and a by-value int parameter named like a
        count (``n``, ``size``, ``count``, ``numel``, ``len``...) two more launches follow,
        reported as outputs of their own: ``"y (n=257)"`` with the count cut to one past a
        multiple of the block (``k * block.x + 1``: the last block nearly empty), every array
        of that length given to the reference cut to it, and the elements past it required to
        keep the sentinel (no writes past n); and ``"y (x +1 element)"`` with each input of
        that length passed one element past an aligned address (n - 1 elements: the reference
        gets ``x[1:]``) -- misaligned for vector loads although the signature allows it.  A
        kernel that assumes 16-byte alignment faults there (a fault ends CUDA in the process:
        later launches go to the helper process); it is reported as a failure.
        ``offset=False`` skips that launch; it is skipped in the helper process (NumPy only).

        ``reference``: a function of host copies of all the arguments in order (NumPy arrays;
        CPU tensors for PyTorch arguments), returning the output (one), a tuple in output
        order, a dict by name, or None after writing the output arrays it was given; or
        another Kernel (launched with the same grid and block on copies; ``k2[grid, block]``
        for its own).  ``runs``: the kernel runs that many times on the same inputs; the
        results are compared bitwise (``deterministic``, ``spread``: the most ULPs between
        runs).  An output that fails and whose runs differ by more than the rule allows is
        "nondeterministic" (a race); atomics in another order pass under ``reduction=K``.

        Rules (``ulp``, ``rtol``/``atol``, ``reduction``) and categories: see
        :func:`cuda_magic.verify`.  ``tile``: the mismatch map's tile (C order; a dict per
        output), by default the block's extent along the output's axes (x = last axis; a
        (32, 8) block looping over a 32 x 32 tile gives (32, 32)).  NumPy, CuPy and PyTorch
        arguments (CuPy/PyTorch outputs are judged on the device); in the helper process
        (``isolate()``, after a fault, ``remote()``) NumPy arguments.  ``on``: under
        ``cuda_magic.remote()``, "all" or a list of the cluster's GPUs: the same check on each;
        an :class:`~cuda_magic.runtime.remote.Across` table of Verdicts.  See docs/verify.md.
        """
        if on is not None:
            return _remote_for(on).across(self, "verify", on, grid, block, *args, reference=reference,
                          outputs=outputs, inputs=inputs, runs=runs, shared_mem=shared_mem,
                          ulp=ulp, rtol=rtol, atol=atol, reduction=reduction, tile=tile,
                          seed=seed, inplace=inplace, offset=offset)
        from ..verify import verifying
        far = driver.remote()
        verdict = verifying.verify_kernel(self, checked_dims(grid, "grid"), checked_dims(block, "block"),
                                       args, reference=reference, outputs=outputs, inputs=inputs,
                                       runs=runs, shared_mem=checked_shared(shared_mem), ulp=ulp,
                                       rtol=rtol, atol=atol, reduction=reduction, tile=tile,
                                       seed=seed, inplace=inplace, offset=offset)
        if far is not None:                       # which remote GPU ran the launches
            verdict = dataclasses.replace(verdict, ran_on=far.gpu().label)
        return verdict

    def __repr__(self) -> str:
        sig = ", ".join(str(p) for p in self.params)
        state = "loaded" if self.loaded else "not loaded"
        return f"<Kernel {self.name}({sig}) {self.result.arch} {self.result.format}, {state}>"
