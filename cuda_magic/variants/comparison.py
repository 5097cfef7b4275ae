"""Compare builds of one cell: ``%%cuda_compare`` and :func:`compare`.

Each variant (see :mod:`cuda_magic.variants`) builds the whole cell under its
own config; a :class:`Comparison` holds the builds, their SASS per kernel
(instructions, ``.FTZ`` counts) and, when ``run`` is given and a GPU is
present, the output arrays of each variant and how they differ from the
baseline (the first variant).  Every variant runs on its own copies of the
same inputs; the caller's arrays are not touched.
"""

from __future__ import annotations

import ast
import functools
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from .. import arrays, cell, inspect
from . import numbers
from ..inspect import diff
from ..compile.arch import detect_arch
from ..compile.backends import CompileError
from ..compile.parallel import parallel
from ..config import ConfigError, validate
from ..runtime import synchronize
from ..runtime.helper.encoding import host_copy
from ..correctness.reference import array_diffs
from ..correctness.formats import FORMAT_TYPES
from .toggles import INPUTS, TOGGLES, Variant, default_variants, parse_variant, state, vary as vary_toggles
from ..errors import ArgumentError, RunError, quote

__all__ = ["Comparison", "RunError", "compare", "INPUTS"]



# ---- arrays of any library ---------------------------------------------------------------------

def _copy(obj):
    try:
        return arrays.copy(obj)
    except ArgumentError:
        raise RunError(f"cannot copy a {type(obj).__name__} for each variant; use NumPy, CuPy or "
                       "PyTorch arrays") from None


def _host(name: str, obj) -> np.ndarray:
    """``obj`` on the host as the numbers it holds (:func:`~cuda_magic.runtime.helper.encoding.host_copy`
    ``as_="values"``: a bfloat16 tensor as float32 values), or a RunError naming the array."""
    try:
        return host_copy(obj, "values")
    except Exception as exc:
        raise RunError(f"cannot read array {name!r} ({type(obj).__name__}) back to compare it: "
                       f"{exc}") from None


# ---- running ----------------------------------------------------------------------------------

def parse_run(text: str, i: int = 0) -> ast.Module:
    """The syntax tree of one ``--run`` expression; a RunError if it is not Python."""
    try:
        return ast.parse(text, f"<--run {i + 1}>", "exec")
    except SyntaxError as exc:
        raise RunError(f"--run {quote(text)}: not Python ({exc.msg}, column {exc.offset})") from None
    except ValueError as exc:       # a NUL byte
        raise RunError(f"--run {quote(text)}: not Python ({exc})") from None


