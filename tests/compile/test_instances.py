"""Template instances: Python names as the user wrote them, --instantiate with both compilers,
templates the cell parser does not see, and hints that make sense."""

import os

import pytest

import cuda_magic
from conftest import ARCH
from cuda_magic import CompileError, build, line_config
from cuda_magic.compile import toolkit_headers
from cuda_magic.compile.backends import get_backend
from cuda_magic.compile.binary import demangle
from cuda_magic.compile.instances import (InstanceError, MARK, appended, find, first_appended_line,
                                        instance_of_line, probed, tidy)
from cuda_magic.display.content import content

BOTH = pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])


def test_tidy_drops_suffixes_casts_and_versioned_namespaces():
    assert tidy("reduce7<int, 256u, true>") == "reduce7<int, 256, true>"
    assert tidy("multi_warp_cg_reduce<int, 512ul, 64ul>") == "multi_warp_cg_reduce<int, 512, 64>"
    assert tidy("k<(unsigned int)5, -3ll, 7LU, 0x10u>") == "k<5, -3, 7, 0x10>"
    # the same CUB instance under CCCL 3.0 (CUDA 13.0's) and CCCL 3.1+ (pip's): one name
    old = "BlockReduceKernel<128, 4, (cub::CUB_300001_SM_900::BlockReduceAlgorithm)1>"
    new = "BlockReduceKernel<128, 4, (cub::_V_300500_SM_800_900::BlockReduceAlgorithm)1>"
    assert tidy(old) == tidy(new) == "BlockReduceKernel<128, 4, (BlockReduceAlgorithm)1>"
    assert tidy("k<cuda::std::__4::integral_constant<int, 2>>") == \
        "k<cuda::std::integral_constant<int, 2>>"
    assert tidy("(anonymous namespace)::k<u8, x2>") == "(anonymous namespace)::k<u8, x2>"


def test_find_matches_the_text_written_against_the_demangled_entries():
    from cuda_magic.compile.binary import Entry

    def e(sym, name):
        return Entry(sym, name, name + "()", (), ())
    have = [e("a", "k<float, 256u, true>"), e("b", "k<float, 512u, true>"),
            e("c", "g<128, (Algo)1>"), e("d", "g<64, (Algo)0>"), e("f", "ns::v1::h<double>")]
    assert find(["k<float, 256>", "k<float,512,true>", "g<128, WARP>", "ns::h<double>",
                 "k<double, 256>"], have) == {"k<float, 256>": "a", "k<float,512,true>": "b",
                                              "g<128, WARP>": "c", "ns::h<double>": "f"}
    # two instances that differ only in an enumerator: the text cannot tell them apart
    assert find(["g<RAKING>"], [e("x", "g<(Algo)0>"), e("y", "g<(Algo)1>")]) == {}


CELL = r'''
template <typename T, unsigned BLOCK, bool NEG = false>
__global__ void reduce7(const T* in, T* out, unsigned n) {
    unsigned i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) atomicAdd(out, NEG ? -in[i] : in[i]);
}
template <bool A = true, bool B = false> __global__ void k(int* x) { x[0] = A + 2 * B; }
'''


@BOTH
def test_instantiate_names_are_the_text_written(compiler, fresh_cache):
    m = build(CELL, line_config(arch=ARCH, compiler=compiler),
              instantiate=["reduce7<int, 256, true>", "k<>"])
    assert m.bindings == {"reduce7_int_256_true": "reduce7<int, 256u, true>(const int*, int*, unsigned int)",
                          "k": "k<true, false>(int*)"}
    r7 = m.reduce7_int_256_true
    assert m["reduce7<int, 256, true>"] is r7 and m["reduce7<int,256u,true>"] is r7
    assert m["k<>"] is m.k and m["k<true, false>"] is m.k
    both = build(CELL, line_config(arch=ARCH, compiler=compiler),
                 instantiate=["k<>", "k<true, false>"])       # one entry: the first text names it
    assert list(both.bindings) == ["k"] and both["k<true, false>"] is both.k
    assert [p.name for p in r7.params] == ["in", "out", "n"]
    shown = content(m)
    assert any("bound as: reduce7_int_256_true = reduce7<int, 256u, true>(" in n for n in shown.notes)
    if compiler == "nvcc":        # the appended lines are shown after the cell, marked
        assert shown.source.startswith(CELL) and MARK in shown.source
        assert "<0, &reduce7<int, 256, true>>();" in shown.source.split(MARK)[1]
    else:
        assert shown.source == CELL


