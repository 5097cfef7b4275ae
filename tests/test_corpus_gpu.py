"""The kernel corpus on a GPU: each cell built for the detected arch with each compiler,
loaded, launched on NumPy arrays and checked against a NumPy reference (corpus.py)."""

from __future__ import annotations

import pytest

import cuda_magic
from corpus import CASES, missing

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case, compiler", [
    pytest.param(case, compiler, id=f"{case.id}-{compiler}")
    for case in CASES if case.run is not None for compiler in case.compilers])
def test_runs_and_matches_numpy(case, compiler):
    reason = missing(case, compiler)
    if reason:
        pytest.skip(reason)
    m = cuda_magic.build(case.text, cuda_magic.line_config(compiler=compiler), load=True)
    if m.load_error is not None:
        raise m.load_error
    assert set(m.python_names()) == set(case.kernels)
    case.run(m)