@dataclass
class Runner:
    """How ``run`` is evaluated: its code, the caller's namespace, and the inputs every variant
    gets a copy of (filled per ``inputs`` once, so all variants see the same values)."""

    texts: tuple[str, ...]
    namespace: Mapping[str, Any]
    inputs: str | None = None
    code: list = field(default_factory=list)
    arrays: dict = field(default_factory=dict)     # name -> the original (or filled) array
    roles: dict = field(default_factory=dict)      # name -> "input" | "output"
    formats: dict = field(default_factory=dict)    # name -> the format its parameter's type names

    def prepare(self, module: cell.Module) -> None:
        kernels = module.python_names()
        names: set[str] = set()
        for i, text in enumerate(self.texts):
            tree = parse_run(text, i)
            self.code.append(compile(tree, f"<--run {i + 1}>", "exec"))
            names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            for node in ast.walk(tree):
                self._roles(node, kernels)
        self.arrays = {n: self.namespace[n] for n in sorted(names)
                       if n not in kernels and n in self.namespace and arrays.is_array(self.namespace[n])}
        if not self.arrays:
            raise RunError(f"--run {quote('; '.join(self.texts))}: it names no arrays to compare; pass "
                           "named NumPy, CuPy or PyTorch arrays, e.g. scale[1, 256](x, y, 0.5, 256)")
        if self.inputs:
            self._fill()

    def _roles(self, node, kernels) -> None:
        """``k[grid, block](x, y, ...)``: arrays at const pointers are inputs, others outputs."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                and isinstance(node.func.value, ast.Name) and node.func.value.id in kernels):
            return
        params = kernels[node.func.value.id].params
        for arg, p in zip(node.args, params):
            if isinstance(arg, ast.Name) and (p.pointer or p.reference) and p.type in FORMAT_TYPES:
                self.formats.setdefault(arg.id, FORMAT_TYPES[p.type])    # bits of bf16, fp8...
            if isinstance(arg, ast.Name) and (p.pointer or p.reference):
                if p.const:
                    self.roles.setdefault(arg.id, "input")
                else:
                    self.roles[arg.id] = "output"

    def _fill(self) -> None:
        hosts = {n: _host(n, a) for n, a in self.arrays.items() if self.roles.get(n) == "input"}
        filled = [n for n, host in hosts.items() if host.dtype.kind == "f"]
        if not filled:
            raise RunError(f"--inputs {self.inputs}: no float array is passed to a const pointer "
                           "parameter in --run (e.g. const float* x in scale[1, 256](x, y, 0.5, 256))")
        for i, n in enumerate(filled):       # each input gets its own values (rolled / seeded)
            a, host = self.arrays[n], hosts[n]
            if self.inputs == "denormal":
                values = np.roll(numbers.denormals(host.size, host.dtype), i * (host.size // 7 + 1))
            else:
                values = numbers.random_inputs(host.size, host.dtype, seed=i)
            self.arrays[n] = arrays.like(values.reshape(host.shape), a, as_="values")

    def run(self, variant: str, module: cell.Module) -> dict[str, np.ndarray]:
        """Evaluate the code with ``module``'s kernels on fresh copies; every array afterwards."""
        ns = dict(self.namespace)
        ns.update(module.python_names())
        copies = {n: _copy(a) for n, a in self.arrays.items()}
        ns.update(copies)
        for text, code in zip(self.texts, self.code):
            try:
                exec(code, ns)
                synchronize()
            except Exception as exc:
                raise RunError(f"--run {text!r} failed for variant {variant!r}: "
                               f"{type(exc).__name__}: {exc}") from exc
        return {n: np.asarray(_host(n, ns[n])) for n in copies}     # the copies are this run's own

    def outputs(self, results: Mapping[str, Mapping[str, np.ndarray]]) -> list[str]:
        """The arrays to report: those passed as non-const pointers, else any a variant changed."""
        outs = [n for n in self.arrays if self.roles.get(n) == "output"]
        if outs:
            return outs
        original = {n: _host(n, a) for n, a in self.arrays.items()}
        return [n for n in self.arrays
                if any(not np.array_equal(r[n], original[n], equal_nan=r[n].dtype.kind == "f")
                       for r in results.values())]


# ---- the comparison ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Recipe:
    """What every variant shares: the cell text and its layers below the variant."""

    source: str
    options: dict
    session: dict | None = None
    preset: str | None = None
    instantiate: tuple[str, ...] = ()
    force: bool = False

    def build(self, variant: Variant) -> cell.Module:
        try:
            return cell.build(self.source, self.options, session=self.session, preset=self.preset,
                              instantiate=self.instantiate, force=self.force, adjust=variant.apply)
        except ConfigError as exc:
            raise type(exc)(f"variant {variant.name!r}: {exc}", key=exc.key) from None
        except CompileError as exc:
            raise exc.within(f"variant {variant.name!r}")


