"""find_kernels / instantiate / blank on the declarations notebook cells contain."""

import pytest

from cuda_magic.runtime.types import Param
from cuda_magic.signature import KernelDecl, SignatureError, blank, find_kernels, instantiate

SAXPY = r'''
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * a;
}
'''


def one(src: str) -> KernelDecl:
    kernels = find_kernels(src)
    assert len(kernels) == 1, kernels
    return kernels[0]


def ptype(decl: str) -> Param:
    """The single parameter of `__global__ void k(<decl>) {}`."""
    (p,) = one(f"__global__ void k({decl}) {{}}").params
    return p


# -- blank --------------------------------------------------------------------------------------

def test_blank_keeps_length_and_newlines():
    src = 'int a; // __global__ x\n/* one\n two */ const char* s = "__global__ \\" q";\nchar c = \'"\';\n'
    out = blank(src)
    assert len(out) == len(src)
    assert [i for i, c in enumerate(out) if c == "\n"] == [i for i, c in enumerate(src) if c == "\n"]
    assert "__global__" not in out and "one" not in out and "two" not in out and " q" not in out
    assert out.splitlines()[0] == "int a;" + " " * len(" // __global__ x")
    assert 'const char* s = "' in out and '";' in out           # code and quotes stay
    assert out.splitlines()[3] == "char c = ' ';"


def test_blank_raw_strings_and_digit_separators():
    src = 'auto r = R"x(a ")" __global__)x"; int n = 1\'000\'000; char q = \'x\';'
    out = blank(src)
    assert len(out) == len(src)
    assert out.startswith('auto r = R"' + " " * len('x(a ")" __global__)x') + '";')
    assert "1'000'000" in out and "char q = ' ';" in out


def test_blank_line_comment_continuation_and_extern_c():
    out = blank('// a \\\n b\nextern "C" int x;')
    assert out.split("\n")[:2] == [" " * 6, "  "]
    assert out.endswith('extern " " int x;')


# -- the saxpy kernel ---------------------------------------------------------------------------

def test_saxpy_extern_c():
    k = one(SAXPY)
    assert k.name == "scale"
    assert k.extern_c is True and k.definition is True and k.template == ()
    assert k.line == 2 and k.name_line == 2                    # the cell starts with a newline
    assert k.params == (
        Param("x", "float", 1, True, "const float* x"),
        Param("y", "float", 1, False, "float* y"),
        Param("a", "float", 0, False, "float a"),
        Param("n", "int", 0, False, "int n"),
    )


def test_cpp_kernel_without_extern_c():
    k = one("__global__ void add(int n, double *out) { }")
    assert (k.name, k.extern_c, k.line) == ("add", False, 1)
    assert [(p.name, p.type, p.pointer) for p in k.params] == [("n", "int", 0), ("out", "double", 1)]


# -- parameter types ----------------------------------------------------------------------------

@pytest.mark.parametrize("decl, type_, pointer", [
    ("unsigned n", "unsigned int", 0),
    ("unsigned int n", "unsigned int", 0),
    ("long long n", "long long", 0),
    ("unsigned long long* n", "unsigned long long", 1),
    ("size_t n", "unsigned long", 0),
    ("std::size_t n", "unsigned long", 0),
    ("std :: size_t n", "unsigned long", 0),
    ("int64_t* n", "long long", 1),
    ("uint32_t n", "unsigned int", 0),
    ("half* n", "__half", 1),
    ("__half n", "__half", 0),
    ("__nv_bfloat16* n", "__nv_bfloat16", 1),
    ("bool n", "bool", 0),
    ("char* n", "char", 1),
    ("double n", "double", 0),
    ("float** n", "float", 2),
    ("void* n", "void", 1),
    ("Foo<int> n", "Foo<int>", 0),
    ("Foo< int , 4 >* n", "Foo<int, 4>", 1),
    ("Foo<unsigned int> n", "Foo<unsigned int>", 0),
])
def test_scalar_types(decl, type_, pointer):
    p = ptype(decl)
    assert (p.name, p.type, p.pointer) == ("n", type_, pointer)


