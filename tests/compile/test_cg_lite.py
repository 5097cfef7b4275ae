"""Cooperative groups without libcu++ (compile/cg_lite.py): added only where the cell uses none
of it, said in the argv and the log, never a different SASS, never a new error.  Real NVRTC."""

import pathlib

import pytest

import cuda_magic
from cuda_magic.compile import cg_lite
from conftest import ARCH

KERNELS = pathlib.Path(__file__).resolve().parent.parent / "kernels"
CG = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
BODY = ('extern "C" __global__ void k(float* x) {\n'
        '    auto t = cg::tiled_partition<32>(cg::this_thread_block());\n'
        '    x[threadIdx.x] = t.shfl_down(x[threadIdx.x], 1);\n}\n')
KEEP = ["-U" + cg_lite.MACRO]          # the user's flag that keeps libcu++ in


@pytest.mark.parametrize("source", [
    CG + BODY,
    "#include <cuda_fp16.h>\n#include <cstdint>\n" + CG + BODY,
    "#include <cuda_runtime.h>\n#include <stdio.h>\n" + CG + BODY,
    "#include <cooperative_groups/reduce.h>\n// cuda::std would be here\n" + BODY,
    "#  include   <cooperative_groups/memcpy_async.h>\n/* thread_scope */\n" + BODY,
])
def test_a_cell_of_cooperative_groups_alone_gets_it(source):
    assert cg_lite.wanted(source, ["--use_fast_math", "-I/somewhere"])


@pytest.mark.parametrize("source, flags", [
    (BODY, []),                                                       # no cooperative groups
    (CG + "#include <cuda/atomic>\n" + BODY, []),                     # libcu++ itself
    (CG + "#include <cub/warp/warp_reduce.cuh>\n" + BODY, []),        # CUB brings libcu++
    (CG + "#include <functional>\n" + BODY, []),                      # std:: functors meet cg's
    (CG + '#include "mine.h"\n' + BODY, []),                          # a file we cannot read
    (CG + BODY.replace("t.shfl_down(x[threadIdx.x], 1)", "cuda::std::max(x[0], 1.0f)"), []),
    (CG + "namespace cuda { int v; }\n" + BODY, []),
    (CG + "auto s = cg::thread_block::thread_scope;\n" + BODY, []),   # left out by the switch
    (CG + BODY + "#define X reduce_update_async\n", []),           # named outside a comment
    (CG + "#ifdef _CG_HAS_FP16_COLLECTIVE\n#endif\n" + BODY, []),
    (CG + BODY, KEEP),                                                # the user's own say
    (CG + BODY, ["-D" + cg_lite.MACRO]),
    (CG + BODY, ["--pre-include=mine.h"]),
    (CG + BODY, ["-include", "mine.h"]),
])
def test_anything_that_could_meet_libcuxx_keeps_it(source, flags):
    assert not cg_lite.wanted(source, flags)


def test_the_flag_is_in_the_argv_and_the_log_says_why():
    r = cuda_magic.compile_source(CG + BODY, {"cuda": {"arch": ARCH}}, force=True)
    assert cg_lite.FLAG in r.argv and r.log.startswith(cg_lite.NOTE)
    kept = cuda_magic.compile_source(CG + BODY, {"cuda": {"arch": ARCH, "nvrtc": KEEP}},
                                     force=True)
    assert cg_lite.FLAG not in kept.argv and cg_lite.NOTE not in kept.log
    nvcc = cuda_magic.compile_source(CG + BODY, {"cuda": {"arch": ARCH, "compiler": "nvcc"}},
                                     force=True)
    assert not any(cg_lite.MACRO in a for a in nvcc.argv)            # NVRTC's edit loop only


def test_a_cell_that_needs_libcuxx_after_all_compiles_without_the_switch():
    """The text screen cannot see through a macro: the compile with the switch fails, the one
    without it is the cell's, and the log says so."""
    source = ("#define NS cuda\n#include <cooperative_groups.h>\n"
              'extern "C" __global__ void k(float* x) {\n'
              '    x[0] = NS::std::plus<float>()(x[0], 1.0f);\n}\n')
    assert cg_lite.wanted(source, [])
    r = cuda_magic.compile_source(source, {"cuda": {"arch": ARCH}}, force=True)
    assert cg_lite.FLAG not in r.argv and r.log.startswith(cg_lite.RETRIED)


def test_a_cell_with_an_error_gets_the_error_it_has_without_the_switch():
    source = CG + BODY.replace("t.shfl_down", "t.no_such_member")
    with pytest.raises(cuda_magic.CompileError) as e:
        cuda_magic.compile_source(source, {"cuda": {"arch": ARCH}}, force=True)
    assert "no_such_member" in str(e.value)
    assert cg_lite.FLAG not in e.value.argv                          # the run without it
    assert cg_lite.RETRIED not in str(e.value) and cg_lite.NOTE not in str(e.value)


@pytest.mark.parametrize("name", ["cg_collectives.cu", "layernorm_cg.cu", "cluster_dsmem.cu"])
def test_the_same_sass_with_and_without_libcuxx(name):
    """Every kernel of the corpus's cooperative-groups cells: SASS equal either way."""
    source = (KERNELS / name).read_text()
    head = "//| nvrtc: ["
    kept = (source.replace(head, f"{head}{KEEP[0]}, ", 1) if source.startswith(head)
            else f"//| nvrtc+: [{KEEP[0]}]\n{source}")
    lite = cuda_magic.build(source, {"arch": ARCH}, force=True)
    full = cuda_magic.build(kept, {"arch": ARCH}, force=True)
    assert cg_lite.FLAG in lite.result.argv and cg_lite.FLAG not in full.result.argv
    assert lite.kernels
    for kernel in lite.kernels:
        assert cuda_magic.sass(lite.result, kernel) == cuda_magic.sass(full.result, kernel), kernel
