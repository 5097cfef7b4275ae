"""IPython glue: ``%%cuda``, ``%%cuda_header``, ``%%cuda_compare``, ``%cuda_config`` and how
their results display.

The work happens in :mod:`cuda_magic.cell` (compiling), :mod:`cuda_magic.comparison`
(variants) and :mod:`cuda_magic.display` (views).
"""

from __future__ import annotations

import argparse
import builtins
import json
import keyword
import re
import sys
import unicodedata

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display
from IPython.utils.process import arg_split
from traitlets import Bool, Dict, TraitError, Unicode, observe, validate

from . import cell as _cell
from . import comparison as _comparison
from .compile.arch import detect_arch
from .compile.backends import CompileError
from .compile.compiler import CompilationResult, complete, set_cache_dir
from .compile.headers import define_header, header_users, note_users
from .config import (KEYS, ConfigError, check_preset, clip, from_json, get_preset, printable,
                     quote, register_preset, resolve)
from .config import validate as validate_config
from .display import ConfigView, ErrorView, HeaderView, view
from .display.compare import CompareView
from .runtime import Kernel
from .variants import TOGGLES

_LIST_OPTIONS = ("--nvrtc", "--nvcc", "--ptxas")


def config_options(func):
    """The options that set configuration keys, shared by ``%%cuda`` and ``%cuda_config``."""
    for decorator in reversed([
        argument("--arch", help="GPU architecture, e.g. sm_90a (detected from the GPU if unset)"),
        argument("--compiler", help="nvrtc (in-process, default) or nvcc (subprocess)"),
        argument("--target-format", help="cubin, ptx or fatbin (nvcc only)"),
        argument("--nvrtc", metavar='"ARGS"', help='NVRTC flags, shell-split: --nvrtc "--use_fast_math '
                 '--ftz=false"; "" clears the list'),
        argument("--nvcc", metavar='"ARGS"', help="nvcc flags, shell-split"),
        argument("--ptxas", metavar='"ARGS"', help='ptxas flags, shell-split: --ptxas "-v '
                 '--warn-on-spills"'),
        argument("--backend-config", metavar="JSON",
                 help="TVM-style config: '{\"cuda\": {\"arch\": \"sm_90a\"}}'"),
        argument("--preset", metavar="NAME", help="a preset layer: ampere, ada, hopper, blackwell, "
                 "precise, nvcc, or one you registered"),
    ]):
        func = decorator(func)
    return func


def _usage(magic) -> str:
    """``%%cuda [--arch ARCH] ...``: the magic's usage line with its own prefix."""
    usage = magic.parser.format_usage().strip().lstrip(":").strip().lstrip("%")
    owner = getattr(magic, "__self__", None)
    cell = owner is not None and any(m == magic for m in owner.magics.get("cell", {}).values())
    return ("%%" if cell else "%") + usage


def _malformed(parser, args) -> str | None:
    """The first option whose value argparse left in a shape no option takes (``--nvrtc=--``
    comes back as ``[]``), or None."""
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        if value is None or isinstance(value, (bool, str)) or action.dest == "help":
            continue
        single = action.nargs in (None, "?")
        items = value if isinstance(action, argparse._AppendAction) else [value]
        for item in items:
            ok = isinstance(item, str) if single else \
                isinstance(item, list) and item and all(isinstance(x, str) for x in item)
            if not ok:
                return "/".join(action.option_strings) or action.dest
    return None


MAX_EXPAND = 4096   # characters: longer magic lines are taken as written


def _expand(line: str, namespace) -> str:
    """``$name`` / ``{expr}`` from the user's namespace, as IPython expands magic lines.  The
    magics opt out of IPython's own expansion, which takes time quadratic in the line's length
    (30 s for 100 KB): lines over :data:`MAX_EXPAND` characters are taken as written."""
    if len(line) > MAX_EXPAND or ("$" not in line and "{" not in line):
        return line
    from IPython.utils.text import DollarFormatter
    try:
        return DollarFormatter().vformat(line, args=[], kwargs=dict(namespace))
    except Exception:   # IPython leaves a line it cannot expand as it is
        return line


