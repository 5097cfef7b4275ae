"""cuda-magic's own <tuple> and <array> for NVRTC (cuda_magic/compile/thin/tuple.h, array.h):
std::tuple and std::array written for device code on libcu++'s <cuda/std/type_traits> only.

The same source is compiled by NVRTC with the supplied headers (C++17 and C++20) and by nvcc with
g++'s real libstdc++ (C++17 and C++20), so the static_asserts pin nvcc's meaning: types, values,
which constructors exist and are explicit, layout (sizeof) and the traits code tests.  What
libstdc++ makes constexpr only from C++20 (tuple assignment, array::swap/fill/comparisons,
to_array) is ours in C++17 too: those parts are checked by nvcc in C++20 only.
"""

from __future__ import annotations

import pytest

from cuda_magic.compile.backends import CompileError, get_backend
from cuda_magic.compile.backends.nvrtc import RETRIED
from cuda_magic.compile.stdheaders import HEADERS, _CXX
from test_stdheaders import nvcc, nvrtc

MEANING = r"""#include <tuple>
#include <array>
#include <utility>
template <class A, class B> constexpr bool same = std::is_same<A, B>::value;
struct E {};
struct F final {};
struct Big { int a; char c; };
// layout: libstdc++'s
static_assert(sizeof(std::tuple<E, int>) == 4 && sizeof(std::tuple<int, E>) == 4 && sizeof(std::tuple<E, E>) == 2
              && sizeof(std::tuple<>) == 1 && sizeof(std::tuple<char, int, char>) == 12
              && sizeof(std::tuple<char, char, int>) == 8 && sizeof(std::tuple<F, int>) == 8
              && sizeof(std::tuple<std::tuple<int, char>, char>) == 12 && sizeof(std::tuple<Big, char>) == 12
              && sizeof(std::tuple<int&, char>) == 16 && alignof(std::tuple<char, double>) == 8, "");
static_assert(sizeof(std::array<int, 0>) == 1 && sizeof(std::array<int, 3>) == 12 && alignof(std::array<double, 2>) == 8, "");
// traits
static_assert(std::is_trivially_copy_constructible_v<std::tuple<int, float>> && !std::is_trivially_copy_assignable_v<std::tuple<int>>
              && std::is_trivially_destructible_v<std::tuple<int>> && std::is_trivially_copyable_v<std::array<int, 3>>
              && std::is_aggregate_v<std::array<int, 2>> && std::is_aggregate_v<std::array<int, 0>>
              && !std::is_copy_assignable_v<std::tuple<const int>> && std::is_copy_assignable_v<std::tuple<int&>>
              && std::is_default_constructible_v<std::tuple<int, E>> && !std::is_default_constructible_v<std::tuple<int&>>
              && std::is_nothrow_move_constructible_v<std::tuple<int, float>> && std::is_nothrow_swappable_v<std::tuple<int>>
              && std::is_constructible_v<std::tuple<int, long>, std::pair<int, int>> && !std::is_constructible_v<std::tuple<int>, std::pair<int, int>>
              && std::is_convertible_v<std::tuple<int, int>, std::tuple<long, long>>
              && std::is_convertible_v<std::pair<int, int>, std::tuple<long, long>>, "");
struct X { __host__ __device__ explicit X(int) {} };
struct NoDefault { __host__ __device__ NoDefault(int) {} };
struct ExplDefault { explicit ExplDefault() = default; };
static_assert(std::is_constructible_v<std::tuple<X>, int> && !std::is_convertible_v<int, std::tuple<X>>
              && std::is_constructible_v<std::tuple<X, int>, std::tuple<int, int>>
              && !std::is_convertible_v<std::tuple<int, int>, std::tuple<X, int>>
              && !std::is_convertible_v<std::pair<int, int>, std::tuple<X, int>>
              && std::is_constructible_v<std::tuple<X, int>, std::pair<int, int>>
              && !std::is_default_constructible_v<std::tuple<NoDefault>>
              && std::is_default_constructible_v<std::tuple<ExplDefault>>
              && !std::is_convertible_v<std::tuple<int*>, std::tuple<long>>
              && std::is_constructible_v<std::tuple<std::tuple<int>>, std::tuple<int>>
              && std::is_copy_constructible_v<std::tuple<std::tuple<int>>>, "");

// types
static_assert(same<std::tuple_element_t<1, std::tuple<int, float&, long>>, float&>
              && same<std::tuple_element_t<1, const std::tuple<int, float, long>>, const float>
              && std::tuple_size<const std::tuple<int, int>>::value == 2 && std::tuple_size_v<std::tuple<>> == 0
              && same<decltype(std::make_tuple(1, 'a', 2.0)), std::tuple<int, char, double>>
              && same<decltype(std::forward_as_tuple(1, std::declval<int&>())), std::tuple<int&&, int&>>
              && same<decltype(std::tie(std::declval<int&>(), std::declval<const float&>())), std::tuple<int&, const float&>>
              && same<decltype(std::get<0>(std::declval<std::tuple<int>&>())), int&>
              && same<decltype(std::get<0>(std::declval<const std::tuple<int>&>())), const int&>
              && same<decltype(std::get<0>(std::declval<std::tuple<int>&&>())), int&&>
              && same<decltype(std::get<0>(std::declval<const std::tuple<int>&&>())), const int&&>
              && same<decltype(std::get<0>(std::declval<std::tuple<int&>&&>())), int&>
              && same<decltype(std::get<0>(std::declval<const std::tuple<int&>&>())), int&>
              && same<decltype(std::get<long>(std::declval<std::tuple<int, long>&>())), long&>
              && same<decltype(std::get<long>(std::declval<const std::tuple<int, long>&>())), const long&>
              && same<decltype(std::get<long>(std::declval<std::tuple<int, long>&&>())), long&&>
              && same<decltype(std::get<long>(std::declval<const std::tuple<int, long>&&>())), const long&&>
              && same<decltype(std::tuple_cat(std::tuple<int>(), std::make_pair(1.f, 'c'), std::tuple<>(), std::tuple<long&>(std::declval<long&>()))),
                      std::tuple<int, float, char, long&>>
              && same<decltype(std::tuple_cat()), std::tuple<>>
              && same<decltype(std::tuple_cat(std::array<int, 2>{})), std::tuple<int, int>>
              && noexcept(std::get<0>(std::declval<std::tuple<int>&>()))
              && noexcept(std::declval<std::tuple<int>&>().swap(std::declval<std::tuple<int>&>())), "");
// copy-list-initialisation (the implicit constructors)
__host__ __device__ constexpr std::tuple<int, float> two() { return {1, 2.f}; }
__host__ __device__ constexpr std::array<int, 2> pair_of() { return {3, 4}; }
static_assert(std::get<1>(two()) == 2.f && pair_of()[1] == 4 && std::get<0>(std::tuple<long, int>{two()}) == 1, "");
// CTAD
constexpr int gi = 1;
constexpr std::tuple t1(1, 2.f, 'c');
constexpr std::tuple t2(std::make_pair(1, 2L));
constexpr std::tuple t3 = t1;
constexpr std::tuple<> t0;
static_assert(same<decltype(t1), const std::tuple<int, float, char>> && same<decltype(t2), const std::tuple<int, long>>
              && same<decltype(t3), const std::tuple<int, float, char>>, "");
constexpr std::array a1{1, 2, 3};
constexpr std::array a0 = std::array<int, 0>{};
static_assert(same<decltype(a1), const std::array<int, 3>> && a0.empty() && a0.size() == 0 && a0.begin() == a0.end(), "");

// values
constexpr std::tuple<int, char, long> T(1, 'a', 3L);
constexpr std::tuple<long, int, double> Tc = T;                 // converting
constexpr std::tuple<int, long> Tp = std::make_pair(4, 5);      // from pair
constexpr std::tuple<int, double> Td{};                         // value-initialised
static_assert(std::get<0>(T) == 1 && std::get<char>(T) == 'a' && std::get<2>(Tc) == 3.0 && std::get<1>(Tp) == 5L
              && std::get<0>(Td) == 0 && std::get<1>(Td) == 0.0 && std::get<1>(std::move(T)) == 'a', "");
static_assert(std::make_tuple(1, 2) == std::make_tuple(1L, 2.0) && std::make_tuple(1, 2) != std::make_tuple(1, 3)
              && std::make_tuple(1, 2) < std::make_tuple(1, 3) && std::make_tuple(2, 0) > std::make_tuple(1, 9)
              && std::make_tuple(1, 2) <= std::make_tuple(1, 2) && std::make_tuple(1, 2) >= std::make_tuple(1, 2)
              && !(std::make_tuple(1, 3) <= std::make_tuple(1, 2)) && !(std::make_tuple(0, 3) >= std::make_tuple(1, 2))
              && std::tuple<>() == std::tuple<>() && !(std::tuple<>() < std::tuple<>()), "");
constexpr auto Cat = std::tuple_cat(T, std::make_pair(2.5f, 7u), std::array<short, 2>{{8, 9}}, std::tuple<>());
static_assert(std::tuple_size_v<decltype(Cat)> == 7 && std::get<3>(Cat) == 2.5f && std::get<4>(Cat) == 7u
              && std::get<6>(Cat) == 9 && same<std::tuple_element_t<5, decltype(Cat)>, const short>, "");
struct Pt { int x, y; __host__ __device__ constexpr Pt(int a, int b) : x(a), y(b) {} };
__host__ __device__ constexpr int add3(int a, int b, int c) { return a + b + c; }
struct Mul { __host__ __device__ constexpr long operator()(int a, long b) const { return a * b; } };
static_assert(std::apply(add3, std::make_tuple(1, 2, 3)) == 6 && std::apply(add3, std::array<int, 3>{{4, 5, 6}}) == 15
              && std::apply(Mul{}, std::make_pair(3, 4L)) == 12
              && std::make_from_tuple<Pt>(std::make_tuple(3, 4)).y == 4
              && std::make_from_tuple<Pt>(std::make_pair(5, 6)).x == 5, "");

#if __cplusplus >= 202002L || defined(__CUDACC_RTC__)  // constexpr in libstdc++ from C++20 (ours: C++17 too)
__host__ __device__ constexpr int assign_and_swap() {
  int a = 1, b = 2;
  std::tie(a, b) = std::make_tuple(10, 20);          // through references
  std::tuple<int, int> p(3, 4), q(5, 6);
  p.swap(q);
  std::swap(p, q);
  swap(p, q);                                         // ADL
  std::tuple<long, long> w;
  w = p;                                              // converting assignment
  w = std::make_pair(7, 8);                           // from a pair
  std::tie(a, std::ignore) = std::make_pair(a + 1, 99);
  std::tuple<int&> r(b);
  r = std::tuple<int>(21);
  return a * 1000 + b + std::get<0>(p) * 10 + int(std::get<1>(w)) * 100000;
}
static_assert(assign_and_swap() == 11 * 1000 + 21 + 50 + 800000, "");
#endif

__host__ __device__ constexpr int bindings() {
  auto [x, y, z] = std::make_tuple(1, 2, 3);
  std::tuple<int, int> t(4, 5);
  auto& [u, v] = t;
  u = 40;
  auto [p, q] = std::array<int, 2>{{6, 7}};
  return x + y + z + std::get<0>(t) + v + p + q;
}
static_assert(bindings() == 1 + 2 + 3 + 40 + 5 + 6 + 7, "");

// piecewise pair, pair from tuple elements
struct Two { int a; long b; __host__ __device__ constexpr Two(int x, long y) : a(x), b(y) {} };
#if __cplusplus >= 202002L || defined(__CUDACC_RTC__)  // constexpr in libstdc++ from C++20 (ours: C++17 too)
constexpr std::pair<Two, int> PW(std::piecewise_construct, std::forward_as_tuple(1, 2L), std::forward_as_tuple(3));
static_assert(PW.first.b == 2L && PW.second == 3, "");
#endif

// user specialisation of the tuple protocol still works beside ours
struct P2 { int a; float b; template <std::size_t I> __host__ __device__ constexpr auto get() const { if constexpr (I == 0) return a; else return b; } };
namespace std {
template <> struct tuple_size<P2> : std::integral_constant<std::size_t, 2> {};
template <std::size_t I> struct tuple_element<I, P2> { using type = std::conditional_t<I == 0, int, float>; };
}
static_assert(std::tuple_size_v<P2> == 2 && std::tuple_size<const P2>::value == 2 && same<std::tuple_element_t<1, P2>, float>
              && same<std::tuple_element_t<1, const P2>, const float>, "");

// array
constexpr std::array<int, 4> A{{3, 1, 4, 1}};
static_assert(A.size() == 4 && A.max_size() == 4 && !A.empty() && A[2] == 4 && A.at(1) == 1 && A.front() == 3 && A.back() == 1
              && *A.data() == 3 && *(A.end() - 1) == 1 && *A.rbegin() == 1 && A.rbegin()[1] == 4 && *(A.rend() - 1) == 3
              && A.rend() - A.rbegin() == 4 && *A.crbegin() == 1 && *A.cbegin() == 3 && A.cend() - A.cbegin() == 4
              && std::get<2>(A) == 4 && std::get<0>(std::array<int, 1>{{5}}) == 5
              && std::tuple_size_v<decltype(A)> == 4 && std::tuple_size<const std::array<int, 4>>::value == 4
              && same<std::tuple_element_t<0, std::array<float, 2>>, float>
              && same<std::tuple_element_t<0, const std::array<float, 2>>, const float>
              && same<decltype(std::get<0>(std::declval<std::array<int, 2>&&>())), int&&>
              && same<decltype(std::get<0>(std::declval<const std::array<int, 2>&>())), const int&>
              && same<decltype(std::get<0>(std::declval<const std::array<int, 2>&&>())), const int&&>
              && same<std::array<int, 3>::iterator, int*> && same<std::array<int, 3>::const_iterator, const int*>
              && same<std::array<int, 3>::size_type, std::size_t> && same<std::array<int, 3>::difference_type, std::ptrdiff_t>
              && same<std::array<int, 3>::value_type, int> && same<std::array<int, 3>::reference, int&>
              && same<std::array<int, 3>::const_pointer, const int*>
              && same<decltype(*std::declval<std::array<int, 3>::const_reverse_iterator>()), const int&>
              && same<decltype(std::get<0>(std::declval<std::array<int, 2>&>())), int&>, "");
#if __cplusplus >= 202002L || defined(__CUDACC_RTC__)  // constexpr in libstdc++ from C++20 (ours: C++17 too)
static_assert(same<decltype(std::to_array({1, 2, 3})), std::array<int, 3>>
              && same<decltype(std::to_array("ab")), std::array<char, 3>> && std::to_array({5, 6})[1] == 6, "");
static_assert(std::array<int, 2>{{1, 2}} == std::array<int, 2>{{1, 2}} && std::array<int, 2>{{1, 2}} != std::array<int, 2>{{1, 3}}
              && std::array<int, 2>{{1, 2}} < std::array<int, 2>{{1, 3}} && std::array<int, 2>{{2, 0}} > std::array<int, 2>{{1, 3}}
              && std::array<int, 2>{{1, 2}} <= std::array<int, 2>{{1, 2}} && std::array<int, 2>{{1, 2}} >= std::array<int, 2>{{1, 2}}
              && std::array<int, 0>{} == std::array<int, 0>{} && !(std::array<int, 0>{} < std::array<int, 0>{}), "");
__host__ __device__ constexpr int array_ops() {
  std::array<int, 3> a{1, 2, 3}, b{};
  b.fill(7);
  a.swap(b);
  std::swap(a, b);
  swap(a, b);
  int s = 0;
  for (int v : a) s += v;
  for (auto it = b.rbegin(); it != b.rend(); ++it) s = s * 10 + *it;
  std::array<int, 0> z{};
  z.fill(1);
  z.swap(z);
  return s + (z.data() == nullptr) * 100000 + int(z.size());
}
static_assert(array_ops() == 21 * 1000 + 321 + 100000, "");
#endif

#if __cplusplus >= 202002L || defined(__CUDACC_RTC__)  // libstdc++'s tuple assignment and array::swap: constexpr from C++20
__global__ void use(int* p, float* f) {
  std::tuple<int, float> t(p[0], f[0]);
  auto [i, x] = t;
  int a, b;
  std::tie(a, b) = std::make_tuple(p[1], p[2]);
  auto c = std::tuple_cat(t, std::make_pair(p[3], f[1]), std::forward_as_tuple(a, b));
  std::get<2>(c) += std::get<int&>(std::tie(b, x));
  std::tuple ct(p[8], std::make_pair(p[9], f[3]));
  std::tuple<long, double> conv = t;
  conv = std::make_pair(p[10], f[4]);
  std::pair<Two, int> pw(std::piecewise_construct, std::forward_as_tuple(p[11], 2L), std::forward_as_tuple(p[12]));
  std::array<int, 4> arr{p[4], p[5], p[6], p[7]};
  std::array brr{1, 2, 3, 4};
  arr.swap(brr);
  std::swap(t, t);
  arr.fill(p[13]);
  int s = 0;
  for (auto it = arr.rbegin(); it != arr.rend(); ++it) s += *it;
  auto [e0, e1, e2, e3] = brr;
  p[0] = i + std::get<2>(c) + std::get<4>(c) + std::get<5>(c) + std::apply([](int u, float v) { return u + (int)v; }, t)
         + std::get<1>(arr) + s + arr.at(2) + arr.front() + arr.back() + *arr.data() + (arr < brr) + (arr == brr)
         + (t == std::make_tuple(1, 2.f)) + (t < std::make_tuple(p[14], f[5])) + std::get<0>(std::tuple_cat(arr))
         + std::get<1>(ct).first + int(std::get<long>(conv)) + pw.first.a + pw.second + e0 + e3;
  f[0] = x + std::get<1>(c) + std::get<3>(c) + std::make_from_tuple<float>(std::make_tuple(f[2])) + float(std::get<1>(conv));
}
#endif
"""


