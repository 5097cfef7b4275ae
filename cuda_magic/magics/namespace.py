"""Names the magics bind in the user namespace: never IPython's own, and said when they replace
something of the user's."""

from __future__ import annotations

import builtins
import keyword
import re
import sys
import unicodedata
from typing import Mapping

from IPython.core.error import UsageError

from ..errors import quote
from ..runtime import Kernel

# IPython's own names beside shell.user_ns_hidden: history (_, __, ___, _i, _ii, _iii, _iN, _N,
# _ih, _oh, _dh), exit/quit, get_ipython, In/Out, and every __dunder__ (__builtins__, __name__...).
_SHELL_NAMES = re.compile(r"_{1,3}|_i{1,3}|_i\d+|_\d+|_[iod]h|_exit_code|get_ipython|In|Out|exit"
                          r"|quit|__\w+__")


def shell_owns(shell, name: str) -> bool:
    """Whether ``name`` is one of IPython's own names, which cuda-magic never binds."""
    return name in shell.user_ns_hidden or _SHELL_NAMES.fullmatch(name) is not None


def check_name(shell, name: str | None) -> None:
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
    if shell_owns(shell, name):
        raise UsageError(f"--name {quote(name, 40)}: that name belongs to IPython; pick another")


def note(text: str, magic: str = "%%cuda") -> None:
    """One line in the cell's output (stderr), for what a cell did to the user's names."""
    print(f"{magic}: {text}", file=sys.stderr)


def _kind(obj) -> str:
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else \
        f"{cls.__module__}.{cls.__qualname__}"


def bind_kernels(shell, kernels: Mapping[str, Kernel], name: str | None = None,
                 via: str = "m[{!r}] (bind the module with --name m)", what: str = "the module",
                 magic: str = "%%cuda") -> list[str]:
    """Bind ``kernels`` (Python name -> Kernel) in the user namespace; the names bound.

    A kernel whose Python name is one of IPython's own (or a keyword), or is ``name`` (what
    ``--name`` binds: ``what``), is not bound, with a note saying to reach it as ``via``; one
    that replaces a variable that is not a Kernel, or hides a Python built-in, is bound with
    a note.
    """
    ns, bound, notes = shell.user_ns, {}, []
    for pyname, kernel in kernels.items():
        if shell_owns(shell, pyname) or keyword.iskeyword(pyname):
            notes.append(f"kernel {quote(pyname)} is not bound: that name belongs to "
                         f"{'Python' if keyword.iskeyword(pyname) else 'IPython'}; use "
                         + via.format(pyname))
            continue
        if pyname == name:
            notes.append(f"--name {name} binds {what}, not kernel {quote(pyname)}; use "
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
    for text in notes:
        note(text, magic)
    return list(bound)


def bind(shell, module, name: str | None, kernels: bool) -> None:
    """Bind the module's kernels (``kernels``) and the module (``--name``) in the user namespace,
    by the rules of :func:`bind_kernels`."""
    via = f"{name}[{{!r}}]" if name else "m[{!r}] (bind the module with --name m)"
    bind_kernels(shell, module.python_names() if kernels else {}, name, via)
    if name:
        shell.user_ns[name] = module


def bind_tuning(shell, tuning, name: str | None) -> None:
    """``%%cuda_tune``: bind the winner's kernels (if there is a winner) by the rules of
    :func:`bind_kernels`, saying which, and the Tuning under ``name`` (``--name``)."""
    winner = tuning.winner
    if winner is not None:
        via = f"{name}.kernels[{{!r}}]" if name else \
            "t.kernels[{!r}] (bind the tuning with --name t)"
        bound = bind_kernels(shell, tuning.kernels, name, via, what="the tuning",
                             magic="%%cuda_tune")
        note(f"winner #{winner.index} ({winner.label}): bound {', '.join(bound) or 'no kernels'}",
             "%%cuda_tune")
    if name:
        shell.user_ns[name] = tuning
