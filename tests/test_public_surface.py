"""The public surface: every name the docs use resolves from ``cuda_magic``; the errors they name
are exported from the package itself; ``__all__`` is the package's whole surface."""

from __future__ import annotations

import importlib
import pathlib
import re

import pytest

import cuda_magic

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]

_DOTTED = re.compile(r"\bcuda_magic(?:\.[A-Za-z_]\w*)+")
_FROM = re.compile(r"from cuda_magic((?:\.[A-Za-z_]\w*)*) import (?:\(([\w ,\n]+)\)|([\w ,]+))")
_ERROR = re.compile(r"`(?:cuda_magic\.)?([A-Z]\w*Error)`")


def _resolve(dotted: str):
    """The object a dotted ``cuda_magic...`` path names: modules imported, attributes walked."""
    parts = dotted.split(".")
    obj = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], 1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(".".join(parts[:i + 1]))
    return obj


def _used() -> dict[str, str]:
    """Every ``cuda_magic.x.y`` path and ``from cuda_magic... import`` name the docs use -> a doc."""
    out = {}
    for doc in DOCS:
        text = doc.read_text()
        for m in _DOTTED.finditer(text):
            out.setdefault(m.group().rstrip("."), doc.name)
        for m in _FROM.finditer(text):
            for name in re.split(r"[,\s]+", m.group(2) or m.group(3)):
                if name and name != "as":
                    out.setdefault(f"cuda_magic{m.group(1)}.{name}", doc.name)
    return out


@pytest.mark.parametrize("dotted, doc", sorted(_used().items()))
def test_every_name_the_docs_use_resolves(dotted, doc):
    _resolve(dotted)


# the pages about the code itself may name its inside
_INSIDE = ("decisions.md", "development.md")


@pytest.mark.parametrize("doc", [d for d in DOCS if d.name not in _INSIDE], ids=lambda d: d.name)
def test_the_user_docs_name_only_public_names(doc):
    # a command line that runs one of the package's modules (what ncu runs) is not a name to use
    text = re.sub(r"-m cuda_magic(?:\.\w+)+", "", doc.read_text())
    inside = sorted({m.group() for m in _DOTTED.finditer(text)
                     if not m.group().split(".")[1].startswith("__")
                     and m.group().split(".")[1] not in cuda_magic.__all__}
                    | {f"from cuda_magic{m.group(1)} import" for m in _FROM.finditer(text)
                       if m.group(1)})
    assert not inside, f"{doc.name} sends users into the package's inside: {inside}"


def test_the_errors_the_docs_name_are_exported():
    import builtins
    named = {m.group(1) for doc in DOCS for m in _ERROR.finditer(doc.read_text())
             if not hasattr(builtins, m.group(1)) and m.group(1) != "UsageError"}  # IPython's
    missing = sorted(n for n in named if n not in cuda_magic.__all__)
    assert not missing, f"errors the docs name that `cuda_magic` does not export: {missing}"


def test_all_names_resolve_and_name_each_class_once():
    for name in cuda_magic.__all__:
        getattr(cuda_magic, name)
    classes = [getattr(cuda_magic, n) for n in cuda_magic.__all__ if isinstance(getattr(cuda_magic, n), type)]
    twice = sorted({c.__name__ for c in classes if classes.count(c) > 1})
    assert not twice, f"classes exported under two names: {twice}"


PARTS = ("errors", "config", "compile", "cell", "inspect", "correctness", "display", "runtime", "variants",
         "exports")


def test_all_is_composed_from_the_parts():
    parts = [importlib.import_module(f"cuda_magic.{p}") for p in PARTS]
    composed = [name for part in parts for name in part.__all__] + ["settings"]
    assert cuda_magic.__all__ == composed
    assert len(composed) == len(set(composed)), sorted({n for n in composed if composed.count(n) > 1})
    for part in parts:      # what a part exports is what cuda_magic gives under that name
        for name in part.__all__:
            lazy = getattr(part, "_LAZY", {})
            where = importlib.import_module(f"{part.__name__}.{lazy[name]}") if name in lazy else part
            assert getattr(cuda_magic, name) is getattr(where, name), f"{part.__name__}.{name}"


def test_every_error_is_exported_and_derives_from_error():
    from cuda_magic import errors
    classes = {n: c for n, c in vars(errors).items() if isinstance(c, type) and issubclass(c, BaseException)}
    public = {n for n, c in classes.items() if issubclass(c, cuda_magic.Error)}
    assert public == set(errors.__all__), public ^ set(errors.__all__)
    assert all(n in cuda_magic.__all__ for n in public)


def test_import_loads_neither_numpy_nor_the_lazy_modules():
    import subprocess
    import sys
    code = ("import sys, cuda_magic; dir(cuda_magic); "
            "print(sorted(m for m in sys.modules if m in ('numpy', 'cuda_magic.runtime.sweep', "
            "'cuda_magic.variants.tune', 'cuda_magic.runtime.nsight.ncu_report', 'cuda_magic.variants.comparison', "
            "'cuda_magic.correctness.verifier', 'yaml', 'cuda_magic.cell.header_yaml')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
