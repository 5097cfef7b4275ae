"""find_kernels / instantiate / blank on the declarations notebook cells contain."""

import re

import pytest

import cuda_magic

from cuda_magic.runtime.launch.params import Param
from cuda_magic.cell.declarator import param_from_type
from cuda_magic.cell.decls import KernelDecl, SignatureError, TemplateParam
from cuda_magic.cell.scan import blank
from cuda_magic.cell.signature import find_kernels
from cuda_magic.cell.templates import instantiate, template_hint

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

def test_reference_param_is_a_param_not_an_error():
    # Changed: a reference used to be a SignatureError for the whole cell; it is an 8-byte
    # address in the ABI, and the launch says what to pass (tests/runtime/test_packer.py).
    k = one("\n\n__global__ void k(int n,\n float& x) {}")
    assert k.params[1] == Param("x", "float", 0, False, "float& x", reference=True)
    assert k.params[1].kind == "reference" and k.params[1].size == 8


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


# -- real code: aliases, namespaces, templates, references, function pointers, macros ----------

def compiled_sizes(src: str, names: list[str]) -> dict[str, list[int]]:
    """PTX .param sizes of each name expression's entry, from one NVRTC compile of ``src``."""
    from cuda_magic.compile.backends import get_backend
    out = get_backend("nvrtc").compile(src, arch="sm_90a", target_format="cubin", flags=[], ptxas=[],
                                       name_expressions=names)
    entries = {}
    for m in re.finditer(r"\.entry\s+([\w$]+)\s*\((.*?)\)", out.ptx, re.S):
        sizes = []
        for piece in filter(str.strip, m[2].split(",")):
            bits = re.search(r"\.[busf](\d+)\b", piece)
            count = re.search(r"\[(\d+)\]\s*$", piece)
            sizes.append(int(bits[1]) // 8 * (int(count[1]) if count else 1))
        entries[m[1]] = sizes
    return {name: entries[lowered] for name, lowered in out.lowered_names}


def test_canonical_type_knows_demangled_and_std_spellings():
    from cuda_magic.runtime.launch.params import canonical_type
    assert canonical_type("long unsigned int") == "unsigned long"
    assert canonical_type("int long long unsigned") == "unsigned long long"
    assert canonical_type("cuda::std::int64_t") == "long long"
    assert canonical_type("::cuda::std::uint32_t") == "unsigned int"
    assert canonical_type("std::__4::size_t") == "unsigned long"
    assert canonical_type("signed char") == "signed char" and canonical_type("char") == "char"
    assert canonical_type("cudaTextureObject_t") == "unsigned long long"
    assert canonical_type("long double") == "long double"       # no scalar: stays as written


@pytest.mark.parametrize("text, kind, type_, pointer, const", [
    ("float const*", "pointer", "float", 1, True),
    ("float const* __restrict__", "pointer", "float", 1, True),
    ("unsigned int", "scalar", "unsigned int", 0, False),
    ("long", "scalar", "long", 0, False),
    ("CUtensorMap_st", "struct", "CUtensorMap_st", 0, False),
    ("float (*)(float)", "function", "float(float)", 1, False),
    ("void (*)(int, float*)", "function", "void(int, float*)", 1, False),
    ("int const&", "reference", "int", 0, True),
    ("(anonymous namespace)::Params", "struct", "Params", 0, False),
    ("Foo<int, 4>", "struct", "Foo<int, 4>", 0, False),
    ("float**", "pointer", "float", 2, False),
])
def test_param_from_demangled_type(text, kind, type_, pointer, const):
    p = param_from_type(text, "x")
    assert (p.name, p.kind, p.type, p.pointer, p.const) == ("x", kind, type_, pointer, const)
    assert "x" in p.declared


def test_param_from_type_declared_text_and_unknown():
    assert param_from_type("float (*)(float)", "f").declared == "float (*f)(float)"
    assert param_from_type("float const*", "x").declared == "float const* x"
    p = param_from_type("what ever ( x", "q")
    assert p.unknown and p.name == "q" and p.kind == "unknown"


ALIASES = r'''
#define real float
typedef unsigned int uint;
using idx_t = int;
typedef float* fptr;
typedef const float* cfptr;
typedef fptr fptr2;                     // an alias of an alias
typedef uint count_t, *count_ptr;       // two declarators
enum class Mode : unsigned char { A, B };
typedef enum { RED, GREEN } Colour;
namespace cfg { typedef long long big; }
struct S { typedef double hidden; };    // not at namespace scope: not seen
__global__ void k(float* x, uint n, idx_t i, cuda::std::int64_t q, std::uint32_t u, real* r,
                  real a, fptr f, const fptr cf, cfptr c, fptr2 f2, count_t m, count_ptr mp,
                  Mode mode, Colour colour, cfg::big b) {}
'''


def test_scalar_aliases_marshal_as_their_scalar():
    k = one(ALIASES)
    got = {p.name: (p.type, p.pointer, p.const) for p in k.params}
    assert got == {
        "x": ("float", 1, False), "n": ("unsigned int", 0, False), "i": ("int", 0, False),
        "q": ("long long", 0, False), "u": ("unsigned int", 0, False), "r": ("float", 1, False),
        "a": ("float", 0, False), "f": ("float", 1, False),
        "cf": ("float", 1, False),            # const fptr: the pointer is const, not the floats
        "c": ("float", 1, True), "f2": ("float", 1, False), "m": ("unsigned int", 0, False),
        "mp": ("unsigned int", 1, False), "mode": ("unsigned char", 0, False),
        "colour": ("int", 0, False), "b": ("long long", 0, False)}
    assert [p.declared for p in k.params[1:3]] == ["uint n", "idx_t i"]    # as written


def test_alias_sizes_agree_with_nvrtc():
    src = "#include <cuda/std/cstdint>\nnamespace std { typedef unsigned int uint32_t; }\n" + ALIASES
    k = find_kernels(src)[0]
    assert compiled_sizes(src, ["k"])["k"] == [p.size for p in k.params]


def test_alias_scoping_and_template_parameters_shadow_aliases():
    src = ("typedef int T;\n"
           "__global__ void f(T n) {}\n"
           "template <typename T> __global__ void g(T* x) {}\n"
           "__global__ void h(S::hidden d) { typedef float local; }\n"
           "__global__ void l(local v) {}\n"
           "template <typename X> using vec = X*;\n"
           "typedef struct Foo Foo;\n"
           "__global__ void m(vec v, Foo foo) {}\n")
    f, g, h, l, m = find_kernels(src)
    assert f.params[0].type == "int"
    assert g.params[0].type == "T"                         # the template parameter, not the typedef
    assert h.params[0].type == "S::hidden" and l.params[0].type == "local"
    assert [(p.type, p.kind) for p in m.params] == [("vec", "struct"), ("Foo", "struct")]


def test_instantiate_sees_through_aliases():
    k = one("typedef unsigned int uint;\n#define REAL double\n"
            "template <typename T> __global__ void k(T* x, const T& r) {}\n")
    assert [(p.type, p.pointer) for p in instantiate(k, "k<uint>")[1]] == [("unsigned int", 1),
                                                                           ("unsigned int", 0)]
    assert instantiate(k, "k<REAL>")[1][0].type == "double"


NAMESPACES = r'''
namespace a { namespace b { __global__ void k(float* x) {} } }
namespace a::c { __global__ void k(float* x) {} }
namespace { __global__ void k(float* x) {} }
namespace outer { inline namespace v1 { __global__ void k(float* x) {} } }
inline namespace v2 { __global__ void z(int n) {} }
namespace ns { __global__ void p(int n); }
__global__ void ns::p(int n) {}
__global__ void k(float* x) {}
namespace e { extern "C" __global__ void plain(int n) {} }
'''


def test_namespaces():
    ks = find_kernels(NAMESPACES)
    assert [(k.qualified, k.definition) for k in ks] == [
        ("a::b::k", True), ("a::c::k", True), ("(anonymous namespace)::k", True),
        ("outer::v1::k", True), ("v2::z", True), ("ns::p", True), ("k", True), ("e::plain", True)]
    assert [k.namespace for k in ks[:3]] == ["a::b", "a::c", "(anonymous namespace)"]
    assert ks[3].inline_namespaces == (1,) and ks[4].inline_namespaces == (0,)
    assert (ks[5].line, ks[5].params[0].name) == (8, "n")     # prototype + definition: one entry
    assert ks[7].binary_name == "plain" and ks[0].binary_name == "a::b::k"


def test_namespaced_kernels_match_nvrtc():
    names = ["a::b::k", "a::c::k", "outer::k", "z", "ns::p", "::k"]
    sizes = compiled_sizes(NAMESPACES.replace("namespace { __global__ void k(float* x) {} }", ""), names)
    assert sizes == {n: [8] if "k" in n else [4] for n in names}


def test_same_name_twice_is_listed_twice():
    src = ("#if USE_FAST\n"
           "__global__ void k(float* x, int n) { x[0] = 1; }\n"
           "#else\n"
           "__global__ void k(float* x, int n) { x[0] = 2; }\n"
           "#endif\n"
           "namespace a { __global__ void j(int); }\n"
           "namespace b { __global__ void j(int) {} }\n")
    ks = find_kernels(src)
    assert [(k.qualified, k.line, k.definition) for k in ks] == [
        ("k", 2, True), ("k", 4, True), ("a::j", 6, False), ("b::j", 7, True)]


TEMPLATES = r'''
enum class Mode { A, B };
template <int B> __global__ void blk(float* x) {}
template <typename T, int N> __global__ void vec(T* x) {}
template <bool F> __global__ void flag(float* x) {}
template <class T, unsigned U, size_t S, Mode M, typename V = T*, int BLOCK = 256>
__global__ void many(T* x, V v) {}
template <template <typename> class TT, typename... Ts> __global__ void odd(int n) {}
namespace ns { template <typename T> __global__ void axpy(T a, const T* x, T* y) {} }
'''


def test_template_parameter_kinds():
    blk, vec, flag, many, odd, axpy = find_kernels(TEMPLATES)
    assert blk.template_params == (TemplateParam("B", "value", "int"),)
    assert many.template_params == (
        TemplateParam("T", "type"), TemplateParam("U", "value", "unsigned int"),
        TemplateParam("S", "value", "unsigned long"), TemplateParam("M", "value", "Mode"),
        TemplateParam("V", "type", "", "T*"), TemplateParam("BLOCK", "value", "int", "256"))
    assert odd.template_params == (TemplateParam("TT", "template"),
                                   TemplateParam("Ts", "type", pack=True))
    assert many.template == ("T", "U", "S", "M", "V", "BLOCK")        # names, as before


def test_template_hints():
    hints = [template_hint(k) for k in find_kernels(TEMPLATES)]
    assert hints == ["blk<128>", "vec<float, 4>", "flag<true>", "many<float, 4, 4, Mode{}>",
                     "odd<TT>", "ns::axpy<float>"]
    assert template_hint(one(SAXPY)) == "scale"


def test_template_hints_compile_and_params_match_nvrtc():
    ks = [k for k in find_kernels(TEMPLATES) if k.name != "odd"]
    hints = [template_hint(k) for k in ks]
    sizes = compiled_sizes(TEMPLATES, hints)
    for k, hint in zip(ks, hints):
        assert [p.size for p in instantiate(k, hint)[1]] == sizes[hint], hint


def test_instantiate_qualified_spellings():
    axpy = find_kernels(TEMPLATES)[-1]
    assert instantiate(axpy, "ns::axpy<float>")[0] == "ns_axpy_float"
    assert instantiate(axpy, "::ns::axpy<float>")[0] == "ns_axpy_float"
    assert instantiate(axpy, "axpy<float>")[0] == "axpy_float"
    with pytest.raises(SignatureError, match="in namespace 'ns', not in 'other'"):
        instantiate(axpy, "other::axpy<float>")
    with pytest.raises(SignatureError, match="global namespace"):
        instantiate(find_kernels(TEMPLATES)[0], "ns::blk<1>")
    inl = one("namespace o { inline namespace v1 { namespace {\n"
              "template <int N> __global__ void k(int* x) {} } } }")
    assert inl.namespace == "o::v1::(anonymous namespace)"
    assert template_hint(inl) == "o::v1::k<4>"
    for spelling in ("o::k<4>", "o::v1::k<4>", "o::v1::(anonymous namespace)::k<4>", "k<4>"):
        instantiate(inl, spelling)
    with pytest.raises(SignatureError):
        instantiate(inl, "v1::k<4>")


REFS = r'''
typedef float (*unary)(float);
using binary = float(float, float);
__device__ float twice(float v) { return 2 * v; }
extern "C" __global__ void refs(const int& n, float& out, float (*f)(float), void (*)(int),
                                unary u, binary* b, float g(float), float (&row)[4],
                                float (*rows)[4], double d) {}
'''


def test_references_and_function_pointers():
    k = one(REFS)
    got = [(p.name, p.kind, p.type, p.pointer, p.const) for p in k.params]
    assert got == [
        ("n", "reference", "int", 0, True), ("out", "reference", "float", 0, False),
        ("f", "function", "float(float)", 1, False), ("arg3", "function", "void(int)", 1, False),
        ("u", "function", "float(float)", 1, False),
        ("b", "function", "float(float, float)", 1, False),
        ("g", "function", "float(float)", 1, False),      # a function parameter is a pointer
        ("row", "reference", "float", 0, False), ("rows", "pointer", "float", 1, False),
        ("d", "scalar", "double", 0, False)]
    assert compiled_sizes(REFS, ["refs"])["refs"] == [p.size for p in k.params]


MACROS = r'''
#define ARGS float* x, int n
#define PTR(T) T*
#define RESTRICT __restrict__
#define NOTHING
#define KNAME renamed
__global__ void packed(ARGS) {}
__global__ void fn_like(PTR(float) y, const PTR(int) RESTRICT z NOTHING) {}
__global__ void KNAME(int n) {}
'''


def test_macros_in_parameter_lists_are_expanded():
    packed, fn_like, renamed = find_kernels(MACROS)
    assert packed.params == (Param("x", "float", 1, False, "float* x"), Param("n", "int", 0, False, "int n"))
    assert [(p.name, p.type, p.pointer, p.const) for p in fn_like.params] == [
        ("y", "float", 1, False), ("z", "int", 1, True)]
    assert fn_like.params[0].declared == "PTR(float) y"       # as written
    assert renamed.name == "renamed"
    sizes = compiled_sizes(MACROS, ["packed", "fn_like", "renamed"])
    assert sizes == {k.name: [p.size for p in k.params] for k in (packed, fn_like, renamed)}


def test_unreadable_parameters_are_unknown_not_errors():
    src = ("template <typename... Ts> __global__ void pack(int n, Ts... rest) {}\n"
           "__global__ void m(float* x, UNDEFINED_PTR(float) y, int (*broken)(int) z, MACRO(int)) {}\n")
    pack, m = find_kernels(src)
    assert pack.params[1] == Param("rest", "Ts... rest", declared="Ts... rest", unknown=True)
    assert [(p.name, p.kind) for p in m.params] == [
        ("x", "pointer"), ("y", "unknown"), ("z", "unknown"), ("arg3", "unknown")]
    assert m.params[1].declared == "UNDEFINED_PTR(float) y" and m.params[1].size is None


def test_a_kernel_whose_return_type_is_an_enable_if_expression():
    """The parameters are read through ``typename std::enable_if<...>::type`` and
    ``std::enable_if_t<...>`` return types (they showed as arg0.. before), with both
    compilers; an instance call ``k<float>(...)`` is still not a declaration."""
    src = ("#include <type_traits>\n"
           "template <typename T>\n"
           "__global__ typename std::enable_if<std::is_floating_point<T>::value, void>::type\n"
           "scale(T* x, T a, int n) { x[threadIdx.x] *= a; }\n"
           "template <typename T>\n"
           "__global__ std::enable_if_t<std::is_integral<T>::value> bump(T* x, T a, int n) "
           "{ x[threadIdx.x] += a; }\n"
           "template __global__ void scale<float>(float*, float, int);\n"
           "template __global__ void bump<int>(int*, int, int);\n")
    found = find_kernels(src)
    assert [(d.name, [p.name for p in d.params]) for d in found] == [
        ("scale", ["x", "a", "n"]), ("bump", ["x", "a", "n"])]
    for compiler in ("nvrtc", "nvcc"):
        m = cuda_magic.build(src, cuda_magic.line_config(arch="sm_90a", compiler=compiler))
        assert [p.name for p in m.scale_float.params] == ["x", "a", "n"], compiler
        assert [p.name for p in m.bump_int.params] == ["x", "a", "n"], compiler