def test_nvcc_compiles_the_cell_unchanged_then_the_instances():
    text = appended("a\nb", ["k<1>", "ns::k<2>"])
    lines = text.split("\n")
    assert lines[:3] == ["a", "b", MARK]
    assert lines[4:6] == ["template __global__ void __cuda_magic_probe<0, &k<1>>();",
                          "template __global__ void __cuda_magic_probe<1, &ns::k<2>>();"]
    first = first_appended_line("a\nb")
    assert [instance_of_line(n, first, 2) for n in range(first - 1, first + 4)] == [None, None, 0, 1, None]
    # below C++17 (no 'auto' template parameters) the probe spells the type too
    old = appended("a\nb", ["k<1>"], ["-std=c++14"]).split("\n")
    assert old[4] == "template __global__ void __cuda_magic_probe<0, decltype(&k<1>), &k<1>>();"
    assert appended("a", ["k<1>"], ["-std", "c++11"]) != appended("a", ["k<1>"], ["-std=c++20"])


@BOTH
def test_an_error_names_the_instance(compiler, fresh_cache):
    with pytest.raises(CompileError, match=r"--instantiate 'reduce7<int>': the compiler cannot "
                                           r"instantiate it as written"):
        build(CELL, line_config(arch=ARCH, compiler=compiler), instantiate=["reduce7<int>"])


@BOTH
@pytest.mark.parametrize("fmt", ["fatbin", "cubin", "ptx"])
def test_instances_that_differ_by_enumerator_or_typedef_are_told_apart(compiler, fmt, fresh_cache):
    """The text alone cannot say which entry 'g<WARP>' is (the demangled names read
    '(Algo)0' and '(Algo)1'): NVRTC's lowered names and nvcc's probes say it exactly."""
    # int* twice: the second is a substitution ('S_'), numbered differently inside a probe
    src = ("enum Algo { RAKING, WARP };\nusing real = double;\ntemplate <Algo A, class T> "
           "__global__ void g(T* x, int* n, int* m) { x[0] = A + *n + *m; }\n")
    if fmt not in get_backend(compiler).formats:
        pytest.skip(f"{compiler} makes no {fmt}")
    names = ["g<WARP, real>", "g<RAKING, float>", "g<RAKING, real>"]
    m = build(src, line_config(arch=ARCH, compiler=compiler, target_format=fmt), instantiate=names)
    assert set(m.bindings) == {"g_WARP_real", "g_RAKING_float", "g_RAKING_real"}
    said = demangle(k.symbol for k in m)
    assert said[m.g_WARP_real.symbol] == "void g<(Algo)1, double>(double*, int*, int*)"
    assert said[m.g_RAKING_real.symbol] == "void g<(Algo)0, double>(double*, int*, int*)"
    assert said[m.g_RAKING_float.symbol] == "void g<(Algo)0, float>(float*, int*, int*)"
    assert not any("__cuda_magic_probe" in k.symbol for k in m)    # probes are never bound,
    assert not any("__cuda_magic_probe" in n for r in m.results for n in r.functions)  # nor shown


def test_probes_name_the_entry_whatever_the_text():
    from cuda_magic.compile.binary import Entry
    cells = [Entry("_Z1gIL4Algo0EEvPi", "g<(Algo)0>", "void g<(Algo)0>(int*)", ("int*",), None),
             Entry("_Z1gIL4Algo1EEvPi", "g<(Algo)1>", "void g<(Algo)1>(int*)", ("int*",), None)]
    # nvcc's own: 'Pi' is 'S0_' inside the probe (one substitution table for the whole name)
    probes = ["_Z18__cuda_magic_probeILi0EPFvPiEXadL_Z1gIL4Algo1EEvS0_EEEvv",
              "_Z18__cuda_magic_probeILi1EPFvPiEXadL_Z1gIL4Algo0EEvS0_EEEvv", "_Z1gIL4Algo0EEvPi"]
    assert probed(["g<WARP>", "g<RAKING>"], probes, cells) == {"g<WARP>": "_Z1gIL4Algo1EEvPi",
                                                            "g<RAKING>": "_Z1gIL4Algo0EEvPi"}
    assert probed(["g<WARP>"], probes, cells) == {"g<WARP>": "_Z1gIL4Algo1EEvPi"}  # 1 is out of range