def test_restrict_both_positions_and_const():
    k = one("__global__ void k(const float* __restrict__ x, float* __restrict__ y,\n"
            "                  __restrict__ float* z, volatile int* flag) {}")
    x, y, z, flag = k.params
    assert (x.name, x.type, x.pointer, x.const) == ("x", "float", 1, True)
    assert (y.name, y.type, y.pointer, y.const) == ("y", "float", 1, False)
    assert (z.name, z.type, z.pointer, z.const) == ("z", "float", 1, False)
    assert (flag.name, flag.type, flag.pointer) == ("flag", "int", 1)
    assert x.declared == "const float* __restrict__ x"


def test_const_placement():
    assert ptype("float* const p") == Param("p", "float", 1, False, "float* const p")
    assert ptype("float const* p").const is True                  # east const
    assert ptype("const float* const p").const is True
    assert ptype("const int n") == Param("n", "int", 0, False, "const int n")   # by value: False


def test_array_params():
    assert ptype("float x[]") == Param("x", "float", 1, False, "float x[]")
    assert ptype("const int x[16]") == Param("x", "int", 1, True, "const int x[16]")
    assert ptype("float* x[4]").pointer == 2


def test_unnamed_params_and_void_list():
    k = one("__global__ void k(float*, int, unsigned int, long long, const float* __restrict__) {}")
    assert [p.name for p in k.params] == ["arg0", "arg1", "arg2", "arg3", "arg4"]
    assert [(p.type, p.pointer) for p in k.params] == [
        ("float", 1), ("int", 0), ("unsigned int", 0), ("long long", 0), ("float", 1)]
    assert k.params[4].const is True
    assert one("__global__ void k(void) {}").params == ()
    assert one("__global__ void k( ) {}").params == ()


def test_struct_by_value_grid_constant_and_defaults():
    k = one("struct Params { float* x; int n; };\n"
            "__global__ void k(Params p, struct Params q, const __grid_constant__ Params g,\n"
            "                  int n = 4, float s = f(1, 2)) {}")
    assert [(p.name, p.type, p.pointer, p.const) for p in k.params] == [
        ("p", "Params", 0, False), ("q", "Params", 0, False), ("g", "Params", 0, False),
        ("n", "int", 0, False), ("s", "float", 0, False)]
    assert k.params[1].declared == "struct Params q"
    assert k.params[4].declared == "float s = f(1, 2)"
    assert k.line == 2


def test_declared_is_whitespace_collapsed_without_comments():
    k = one("__global__ void k(const   float*\n   x /* in */, int n) {}")
    assert k.params[0].declared == "const float* x"


# -- specifiers, layout, lines ------------------------------------------------------------------

def test_launch_bounds_and_specifiers():
    k = one("__global__ void __launch_bounds__(256, 2) k(float* x) {}")
    assert k.name == "k" and k.params[0].name == "x"
    k = one('extern "C" static __global__ __launch_bounds__(128) void __maxnreg__(32) k(int n) {}')
    assert (k.name, k.extern_c, k.line) == ("k", True, 1)
    k = one("void __global__ __cluster_dims__(2, 1, 1) k(int n) {}")
    assert k.name == "k"


def test_multiline_template_declaration_lines():
    src = ("#include <cuda_fp16.h>\n"          # 1
           "\n"                                # 2
           "template <typename T>\n"           # 3
           "__global__ void\n"                 # 4
           "__launch_bounds__(256)\n"          # 5
           "axpy(T a,\n"                       # 6
           "     const T* x,\n"                # 7
           "     T* y, int n)\n"               # 8
           "{\n}\n")
    k = one(src)
    assert (k.name, k.line, k.name_line, k.template) == ("axpy", 3, 6, ("T",))
    assert [(p.name, p.type, p.pointer, p.const) for p in k.params] == [
        ("a", "T", 0, False), ("x", "T", 1, True), ("y", "T", 1, False), ("n", "int", 0, False)]


