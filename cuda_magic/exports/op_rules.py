"""The rules of an exported torch op: how it launches its kernel and allocates its outputs, as
Python source.

The user gives each rule as a value (``block=256``, ``grid=(64, 64)``), as an expression of the
kernel's parameters (``grid="cdiv(n, 256)"``, ``outputs={"y": "like x"}``,
``outputs={"c": "(m, n)"}``) or as a function (``grid=lambda n: cdiv(n, 256)``, a ``def``),
whose parameters are named after the kernel's.  Each becomes Python text of the generated
package, checked here: an expression must parse and use only the kernel's parameters and the
names the package provides (:data:`NAMES`); a function's source must be readable and use no
name from the notebook, since the package cannot see the notebook.

An expression string is a formula, nothing more: numbers, the kernel's parameters, arithmetic,
comparisons, conditionals, tuples, subscripts, calls and public attributes (``x.shape[0]``,
``math.ceil``); no strings, lambdas, comprehensions or assignments, and no attribute that starts
with ``_``.  It reaches the package as :func:`ast.unparse` writes it, never as the text given.
The builtins a rule may call are :data:`BUILTINS`, pure functions of numbers and sequences
(``open``, ``eval``, ``getattr`` and the like are no name a rule can reach).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import io
import linecache
import textwrap
import tokenize
from dataclasses import dataclass

from ..errors import ExportError, quote
from .spec import DTYPES, KernelSpec, ParamSpec

__all__ = ["Rules", "Output", "Function", "rules_for", "NAMES", "BUILTINS"]

# the builtins a rule may call: functions of numbers and sequences, no input, output or lookup
BUILTINS = frozenset({"abs", "all", "any", "bool", "divmod", "enumerate", "float", "int",
                      "isinstance", "len", "list", "max", "min", "pow", "range", "reversed",
                      "round", "sorted", "sum", "tuple", "zip"})
# what an expression or function may use besides the kernel's parameters
NAMES = frozenset({"cdiv", "torch", "math"}) | BUILTINS
_KEYS = ("grid", "block", "shared", "outputs")
# the syntax an expression string may use
_EXPRESSION_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Tuple, ast.List, ast.BinOp, ast.UnaryOp,
    ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword, ast.Attribute, ast.Subscript,
    ast.Slice, ast.Starred, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
_NUMBERS = (int, float, bool, type(None))


@dataclass(frozen=True)
class Function:
    """A rule given as a function: its ``source`` (a ``def``, or a lambda expression) as
    :func:`ast.unparse` writes it, the ``name`` of the def (None for a lambda) and the kernel
    parameters it is called on (``args``).  ``key`` says which rule it is (``grid``, ``block``,
    ``shared``, ``shape`` of an output); the package names it."""

    key: str
    source: str
    name: str | None
    args: tuple[str, ...]


@dataclass(frozen=True)
class Output:
    """An output the op allocates: its parameter, shape (a Python expression or a
    :class:`Function`), dtype (a torch dtype name) and the parameter whose device it goes on
    (None: the current device)."""

    param: str
    shape: "str | Function"
    dtype: str
    device: str | None
    spec: str                  # as the user gave it, for the manifest


@dataclass(frozen=True)
class Rules:
    """One kernel's launch as Python expressions or :class:`Function` calls (``grid``,
    ``block``, ``shared``) and its ``outputs``."""

    grid: "str | Function"
    block: "str | Function"
    shared: "str | Function"
    outputs: tuple[Output, ...]
    given: dict               # each rule as given, in words, for the manifest and the view

    @property
    def functions(self) -> tuple[Function, ...]:
        """The functions the rules call, in order: outputs' shapes, then grid, block, shared."""
        rules = [o.shape for o in self.outputs] + [self.grid, self.block, self.shared]
        return tuple(r for r in rules if isinstance(r, Function))