# -- the parser is no judge: templates it does not see ---------------------------------------

HIDDEN = r'''
#include <type_traits>
#include "lib/scale_kernels.cuh"
template <class T>
__global__ std::enable_if_t<std::is_floating_point<T>::value> twice(T* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2;
}
'''
HEADER = "template <typename T, int N>\n__global__ void scale_n(T* x) { x[threadIdx.x] *= N; }\n"


@BOTH
def test_instantiate_templates_the_parser_does_not_see(compiler, fresh_cache):
    cuda_magic.define_header("lib/scale_kernels.cuh", HEADER)
    m = build(HIDDEN, line_config(arch=ARCH, compiler=compiler),
              instantiate=["twice<double>", "scale_n<float, 3>"])
    assert m.bindings == {"twice_double": "twice<double>(double*, int)",
                          "scale_n_float_3": "scale_n<float, 3>(float*)"}
    assert [p.type for p in m.twice_double.params] == ["double", "int"]
    with pytest.raises(CompileError, match=r"--instantiate 'twice<int>': the compiler cannot"):
        build(HIDDEN, line_config(arch=ARCH, compiler=compiler), instantiate=["twice<int>"])


# -- CUB's algorithm enums, and two CCCL versions ---------------------------------------------

CUB = r'''
#include <cub/block/block_reduce.cuh>
using namespace cub;
template <int BLOCK_THREADS, int ITEMS, BlockReduceAlgorithm ALGO>
__global__ void BlockReduceKernel(const int* in, int* out) {
    using BlockReduceT = BlockReduce<int, BLOCK_THREADS, ALGO>;
    __shared__ typename BlockReduceT::TempStorage temp;
    int items[ITEMS];
    for (int j = 0; j < ITEMS; ++j) items[j] = in[threadIdx.x * ITEMS + j];
    int sum = BlockReduceT(temp).Sum(items);
    if (threadIdx.x == 0) *out = sum;
}
#define INSTANCE(B, I, A) template __global__ void BlockReduceKernel<B, I, A>(const int*, int*);
INSTANCE(64, 1, BLOCK_REDUCE_WARP_REDUCTIONS)
'''
OLD_CCCL = "/usr/local/cuda-13.0/include/cccl"


@BOTH
def test_cub_algorithm_enums_are_named_as_written(compiler, fresh_cache):
    m = build(CUB, line_config(arch=ARCH, compiler=compiler),
              instantiate=["BlockReduceKernel<128, 4, BLOCK_REDUCE_RAKING>"])
    # the written instance by its text; the macro-made one (no text names it) by the tidied
    # demangled name: no versioned inline namespace in either
    assert set(m.bindings) == {"BlockReduceKernel_128_4_BLOCK_REDUCE_RAKING",
                               "BlockReduceKernel_64_1_BlockReduceAlgorithm_2"}
    assert m["BlockReduceKernel<128, 4, BLOCK_REDUCE_RAKING>"] is \
        m.BlockReduceKernel_128_4_BLOCK_REDUCE_RAKING


@pytest.mark.skipif(not os.path.isfile(f"{OLD_CCCL}/cub/version.cuh"),
                    reason="no second CCCL (CUDA 13.0's) on this machine")
def test_names_do_not_change_with_the_cccl_version(fresh_cache):
    spelling = ["BlockReduceKernel<128, 4, BLOCK_REDUCE_RAKING>"]
    # the pip CCCL named: an nvcc of CUDA 13.0 (the H200's) would take its own, the old one
    pip = toolkit_headers.header_dirs()["cccl"]
    new = build(CUB, line_config(arch=ARCH, compiler="nvcc", nvcc=f"--use_fast_math -I{pip}"),
                instantiate=spelling)
    old = build(CUB, line_config(arch=ARCH, compiler="nvcc", nvcc=f"--use_fast_math -I{OLD_CCCL}"),
                instantiate=spelling)
    assert set(old.bindings) == set(new.bindings)
    assert {k.symbol for k in old} != {k.symbol for k in new}     # other versioned namespaces
    assert "CUB_300001" in "".join(old.bindings.values()) + "".join(k.symbol for k in old)


