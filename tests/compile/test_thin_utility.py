"""cuda-magic's own <utility> for NVRTC (cuda_magic/compile/thin/utility.h): std::pair and the
small <utility> names, on libcu++'s <cuda/std/type_traits> only.

The same source is compiled by NVRTC with the supplied headers and by nvcc with g++'s real
libstdc++ (C++20, where libstdc++'s pair swap and std::exchange are constexpr), so the
static_asserts pin nvcc's meaning.
"""

from __future__ import annotations

import re

import pytest

from cuda_magic.compile.stdheaders import HEADERS, THIN, _CXX
from test_stdheaders import nvcc, nvrtc

UTILITY = r"""#include <utility>
#include <functional>
template <class A, class B> constexpr bool same = std::is_same<A, B>::value;
struct NoDefault { __host__ __device__ constexpr NoDefault(int) {} };
struct Explicit { __host__ __device__ explicit constexpr Explicit() {} };
struct ExplicitFrom { __host__ __device__ explicit constexpr ExplicitFrom(int) {} };

constexpr std::pair<int, float> P(1, 2.f);
constexpr auto Q = std::make_pair(3, 4L);
static_assert(P.first == 1 && P.second == 2.f && std::get<1>(P) == 2.f && std::get<int>(P) == 1
              && std::get<float>(P) == 2.f && Q.second == 4L, "");
static_assert(same<decltype(Q), const std::pair<int, long>> && same<std::pair<int, float>::first_type, int>
              && same<decltype(std::get<0>(std::pair<int, float>())), int&&>
              && same<decltype(std::get<0>(P)), const int&>, "");
static_assert(std::tuple_size_v<std::pair<int, float>> == 2 && std::tuple_size<const std::pair<int, float>>::value == 2
              && same<std::tuple_element_t<1, std::pair<int, float>>, float>
              && same<std::tuple_element_t<0, const std::pair<int, float>>, const int>, "");
// comparisons: lexicographic, one pair type (as libstdc++'s)
static_assert(P < std::pair<int, float>(1, 3.f) && P < std::pair<int, float>(2, 0.f) && !(P < P) && !(P < std::pair<int, float>(0, 3.f))
              && P == std::pair<int, float>(1, 2.f) && P != std::pair<int, float>(2, 2.f)
              && P <= P && P >= P && std::pair<int, float>(2, 0.f) > P, "");
// which constructors exist and which are explicit
static_assert(std::is_default_constructible_v<std::pair<int, Explicit>>
              && !std::is_convertible_v<int, std::pair<int, Explicit>>
              && !std::is_default_constructible_v<std::pair<int, NoDefault>>
              && std::is_constructible_v<std::pair<ExplicitFrom, int>, int, int>
              && !std::is_convertible_v<std::pair<int, int>, std::pair<ExplicitFrom, int>>
              && std::is_convertible_v<std::pair<int, int>, std::pair<long, double>>
              && std::is_constructible_v<std::pair<ExplicitFrom, int>, std::pair<int, int>>, "");
static_assert(std::is_trivially_copy_constructible_v<std::pair<int, float>>
              && std::is_trivially_destructible_v<std::pair<int, float>>
              && !std::is_trivially_copy_assignable_v<std::pair<int, float>>
              && std::is_nothrow_swappable_v<std::pair<int, float>>
              && std::is_nothrow_move_assignable_v<std::pair<int, float>>
              && std::is_copy_assignable_v<std::pair<int&, int>>
              && !std::is_copy_assignable_v<std::pair<const int, int>>, "");
constexpr std::pair CT(1, 2.0);
static_assert(same<decltype(CT), const std::pair<int, double>>, "");

#if __cplusplus >= 202002L   // libstdc++: constexpr swap/exchange/assignment, cmp_* and in_range
constexpr int swap_refs() {
  int a = 1, b = 2, c = 5, d = 6;
  std::pair<int&, int&> r(a, b), t(c, d);
  std::swap(r, t);                // swaps the referenced ints
  return a * 1000 + b * 100 + c * 10 + d;
}
constexpr int assign_through() {
  int a = 1, b = 2;
  std::pair<int&, int&> r(a, b);
  r = std::pair<int, int>(7, 8);  // assignment writes through reference members
  std::pair<int, long> v(1, 2);
  v = std::make_pair(3, 4);
  return a * 10 + b + int(v.second) * 100;
}
constexpr int exchanged() { int x = 1; int old = std::exchange(x, 7); return old * 10 + x; }
static_assert(swap_refs() == 5612 && assign_through() == 478 && exchanged() == 17, "");
static_assert(std::cmp_less(-1, 0u) && !std::cmp_equal(-1, 0xffffffffu) && std::cmp_greater(1u, -1)
              && std::cmp_less_equal(-1, 0u) && std::cmp_not_equal(-1, 0xffffffffu)
              && std::cmp_greater_equal(0u, -1L), "");
static_assert(std::in_range<unsigned char>(255) && !std::in_range<unsigned char>(256)
              && std::in_range<signed char>(-128) && !std::in_range<signed char>(-129)
              && !std::in_range<unsigned>(-1) && std::in_range<long>(0xffffffffu), "");
#endif
constexpr int x_ = 5;
static_assert(same<decltype(std::make_pair(std::cref(x_), 1)), std::pair<const int&, int>>
              && same<decltype(std::as_const(x_)), const int&>
              && same<decltype(std::declval<std::pair<int, float>&>().swap(std::declval<std::pair<int, float>&>())), void>
              && std::index_sequence_for<int, float>::size() == 2
              && same<std::make_index_sequence<2>, std::index_sequence<0, 1>>, "");

struct Point { int x, y; };  // user specialisations of the tuple protocol meet libcu++'s std ones
namespace std {
template <> struct tuple_size<Point> : integral_constant<size_t, 2> {};
template <size_t I> struct tuple_element<I, Point> { using type = int; };
}
template <std::size_t I> __host__ __device__ constexpr int get(const Point& p) { return I == 0 ? p.x : p.y; }
static_assert(std::tuple_size_v<const Point> == 2, "");
struct Plain { int a; float b; };  // no tuple protocol: a const one binds by its members


__global__ void k(float* o, int* i) {
  auto [a, b] = std::make_pair(3, 4.f);
  const auto [c, d] = P;
  auto [px, py] = Point{i[0], i[1]};
  const auto [pa, pb] = Plain{i[8], o[4]};
  std::pair<int, float> p = {i[2], o[1]};
  std::pair<long, double> q = p;
  q = std::make_pair(i[3], o[2]);
  std::pair<int, float> z{};
  std::swap(p, z);
  i[4] = std::exchange(i[5], 9);
  std::pair<int, std::pair<int, float>> nested(1, {i[6], o[3]});
  o[0] = a + b + c + d + q.first + q.second + z.first + std::as_const(p).second + px + py
         + nested.second.second + pa + pb + (p < z) + std::cmp_less(i[7], 0u);
}
"""


