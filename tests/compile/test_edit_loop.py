"""The edit loop on real files: supplied standard headers get a precompiled header (said once
as one-off), CCCL's NVRTC unrolling at nvcc's depth, one build per config compiling only its
own kernels, and the header line's time being the time the user waited."""

from __future__ import annotations

import re

import pytest

import cuda_magic
from cuda_magic.cell import trim
from cuda_magic.cell.signature import find_kernels
from cuda_magic.compile import parallel, pch
from cuda_magic.compile.backends import nvrtc as nvrtc_backend
from cuda_magic.display.content import content, seconds

LINE = cuda_magic.line_config(arch="sm_90a")
KERNEL = 'extern "C" __global__ void k(float* x) {{ x[threadIdx.x] = sqrtf(x[0]) + {}.0f; }}\n'


@pytest.fixture
def pch_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_MAGIC_PCH_DIR", str(tmp_path / "pch"))
    monkeypatch.setenv("CUDA_MAGIC_PCH", "1")
    return tmp_path / "pch"


@pytest.mark.parametrize("header", ["utility", "algorithm"])
def test_a_supplied_standard_header_gets_a_pch_made_once(pch_dir, header):
    head = f"#include <{header}>\n"
    first = cuda_magic.build(head + KERNEL.format(1), LINE, force=True)
    assert first.result.pch == "created"
    assert "PCH created (one-off)" in content(first).header()
    assert any(a.startswith("--create-pch=") for a in first.result.argv)
    edited = cuda_magic.build(head + KERNEL.format(2), LINE)      # an edit of the kernel body
    assert not edited.result.cache_hit and edited.result.pch == "used"
    assert any(a.startswith("--use-pch=") for a in edited.result.argv)
    assert "PCH used" in content(edited).header() and "one-off" not in content(edited).header()
    assert pch.usage()[0] == 1


def test_light_headers_and_look_alike_session_headers_get_no_pch(pch_dir):
    assert cuda_magic.build("#include <cstdint>\n" + KERNEL.format(3), LINE).result.pch == ""
    # <cmath> is thin (no libcu++ below C++20): no PCH needed, none made
    assert cuda_magic.build("#include <cmath>\n" + KERNEL.format(3), LINE).result.pch == ""
    assert not pch.heavy("cmath", dict(cuda_magic.compile.stdheaders.HEADERS))
    # a session header that happens to be called "utility" is the user's: no std PCH rule for it
    assert not pch.heavy("utility", {"utility": "#define X 1\n"})
    assert pch.heavy("utility", dict(cuda_magic.compile.stdheaders.HEADERS))
    assert pch.heavy("cub/block/block_reduce.cuh", {})
    assert not pch.heavy("cstdio", dict(cuda_magic.compile.stdheaders.HEADERS))


def test_the_progress_line_says_a_one_off_pch_is_being_built(pch_dir):
    seen = []
    with parallel.progress(lambda what, s: seen.append(what)):
        r = cuda_magic.build("#include <utility>\n" + KERNEL.format(4), LINE, force=True).result
    assert r.pch == "created"
    assert any(nvrtc_backend.PCH_NOTE in w for w in seen), seen
    assert not parallel._doing        # nothing left over for the next compile's line


def test_cccl_unrolls_at_nvccs_depth_shown_in_argv():
    r = cuda_magic.build("#include <cuda/std/type_traits>\n" + KERNEL.format(5), LINE).result
    assert nvrtc_backend.UNROLL in r.argv
    nvcc = cuda_magic.build(KERNEL.format(5), cuda_magic.line_config(arch="sm_90a",
                                                                        compiler="nvcc")).result
    assert nvrtc_backend.UNROLL not in nvcc.argv      # nvcc has 10 already (CCCL's own choice)


# -- one build per config compiles only its kernels -------------------------------------------

CELL = r'''//| nvrtc: [--use_fast_math, --ftz=false]
extern "C" __global__ void slow(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.f;
    for (int j = 0; j < 32; ++j) acc += sinf(x[(i + j) % n]);
    if (i < n) y[i] = acc;
}

//| nvrtc: [--use_fast_math, --ftz=true]
extern "C" __global__ void fast(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;   // "{ a brace in a comment"
    if (i < n) y[i] = x[i] * 0.5f;
}

#define TWICE(v) ((v) * 2.0f)
//| nvrtc: [--use_fast_math, --ftz=true, -DEXTRA]
extern "C" __global__ void kept(float* y) {
#ifdef EXTRA
    y[0] = TWICE(1.0f);
#endif
}
'''


