"""cuda_magic.lazy: the one lazy loader every package ``__init__`` takes its ``__getattr__`` from."""

import ast
import pathlib
import sys
import types

import pytest

from cuda_magic import lazy

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "cuda_magic"


def test_a_name_loads_on_first_use_and_is_bound_then(monkeypatch):
    pkg = types.ModuleType("cuda_magic_lazy_probe")
    pkg.__path__ = []
    sub = types.ModuleType("cuda_magic_lazy_probe.heavy")
    sub.thing, sub.heavy = object(), object()
    monkeypatch.setitem(sys.modules, pkg.__name__, pkg)
    monkeypatch.setitem(sys.modules, sub.__name__, sub)
    pkg.__getattr__ = lazy.loader(vars(pkg), {"thing": "heavy", "heavy": "heavy"})
    assert pkg.thing is sub.thing and vars(pkg)["thing"] is sub.thing      # bound: no 2nd call
    with pytest.raises(AttributeError, match="module 'cuda_magic_lazy_probe' has no attribute 'heavy'"):
        pkg.heavy                   # a name equal to its module's: the import system's
    with pytest.raises(AttributeError, match="has no attribute 'other'"):
        pkg.other


def test_no_package_writes_its_own_lazy_getattr():
    own = []
    for path in sorted(PACKAGE.rglob("__init__.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
            own.append(str(path.relative_to(PACKAGE.parent)))
    assert own == [], f"{own}: declare _LAZY and take __getattr__ from cuda_magic.lazy.loader"
