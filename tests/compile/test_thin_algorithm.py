"""cuda-magic's own <algorithm> and <functional> for NVRTC (cuda_magic/compile/thin/).

The same static_asserts are compiled by NVRTC with the supplied headers and by nvcc with the
real libstdc++ (-std=c++20, --expt-relaxed-constexpr: its algorithms are constexpr there), so
both must agree on the values and the types. Only what the standard specifies is asserted
(not the order partition or make_heap leave behind).
"""

from __future__ import annotations


import pytest

from cuda_magic.compile.backends import get_backend
from cuda_magic.compile.stdheaders import _CXX, HEADERS

ARCH = "sm_90a"


def nvrtc(source: str, std: str = "c++17", flags=()) -> str:
    out = get_backend("nvrtc").compile(source, arch=ARCH, target_format="ptx",
                                       flags=[f"-std={std}", *flags], ptxas=[], headers=HEADERS)
    return out.ptx


def nvcc(source: str, std: str = "c++20") -> str:
    out = get_backend("nvcc").compile(source, arch=ARCH, target_format="ptx",
                                      flags=[f"-std={std}", "--expt-relaxed-constexpr"], ptxas=[])
    return out.binary.decode()


# Custom iterators (forward only, and bidirectional) over an array: libstdc++ wants the
# iterator tags, which under NVRTC no header here declares (the thin <algorithm> needs none).
PRELUDE = r"""#include <algorithm>
#include <functional>
#define HD __host__ __device__ constexpr
template <class A, class B> constexpr bool same = std::is_same<A, B>::value;
#ifdef __CUDACC_RTC__
struct fwd_tag {};
struct bidi_tag : fwd_tag {};
#else
typedef std::forward_iterator_tag fwd_tag;
typedef std::bidirectional_iterator_tag bidi_tag;
#endif
template <class T, bool Bidi> struct It {
  typedef std::conditional_t<Bidi, bidi_tag, fwd_tag> iterator_category;
  typedef T value_type;
  typedef long difference_type;
  typedef T* pointer;
  typedef T& reference;
  T* p;
  HD T& operator*() const { return *p; }
  HD It& operator++() { ++p; return *this; }
  HD It operator++(int) { It t = *this; ++p; return t; }
  template <bool B = Bidi, class = std::enable_if_t<B>> HD It& operator--() { --p; return *this; }
  template <bool B = Bidi, class = std::enable_if_t<B>> HD It operator--(int) { It t = *this; --p; return t; }
  friend HD bool operator==(It a, It b) { return a.p == b.p; }
  friend HD bool operator!=(It a, It b) { return a.p != b.p; }
};
template <class T> using Fwd = It<T, false>;
template <class T> using Bidi = It<T, true>;
template <class T, int N> HD bool eq(const T* a, const T (&b)[N]) {
  for (int i = 0; i < N; ++i) if (!(a[i] == b[i])) return false;
  return true;
}
struct IsEven { HD bool operator()(int x) const { return x % 2 == 0; } };
struct Sum { int s = 0; HD void operator()(int x) { s += x; } };
struct Counter { int n = 0; HD int operator()() { return n++; } };
struct Twice { HD int operator()(int x) const { return 2 * x; } };
struct ByTens { HD bool operator()(int a, int b) const { return a / 10 < b / 10; } };
struct SameTens { HD bool operator()(int a, int b) const { return a / 10 == b / 10; } };
struct S { int m; HD int add(int x) const { return m + x; } };
HD int sub(int a, int b) { return a - b; }
"""

