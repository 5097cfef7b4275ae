"""The C/C++ standard headers supplied in memory to NVRTC (cuda_magic.compile.stdheaders).

Each meaning check is a static_assert or a PTX comparison in a source that NVRTC
compiles with HEADERS and nvcc compiles with the real glibc/libstdc++/toolkit
headers, so both compilers must agree.
"""

from __future__ import annotations

import re

import pytest

from cuda_magic.compile.backends import get_backend
from cuda_magic.compile.hints import missing_hint
from cuda_magic.compile.stdheaders import HEADERS

ARCH = "sm_90a"


def nvrtc(source: str, std: str = "c++17", headers=HEADERS) -> str:
    """PTX from NVRTC with the in-memory headers."""
    out = get_backend("nvrtc").compile(source, arch=ARCH, target_format="ptx",
                                       flags=[f"-std={std}"], ptxas=[], headers=headers)
    return out.ptx


def nvcc(source: str, std: str = "c++17") -> str:
    """PTX from nvcc with the real glibc, libstdc++ and toolkit headers."""
    # --expt-relaxed-constexpr: libstdc++'s std::min & co. are constexpr host functions
    # (libcu++'s are __host__ __device__, so NVRTC needs no flag)
    out = get_backend("nvcc").compile(source, arch=ARCH, target_format="ptx",
                                      flags=[f"-std={std}", "--expt-relaxed-constexpr"], ptxas=[])
    return out.binary.decode()


def entry(ptx: str, name: str) -> str:
    """The body of the PTX kernel ``name`` (a mangled name)."""
    m = re.search(rf"\.entry {re.escape(name)}\((.*?)(?=\.entry |\Z)", ptx, re.S)
    assert m, f"no kernel {name} in the PTX"
    return m.group(1)


def strings(ptx: str) -> set[str]:
    """The C strings in the PTX's byte arrays (paths cut to their file name)."""
    out = set()
    for body in re.findall(r"\.b8 [\w$]+\[\d+\] = \{([0-9, ]+)\}", ptx):
        s = bytes(int(b) for b in body.split(",")).rstrip(b"\0").decode()
        out.add(s.rsplit("/", 1)[-1])
    return out


ALL_INCLUDES = "".join(f"#include <{name}>\n" for name in sorted(HEADERS)
                       if name not in ("cuda/std/cstdint", "bit"))

