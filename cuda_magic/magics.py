"""IPython glue: ``%%cuda``, ``%%cuda_header``, ``%%cuda_compare``, ``%cuda_config`` and how
their results display.

The work happens in :mod:`cuda_magic.cell` (compiling), :mod:`cuda_magic.comparison`
(variants) and :mod:`cuda_magic.display` (views).
"""

from __future__ import annotations

import json

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display
from IPython.utils.process import arg_split
from traitlets import Bool, Dict, TraitError, Unicode, observe, validate

from . import cell as _cell
from . import comparison as _comparison
from .compile.arch import detect_arch
from .compile.backends import CompileError
from .compile.compiler import CompilationResult, set_cache_dir
from .config import KEYS, ConfigError, from_json, get_preset, register_preset
from .config import validate as validate_config
from .compile.headers import define_header, header_users, note_users
from .display import ConfigView, ErrorView, HeaderView, view
from .display.compare import CompareView
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


def _parse(magic, line: str, prefix: str = "%"):
    """argparse over IPython's split, with ``--nvrtc "--flag"`` taken as the option's value."""
    tokens = arg_split(line, posix=True)
    merged = []
    it = iter(tokens)
    for tok in it:
        if tok in _LIST_OPTIONS:
            value = next(it, None)
            merged.append(tok if value is None else f"{tok}={value}")
        else:
            merged.append(tok)
    try:
        return magic.parser.parse_args(merged)
    except UsageError as exc:
        usage = magic.parser.format_usage().strip().lstrip(":").strip()  # "%name [--opt ...]"
        raise UsageError(f"{exc}\nusage: {prefix}{usage}") from None


def _layer(args) -> dict:
    return _cell.line_config(arch=args.arch, compiler=args.compiler,
                             target_format=args.target_format, nvrtc=args.nvrtc, nvcc=args.nvcc,
                             ptxas=args.ptxas, backend_config=args.backend_config)


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
    @argument("--name", help="also bind the compiled module under this name")
    @argument("--compile-only", action="store_true",
              help="compile and show; bind no kernels and do not load anything on the GPU")
    @argument("--force", action="store_true", help="recompile even if the cache has this build")
    @argument("--quiet", action="store_true", help="show nothing (errors still show)")
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
        types where names clash; ``m.bindings`` says which).  Under NVRTC,
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
        args = _parse(self.cuda, line, "%")
        try:
            module = _cell.build(cell, _layer(args), session=self.defaults,
                                 preset=args.preset or self.preset,
                                 instantiate=args.instantiate or (), force=args.force,
                                 load=not args.compile_only and detect_arch() is not None)
        except CompileError as exc:
            display(ErrorView(exc))
            exc.shown = True
            raise
        if not args.compile_only:
            self.shell.user_ns.update(module.python_names())
        if args.name:
            self.shell.user_ns[args.name] = module
        used = {n for r in module.results for n in r.inputs.session}
        if used:
            kernels = ", ".join(module.python_names()) or "no kernels"
            note_users(used, f"In [{self.shell.execution_count}] ({kernels})")
        return None if args.quiet else module

    @magic_arguments()
    @argument("name", help="the name cells include it by, e.g. factor.cuh or lib/util.cuh")
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
        args = _parse(self.cuda_header, line, "%%")
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
    @argument("--name", help="also bind the comparison under this name")
    @argument("--force", action="store_true", help="recompile even if the cache has these builds")
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
        args = _parse(self.cuda_compare, line, "%%")
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
    @line_magic
    def cuda_config(self, line):
        """Show or set the session defaults.

        With no arguments: the session defaults and the fully resolved config,
        each key with the layer that set it.  The ``%%cuda`` config flags set
        session defaults; ``--preset NAME`` sets the session preset.

        Examples::

            %cuda_config --arch sm_90a --nvrtc "--use_fast_math --ftz=false"
            %cuda_config --preset hopper
            %cuda_config --unset nvrtc
            %cuda_config --register-preset mine '{"cuda": {"ptxas": ["-v"]}}'
            %cuda_config --json
            %cuda_config --reset
        """
        args = _parse(self.cuda_config, line, "")
        defaults, preset = dict(self.defaults), self.preset
        if args.reset:
            defaults, preset = {}, None
        for key in args.unset or ():
            if key not in KEYS:
                raise UsageError(f"--unset {key}: unknown key; the keys are {', '.join(KEYS)}")
            defaults.pop(key, None)
        layer = _layer(args)
        defaults.update(layer)
        if args.register_preset:
            name, text = args.register_preset
            register_preset(name, from_json(text), override=True)
        if args.preset:
            get_preset(args.preset)
            preset = args.preset
        self.defaults, self.preset = defaults, preset
        if args.json:
            print(json.dumps({"cuda": _cell.session_config(defaults, preset).config},
                             sort_keys=True, separators=(",", ":")))
        elif args.register_preset and not (args.reset or args.unset or layer or args.preset):
            print(f"registered preset {args.register_preset[0]!r}: "
                  f"{get_preset(args.register_preset[0])}")
        else:
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