class Comparison:
    """Builds of one cell under several variants, their SASS and (on a GPU) their numbers.

    ``names`` lists the variants, the first is the baseline; ``modules[name]``
    is that variant's :class:`~cuda_magic.Module`; ``instructions(name,
    kernel)`` its SASS lines, ``ftz(name, kernel)`` the ``.FTZ`` count;
    ``numbers`` the :class:`~cuda_magic.correctness.reference.ArrayDiff` rows (None when
    nothing ran, ``note`` says why); ``outputs[name][array]`` the arrays after
    each variant ran.  ``toggled(name, on)`` is the same comparison with the
    last variant's toggle changed (recompiled through the cache).
    """

    def __init__(self, recipe: Recipe, variants: Sequence[Variant], modules: Mapping[str, cell.Module],
                 runner: Runner | None, outputs: Mapping[str, Mapping[str, np.ndarray]] | None,
                 note: str | None, diff_mode: str = "side", show_ptx: bool = False,
                 origin: Variant | None = None, overrides: Mapping[str, bool] | None = None):
        self.recipe = recipe
        self.variants = tuple(variants)
        self.origin = origin or self.variants[-1]        # the last variant before any toggling
        self.overrides = dict(overrides or {})
        self.modules = dict(modules)
        self.runner, self.note = runner, note
        self.outputs = dict(outputs) if outputs is not None else None
        self.diff_mode, self.show_ptx = diff_mode, show_ptx
        self.numbers = self._numbers()
        self.derived: dict = {}          # made once: SASS lines per variant and kernel, the plot
        first = self.modules[self.baseline]
        self.kernels = list(first.kernels)

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.variants]

    @property
    def baseline(self) -> str:
        return self.variants[0].name

    @property
    def source(self) -> str:
        return self.recipe.source

    def result(self, name: str, kernel: str):
        return self.modules[name].result_of(kernel)

    def symbol(self, name: str, kernel: str) -> str:
        return self.modules[name][kernel].symbol or kernel

    def instructions(self, name: str, kernel: str) -> list[str]:
        """``kernel``'s SASS in variant ``name``, as comparable lines (see :func:`diff.instructions`);
        parsed once per comparison (every view asks several times)."""
        key = ("instructions", name, kernel)
        if key not in self.derived:
            self.derived[key] = diff.instructions(
                inspect.sass(self.result(name, kernel), self.symbol(name, kernel)))
        return self.derived[key]

    def ftz(self, name: str, kernel: str) -> int:
        return diff.count_ftz(self.instructions(name, kernel))

    def diff(self, name: str, kernel: str, *, raw: bool = False, against: str | None = None
             ) -> diff.Diff:
        """``kernel``'s SASS in variant ``name`` against the baseline (or ``against``), register
        numbering normalised unless ``raw`` (see :mod:`cuda_magic.inspect.diff`); made once."""
        base = self.baseline if against is None else against
        key = ("diff", base, name, kernel, bool(raw))
        if key not in self.derived:
            self.derived[key] = diff.compare(self.instructions(base, kernel),
                                             self.instructions(name, kernel), normalize=not raw)
        return self.derived[key]

    def resources(self, name: str, kernel: str):
        """ptxas's figures of ``kernel`` in variant ``name`` (None for a PTX build)."""
        return self.result(name, kernel).resources.get(self.symbol(name, kernel))

    def mix(self, name: str, kernel: str) -> dict[str, int]:
        """``kernel``'s instructions per opcode class in variant ``name``."""
        return diff.mix(self.instructions(name, kernel))

    def summary(self, name: str, kernel: str) -> str:
        """What changed in ``kernel`` from the baseline to variant ``name``, in one line
        (``"1 FMUL → FMUL.FTZ"``, ``"+98 instructions (...), +1 CALL"``, ``"registers 32 → 40"``)."""
        key = ("summary", name, kernel)
        if key not in self.derived:
            self.derived[key] = diff.summary(
                self.instructions(self.baseline, kernel), self.instructions(name, kernel),
                resources=(self.resources(self.baseline, kernel), self.resources(name, kernel)))
        return self.derived[key]

    def ptx(self, name: str) -> list[str]:
        """Each build's PTX of variant ``name``, comment-free, concatenated."""
        return [line for r in self.modules[name].results for line in diff.ptx_lines(inspect.ptx(r))]

    def disassemble(self) -> "Comparison":
        """Run the disassembler for every build now, in parallel (it takes ~0.3 s per module)."""
        if not self.kernels:
            return self
        results = {id(r): r for m in self.modules.values() for r in m.results}
        with ThreadPoolExecutor(max_workers=max(1, len(results))) as pool:
            list(pool.map(inspect.sass, results.values()))
        return self

    def state(self, name: str) -> dict[str, bool]:
        """The effective toggles of variant ``name`` (of its first kernel's config)."""
        m = self.modules[name]
        config = m.config_of(self.kernels[0]) if self.kernels else m.cell_config
        return state(config.get(config["compiler"], []))

    def _numbers(self):
        if self.outputs is None or self.runner is None:
            return None
        rows = []
        for array in self.runner.outputs(self.outputs):
            rows += array_diffs(array, {v: out[array] for v, out in self.outputs.items()},
                                self.baseline, self.runner.formats.get(array))
        return rows

    def plot(self, array: str | None = None):
        """A matplotlib figure of the per-element ULP difference to the baseline (needs matplotlib)."""
        if not self.numbers:
            raise RunError("no numbers to plot: give run=... (needs a GPU)" if self.note is None
                           else self.note)
        return numbers.ulp_plot([d for d in self.numbers if array in (None, d.name)], self.baseline)

    def toggled(self, toggle: str, on: bool) -> "Comparison":
        """This comparison with ``toggle`` set on the last variant: it is rebuilt (the compile
        cache answers for configs seen before) and re-run; the baseline stays as it is.

        Settings that change nothing are dropped, so toggling back gives the variant as it was
        (and its cached build)."""
        if toggle not in TOGGLES:
            raise ConfigError(f"unknown toggle {toggle!r}; the toggles are {', '.join(TOGGLES)}")
        overrides = {**self.overrides, toggle: bool(on)}
        for t in list(overrides):
            without = {k: v for k, v in overrides.items() if k != t}
            if self._toggles(self._with(without)) == self._toggles(self._with(overrides)):
                overrides = without
        last = self._with(overrides)
        if overrides:
            last = Variant(self._name(last), last.layer, last.toggles)
        variants = [*self.variants[:-1], last]
        modules = {**{v.name: self.modules[v.name] for v in self.variants[:-1]},
                   last.name: self.recipe.build(last)}
        outputs = None
        if self.outputs is not None:
            outputs = {**{v.name: self.outputs[v.name] for v in self.variants[:-1]},
                       last.name: self.runner.run(last.name, modules[last.name])}
        return Comparison(self.recipe, variants, modules, self.runner, outputs, self.note,
                          self.diff_mode, self.show_ptx, self.origin, overrides)

    def _with(self, overrides: Mapping[str, bool]) -> Variant:
        v = self.origin
        for t, on in overrides.items():
            v = v.plus(t, on)
        return v

    def _toggles(self, variant: Variant) -> dict[str, bool]:
        """The effective toggles ``variant`` gives the cell's config (no compile)."""
        r = self.recipe
        resolved = variant.apply(cell.resolve_cell(r.source, r.options, session=r.session,
                                                   preset=r.preset))
        return state(resolved.get(resolved["compiler"], []))

    def _name(self, variant: Variant) -> str:
        """A toggled variant is named by how its toggles differ from the baseline's (an arch
        variant keeps its arch in front)."""
        now, base = self._toggles(variant), self.state(self.baseline)
        name = ", ".join(f"{t}={'true' if now[t] else 'false'}" for t in now if now[t] != base[t])
        if "arch" in variant.config:
            name = f"{variant.config['arch']}" + (f", {name}" if name else "")
        name = name or "as baseline"
        return name if name not in self.names[:-1] else f"{name} (toggled)"

    def __repr__(self) -> str:
        return (f"<Comparison {' vs '.join(self.names)}: {', '.join(self.kernels) or '(no kernels)'}"
                f"{'' if self.numbers is None else ', ran'}>")