MEANING = ALL_INCLUDES + ALL_INCLUDES + r"""
template <class A, class B> constexpr bool same = std::is_same<A, B>::value;
__host__ __device__ constexpr bool streq(const char* a, const char* b) { return *a == *b && (!*a || streq(a + 1, b + 1)); }

// <cstdint>: glibc's types, in :: and in std::
static_assert(same<int8_t, signed char> && same<int16_t, short> && same<int32_t, int>
              && same<int64_t, long>, "");
static_assert(same<uint8_t, unsigned char> && same<uint16_t, unsigned short>
              && same<uint32_t, unsigned> && same<uint64_t, unsigned long>, "");
static_assert(same<std::int32_t, int> && same<std::uint64_t, unsigned long> && same<intptr_t, long>
              && same<std::uintptr_t, unsigned long> && same<intmax_t, long>
              && same<std::uintmax_t, unsigned long> && same<int_fast8_t, signed char>
              && same<int_fast16_t, long> && same<std::uint_fast32_t, unsigned long>
              && same<int_least16_t, short> && same<std::uint_least64_t, unsigned long>, "");
static_assert(INT8_MIN == -128 && INT16_MIN == -32768 && INT32_MIN == -2147483647 - 1
              && INT64_MIN == -9223372036854775807L - 1 && INT64_MAX == 9223372036854775807L
              && UINT8_MAX == 255 && UINT16_MAX == 65535 && UINT32_MAX == 4294967295U
              && UINT64_MAX == 18446744073709551615UL && SIZE_MAX == UINT64_MAX
              && INTPTR_MAX == INT64_MAX && PTRDIFF_MIN == INT64_MIN && INT_FAST16_MAX == INT64_MAX
              && UINT_FAST32_MAX == UINT64_MAX && INT_LEAST16_MAX == 32767 && INTMAX_MIN == INT64_MIN
              && WCHAR_MAX == 2147483647 && WINT_MAX == 4294967295u && SIG_ATOMIC_MAX == 2147483647, "");
static_assert(same<decltype(INT64_MAX), long> && same<decltype(UINT64_MAX), unsigned long>
              && same<decltype(SIZE_MAX), unsigned long> && same<decltype(UINT32_MAX), unsigned>
              && same<decltype(INT8_MAX), int> && same<decltype(INT64_C(1)), long>
              && same<decltype(UINT64_C(1)), unsigned long> && same<decltype(UINT32_C(1)), unsigned>
              && same<decltype(INTMAX_C(1)), long> && same<decltype(UINTMAX_C(1)), unsigned long>, "");
static_assert(streq(PRId64, "ld") && streq(PRIu64, "lu") && streq(PRIx32, "x") && streq(PRId8, "d")
              && streq(PRIdPTR, "ld") && streq(PRIuFAST16, "lu") && streq(PRIXMAX, "lX")
              && streq(PRIiLEAST64, "li") && streq(PRIoFAST8, "o"), "");

// <cstddef>
struct S { char c; double d; };
static_assert(same<size_t, unsigned long> && same<std::size_t, size_t> && same<ptrdiff_t, long>
              && same<std::ptrdiff_t, long> && same<std::nullptr_t, decltype(nullptr)>
              && same<::nullptr_t, decltype(nullptr)> && same<decltype(NULL), long>
              && alignof(std::max_align_t) == 16 && sizeof(::max_align_t) == 32
              && sizeof(std::byte) == 1, "");
// offsetof is a constant expression where NVRTC has __builtin_offsetof (13.5 does; 13.0 has no
// builtin for it at all, and libcu++'s pointer-arithmetic offsetof is no constant there)
#if !defined(__CUDACC_RTC__) || __has_builtin(__builtin_offsetof)
static_assert(offsetof(S, d) == 8 && offsetof(div_t, rem) == 4, "");
#endif

// <climits>: values and types
static_assert(CHAR_BIT == 8 && SCHAR_MIN == -128 && SCHAR_MAX == 127 && UCHAR_MAX == 255
              && CHAR_MIN == -128 && CHAR_MAX == 127 && SHRT_MIN == -32768 && SHRT_MAX == 32767
              && USHRT_MAX == 65535 && INT_MAX == 2147483647 && INT_MIN == -INT_MAX - 1
              && UINT_MAX == 4294967295u && LONG_MAX == 9223372036854775807L
              && LLONG_MAX == 9223372036854775807LL && ULONG_MAX == 18446744073709551615UL
              && ULLONG_MAX == 18446744073709551615ULL && LONG_MIN == -LONG_MAX - 1
              && MB_LEN_MAX == 16 && SSIZE_MAX == LONG_MAX && LONG_LONG_MAX == LLONG_MAX
              && INT_WIDTH == 32 && LONG_WIDTH == 64 && CHAR_WIDTH == 8 && ULLONG_WIDTH == 64, "");
static_assert(same<decltype(INT_MAX), int> && same<decltype(UINT_MAX), unsigned>
              && same<decltype(LONG_MAX), long> && same<decltype(LONG_MIN), long>
              && same<decltype(ULONG_MAX), unsigned long> && same<decltype(LLONG_MAX), long long>
              && same<decltype(ULLONG_MAX), unsigned long long> && same<decltype(UCHAR_MAX), int>
              && same<decltype(USHRT_MAX), int>, "");
static_assert(sizeof(long) == 8 && sizeof(long long) == 8 && sizeof(wchar_t) == 4, "");

// <cfloat>
static_assert(FLT_MAX == 3.40282346638528859811704183484516925e+38f
              && FLT_MIN == 1.17549435082228750796873653722224568e-38f
              && FLT_EPSILON == 1.19209289550781250000000000000000000e-7f
              && FLT_TRUE_MIN == 1.40129846432481707092372958328991613e-45f
              && DBL_MAX == 1.79769313486231570814527423731704357e+308
              && DBL_MIN == 2.22507385850720138309023271733240406e-308
              && DBL_EPSILON == 2.22044604925031308084726333618164062e-16, "");
static_assert(FLT_MANT_DIG == 24 && DBL_MANT_DIG == 53 && FLT_DIG == 6 && DBL_DIG == 15
              && FLT_MAX_EXP == 128 && DBL_MAX_EXP == 1024 && FLT_MIN_EXP == -125
              && FLT_MAX_10_EXP == 38 && DBL_MIN_10_EXP == -307 && FLT_RADIX == 2 && FLT_ROUNDS == 1
              && FLT_EVAL_METHOD == 0 && DECIMAL_DIG == 21 && FLT_DECIMAL_DIG == 9
              && DBL_DECIMAL_DIG == 17 && FLT_HAS_SUBNORM == 1
              && same<decltype(FLT_MAX), float> && same<decltype(DBL_MAX), double>, "");

// <limits>
static_assert(std::numeric_limits<float>::max() == FLT_MAX && std::numeric_limits<double>::epsilon() == DBL_EPSILON
              && std::numeric_limits<int>::max() == INT_MAX && std::numeric_limits<int64_t>::min() == INT64_MIN
              && std::numeric_limits<uint64_t>::max() == UINT64_MAX && std::numeric_limits<char>::is_signed
              && std::numeric_limits<float>::digits == 24 && std::numeric_limits<float>::infinity() == INFINITY
              && std::numeric_limits<float>::round_style == std::round_to_nearest, "");

// <cmath>
static_assert(M_PI == 3.14159265358979323846 && M_E == 2.7182818284590452354 && M_LOG2E == 1.4426950408889634074
              && M_LOG10E == 0.43429448190325182765 && M_LN2 == 0.69314718055994530942
              && M_LN10 == 2.30258509299404568402 && M_PI_2 == 1.57079632679489661923
              && M_PI_4 == 0.78539816339744830962 && M_1_PI == 0.31830988618379067154
              && M_2_PI == 0.63661977236758134308 && M_2_SQRTPI == 1.12837916709551257390
              && M_SQRT2 == 1.41421356237309504880 && M_SQRT1_2 == 0.70710678118654752440, "");
static_assert(M_PIf == 3.14159265358979323846f && M_SQRT2f == 1.41421356237309504880f
              && same<decltype(M_PI), double> && same<decltype(M_PIf), float>
              && same<decltype(M_PIl), long double>, "");
static_assert(INFINITY > FLT_MAX && HUGE_VALF == INFINITY && HUGE_VAL > DBL_MAX && NAN != NAN
              && same<decltype(INFINITY), float> && same<decltype(NAN), float>
              && same<decltype(HUGE_VALF), float> && same<decltype(HUGE_VAL), double>
              && same<decltype(HUGE_VALL), long double>, "");
static_assert(__builtin_bit_cast(unsigned, INFINITY) == 0x7f800000u && __builtin_bit_cast(unsigned, NAN) == 0x7fc00000u
              && __builtin_bit_cast(unsigned, -HUGE_VALF) == 0xff800000u
              && __builtin_bit_cast(unsigned long, HUGE_VAL) == 0x7ff0000000000000ul, "");
static_assert(FP_NAN == 0 && FP_INFINITE == 1 && FP_ZERO == 2 && FP_SUBNORMAL == 3 && FP_NORMAL == 4
              && FP_ILOGB0 == INT_MIN && FP_ILOGBNAN == INT_MIN && math_errhandling == 3
              && same<float_t, float> && same<double_t, double> && same<std::float_t, float>, "");
static_assert(std::fpclassify(7) == FP_NORMAL && std::fpclassify(0) == FP_ZERO
              && std::isnormal(3) && !std::isnormal(0), "");   // integers (libstdc++'s constexpr)
static_assert(same<decltype(std::sqrt(2)), double> && same<decltype(std::sqrt(2.0f)), float>
              && same<decltype(std::exp(1L)), double> && same<decltype(std::floor(3u)), double>
              && same<decltype(std::isgreater(1.f, 2.f)), bool>
              && same<decltype(std::fpclassify(1.f)), int>, "");

// <cstdlib>, <cstdio>
static_assert(same<decltype(clock()), clock_t> && same<std::clock_t, long> && CLOCKS_PER_SEC == 1000000
              && same<decltype(CLOCKS_PER_SEC), long>, "");
static_assert(EXIT_SUCCESS == 0 && EXIT_FAILURE == 1 && RAND_MAX == 2147483647 && EOF == -1
              && sizeof(div_t) == 8 && sizeof(ldiv_t) == 16
              && same<std::div_t, div_t>, "");

// <type_traits>
static_assert(std::is_same<int32_t, int>::value && std::is_same_v<uint64_t, unsigned long>
              && std::is_integral<int64_t>::value && std::is_floating_point_v<float>
              && std::is_signed<long>::value && !std::is_signed_v<size_t>
              && std::is_trivially_copyable<float4>::value && std::integral_constant<int, 3>::value == 3
              && std::true_type::value && std::is_base_of<std::false_type, std::is_void<int>>::value
              && std::is_convertible_v<int, long> && std::is_pointer_v<int*>, "");
static_assert(same<std::enable_if_t<true, int>, int> && same<std::conditional_t<false, int, float>, float>
              && same<std::conditional<true, int, float>::type, int>
              && same<std::remove_cv_t<const volatile int>, int> && same<std::decay_t<int[3]>, int*>
              && same<std::make_unsigned_t<long>, unsigned long> && same<std::common_type_t<int, long>, long>
              && same<std::remove_reference_t<int&&>, int> && same<std::add_pointer_t<int>, int*>
              && same<std::underlying_type_t<std::byte>, unsigned char>, "");

// <utility>, <tuple>, <array>, <algorithm>, <functional>, <iterator>, <numeric>
constexpr std::pair<int, float> P(1, 2.f);
constexpr std::tuple<int, char, long> T(1, 'a', 3L);
constexpr std::array<int, 3> A{{1, 5, 3}};
constexpr int C[3] = {4, 5, 6};
static_assert(P.first == 1 && std::get<1>(P) == 2.f && std::make_pair(1, 2).second == 2
              && std::tuple_size<std::pair<int, float>>::value == 2 && std::tuple_size_v<decltype(T)> == 3
              && same<std::tuple_element_t<0, std::pair<int, float>>, int> && std::get<2>(T) == 3L
              && std::get<1>(std::make_tuple(1, 2.0)) == 2.0 && A.size() == 3 && A[1] == 5
              && std::tuple_size<decltype(A)>::value == 3 && std::make_index_sequence<4>::size() == 4
              && same<decltype(std::declval<int&>()), int&> && std::forward<int>(7) == 7
              && noexcept(std::swap(std::declval<int&>(), std::declval<int&>())), "");
static_assert(std::min(1, 2) == 1 && std::max({1, 5, 3}) == 5 && std::clamp(7, 0, 5) == 5
              && std::plus<int>()(1, 2) == 3 && std::less<>()(1, 2) && std::gcd(12, 18) == 6
              && std::lcm(4, 6) == 12 && std::size(C) == 3
              && std::distance(std::begin(C), std::end(C)) == 3, "");

// <cuda.h>
static_assert(sizeof(CUtensorMap) == 128 && alignof(CUtensorMap) == (__CUDACC_VER_MAJOR__ >= 13 ? 128 : 64)
              && CU_TENSOR_MAP_NUM_QWORDS == 16 && same<cuuint64_t, uint64_t> && same<cuuint32_t, unsigned>
              && same<CUdeviceptr, unsigned long long> && sizeof(CUtexObject) == 8
              && CUDA_VERSION == __CUDACC_VER_MAJOR__ * 1000 + __CUDACC_VER_MINOR__ * 10, "");

__global__ void tma(const __grid_constant__ CUtensorMap map, unsigned long* out) { out[0] = map.opaque[3]; }

__global__ void meaning(float* f, double* d, int* i, long* l, char* c) {
  float x = f[0];
  printf("%d %" PRId64 " %f\n", i[0], (int64_t)l[0], (double)x);
  std::printf("%s\n", "std");
  f[1] = sqrtf(x) + fabsf(x) + std::sqrt(x) + std::fabs(x) + std::abs(x) + std::fmax(x, 1.f)
         + std::fmin(x, 2.f) + fmaxf(x, 3.f) + std::pow(x, 2.f) + std::exp(x) + std::floor(x)
         + std::ceil(x) + std::round(x) + std::trunc(x) + std::copysign(x, -1.f) + std::hypot(x, x)
         + std::atan2(x, 1.f) + std::fmod(x, 2.f) + std::cbrt(x) + std::tanh(x) + std::log1p(x);
  d[1] = std::sqrt(d[0]) + sqrt(d[0]) + std::log(d[0]) + std::fma(d[0], d[0], 1.0) + std::abs(d[0]);
  i[1] = isnan(x) + isinf(x) + isfinite(x) + signbit(x) + std::isnan(x) + std::isinf(d[0])
         + std::isfinite(x) + std::signbit(d[0]) + std::abs(i[0]) + abs(i[0]) + std::min(i[0], 3)
         + std::max(i[0], 4) + std::clamp(i[0], 0, 9) + (std::numeric_limits<float>::max() == x)
         + std::fpclassify(x) + std::isnormal(x) + std::ilogb(x) + std::lround(x);
  l[1] = std::abs(l[0]) + labs(l[0]) + llabs((long long)l[0]) + std::numeric_limits<long>::max();
  memcpy(c, c + 8, 8);
  memset(c + 16, 0, 8);
  std::memcpy(c + 24, c, 4);
  std::memset(c + 28, 1, 4);
  assert(x >= 0.f);
  f[2] = INFINITY;
  f[3] = NAN;
  f[4] = -HUGE_VALF;
  f[5] = (float)M_PI + M_PIf;
  d[2] = HUGE_VAL;
  std::pair<int, float> pr(i[2], x);
  std::array<int, 3> arr{{i[0], i[1], i[2]}};
  std::initializer_list<int> il = {i[0], i[1]};
  l[2] = clock() + std::clock() + (long)il.size() + *il.begin();
  i[3] = pr.first + (int)std::get<1>(pr) + arr[1] + (int)arr.size() + std::get<0>(std::make_tuple(i[5], x));
}

__global__ void bits(unsigned* o, unsigned long* q) {
  o[0] = __float_as_uint(INFINITY);
  o[1] = __float_as_uint(NAN);
  o[2] = __float_as_uint(-HUGE_VALF);
  q[0] = (unsigned long)__double_as_longlong(HUGE_VAL);
}

namespace plain {
using namespace std;  // C and std names side by side: no ambiguity
__device__ float g(float x, int n, double y) {
  return sqrt(x) + abs(n) + abs(x) + fabs(x) + max(n, 2) + min(x, 1.f) + pow(x, 2.f) + sqrt(y)
         + (isnan(x) ? 1 : 0) + fmax(x, 0.f) + floor(y) + numeric_limits<int>::max() + INT32_MAX;
}
}
__global__ void uses_plain(float* f) { f[0] = plain::g(f[1], (int)f[2], f[3]); }
"""