def _parse(magic, line: str, prefix: str | None = None):
    """argparse over IPython's split, with ``--nvrtc "--flag"`` taken as the option's value.

    Every failure is a :class:`UsageError` ending with the magic's usage line (``prefix``, when
    given, replaces the ``%``/``%%`` the magic's kind implies).
    """
    usage = _usage(magic)
    if prefix is not None:
        usage = prefix + usage.lstrip("%")

    def fail(message: str):
        raise UsageError(printable(f"{clip(message, 300)}\nusage: {usage}"))

    line = _expand(line, magic.__self__.shell.user_ns)
    try:
        tokens = arg_split(line, posix=True)
    except ValueError as exc:   # shlex: an unclosed quote, a trailing backslash
        fail(f"{str(exc).lower()} in {quote(line, 120)}: close each quote and escape a lone "
             f"backslash (\\\\)")
    merged = []
    it = iter(tokens)
    for tok in it:
        if tok in _LIST_OPTIONS:
            value = next(it, None)
            merged.append(tok if value is None else f"{tok}={value}")
        else:
            merged.append(tok)
    try:
        args = magic.parser.parse_args(merged)
    except UsageError as exc:
        fail(str(exc))
    bad = _malformed(magic.parser, args)
    if bad:
        fail(f"argument {bad}: expected a value, e.g. {bad.split('/')[0]} VALUE "
             f"(a value that starts with '-' goes in quotes, or as {bad.split('/')[0]}=VALUE)")
    return args


def _layer(args) -> dict:
    return _cell.line_config(arch=args.arch, compiler=args.compiler,
                             target_format=args.target_format, nvrtc=args.nvrtc, nvcc=args.nvcc,
                             ptxas=args.ptxas, backend_config=args.backend_config)


# ---- names bound in the user namespace ------------------------------------------------------

# IPython's own names beside shell.user_ns_hidden: history (_, __, ___, _i, _ii, _iii, _iN, _N,
# _ih, _oh, _dh), exit/quit, get_ipython, In/Out, and every __dunder__ (__builtins__, __name__...).
_SHELL_NAMES = re.compile(r"_{1,3}|_i{1,3}|_i\d+|_\d+|_[iod]h|_exit_code|get_ipython|In|Out|exit"
                          r"|quit|__\w+__")


def _shell_owns(shell, name: str) -> bool:
    """Whether ``name`` is one of IPython's own names, which cuda-magic never binds."""
    return name in shell.user_ns_hidden or _SHELL_NAMES.fullmatch(name) is not None


def _check_name(shell, name: str | None) -> None:
    """``--name``: a Python identifier (not a keyword) that is not one of the shell's names."""
    if name is None:
        return
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"--name {quote(name, 40)}: give a Python name (letters, digits and _, "
                         f"not starting with a digit, not a keyword)")
    plain = unicodedata.normalize("NFKC", name)
    if plain != name:
        raise UsageError(f"--name {quote(name, 40)}: Python reads this name as {quote(plain, 40)}; "
                         f"write it that way")
    if _shell_owns(shell, name):
        raise UsageError(f"--name {quote(name, 40)}: that name belongs to IPython; pick another")


def _note(text: str) -> None:
    """One line in the cell's output (stderr), for what a cell did to the user's names."""
    print(f"%%cuda: {text}", file=sys.stderr)


def _kind(obj) -> str:
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else \
        f"{cls.__module__}.{cls.__qualname__}"


def _bind(shell, module, name: str | None, kernels: bool) -> None:
    """Bind the module's kernels (``kernels``) and the module (``--name``) in the user namespace.

    A kernel whose Python name is one of IPython's own (or a keyword) is not bound; one that
    replaces a variable that is not a Kernel, or hides a Python built-in, is bound with a note.
    """
    ns, bound, notes = shell.user_ns, {}, []
    via = f"{name}[{{!r}}]" if name else "m[{!r}] (bind the module with --name m)"
    for pyname, kernel in (module.python_names() if kernels else {}).items():
        if _shell_owns(shell, pyname) or keyword.iskeyword(pyname):
            notes.append(f"kernel {quote(pyname)} is not bound: that name belongs to "
                         f"{'Python' if keyword.iskeyword(pyname) else 'IPython'}; use "
                         + via.format(pyname))
            continue
        if pyname == name:
            notes.append(f"--name {name} binds the module, not kernel {quote(pyname)}; use "
                         + via.format(pyname))
            continue
        if pyname in ns and not isinstance(ns[pyname], Kernel):
            notes.append(f"kernel {quote(pyname)} replaces your variable {pyname} "
                         f"({_kind(ns[pyname])})")
        elif pyname not in ns and hasattr(builtins, pyname):
            notes.append(f"kernel {quote(pyname)} hides Python's built-in {pyname}; `del {pyname}` "
                         f"brings it back")
        bound[pyname] = kernel
    ns.update(bound)
    if name:
        ns[name] = module
    for text in notes:
        _note(text)


