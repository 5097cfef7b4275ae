"""``k.verify``: launch a kernel on fresh inputs, run a reference on copies of them, and judge
every output with :func:`cuda_magic.verify` (one :class:`~cuda_magic.correctness.Verdict`).

What is an output, what the inputs are, how often the kernel runs and what the reference gets
are :func:`verify_kernel`'s docstring (``k.verify?``).  NumPy, CuPy and PyTorch arguments
alike, and launches in the helper process (after a fault, or under ``isolate()``: NumPy
arrays there).  The arguments passed are never written: every launch gets copies.

One concept: ``k.verify``'s passes share one set of copied arguments, one reference and one
checker.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from ...correctness.formats import FORMAT_TYPES
from ...errors import ArgumentError, CudaError, VerifyError, quote
from .. import driver
from ..hang import waiting
from ...arrays import bits_equal, library, like, shape as shape_of, size as size_of
from .buffers import (Array, DeviceView, array_format, block_tile, for_reference, generate,
                      own_copy, offset_view, sentinel, to_numpy)

__all__ = ["verify_kernel", "FORMAT_TYPES", "MODES", "block_tile", "count_param"]

MODES = ("given", "random", "edge")

# The by-value int parameter that says how many elements there are, by its name.
_COUNT = re.compile(r"(?i)^(n|num|numel|size|count|len|length|total|n_?(elem|element|item)s?|"
                    r"num_?(elem|element|item)s?)$")


def count_param(kernel, args) -> int | None:
    """The index of the by-value integer parameter that counts the elements (named ``n``,
    ``size``, ``count``, ``numel``, ``len``, ``num_elements``...), or None."""
    found = None
    for i, (p, a) in enumerate(zip(kernel.params, args)):
        s = p.scalar if getattr(p, "kind", "") == "scalar" else None
        if (s is not None and s.dtype.startswith(("int", "uint")) and _COUNT.match(p.name)
                and isinstance(a, (int, np.integer)) and not isinstance(a, bool)):
            if found is not None:
                return None          # two of them: which one is meant is not clear
            found = i
    return found


# --- the orchestration -------------------------------------------------------------------------

def verify_kernel(kernel, grid, block, args, *, reference, outputs=None, inputs="random", runs=2,
                  shared_mem=0, ulp=None, rtol=None, atol=None, reduction=None, tile=None, seed=0,
                  inplace=(), offset=True):
    """What ``Kernel.verify`` does (its docstring is the user's help); ``grid`` and ``block``
    as 3 ints each, ``shared_mem`` checked (by the method)."""
    grid3, block3 = tuple(grid), tuple(block)
    args = tuple(args)
    params = kernel.params
    if len(args) != len(params):
        raise ArgumentError(f"{kernel.name}() takes {len(params)} arguments "
                            f"({', '.join(p.name for p in params)}); verify got {len(args)}")
    # every keyword checked before anything is copied to the GPU or launched
    runs = _check_runs(runs)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise VerifyError(f"seed={quote(seed, 40)}: give an int >= 0")
    if not isinstance(offset, (bool, np.bool_)):
        raise VerifyError(f"offset={quote(offset, 40)}: True (launch once more with the inputs "
                          f"one element past an aligned address) or False")
    from ...correctness.verifier import check_tile
    from ...correctness.tolerances import check_params
    check_params(ulp, rtol, atol, reduction)
    tile = ({n: check_tile(t) for n, t in tile.items()} if isinstance(tile, dict)
            else check_tile(tile))
    modes, edge_passes = _modes(inputs, kernel, args)
    names = _outputs(kernel, args, outputs)
    inplace = _inplace(inplace, names)
    ref_launch = _reference(reference, kernel, grid3, block3, shared_mem)

    arrays: dict[str, Array] = {}
    for i, (p, a) in enumerate(zip(params, args)):
        kind = library(a)
        if kind is None or not (p.pointer or p.reference):
            continue
        if kind == "cai":
            if p.name in names:
                raise VerifyError(f"outputs: '{p.name}' is a {type(a).__name__}; k.verify reads "
                                  f"outputs as NumPy, CuPy or PyTorch arrays")
            continue        # another kind of device array: an input, passed as it is
        host = own_copy(a)
        fmt, codes = array_format(p, host, a, kind)
        arrays[p.name] = Array(i, p.name, p, a, kind, host, fmt, codes)
    ins = [n for n in arrays if n not in names or n in inplace]
    for j, name in enumerate(arrays):
        arr = arrays[name]
        if name in names and name not in inplace:
            arr.host = sentinel(arr)
        else:
            mode = modes.get(name, "given")
            arr.host = generate(arr, mode, np.random.default_rng([int(seed), j]))

    check = _Checker(kernel, arrays, names, ins, grid3, block3, tile,
                     dict(ulp=ulp, rtol=rtol, atol=atol, reduction=reduction))

    # the reference, once
    refs = ref_launch(args, arrays, names)

    # the kernel, `runs` times on the same inputs; each later run judged as it comes (not
    # kept: memory stays that of two runs however many there are)
    first, spread, runs_of = None, {n: 0.0 for n in names}, {}
    for r in range(runs):
        launched = _launch_args(args, arrays)
        _run(kernel, grid3, block3, shared_mem, launched)
        outs = {n: launched[arrays[n].index] for n in names}
        if first is None:
            first = outs
            runs_of = {n: _Runs(check.one(n, outs[n], refs[n], launched)) for n in names}
            continue
        for n in names:
            if not bits_equal(first[n], outs[n]):
                spread[n] = max(spread[n], _spread(first[n], outs[n], arrays[n]))
                runs_of[n].add(check, n, first[n], outs[n], launched, refs[n])
    checks = [runs_of[n].check() for n in names]
    if edge_passes:
        checks += _edge_passes(kernel, grid3, block3, shared_mem, args, arrays, names, ins,
                               ref_launch, check, offset)
    deterministic = not any(runs_of[n].differ for n in names) if runs > 1 else None
    return check.verdict(checks, runs, deterministic,
                         {n: float(v) for n, v in spread.items()} if runs > 1 else None)


def _run(kernel, grid3, block3, shared_mem, launched) -> None:
    """One launch of the kernel, waited for (polled: Ctrl-C works, a hang is KernelHangError)
    before its outputs are read."""
    kernel[grid3, block3, shared_mem](*launched)
    if not driver.elsewhere():          # a helper's launch (remote too) has ended when it returns
        waiting.stream(0, waiting.Launch.of(kernel, grid3 + block3), f"running {kernel.name}")


def _check_runs(runs) -> int:
    """``runs=``: an int from 1 to bench's MAX_COUNT (a typo's 10**9 would never end)."""
    from ..measure.options import MAX_COUNT
    if not isinstance(runs, (int, np.integer)) or isinstance(runs, bool) or runs < 1:
        raise VerifyError(f"runs={quote(runs, 40)}: the number of launches must be an int >= 1")
    if runs > MAX_COUNT:
        raise VerifyError(f"runs={quote(runs, 40)}: at most {MAX_COUNT:,} launches (two show "
                          f"whether the kernel is deterministic; a race needs a few more)")
    return int(runs)


def _modes(inputs, kernel, args) -> tuple[dict, bool]:
    arrays = [p.name for p, a in zip(kernel.params, args) if (p.pointer or p.reference)]
    if isinstance(inputs, str):
        if inputs not in MODES:
            raise VerifyError(f"inputs={quote(inputs, 40)}: choose 'given', 'random' or 'edge', or "
                              f"a dict {{parameter name: mode}}")
        return {n: inputs for n in arrays}, inputs == "edge"
    if isinstance(inputs, dict):
        out = {}
        for name, mode in inputs.items():
            if name not in arrays:
                raise VerifyError(f"inputs: {quote(name, 40)} is not a pointer parameter of "
                                  f"{kernel.name} ({', '.join(arrays) or 'it has none'})")
            if mode not in MODES:
                raise VerifyError(f"inputs[{name!r}]={quote(mode, 40)}: choose 'given', 'random' "
                                  f"or 'edge'")
            out[name] = mode
        return out, False
    raise VerifyError(f"inputs={quote(inputs, 40)}: choose 'given', 'random' or 'edge', or a dict "
                      f"{{parameter name: mode}}")


def _outputs(kernel, args, outputs) -> list[str]:
    params = kernel.params
    by_name = {p.name: (p, a) for p, a in zip(params, args)}
    if outputs is None:
        names = [p.name for p, a in zip(params, args)
                 if (p.pointer > 0 or p.reference) and not p.const and library(a) is not None]
        if not names:
            raise VerifyError(f"{kernel.name} has no non-const pointer parameter given an array: "
                              f"name what it writes with outputs=[...]")
        return names
    names = _names(outputs, "outputs", "the parameters the kernel writes")
    if not names:
        raise VerifyError("outputs=[]: name at least one parameter the kernel writes")
    for name in names:
        if name not in by_name:
            raise VerifyError(f"outputs: {quote(name, 40)} is not a parameter of {kernel.name} "
                              f"(its parameters: {', '.join(p.name for p in params)})")
        p, a = by_name[name]
        if not (p.pointer or p.reference):
            raise VerifyError(f"outputs: '{name}' ({p}) is passed by value; an output is a pointer "
                              f"parameter")
        if library(a) is None:
            raise VerifyError(f"outputs: '{name}' was given {type(a).__name__}, not an array")
    if len(set(names)) != len(names):
        raise VerifyError(f"outputs={quote(names, 60)}: a name twice")
    return names


def _names(value, what: str, meaning: str) -> list[str]:
    """``outputs=`` / ``inplace=``: a name, or a list or tuple of names."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(n, str) for n in value):
        raise VerifyError(f"{what}={quote(value, 60)}: name {meaning}: a name or a list of "
                          f"names")
    return list(value)