@pytest.fixture(scope="module")
def meaning_ptx():
    return nvrtc(MEANING), nvcc(MEANING)


def test_meaning_matches_nvcc(meaning_ptx):
    # the static_asserts above hold for both compilers; the kernels compile in both
    for ptx in meaning_ptx:
        assert ".entry _Z7meaningPfPdPiPlPc(" in ptx     # long* mangles as l in both
        assert ".entry _Z3tma14CUtensorMap_stPm(" in ptx
        assert ".entry _Z10uses_plainPf(" in ptx


def test_printf_is_vprintf_and_constants_have_ieee_bits(meaning_ptx):
    stored = []
    for ptx in meaning_ptx:
        body = entry(ptx, "_Z7meaningPfPdPiPlPc")
        assert len(re.findall(r"call\.uni[^;]*\bvprintf\b", body, re.S)) == 2
        body = entry(ptx, "_Z4bitsPjPm")
        stored.append({int(v) for v in re.findall(r"(?:mov|st\.global)\.[ub]\d+\s+[^,]+,\s*(-?\d+);", body)})
    # INFINITY, NAN (the quiet NaN of glibc's __builtin_nanf("")), -HUGE_VALF, HUGE_VAL
    assert {0x7F800000, 0x7FC00000, -0x800000, 0x7FF0000000000000} <= stored[0] == stored[1]