def test_statement_start_after_previous_code_and_preprocessor():
    src = ("__device__ float f(float v) { return v; }\n"   # 1
           "#define N 4\n"                                 # 2
           "#if N > 2\n"                                   # 3
           'extern "C"\n'                                  # 4
           "#endif\n"                                      # 5
           "__global__ void k(float* x) {}\n")             # 6
    k = one(src)
    assert (k.name, k.line, k.name_line, k.extern_c) == ("k", 4, 6, True)


def test_comments_strings_and_macros_ignored():
    src = ("// __global__ void fake(int)\n"
           'const char* s = "__global__ void s(int)";\n'
           "/* __global__ void\n"
           "   block(int) */\n"
           "#define KERNEL __global__ void\n"
           "__global__ void real(int n) {}\n")
    k = one(src)
    assert (k.name, k.line) == ("real", 6)


def test_device_and_host_functions_not_listed():
    src = ("__device__ float f(float x) { return x; }\n"
           "__host__ __device__ int g(int x);\n"
           "int main() { return 0; }\n"
           "__global__ void k(float* y) { y[0] = f(1.f); }\n")
    assert [k.name for k in find_kernels(src)] == ["k"]
    assert find_kernels("__device__ float f(float x) { return x; }") == []


def test_extern_c_block_and_namespace():
    src = ('extern "C" {\n'
           "__global__ void a(int*);\n"
           "__global__ void b(float* p) { }\n"
           "}\n"
           "namespace ns {\n"
           "__global__ void c(double* d) {}\n"
           "}\n"
           "__global__ void ns::c2(int) {}\n")
    ks = find_kernels(src)
    assert [(k.name, k.extern_c, k.definition, k.line) for k in ks] == [
        ("a", True, False, 2), ("b", True, True, 3), ("c", False, True, 6), ("c2", False, True, 8)]


def test_extern_cpp_block_is_not_c():
    assert one('extern "C++" { __global__ void k(int n) {} }').extern_c is False


def test_prototype_then_definition_listed_once():
    src = ('extern "C" __global__ void first(int* p);\n'   # 1
           "__global__ void other(float* x) {}\n"          # 2
           "__global__ void first(int* q)\n"               # 3
           "{\n"
           "}\n")
    ks = find_kernels(src)
    assert [k.name for k in ks] == ["first", "other"]
    first = ks[0]
    assert (first.line, first.definition, first.params[0].name) == (3, True, "q")
    assert first.extern_c is True                       # linkage of the first declaration


def test_prototype_only_and_overloads():
    ks = find_kernels("__global__ void p(int);\n"
                      "__global__ void o(float* x) {}\n__global__ void o(double* x) {}\n")
    assert [(k.name, k.definition) for k in ks] == [("p", False), ("o", True), ("o", True)]
    assert [k.params[0].type for k in ks[1:]] == ["float", "double"]


def test_explicit_instantiations_are_not_new_kernels():
    src = ("template <typename T> __global__ void k(T* x) {}\n"
           "template __global__ void k<float>(float*);\n"
           "template<> __global__ void k<int>(int* x) {}\n")
    assert [(k.name, k.line, k.template) for k in find_kernels(src)] == [("k", 1, ("T",))]


# -- errors -------------------------------------------------------------------------------------

def test_reference_param_error():
    with pytest.raises(SignatureError, match="reference") as e:
        find_kernels("\n\n__global__ void k(int n,\n float& x) {}")
    assert e.value.line == 4 and "float& x" in str(e.value) and "line 4" in str(e.value)