SHARED = PRELUDE + r"""
// --- non-modifying ---
HD bool nonmodifying() {
  const int a[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  const int* e = a + 10;
  const int pat[] = {1, 5, 9};
  const int five[] = {5, 3};
  const int b[] = {3, 1, 4, 2};
  const int rep[] = {7, 7, 1, 7, 7, 7, 2};
  const int perm[] = {2, 4, 1, 3}, notperm[] = {7, 7, 1, 7, 7, 2, 2};
  return std::all_of(a, e, [](int x) { return x > 0; }) && std::any_of(a, e, IsEven())
      && !std::none_of(a, e, IsEven()) && std::none_of(a, a, IsEven())
      && std::find(a, e, 5) == a + 4 && std::find(a, e, 8) == e
      && std::find_if(a, e, IsEven()) == a + 2 && std::find_if_not(a, e, IsEven()) == a
      && std::count(a, e, 5) == 2 && std::count_if(a, e, IsEven()) == 3
      && std::for_each(a, e, Sum()).s == 39 && std::for_each_n(a, 3, Sum()) == a + 3
      && std::mismatch(a, e, b).first == a + 3 && std::mismatch(a, e, b).second == b + 3
      && std::mismatch(a, a + 3, b, b + 3).first == a + 3
      && std::mismatch(a, e, b, b + 4, SameTens()).second == b + 4
      && std::equal(a, a + 3, b) && !std::equal(a, a + 4, b) && !std::equal(a, a + 3, b, b + 4)
      && std::equal(a, a + 4, b, b + 4, SameTens()) && std::equal(a, a + 4, b, SameTens())
      && !std::equal(a, a + 4, b, b + 4, ByTens())
      && std::adjacent_find(a, e) == e && std::adjacent_find(rep, rep + 7) == rep
      && std::adjacent_find(a, e, std::greater<int>()) == a
      && std::find_first_of(a, e, pat, pat + 3) == a + 1
      && std::search(a, e, pat, pat + 3) == a + 3 && std::search(a, e, pat, pat) == a
      && std::search(a, e, five, five + 2) == a + 8 && std::search(a, e, b, b + 4) == e
      && std::find_end(a, e, five, five + 1) == a + 8 && std::find_end(a, e, pat, pat) == e
      && std::find_end(rep, rep + 7, rep, rep + 2) == rep + 4
      && std::search_n(rep, rep + 7, 3, 7) == rep + 3 && std::search_n(rep, rep + 7, 4, 7) == rep + 7
      && std::search_n(rep, rep + 7, 0, 9) == rep && std::search_n(a, e, 2, 9, SameTens()) == a
      && std::lexicographical_compare(a, e, b, b + 4) && !std::lexicographical_compare(b, b + 4, a, e)
      && !std::lexicographical_compare(a, e, a, e)
      && std::lexicographical_compare(a, a + 2, a, a + 3)
      && std::lexicographical_compare(b, b + 4, a, e, std::greater<int>())
      && std::is_permutation(a, e, a) && std::is_permutation(b, b + 4, perm)
      && !std::is_permutation(rep, rep + 7, notperm) && std::is_permutation(perm, perm + 4, b, SameTens())
      && !std::is_permutation(b, b + 4, b, b + 3);
}
static_assert(nonmodifying(), "");
static_assert(same<decltype(std::count((int*)0, (int*)0, 1)), std::ptrdiff_t>
              && same<decltype(std::count_if(Fwd<int>{}, Fwd<int>{}, IsEven())), long>
              && same<decltype(std::mismatch((int*)0, (int*)0, (const char*)0)), std::pair<int*, const char*>>
              && same<decltype(std::for_each((int*)0, (int*)0, Sum())), Sum>, "");

// --- modifying ---
HD bool modifying() {
  int a[] = {1, 2, 3, 4, 5, 6};
  int o[8] = {};
  bool ok = std::copy(a, a + 6, o) == o + 6 && eq(o, {1, 2, 3, 4, 5, 6, 0, 0});
  ok = ok && std::copy_if(a, a + 6, o, IsEven()) == o + 3 && eq(o, {2, 4, 6, 4});
  ok = ok && std::copy_n(a, 2, o + 1) == o + 3 && eq(o, {2, 1, 2, 4});
  ok = ok && std::copy_backward(a, a + 3, o + 8) == o + 5 && eq(o, {2, 1, 2, 4, 5, 1, 2, 3});
  ok = ok && std::move(a, a + 2, o) == o + 2 && std::move_backward(a, a + 2, o + 8) == o + 6
       && eq(o, {1, 2, 2, 4, 5, 1, 1, 2});
  std::fill(o, o + 8, 9);
  ok = ok && std::fill_n(o, 3, 0) == o + 3 && eq(o, {0, 0, 0, 9, 9});
  ok = ok && std::transform(a, a + 3, o, Twice()) == o + 3 && eq(o, {2, 4, 6, 9})
       && std::transform(a, a + 3, o, o, std::plus<>()) == o + 3 && eq(o, {3, 6, 9, 9});
  std::generate(o, o + 4, Counter());
  ok = ok && eq(o, {0, 1, 2, 3}) && std::generate_n(o, 2, Counter()) == o + 2 && eq(o, {0, 1, 2});
  int r[] = {1, 2, 3, 2, 5, 2};
  ok = ok && std::remove(r, r + 6, 2) == r + 3 && eq(r, {1, 3, 5});
  int r2[] = {1, 2, 3, 4, 5, 6};
  ok = ok && std::remove_if(r2, r2 + 6, IsEven()) == r2 + 3 && eq(r2, {1, 3, 5});
  ok = ok && std::remove_copy(a, a + 6, o, 3) == o + 5 && eq(o, {1, 2, 4, 5, 6})
       && std::remove_copy_if(a, a + 6, o, IsEven()) == o + 3 && eq(o, {1, 3, 5});
  int p[] = {1, 2, 1, 4};
  std::replace(p, p + 4, 1, 7);
  ok = ok && eq(p, {7, 2, 7, 4});
  std::replace_if(p, p + 4, IsEven(), 0);
  ok = ok && eq(p, {7, 0, 7, 0}) && std::replace_copy(p, p + 4, o, 7, 1) == o + 4 && eq(o, {1, 0, 1, 0})
       && std::replace_copy_if(a, a + 4, o, IsEven(), -1) == o + 4 && eq(o, {1, -1, 3, -1});
  int x[] = {1, 2, 3}, y[] = {4, 5, 6};
  ok = ok && std::swap_ranges(x, x + 3, y) == y + 3 && eq(x, {4, 5, 6}) && eq(y, {1, 2, 3});
  std::iter_swap(x, y + 2);
  ok = ok && x[0] == 3 && y[2] == 4;
  int v[] = {1, 2, 3, 4, 5};
  std::reverse(v, v + 5);
  ok = ok && eq(v, {5, 4, 3, 2, 1}) && std::reverse_copy(v, v + 5, o) == o + 5 && eq(o, {1, 2, 3, 4, 5});
  std::reverse(v, v + 4);
  ok = ok && eq(v, {2, 3, 4, 5, 1});
  int w[] = {1, 2, 3, 4, 5, 6, 7};
  ok = ok && std::rotate(w, w + 2, w + 7) == w + 5 && eq(w, {3, 4, 5, 6, 7, 1, 2})
       && std::rotate(w, w + 5, w + 7) == w + 2 && eq(w, {1, 2, 3, 4, 5, 6, 7})
       && std::rotate(w, w, w + 7) == w + 7 && std::rotate(w, w + 7, w + 7) == w
       && std::rotate_copy(w, w + 3, w + 7, o) == o + 7 && eq(o, {4, 5, 6, 7, 1, 2, 3});
  ok = ok && std::shift_left(w, w + 7, 2) == w + 5 && eq(w, {3, 4, 5, 6, 7})
       && std::shift_left(w, w + 7, 9) == w && std::shift_left(w, w + 7, 0) == w + 7;
  int s[] = {1, 2, 3, 4, 5};
  ok = ok && std::shift_right(s, s + 5, 2) == s + 2 && s[2] == 1 && s[3] == 2 && s[4] == 3
       && std::shift_right(s, s + 5, 5) == s + 5;
  int u[] = {1, 1, 2, 2, 2, 3, 1, 1};
  ok = ok && std::unique_copy(u, u + 8, o) == o + 4 && eq(o, {1, 2, 3, 1})
       && std::unique(u, u + 8) == u + 4 && eq(u, {1, 2, 3, 1});
  int t[] = {11, 12, 21, 35, 31};
  ok = ok && std::unique(t, t + 5, [](int a, int b) { return a / 10 == b / 10; }) == t + 3
       && eq(t, {11, 21, 35});
  return ok;
}
static_assert(modifying(), "");

// --- partitions, binary search, sorted ranges, sets ---
HD bool partitions() {
  int a[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  int* m = std::partition(a, a + 9, IsEven());
  int t[9] = {}, f[9] = {};
  const int sorted[] = {1, 2, 2, 2, 4, 7};
  auto pc = std::partition_copy(sorted, sorted + 6, t, f, IsEven());
  return m == a + 4 && std::is_partitioned(a, a + 9, IsEven()) && !std::is_partitioned(sorted, sorted + 6, IsEven())
      && std::count_if(a, m, IsEven()) == 4
      && pc.first == t + 4 && pc.second == f + 2 && eq(t, {2, 2, 2, 4}) && eq(f, {1, 7})
      && std::partition_point(a, a + 9, IsEven()) == m
      && std::lower_bound(sorted, sorted + 6, 2) == sorted + 1 && std::upper_bound(sorted, sorted + 6, 2) == sorted + 4
      && std::lower_bound(sorted, sorted + 6, 9) == sorted + 6 && std::upper_bound(sorted, sorted + 6, 0) == sorted
      && std::equal_range(sorted, sorted + 6, 2).first == sorted + 1
      && std::equal_range(sorted, sorted + 6, 2).second == sorted + 4
      && std::equal_range(sorted, sorted + 6, 3).first == sorted + 4
      && std::binary_search(sorted, sorted + 6, 7) && !std::binary_search(sorted, sorted + 6, 3)
      && std::is_sorted(sorted, sorted + 6) && !std::is_sorted(a, a + 9) && std::is_sorted(a, a)
      && std::is_sorted_until(sorted, sorted + 6) == sorted + 6
      && std::is_sorted_until(a, a + 9, std::greater<>()) != a + 9;
}
static_assert(partitions(), "");
HD bool searches_with_comp() {
  const int d[] = {9, 7, 7, 4, 1};
  return std::lower_bound(d, d + 5, 7, std::greater<int>()) == d + 1
      && std::upper_bound(d, d + 5, 7, std::greater<int>()) == d + 3
      && std::binary_search(d, d + 5, 4, std::greater<>()) && std::is_sorted(d, d + 5, std::greater<>());
}
static_assert(searches_with_comp(), "");
HD bool sets() {
  const int a[] = {1, 2, 2, 4, 6}, b[] = {2, 3, 4, 4, 7};
  int o[10] = {};
  bool ok = std::merge(a, a + 5, b, b + 5, o) == o + 10 && eq(o, {1, 2, 2, 2, 3, 4, 4, 4, 6, 7});
  ok = ok && std::set_union(a, a + 5, b, b + 5, o) == o + 8 && eq(o, {1, 2, 2, 3, 4, 4, 6, 7});
  ok = ok && std::set_intersection(a, a + 5, b, b + 5, o) == o + 2 && eq(o, {2, 4});
  ok = ok && std::set_difference(a, a + 5, b, b + 5, o) == o + 3 && eq(o, {1, 2, 6});
  ok = ok && std::set_symmetric_difference(a, a + 5, b, b + 5, o) == o + 6 && eq(o, {1, 2, 3, 4, 6, 7});
  const int c[] = {2, 4}, d[] = {2, 2, 2};
  ok = ok && std::includes(a, a + 5, c, c + 2) && !std::includes(a, a + 5, d, d + 3)
       && std::includes(a, a + 5, d, d) && !std::includes(a, a + 5, b, b + 5);
  // stability: merge takes equal elements from the first range first
  const int x[] = {10, 21}, y[] = {11, 20};
  ok = ok && std::merge(x, x + 2, y, y + 2, o, ByTens()) == o + 4 && eq(o, {10, 11, 21, 20});
  return ok;
}
static_assert(sets(), "");

// --- heaps and partial sorts ---
HD bool heaps() {
  int h[] = {3, 1, 4, 1, 5, 9, 2, 6};
  std::make_heap(h, h + 8);
  bool ok = std::is_heap(h, h + 8) && h[0] == 9;
  std::pop_heap(h, h + 8);
  ok = ok && h[7] == 9 && std::is_heap(h, h + 7) && h[0] == 6;
  h[7] = 8;
  std::push_heap(h, h + 8);
  ok = ok && std::is_heap(h, h + 8) && h[0] == 8;
  std::sort_heap(h, h + 8);
  ok = ok && eq(h, {1, 1, 2, 3, 4, 5, 6, 8});
  const int nh[] = {9, 5, 4, 6, 1};
  ok = ok && std::is_heap_until(nh, nh + 5) == nh + 3 && !std::is_heap(nh, nh + 5)
       && std::is_heap(nh, nh + 1);
  int g[] = {5, 2, 8, 1, 9};
  std::make_heap(g, g + 5, std::greater<>());
  ok = ok && g[0] == 1 && std::is_heap(g, g + 5, std::greater<>());
  std::sort_heap(g, g + 5, std::greater<>());
  ok = ok && eq(g, {9, 8, 5, 2, 1});
  int p[] = {7, 3, 9, 1, 8, 2, 6};
  std::partial_sort(p, p + 3, p + 7);
  const int all[] = {1, 2, 3, 6, 7, 8, 9};
  ok = ok && eq(p, {1, 2, 3}) && std::is_permutation(p, p + 7, all);
  int q[4] = {};
  const int src[] = {7, 3, 9, 1, 8, 2, 6};
  ok = ok && std::partial_sort_copy(src, src + 7, q, q + 4) == q + 4 && eq(q, {1, 2, 3, 6})
       && std::partial_sort_copy(src, src + 2, q, q + 4) == q + 2 && eq(q, {3, 7})
       && std::partial_sort_copy(src, src + 7, q, q + 3, std::greater<>()) == q + 3 && eq(q, {9, 8, 7});
  return ok;
}
static_assert(heaps(), "");

// --- minimum and maximum ---
HD bool minmax() {
  const int a[] = {3, 1, 4, 1, 5, 9, 2, 9, 5};
  const int one = 1, other = 1;
  auto mm = std::minmax_element(a, a + 9);
  auto [lo, hi] = std::minmax_element(a, a + 8);
  return std::min(2, 1) == 1 && std::max(2, 1) == 2 && &std::min(one, other) == &one
      && &std::max(one, other) == &one && std::min(3, 5, std::greater<int>()) == 5
      && std::max(3, 5, std::greater<int>()) == 3 && &std::min(one, other, std::less<>()) == &one
      && &std::max(one, other, std::less<>()) == &one && std::min({4, 2, 8}) == 2 && std::max({4, 2, 8}) == 8
      && std::min({4, 2, 8}, std::greater<>()) == 8 && std::max({4, 2, 8}, std::greater<>()) == 2
      && std::minmax(5, 2).first == 2 && std::minmax(5, 2).second == 5
      && &std::minmax(one, other).first == &one && &std::minmax(one, other).second == &other
      && std::minmax({3, 1, 4, 1, 5}).first == 1 && std::minmax({3, 1, 4, 1, 5}).second == 5
      && std::minmax({3, 1, 4}, std::greater<>()).first == 4
      && std::min_element(a, a + 9) == a + 1 && std::max_element(a, a + 9) == a + 5
      && std::min_element(a, a + 9, std::greater<>()) == a + 5 && std::max_element(a, a) == a
      && mm.first == a + 1 && mm.second == a + 7 && lo == a + 1 && hi == a + 7
      && std::minmax_element(a, a).first == a && std::minmax_element(a, a + 1).second == a
      && std::clamp(7, 0, 5) == 5 && std::clamp(-1, 0, 5) == 0 && std::clamp(3, 0, 5) == 3
      && std::clamp(3, 5, 0, std::greater<>()) == 3 && &std::clamp(one, other, 2) == &one;
}
static_assert(minmax(), "");
static_assert(same<decltype(std::minmax(1, 2)), std::pair<const int&, const int&>>
              && same<decltype(std::minmax({1, 2})), std::pair<int, int>>
              && same<decltype(std::min({1, 2})), int> && same<decltype(std::max(1, 2)), const int&>
              && same<decltype(std::clamp(1, 2, 3)), const int&>
              && same<decltype(std::minmax_element((int*)0, (int*)0)), std::pair<int*, int*>>
              && same<decltype(std::equal_range((int*)0, (int*)0, 1)), std::pair<int*, int*>>
              && same<decltype(std::partition_copy((int*)0, (int*)0, (long*)0, (char*)0, IsEven())),
                      std::pair<long*, char*>>, "");

// --- permutations ---
HD bool permutations() {
  int p[] = {1, 2, 3, 4};
  int n = 1;
  while (std::next_permutation(p, p + 4)) ++n;
  bool ok = n == 24 && eq(p, {1, 2, 3, 4});
  int q[] = {1, 2, 2};
  ok = ok && std::next_permutation(q, q + 3) && eq(q, {2, 1, 2}) && std::next_permutation(q, q + 3)
       && eq(q, {2, 2, 1}) && !std::next_permutation(q, q + 3) && eq(q, {1, 2, 2});
  ok = ok && !std::prev_permutation(q, q + 3) && eq(q, {2, 2, 1}) && std::prev_permutation(q, q + 3)
       && eq(q, {2, 1, 2});
  int r[] = {1, 2, 3};
  ok = ok && std::next_permutation(r, r + 3, std::greater<>()) == false && eq(r, {3, 2, 1})
       && !std::next_permutation(r, r) && !std::next_permutation(r, r + 1);
  return ok;
}
static_assert(permutations(), "");

// --- iterators that are not pointers ---
HD bool generic_iterators() {
  int a[] = {5, 1, 4, 2, 3, 2};
  Fwd<int> f{a}, l{a + 6};
  Bidi<int> bf{a}, bl{a + 6};
  bool ok = std::count(f, l, 2) == 2 && std::find(f, l, 4).p == a + 2 && std::max_element(f, l).p == a
            && std::minmax_element(f, l).second.p == a && std::search_n(f, l, 1, 2).p == a + 3
            && std::is_permutation(f, l, bf) && std::adjacent_find(f, l, std::greater<>()).p == a;
  ok = ok && std::rotate(f, Fwd<int>{a + 2}, l).p == a + 4 && eq(a, {4, 2, 3, 2, 5, 1});
  ok = ok && std::partition(f, l, IsEven()).p == a + 3 && std::is_partitioned(a, a + 6, IsEven());
  ok = ok && std::partition(bf, bl, IsEven()).p == a + 3 && std::is_partitioned(a, a + 6, IsEven());
  int s[] = {1, 2, 2, 3, 5, 8};
  Fwd<int> sf{s}, sl{s + 6};
  ok = ok && std::lower_bound(sf, sl, 3).p == s + 3 && std::upper_bound(sf, sl, 2).p == s + 3
       && std::equal_range(sf, sl, 2).first.p == s + 1 && std::binary_search(sf, sl, 8)
       && std::partition_point(sf, sl, [](int x) { return x < 4; }).p == s + 4
       && std::unique(sf, sl).p == s + 5 && eq(s, {1, 2, 3, 5, 8});
  int t[] = {1, 2, 3, 4, 5};
  ok = ok && std::shift_right(Fwd<int>{t}, Fwd<int>{t + 5}, 2).p == t + 2 && t[2] == 1 && t[3] == 2 && t[4] == 3
       && std::shift_left(Fwd<int>{t}, Fwd<int>{t + 5}, 1).p == t + 4;
  int u[] = {1, 2, 3, 4};
  std::reverse(Bidi<int>{u}, Bidi<int>{u + 4});
  ok = ok && eq(u, {4, 3, 2, 1}) && std::next_permutation(Bidi<int>{u}, Bidi<int>{u + 4}) == false
       && eq(u, {1, 2, 3, 4}) && std::copy_backward(Bidi<int>{u}, Bidi<int>{u + 2}, Bidi<int>{u + 4}).p == u + 2
       && eq(u, {1, 2, 1, 2}) && std::is_sorted_until(Fwd<int>{u}, Fwd<int>{u + 4}).p == u + 2
       && std::lexicographical_compare(Fwd<int>{u}, Fwd<int>{u + 4}, u + 1, u + 3);
  return ok;
}
static_assert(generic_iterators(), "");

// --- <functional> ---
HD bool function_objects() {
  return std::plus<int>()(1, 2) == 3 && std::minus<int>()(1, 2) == -1 && std::multiplies<long>()(3, 4) == 12
      && std::divides<int>()(7, 2) == 3 && std::modulus<int>()(7, 3) == 1 && std::negate<int>()(4) == -4
      && std::equal_to<int>()(1, 1) && std::not_equal_to<int>()(1, 2) && std::greater<int>()(2, 1)
      && std::less<int>()(1, 2) && std::greater_equal<int>()(2, 2) && std::less_equal<int>()(3, 2) == false
      && std::logical_and<bool>()(true, false) == false && std::logical_or<bool>()(true, false)
      && std::logical_not<bool>()(false) && std::bit_and<unsigned>()(6u, 3u) == 2u
      && std::bit_or<unsigned>()(6u, 3u) == 7u && std::bit_xor<unsigned>()(6u, 3u) == 5u
      && std::bit_not<unsigned char>()(0) == 255 && std::plus<>()(1, 2.5) == 3.5 && std::less<>()(1, 1.5)
      && std::greater<>()(2.5, 2) && std::negate<>()(2.5) == -2.5 && std::logical_not<>()(0)
      && std::bit_not<>()(0) == -1 && std::divides<>()(7, 2.0) == 3.5 && std::equal_to<>()(1, 1.0)
      && std::modulus<>()(7u, 4) == 3u;
}
static_assert(function_objects(), "");
static_assert(same<std::plus<int>::result_type, int> && same<std::plus<int>::first_argument_type, int>
              && same<std::less<long>::second_argument_type, long> && same<std::less<long>::result_type, bool>
              && same<std::negate<float>::argument_type, float> && same<std::logical_not<int>::result_type, bool>
              && same<decltype(std::plus<>()(1, 2L)), long> && same<decltype(std::less<>()(1, 2.0)), bool>
              && same<decltype(std::minus<>()('a', 'b')), int> && sizeof(std::less<>::is_transparent*) == 8
              && sizeof(std::equal_to<void>::is_transparent*) == 8 && std::is_empty<std::plus<int>>::value
              && same<std::less<>, std::less<void>>, "");
template <class F, class = void> struct has_transparent : std::false_type {};
template <class F> struct has_transparent<F, std::void_t<typename F::is_transparent>> : std::true_type {};
static_assert(!has_transparent<std::less<int>>::value && has_transparent<std::bit_not<>>::value, "");

HD bool callables() {
  S s{10};
  const S cs{20};
  auto add = std::bind_front(std::plus<>(), 40);
  auto minus_from = std::bind_front(sub, 100);
  auto sadd = std::bind_front(&S::add, s);
  auto odd = std::not_fn(IsEven());
  const auto codd = std::not_fn(IsEven());
  return std::invoke(sub, 9, 4) == 5 && std::invoke(&S::m, s) == 10
      && std::invoke(&S::add, cs, 1) == 21 && std::invoke(&S::add, &s, 2) == 12 && std::invoke(Twice(), 4) == 8
      && std::mem_fn(&S::m)(s) == 10 && std::mem_fn(&S::add)(cs, 5) == 25 && std::mem_fn(&S::add)(&s, 1) == 11
      && add(2) == 42 && add(2.5) == 42.5 && minus_from(1) == 99 && std::move(add)(1) == 41 && sadd(5) == 15
      && std::bind_front(sub)(3, 1) == 2 && std::bind_front(sub, 8, 3)() == 5
      && odd(3) && !odd(4) && codd(1) && std::not_fn(std::less<>())(2, 1) && std::not_fn(sub)(1, 1)
      && std::identity()(7) == 7 && std::invoke(std::identity(), 3) == 3;
}
static_assert(callables(), "");
// std::reference_wrapper (libcu++'s under NVRTC) is constexpr from C++20 on, as libstdc++'s
#if __cplusplus >= 202002L
HD bool references() {
  int x = 1;
  S s{2};
  std::reference_wrapper<int> r = std::ref(x);
  r.get() = 5;
  auto rs = std::ref(s);
  return x == 5 && std::cref(x).get() == 5 && r == 5 && std::invoke(&S::add, rs, 1) == 3
      && std::invoke(&S::m, std::cref(s)) == 2 && std::bind_front(sub, std::ref(x))(1) == 4;
}
static_assert(references(), "");
#endif
static_assert(same<std::unwrap_reference_t<std::reference_wrapper<int>>, int&>
              && same<std::unwrap_reference_t<int>, int> && same<std::unwrap_reference<const int&>::type, const int&>
              && same<std::unwrap_ref_decay_t<const std::reference_wrapper<long>&>, long&>
              && same<std::unwrap_ref_decay_t<int const&>, int> && same<std::unwrap_ref_decay<int[2]>::type, int*>
              && same<decltype(std::ref(std::declval<int&>())), std::reference_wrapper<int>>
              && same<decltype(std::cref(std::declval<int&>())), std::reference_wrapper<const int>>
              && same<decltype(std::identity()(std::declval<int&>())), int&>
              && same<decltype(std::mem_fn(&S::m)(std::declval<S&>())), int&>
              && same<decltype(std::invoke(&S::m, std::declval<S>())), int&&>, "");

// std::hash: a user's specialisation; what has none is not default constructible
struct Point { int x, y; };
namespace std {
template <> struct hash<Point> { HD size_t operator()(const Point& p) const { return size_t(p.x) * 31 + p.y; } };
}
static_assert(std::hash<Point>()(Point{1, 2}) == 33 && !std::is_default_constructible<std::hash<S>>::value
              && std::is_default_constructible<std::hash<int>>::value
              && same<decltype(std::hash<int>()(1)), std::size_t> && same<std::hash<long>::result_type, std::size_t>
              && same<std::hash<int*>::argument_type, int*>, "");
"""