ASSERTS = r"""
#include <cassert>
__global__ void on(int x) { assert(x > 0 && "positive"); }
#define NDEBUG
#include <cassert>
__global__ void off(int x) { assert(x > 0 && "never"); }
#undef NDEBUG
#include <assert.h>
__global__ void again(int x) { assert(x != 7); }
"""


@pytest.mark.parametrize("compile_", [nvrtc, nvcc], ids=["nvrtc", "nvcc"])
def test_assert_reports_like_nvcc_and_honours_ndebug(compile_):
    ptx = compile_(ASSERTS)
    assert "__assertfail" in entry(ptx, "_Z2oni")
    assert "__assertfail" not in entry(ptx, "_Z3offi")
    assert "__assertfail" in entry(ptx, "_Z5againi")
    # expression, file, function: what the device assert message prints
    assert {'x > 0 && "positive"', "cell.cu", "void on(int)", "x != 7", "void again(int)"} <= strings(ptx)
    assert not any("never" in s for s in strings(ptx))


def test_assert_message_parts_equal_nvccs():
    ours, theirs = nvrtc(ASSERTS), nvcc(ASSERTS)
    assert strings(ours) == strings(theirs)
    line = r"st\.param\.b32\s+\[param2\+0\],\s*(\d+);"  # __assertfail's line argument
    assert re.findall(line, ours) == re.findall(line, theirs) == ["3", "9"]