def _inplace(inplace, names) -> set:
    inplace = _names(inplace or (), "inplace", "the outputs the kernel also reads")
    for name in inplace:
        if name not in names:
            raise VerifyError(f"inplace: {quote(name, 40)} is not one of the outputs "
                              f"({', '.join(names)})")
    return set(inplace)


class _Runs:
    """One output over the runs: run 0's check, and each later run whose bits differ judged
    as it comes.  :meth:`check`: the first failing run's check, "nondeterministic" when the
    runs disagree by more than the rule allows."""

    def __init__(self, first):
        self.first = self.worst = first
        self.differ = self.beyond = False

    def add(self, check, name, out0, out, launched, ref):
        """A run whose output ``out`` differs from run 0's ``out0`` in its bits."""
        self.differ = True
        c = check.one(name, out, ref, launched)
        if self.worst.passed and not c.passed:
            self.worst = c
        if c.passed != self.first.passed:
            self.beyond = True
        elif not self.beyond:
            self.beyond = not check.between(name, out, out0)

    def check(self):
        worst = self.worst
        if not worst.passed and self.beyond:
            run0 = "passes" if self.first.passed else "fails"
            return dataclasses.replace(
                worst, category="nondeterministic",
                reason=(f"differs between runs by more than the rule allows (run 0 {run0}); "
                        f"{worst.reason or ''}").rstrip("; "))
        return worst