# What libstdc++ declares but not constexpr (std::hash, shuffle, sample) or only from C++23
# (invoke_r): pinned under NVRTC (the thin headers make them constexpr).
NVRTC_ONLY = r"""
enum class Colour : short { red = 3, blue = -1 };
enum Plain { zero, one };
static_assert(std::hash<int>()(5) == 5 && std::hash<long>()(-1) == std::size_t(-1) && std::hash<bool>()(true) == 1
              && std::hash<char>()('a') == 97 && std::hash<unsigned long long>()(7ull) == 7
              && std::hash<Colour>()(Colour::red) == 3 && std::hash<Colour>()(Colour::blue) == std::size_t(-1)
              && std::hash<Plain>()(one) == 1 && std::hash<decltype(nullptr)>()(nullptr) == 0
              && std::invoke_r<long>(sub, 3, 1) == 2 && same<decltype(std::invoke_r<long>(sub, 3, 1)), long>, "");
struct Lcg {   // a URBG
  typedef unsigned result_type;
  unsigned long long s;
  HD static unsigned min() { return 0; }
  HD static unsigned max() { return 0xffffu; }   // 16 bits: several draws for a large n
  HD unsigned operator()() { s = s * 6364136223846793005ull + 1442695040888963407ull; return unsigned(s >> 48); }
};
HD bool random() {
  int a[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const int orig[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  Lcg g{42};
  std::shuffle(a, a + 10, g);
  int o[4] = {};
  bool ok = std::is_permutation(a, a + 10, orig) && !std::equal(a, a + 10, orig);
  ok = ok && std::sample(orig, orig + 10, o, 4, g) == o + 4 && std::is_sorted(o, o + 4)
       && std::includes(orig, orig + 10, o, o + 4) && std::adjacent_find(o, o + 4) == o + 4
       && std::sample(orig, orig + 3, o, 5, Lcg{1}) == o + 3 && eq(o, {0, 1, 2});
  int hits[3] = {};   // every value of [0, 3) comes up
  for (int i = 0; i < 60; ++i) {
    int b[] = {0, 1, 2};
    std::shuffle(b, b + 3, g);
    ++hits[b[0]];
  }
  return ok && hits[0] > 5 && hits[1] > 5 && hits[2] > 5;
}
static_assert(random(), "");
"""