TOOLKIT = """#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <cub/block/block_reduce.cuh>
"""
OURS = """#include <cstdint>
#include <cstdio>
#include <cassert>
#include <cmath>
#include <climits>
#include <type_traits>
#include <utility>
#include <limits>
#include <algorithm>
"""
INTEROP = r"""
static_assert(std::is_same<int64_t, long>::value && std::is_same<cuda::std::int64_t, int64_t>::value
              && std::is_same<std::uint64_t, cuda::std::uint64_t>::value, "one int64_t for all");
__global__ void reduce(const int64_t* in, int64_t* out, __half* h) {
  namespace cg = cooperative_groups;
  using R = cub::BlockReduce<int64_t, 128>;
  __shared__ typename R::TempStorage tmp;
  int64_t v = R(tmp).Sum(in[threadIdx.x]);
  cg::thread_block b = cg::this_thread_block();
  b.sync();
  if (threadIdx.x == 0) {
    out[0] = std::max(v, (int64_t)0);
    h[0] = __hadd(h[0], __float2half(sqrtf(2.f)));
    printf("%ld\n", v);
    assert(v >= INT64_MIN);
  }
}
"""


@pytest.mark.parametrize("first", ["ours", "toolkit"])
def test_toolkit_headers_in_either_order(first):
    order = OURS + TOOLKIT if first == "ours" else TOOLKIT + OURS
    assert ".entry _Z6reducePKlPlP6__half(" in nvrtc(order + INTEROP)