def _launch_args(args, arrays: dict, hosts: dict | None = None) -> list:
    out = list(args)
    for name, arr in arrays.items():
        out[arr.index] = like((hosts or {}).get(name, arr.host), arr.arg)
    return out


def _spread(a, b, arr: Array) -> float:
    from ...correctness import ulp_distance
    ha, hb = to_numpy(a)[0], to_numpy(b)[0]
    d = ulp_distance(ha, hb, dtype=arr.dtype_arg)
    return float(np.max(d)) if np.size(d) else 0.0


# --- the reference -----------------------------------------------------------------------------

class _KernelReference:
    """Another kernel (``Kernel``, or ``k2[grid, block]`` for a launch of its own) on copies of
    the arguments: its outputs are the expected ones."""
    is_kernel = True

    def __init__(self, launch, name):
        self.launch, self.name = launch, name

    def __call__(self, args, arrays, names, hosts=None, scalars=None, launched=None):
        if launched is None:
            launched = _launch_args(_with(args, scalars), arrays)
        self.launch(*launched)
        return {n: launched[arrays[n].index] for n in names}


class _FunctionReference:
    """A function of host copies of the arguments (NumPy; CPU tensors for PyTorch arguments)."""
    is_kernel = False

    def __init__(self, fn):
        self.fn = fn
        self.name = getattr(fn, "__name__", "reference")

    def __call__(self, args, arrays, names, hosts=None, scalars=None, launched=None):
        hosts = hosts or {}
        call = _with(args, scalars)
        for name, arr in arrays.items():
            call[arr.index] = for_reference(hosts.get(name, arr.host), arr.arg, arr.kind)
        result = self.fn(*call)
        return _reference_outputs(result, names, {n: call[arrays[n].index] for n in names},
                                  {n: hosts.get(n, arrays[n].host).shape for n in names}, self.name,
                                  [n for n in names if arrays[n].fmt == "e2m1x2"])


