"""``--run`` recorded, not run: while it is evaluated for a candidate, each kernel it names is
a :class:`Recorder` that notes grid, block, shared memory and arguments instead of launching;
:class:`Runs` turns the notes into :class:`~cuda_magic.runtime.sweep.Launch` rows (arguments
as :mod:`cuda_magic.runtime.helper.encoding` describes them), with the arrays by name (host
copies made once per sweep) and the outputs (arrays at non-const pointers)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ..arrays import is_array
from ..errors import RunError, clip, quote
from ..runtime.helper.encoding import EncodingError, encode, host_copy
from ..runtime.launch.configuration import checked_dims
from ..runtime.sweep import Launch
from .comparison import parse_run
from .space import TuneRunError, label

__all__ = ["Recorder", "Runs"]


class Recorder:
    """Stands for a kernel while ``--run`` is evaluated: ``k[grid, block](...)`` records the
    launch instead of running it."""

    def __init__(self, name: str, kernel, sink: list):
        self._name, self._kernel, self._sink = name, kernel, sink

    def __getattr__(self, attr):
        return getattr(self._kernel, attr)

    def __getitem__(self, key):
        if not isinstance(key, tuple) or not 2 <= len(key) <= 4:
            raise TuneRunError(f"launch as {self._name}[grid, block](*args) in --run")
        dims = checked_dims(key[0], "grid") + checked_dims(key[1], "block")
        shared = key[2] if len(key) > 2 else 0
        if not isinstance(shared, int) or isinstance(shared, bool) or shared < 0:
            raise TuneRunError(f"{self._name}: shared_mem must be a non-negative int, not {shared!r}")

        def launch(*args):
            if len(args) != len(self._kernel.params):
                raise TuneRunError(f"{self._name}() takes {len(self._kernel.params)} arguments "
                                   f"({', '.join(str(p) for p in self._kernel.params)}), got {len(args)}")
            self._sink.append((self._name, self._kernel, dims, shared, args))
        return launch

    def launch(self, grid, block, args=(), shared_mem: int = 0, stream=None):
        self[grid, block, shared_mem](*args)


@dataclass
class Runs:
    """``--run`` compiled once, the arrays it names (host copies, made once), their roles."""

    texts: tuple
    namespace: Mapping
    code: list = field(default_factory=list)
    arrays: dict = field(default_factory=dict)    # name -> NumPy (shared by every job)
    originals: dict = field(default_factory=dict)  # id(original) -> name

    def __post_init__(self):
        names = set()
        for i, text in enumerate(self.texts):
            tree = parse_run(text, i)
            try:        # what parsing lets through: (yield), await, return outside a function
                self.code.append(compile(tree, f"<--run {i + 1}>", "exec"))
            except SyntaxError as exc:
                raise RunError(f"--run {quote(text)}: not Python ({exc.msg})") from None
            names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        for n in sorted(names):     # host copies of the arrays --run names, once per sweep
            obj = self.namespace.get(n)
            if obj is not None and is_array(obj):
                self.originals[id(obj)] = n
                self.host(n, obj)

    def host(self, name: str, obj) -> np.ndarray:
        if name not in self.arrays:
            if isinstance(obj, np.ndarray):
                self.arrays[name] = np.ascontiguousarray(obj)
            else:
                self.arrays[name] = host_copy(obj)
        return self.arrays[name]

    def record(self, values: Mapping, kernels: Mapping) -> list:
        sink: list = []
        ns = dict(self.namespace)
        ns.update(values)
        ns.update({name: Recorder(name, k, sink) for name, k in kernels.items()})
        ns.setdefault("cdiv", lambda a, b: -(-a // b))
        for text, code in zip(self.texts, self.code):
            try:
                exec(code, ns)
            except TuneRunError as exc:
                raise TuneRunError(f"--run {quote(text, 80)}: {exc}") from None
            except Exception as exc:
                raise TuneRunError(f"--run {quote(text, 80)} failed for "
                                   f"{label(values) or 'the cell'}: {type(exc).__name__}: "
                                   f"{clip(str(exc), 300)}") from None
        if not sink:
            raise TuneRunError(f"--run {quote('; '.join(self.texts), 80)} launched no kernel: "
                               f"launch one, e.g. gemm[grid, block](a, b, c, n)")
        return sink

    def encode(self, index: int, sink: list):
        """The recorded launches as :class:`~cuda_magic.runtime.sweep.Launch` rows, this job's own
        arrays, the output names and the kernels used (python name -> Kernel)."""
        launches, own, outputs, used = [], {}, [], {}
        for li, (name, kernel, dims, shared, args) in enumerate(sink):
            used[name] = kernel
            encoded = []
            for ai, (p, a) in enumerate(zip(kernel.params, args)):
                def array(a, li=li, ai=ai, p=p):
                    name_ = self.originals.get(id(a))
                    if name_ is not None:
                        self.host(name_, a)
                    else:
                        name_ = f"_launch{li}_arg{ai}"
                        own[name_] = _own_copy(name, p.name, a)
                    if (p.pointer or p.reference) and not p.const and name_ not in outputs:
                        outputs.append(name_)
                    return name_
                try:
                    encoded.append(encode(a, array))
                except EncodingError:
                    raise TuneRunError(f"{name}(): parameter '{p.name}': a sweep takes arrays, "
                                       f"numbers, bytes or None, not {type(a).__name__}") from None
            launches.append(Launch(name, tuple(dims), int(shared), tuple(encoded)))
        return tuple(launches), own, tuple(outputs), used


def _own_copy(kernel: str, param: str, a) -> np.ndarray:
    """A job's own copy of an array ``--run`` made on the fly (raw bits: the helper launches on
    it), or a TuneRunError naming the parameter."""
    if isinstance(a, np.ndarray):
        return a.copy()
    try:
        return host_copy(a)
    except Exception as exc:
        raise TuneRunError(f"{kernel}(): parameter '{param}': cannot copy its "
                           f"{type(a).__name__} to the host: {exc}") from None