KERNEL = r"""
__global__ void algos(int* p, float* f, long* l, int n) {
  std::make_heap(p, p + n);
  std::sort_heap(p, p + n, std::less<>());
  std::partial_sort(f, f + 4, f + n, std::greater<float>());
  auto mm = std::minmax_element(f, f + n);
  l[0] = std::count_if(p, p + n, IsEven()) + std::count(p, p + n, 3)
         + (std::lower_bound(p, p + n, p[1]) - p) + std::binary_search(p, p + n, 7);
  l[1] = std::max({p[0], p[1], p[2]}) + std::min(p[3], p[4]) + std::clamp(p[5], 0, 9) + (mm.second - mm.first);
  std::rotate(p, p + 1, p + n);
  std::reverse(p, p + n);
  std::transform(p, p + n, p, p, std::plus<int>());
  std::replace_if(p, p + n, std::bind_front(std::less<>(), 100), 0);
  int* e = std::remove_if(p, p + n, std::not_fn(IsEven()));
  e = std::unique(p, e);
  std::fill(e, p + n, -1);
  std::next_permutation(p, p + 4);
  l[2] = *std::max_element(p, p + n);
  S s{p[0]};
  l[3] = std::invoke(&S::add, s, 1) + std::mem_fn(&S::m)(s) + std::multiplies<>()(l[0], 2)
         + std::equal(p, p + 2, p + 2, p + 4) + std::lexicographical_compare(p, p + 2, p + 2, p + 4);
  std::swap_ranges(f, f + 2, f + 2);
  std::shift_left(f, f + n, 1);
  float tmp[8];
  std::copy_n(f, 8, tmp);
  std::merge(tmp, tmp + 4, tmp + 4, tmp + 8, f, std::greater<>());
}
"""