def _is_kernel(x) -> bool:
    return hasattr(x, "params") and hasattr(x, "launch_raw")


def _is_launcher(x) -> bool:          # k[grid, block]
    return _is_kernel(getattr(x, "kernel", None)) and hasattr(x, "dims") and callable(x)


def _reference(reference, kernel, grid3, block3, shared_mem):
    if _is_kernel(reference) or _is_launcher(reference):
        is_kernel = _is_kernel(reference)
        ref_k = reference if is_kernel else reference.kernel
        if len(ref_k.params) != len(kernel.params):
            raise VerifyError(f"reference: {ref_k.name} takes {len(ref_k.params)} arguments, "
                              f"{kernel.name} {len(kernel.params)}; a reference kernel takes the "
                              f"same arguments")
        launch = reference[grid3, block3, shared_mem] if is_kernel else reference
        return _KernelReference(launch, ref_k.name)
    if not callable(reference):
        raise VerifyError(f"reference={quote(reference, 60)}: give a function of the kernel's "
                          f"arguments (host copies) or another Kernel")
    return _FunctionReference(reference)


def _with(args, scalars) -> list:
    out = list(args)
    for i, v in (scalars or {}).items():
        out[i] = v
    return out


def _reference_outputs(result, names, passed, shapes, what, packed=()) -> dict:
    if result is None:
        got = passed
    elif isinstance(result, dict):
        extra = [k for k in result if k not in names]
        if extra:
            raise VerifyError(f"reference {what}() returned {quote(extra[0], 40)}, not an output "
                              f"(the outputs: {', '.join(names)})")
        missing = [n for n in names if n not in result]
        if missing:
            raise VerifyError(f"reference {what}() returned no '{missing[0]}' (the outputs: "
                              f"{', '.join(names)})")
        got = dict(result)
    elif isinstance(result, (tuple, list)):
        if len(result) != len(names):
            raise VerifyError(f"reference {what}() returned {len(result)} values for "
                              f"{len(names)} output{'s' * (len(names) != 1)} ({', '.join(names)})")
        got = dict(zip(names, result))
    else:
        if len(names) != 1:
            raise VerifyError(f"reference {what}() returned one value for {len(names)} outputs "
                              f"({', '.join(names)}): return a tuple in that order, or a dict")
        got = {names[0]: result}
    out = {}
    for n in names:
        v = got[n]
        if library(v) is None:
            v = np.asarray(v)
        shape = shapes[n]
        if n in packed and size_of(v) == 2 * math.prod(shape):     # fp4 values, two per byte
            shape = (*shape[:-1], 2 * shape[-1]) if shape else (2,)
        if size_of(v) != math.prod(shape):
            raise VerifyError(f"reference {what}() gave '{n}' of shape {shape_of(v)}; the output "
                              f"'{n}' has shape {tuple(shape)}")
        out[n] = v if shape_of(v) == tuple(shape) else v.reshape(shape)
    return out


# --- judging -------------------------------------------------------------------------------------