def nvrtc_out(source: str, std: str = "c++17", flags=()):
    """NVRTC's output (PTX and log) with the supplied headers."""
    return get_backend("nvrtc").compile(source, arch="sm_90a", target_format="ptx", ptxas=[],
                                        headers=HEADERS, flags=[f"-std={std}", *flags])


@pytest.mark.parametrize("std", ["c++17", "c++20"])
def test_tuple_and_array_mean_what_they_mean_under_nvcc(std):
    out = nvrtc_out(MEANING, std)
    assert RETRIED not in out.log     # compiled as it is: no -default-device retry
    ours, theirs = out.ptx, nvcc(MEANING, std)
    assert ".entry _Z3usePiPf(" in ours          # ours: the kernel in C++17 too
    if std == "c++20":
        assert ".entry _Z3usePiPf(" in theirs


def test_every_name_of_tuple_and_array_is_declared():
    for header in ("tuple", "array"):
        src = f"#include <{header}>\n" + "".join(f"using std::{n};\n" for n in _CXX[header][0])
        src += "using std::tuple_size; using std::tuple_element; using std::tuple_size_v; using std::tuple_element_t;\n"
        for std in ("c++17", "c++20"):
            nvrtc(src + "__global__ void k() {}\n", std)
        nvcc(src + "__global__ void k() {}\n", "c++20")