def test_only_the_named_headers_suffice():
    # the compile may pass just the headers a cell names: each one is self-contained
    named = {name: HEADERS[name] for name in ("stdint.h", "cinttypes", "cuda.h", "assert.h", "math.h")}
    src = "".join(f"#include <{n}>\n" for n in named) + TOOLKIT + r"""
static_assert(cuda::std::is_same<int64_t, long>::value && cuda::std::is_same<cuda::std::int64_t, long>::value, "");
__global__ void k(const __grid_constant__ CUtensorMap m, float* f) { assert(f); f[0] = sqrtf(M_PI); }
"""
    assert ".entry _Z1k14CUtensorMap_stPf(" in nvrtc(src, headers=named)


def test_cxx20_names_match_nvcc():
    src = "#include <bit>\n" + ALL_INCLUDES + r"""
static_assert(std::popcount(0xF0u) == 4 && std::bit_cast<unsigned>(1.0f) == 0x3f800000u
              && std::has_single_bit(64u) && std::is_same_v<std::remove_cvref_t<const int&>, int>
              && std::is_same_v<std::type_identity_t<int>, int>, "");
__host__ __device__ constexpr int sum3() { std::array<int, 3> a{{1, 2, 3}}; return std::accumulate(a.begin(), a.end(), 0); }
static_assert(sum3() == 6, "");
__global__ void k(int* p, float* f) {
  std::swap(p[0], p[1]);
  int m = std::move(p[2]);
  std::pair<int, int> q = std::make_pair(m, std::forward<int&>(p[3]));
  std::swap(q, q);
  std::array<int, 4> a{{p[0], p[1], p[2], p[3]}}, b{};
  std::move(a.begin(), a.end(), b.begin());
  std::fill(a.begin(), a.end(), std::move(b[1]));
  p[6] = *std::max_element(b.begin(), b.end()) + a[0];
  f[0] = std::lerp(f[1], f[2], 0.5f);
  p[4] = std::popcount((unsigned)p[5]) + q.second;
}
"""
    for ptx in (nvrtc(src, "c++20"), nvcc(src, "c++20")):
        assert ".entry _Z1kPiPf(" in ptx