def test_unbalanced_parens_error_with_line():
    with pytest.raises(SignatureError) as e:
        find_kernels("int x;\n__global__ void k(float* x, int n {\n  x[0] = n;\n}\n")
    assert e.value.line == 2 and "line 2" in str(e.value)
    with pytest.raises(SignatureError, match="line 1"):
        find_kernels("__global__ void k(float* x)) {}")


def test_missing_paren_error():
    with pytest.raises(SignatureError, match="line 2") as e:
        find_kernels("\n__global__ void k;\n")
    assert isinstance(e.value, ValueError) and e.value.line == 2 and "'k'" in str(e.value)
    with pytest.raises(SignatureError, match="no kernel name"):
        find_kernels("__global__")


# -- templates ----------------------------------------------------------------------------------

AXPY = ("template <typename T>\n"
        "__global__ void axpy(T a, const T* __restrict__ x, T* y, int n) {}\n")
FILL = ("template <class T, int BLOCK>\n"
        "__global__ void fill(T* out, T value, Vec<T> v, int n) {}\n")


def test_template_parameter_names():
    k = one("template <typename T, class U, int N = 4, typename V = float>\n"
            "__global__ void k(T* t, U u) {}")
    assert k.template == ("T", "U", "N", "V")
    assert k.template_defaults == (None, None, "4", "float")


def test_instantiate_axpy_float():
    name, params = instantiate(one(AXPY), "axpy<float>")
    assert name == "axpy_float"
    assert params == (
        Param("a", "float", 0, False, "float a"),
        Param("x", "float", 1, True, "const float* __restrict__ x"),
        Param("y", "float", 1, False, "float* y"),
        Param("n", "int", 0, False, "int n"),
    )


def test_instantiate_fill_double_256():
    name, params = instantiate(one(FILL), " fill < double ,256 > ")
    assert name == "fill_double_256"
    assert [(p.name, p.type, p.pointer) for p in params] == [
        ("out", "double", 1), ("value", "double", 0), ("v", "Vec<double>", 0), ("n", "int", 0)]


def test_instantiate_unsigned_and_pointer_args():
    k = one(AXPY)
    name, params = instantiate(k, "axpy<unsigned int>")
    assert name == "axpy_unsigned_int" and params[1].type == "unsigned int"
    name, params = instantiate(k, "axpy<float *>")
    assert name == "axpy_float_ptr"
    a, x, y, _ = params
    assert (a.type, a.pointer, a.const) == ("float", 1, False)
    assert (x.pointer, y.pointer) == (2, 2)
    _, params = instantiate(k, "axpy<const float*>")
    assert (params[0].pointer, params[0].const) == (1, True)
    assert instantiate(k, "axpy<ns::Half>")[0] == "axpy_ns_Half"


def test_instantiate_defaults():
    k = one("template <typename T, int B = 128, typename U = T*>\n"
            "__global__ void k(T* x, U u) {}")
    assert k.template == ("T", "B", "U")
    name, params = instantiate(k, "k<float>")
    assert name == "k_float"
    assert [(p.type, p.pointer) for p in params] == [("float", 1), ("float", 1)]
    assert instantiate(k, "k<int, 64, double>")[1][1] == Param("u", "double", 0, False, "double u")


def test_instantiate_errors():
    k = one(FILL)
    with pytest.raises(SignatureError, match="fill"):
        instantiate(k, "axpy<float, 4>")                  # wrong name
    with pytest.raises(SignatureError, match="2 template argument"):
        instantiate(k, "fill<float>")                     # BLOCK has no default
    with pytest.raises(SignatureError, match="got 3"):
        instantiate(k, "fill<float, 4, 5>")
    with pytest.raises(SignatureError, match="takes 1 to 3"):
        instantiate(one("template <typename T, int B = 1, typename U = T>\n"
                        "__global__ void d(T* x) {}"), "d<>")
    with pytest.raises(SignatureError):
        instantiate(k, "fill")
    with pytest.raises(SignatureError, match="not a template"):
        instantiate(one(SAXPY), "scale<float>")