KERNEL_NVRTC = r"""
struct XorShift {
  typedef unsigned result_type;
  unsigned s;
  __device__ static constexpr unsigned min() { return 0; }
  __device__ static constexpr unsigned max() { return ~0u; }
  __device__ unsigned operator()() { s ^= s << 13; s ^= s >> 17; s ^= s << 5; return s; }
};
__global__ void randomly(int* p, unsigned long* h, int n) {
  XorShift g{1u + threadIdx.x};
  std::shuffle(p, p + n, g);
  int out[4];
  std::sample(p, p + n, out, 4, g);
  h[0] = std::hash<int>()(out[0]) + std::hash<int*>()(p) + std::hash<unsigned long>()(h[1]);
}
"""


@pytest.mark.parametrize("std", ["c++17", "c++20"])
def test_nvrtc_agrees_with_the_static_asserts(std):
    ptx = nvrtc(SHARED + NVRTC_ONLY + KERNEL + KERNEL_NVRTC, std)
    assert ".entry _Z5algosPiPfPli(" in ptx and ".entry _Z8randomlyPiPmi(" in ptx


def test_nvcc_with_libstdcxx_agrees():
    # the same static_asserts hold for libstdc++'s algorithms; the kernel builds there too
    assert ".entry _Z5algosPiPfPli(" in nvcc(SHARED + KERNEL)


