"""Binding what the binary holds: every kernel entry once, named unambiguously, typed by the binary."""

import pytest

import cuda_magic
from cuda_magic import CellError, CompileError, build, line_config
from cuda_magic.compile.binary import entries
from cuda_magic.errors import ArgumentError
from cuda_magic.runtime.launch.packer import Packer

from conftest import ARCH

CELL = r'''
typedef unsigned int uint;
#define real float
#define DEFINE_SCALE(NAME, T) extern "C" __global__ void NAME(T* x, T a, int n) { \
    int i = threadIdx.x; if (i < n) x[i] *= a; }
namespace a { __global__ void k(real* x, uint n) { x[n] = 1; } }
namespace b { __global__ void k(real* x, uint n) { x[n] = 2; } }
__global__ void s(float* x, float v, int n) { x[n] = v; }
__global__ void s(double* x, double v, int n) { x[n] = v; }
#if 0
__global__ void gone(float* x) {}
#endif
DEFINE_SCALE(scale_f, float)
extern "C" __global__ void plain(const real* x, real* y, uint n) { y[n] = x[n]; }
namespace ops {
template <int B> __global__ void t(float* x) { x[B] = 0; }
template __global__ void t<256>(float*);
template <typename T> __global__ void axpy(T a, const T* x, T* y) { y[0] = a * x[0]; }
}
'''

BOUND = {
    "a_k": "a::k(float*, unsigned int)",
    "b_k": "b::k(float*, unsigned int)",
    "s_float_ptr_float_int": "s(float*, float, int)",
    "s_double_ptr_double_int": "s(double*, double, int)",
    "plain": "plain(const real* x, real* y, uint n)",
    "t_256": "ops::t<256>(float*)",
    "scale_f": "scale_f(void* arg0, float arg1, int arg2)",
}


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_every_entry_of_the_binary_is_bound_once(compiler, fresh_cache):
    inst = ["ops::axpy<float>"] if compiler == "nvrtc" else []
    m = build(CELL, line_config(arch=ARCH, compiler=compiler), instantiate=inst)
    want = dict(BOUND, **({"axpy_float": "ops::axpy<float>(float, const float*, float*)"}
                          if inst else {}))
    assert m.bindings == want
    symbols = {e.symbol for r in m.results for e in r.entries}
    assert {k.symbol for k in m} == symbols                      # exactly the binary's kernels
    assert m.missing == ("gone (line 11)",)                      # inside #if 0: not bound
    # types: typedefs and macros resolved, names from the source
    plain = m.plain
    assert [(p.name, p.type, p.pointer, p.const) for p in plain.params] == [
        ("x", "float", 1, True), ("y", "float", 1, False), ("n", "unsigned int", 0, False)]
    assert [(p.name, p.type) for p in m.a_k.params] == [("x", "float"), ("n", "unsigned int")]
    assert m["a::k"] is m.a_k and m["b::k"] is m.b_k and m["ops::t<256>"] is m.t_256
    assert m["s(double*, double, int)"] is m.s_double_ptr_double_int
    # sizes agree with the binary's parameter table
    for k in m:
        (entry,) = [e for e in m.result_of(k.name).entries if e.symbol == k.symbol]
        assert [p.size for p in k.params] == [size for _, size in entry.params], k.name
    text = cuda_magic.view(m).text()
    assert "bound as: a_k = a::k(float*, unsigned int); b_k = b::k(" in text
    assert "declared but not in the binary" in text and "gone (line 11)" in text
    if not inst:
        assert "templates not instantiated: ops::axpy<float>" in text


def test_explicit_instantiations_bind_with_nvcc_and_name_expressions_with_nvrtc(fresh_cache):
    src = r'''
namespace ops { template <typename T, int N> __global__ void fill(T* x, T v) { x[N] = v; } }
template __global__ void ops::fill<float, 4>(float*, float);
'''
    for compiler in ("nvrtc", "nvcc"):
        m = build(src, line_config(arch=ARCH, compiler=compiler))
        assert m.bindings == {"fill_float_4": "ops::fill<float, 4>(float*, float)"}
        assert [(p.name, p.type) for p in m.fill_float_4.params] == [("x", "float"), ("v", "float")]
    m = build(src, line_config(arch=ARCH), instantiate=["ops::fill<double, 2>"])
    assert set(m.bindings) == {"fill_float_4", "fill_double_2"}
    assert m["ops::fill<double, 2>"] is m.fill_double_2
    for compiler in ("nvrtc", "nvcc"):      # the compiler judges a spelling, and says which
        with pytest.raises(CompileError, match=r"(?s)other.*--instantiate 'other::fill<int, 1>': "
                                               r"the compiler cannot instantiate it as written"):
            build(src, line_config(arch=ARCH, compiler=compiler),
                  instantiate=["other::fill<int, 1>"])