# ---- %cuda_config: check everything, then commit ------------------------------------------

def _check_session(defaults: dict, preset: str | None, preset_config: dict | None) -> None:
    """Resolve and complete the session as a cell with no options would (a missing arch with no
    GPU to detect one is fine here); raise the first error."""
    layers = [(f"preset:{preset}", preset_config)] if preset else []
    resolved = resolve(*layers, ("session", defaults))
    try:
        complete(resolved)
    except ConfigError as exc:
        if exc.key != "arch" or "arch" in resolved:
            raise


def _changes(old: dict, new: dict) -> str:
    """``arch 'sm_80' -> 'sm_89', ptxas (unset) -> ['-v']``."""
    def shown(cfg, key):
        return repr(cfg[key]) if key in cfg else "(unset)"
    return ", ".join(f"{key} {shown(old, key)} -> {shown(new, key)}"
                     for key in KEYS if old.get(key) != new.get(key))


@magics_class
class CudaMagics(Magics):
    """``%%cuda`` compiles a cell of CUDA C++, ``%%cuda_header`` keeps one as a header for later
    cells, ``%%cuda_compare`` compares builds of one, ``%cuda_config`` sets session defaults."""

    defaults = Dict(help="Session defaults: a flat config such as {'arch': 'sm_90a'}; "
                         "%cuda_config edits it.").tag(config=True)
    preset = Unicode(None, allow_none=True, help="The session's preset layer.").tag(config=True)
    cache_dir = Unicode(None, allow_none=True,
                        help="Also keep compiled binaries on disk here.").tag(config=True)
    static_sass = Bool(False, help="Also put the start of each kernel's SASS into the HTML saved "
                                   "with the notebook (for nbconvert); runs nvdisasm for every "
                                   "cell instead of when the SASS tab is opened.").tag(config=True)

    @validate("defaults")
    def _valid_defaults(self, proposal):
        try:
            return dict(validate_config(proposal["value"]))
        except ConfigError as exc:
            raise TraitError(str(exc)) from None

    @validate("preset")
    def _valid_preset(self, proposal):
        if proposal["value"] is not None:
            try:
                get_preset(proposal["value"])
            except ConfigError as exc:
                raise TraitError(str(exc)) from None
        return proposal["value"]

    @observe("cache_dir")
    def _cache_dir_changed(self, change):
        set_cache_dir(change["new"])

    @magic_arguments()
    @config_options
    @argument("--instantiate", action="append", metavar='"NAME<T>"',
              help='instantiate a template kernel, e.g. --instantiate "axpy<float>" (repeatable)')
    @argument("--name", help="also bind the compiled module under this Python name (not one of "
                              "IPython's own: In, Out, _, get_ipython...)")
    @argument("--compile-only", action="store_true",
              help="compile and show; bind no kernels and do not load anything on the GPU")
    @argument("--force", action="store_true", help="recompile even if the cache has this build")
    @argument("--quiet", action="store_true", help="show nothing (errors still show)")
    @no_var_expand
    @cell_magic
    def cuda(self, line, cell):
        """Compile this cell of CUDA C++ and bind its kernels by name.

        Configuration comes in layers, lowest first: built-in defaults,
        a preset, the session (%cuda_config), the cell (this line and the
        cell's leading ``//|`` lines, YAML) and a kernel (a ``//|`` block
        directly above one ``__global__``).  A key set both on this line and
        in the cell header is an error.  Kernels whose resolved configs are
        equal share one module; others get their own build of the cell.

        The cell shows what was compiled: a header line over tabs Config
        (values and layers, argv), Resources (ptxas -v), Log, SASS and PTX
        (made when their tab is opened) and Source; ``cuda_magic.show(m,
        "sass", kernel="scale")`` prints one part as text.

        The kernels bound are the kernel entries of the binary, under their
        C++ names (``a::k`` -> ``a_k`` and overloads with their parameter
        types where names clash; ``m.bindings`` says which).  A kernel named
        like one of IPython's own names (``In``, ``Out``, ``_``, ``_i1``,
        ``get_ipython``, ``exit``, ``__builtins__``...) or a Python keyword is
        not bound (reach it as ``m["In"]`` with ``--name m``); one line on
        stderr says so, and says when a kernel replaces a variable of yours
        that is not a kernel or hides a Python built-in.  Under NVRTC,
        ``<cstdio>``, ``<cstdint>``, ``<cmath>``... are supplied in memory;
        ``#include "NAME.cuh"`` finds ``%%cuda_header`` cells and your files,
        and editing any of them makes the next run compile.

        Launch a kernel as ``scale[grid, block](x, y, 2.0, n)`` with NumPy
        arrays (copied to the GPU and back), CuPy/PyTorch arrays (by pointer)
        and Python numbers (cast to the declared C type).

        Examples::

            %%cuda --arch sm_90a --nvrtc "--use_fast_math --ftz=false"
            //| ptxas: [-v, --warn-on-spills]
            extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = a * x[i];
            }

            //| nvrtc: [--use_fast_math, --ftz=true]
            extern "C" __global__ void scale_ftz(const float* x, float* y, float a, int n) { ... }

            scale[n // 256 + 1, 256](x, y, 2.0, n)

            %%cuda --instantiate "axpy<float>" --name m
            template <typename T> __global__ void axpy(T a, const T* x, T* y) { ... }

            axpy_float[...](...);  m["axpy<float>"]
        """
        args = _parse(self.cuda, line)
        _check_name(self.shell, args.name)
        try:
            module = _cell.build(cell, _layer(args), session=self.defaults,
                                 preset=args.preset or self.preset,
                                 instantiate=args.instantiate or (), force=args.force,
                                 load=not args.compile_only and detect_arch() is not None)
        except CompileError as exc:
            display(ErrorView(exc))
            exc.shown = True
            raise
        _bind(self.shell, module, args.name, kernels=not args.compile_only)
        used = {n for r in module.results for n in r.inputs.session}
        if used:
            kernels = ", ".join(module.python_names()) or "no kernels"
            note_users(used, f"In [{self.shell.execution_count}] ({kernels})")
        return None if args.quiet else module

    @magic_arguments()
    @argument("name", help="the name cells include it by, e.g. factor.cuh or lib/util.cuh")
    @no_var_expand
    @cell_magic
    def cuda_header(self, line, cell):
        """Keep this cell as an in-memory header that later ``%%cuda`` cells include.

        ``#include "NAME"`` then finds this text with either compiler (NVRTC
        gets it in memory, nvcc as a file beside the cell in its private
        directory).  Running the cell again with new text replaces the header;
        cells that include it recompile on their next run (the header is part
        of their cache key).  Shows the name, the size and the cells that
        include it.

        Examples::

            %%cuda_header factor.cuh
            #pragma once
            constexpr float FACTOR = 2.0f;

            %%cuda --arch sm_90a
            #include "factor.cuh"
            extern "C" __global__ void scale(float* x) { x[threadIdx.x] *= FACTOR; }
        """
        args = _parse(self.cuda_header, line)
        changed = define_header(args.name, cell)
        return HeaderView(args.name, cell, changed, header_users(args.name))

    @magic_arguments()
    @config_options
    @argument("--instantiate", action="append", metavar='"NAME<T>"',
              help='instantiate a template kernel, e.g. --instantiate "axpy<float>" (repeatable)')
    @argument("--vary", nargs="+", choices=TOGGLES, metavar="TOGGLE",
              help=f"compare the cell as configured with each toggle flipped: {', '.join(TOGGLES)}")
    @argument("--variant", action="append", metavar='"NAME: JSON"',
              help='a variant set by a config layer, e.g. --variant \'precise: {"nvrtc": '
                   '["--prec-div=true"]}\' (repeatable)')
    @argument("--run", action="append", metavar='"EXPR"',
              help='Python launching the kernels, run once per variant on copies of the arrays it '
                   'names, e.g. --run "scale[1, 256](x, y, 0.5, 256)" (repeatable; needs a GPU)')
    @argument("--inputs", choices=_comparison.INPUTS,
              help="refill the arrays --run passes to const pointers: denormal (cuda_magic."
                   "denormals) or random")
    @argument("--diff", choices=("side", "unified"), default="side", help="SASS diff layout")
    @argument("--ptx", action="store_true", help="also show the PTX diff")
    @argument("--name", help="also bind the comparison under this Python name (not one of "
                              "IPython's own)")
    @argument("--force", action="store_true", help="recompile even if the cache has these builds")
    @no_var_expand
    @cell_magic
    def cuda_compare(self, line, cell):
        """Compile this cell once per variant and show what changed: argv, resources, SASS
        (``.FTZ`` counted) and, with ``--run`` on a GPU, the numbers.

        Default variants: fast math with ``--ftz=false`` (the baseline) and
        ``--ftz=true`` (the active compiler's list gets ``--use_fast_math
        --ftz=...``; its other flags stay).  ``--vary TOGGLE ...`` compares
        the cell as configured with each toggle flipped (ftz, prec-div,
        prec-sqrt, fmad, fast-math); ``--variant "NAME: JSON"`` adds a
        variant set by a config layer.  The first variant is the baseline.

        ``--run`` is evaluated once per variant in your namespace with that
        variant's kernels, on its own copies of the arrays it names (yours
        stay untouched).  Per output array (non-const pointer) you see how
        many elements differ from the baseline, how many were flushed to 0
        where another variant kept a subnormal, and the largest absolute and
        ULP difference.  The widget's toggles rebuild the last variant
        (through the compile cache) and re-run it against the fixed baseline.
        The cell binds no kernels; ``--name c`` binds the Comparison.

        Examples::

            %%cuda_compare --arch sm_90a --run "scale[1, 256](x, y, 0.5, 256)" --inputs denormal
            extern "C" __global__ void scale(const float* x, float* y, float a, int n) { ... }

            %%cuda_compare --vary ftz prec-div --diff unified
            %%cuda_compare --variant 'fast: {"nvrtc": ["--use_fast_math"]}' --variant 'precise: {"nvrtc": []}'

            x = cuda_magic.denormals(256)     # subnormals, FLT_MIN, zeros, negatives
        """
        args = _parse(self.cuda_compare, line)
        _check_name(self.shell, args.name)
        recipe = _comparison.Recipe(cell, _layer(args), dict(self.defaults), args.preset or self.preset,
                                 tuple(args.instantiate or ()), args.force)
        try:
            result = _comparison.build(recipe, args.variant, vary=args.vary or (), run=args.run,
                                    inputs=args.inputs, namespace=self.shell.user_ns,
                                    diff_mode=args.diff, show_ptx=args.ptx)
        except CompileError as exc:
            display(ErrorView(exc))
            exc.shown = True
            raise
        if args.name:
            self.shell.user_ns[args.name] = result
        return result

    @magic_arguments()
    @config_options
    @argument("--unset", action="append", metavar="KEY", help="drop a session default (repeatable)")
    @argument("--reset", action="store_true", help="drop all session defaults and the preset")
    @argument("--json", action="store_true", help="print the resolved config as canonical JSON")
    @argument("--register-preset", nargs=2, metavar=("NAME", "JSON"),
              help="register a preset from a JSON config")
    @argument("--override", action="store_true",
              help="let --register-preset replace a preset you registered before")
    @no_var_expand
    @line_magic
    def cuda_config(self, line):
        """Show or set the session defaults.

        With no arguments: the session defaults and the fully resolved config,
        each key with the layer that set it.  The ``%%cuda`` config flags set
        session defaults; ``--preset NAME`` sets the session preset.

        A line takes effect whole or not at all: the resulting session (built-in
        defaults < preset < session, completed as a cell would be) is checked
        before anything is kept, so ``--target-format fatbin`` under NVRTC is
        refused and the session stays as it was.  An arch that is not set is fine
        here (cells then need a GPU to detect it, or ``--arch``).

        ``--register-preset NAME JSON`` adds a preset; the identical declaration
        again changes nothing.  Redefining one you registered needs
        ``--override``, and prints what changed.  The built-in presets (ampere,
        ada, hopper, blackwell, precise, nvcc) cannot be redefined: register
        yours under another name.  The preset is kept only if the rest of the
        line is.

        Examples::

            %cuda_config --arch sm_90a --nvrtc "--use_fast_math --ftz=false"
            %cuda_config --preset hopper
            %cuda_config --unset nvrtc
            %cuda_config --register-preset mine '{"cuda": {"ptxas": ["-v"]}}'
            %cuda_config --register-preset mine '{"cuda": {"ptxas": []}}' --override --preset mine
            %cuda_config --json
            %cuda_config --reset
        """
        args = _parse(self.cuda_config, line)
        if args.override and not args.register_preset:
            raise UsageError("--override replaces a preset: use it with --register-preset NAME JSON")
        # Work on copies; nothing is kept until the whole line has been checked.
        defaults, preset = dict(self.defaults), self.preset
        if args.reset:
            defaults, preset = {}, None
        for key in args.unset or ():
            if key not in KEYS:
                raise UsageError(f"--unset {quote(key)}: unknown key; the keys are {', '.join(KEYS)}")
            defaults.pop(key, None)
        layer = _layer(args)
        defaults.update(layer)
        pending = None      # (name, declaration it replaces or None, new declaration)
        if args.register_preset:
            name, text = args.register_preset
            try:
                pending = (name, *check_preset(name, from_json(text), override=args.override))
            except ConfigError as exc:
                message = str(exc).replace("pass override=True", "add --override")
                raise ConfigError(f"--register-preset {quote(name, 40)}: {message}",
                                  exc.key) from None
        if args.preset:
            preset = args.preset
        if preset is not None and pending and preset == pending[0]:
            preset_config = pending[2]
        elif preset is not None:
            try:
                preset_config = get_preset(preset)
            except ConfigError as exc:
                raise ConfigError(f"--preset {quote(preset, 40)}: {exc}") from None
        else:
            preset_config = None
        changes = bool(args.reset or args.unset or layer or args.preset or pending)
        try:
            if changes:    # showing a session that went bad another way (%config) still works
                _check_session(defaults, preset, preset_config)
        except ConfigError as exc:
            raise ConfigError(f"{exc} (nothing was changed)", exc.key) from None

        if pending:
            register_preset(pending[0], pending[2], override=args.override)
        self.defaults, self.preset = defaults, preset

        if pending:
            name, old, new = pending
            if old is not None:
                note = f"preset {name!r} overridden: {_changes(old, new)}"
            else:
                note = f"registered preset {name!r}: {new}"
            if preset == name and old is not None:
                note += " (the session's preset)"
            print(note, file=sys.stderr if args.json else sys.stdout)
        if args.json:
            print(json.dumps({"cuda": _cell.session_config(defaults, preset).config},
                             sort_keys=True, separators=(",", ":")))
        elif not pending or args.reset or args.unset or layer or args.preset:
            display(ConfigView(defaults, preset))


def load(ip) -> None:
    """Register the magics, and show Modules, CompilationResults and Comparisons as their views."""
    magics = CudaMagics(shell=ip)
    ip.register_magics(magics)
    fmt = ip.display_formatter
    for cls in (_cell.Module, CompilationResult):
        fmt.mimebundle_formatter.for_type(
            cls, lambda obj: view(obj, static_sass=magics.static_sass)._repr_mimebundle_())
        fmt.formatters["text/plain"].for_type(cls, lambda obj, p, cycle: p.text(view(obj).text()))
    fmt.mimebundle_formatter.for_type(
        _comparison.Comparison, lambda obj: CompareView(obj)._repr_mimebundle_())
    fmt.formatters["text/plain"].for_type(
        _comparison.Comparison, lambda obj, p, cycle: p.text(CompareView(obj).text()))