class _Checker:
    """verify() per output, with the output's dtype, tile, initial contents and inputs."""

    def __init__(self, kernel, arrays, names, ins, grid3, block3, tile, rule):
        self.kernel, self.arrays, self.names, self.ins = kernel, arrays, names, ins
        self.grid3, self.block3, self.tile, self.rule = grid3, block3, tile, rule
        self.last = None
        self.peak, self.where = 0, "host"

    def tile_of(self, name, shape):
        if isinstance(self.tile, dict):
            return self.tile.get(name)
        if self.tile is not None:          # checked: a tuple of ints
            return self.tile
        t = block_tile(shape, self.grid3, self.block3)
        if t is not None and self.arrays[name].fmt == "e2m1x2":
            t = (*t[:-1], 2 * t[-1])         # verify() counts fp4 values, two per byte
        return t

    def one(self, name, out, ref, launched, *, label=None, initial=None, host=False):
        """The OutputCheck of output ``name``."""
        from ...correctness import verify
        arr = self.arrays[name]
        if initial is None:
            initial = arr.host if host else like(arr.host, arr.arg)
        shape = shape_of(out)
        ins = {}
        for i in self.ins:        # what a copy would be of: the inputs (in-place ones as they began)
            a = self.arrays[i]
            if i == name or (a.fmt, a.host.dtype, a.host.size) != (arr.fmt, arr.host.dtype,
                                                                   arr.host.size):
                continue
            ins[i] = a.host if launched is None or i in self.names else launched[a.index]
        v = verify(out, ref, arr.dtype_arg, **self.rule, name=label or name,
                   tile=self.tile_of(name, shape), initial=initial, inputs=ins or None)
        self.last = v
        self.peak = max(self.peak, v.peak_bytes)
        if v.where == "device":
            self.where = "device"
        return v.outputs[0]

    def between(self, name, out, out0) -> bool:
        """Whether two runs' outputs are within the rule of each other."""
        from ...correctness import verify
        return bool(verify(out, out0, self.arrays[name].dtype_arg, **self.rule, name=name))

    def verdict(self, checks, runs, deterministic, spread):
        """One Verdict of every check made (the last verify()'s, its outputs replaced)."""
        # not Verdict.with_runs, which calls every failing output whose runs differ
        # "nondeterministic": here only those whose runs differ by more than the rule allows
        return dataclasses.replace(self.last, outputs=tuple(checks), peak_bytes=self.peak,
                                   where=self.where, runs=runs, deterministic=deterministic,
                                   spread=spread)


# --- inputs="edge": a count that is not a multiple of the block, inputs off by one element -----