def _names(tree: ast.AST) -> set[str]:
    """The free names an expression or function reads (its own parameters and locals aside)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            a = node.args
            bound |= {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
            bound |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.comprehension):
            bound |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)} - bound


def _formula(tree: ast.AST, text: str, where: str) -> None:
    """An ExportError unless ``tree`` is a formula (see the module docstring)."""
    for node in ast.walk(tree):
        bad = None
        if not isinstance(node, _EXPRESSION_NODES):
            bad = {ast.Lambda: "a lambda", ast.NamedExpr: "an assignment (:=)",
                   ast.JoinedStr: "an f-string"}.get(type(node), f"{type(node).__name__} syntax")
        elif isinstance(node, ast.Constant) and not isinstance(node.value, _NUMBERS + (complex,)):
            bad = "a string" if isinstance(node.value, (str, bytes)) else repr(node.value)
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            bad = f"the attribute {node.attr}"
        if bad:
            raise ExportError(f"{where}: {quote(text, 80)} uses {bad}; an expression string is "
                              f"a formula of the parameters (numbers, arithmetic, comparisons, "
                              f"calls, public attributes): give a def or a lambda for more")


def _expression(text: str, where: str, allowed: set[str]) -> str:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExportError(f"{where}: {quote(text, 80)} is not a Python expression ({e.msg})") from None
    except ValueError:              # a NUL in the text
        raise ExportError(f"{where}: {quote(text, 80)} is not a Python expression") from None
    _formula(tree, text, where)
    unknown = sorted(_names(tree) - allowed - NAMES)
    if unknown:
        raise ExportError(f"{where}: {quote(text, 80)} uses {', '.join(unknown)}, which the "
                          f"exported package does not have; an expression may use the kernel's "
                          f"parameters ({', '.join(sorted(allowed)) or 'none'}), cdiv, math and "
                          f"torch")
    return ast.unparse(tree)


def _function_source(fn, where: str) -> tuple[str, ast.AST]:
    """The source of ``fn`` (a ``def`` or a lambda) as a module-level definition, and its tree."""
    try:
        text = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        raise ExportError(f"{where}: the source of {quote(fn, 80)} cannot be read, so the package "
                          f"cannot hold it; give an expression string instead") from None
    if fn.__name__ != "<lambda>":
        try:
            tree = ast.parse(text)
        except SyntaxError:
            tree = None
        node = tree.body[0] if tree is not None and tree.body else None
        if isinstance(node, ast.FunctionDef) and not node.decorator_list:
            return ast.unparse(node), node
        raise ExportError(f"{where}: {fn.__name__} is not a plain def; give a def, a lambda or "
                          f"an expression string")
    code = fn.__code__
    lines = linecache.getlines(code.co_filename)[code.co_firstlineno - 1:][:200]
    found = [(node, col) for node, col in _lambdas("".join(lines)) if _same_code(node, code)]
    if len(found) > 1:       # alike in names and constants: the one whose body starts there
        at = _body_column(code)
        found = [(n, c) for n, c in found if c == at] or found
    same = [n for n, _ in found]
    if len(same) > 1 and len({ast.dump(n) for n in same}) == 1:
        same = same[:1]      # the same lambda written twice: either is it
    if len(same) != 1:
        raise ExportError(f"{where}: the lambda cannot be told apart from the others on its line; "
                          f"give a def or an expression string")
    return ast.unparse(same[0]), same[0]


def _body_column(code) -> int | None:
    """The column where the code's first instruction on its first line starts (Python 3.11+)."""
    cols = [c for line, _, c, e in getattr(code, "co_positions", lambda: ())()
            if line == code.co_firstlineno and c is not None and e is not None and e > c]
    return min(cols) if cols else None


def _lambdas(text: str) -> list[tuple[ast.Lambda, int | None]]:
    """Every lambda in ``text`` (lines that may be part of a longer statement: a dict entry, a
    call's argument), each read from its ``lambda`` to the comma or bracket that ends it, with
    the column its body starts at on the first line (None for a lambda further down)."""
    lines = text.splitlines(keepends=True)
    starts = [(sum(map(len, lines[:t.start[0] - 1])) + t.start[1], t.start) for t in _tokens(text)
              if t.type == tokenize.NAME and t.string == "lambda"]
    out = []
    for start, (row, col) in starts:
        rest = text[start:]
        depth, end, body = 0, len(rest), False
        rest_lines = rest.splitlines(keepends=True)
        for t in _tokens(rest):
            if t.type == tokenize.OP and t.string in "([{":
                depth += 1
            elif t.type == tokenize.OP and t.string in ")]}":
                depth -= 1
            elif depth == 0 and t.type == tokenize.OP and t.string == ":":
                body = True                        # past the parameters
            if depth < 0 or (depth == 0 and body and t.type == tokenize.OP and t.string == ",") or \
                    (depth == 0 and t.type in (tokenize.NEWLINE, tokenize.ENDMARKER)):
                end = sum(map(len, rest_lines[:t.start[0] - 1])) + t.start[1]
                break
        try:
            node = ast.parse(rest[:end].strip(), mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.Lambda):
            first = row == 1 and node.body.lineno == 1
            out.append((node, col + node.body.col_offset if first else None))
    return out


