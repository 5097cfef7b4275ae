"""The test tree mirrors the package: tests/<subpackage>/ for each subpackage, tests/suites/ for
what crosses it, unique file names, GPU need by the mark alone (docs/development.md, Layout)."""

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PACKAGE = ROOT / "cuda_magic"
FILES = sorted(TESTS.rglob("test_*.py"))


def test_each_folder_is_a_subpackage_or_the_suites():
    folders = {p.parent.relative_to(TESTS).as_posix() for p in FILES} - {"."}
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert folders - subpackages == {"suites"}, folders - subpackages


def test_file_names_are_unique_across_folders():
    names = [p.name for p in FILES]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_gpu_need_is_a_mark_not_a_file_name():
    assert [p.name for p in FILES if re.search(r"_(gpu|cpu)\.py$", p.name)] == []


def test_no_docstring_cites_an_outside_list():
    cites = re.compile(r"\b(issue \d+|items? \d+(-\d+)?\b|section \d+)", re.I)
    found = []
    for path in FILES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node) or ""
                if cites.search(doc):
                    found.append(f"{path.relative_to(TESTS)}: {getattr(node, 'name', 'module')}")
    assert found == []