def test_each_build_compiles_only_the_kernels_bound_to_it():
    m = cuda_magic.build(CELL, LINE, force=True)
    assert len(m.results) == 3 and set(m.kernels) == {"slow", "fast", "kept"}
    slow, fast = m.result_of("slow"), m.result_of("fast")
    assert "sinf" in slow.source and "x[i] * 0.5f" not in slow.source
    assert "x[i] * 0.5f" in fast.source and "sinf" not in fast.source
    for r in m.results:                       # every line keeps its number
        assert r.source.count("\n") == CELL.count("\n")
        assert len(r.source) == len(CELL)
    # a body with a directive is kept as written in every build (its effect could outlive it)
    assert all("#ifdef EXTRA" in r.source for r in m.results)
    # each kernel's figures are those of a build of the whole cell under its config
    whole = cuda_magic.build(CELL.replace("//| nvrtc: [--use_fast_math, --ftz=true]\n", "")
                             .replace("//| nvrtc: [--use_fast_math, --ftz=true, -DEXTRA]\n", "")
                             , LINE, force=True)
    assert whole.result_of("slow").resources["slow"].registers == slow.resources["slow"].registers
    # the Source tab shows the cell as written
    assert content(m).source == CELL


def test_one_config_compiles_the_cell_as_written():
    src = CELL.replace("//| nvrtc: [--use_fast_math, --ftz=true]\n", "").replace(
        "//| nvrtc: [--use_fast_math, --ftz=true, -DEXTRA]\n", "").replace(
        "//| nvrtc: [--use_fast_math, --ftz=false]\n", "")
    m = cuda_magic.build(src, LINE)
    assert len(m.results) == 1 and m.result.source == src


def test_without_bodies_keeps_prototypes_templates_and_strings_apart():
    src = r'''
__global__ void proto(int*);
template <int N> __global__ void t(int* x) { x[0] = N; }
__global__ void s(char* c) { const char* q = "}"; c[0] = q[0]; }
__global__ void proto(int* x) { x[0] = 1; }
'''
    decls = find_kernels(src)
    out = trim.without_bodies(src, decls)
    assert "__global__ void proto(int*);" in out and "x[0] = N" not in out
    assert 'q = "}"' not in out and "x[0] = 1" not in out
    assert out.count("\n") == src.count("\n") and len(out) == len(src)
    assert re.search(r"void s\(char\* c\) \{\s+\}", out)


# -- the time the user waited -----------------------------------------------------------------

def test_header_line_time_is_the_wall_time_in_seconds_from_one_second():
    assert seconds(0.0561) == "56.1 ms" and seconds(19.8) == "19.8 s" and seconds(1.0) == "1.0 s"
    m = cuda_magic.build(CELL, LINE, force=True)
    assert m.compile_wall is not None and m.compile_wall > 0
    m.compile_wall = 19.8          # as if the parallel builds had taken 19.8 s together
    header = content(m).header()
    assert "compiled in 19.8 s" in header
    assert sum(r.compile_time for r in m.results) != 19.8


# -- the first cell: looking for a GPU overlaps the compile ------------------------------------

def test_the_magic_looks_for_a_gpu_beside_the_compile_not_before_it(shell, monkeypatch):
    import threading
    from cuda_magic.compile import arch
    seen = []

    def detect():
        seen.append(threading.current_thread().name)
        return None
    monkeypatch.setattr(arch, "detect_arch", detect)
    shell.run_cell_magic("cuda", "--arch sm_90a --quiet", KERNEL.format(6))
    assert seen == ["cuda-magic detect arch"]
    seen.clear()
    shell.run_cell_magic("cuda", "--arch sm_90a --quiet --compile-only", KERNEL.format(7))
    assert seen == []                      # --compile-only never looks


def test_build_takes_load_as_a_question_asked_after_compiling():
    asked = []
    m = cuda_magic.build(KERNEL.format(8), LINE, load=lambda: asked.append(1) or False)
    assert asked == [1] and m.load_error is None


def test_long_compiler_lines_wrap_in_the_error_view_and_the_log_tab():
    from cuda_magic.display import ErrorView, markup
    long = "x" * 400
    with pytest.raises(cuda_magic.CompileError) as info:
        cuda_magic.build(f'extern "C" __global__ void k(float* x) {{ x[0] = {long}; }}\n', LINE)
    shown = ErrorView(info.value)._repr_html_()
    assert shown.count("white-space: pre-wrap") >= 2        # the errors and the log
    m = cuda_magic.build('#warning "' + "w" * 300 + '"\n' + KERNEL.format(9), LINE)
    assert "white-space: pre-wrap" in markup.log(content(m))