# -- hints ---------------------------------------------------------------------------------

def test_no_hint_proposes_a_null_function_pointer(fresh_cache):
    src = r'''
__device__ float neg(float v) { return -v; }
template <float (*F)(float)> __global__ void apply(float* x) { x[0] = F(x[0]); }
template <int BLOCK> __global__ void fill(float* x) { x[BLOCK] = 0; }
'''
    m = build(src, line_config(arch=ARCH))
    assert m.templates == ("apply", "fill<128>")
    note = next(n for n in content(m).notes if n.startswith("templates not instantiated"))
    assert "nullptr" not in note and '--instantiate "fill<128>"' in note
    only = build(src.replace("template <int BLOCK> __global__ void fill(float* x) { x[BLOCK] = 0; }",
                             ""), line_config(arch=ARCH))
    note = next(n for n in content(only).notes if n.startswith("templates not instantiated"))
    assert note == "templates not instantiated: apply"
    m = build(src, line_config(arch=ARCH), instantiate=["apply<neg>"])     # what makes sense
    assert "apply_neg" in m.bindings


# -- tune's template arguments under nvcc --------------------------------------------------

def test_tune_instantiates_template_arguments_with_nvcc(fresh_cache):
    src = r'''
template <int BM>
__global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = 0; j < BM; ++j) if (i * BM + j < n) y[i * BM + j] = a * x[i * BM + j];
}
'''
    t = cuda_magic.tune(src, "BM=[2, 4]", arch=ARCH, config={"compiler": "nvcc"}, compile_only=True)
    assert [c.status for c in t.candidates] == ["compiled", "compiled"]
    assert [list(c.module.bindings) for c in t.candidates] == [["scale_2"], ["scale_4"]]
    assert t.candidates[1].module.result.compiler == "nvcc"


@pytest.mark.parametrize("flags, old", [
    (["--std", "c++14"], True), (["-std", "c++14"], True), (["--std=c++14"], True),
    (["-std=c++14"], True), (["-std", "gnu++11"], True), (["--std", "c++03"], True),
    (["--std", "c++17"], False), (["-std", "c++20"], False), ([], False),
    (["--std", "c++14", "-std=c++17"], False), (["-std=c++17", "--std", "c++14"], True),
    (["-O3", "--std"], False)])
def test_before_cxx17_reads_every_spelling(flags, old):
    from cuda_magic.compile.instances import before_cxx17
    assert before_cxx17(flags) is old


@pytest.mark.parametrize("std", ["--std c++14", "-std c++14", "--std=c++14"])
def test_nvcc_probes_below_cxx17_however_the_standard_is_written(std, fresh_cache):
    """Two words (["--std", "c++14"] in the nvcc list) are C++14 as much as one: the probe
    without 'auto' template parameters, or nvcc refuses it ('"auto" is not allowed here')."""
    src = "template <int N, class T> __global__ void g(T* x) { x[0] = N; }\n"
    m = build(src, line_config(arch=ARCH, compiler="nvcc", nvcc=std), instantiate=["g<3, float>"])
    assert m.result.argv.count("c++14") + m.result.argv.count("--std=c++14") == 1
    assert demangle([m.g_3_float.symbol])[m.g_3_float.symbol] == "void g<3, float>(float*)"


def test_nvcc_probes_below_cxx17(fresh_cache):
    src = ("enum Algo { RAKING, WARP };\ntemplate <Algo A, class T> __global__ void g(T* x, int* n) "
           "{ x[0] = A + *n; }\n")
    m = build(src, line_config(arch=ARCH, compiler="nvcc", nvcc="-std=c++14"),
              instantiate=["g<WARP, float>", "g<RAKING, float>"])
    said = demangle(k.symbol for k in m)
    assert said[m.g_WARP_float.symbol] == "void g<(Algo)1, float>(float*, int*)"
    assert said[m.g_RAKING_float.symbol] == "void g<(Algo)0, float>(float*, int*)"
