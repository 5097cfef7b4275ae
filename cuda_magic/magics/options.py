"""The options of the magic lines, each declared once.

Every option is an IPython ``magic_arguments.argument``; :func:`options` applies several as one
decorator, as IPython's ``script_args`` does (``IPython/core/magics/script.py``).
:data:`config_options` (the config keys) is shared by the magics that compile and
``%cuda_config``; ``--instantiate``, ``--name``, ``--force``, ``--compile-only`` and ``--run``,
taken by several magics, are made here with the words that name what the magic builds or binds.
Whatever decorates a magic is listed, in source order, in its usage line and ``?`` help.
"""

from __future__ import annotations

from IPython.core.magic_arguments import argument


def options(*decorators):
    """One decorator that applies ``decorators`` (``argument`` calls, or decorators made here) in
    the order given: that is their order in the usage line and the ``?`` help."""
    def apply(func):
        for decorator in reversed(decorators):      # magic_arguments lists the last applied first
            func = decorator(func)
        return func
    return apply


config_options = options(
    argument("--arch", help="GPU architecture, e.g. sm_90a (detected from the GPU if unset); "
             "a comma list, sm_80,sm_90a, builds the cell once per arch"),
    argument("--compiler", help="nvrtc (in-process, default) or nvcc (subprocess)"),
    argument("--target-format", metavar="FORMAT", help="what the compiler makes: NVRTC cubin "
             "(default) or ptx; nvcc fatbin (default), cubin or ptx"),
    argument("--nvrtc", metavar='"ARGS"', help='NVRTC flags, shell-split; they replace the inherited list '
             '(--nvrtc+ appends): --nvrtc "--use_fast_math --ftz=false"; "" clears it'),
    argument("--nvcc", metavar='"ARGS"', help="nvcc flags, shell-split; they replace the inherited list"),
    argument("--ptxas", metavar='"ARGS"', help='ptxas flags, shell-split; they replace the inherited list: '
             '--ptxas "-v --warn-on-spills"'),
    argument("--nvrtc+", dest="nvrtc_append", metavar='"ARGS"',
             help='NVRTC flags appended to the inherited list: --nvrtc+ "-lineinfo"'),
    argument("--nvcc+", dest="nvcc_append", metavar='"ARGS"',
             help="nvcc flags appended to the inherited list"),
    argument("--ptxas+", dest="ptxas_append", metavar='"ARGS"',
             help="ptxas flags appended to the inherited list"),
    argument("--backend-config", metavar="JSON",
             help="TVM-style config: '{\"cuda\": {\"arch\": \"sm_90a\"}}'"),
    argument("--preset", metavar="NAME", help="a preset layer: ampere, ada, hopper, blackwell, "
             "precise, nvcc, or one you registered"),
)
"""The options that set configuration keys: ``%%cuda``, ``%%cuda_compare``, ``%%cuda_tune`` and
``%cuda_config``.  Their values reach the config through :func:`cuda_magic.magics.args.layer`."""


def instantiate(where: str = ""):
    """``--instantiate "NAME<T>"`` (repeatable); ``where``: e.g. ``" in every candidate"``."""
    return argument("--instantiate", action="append", metavar='"NAME<T>"',
                    help=f'instantiate a template kernel{where}, e.g. --instantiate "axpy<float>" '
                         f'(repeatable)')


def name(what: str):
    """``--name NAME``: also bind ``what`` (``"the compiled module"``) under NAME."""
    return argument("--name", help=f"also bind {what} under this Python name (not one of "
                                   f"IPython's own: In, Out, _, get_ipython...)")


def force(builds: str = "this build"):
    """``--force``: recompile past the compile cache."""
    return argument("--force", action="store_true",
                    help=f"recompile even if the cache has {builds}")


def compile_only(does: str):
    """``--compile-only``; ``does``: what the magic then does instead."""
    return argument("--compile-only", action="store_true", help=does)


def run(does: str):
    """``--run "EXPR"`` (repeatable): Python launching the cell's kernels; ``does``: how the magic
    runs it."""
    return argument("--run", action="append", metavar='"EXPR"', help=does)