def _tokens(text: str) -> list:
    """The tokens of ``text`` as far as they can be read (a fragment may end mid-bracket)."""
    out = []
    try:
        for t in tokenize.generate_tokens(io.StringIO(text).readline):
            out.append(t)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return out


def _same_code(node: ast.Lambda, code) -> bool:
    """Whether ``node`` compiles to a lambda with ``code``'s parameters, names and constants
    (bytecode itself depends on where a lambda was compiled, so it is not compared)."""
    try:
        other = compile(ast.Expression(node), "<export>", "eval").co_consts[0]
    except (SyntaxError, ValueError, IndexError, TypeError):
        return False
    return (other.co_varnames == code.co_varnames and other.co_names == code.co_names
            and other.co_argcount == code.co_argcount
            and _consts(other.co_consts) == _consts(code.co_consts))


def _consts(consts) -> tuple:
    return tuple(_consts(c.co_consts) + (c.co_names,) if hasattr(c, "co_consts") else (type(c), c)
                 for c in consts)


def _function(fn, where: str, params: set[str], key: str) -> Function:
    """``fn`` (a def or a lambda) as the :class:`Function` the package holds and calls on the
    kernel parameters it names."""
    if not hasattr(fn, "__code__"):
        raise ExportError(f"{where}: {quote(fn, 80)} is not a def or a lambda, so the package "
                          f"cannot hold its source; give a def, a lambda or an expression string")
    if fn.__code__.co_freevars:
        raise ExportError(f"{where}: {fn.__name__} reads {', '.join(fn.__code__.co_freevars)} from "
                          f"the function around it, which the package cannot see; write the "
                          f"value in")
    text, node = _function_source(fn, where)
    names = [a.arg for a in node.args.posonlyargs + node.args.args]
    if node.args.vararg or node.args.kwarg or node.args.kwonlyargs:
        raise ExportError(f"{where}: give {fn.__name__} plain parameters named after the kernel's")
    unknown = [n for n in names if n not in params]
    if unknown:
        raise ExportError(f"{where}: {fn.__name__} takes {', '.join(unknown)}, which the kernel "
                          f"has no parameter of; its parameters are {', '.join(sorted(params))}")
    for sub in ast.walk(node):
        bad = f"the attribute {sub.attr}" if isinstance(sub, ast.Attribute) and \
            sub.attr.startswith("_") else "import" if isinstance(sub, (ast.Import, ast.ImportFrom)) \
            else "global" if isinstance(sub, (ast.Global, ast.Nonlocal)) else None
        if bad:
            raise ExportError(f"{where}: {fn.__name__} uses {bad}; a rule computes from the "
                              f"kernel's parameters with cdiv, math, torch and the builtins "
                              f"{', '.join(sorted(BUILTINS))}")
    free = sorted(_names(node) - set(names) - NAMES)
    calls = [n for n in free if hasattr(builtins, n)]
    if calls:
        raise ExportError(f"{where}: {fn.__name__} uses {', '.join(calls)}, which a rule cannot "
                          f"call; it computes with cdiv, math, torch and the builtins "
                          f"{', '.join(sorted(BUILTINS))}")
    if free:
        raise ExportError(f"{where}: {fn.__name__} uses {', '.join(free)} from the notebook, which "
                          f"the package cannot see; write the value in or pass it as a parameter")
    return Function(key, text, None if isinstance(node, ast.Lambda) else node.name, tuple(names))


def _rule(value, key: str, k: KernelSpec, params: set[str]) -> tuple["str | Function", str]:
    """``(python expression or function, as given)`` of a grid, block or shared rule."""
    where = f"{key} of {k.name}"
    if isinstance(value, bool) or value is None:
        raise ExportError(f"{where}: give an int, a tuple, an expression string or a function, "
                          f"not {quote(value, 80)}")
    if isinstance(value, int):
        return repr(value), repr(value)
    if isinstance(value, (tuple, list)) and value and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return repr(tuple(value)), repr(tuple(value))
    if isinstance(value, str):
        return _expression(value, where, params), value
    if callable(value):
        return _function(value, where, params, key), getattr(value, "__name__", "function")
    raise ExportError(f"{where}: give an int, a tuple, an expression string or a function, not "
                      f"{quote(value, 80)}")


def _dtype(value, where: str) -> str:
    """A torch dtype name given for an output: ``"float16"`` (or ``torch.float16``)."""
    name = value if isinstance(value, str) else str(value).removeprefix("torch.") \
        if type(value).__name__ == "dtype" else None
    if name not in DTYPES:
        raise ExportError(f"{where}: dtype {quote(value, 40)} is no torch dtype an output can "
                          f"have; give one of {', '.join(DTYPES)}")
    return name


