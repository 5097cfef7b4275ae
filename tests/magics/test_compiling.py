"""The block around every magic's compiles (cuda_magic.magics.compiling): a failed compile's view
is shown, then its error stops the cell, once (CPU)."""

import pytest

from cuda_magic import CompileError
from cuda_magic.magics.compiling import compiling

SOURCE = 'extern "C" __global__ void k(int* p) {\n    p[0] = nope;\n}\n'
LOG = ('cell.cu(2): error: identifier "nope" is undefined\n'
       '1 error detected in the compilation of "cell.cu".\n')


@pytest.mark.parametrize("quiet", [False, True])
def test_a_failed_compile_shows_its_view_then_stops_the_cell(shell, capsys, quiet):
    err = CompileError("nvrtc", LOG, ["--gpu-architecture=sm_90a"], SOURCE)
    with pytest.raises(CompileError) as info:
        with compiling(shell, quiet=quiet):
            raise err
    assert info.value is err and err.shown
    out = capsys.readouterr().out
    assert "nvrtc failed to compile cell.cu" in out and "   2 |     p[0] = nope;" in out
    assert err._render_traceback_() == [
        "CompileError: nvrtc failed to compile cell.cu (1 error, shown above)"]


def test_other_errors_pass_through_unshown(shell, capsys):
    with pytest.raises(KeyError):
        with compiling(shell):
            raise KeyError("x")
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("magic", ["cuda", "cuda_compare"])
def test_the_magics_that_compile_use_it(shell, capsys, magic):
    from conftest import ARCH
    result = shell.run_cell(f"%%{magic} --arch {ARCH}\n{SOURCE}")
    assert isinstance(result.error_in_exec, CompileError) and result.error_in_exec.shown
    assert capsys.readouterr().out.count("p[0] = nope;") == 1