def _variants(variants, toggles: Sequence[str], cell_config) -> list[Variant]:
    out: list[Variant] = []
    if toggles:
        out += vary_toggles(toggles, cell_config)
    if isinstance(variants, Mapping):
        out += [Variant.of(name, config) for name, config in variants.items()]
    else:
        for v in variants or ():
            out.append(v if isinstance(v, Variant) else parse_variant(v))
    if not toggles and variants is None:
        out = default_variants()
    names = [v.name for v in out]
    for n in names:
        if names.count(n) > 1:
            raise ConfigError(f"two variants are named {n!r}; give each its own name")
    if len(out) < 2:
        raise ConfigError(f"a comparison needs two variants or more, got {len(out)} "
                          f"({', '.join(names) or 'none'}): add --variant or --vary")
    return out


def _one_arch_each(recipe: Recipe, chosen: Sequence[Variant], resolved=None) -> None:
    """A variant builds one arch: an arch list from the cell or the session is an error that
    says how to compare archs (``--vary arch=...``)."""
    if resolved is None:
        resolved = cell.resolve_cell(recipe.source, recipe.options, session=recipe.session,
                                     preset=recipe.preset)
    for v in chosen:
        archs = v.apply(resolved).archs
        if len(archs) > 1:
            raise ConfigError(f"variant {v.name!r}: 'arch' lists {', '.join(archs)} (set by "
                              f"layer {v.apply(resolved).provenance['arch']!r}); a comparison "
                              f"builds one arch per variant: compare the archs with --vary "
                              f"arch={','.join(archs)}, or give one arch with --arch", "arch")