def test_ignore_is_usable_in_device_code():
    # std::ignore is a __device__ constant (as libcu++'s cuda::std::ignore): tie(x, ignore) binds a
    # reference to it.  nvcc refuses libstdc++'s host one in device code ("undefined in device code").
    src = r"""#include <tuple>
__global__ void k(int* p) {
  int a;
  std::tie(a, std::ignore) = std::make_tuple(p[1], p[2]);
  std::ignore = p[3];
  p[0] = a;
}
"""
    assert ".entry _Z1kPi(" in nvrtc(src)


MIXED = r"""#include <tuple>
#include <array>
#include <utility>
#include <cuda/std/tuple>
#include <cuda/std/array>
#include <cuda/std/utility>
static_assert(!std::is_same_v<std::tuple<int>, cuda::std::tuple<int>>
              && !std::is_same_v<std::array<int, 2>, cuda::std::array<int, 2>>, "");
static_assert(std::tuple_size_v<cuda::std::tuple<int, int>> == 2 && std::tuple_size_v<std::tuple<int>> == 1
              && cuda::std::tuple_size_v<cuda::std::array<int, 3>> == 3
              && std::tuple_size<const std::array<int, 3>>::value == 3, "");
__global__ void k(int* p) {
  std::tuple<int, float> a(p[0], 1.f);
  cuda::std::tuple<int, float> b(p[1], 2.f);
  auto [x, y] = a;
  auto [u, v] = b;
  std::array<int, 2> c{p[2], p[3]};
  cuda::std::array<int, 2> d{p[4], p[5]};
  auto [e, f] = c;
  auto [g, h] = d;
  using namespace std;
  swap(a, a);
  std::swap(c, c);
  cuda::std::swap(b, b);
  p[0] = x + u + get<0>(a) + cuda::std::get<0>(b) + e + g + get<1>(c) + cuda::std::get<1>(d) + (int)y + (int)v
         + f + h + std::get<0>(std::tuple_cat(a, c)) + cuda::std::get<0>(cuda::std::tuple_cat(b, d));
}
"""


