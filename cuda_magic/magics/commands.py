"""The magic commands: ``%%cuda``, ``%%cuda_header``, ``%%cuda_compare``, ``%%cuda_tune``,
``%cuda_config`` and ``%cuda_export`` on one IPython ``Magics`` class, with the session's settings as its traitlets.

Each magic parses its line, calls the layer that does the work (:mod:`cuda_magic.cell`,
:mod:`cuda_magic.variants`, :mod:`.session`) and binds or displays what comes back.  The long
docstrings are the magics' ``?`` help, so this module is the magics and their help, nothing else.

One concept: the magics and their ``?`` help; the work is in the layers they call.
"""

from __future__ import annotations

import sys

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display
from traitlets import Bool, Dict, Float, TraitError, Unicode, default, observe, validate

from .. import cell as _cell
from .. import settings
from ..runtime.driver import remote as _state_remote
from ..compile.arch import detect_arch_soon
from ..compile.compiler import set_cache_dir
from ..compile.header_store import define_header, header_users, note_users
from ..config import ConfigError, get_preset
from ..config import validate as validate_config
from ..errors import TuneRunError, clip
from ..display import ConfigView, HeaderView
from ..display import frontend as _frontend
from ..variants import INPUTS, TOGGLES
from . import args as _args
from . import namespace as _namespace
from . import options as _opt
from . import session as _session
from .compiling import compiling
from .options import config_options


