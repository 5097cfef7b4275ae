"""Magic lines: the options the magics share, ``$var`` expansion, argparse with short errors."""

from __future__ import annotations

import argparse

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument
from IPython.utils.process import arg_split

from .. import cell as _cell
from ..config import clip, printable, quote

_LIST_OPTIONS = ("--nvrtc", "--nvcc", "--ptxas", "--nvrtc+", "--nvcc+", "--ptxas+")


def config_options(func):
    """The options that set configuration keys, shared by ``%%cuda`` and ``%cuda_config``."""
    for decorator in reversed([
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
        if value is None or isinstance(value, (bool, str)) or action.dest == "help" or \
                action.type is not None:     # argparse converted it (--repeat 5 -> 5)
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


def parse(magic, line: str, prefix: str | None = None, verbatim: tuple = ()):
    """argparse over IPython's split, with ``--nvrtc "--flag"`` taken as the option's value
    (and the next token after each option in ``verbatim``: ``--where "-BM < 0"``).

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
        if tok in _LIST_OPTIONS or tok in verbatim:
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


def layer(args) -> dict:
    return _cell.line_config(arch=args.arch, compiler=args.compiler,
                             target_format=args.target_format, nvrtc=args.nvrtc, nvcc=args.nvcc,
                             ptxas=args.ptxas, backend_config=args.backend_config,
                             nvrtc_append=args.nvrtc_append, nvcc_append=args.nvcc_append,
                             ptxas_append=args.ptxas_append)
