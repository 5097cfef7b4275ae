"""The verify corpus (tests/kernels/verify/, the manifest in its cases.py): correct kernels and
wrong ones, each judged by ``k.verify`` against a NumPy reference.

Without a GPU: the manifest (at least 30 of each, every category a kernel can earn), every
file compiled with NVRTC and nvcc for sm_90a binding the kernels its cases launch with the
right parameter counts, and every case run through ``k.verify`` over the stub driver with a
kernel that writes nothing -- each reference runs on its launch's arguments, returns the
outputs' shapes, and the verdict is the trap's.  With a GPU: every case, no false failure
among the correct ones, at least 95% of the wrong ones in their category (the table printed).
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

import cuda_magic
from conftest import ARCH
from cuda_magic.correctness.verdict import CATEGORIES

import fake_driver as fd  # benchmarks/ (on sys.path: conftest.py)

FOLDER = pathlib.Path(__file__).parents[1] / "kernels" / "verify"


def _manifest():
    spec = importlib.util.spec_from_file_location("verify_cases", FOLDER / "cases.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod            # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


cases = _manifest()
CASES = cases.CASES
FILES = sorted({c.file for c in CASES})
# what a kernel's output can be; "missing" and "shape" come from verify(out, ref) with a
# reference that has another output or shape, which k.verify turns into a VerifyError
KERNEL_CATEGORIES = [c for c in CATEGORIES if c not in ("missing", "shape")]


def category(v) -> str:
    return next((o.category for o in v.outputs if not o.passed), "pass")


def test_the_manifest():
    correct = [c for c in CASES if c.correct]
    wrong = [c for c in CASES if not c.correct]
    assert len(correct) >= 30 and len(wrong) >= 30, (len(correct), len(wrong))
    assert len({c.name for c in CASES}) == len(CASES)
    expected = {e for c in wrong for e in c.expected}
    assert expected <= set(CATEGORIES) and "pass" not in expected
    assert set(KERNEL_CATEGORIES) <= expected, set(KERNEL_CATEGORIES) - expected
    for cat in KERNEL_CATEGORIES:       # each at least once as the one category expected
        assert any(c.expect == cat for c in wrong) or cat == "nondeterministic", cat
    assert sorted(p.name for p in FOLDER.glob("*.cu")) == FILES
    for f in FILES:
        n = len((FOLDER / f).read_text().splitlines())
        assert 20 <= n <= 80, f"{f}: {n} lines"


def _build(file: str, compiler: str, load: bool = False):
    if compiler == "nvcc":
        from cuda_magic.tools import find
        try:
            find("nvcc")
        except Exception:
            pytest.skip("nvcc is not installed (pip install 'cuda-magic[nvcc]')")
    return cuda_magic.build((FOLDER / file).read_text(),
                            cuda_magic.line_config(arch=ARCH, compiler=compiler), load=load)


@pytest.mark.slow
@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("file", FILES)
def test_compiles_and_binds_what_the_cases_launch(file, compiler):
    m = _build(file, compiler)
    names = m.python_names()
    for c in CASES:
        if c.file != file:
            continue
        assert c.kernel in names, (c.name, sorted(names))
        grid, block, args = c.launch()
        assert len(args) == len(names[c.kernel].params), c.name
    assert set(names) == {c.kernel for c in CASES if c.file == file}     # each kernel has a case


@pytest.fixture(scope="module")
def modules():
    return {f: _build(f, "nvrtc") for f in FILES}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_kernel_that_writes_nothing_fails_every_case(case, modules):
    """Over the stub driver (launches do nothing): the reference runs on host copies of the
    case's arguments and gives outputs of the right shapes, and the verdict is the trap's."""
    from cuda_magic.runtime import Kernel
    fake = fd.install(counting=True)
    try:
        proto = modules[case.file][case.kernel]
        k = Kernel(proto.name, proto.params, proto.result, proto.symbol, False)
        fake.register(k)
        grid, block, args = case.launch()
        with np.errstate(all="ignore"):
            v = k.verify(grid, block, *args, reference=case.reference, **case.rule)
    finally:
        fd.uninstall(fake)
    assert not v.passed
    assert category(v) in ("unchanged", "zeros"), str(v)
    assert fake.launches >= case.rule.get("runs", 2)


# --- on the GPU -------------------------------------------------------------------------------

@pytest.mark.gpu
def test_every_case_gets_its_verdict():
    built = {f: _build(f, "nvrtc", load=True) for f in FILES}
    rows, false_failures, right, wrong_total = [], [], 0, 0
    for c in CASES:
        m = built[c.file]
        if m.load_error is not None:
            raise m.load_error
        grid, block, args = c.launch()
        with np.errstate(all="ignore"):
            v = m[c.kernel].verify(grid, block, *args, reference=c.reference, **c.rule)
        got = category(v)
        ok = got in c.expected
        if c.correct and not ok:
            false_failures.append(c.name)
        if not c.correct:
            wrong_total += 1
            right += ok
        reason = next((o.reason for o in v.outputs if not o.passed), "") or ""
        rows.append(f"{'ok' if ok else '!!':2} {c.name:28} {str(c.expect):30} {got:16} "
                    f"{'det' if v.deterministic else 'nondet' if v.deterministic is False else '-':6} "
                    f"{reason[:110]}")
    table = "\n".join([f"{'':2} {'case':28} {'expected':30} {'got':16} {'runs':6} reason", *rows])
    print(table)
    print(f"correct kernels failing: {len(false_failures)}; wrong kernels in their category: "
          f"{right} of {wrong_total}")
    assert not false_failures, table
    assert right >= 0.95 * wrong_total, table
