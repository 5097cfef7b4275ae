"""Where a failed compile's hints go: the arch an instruction needs comes before ptxas's
lines (in the message and the error view), the fix after them; real NVRTC and nvcc."""

from __future__ import annotations

import pathlib

import pytest

from cuda_magic.compile.backends import CompileError
from cuda_magic.compile.compiler import compile_source
from cuda_magic.display import ErrorView

KERNELS = pathlib.Path(__file__).parents[1] / "kernels"


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("file, needs", [("wgmma_regs.cu", "--arch sm_90a"),
                                         ("tma_wgmma_gemm.cu", "--arch sm_90a")])
def test_the_arch_an_instruction_needs_comes_first(compiler, file, needs):
    """wgmma/setmaxnreg built for plain sm_90: ptxas prints a line per refused instruction, then
    aborts; the line saying what to build for is the first after the heading."""
    with pytest.raises(CompileError) as info:
        compile_source((KERNELS / file).read_text(),
                       {"cuda": {"arch": "sm_90", "compiler": compiler}}, force=True)
    exc = info.value
    lines = str(exc).splitlines()
    assert lines[0] == f"{compiler} failed to compile cell.cu"
    assert "is not on sm_90:" in lines[1] and lines[1].endswith(needs), lines[:3]
    assert lines[2].startswith("ptxas") and "not supported on .target 'sm_90'" in lines[2]
    assert exc.notes[0] == lines[1] and exc.leading == 1
    html = ErrorView(exc)._repr_html_()
    assert html.index(needs) < html.index("not supported on .target")


def test_a_first_note_goes_before_the_compiler_lines_and_the_rest_after():
    exc = CompileError("nvrtc", "cell.cu(1): error: bad\n", ["nvrtc"], "int x = ;\n")
    exc.note("fix A").note("cause", first=True).note("fix B").note("cause 2", first=True)
    assert str(exc).splitlines() == ["nvrtc failed to compile cell.cu", "cause", "cause 2",
                                     "cell.cu(1): error: bad", "     1 | int x = ;",
                                     "fix A", "fix B"]
    assert exc.notes == ("cause", "cause 2", "fix A", "fix B")
    html = ErrorView(exc)._repr_html_()
    order = [html.index(t) for t in ("cause", "cause 2", "error: bad", "fix A", "fix B")]
    assert order == sorted(order)
