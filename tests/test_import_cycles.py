"""No import cycles inside the package: each module's imports of other cuda_magic modules form no
circle, at module level nor counting the imports inside functions (a lazy import that goes back
to a module importing this one is a cycle that merely waits)."""

from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1] / "cuda_magic"


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        name = ".".join(p.relative_to(ROOT.parent).with_suffix("").parts)
        out[name[:-9] if name.endswith(".__init__") else name] = p
    return out


def _target(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = (module if is_package else module.rsplit(".", 1)[0]).split(".")
    base = ".".join(parts[:len(parts) - node.level + 1])
    return base + ("." + node.module if node.module else "")


def imports(top_level_only: bool = True) -> dict[str, set[str]]:
    """module -> the cuda_magic modules it imports (at module level, or anywhere)."""
    mods = _modules()
    edges = {m: set() for m in mods}
    for m, p in mods.items():
        tree = ast.parse(p.read_text())
        nodes = tree.body if top_level_only else ast.walk(tree)
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                t = _target(m, p.name == "__init__.py", node)
                for a in node.names:         # each name a submodule, else a name of module t
                    c = f"{t}.{a.name}" if f"{t}.{a.name}" in mods else t
                    if c in mods and c != m:
                        edges[m].add(c)
            elif isinstance(node, ast.Import):
                edges[m] |= {a.name for a in node.names if a.name in mods and a.name != m}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_no_module_level_import_cycles():
    assert cycles(imports()) == []


def test_no_import_cycles_counting_imports_inside_functions():
    assert cycles(imports(top_level_only=False)) == []


def test_the_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_a_lazy_import_counts(tmp_path, monkeypatch):
    pkg = tmp_path / "cuda_magic"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .a import f\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from . import c, b\n")
    (pkg / "sub" / "c.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from .a import f\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", pkg)
    assert cycles(imports()) == []
    assert cycles(imports(top_level_only=False)) == [["cuda_magic.sub.a", "cuda_magic.sub.b"]]


def test_the_ground_floor_modules_import_only_the_ground_floor():
    """elements and arrays (DESIGN.md's ground floor) import, even lazily, only errors and each
    other of the package: never runtime, compile, cell, correctness..."""
    ground = {"cuda_magic.errors", "cuda_magic.elements", "cuda_magic.arrays", "cuda_magic"}
    edges = imports(top_level_only=False)
    for m in ("cuda_magic.elements", "cuda_magic.arrays"):
        assert edges[m] <= ground, (m, edges[m] - ground)
