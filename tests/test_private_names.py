"""No ``_private`` name crosses a package: a module uses another package's names only through
what that package offers, so a split along a seam stays a seam.

The rule, checked on the source with ``ast``:

- A *package* is a top-level part of ``cuda_magic``: a subpackage (``cuda_magic.runtime``,
  ``cuda_magic.cell``, ``cuda_magic.variants``, ...) with everything under it, or a top-level
  module (``cuda_magic.config``, ``cuda_magic.errors``, ...) on its own; ``cuda_magic/__init__.py``
  is the package ``cuda_magic`` itself.
- A name is private when it starts with one underscore (``_dims``, ``_HeaderLoader``,
  ``_cubin``); dunders (``__version__``) are not, nor is ``cuda_magic._version``, the version's
  one place (its underscore is the packaging convention for that file, not a privacy mark).
- Inside one package anything goes (``runtime.launch`` may use ``runtime.driver._state``).
  Across packages a module may not import a private name (``from ..runtime.launch.kernel import
  _dims``), import from or through a private module (``from ..compile.binary._cubin import x``),
  nor read a private attribute of a module or name it imported from another package
  (``from .. import cell`` then ``cell._HeaderLoader``).  Imports inside functions count too.

What is shared is made public in its home instead.
"""

from __future__ import annotations

import ast

from test_import_cycles import _modules, _target as _absolute  # the one module walk and import resolver


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def package(module: str) -> str:
    """The package of a dotted module name (``cuda_magic.runtime.launch.kernel`` ->
    ``cuda_magic.runtime``; ``cuda_magic`` -> ``cuda_magic``)."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _first_private(dotted: str) -> str | None:
    """The first private part of a cuda_magic dotted name after ``cuda_magic``, or None."""
    parts = dotted.split(".")[1:]
    if parts[:1] == ["_version"]:
        parts = parts[1:]
    return next((p for p in parts if _private(p)), None)


def violations(module: str, source: str, is_package: bool = False) -> list[str]:
    """Each place where ``module`` (with ``source``) takes a private name of another package."""
    home = package(module)
    tree = ast.parse(source)
    found, bound = [], {}           # bound: local name -> the cuda_magic dotted name it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            origin = _absolute(module, is_package, node)
            if not origin.startswith("cuda_magic"):
                continue
            for a in node.names:
                dotted = f"{origin}.{a.name}"
                bound[a.asname or a.name] = dotted
                if package(dotted) != home and _first_private(dotted):
                    found.append(f"{module}:{node.lineno}: from {origin} import {a.name}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if not a.name.startswith("cuda_magic"):
                    continue
                bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else "cuda_magic"
                if package(a.name) != home and _first_private(a.name):
                    found.append(f"{module}:{node.lineno}: import {a.name}")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain, v = [node.attr], node.value
        while isinstance(v, ast.Attribute):
            chain.append(v.attr)
            v = v.value
        if not isinstance(v, ast.Name) or v.id not in bound:
            continue
        dotted = ".".join([bound[v.id], *reversed(chain)])
        if package(dotted) != home and _first_private(dotted):
            found.append(f"{module}:{node.lineno}: {v.id}.{'.'.join(reversed(chain))}")
    return sorted(set(found))


def test_no_private_name_is_taken_across_packages():
    found = []
    for module, path in sorted(_modules().items()):
        found += violations(module, path.read_text(), path.name == "__init__.py")
    assert not found, "private names used across packages (make them public in their home):\n" \
        + "\n".join(found)


def test_the_rule_itself():
    """What counts, on small sources: across packages refused, inside one package allowed."""
    m = "cuda_magic.variants.record"
    assert violations(m, "from ..runtime.launch.kernel import _dims\n")
    assert violations(m, "from ..cell import _HeaderLoader as L\n")
    assert violations(m, "from .. import cell\ncell._HeaderLoader\n")
    assert violations(m, "from ..runtime import driver\nx = driver._state['lost']\n")
    assert violations(m, "import cuda_magic.runtime.driver as d\nd._state\n")
    assert violations(m, "import cuda_magic\ncuda_magic.runtime.driver._state\n")
    assert violations(m, "from ..compile.binary._cubin import sections\n")
    assert violations(m, "def f():\n    from ..runtime.launch.kernel import _dims\n")
    assert not violations(m, "from .space import _private_helper\n")
    assert not violations(m, "from ..runtime.launch.dims import dims\n")
    assert not violations(m, "from ..runtime import driver\ndriver.api()\n")
    assert not violations(m, "import numpy as np\nnp._NoValue\n")
    assert not violations("cuda_magic.runtime.launch.kernel", "from .. import driver\n"
                                                              "driver._state\n", False)
    assert not violations(m, "from .. import __version__\n")
    assert not violations(m, "from .._version import __version__\n")