@magics_class
class CudaMagics(Magics):
    """``%%cuda`` compiles a cell of CUDA C++, ``%%cuda_header`` keeps one as a header for later
    cells, ``%%cuda_compare`` compares builds of one, ``%%cuda_tune`` sweeps one over a space of
    parameters, ``%cuda_config`` sets session defaults."""

    defaults = Dict(help="Session defaults: a flat config such as {'arch': 'sm_90a'}; "
                         "%cuda_config edits it.").tag(config=True)
    preset = Unicode(None, allow_none=True, help="The session's preset layer.").tag(config=True)
    cache_dir = Unicode(None, allow_none=True,
                        help="Also keep compiled binaries on disk here.").tag(config=True)
    static_sass = Bool(help="Also put the start of each kernel's SASS into the HTML saved "
                                   "with the notebook (for nbconvert); runs nvdisasm for every "
                                   "cell instead of when the SASS tab is opened.").tag(config=True)
    launch_timeout = Float(None, allow_none=True,
                           help="Seconds a kernel may run before it counts as hung "
                                "(KernelHangError; None or 0: no limit).").tag(config=True)

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

    @default("cache_dir")
    def _cache_dir_default(self):       # what is in force: settings.cache_dir ($CUDA_MAGIC_CACHE_DIR)
        return settings.cache_dir

    @default("static_sass")
    def _static_sass_default(self):     # settings.static_sass ($CUDA_MAGIC_STATIC_SASS)
        return settings.static_sass

    @default("launch_timeout")
    def _launch_timeout_default(self):  # settings.launch_timeout ($CUDA_MAGIC_LAUNCH_TIMEOUT)
        return settings.launch_timeout

    @validate("launch_timeout")
    def _valid_launch_timeout(self, proposal):
        try:
            settings.TABLE["launch_timeout"].check(proposal["value"], "launch_timeout")
        except ConfigError as exc:
            raise TraitError(str(exc)) from None
        return proposal["value"]

    @observe("launch_timeout")
    def _launch_timeout_changed(self, change):
        settings.put("launch_timeout", change["new"], by="%config CudaMagics.launch_timeout")

    @observe("static_sass")
    def _static_sass_changed(self, change):
        settings.static_sass = change["new"]

    @observe("cache_dir")
    def _cache_dir_changed(self, change):
        set_cache_dir(change["new"])

    @magic_arguments("%cuda")   # usage line: %%cuda (IPython prints one %)
    @config_options
    @_opt.instantiate()
    @_opt.name("the compiled module")
    @_opt.compile_only("compile and show; bind no kernels and do not load anything on the GPU")
    @_opt.force()
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
        ``--arch sm_80,sm_90a`` (or ``//| arch: [sm_80, sm_90a]``) builds the
        cell once per arch, in parallel; the kernels launch the build for the
        GPU here, and an "Archs" tab compares the archs side by side.

        The cell shows what was compiled: a header line (kernels, arch, the
        compilers and versions that ran, format, time, cache) over tabs Config
        (values and layers; argv with long paths named, ``-I<cccl-headers>``,
        the exact argv a click away), Resources (ptxas -v), Log, SASS and PTX
        (made when their tab is opened) and Source; ``cuda_magic.show(m,
        "sass", kernel="scale")`` prints one part as text, ``cuda_magic.show(m,
        "argv")`` the exact argv.

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
        args = _args.parse(self.cuda, line)
        _namespace.check_name(self.shell, args.name)
        self._replace_views(args.name)
        far = None
        if not args.compile_only and (settings.remote or _state_remote()):
            from ..runtime.remote import current
            far = current()               # CUDA_MAGIC_REMOTE: connected by the first cell
        gpu = None if args.compile_only else detect_arch_soon()     # overlaps the compile
        with compiling(self.shell, args.quiet):
            module = _cell.build(cell, _args.layer(args), session=self.defaults,
                                 preset=args.preset or self.preset,
                                 instantiate=args.instantiate or (), force=args.force,
                                 load=False if args.compile_only or far is not None
                                 else lambda: gpu() is not None)
        if args.compile_only:
            module.not_loaded = "--compile-only (compiled and shown; no kernels bound or loaded)"
        elif far is not None:
            module.not_loaded = (f"launches run on the remote GPU {far.gpu().label} "
                                 f"(cuda_magic.remote); it loads the binary on the first launch")
        _namespace.bind(self.shell, module, args.name, kernels=not args.compile_only)
        if args.name:
            _frontend.named(module, args.name)
        self._note_header_users([module], ", ".join(module.python_names()) or "no kernels")
        if not args.quiet:
            self._note_tune_header(module.parsed)
        return None if args.quiet else module

    @magic_arguments("%cuda_header")   # usage line: %%cuda_header (IPython prints one %)
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
        args = _args.parse(self.cuda_header, line)
        changed = define_header(args.name, cell)
        return HeaderView(args.name, cell, changed, header_users(args.name))

    @magic_arguments("%cuda_compare")   # usage line: %%cuda_compare (IPython prints one %)
    @config_options
    @_opt.instantiate()
    @argument("--vary", nargs="+", metavar="TOGGLE",
              help=f"compare the cell as configured with each toggle flipped: {', '.join(TOGGLES)}; "
                   f"or arch=sm_80,sm_90a: one variant per arch (the first is the baseline)")
    @argument("--variant", action="append", metavar='"NAME: JSON"',
              help='a variant set by a config layer, e.g. --variant \'precise: {"nvrtc": '
                   '["--prec-div=true"]}\' (repeatable)')
    @_opt.run('Python launching the kernels, run once per variant on copies of the arrays it '
              'names, e.g. --run "scale[1, 256](x, y, 0.5, 256)" (repeatable; needs a GPU)')
    @argument("--inputs", choices=INPUTS,
              help="refill the arrays --run passes to const pointers: denormal (cuda_magic."
                   "denormals) or random")
    @argument("--diff", choices=("side", "unified"), default="side", help="SASS diff layout")
    @argument("--ptx", action="store_true", help="also show the PTX diff")
    @_opt.name("the comparison")
    @_opt.force("these builds")
    @no_var_expand
    @cell_magic
    def cuda_compare(self, line, cell):
        """Compile this cell once per variant and show what changed: argv, resources, SASS
        (``.FTZ`` counted) and, with ``--run`` on a GPU, the numbers.

        Default variants: fast math with ``--ftz=false`` (the baseline) and
        ``--ftz=true`` (the active compiler's list gets ``--use_fast_math
        --ftz=...``; its other flags stay).  ``--vary TOGGLE ...`` compares
        the cell as configured with each toggle flipped (ftz, prec-div,
        prec-sqrt, fmad, fast-math); ``--vary arch=sm_80,sm_90a`` makes one
        variant per arch instead; ``--variant "NAME: JSON"`` adds a
        variant set by a config layer.  The first variant is the baseline.
        SASS diffs normalise register numbering (renumbering alone changes no
        line; ``cuda_magic.show(c, "sass", raw=True)`` compares the raw text)
        and say in one line what changed per kernel and variant.
        Variants may use different compilers (``--variant 'b: {"compiler":
        "nvcc"}'``); when NVRTC and nvcc differ in version the view says so,
        as the SASS may then differ for that reason alone.

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
            %%cuda_compare --vary arch=sm_80,sm_90a,sm_100a
            %%cuda_compare --variant 'fast: {"nvrtc": ["--use_fast_math"]}' --variant 'precise: {"nvrtc": []}'

            x = cuda_magic.denormals(256)     # subnormals, FLT_MIN, zeros, negatives
        """
        args = _args.parse(self.cuda_compare, line)
        _namespace.check_name(self.shell, args.name)
        from ..variants import comparison as _comparison     # NumPy: imported when first used
        recipe = _comparison.Recipe(cell, _args.layer(args), dict(self.defaults), args.preset or self.preset,
                                 tuple(args.instantiate or ()), args.force)
        with compiling(self.shell):
            result = _comparison.build(recipe, args.variant, vary=args.vary or (),
                                       run=args.run, inputs=args.inputs,
                                       namespace=self.shell.user_ns,
                                       diff_mode=args.diff, show_ptx=args.ptx)
        if args.name:
            self.shell.user_ns[args.name] = result
        return result

    @magic_arguments("%cuda_tune")   # usage line: %%cuda_tune (IPython prints one %)
    @config_options
    @_opt.instantiate(" in every candidate")
    @argument("--space", metavar='"SPEC"',
              help='the parameters and their values, e.g. --space "BM=[64,128] block=[128,256] '
                   'maxrreg=[none,128]" (default: the cell header\'s //| tune: {...})')
    @_opt.run('Python launching the kernels with the space\'s names (and cdiv) in scope, e.g. '
              '--run "gemm[cdiv(n, BM), block](a, c, n)"; recorded per candidate and timed '
              'in helper processes (repeatable; needs a GPU)')
    @argument("--where", metavar='"EXPR"',
              help='a condition over the space\'s names each candidate must meet, e.g. '
                   '--where "BM * BN <= 16384"')
    @_opt.compile_only("compile and prune; run nothing (no GPU needed)")
    @argument("--min-occupancy", type=float, metavar="FRACTION",
              help="prune candidates whose occupancy is under this fraction of the SM's warps, "
                   "e.g. 0.25")
    @argument("--keep-spills", action="store_true",
              help="keep candidates that spill registers (pruned by default)")
    @argument("--reference", metavar="EXPR",
              help="the expected outputs, evaluated in your namespace: {name: array} or one array "
                   "(default: the first candidate that ran)")
    @argument("--rtol", type=float, help="relative tolerance of the output check")
    @argument("--atol", type=float, help="absolute tolerance of the output check")
    @argument("--repeat", type=int, metavar="N", help="timed launches per candidate (default 100)")
    @argument("--warmup", type=int, metavar="N", help="untimed launches first")
    @argument("--no-flush", action="store_true", help="do not flush L2 between timed launches")
    @argument("--graph", action="store_true", help="time the launches as a CUDA graph")
    @argument("--nbytes", metavar='"EXPR"',
              help='bytes moved per run, an expression over the space\'s names and yours, for GB/s')
    @argument("--flops", metavar='"EXPR"',
              help='floating-point operations per run, e.g. "2*M*N*K", for TFLOP/s')
    @argument("--gpus", metavar="LIST", help="the GPUs to bench on, e.g. --gpus 0,1 (default: every "
                                             "GPU that runs the build; one helper process each)")
    @argument("--client", metavar="NAME",
              help="a dask.distributed.Client in your namespace: bench on its cluster instead")
    @argument("--timeout", type=float, metavar="SECONDS",
              help="how long one candidate may run on its GPU (default 60)")
    @argument("--group", metavar="PARAM", help="group the results by this parameter")
    @_opt.name("the Tuning")
    @argument("--write", action="store_true",
              help="put the %%%%cuda cell that builds the winner into the next input cell")
    @_opt.force("these builds")
    @no_var_expand
    @cell_magic
    def cuda_tune(self, line, cell):
        """Sweep this cell over a space of parameters: compile every candidate, prune, time the
        survivors on the GPU with their outputs checked, and bind the winner's kernels.

        The space (``--space``, or ``//| tune: {BM: [64, 128], block: [128,
        256]}`` in the cell header) names each parameter and its values:
        ``NAME=[v1, v2, ...]``, ``NAME=range(64, 513, 64)``, or one value;
        ``none`` leaves a flag or macro out.  What a parameter does depends on
        its name and the cell: a template parameter of a template kernel is a
        template argument (``gemm<64, 128>``); ``maxrreg``
        (``--maxrregcount``), ``ftz``, ``fast_math``, ``prec_div``,
        ``prec_sqrt``, ``fmad`` (true/false) and ``flags`` (extra flags) are
        compiler flags; ``block``, ``grid``, ``shared`` and any name the
        code never mentions are Python values for ``--run`` only (no
        recompile); any other name, or one written ``-DNAME``, is a macro
        (``-DNAME=value``).  ``--where`` keeps the combinations that meet a
        condition.  Each candidate is the config layer ``tune:BM=64,...`` on
        top of the cell's layers.

        The candidates compile in parallel through the compile cache; those
        that fail, spill (unless ``--keep-spills``) or whose occupancy is
        under ``--min-occupancy`` are pruned, with the reason.  ``--run`` is
        Python launching the kernels with the space's names in scope (and
        ``cdiv(a, b)``, ceiling division); it is evaluated once per candidate
        to record its launches, which are replayed and timed in helper
        processes, one per GPU (``--gpus`` picks them), on copies of your
        arrays, or on a Dask cluster with ``--client NAME``.  Outputs are
        checked against the first candidate that ran (or ``--reference``): a
        fast wrong kernel cannot win, and a faulting one is recorded while
        the sweep goes on.  ``--compile-only`` (or no GPU) stops after pruning.

        The winner's kernels are bound by name (a tuned template kernel under
        its plain name too: ``gemm`` launches the winning ``gemm<64, 128>``),
        by the rules of ``%%cuda``; ``--name t`` binds the Tuning (``t.winner``,
        ``t.rows()``, ``t.cell``, ``t.plot(by="BM")``); ``--write`` puts the
        ``%%cuda`` cell that builds the winner (its ``//|`` header with the
        winning flags) into the next input cell.

        Examples::

            %%cuda_tune --arch sm_90a --space "BM=[64,128] block=[128,256]" --run "gemm[cdiv(n, BM), block](a, c, n)"
            template <int BM> __global__ void gemm(const float* a, float* c, int n) { ... }

            gemm[(n + 127) // 128, 256](a, c, n)     # after it, gemm is the winner, e.g. gemm<128>

            %%cuda_tune --run "scale[cdiv(n, block), block](x, y, 2.0, n)" --where "block >= 128" --write
            //| tune: {block: [64, 128, 256], maxrreg: [none, 64], ftz: [false, true]}
            extern "C" __global__ void scale(const float* x, float* y, float a, int n) { ... }

            %%cuda_tune --compile-only --space "-DUNROLL=[1,2,4] maxrreg=[32,64]" --min-occupancy .5
            %%cuda_tune --space "BM=[64,128]" --run "..." --client dask_client --name t
        """
        args = _args.parse(self.cuda_tune, line,
                           verbatim=("--space", "--where", "--nbytes", "--flops", "--reference"))
        _namespace.check_name(self.shell, args.name)
        kw = {}
        for key in ("repeat", "warmup", "timeout"):
            if getattr(args, key) is not None:
                kw[key] = getattr(args, key)
        if args.gpus is not None:
            kw["gpus"] = _args.gpu_list(args.gpus)
        if args.client is not None:
            kw["client"] = _args.client(self.shell.user_ns, args.client)
        if args.reference is not None:
            kw["reference"] = _args.evaluate(self.shell.user_ns, "--reference", args.reference)
        from ..variants.tune import tune       # NumPy: imported when first used
        with compiling(self.shell):
            tuning = tune(cell, args.space, args.run, where=args.where,
                          options=_args.layer(args), session=dict(self.defaults),
                          preset=args.preset or self.preset,
                          instantiate=tuple(args.instantiate or ()),
                          namespace=self.shell.user_ns, compile_only=args.compile_only,
                          min_occupancy=args.min_occupancy, keep_spills=args.keep_spills,
                          rtol=args.rtol, atol=args.atol, flush=not args.no_flush,
                          graph=args.graph, nbytes=args.nbytes, flops=args.flops,
                          force=args.force, group=args.group, **kw)
        _namespace.bind_tuning(self.shell, tuning, args.name)
        self._note_header_users([c.module for c in tuning.candidates if c.module is not None],
                                "%%cuda_tune")
        if tuning.candidates and all(c.status == "failed" for c in tuning.candidates):
            display(tuning)         # the table says why each failed; the cell stops, as %%cuda's
            first = tuning.candidates[0]
            raise TuneRunError(f"every candidate failed to compile ({len(tuning.candidates)}; "
                               f"the table above says why; the first, {first.label}: "
                               f"{clip(first.reason, 160)})")
        if args.write:
            if tuning.cell is not None:
                self.shell.set_next_input(tuning.cell, replace=False)
            else:
                why = "no candidate that ran had the right outputs" if \
                    any(c.ran for c in tuning.candidates) else "nothing ran"
                _namespace.note(f"--write: no winner ({why}), so no cell to write", "%%cuda_tune")
        return tuning

    @magic_arguments()
    @config_options
    @argument("--unset", action="append", metavar="KEY", help="drop a session default (repeatable)")
    @argument("--reset", action="store_true", help="drop all session defaults and the preset")
    @argument("--json", action="store_true", help="print the resolved config as canonical JSON")
    @argument("--register-preset", nargs=2, metavar=("NAME", "JSON"),
              help="register a preset from a JSON config")
    @argument("--override", action="store_true",
              help="let --register-preset replace a preset you registered before")
    @argument("--remote", metavar="ADDRESS",
              help="run launches on a GPU of the Dask cluster at ADDRESS (tcp://host:8786); "
                   "'none': here again (the remote setting; docs/remote.md)")
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
            %cuda_config --nvrtc+ "-lineinfo"     # the session adds -lineinfo to the list
            %cuda_config --unset nvrtc
            %cuda_config --register-preset mine '{"cuda": {"ptxas": ["-v"]}}'
            %cuda_config --register-preset mine '{"cuda": {"ptxas": []}}' --override --preset mine
            %cuda_config --json
            %cuda_config --reset
            %cuda_config --remote tcp://gpu-box:8786    # launches run on that cluster's GPU
        """
        args = _args.parse(self.cuda_config, line)
        if args.remote is not None:
            from ..runtime.remote import remote
            settings.put("remote", args.remote, by="%cuda_config --remote")
            session = remote(settings.remote)
            print(f"launches run on {session.gpu().label}" if session is not None else
                  "launches run here")
            if line.split() == ["--remote", args.remote]:
                return
        outcome = _session.apply(
            _session.Session(self.defaults, self.preset),
            _session.Line(_args.line_options(args), unset=tuple(args.unset or ()),
                          reset=args.reset, preset=args.preset,
                          register=tuple(args.register_preset) if args.register_preset else None,
                          override=args.override))
        self.defaults, self.preset = outcome.session.defaults, outcome.session.preset
        note = outcome.note()
        if note:
            print(note, file=sys.stderr if args.json else sys.stdout)
        if args.json:
            print(_session.resolved_json(outcome.session))
        elif not outcome.registered or outcome.edits:
            display(ConfigView(outcome.session.defaults, outcome.session.preset))

    @magic_arguments("%cuda_export")
    @argument("object", help="the Module (%%%%cuda --name m) or one of its kernels")
    @argument("format", help="torch, cubin or wheel")
    @argument("path", help="the directory to write (for torch: the package itself)")
    @argument("options", nargs="*", metavar="KEY=EXPR",
              help="export()'s options as Python keyword arguments")
    @no_var_expand
    @line_magic
    def cuda_export(self, line):
        """Export a built module's kernels out of the notebook: as a PyTorch op package
        (``torch``: one ``torch.library.custom_op`` per kernel, its binaries inside, launched
        through the CUDA driver, so it runs with no compiler and no cuda-magic), as the binaries
        with a C header, a Python loader and a manifest (``cubin``), or as a wheel of the torch
        package (``wheel``).  Every build of the module's arch list goes in, byte for byte.

        The options are :func:`cuda_magic.export`'s keyword arguments, written as Python and
        evaluated in your namespace: ``grid`` and ``block`` (an int or tuple, an expression of
        the kernel's parameters as a string, or a function of them), ``shared``, ``outputs``
        (``{"y": "like x"}``: the op allocates and returns y), ``kernels``, ``name``,
        ``version``, ``overwrite``.

        Examples::

            %cuda_export m torch ops/scale_ops grid="cdiv(n, 256)" block=256 outputs={"y": "like x"}
            %cuda_export m cubin out/scale
            %cuda_export scale wheel build/scale_ops grid=lambda n: cdiv(n, 256) block=256
        """
        from ..exports.exporting import export
        if not line.strip() or line.strip() in ("-h", "--help"):
            _args.parse(self.cuda_export, line)
        obj, fmt, path, options = _args.export_line(self.shell.user_ns, line)
        _args.keywords_of(export, "%cuda_export", options, first=3)
        return export(obj, fmt, path, **options)

    @staticmethod
    def _replace_views(name: str | None) -> None:
        """Where the frontend gives no cell ids, a magic run again under the same ``--name``
        replaces that name's views: their widgets are closed (a cell's own re-run closes its
        views' widgets by its id: ``pre_run_cell``)."""
        if name and _frontend.running() is None:
            _frontend.replaced(name)

    def _note_tune_header(self, parsed) -> None:
        """A cell with a ``//| tune:`` header under ``%%cuda``: say once (per header) that it is
        built as written and that ``%%cuda_tune`` sweeps it."""
        if parsed.tune is None:
            return
        said = self.__dict__.setdefault("_tune_said", set())
        key = repr(parsed.tune)
        if key in said:
            return
        said.add(key)
        _namespace.note(f"the //| tune: header (line {parsed.header_lines.get('tune', 1)}) is not swept "
                    f"here: %%cuda builds the cell as written (the macros' #ifndef defaults); "
                    f"%%cuda_tune sweeps it")

    def _note_header_users(self, modules, what: str) -> None:
        """Record this cell as a user of the ``%%cuda_header`` cells its builds included (the
        header's view lists them)."""
        used = {n for m in modules for r in m.results for n in r.inputs.session}
        if used:
            note_users(used, f"In [{self.shell.execution_count}] ({what})")
