"""The test tree mirrors the package: tests/<subpackage>/ for each subpackage, tests/suites/ for
what crosses it, unique file names, GPU need by the mark alone (docs/development.md, Layout).
And the package's modules stay small: over 500 lines only when the docstring says why it is one
concept, never over 600."""

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


SOFT, HARD = 500, 600          # lines: over SOFT a module says why it is one concept; none over HARD
ONE_CONCEPT = "One concept:"    # ... in a docstring line that starts so

# Over SOFT lines while another change splits them or says why they are one concept: drop each
# entry when its module passes (the test says so when one does).
PENDING: dict[str, str] = {}


def _sizes() -> dict[str, tuple[int, bool]]:
    """Each module over SOFT lines -> (its lines, whether its docstring says it is one concept)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        n = text.count("\n") + (not text.endswith("\n"))
        if n > SOFT:
            doc = ast.get_docstring(ast.parse(text)) or ""
            says = any(line.startswith(ONE_CONCEPT) for line in doc.splitlines())
            out[path.relative_to(ROOT).as_posix()] = (n, says)
    return out


def test_no_module_is_large_unless_one_concept_says_so():
    sizes = _sizes()
    over = {m: n for m, (n, _) in sizes.items() if n > HARD and m not in PENDING}
    assert not over, f"{over}: over {HARD} lines; split them along a seam"
    unsaid = {m: n for m, (n, says) in sizes.items() if not says and m not in PENDING}
    assert not unsaid, (f"{unsaid}: over {SOFT} lines; split them along a seam, or say why each is "
                        f"one module in a docstring line starting {ONE_CONCEPT!r}")
    done = sorted(m for m in PENDING if m not in sizes or sizes[m][1])
    assert not done, f"{done} pass now: drop them from PENDING"