def test_utility_means_what_it_means_under_nvcc():
    for ptx in (nvrtc(UTILITY), nvrtc(UTILITY, "c++20"), nvcc(UTILITY, "c++20")):
        assert ".entry _Z1kPfPi(" in ptx


def test_every_name_of_utility_is_declared():
    names = _CXX["utility"][0] + ["tuple_size_v", "tuple_element_t"]
    src = "#include <utility>\n" + "".join(f"using std::{n};\n" for n in names)
    for std in ("c++17", "c++20"):
        nvrtc(src + "__global__ void k() {}\n", std)


def test_pair_is_stds_own_type_beside_libcus():
    src = r"""#include <utility>
#include <cuda/std/utility>
static_assert(!std::is_same<std::pair<int, int>, cuda::std::pair<int, int>>::value, "");
__global__ void k(int* o) {
  std::pair<int, int> a(o[0], o[1]);
  cuda::std::pair<int, int> b(o[2], o[3]);
  o[4] = a.first + b.second + std::get<0>(a) + cuda::std::get<1>(b);
}
"""
    assert ".entry _Z1kPi(" in nvrtc(src)


@pytest.mark.parametrize("name", THIN)
def test_thin_headers_include_only_type_traits_of_libcu(name):
    """What makes them fast: no libcu++ header beyond <cuda/std/type_traits> (and the light
    config headers the supplied <cstdint> starts with); each other one costs milliseconds in
    every compile, even from a PCH."""
    includes = set(re.findall(r"#include <(cuda/std/[^>]+)>", HEADERS[name]))
    assert includes == {"cuda/std/type_traits", "cuda/std/detail/__config", "cuda/std/version",
                        "cuda/std/climits",   # and CCCL 3.0-3.2's std::tuple_size declarations:
                        "cuda/std/__tuple_dir/structured_bindings.h"}, includes
