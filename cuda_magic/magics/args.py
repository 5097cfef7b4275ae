"""Magic lines: ``$var`` expansion, argparse with short errors, and the values options take (the
config layer, GPU lists, names and expressions from the user's namespace).  The options
themselves are declared in :mod:`.options`."""

from __future__ import annotations

import argparse

from IPython.core.error import UsageError
from IPython.utils.process import arg_split

from .. import cell as _cell
from ..errors import clip, printable, quote

_LIST_OPTIONS = ("--nvrtc", "--nvcc", "--ptxas", "--nvrtc+", "--nvcc+", "--ptxas+")


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


LINE_OPTIONS = ("arch", "compiler", "target_format", "nvrtc", "nvcc", "ptxas", "backend_config",
                "nvrtc_append", "nvcc_append", "ptxas_append")
"""The config options' values as parsed (``options.config_options``), by their argparse names:
the keywords of :func:`cuda_magic.cell.line_config`."""


def line_options(args) -> dict:
    """The config options of a parsed line as written: ``{"arch": "sm_90a", "nvrtc": None, ...}``."""
    return {key: getattr(args, key) for key in LINE_OPTIONS}


def layer(args) -> dict:
    """The config layer a parsed line sets (lists shell-split)."""
    return _cell.line_config(**line_options(args))


def gpu_list(text: str) -> list[int]:
    """``--gpus 0,1`` -> ``[0, 1]``."""
    items = [t.strip() for t in text.split(",")]
    if not all(t.isdigit() and t.isascii() for t in items):
        raise UsageError(f"--gpus {quote(text, 40)}: give GPU ordinals as a comma list, "
                         f"e.g. --gpus 0,1")
    return [int(t) for t in items]


def client(namespace, name: str):
    """``--client NAME``: the Dask client the user made under ``name``."""
    if not name.isidentifier() or name not in namespace:
        raise UsageError(f"--client {quote(name, 40)}: no such name in your namespace; make one "
                         f"first, e.g. client = dask.distributed.Client(...), then --client client")
    found = namespace[name]
    if not callable(getattr(found, "submit", None)):
        raise UsageError(f"--client {name}: {name} is not a dask.distributed.Client (it is "
                         f"{type(found).__name__})")
    return found


def evaluate(namespace, option: str, text: str):
    """An option's Python expression, evaluated in the user's namespace."""
    try:
        return eval(text, namespace)
    except Exception as exc:
        raise UsageError(f"{option} {quote(text, 60)}: {type(exc).__name__}: "
                         f"{clip(str(exc), 200)}") from None


_EXPORTS = 0      # %cuda_export lines compiled so far (each its own linecache name)


def export_line(namespace, line: str) -> tuple:
    """``%cuda_export OBJECT FORMAT PATH [KEY=EXPR ...]``: the object (a Python expression in the
    user's namespace), the format, the path, and the options as keyword arguments evaluated
    there.  The options' text is kept in ``linecache`` under its own name, so a ``lambda``
    among them has a source the export can copy."""
    import linecache
    import re
    import shlex
    global _EXPORTS
    m = re.match(r"\s*(\S+)\s+(\S+)\s+(\"[^\"]*\"|'[^']*'|\S+)\s*(.*)$", line, re.S)
    if m is None:
        raise UsageError("write %cuda_export OBJECT FORMAT PATH [KEY=EXPR ...], e.g. "
                         "%cuda_export m torch ops/scale_ops grid=\"cdiv(n, 256)\" block=256")
    try:
        path = shlex.split(m[3])[0] if m[3][0] in "\"'" else m[3]
    except (ValueError, IndexError):          # shlex: no closing quote
        raise UsageError(f"PATH {quote(m[3], 80)}: no closing quote; write PATH in matching "
                         f"quotes, e.g. %cuda_export m cubin 'out/my kernels'") from None
    obj = evaluate(namespace, "OBJECT", m[1])
    options = {}
    if m[4].strip():
        _EXPORTS += 1
        name = f"<%cuda_export options {_EXPORTS}>"
        text = f"dict({_with_commas(m[4].strip())})"
        linecache.cache[name] = (len(text), None, [text + "\n"], name)
        try:
            options = eval(compile(text, name, "eval"), namespace)
        except Exception as exc:
            raise UsageError(f"%cuda_export options {quote(m[4].strip(), 60)}: write them as "
                             f"Python keyword arguments (grid=\"cdiv(n, 256)\" block=256): "
                             f"{type(exc).__name__}: {clip(str(exc), 200)}") from None
    return obj, m[2], path, options


def _with_commas(text: str) -> str:
    """``grid="cdiv(n, 256)" block=256`` -> ``grid="cdiv(n, 256)", block=256``: a comma before
    each ``KEY=`` at the top level that has none (keyword arguments written as a magic line)."""
    import io
    import tokenize
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    inserts, depth, in_lambda, last = [], 0, False, None
    for i, t in enumerate(tokens):
        if t.type == tokenize.OP and t.string in "([{":
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
        elif depth == 0 and t.type == tokenize.NAME and t.string == "lambda":
            in_lambda = True
        elif depth == 0 and in_lambda and t.type == tokenize.OP and t.string == ":":
            in_lambda = False
        elif depth == 0 and not in_lambda and t.type == tokenize.NAME and last is not None \
                and i + 1 < len(tokens) and tokens[i + 1].string == "=" \
                and not (last.type == tokenize.OP and last.string in (",", "(")):
            inserts.append(t.start[1])
        if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER):
            last = t
    for col in reversed(inserts):
        text = text[:col].rstrip() + ", " + text[col:]
    return text


def keywords_of(fn, magic: str, options: dict, first: int = 0) -> None:
    """A UsageError naming the option when ``options`` has a keyword ``fn`` does not take."""
    import inspect
    params = list(inspect.signature(fn).parameters.values())[first:]
    names = [p.name for p in params if p.kind is p.KEYWORD_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD]
    unknown = [k for k in options if k not in names]
    if unknown:
        raise UsageError(f"{magic}: no option {', '.join(unknown)}; it takes {', '.join(names)}")