def build(recipe: Recipe, variants=None, *, vary: Sequence[str] = (), run: str | Sequence[str] | None = None,
          inputs: str | None = None, namespace: Mapping | None = None, diff_mode: str = "side",
          show_ptx: bool = False) -> Comparison:
    """Compile ``recipe`` under each variant and, with ``run`` and a GPU, run and compare."""
    if inputs is not None and inputs not in INPUTS:
        raise ConfigError(f"inputs={inputs!r}: choose {' or '.join(INPUTS)}")
    if diff_mode not in ("side", "unified"):
        raise ConfigError(f"diff={diff_mode!r}: choose side or unified")
    if inputs and not run:
        raise ConfigError(f"--inputs {inputs} fills the inputs of --run; give --run too")
    resolved = cell.resolve_cell(recipe.source, recipe.options, session=recipe.session,
                                 preset=recipe.preset) if vary else None
    chosen = _variants(variants, vary, resolved)
    texts = (run,) if isinstance(run, str) else tuple(run or ())
    for i, text in enumerate(texts):        # before compiling, GPU or not
        parse_run(text, i)
    _one_arch_each(recipe, chosen, resolved)
    built = parallel([functools.partial(recipe.build, v) for v in chosen],
                     f"compiling {len(chosen)} variants")
    modules = {v.name: m for v, m in zip(chosen, built)}
    runner, outputs, note = None, None, None
    if texts:
        if detect_arch() is None:
            note = "the numbers need a GPU: --run was not executed (no CUDA driver or GPU here)"
        else:
            runner = Runner(texts, namespace if namespace is not None else {}, inputs)
            runner.prepare(modules[chosen[0].name])
            outputs = {v.name: runner.run(v.name, modules[v.name]) for v in chosen}
    return Comparison(recipe, chosen, modules, runner, outputs, note, diff_mode, show_ptx).disassemble()


def compare(source: str, variants=None, *, vary: Sequence[str] = (), run: str | Sequence[str] | None = None,
            inputs: str | None = None, arch: str | None = None, config: Mapping | None = None,
            preset: str | None = None, instantiate: Sequence[str] = (), namespace: Mapping | None = None,
            diff: str = "side", ptx: bool = False, force: bool = False) -> Comparison:
    """Compile ``source`` once per variant and compare SASS, resources and (on a GPU) numbers.

    ``variants``: None for fast math with ``--ftz=false`` vs ``--ftz=true``; a
    dict ``{name: config}``; or a list of ``"NAME: JSON"`` strings or
    :class:`~cuda_magic.variants.Variant`.  ``vary``: toggles (ftz,
    prec-div, prec-sqrt, fmad, fast-math), each flipped from the resolved
    config into its own variant beside the unchanged baseline.  ``run``:
    Python launching the kernels, evaluated per variant in ``namespace``
    (default: the caller's globals and locals) on copies of the arrays it
    names; ``inputs="denormal"|"random"`` refills the arrays passed to const
    pointers first.  ``arch``/``config``/``preset`` are the cell's layers.

    Example::

        cmp = cuda_magic.compare(src, run="scale[1, 256](x, y, 0.5, 256)", arch="sm_90a")
        cmp.ftz("ftz=true", "scale"), cmp.numbers
    """
    layer = dict(validate(config))
    if arch is not None:
        layer = {**layer, **validate({"arch": arch})}
    if run is not None and namespace is None:
        frame = sys._getframe(1)
        namespace = {**frame.f_globals, **frame.f_locals}
    recipe = Recipe(source, layer, preset=preset, instantiate=tuple(instantiate), force=force)
    return build(recipe, variants, vary=vary, run=run, inputs=inputs, namespace=namespace,
                 diff_mode=diff, show_ptx=ptx)