def test_std_templates_code_specialises_and_names_utility_brings():
    src = r"""#include <utility>
#include <tuple>
#include <limits>
struct P2 {
  int a; float b;
  template <std::size_t I> __host__ __device__ constexpr auto get() const {
    if constexpr (I == 0) return a; else return b;
  }
};
struct M { int v; };
namespace std {
template <> struct tuple_size<P2> : std::integral_constant<std::size_t, 2> {};
template <std::size_t I> struct tuple_element<I, P2> { using type = std::conditional_t<I == 0, int, float>; };
template <> struct numeric_limits<M> {
  static constexpr bool is_specialized = true;
  __host__ __device__ static constexpr M max() { return M{7}; }
};
}
static_assert(std::tuple_size_v<P2> == 2 && std::is_same<std::tuple_element_t<1, P2>, float>::value
              && std::numeric_limits<M>::is_specialized && std::numeric_limits<M>::max().v == 7
              && !std::numeric_limits<P2>::is_specialized && std::numeric_limits<const int>::max() == 2147483647
              && std::is_same<std::size_t, unsigned long>::value && std::is_same<std::nullptr_t, decltype(nullptr)>::value, "");
__global__ void k(float* o) {
  P2 p{1, 2.f};
  auto [x, y] = p;
  auto [u, v] = std::make_pair(3, 4.f);
  auto [q, r] = std::make_tuple(5, 6.0);
  o[0] = x + y + u + v + q + r + std::numeric_limits<M>::max().v;
}
"""
    for ptx in (nvrtc(src), nvcc(src)):
        assert ".entry _Z1kPf(" in ptx


def test_macro_headers_work_below_cxx17_as_with_nvcc():
    # libcu++ 3 needs C++17; the headers that are types and macros only do not
    src = """#include <cstdint>
#include <stdint.h>
#include <cinttypes>
#include <climits>
#include <cfloat>
#include <cstdio>
#include <cassert>
#include <ctime>
#include <cuda.h>
template <class A, class B> struct same { static const bool value = false; };
template <class A> struct same<A, A> { static const bool value = true; };
static_assert(same<int64_t, long>::value && same<std::uint64_t, unsigned long>::value
              && same<decltype(LONG_MAX), long>::value && INT64_MAX == LONG_MAX
              && FLT_MAX == 3.40282346638528859811704183484516925e+38F && DECIMAL_DIG == 21
              && sizeof(PRIu64) == 3 && sizeof(CUtensorMap) == 128, "");
__global__ void k(int64_t* p) { assert(p); printf("%" PRId64 "\\n", p[0]); }
"""
    for ptx in (nvrtc(src, "c++14"), nvcc(src, "c++14")):
        assert ".entry _Z1kPl(" in ptx


def test_every_header_has_banner_guard_and_no_includes_of_its_siblings():
    for name, text in HEADERS.items():
        first = text.splitlines()[0]
        assert first.startswith(f"// Supplied by cuda-magic for NVRTC: <{name}>"), name
        assert " built on " in first, name
        guard = re.search(r"^#ifndef (\w+)\n#define \1$", text, re.M)
        assert guard, f"{name} has no include guard"
        included = set(re.findall(r"#include <([^>]+)>", text))
        assert not included & set(HEADERS), f"{name} includes {included & set(HEADERS)}"


def test_nothing_from_glibc_is_needed():
    # every include left in the headers is libcu++'s own (CUB's in <cub/cub.cuh>)
    for name, text in HEADERS.items():
        for inc in re.findall(r"#include <([^>]+)>", text):
            assert inc.startswith("cub/" if name == "cub/cub.cuh" else "cuda/std/"), (name, inc)


