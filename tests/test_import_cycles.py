"""No import cycles inside the package at module level: each module's top-level imports of other
cuda_magic modules form no circle (imports inside functions are counted separately below)."""

from __future__ import annotations

import ast
import pathlib

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
                for c in [f"{t}.{a.name}" for a in node.names] + [t]:
                    if c in mods and c != m:
                        edges[m].add(c)
                        break
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


def test_the_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