def test_adding_a_second_instance_never_renames_the_first(fresh_cache):
    """An instance is named from the text the user wrote, not from how many instances there
    are: enumerators (the compiler writes ``(Order)0``) and typedefs (``int64_t`` is ``long``)
    keep their spelling when another instance of the same template comes in."""
    head = "#include <cstdint>\nenum Order { ASC, DESC };\n" \
           "template <Order O> __global__ void s(float* x) { x[0] = O; }\n" \
           "template <typename T> __global__ void fill(T* x, T v) { x[0] = v; }\n"
    one = "template __global__ void s<ASC>(float*);\n" \
          "template __global__ void fill<int64_t>(int64_t*, int64_t);\n"
    two = one + "template __global__ void s<DESC>(float*);\n" \
                "template __global__ void fill<int>(int*, int);\n"
    for compiler in ("nvrtc", "nvcc"):
        first = build(head + one, line_config(arch=ARCH, compiler=compiler))
        both = build(head + two, line_config(arch=ARCH, compiler=compiler))
        assert set(first.bindings) == {"s_ASC", "fill_int64_t"}, (compiler, first.bindings)
        assert set(both.bindings) == {"s_ASC", "s_DESC", "fill_int64_t", "fill_int"}, \
            (compiler, both.bindings)
        assert both.s_DESC.symbol == "_Z1sIL5Order1EEvPf"
        assert both.fill_int64_t.symbol == "_Z4fillIlEvPT_S0_"


def test_enumerators_read_as_the_compiler_spells_them():
    from cuda_magic.cell.templates import enumerators
    src = ("enum class Mode : int { A, B = 4, C };  // comment { D }\n"
           "enum Other { A2 = 0x10, B2 = 1 << 2, C2 };\nenum Same { A };\n")
    e = enumerators(src)
    assert e["Mode::B"] == "(Mode)4" and e["Mode::C"] == "(Mode)5" and e["Other::A2"] == "(Other)16"
    assert "Other::B2" not in e and "C2" not in e     # an expression: what follows is unknown
    assert "A" not in e and e["Same::A"] == "(Same)0"  # two enums' A: only qualified


def test_a_parameter_the_binary_sizes_differently_fails_at_launch_not_at_compile(fresh_cache):
    # a macro the parser takes for a type name: the binary says 8 bytes, the source reads 4
    src = '#define IDX long long\nextern "C" __global__ void k(float* x, IDX n) { x[n] = 0; }\n'
    m = build(src, line_config(arch=ARCH))
    n = m.k.params[1]
    assert n.size == 8 and n.type == "long long"           # the macro was expanded
    odd = build('struct P { char c[6]; };\nextern "C" __global__ void q(P p) {}\n',
                line_config(arch=ARCH))
    (entry,) = odd.result.entries
    packer = Packer("q", odd.q.params, entry.params)
    with pytest.raises(ArgumentError, match="parameter 'p'"):
        packer.pack([1.0], [])


def test_reference_and_function_pointer_params_bind(fresh_cache):
    src = r'''
__device__ float twice(float v) { return 2 * v; }
__global__ void k(const int& n, float (*f)(float), float* y) { y[0] = f(n); }
'''
    m = build(src, line_config(arch=ARCH))
    n, f, y = m.k.params
    assert n.reference and n.const and f.function and y.pointer == 1
    (entry,) = m.result.entries
    with pytest.raises(ArgumentError, match="parameter 'n' .* is a reference"):
        Packer("k", m.k.params, entry.params).pack([5, 0, None], [])


def test_binary_entries_are_read_once_per_binary(fresh_cache):
    m = build(CELL, line_config(arch=ARCH))
    assert m.result.entries is build(CELL, line_config(arch=ARCH)).result.entries
    assert entries(m.result.binary, "cubin") == m.result.entries