def _output(param: ParamSpec, spec, k: KernelSpec, inputs: set[str], tensors: list[str]) -> Output:
    where = f"outputs of {k.name}: '{param.name}'"
    dtype = None
    if isinstance(spec, tuple) and len(spec) == 2 and (isinstance(spec[1], str) or
                                                       type(spec[1]).__name__ == "dtype"):
        spec, dtype = spec[0], _dtype(spec[1], where)
    if dtype is None:
        if param.tensor is None:
            raise ExportError(f"{where} is {param.declared}: no dtype follows from that; give "
                              f"(shape, dtype), e.g. ('like x', 'float16')")
        dtype = param.tensor[0]
    device = tensors[0] if tensors else None
    if isinstance(spec, str) and spec.strip().startswith("like "):
        other = spec.strip()[5:].strip()
        if other not in tensors:
            raise ExportError(f"{where}: {quote(spec, 80)} names no input tensor; the op's "
                              f"input tensors are {', '.join(tensors) or 'none'}")
        return Output(param.name, f"{other}.shape", dtype, other, spec)
    if isinstance(spec, str):
        return Output(param.name, _expression(spec, where, inputs), dtype, device, spec)
    if isinstance(spec, (tuple, list)) and all(isinstance(v, int) for v in spec):
        return Output(param.name, repr(tuple(spec)), dtype, device, repr(tuple(spec)))
    if callable(spec):
        return Output(param.name, _function(spec, where, inputs, f"shape {param.name}"), dtype,
                      device, getattr(spec, "__name__", "function"))
    raise ExportError(f"{where}: give 'like NAME', a shape expression ('(m, n)'), a tuple of "
                      f"ints or a function of the inputs, not {quote(spec, 80)}")


def rules_for(k: KernelSpec, options: dict) -> Rules:
    """One kernel's :class:`Rules` from its options (``grid``, ``block``, ``shared``,
    ``outputs``), each checked against the kernel's parameters."""
    unknown = sorted(set(options) - set(_KEYS))
    if unknown:
        raise ExportError(f"{k.name}: no option {', '.join(unknown)}; a torch op takes "
                          f"{', '.join(_KEYS)}")
    for p in k.params:
        if p.kind not in ("pointer", "scalar") or (p.kind == "pointer" and p.pointer != 1):
            raise ExportError(f"{k.name}: parameter '{p.name}' ({p.declared}) is a {p.kind if p.pointer < 2 else 'pointer to a pointer'}; "
                              f"a torch op passes tensors and numbers: export it as 'cubin' "
                              f"(kernel.h and kernel.py take any parameter)")
    outputs = options.get("outputs") or {}
    if not isinstance(outputs, dict):
        raise ExportError(f"outputs of {k.name}: a dict, parameter -> 'like x' or a shape, not "
                          f"{quote(outputs, 80)}")
    by_name = {p.name: p for p in k.params}
    for name in outputs:
        p = by_name.get(name)
        if p is None or p.kind != "pointer" or p.const:
            what = "not a parameter" if p is None else f"'{p.declared}', not a non-const pointer"
            raise ExportError(f"outputs of {k.name}: {quote(name, 80)} is {what}; outputs are "
                              f"pointers the kernel writes: "
                              f"{', '.join(q.name for q in k.params if q.kind == 'pointer' and not q.const) or 'none'}")
    inputs = {p.name for p in k.params if p.name not in outputs}
    tensors = [p.name for p in k.params if p.kind == "pointer" and p.name not in outputs]
    outs = tuple(_output(by_name[n], spec, k, inputs, tensors) for n, spec in outputs.items())
    params = {p.name for p in k.params}
    given = {}
    exprs = {}
    for key in ("grid", "block", "shared"):
        if key not in options or options[key] is None:
            if key == "shared":
                exprs[key], given[key] = "0", "0"
                continue
            raise ExportError(f"{k.name}: give {key}= for the torch op: an int or tuple "
                              f"({'256' if key == 'block' else '(64, 1, 1)'}), an expression of "
                              f"the parameters ('cdiv(n, 256)') or a function of them")
        exprs[key], given[key] = _rule(options[key], key, k, params)
    given["outputs"] = {o.param: o.spec for o in outs}
    return Rules(exprs["grid"], exprs["block"], exprs["shared"], outs, given)