def test_every_listed_name_is_declared():
    for header in ("algorithm", "functional"):
        names = _CXX[header][0]
        src = (f"#include <{header}>\n" + "".join(f"using std::{n};\n" for n in names)
               + "__global__ void k() {}\n")
        for std in ("c++17", "c++20"):
            nvrtc(src, std)
    # the 3-argument std::move beside the one-argument one
    nvrtc("#include <algorithm>\n__global__ void k(int* p) { int x = std::move(p[0]); "
          "std::move(p + 1, p + 3, p + 4); p[9] = x; }\n")


def test_thin_headers_include_no_libcu_algorithm_or_functional():
    # the point of the thin headers: libcu++'s <algorithm>/<functional> (76 MiB PCHs) stay out
    import os
    import re
    from cuda_magic.compile import stdheaders
    for header in ("algorithm", "functional"):
        with open(os.path.join(stdheaders._THIN_DIR, header + ".h"), encoding="utf-8") as f:
            assert "#include" not in f.read(), header
        text = HEADERS[header]
        assert "cuda-magic's own" in text.splitlines()[0]
        included = set(re.findall(r"#include <([^>]+)>", text))
        assert "cuda/std/type_traits" in included, header
        assert not {i for i in included if re.match(r"cuda/std/(__)?(algorithm|functional)", i)}, header