def _edge_passes(kernel, grid3, block3, shared_mem, args, arrays, names, ins, ref_launch, check,
                 offset) -> list:
    """The checks of the two extra launches ``inputs="edge"`` makes (see Kernel.verify)."""
    i = count_param(kernel, args)
    if i is None:
        return []
    n = int(args[i])
    out = []
    bx = block3[0]
    short = ((n - 2) // bx) * bx + 1 if n >= bx + 2 else n - 1
    if 1 <= short < n:
        out += _count_pass(kernel, grid3, block3, shared_mem, args, arrays, names, ref_launch,
                           check, i, n, short)
    if offset and not driver.elsewhere() and n >= 2:
        out += _offset_pass(kernel, grid3, block3, shared_mem, args, arrays, names, ins,
                            ref_launch, check, i, n)
    return out


def _sized(a: np.ndarray, n: int) -> str | None:
    """How ``a`` is cut to fewer elements than ``n``: "flat" (n elements), "rows" (n rows)."""
    if a.ndim == 1 and a.shape[0] == n:
        return "flat"
    if a.ndim >= 2 and a.shape[0] == n:
        return "rows"
    if a.ndim >= 2 and a.size == n:
        return "flat"
    return None


def _cut(a: np.ndarray, how: str, start: int, stop: int) -> np.ndarray:
    return np.ascontiguousarray(a.reshape(-1)[start:stop] if how == "flat" else a[start:stop])


def _expected(arr: Array, ref, how: str | None, upto: int) -> np.ndarray:
    """The whole output as it should be after a launch on ``upto`` elements: the reference's
    values in the first ``upto``, the sentinel (not written) after."""
    ref_np = to_numpy(ref)[0]
    if how is None:
        return ref_np
    sent = arr.host            # the sentinel-filled initial contents (or in-place inputs)
    if ref_np.dtype == sent.dtype:
        full = sent.copy()
    else:
        from ...correctness import from_bits
        if arr.fmt is None:
            full = sent.astype(ref_np.dtype)
        elif arr.codes:
            full = np.asarray(from_bits(sent, arr.fmt)).astype(ref_np.dtype)
        else:
            full = sent.astype(ref_np.dtype)
    flat = full.reshape(-1) if how == "flat" else full
    flat[:upto] = ref_np.reshape(flat[:upto].shape)
    return full


def _count_pass(kernel, grid3, block3, shared_mem, args, arrays, names, ref_launch, check, i,
                n, short) -> list:
    launched = _launch_args(_with(args, {i: short}), arrays)
    _run(kernel, grid3, block3, shared_mem, launched)
    hosts = {}
    for name, arr in arrays.items():
        how = _sized(arr.host, n)
        if how is not None:
            hosts[name] = _cut(arr.host, how, 0, short)
    is_fn = not ref_launch.is_kernel
    refs = ref_launch(args, arrays, names, hosts if is_fn else None, {i: short})
    out = []
    for name in names:
        arr = arrays[name]
        how = _sized(arr.host, n) if is_fn else None
        got = to_numpy(launched[arr.index])[0]
        want = _expected(arr, refs[name], how, short)
        out.append(check.one(name, got, want, None, label=f"{name} (n={short})", host=True))
    return out


def _offset_pass(kernel, grid3, block3, shared_mem, args, arrays, names, ins, ref_launch, check,
                 i, n) -> list:
    shifted = [m for m in ins if m not in names and _sized(arrays[m].host, n) == "flat"
               and arrays[m].param.scalar is not None]
    if not shifted:
        return []
    launched = _launch_args(_with(args, {i: n - 1}), arrays)
    views = {}
    for m in shifted:
        views[m] = offset_view(arrays[m], arrays[m].host)
        launched[arrays[m].index] = views[m]
    label = ", ".join(shifted)
    failed = None
    try:
        _run(kernel, grid3, block3, shared_mem, launched)
    except CudaError as exc:      # e.g. CUDA_ERROR_MISALIGNED_ADDRESS: a finding, reported
        failed = exc
    finally:
        if failed is None or driver.lost() is None:
            for v in views.values():
                if isinstance(v, DeviceView):
                    v.free()
    hosts = {}
    for name, arr in arrays.items():
        how = _sized(arr.host, n)
        if name in shifted:
            hosts[name] = _cut(arr.host, "flat", 1, n)
        elif how is not None:
            hosts[name] = _cut(arr.host, how, 0, n - 1)
    is_fn = not ref_launch.is_kernel
    if is_fn:
        refs = ref_launch(args, arrays, names, hosts, {i: n - 1})
    elif failed is not None:     # CUDA may be gone: nothing to launch the reference kernel with
        refs = {m: arrays[m].host for m in names}
    else:       # the reference kernel on the same offset inputs
        ref_args = _launch_args(_with(args, {i: n - 1}), arrays)
        ref_views = {m: offset_view(arrays[m], arrays[m].host) for m in shifted}
        for m, v in ref_views.items():
            ref_args[arrays[m].index] = v
        try:
            refs = ref_launch(args, arrays, names, launched=ref_args)
        finally:
            for v in ref_views.values():
                if isinstance(v, DeviceView):
                    v.free()
    out = []
    for name in names:
        arr = arrays[name]
        how = _sized(arr.host, n) if is_fn else None
        want = _expected(arr, refs[name], how, n - 1)
        tag = f"{name} ({label} +1 element)"
        if failed is not None:
            c = check.one(name, arr.host, want, None, label=tag, host=True)
            out.append(dataclasses.replace(
                c, passed=False, category="wrong",
                reason=(f"the launch with {label} one element ({arrays[shifted[0]].host.dtype.itemsize} "
                        f"bytes) past an aligned address failed: {failed}")))
            continue
        got = to_numpy(launched[arr.index])[0]
        out.append(check.one(name, got, want, None, label=tag, host=True))
    return out
