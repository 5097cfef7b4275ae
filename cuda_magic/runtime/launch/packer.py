"""The packer: one kernel's arguments -> its kernelParams buffer (the ``void**`` a launch passes),
laid out as the compiled kernel takes them, converted by the parts (:mod:`.values`,
:mod:`.arrays`, :mod:`.staging`), and the launch plan for repeat launches.

The plan (``Packer.launcher_call``) is straight-line code for this signature that checks
each device array against what the full check last accepted for its parameter
(the same type and dtype object, still contiguous, a live pointer read from the
array now), packs the values into the same buffer and calls cuLaunchKernel
(cuda.bindings', or CuPy's wrapper of it on plain ints where CuPy is loaded).
Anything it has not seen goes to the full checks (``pack``), which raise the
errors; so a launch raises the same error the first time and the hundredth.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Sequence

from ...errors import ArgumentError
from .pointers import pointer_arg, reference_arg, unseen
from .staging import stage
from .params import Param
from .values import CONVERTERS, diagnose, function_arg, struct_arg, unread_arg

__all__ = ["Packer", "natural_layout"]


def natural_layout(params: Sequence[Param]) -> list[tuple[int, int]]:
    """(offset, size) per parameter with C alignment; for when the driver cannot tell us."""
    out, off = [], 0
    for p in params:
        size = p.size
        if size is None:
            what = "struct" if p.kind == "struct" else "unparsed"
            raise ArgumentError(f"the size of {what} parameter '{p.name}' ({p.type}) is known only "
                                f"after loading the kernel")
        off = (off + size - 1) // size * size
        out.append((off, size))
        off += size
    return out


_REWRITES = 16   # times a launch plan is written for the kinds of arrays seen, before it stops


class Packer:
    """Packs one kernel's arguments into a reusable buffer; ``pack`` returns the ``void**`` address."""

    def __init__(self, kernel: str, params: Sequence[Param], layout: Sequence[tuple[int, int]]):
        self.kernel, self.params = kernel, tuple(params)
        if len(layout) != len(self.params):
            raise ArgumentError(f"{kernel}: the cell declares {len(self.params)} parameters but the "
                            f"compiled kernel takes {len(layout)}")
        fmt, pos, self.convs = ["="], 0, []
        # per pointer parameter, learned from the last full check that passed: the kind of array
        # ("cupy", "torch", "cai", "null"; None: none yet) and its quick check (a closure)
        self.kinds: list = [None] * len(self.params)
        self.checks: list = [unseen] * len(self.params)
        self.full_checks = 0    # pointer arguments that went through the full check (for tests)
        self.call = None        # the launch plan, once a launcher asked for it (launcher_call)
        self.compiles, self.stale = 0, False
        for i, (p, (off, size)) in enumerate(zip(self.params, layout)):
            fmt.append("x" * (off - pos))
            kind = p.kind
            if kind == "unknown":
                code, conv = f"{size}s", unread_arg(self, p, size)
            elif kind == "function":
                code, conv = "Q", function_arg(self, p)
            elif kind == "reference":
                code, conv = "Q", reference_arg(self, p, i)
            elif kind == "pointer":
                code, conv = "Q", pointer_arg(self, p, i)
            elif kind == "scalar":
                code, conv = p.scalar.code, CONVERTERS.get(p.type, lambda s, p: None)(self, p)
            else:
                code, conv = f"{size}s", struct_arg(self, p, size)
            if struct.calcsize("=" + code) != size:
                raise ArgumentError(f"{self.where(p)} is {struct.calcsize('=' + code)} bytes as parsed "
                                f"but the compiled kernel takes {size} bytes")
            fmt.append(code)
            pos = off + size
            if conv is not None:
                self.convs.append((i, kind in ("pointer", "reference"), conv))
        self.struct = struct.Struct("".join(fmt))
        self.via = "bindings"   # the plan's last call: cuda.bindings' cuLaunchKernel, or "cupy"
        self.buffer = ctypes.create_string_buffer(max(self.struct.size, 1))
        base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * max(len(layout), 1))(*[base + off for off, _ in layout])
        self.address = ctypes.addressof(self.pointers) if layout else 0
        self.n = len(self.params)
        self.scope = {"C": self.checks, "pack_into": self.struct.pack_into, "buffer": self.buffer}
        self.scope.update((f"V{i}", conv) for i, pointer, conv in self.convs if not pointer)

    def where(self, p: Param) -> str:
        """How an error names parameter ``p``: ``scale(): parameter 'n' (int n)``; what the
        converters of :mod:`.values` and :mod:`.pointers` say too."""
        return f"{self.kernel}(): parameter '{p.name}' ({p})"

    def launcher_call(self, launch, state: dict, on_new, ints=None) -> None:
        """Write the launch plan: the ``__call__`` of this kernel's launcher class, passed to
        ``on_new`` now and again whenever the kind of array a parameter gets changes.

        The launcher has ``argv`` (cuLaunchKernel's arguments, prepared once: the CUfunction,
        dims, shared bytes, stream and the buffer's address), ``slow(args)`` (the full way) and
        ``failed()`` (after an error); ``state`` is the driver state read per launch ("lost",
        "isolated").  ``launch`` is cuda.bindings' cuLaunchKernel, which returns the error;
        ``ints``, if given, a cuLaunchKernel that takes ``argv`` as plain ints and raises on
        an error (CuPy's ``cupy.cuda.driver.launchKernel``), which the plan calls instead.
        For ``k(const float* x, float* y, float a, int n)`` on CuPy arrays::

            def __call__(self, *args):
                if len(args) != 4 or ST["lost"] is not None or ST["isolated"]:
                    return self.slow(args)
                a0, a1, a2, a3, = args
                if type(a0) is not T0 or a0.dtype is not D0 or not a0._c_contiguous:
                    return self.slow(args)
                a0 = a0.data
                if not a0.mem.ptr:
                    return self.slow(args)
                a0 = a0.ptr
                ... (a1 alike)
                try:
                    pack_into(buffer, 0, a0, a1, a2, a3)
                except Exception:
                    return self.slow(args)
                if launch(*self.argv)[0]:
                    self.failed()

        and with ``ints``, the last two lines::

                try:
                    launch_ints(*self.argv)
                except Exception:
                    self.failed()
        """
        self.via = "cupy" if ints is not None else "bindings"
        self.scope.update(launch=launch, ST=state, launch_ints=ints)
        self.on_new = on_new
        self._compile()

    def learn(self, i: int, kind: str, a, check) -> None:
        """The full check of argument ``i`` passed for ``a``, a ``kind`` array: launches with the
        same type and dtype take the plan from now on."""
        self.checks[i] = check
        if kind in ("cupy", "torch"):
            self.scope[f"T{i}"], self.scope[f"D{i}"] = type(a), a.dtype
        if self.kinds[i] != kind:
            self.kinds[i] = kind
            # written again at the end of pack(), unless the plan already calls the checks
            self.stale = self.call is not None and self.compiles <= _REWRITES

    def _compile(self) -> None:
        self.compiles += 1
        generic = self.compiles > _REWRITES  # kinds keep changing: call the closures instead
        miss = "return self.slow(args)"
        names = [f"a{i}" for i in range(self.n)]
        code = ["def __call__(self, *args):",
                f"    if len(args) != {self.n} or ST['lost'] is not None or ST['isolated']:",
                f"        {miss}"]
        if names:
            code.append(f"    {', '.join(names)}, = args")
        for i, pointer, _ in self.convs:
            a, kind = f"a{i}", self.kinds[i]
            if not pointer:     # a scalar, struct or function pointer: its converter, which raises
                code.append(f"    {a} = V{i}({a}, None)")
            elif kind is None:
                code.append(f"    {miss}")
                break
            elif kind == "cupy" and not generic:
                code += [f"    if type({a}) is not T{i} or {a}.dtype is not D{i} or not {a}._c_contiguous:",
                         f"        {miss}",
                         f"    {a} = {a}.data",
                         f"    if not {a}.mem.ptr:",           # freed (PooledMemory.free)
                         f"        {miss}",
                         f"    {a} = {a}.ptr"]
            elif kind == "torch" and not generic:
                code += [f"    if (type({a}) is not T{i} or {a}.dtype is not D{i} or not {a}.is_cuda",
                         f"            or not {a}.is_contiguous()):",
                         f"        {miss}",
                         "    try:",
                         f"        {a} = {a}.data_ptr()",
                         "    except RuntimeError:",
                         f"        {miss}",
                         f"    if not {a}:",                    # freed (storage resized to 0)
                         f"        {miss}"]
            elif kind == "null" and not generic:
                code += [f"    if {a} is not None:", f"        {miss}", f"    {a} = 0"]
            else:
                code += [f"    {a} = C[{i}]({a})", f"    if {a} is None:", f"        {miss}"]
        code += ["    try:", f"        pack_into(buffer, 0, {', '.join(names)})",
                 "    except Exception:", f"        {miss}"]
        if self.via == "bindings":
            code += ["    if launch(*self.argv)[0]:", "        self.failed()"]
        else:   # raises on a failed launch; failed() launches the packed buffer again, the full way
            code += ["    try:", "        launch_ints(*self.argv)",
                     "    except Exception:", "        self.failed()"]
        if "WATCH" in self.scope:    # the watchdog (hang/watchdog.py): what ran last, and when
            code += ["    WATCH[self.stream] = (self, monotonic())"]
        exec(compile("\n".join(code), f"<launch plan of {self.kernel}>", "exec"), self.scope)
        self.call = self.scope.pop("__call__")
        self.on_new(self.call)

    def pack(self, args: Sequence, staged: list) -> int:
        """Write ``args`` into the buffer after the full checks; NumPy arrays are staged on the
        device into ``staged``.  Returns the ``void**`` address."""
        if len(args) != self.n:
            raise ArgumentError(f"{self.kernel}() takes {self.n} argument{'s' * (self.n != 1)} "
                            f"({', '.join(str(p) for p in self.params)}), got {len(args)}")
        if self.convs:
            args = list(args)
            try:
                for i, _, conv in self.convs:
                    args[i] = conv(args[i], staged)
            finally:
                if self.stale:  # an argument of another kind than the plan knows passed
                    self.stale = False
                    self._compile()
            if staged:  # every argument checked: now copy NumPy arrays to the GPU
                stage(staged, args, self.params)
        try:
            self.struct.pack_into(self.buffer, 0, *args)
        except (struct.error, TypeError, OverflowError, ValueError):
            diagnose(self, args)
            raise
        return self.address