@pytest.mark.parametrize("std", ["c++17", "c++20"])
def test_beside_libcus_tuple_and_array(std):
    """<tuple>/<array> then <cuda/std/tuple>/<cuda/std/array> in one cell: two families of types
    (as under nvcc), structured bindings of both; with cuda-magic's _CCCL_META_UNROLL_LIMIT too."""
    assert ".entry _Z1kPi(" in nvrtc_out(MIXED, std, ["-D_CCCL_META_UNROLL_LIMIT=10"]).ptx


@pytest.mark.parametrize("body, message", [
    ("std::tuple<int, int> t; std::get<int>(t);", "must occur exactly once"),
    ("std::tuple<int> t; std::get<long>(t);", "must occur exactly once"),
    ("std::tuple<int> a; std::tuple<int, int> b; (void)(a == b);", "equal sizes"),
    ("std::array<int, 2> a{}; std::get<2>(a);", "array index is in range"),
])
def test_misuse_stops_with_libstdcxx_like_message(body, message):
    with pytest.raises(CompileError) as e:
        nvrtc("#include <tuple>\n#include <array>\n__global__ void k() { " + body + " }\n")
    assert message in str(e.value)


@pytest.mark.parametrize("name", ["tuple", "array"])
def test_headers_need_no_default_device_retry(name):
    """Every function in the thin headers is __host__ __device__: NVRTC takes them as they are.
    (One undecorated declaration made NVRTC refuse the header and cuda-magic compile the cell a
    second time with -default-device: twice the time, and the user's own host functions turned
    into device ones.)"""
    out = nvrtc_out(f"#include <{name}>\n__global__ void k(int* p) {{ p[0] = 1; }}\n")
    assert RETRIED not in out.log and "-default-device" not in out.argv