@pytest.mark.parametrize("include, hint", [
    ("mma.h", "pip install 'cuda-toolkit[crt]'"),
    ("crt/mma.h", "pip install 'cuda-toolkit[crt]'"),
    ("curand_kernel.h", "pip install 'cuda-toolkit[curand]'"),
    ("<curand.h>", "pip install 'cuda-toolkit[curand]'"),
    ("cute/tensor.hpp", "pip install 'cuda-magic[cutlass]' (the nvidia-cutlass wheel)"),
    ("cutlass/gemm/device/gemm.h", "pip install 'cuda-magic[cutlass]' (the nvidia-cutlass wheel)"),
    ("cub/cub.cuh", "pip install 'cuda-toolkit[cccl]'"),
    ("thrust/sort.h", "pip install 'cuda-toolkit[cccl]'"),
    ("cuda/std/span", "pip install 'cuda-toolkit[cccl]'"),
    ("nv/target", "pip install 'cuda-toolkit[cccl]'"),
    ("iostream", "host-only header: compile with --compiler nvcc"),
    ("vector", "host-only header: compile with --compiler nvcc"),
    ('"omp.h"', "host-only header: compile with --compiler nvcc"),
    ("cuda_runtime.h", "host-only header: compile with --compiler nvcc"),
    ("thread", "host-only header: compile with --compiler nvcc"),
    ("optional", "host-only header: use <cuda/std/optional> (cuda::std::) in device code, "
                 "or compile with --compiler nvcc"),
    ("my/kernels.cuh", "add its directory with -I DIR (in the nvrtc list), define it with "
                       "%%cuda_header NAME, or use --compiler nvcc"),
    ("cudart_helpers.h", "add its directory with -I DIR (in the nvrtc list), define it with "
                         "%%cuda_header NAME, or use --compiler nvcc"),
])
def test_missing_hint(include, hint):
    assert missing_hint(include) == hint


CLASSIFY = r"""#include <cmath>
#include <cfloat>
static_assert(std::fpclassify(1e-40f) == FP_SUBNORMAL && std::fpclassify(0.0) == FP_ZERO
              && std::fpclassify(-0.0f) == FP_ZERO && std::fpclassify(INFINITY) == FP_INFINITE
              && std::fpclassify(-HUGE_VAL) == FP_INFINITE && std::fpclassify(NAN) == FP_NAN
              && std::fpclassify(1.5) == FP_NORMAL && std::fpclassify(FLT_MIN) == FP_NORMAL
              && std::fpclassify(DBL_TRUE_MIN) == FP_SUBNORMAL && std::fpclassify(FLT_MAX) == FP_NORMAL
              && std::isnormal(1.0f) && !std::isnormal(1e-40f) && !std::isnormal(INFINITY)
              && std::isgreater(2, 1.0) && !std::isgreater(NAN, 1.0f) && std::islessequal(1.f, 1.0)
              && std::isless(-1, 0u) && std::islessgreater(1.f, 2.f)
              && !std::islessgreater(NAN, 2.f) && std::isgreaterequal(2.0, 2)
              && std::isunordered(NAN, 1) && !std::isunordered(1.f, 2), "");
__global__ void k(float* x, int* c) {
  c[0] = std::fpclassify(x[0]) + 8 * std::isgreater(x[0], x[1]) + 16 * std::isunordered(x[0], 2.0);
}
"""


def test_fpclassify_and_comparisons_without_libcu():
    """<cmath> under NVRTC has no libcu++ in it (an edit of a cell that includes it compiles at a
    bare kernel's speed): fpclassify, isnormal and the quiet comparisons are cuda-magic's, on
    __builtin_bit_cast; their values pinned here (nvcc's float/double ones are not constexpr, so
    the shared meaning test pins the integer ones and the types)."""
    nvrtc(CLASSIFY)
    text = HEADERS["cmath"]
    import re
    assert not re.search(r"#include <cuda/std/", text.split("#if __cplusplus >= 202002L")[0])
    nvrtc("#include <cmath>\nconstexpr float f = std::lerp(1.f, 3.f, .5f);\n"
          "static_assert(f == 2.f, \"\");\n__global__ void k() {}\n", std="c++20")

