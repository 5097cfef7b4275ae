"""What a GPU can do and what its clock did: :class:`Device` (peaks) and :class:`Clocks`.

``device_info()`` reads the driver's device attributes once per device; ``Device`` turns them
into the DRAM bandwidth and FMA peaks a :class:`~cuda_magic.runtime.measure.bench.Timing` is a
fraction of.  ``Clocks`` is the SM clock NVML reads right before and after the timed launches
(:func:`nvml_reader`, :func:`read_clock`, :func:`clocks_after`, used by ``bench.measure``).
Nothing here touches CUDA before ``device_info`` or ``nvml_reader`` is called.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ...errors import BenchError, quote
from .. import driver
from ..driver import api, check

__all__ = ["Device", "Clocks", "device_info", "flop_type", "nvml_reader", "read_clock",
           "clocks_after", "FMA_PER_CLOCK", "UNSURE", "THROTTLE_DROP"]


# ---- peaks ------------------------------------------------------------------------------------
#
# FMA results per clock per SM, from NVIDIA's CUDA C++ Programming Guide, "Arithmetic
# Instructions", table "Throughput of Native Arithmetic Instructions (operations per clock
# cycle per multiprocessor)"; an FMA is 2 FLOP.  (major, minor) entries first, then
# (major, None) for a whole family.  FP16 is the non-tensor rate of packed half2 FMA, counted
# per half result.  UNSURE marks entries not read from that table: checked against NVIDIA's
# whitepaper figures instead (A100: 78 TFLOP/s FP16 = 4x FP32; H100 SXM: 134 = 2x FP32 at 256
# per SM; GA102 and AD102: FP16 = FP32, 128 per SM; the guide's FP16 column says 256 for 8.6),
# or taken from the family rule.  Tensor cores are not counted.
FMA_PER_CLOCK: dict[str, dict[tuple, int]] = {
    "float32": {(7, None): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128,
                (10, None): 128, (12, None): 128},
    "float64": {(7, 0): 32, (7, 2): 32, (7, 5): 2, (8, 0): 32, (8, 6): 2, (8, 7): 2, (8, 9): 2,
                (9, 0): 64, (10, 0): 64, (12, None): 2},
    "float16": {(7, None): 128, (8, 0): 256, (8, 6): 128, (8, 7): 256, (8, 9): 128, (9, 0): 256,
                (10, 0): 256, (12, None): 128},
}
UNSURE: set[tuple[str, tuple]] = {("float64", (7, 2)), ("float16", (8, 6)), ("float16", (8, 7)),
                                  ("float16", (8, 9)), ("float16", (10, 0)),
                                  ("float16", (12, None))}

_DTYPES = {"float32": "float32", "fp32": "float32", "f32": "float32", "float": "float32",
           "single": "float32", "float64": "float64", "fp64": "float64", "f64": "float64",
           "double": "float64", "float16": "float16", "fp16": "float16", "f16": "float16",
           "half": "float16"}


def flop_type(dtype) -> str:
    """'float32', 'float64' or 'float16' from a name or a NumPy/PyTorch/CuPy dtype."""
    try:
        name = dtype if isinstance(dtype, str) else \
            getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or str(dtype)
        name = str(name).lower().removeprefix("torch.")
    except Exception:               # e.g. an int past the int->str digit limit
        name = None
    if name not in _DTYPES:
        raise BenchError(f"dtype={quote(dtype)}: the FLOP type for the peak, one of float32, "
                         f"float64, float16")
    return _DTYPES[name]


@dataclass(frozen=True)
class Device:
    """What the peaks come from, as the driver reports it (``CU_DEVICE_ATTRIBUTE_*``)."""

    name: str
    cc: tuple[int, int]            # compute capability
    sms: int                       # MULTIPROCESSOR_COUNT
    sm_clock_khz: int              # CLOCK_RATE: the maximum SM clock
    mem_clock_khz: int             # MEMORY_CLOCK_RATE
    bus_width_bits: int            # GLOBAL_MEMORY_BUS_WIDTH
    l2_bytes: int                  # L2_CACHE_SIZE

    ATTRIBUTES = {"cc_major": "COMPUTE_CAPABILITY_MAJOR", "cc_minor": "COMPUTE_CAPABILITY_MINOR",
                  "sms": "MULTIPROCESSOR_COUNT", "sm_clock_khz": "CLOCK_RATE",
                  "mem_clock_khz": "MEMORY_CLOCK_RATE", "bus_width_bits": "GLOBAL_MEMORY_BUS_WIDTH",
                  "l2_bytes": "L2_CACHE_SIZE"}

    @classmethod
    def from_attributes(cls, attrs: Mapping[str, int], name: str = "") -> "Device":
        """From ``{"MULTIPROCESSOR_COUNT": 132, ...}`` (names without ``CU_DEVICE_ATTRIBUTE_``)."""
        a = {key: int(attrs[attr]) for key, attr in cls.ATTRIBUTES.items()}
        return cls(name, (a.pop("cc_major"), a.pop("cc_minor")), **a)

    @property
    def arch(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def peak_gbps(self) -> float:
        """DRAM bandwidth: 2 (double data rate) x memory clock x bus width / 8, in GB/s (1e9)."""
        return 2 * self.mem_clock_khz * 1e3 * self.bus_width_bits / 8 / 1e9

    def fma_per_clock(self, dtype: str = "float32") -> tuple[int | None, bool]:
        """(FMA results per clock per SM for ``dtype``, whether the table is sure of it)."""
        table = FMA_PER_CLOCK[flop_type(dtype)]
        for key in (self.cc, (self.cc[0], None)):
            if key in table:
                return table[key], (flop_type(dtype), key) not in UNSURE
        return None, False

    def peak_tflops(self, dtype: str = "float32") -> float | None:
        """SMs x max SM clock x FMA per clock per SM x 2, in TFLOP/s (1e12); None if the
        table has no figure for this architecture."""
        per, _ = self.fma_per_clock(dtype)
        return None if per is None else self.sms * self.sm_clock_khz * 1e3 * per * 2 / 1e12


_DEVICES: dict[int, Device] = {}


def device_info() -> Device:
    """The current GPU's :class:`Device` (cached); :class:`NoGPUError` without one."""
    dev = driver.device()
    got = _DEVICES.get(int(dev))
    if got is None:
        drv = api()
        attrs = {}
        for attr in Device.ATTRIBUTES.values():
            enum = getattr(drv.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{attr}")
            attrs[attr] = check(drv.cuDeviceGetAttribute(enum, dev), f"cuDeviceGetAttribute({attr})")
        raw = check(drv.cuDeviceGetName(256, dev), "cuDeviceGetName")
        name = raw.split(b"\0")[0].decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        got = _DEVICES[int(dev)] = Device.from_attributes(attrs, name)
    return got


# ---- clocks -----------------------------------------------------------------------------------

THROTTLE_DROP = 0.05       # an SM clock 5% below the one before, or below the max, is a note

# NVML's clocks event reasons (nvml.h, nvmlClocksEventReason*), the ones that slow a kernel.
_REASONS = {0x2: "applications clocks setting", 0x4: "software power cap",
            0x8: "hardware slowdown", 0x10: "sync boost", 0x20: "software thermal slowdown",
            0x40: "hardware thermal slowdown", 0x80: "hardware power brake",
            0x200: "board limit", 0x400: "reliability"}


@dataclass(frozen=True)
class Clocks:
    """The SM clock (MHz, from NVML) right before and right after the timed launches."""

    before_mhz: int | None = None
    after_mhz: int | None = None
    max_mhz: int | None = None
    reasons: tuple[str, ...] = ()      # NVML's clocks event reasons after the run
    note: str = ""                     # why there is no figure, when there is none

    @property
    def changed(self) -> bool:
        """The SM clock read after the runs differs from the one read before by more than 1%
        (NVML reports in steps of about 15 MHz)."""
        if self.before_mhz is None or self.after_mhz is None:
            return False
        return abs(self.after_mhz - self.before_mhz) > 0.01 * self.before_mhz

    @property
    def throttled(self) -> bool:
        """The clock fell by more than 5% during the run, or ended more than 5% below its max."""
        if self.before_mhz is None or self.after_mhz is None:
            return False
        fell = self.after_mhz < self.before_mhz * (1 - THROTTLE_DROP)
        low = self.max_mhz is not None and self.after_mhz < self.max_mhz * (1 - THROTTLE_DROP)
        return fell or low


_NVML: dict = {}


def nvml_reader(dev):
    """(sm_mhz(), max_mhz(), reasons()) for ``dev`` from NVML (cuda.bindings.nvml, else
    pynvml), or a str saying why there is none.  Cached per process."""
    key = int(dev)
    if key in _NVML:
        return _NVML[key]
    bus = check(api().cuDeviceGetPCIBusId(32, dev), "cuDeviceGetPCIBusId")
    bus = bus.split(b"\0")[0].decode() if isinstance(bus, bytes) else str(bus)
    try:
        try:
            from cuda.bindings import nvml
            nvml.init_v2()
            h = nvml.device_get_handle_by_pci_bus_id_v2(bus)
            sm = nvml.ClockType.CLOCK_SM
            reader = (lambda: nvml.device_get_clock_info(h, sm),
                      lambda: nvml.device_get_max_clock_info(h, sm),
                      lambda: nvml.device_get_current_clocks_event_reasons(h))
        except ImportError:
            try:
                import pynvml
            except ImportError:
                raise ImportError("no NVML bindings: cuda.bindings.nvml (cuda-bindings 13.x) or "
                                  "pynvml (nvidia-ml-py)") from None
            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByPciBusId(bus)
            sm = pynvml.NVML_CLOCK_SM
            reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
            reader = (lambda: pynvml.nvmlDeviceGetClockInfo(h, sm),
                      lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, sm), lambda: reasons(h))
        reader[0]()
    except Exception as exc:                # no NVML library, no permission, a MIG slice...
        reader = f"SM clock not read ({type(exc).__name__}: {str(exc)[:120]})"
    _NVML[key] = reader
    return reader


def read_clock(reader) -> int | None:
    """The SM clock now, in MHz, from an :func:`nvml_reader`; None if NVML does not say."""
    try:
        return int(reader[0]())
    except Exception:
        return None


def clocks_after(reader, before: int | None) -> Clocks:
    """The :class:`Clocks` of a run: ``before`` (read with :func:`read_clock`), the clock now,
    its max and NVML's reasons; with no reader, a Clocks whose note says why."""
    if isinstance(reader, str):
        return Clocks(note=reader)
    after = read_clock(reader)
    try:
        top = int(reader[1]())
    except Exception:
        top = None
    try:
        bits = int(reader[2]())
        reasons = tuple(text for bit, text in _REASONS.items() if bits & bit)
    except Exception:
        reasons = ()
    return Clocks(before, after, top, reasons)