LIBCU_TOO = r"""#include <algorithm>
#include <functional>
#include <cub/block/block_reduce.cuh>
#include <cuda/std/functional>
#if __has_include(<cuda/std/algorithm>)
#include <cuda/std/algorithm>
static_assert(cuda::std::max(1, 2) == std::max(1, 2), "");
#endif
static_assert(!std::is_same<std::plus<int>, cuda::std::plus<int>>::value
              && std::plus<>()(1, 2) == cuda::std::plus<>()(1, 2), "");
__global__ void k(const int* in, int* out) {
  using R = cub::BlockReduce<int, 128>;
  __shared__ typename R::TempStorage tmp;
  int v = R(tmp).Reduce(in[threadIdx.x], cuda::std::plus<int>());
  if (threadIdx.x == 0) out[0] = std::max(v, 0) + std::plus<int>()(v, 1);
}
"""


@pytest.mark.parametrize("std", ["c++17", "c++20"])
def test_with_libcu_and_cub_in_the_same_cell(std):
    assert ".entry _Z1kPKiPi(" in nvrtc(LIBCU_TOO, std)


@pytest.mark.parametrize("version, cccl", [("13.0.85", 3000000), ("13.1.115", 3001000)])
@pytest.mark.parametrize("std", ["c++17", "c++20"])
def test_with_older_cccl(old_cccls, version, cccl, std):
    src = ("#include <algorithm>\n#include <functional>\n"
           f"static_assert(CCCL_VERSION / 1000 == {cccl // 1000}, \"the CCCL asked for is in use\");\n"
           + SHARED + NVRTC_ONLY + KERNEL)
    assert ".entry _Z5algosPiPfPli(" in nvrtc(src, std, [f"-I{old_cccls[version] / 'cccl'}"])
