// cuda-magic's own <algorithm> for NVRTC (issue 21): the non-parallel algorithms of
// libstdc++'s <algorithm> that libcu++ has, written here with the standard's semantics and
// complexity, each __host__ __device__ constexpr (libstdc++ makes them constexpr in C++20; here
// they are in C++17 too, and shuffle and sample as well). Embedded after libcu++'s
// <cuda/std/type_traits> (and `using ::cuda::std::X;` of its names) and the thin <utility>,
// whose std::pair minmax, mismatch, equal_range and partition_copy return; includes nothing.
//
// Iterators: anything with ++, * and == (+ -- where the standard asks for bidirectional ones,
// + [] += - where it asks for random access ones). There is no <iterator> here, so no
// std::iterator_traits: an iterator's difference type is its member difference_type, else
// ptrdiff_t; its value type its member value_type, else the type *it refers to; a distance is
// last - first where that compiles, else counted. sample needs forward iterators over the
// population (libstdc++ also takes input iterators with a random access output).

#define _CUDA_MAGIC_ALG_ __host__ __device__ constexpr

namespace std {

namespace __cm_alg {
template <class...> using __void = void;
template <class _It, class = void> struct __diff { typedef ptrdiff_t type; };
template <class _It> struct __diff<_It, __void<typename _It::difference_type>> {
  typedef typename _It::difference_type type;
};
template <class _It> using __diff_t = typename __diff<_It>::type;

template <class _It, class = void> struct __value {
  typedef ::cuda::std::remove_cv_t<::cuda::std::remove_reference_t<decltype(*::cuda::std::declval<_It&>())>> type;
};
template <class _It> struct __value<_It, __void<typename _It::value_type>> {
  typedef typename _It::value_type type;
};
template <class _It> using __value_t = typename __value<_It>::type;

template <class _It, class = void> struct __random : ::cuda::std::false_type {};
template <class _It>
struct __random<_It, __void<decltype(::cuda::std::declval<_It&>() += ::cuda::std::declval<__diff_t<_It>>()),
                            decltype(::cuda::std::declval<_It>() - ::cuda::std::declval<_It>())>>
    : ::cuda::std::true_type {};
template <class _It, class = void> struct __bidirectional : ::cuda::std::false_type {};
template <class _It>
struct __bidirectional<_It, __void<decltype(--::cuda::std::declval<_It&>())>> : ::cuda::std::true_type {};

template <class _It>
_CUDA_MAGIC_ALG_ __diff_t<_It> __distance(_It __first, _It __last) {
  if constexpr (__random<_It>::value) {
    return static_cast<__diff_t<_It>>(__last - __first);
  } else {
    __diff_t<_It> __n = 0;
    for (; __first != __last; ++__first) ++__n;
    return __n;
  }
}

template <class _It>
_CUDA_MAGIC_ALG_ _It __next(_It __it, __diff_t<_It> __n) {
  if constexpr (__random<_It>::value) {
    __it += __n;
  } else {
    for (; __n > 0; --__n) ++__it;
    if constexpr (__bidirectional<_It>::value)
      for (; __n < 0; ++__n) --__it;
  }
  return __it;
}

template <class _Tp> _CUDA_MAGIC_ALG_ _Tp&& __mv(_Tp& __x) noexcept { return static_cast<_Tp&&>(__x); }
template <class _It>
_CUDA_MAGIC_ALG_ decltype(auto) __mv_at(const _It& __it) {  // std::move(*it)
  return static_cast<::cuda::std::remove_reference_t<decltype(*__it)>&&>(*__it);
}

// The default comparison and equality (the standard's operator< and operator==).
struct __less {
  template <class _Ap, class _Bp>
  _CUDA_MAGIC_ALG_ bool operator()(const _Ap& __a, const _Bp& __b) const { return __a < __b; }
};
struct __equal {
  template <class _Ap, class _Bp>
  _CUDA_MAGIC_ALG_ bool operator()(const _Ap& __a, const _Bp& __b) const { return __a == __b; }
};
template <class _Tp> struct __equal_to_value {
  const _Tp& __v;
  template <class _Ap> _CUDA_MAGIC_ALG_ bool operator()(const _Ap& __a) const { return __a == __v; }
};
}  // namespace __cm_alg

// --- non-modifying sequence operations ---------------------------------------------------------

template <class _It, class _Pred>
_CUDA_MAGIC_ALG_ _It find_if(_It __first, _It __last, _Pred __pred) {
  for (; __first != __last; ++__first)
    if (__pred(*__first)) break;
  return __first;
}
template <class _It, class _Tp>
_CUDA_MAGIC_ALG_ _It find(_It __first, _It __last, const _Tp& __value) {
  for (; __first != __last; ++__first)
    if (*__first == __value) break;
  return __first;
}
template <class _It, class _Pred>
_CUDA_MAGIC_ALG_ _It find_if_not(_It __first, _It __last, _Pred __pred) {
  for (; __first != __last; ++__first)
    if (!__pred(*__first)) break;
  return __first;
}

template <class _It, class _Pred>
_CUDA_MAGIC_ALG_ bool all_of(_It __first, _It __last, _Pred __pred) {
  return ::std::find_if_not(__first, __last, __pred) == __last;
}
template <class _It, class _Pred>
_CUDA_MAGIC_ALG_ bool any_of(_It __first, _It __last, _Pred __pred) {
  return ::std::find_if(__first, __last, __pred) != __last;
}
template <class _It, class _Pred>
_CUDA_MAGIC_ALG_ bool none_of(_It __first, _It __last, _Pred __pred) {
  return ::std::find_if(__first, __last, __pred) == __last;
}

template <class _It, class _Fn>
_CUDA_MAGIC_ALG_ _Fn for_each(_It __first, _It __last, _Fn __f) {
  for (; __first != __last; ++__first) __f(*__first);
  return __f;
}
template <class _It, class _Size, class _Fn>
_CUDA_MAGIC_ALG_ _It for_each_n(_It __first, _Size __n, _Fn __f) {
  for (; __n > 0; --__n, (void)++__first) __f(*__first);
  return __first;
}

template <class _It, class _Tp>
_CUDA_MAGIC_ALG_ __cm_alg::__diff_t<_It> count(_It __first, _It __last, const _Tp& __value) {
  __cm_alg::__diff_t<_It> __n = 0;
  for (; __first != __last; ++__first)
    if (*__first == __value) ++__n;
  return __n;
}
template <class _It, class _Pred>
_CUDA_MAGIC_ALG_ __cm_alg::__diff_t<_It> count_if(_It __first, _It __last, _Pred __pred) {
  __cm_alg::__diff_t<_It> __n = 0;
  for (; __first != __last; ++__first)
    if (__pred(*__first)) ++__n;
  return __n;
}

template <class _It1, class _It2, class _Pred>
_CUDA_MAGIC_ALG_ pair<_It1, _It2> mismatch(_It1 __first1, _It1 __last1, _It2 __first2, _Pred __pred) {
  for (; __first1 != __last1 && __pred(*__first1, *__first2); ++__first1, (void)++__first2) {}
  return pair<_It1, _It2>(__first1, __first2);
}
template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ pair<_It1, _It2> mismatch(_It1 __first1, _It1 __last1, _It2 __first2) {
  return ::std::mismatch(__first1, __last1, __first2, __cm_alg::__equal());
}
template <class _It1, class _It2, class _Pred>
_CUDA_MAGIC_ALG_ pair<_It1, _It2> mismatch(_It1 __first1, _It1 __last1, _It2 __first2, _It2 __last2,
                                           _Pred __pred) {
  for (; __first1 != __last1 && __first2 != __last2 && __pred(*__first1, *__first2);
       ++__first1, (void)++__first2) {}
  return pair<_It1, _It2>(__first1, __first2);
}
template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ pair<_It1, _It2> mismatch(_It1 __first1, _It1 __last1, _It2 __first2, _It2 __last2) {
  return ::std::mismatch(__first1, __last1, __first2, __last2, __cm_alg::__equal());
}

template <class _It1, class _It2, class _Pred>
_CUDA_MAGIC_ALG_ bool equal(_It1 __first1, _It1 __last1, _It2 __first2, _Pred __pred) {
  for (; __first1 != __last1; ++__first1, (void)++__first2)
    if (!__pred(*__first1, *__first2)) return false;
  return true;
}
template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ bool equal(_It1 __first1, _It1 __last1, _It2 __first2) {
  return ::std::equal(__first1, __last1, __first2, __cm_alg::__equal());
}
template <class _It1, class _It2, class _Pred>
_CUDA_MAGIC_ALG_ bool equal(_It1 __first1, _It1 __last1, _It2 __first2, _It2 __last2, _Pred __pred) {
  if constexpr (__cm_alg::__random<_It1>::value && __cm_alg::__random<_It2>::value) {
    if (__last1 - __first1 != __last2 - __first2) return false;   // the standard's shortcut
  }
  for (; __first1 != __last1 && __first2 != __last2; ++__first1, (void)++__first2)
    if (!__pred(*__first1, *__first2)) return false;
  return __first1 == __last1 && __first2 == __last2;
}
template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ bool equal(_It1 __first1, _It1 __last1, _It2 __first2, _It2 __last2) {
  return ::std::equal(__first1, __last1, __first2, __last2, __cm_alg::__equal());
}

template <class _It, class _Pred>
_CUDA_MAGIC_ALG_ _It adjacent_find(_It __first, _It __last, _Pred __pred) {
  if (__first == __last) return __last;
  for (_It __next = __first; ++__next != __last; __first = __next)
    if (__pred(*__first, *__next)) return __first;
  return __last;
}
template <class _It>
_CUDA_MAGIC_ALG_ _It adjacent_find(_It __first, _It __last) {
  return ::std::adjacent_find(__first, __last, __cm_alg::__equal());
}

template <class _It1, class _It2, class _Pred>
_CUDA_MAGIC_ALG_ _It1 find_first_of(_It1 __first, _It1 __last, _It2 __s_first, _It2 __s_last, _Pred __pred) {
  for (; __first != __last; ++__first)
    for (_It2 __s = __s_first; __s != __s_last; ++__s)
      if (__pred(*__first, *__s)) return __first;
  return __last;
}
template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ _It1 find_first_of(_It1 __first, _It1 __last, _It2 __s_first, _It2 __s_last) {
  return ::std::find_first_of(__first, __last, __s_first, __s_last, __cm_alg::__equal());
}

// search: the first [s_first, s_last) in [first, last); first when the pattern is empty.
template <class _It1, class _It2, class _Pred>
_CUDA_MAGIC_ALG_ _It1 search(_It1 __first, _It1 __last, _It2 __s_first, _It2 __s_last, _Pred __pred) {
  for (;; ++__first) {
    _It1 __i = __first;
    for (_It2 __s = __s_first;; ++__i, (void)++__s) {
      if (__s == __s_last) return __first;
      if (__i == __last) return __last;
      if (!__pred(*__i, *__s)) break;
    }
  }
}
template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ _It1 search(_It1 __first, _It1 __last, _It2 __s_first, _It2 __s_last) {
  return ::std::search(__first, __last, __s_first, __s_last, __cm_alg::__equal());
}
template <class _It, class _Searcher>
_CUDA_MAGIC_ALG_ _It search(_It __first, _It __last, const _Searcher& __searcher) {
  return __searcher(__first, __last).first;
}

// find_end: the last [s_first, s_last) in [first, last); last when the pattern is empty.
template <class _It1, class _It2, class _Pred>
_CUDA_MAGIC_ALG_ _It1 find_end(_It1 __first, _It1 __last, _It2 __s_first, _It2 __s_last, _Pred __pred) {
  if (__s_first == __s_last) return __last;
  _It1 __found = __last;
  for (;;) {
    _It1 __at = ::std::search(__first, __last, __s_first, __s_last, __pred);
    if (__at == __last) return __found;
    __found = __at;
    __first = __at;
    ++__first;
  }
}
template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ _It1 find_end(_It1 __first, _It1 __last, _It2 __s_first, _It2 __s_last) {
  return ::std::find_end(__first, __last, __s_first, __s_last, __cm_alg::__equal());
}

// search_n: the first run of count elements equal to value; first when count <= 0.
template <class _It, class _Size, class _Tp, class _Pred>
_CUDA_MAGIC_ALG_ _It search_n(_It __first, _It __last, _Size __count, const _Tp& __value, _Pred __pred) {
  if (__count <= 0) return __first;
  for (; __first != __last; ++__first) {
    if (!__pred(*__first, __value)) continue;
    _It __start = __first;
    _Size __run = 1;
    for (;;) {
      if (__run == __count) return __start;
      if (++__first == __last) return __last;
      if (!__pred(*__first, __value)) break;
      ++__run;
    }
  }
  return __last;
}
template <class _It, class _Size, class _Tp>
_CUDA_MAGIC_ALG_ _It search_n(_It __first, _It __last, _Size __count, const _Tp& __value) {
  return ::std::search_n(__first, __last, __count, __value, __cm_alg::__equal());
}

// --- modifying sequence operations ---------------------------------------------------------------

template <class _In, class _Out>
_CUDA_MAGIC_ALG_ _Out copy(_In __first, _In __last, _Out __out) {
  for (; __first != __last; ++__first, (void)++__out) *__out = *__first;
  return __out;
}
template <class _In, class _Out, class _Pred>
_CUDA_MAGIC_ALG_ _Out copy_if(_In __first, _In __last, _Out __out, _Pred __pred) {
  for (; __first != __last; ++__first)
    if (__pred(*__first)) {
      *__out = *__first;
      ++__out;
    }
  return __out;
}
template <class _In, class _Size, class _Out>
_CUDA_MAGIC_ALG_ _Out copy_n(_In __first, _Size __n, _Out __out) {
  for (; __n > 0; --__n, (void)++__first, (void)++__out) *__out = *__first;
  return __out;
}
template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ _It2 copy_backward(_It1 __first, _It1 __last, _It2 __d_last) {
  while (__first != __last) *--__d_last = *--__last;
  return __d_last;
}
// std::move(first, last, out), beside the one-argument std::move (an NVRTC builtin).
template <class _In, class _Out>
_CUDA_MAGIC_ALG_ _Out move(_In __first, _In __last, _Out __out) {
  for (; __first != __last; ++__first, (void)++__out) *__out = __cm_alg::__mv_at(__first);
  return __out;
}
template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ _It2 move_backward(_It1 __first, _It1 __last, _It2 __d_last) {
  while (__first != __last) *--__d_last = __cm_alg::__mv_at(--__last);
  return __d_last;
}

template <class _It, class _Tp>
_CUDA_MAGIC_ALG_ void fill(_It __first, _It __last, const _Tp& __value) {
  for (; __first != __last; ++__first) *__first = __value;
}
template <class _Out, class _Size, class _Tp>
_CUDA_MAGIC_ALG_ _Out fill_n(_Out __first, _Size __n, const _Tp& __value) {
  for (; __n > 0; --__n, (void)++__first) *__first = __value;
  return __first;
}

template <class _In, class _Out, class _Op>
_CUDA_MAGIC_ALG_ _Out transform(_In __first, _In __last, _Out __out, _Op __op) {
  for (; __first != __last; ++__first, (void)++__out) *__out = __op(*__first);
  return __out;
}
template <class _In1, class _In2, class _Out, class _Op>
_CUDA_MAGIC_ALG_ _Out transform(_In1 __first1, _In1 __last1, _In2 __first2, _Out __out, _Op __op) {
  for (; __first1 != __last1; ++__first1, (void)++__first2, (void)++__out) *__out = __op(*__first1, *__first2);
  return __out;
}

template <class _It, class _Gen>
_CUDA_MAGIC_ALG_ void generate(_It __first, _It __last, _Gen __gen) {
  for (; __first != __last; ++__first) *__first = __gen();
}
template <class _Out, class _Size, class _Gen>
_CUDA_MAGIC_ALG_ _Out generate_n(_Out __first, _Size __n, _Gen __gen) {
  for (; __n > 0; --__n, (void)++__first) *__first = __gen();
  return __first;
}

template <class _It, class _Pred>
_CUDA_MAGIC_ALG_ _It remove_if(_It __first, _It __last, _Pred __pred) {
  __first = ::std::find_if(__first, __last, __pred);
  if (__first == __last) return __first;
  _It __out = __first;
  while (++__first != __last)
    if (!__pred(*__first)) {
      *__out = __cm_alg::__mv_at(__first);
      ++__out;
    }
  return __out;
}
template <class _It, class _Tp>
_CUDA_MAGIC_ALG_ _It remove(_It __first, _It __last, const _Tp& __value) {
  return ::std::remove_if(__first, __last, __cm_alg::__equal_to_value<_Tp>{__value});
}
template <class _In, class _Out, class _Pred>
_CUDA_MAGIC_ALG_ _Out remove_copy_if(_In __first, _In __last, _Out __out, _Pred __pred) {
  for (; __first != __last; ++__first)
    if (!__pred(*__first)) {
      *__out = *__first;
      ++__out;
    }
  return __out;
}
template <class _In, class _Out, class _Tp>
_CUDA_MAGIC_ALG_ _Out remove_copy(_In __first, _In __last, _Out __out, const _Tp& __value) {
  for (; __first != __last; ++__first)
    if (!(*__first == __value)) {
      *__out = *__first;
      ++__out;
    }
  return __out;
}

template <class _It, class _Pred, class _Tp>
_CUDA_MAGIC_ALG_ void replace_if(_It __first, _It __last, _Pred __pred, const _Tp& __new) {
  for (; __first != __last; ++__first)
    if (__pred(*__first)) *__first = __new;
}
template <class _It, class _Tp>
_CUDA_MAGIC_ALG_ void replace(_It __first, _It __last, const _Tp& __old, const _Tp& __new) {
  for (; __first != __last; ++__first)
    if (*__first == __old) *__first = __new;
}
template <class _In, class _Out, class _Pred, class _Tp>
_CUDA_MAGIC_ALG_ _Out replace_copy_if(_In __first, _In __last, _Out __out, _Pred __pred, const _Tp& __new) {
  for (; __first != __last; ++__first, (void)++__out) {
    if (__pred(*__first)) *__out = __new;
    else *__out = *__first;
  }
  return __out;
}
template <class _In, class _Out, class _Tp>
_CUDA_MAGIC_ALG_ _Out replace_copy(_In __first, _In __last, _Out __out, const _Tp& __old, const _Tp& __new) {
  for (; __first != __last; ++__first, (void)++__out) {
    if (*__first == __old) *__out = __new;
    else *__out = *__first;
  }
  return __out;
}

template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ void iter_swap(_It1 __a, _It2 __b) {
  using ::std::swap;
  swap(*__a, *__b);
}
template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ _It2 swap_ranges(_It1 __first1, _It1 __last1, _It2 __first2) {
  for (; __first1 != __last1; ++__first1, (void)++__first2) ::std::iter_swap(__first1, __first2);
  return __first2;
}

template <class _It>
_CUDA_MAGIC_ALG_ void reverse(_It __first, _It __last) {
  if constexpr (__cm_alg::__random<_It>::value) {
    if (__first == __last) return;
    for (--__last; __first < __last; ++__first, (void)--__last) ::std::iter_swap(__first, __last);
  } else {
    while (__first != __last && __first != --__last) {
      ::std::iter_swap(__first, __last);
      ++__first;
    }
  }
}
template <class _It, class _Out>
_CUDA_MAGIC_ALG_ _Out reverse_copy(_It __first, _It __last, _Out __out) {
  while (__first != __last) {
    *__out = *--__last;
    ++__out;
  }
  return __out;
}

// rotate: [middle, last) then [first, middle); returns where *first went. Swaps blocks
// (forward iterators suffice), at most last - first swaps.
template <class _It>
_CUDA_MAGIC_ALG_ _It rotate(_It __first, _It __middle, _It __last) {
  if (__first == __middle) return __last;
  if (__middle == __last) return __first;
  _It __result = __cm_alg::__next(__first, __cm_alg::__distance(__middle, __last));
  while (__first != __middle) {
    _It __i = __middle;
    for (; __first != __middle && __i != __last; ++__first, (void)++__i) ::std::iter_swap(__first, __i);
    if (__i == __last) continue;      // [first, middle) still to rotate with [middle, last)
    __middle = __i;                   // the first block is in place: rotate [first, i, last)
  }
  return __result;
}
template <class _It, class _Out>
_CUDA_MAGIC_ALG_ _Out rotate_copy(_It __first, _It __middle, _It __last, _Out __out) {
  return ::std::copy(__first, __middle, ::std::copy(__middle, __last, __out));
}

// shift_left / shift_right (C++20): move the elements n places; the vacated ones are left as
// moved-from. shift_right moves backwards where the iterator can go back, else rotates.
template <class _It>
_CUDA_MAGIC_ALG_ _It shift_left(_It __first, _It __last, __cm_alg::__diff_t<_It> __n) {
  if (__n <= 0) return __last;
  _It __from = __first;
  for (__cm_alg::__diff_t<_It> __i = 0; __i < __n; ++__i, (void)++__from)
    if (__from == __last) return __first;
  return ::std::move(__from, __last, __first);
}
template <class _It>
_CUDA_MAGIC_ALG_ _It shift_right(_It __first, _It __last, __cm_alg::__diff_t<_It> __n) {
  if (__n <= 0) return __first;
  const __cm_alg::__diff_t<_It> __len = __cm_alg::__distance(__first, __last);
  if (__n >= __len) return __last;
  _It __end = __cm_alg::__next(__first, __len - __n);
  _It __result = __cm_alg::__next(__first, __n);
  if constexpr (__cm_alg::__random<_It>::value) {
    ::std::move_backward(__first, __end, __last);
  } else {
    ::std::rotate(__first, __end, __last);
  }
  return __result;
}

template <class _It, class _Pred>
_CUDA_MAGIC_ALG_ _It unique(_It __first, _It __last, _Pred __pred) {
  __first = ::std::adjacent_find(__first, __last, __pred);
  if (__first == __last) return __last;
  _It __out = __first;   // *out is the last kept element
  ++__first;
  while (++__first != __last)
    if (!__pred(*__out, *__first)) *++__out = __cm_alg::__mv_at(__first);
  return ++__out;
}
template <class _It>
_CUDA_MAGIC_ALG_ _It unique(_It __first, _It __last) {
  return ::std::unique(__first, __last, __cm_alg::__equal());
}
// unique_copy compares with the previous input element (forward iterators).
template <class _In, class _Out, class _Pred>
_CUDA_MAGIC_ALG_ _Out unique_copy(_In __first, _In __last, _Out __out, _Pred __pred) {
  if (__first == __last) return __out;
  _In __kept = __first;
  *__out = *__first;
  ++__out;
  while (++__first != __last)
    if (!__pred(*__kept, *__first)) {
      __kept = __first;
      *__out = *__first;
      ++__out;
    }
  return __out;
}
template <class _In, class _Out>
_CUDA_MAGIC_ALG_ _Out unique_copy(_In __first, _In __last, _Out __out) {
  return ::std::unique_copy(__first, __last, __out, __cm_alg::__equal());
}

// --- shuffle and sample: a URBG (uniform random bit generator, e.g. a user's or cuRAND's) ---------
namespace __cm_alg {
// A uniform integer in [0, n) (n >= 1) from g, by rejection (g's range may be smaller than n).
template <class _Gen>
_CUDA_MAGIC_ALG_ unsigned long long __uniform(_Gen& __g, unsigned long long __n) {
  typedef unsigned long long _Up;
  const _Up __gmin = static_cast<_Up>(_Gen::min());
  const _Up __range = static_cast<_Up>(_Gen::max()) - __gmin;   // g gives range + 1 values
  const _Up __limit = __n - 1;
  if (__range == __limit) return static_cast<_Up>(__g()) - __gmin;
  if (__range > __limit) {
    // (range + 1) / n values per bucket, without overflow when range + 1 is 2^64
    const _Up __bucket = __range / __n + (__range % __n == __limit ? 1 : 0);
    _Up __v = 0;
    do __v = (static_cast<_Up>(__g()) - __gmin) / __bucket;
    while (__v >= __n);
    return __v;
  }
  const _Up __values = __range + 1;   // several draws: high part * values + low part
  for (;;) {
    const _Up __high = __uniform(__g, __limit / __values + 1) * __values;
    const _Up __v = __high + (static_cast<_Up>(__g()) - __gmin);
    if (__v >= __high && __v <= __limit) return __v;
  }
}
}  // namespace __cm_alg

// shuffle: Fisher-Yates (random access iterators), each permutation equally likely.
template <class _It, class _Gen>
_CUDA_MAGIC_ALG_ void shuffle(_It __first, _It __last, _Gen&& __g) {
  typedef __cm_alg::__diff_t<_It> _Dp;
  const _Dp __n = __last - __first;
  for (_Dp __i = __n - 1; __i > 0; --__i) {
    const _Dp __j = static_cast<_Dp>(__cm_alg::__uniform(__g, static_cast<unsigned long long>(__i) + 1));
    if (__j != __i) ::std::iter_swap(__first + __i, __first + __j);
  }
}

// sample: min(n, size) elements, each subset equally likely, in their order (selection sampling).
template <class _It, class _Out, class _Size, class _Gen>
_CUDA_MAGIC_ALG_ _Out sample(_It __first, _It __last, _Out __out, _Size __n, _Gen&& __g) {
  typedef unsigned long long _Up;
  _Up __left = static_cast<_Up>(__cm_alg::__distance(__first, __last));
  _Up __want = __n > 0 ? static_cast<_Up>(__n) : 0;
  for (; __want > 0 && __first != __last; ++__first, (void)--__left)
    if (__cm_alg::__uniform(__g, __left) < __want) {
      *__out = *__first;
      ++__out;
      --__want;
    }
  return __out;
}

// --- partitions ---------------------------------------------------------------------------------

template <class _It, class _Pred>
_CUDA_MAGIC_ALG_ bool is_partitioned(_It __first, _It __last, _Pred __pred) {
  __first = ::std::find_if_not(__first, __last, __pred);
  return ::std::none_of(__first, __last, __pred);
}
// partition: not stable; N applications of pred, at most N/2 swaps with bidirectional
// iterators (from both ends), N with forward ones.
template <class _It, class _Pred>
_CUDA_MAGIC_ALG_ _It partition(_It __first, _It __last, _Pred __pred) {
  if constexpr (__cm_alg::__bidirectional<_It>::value) {
    for (;;) {
      __first = ::std::find_if_not(__first, __last, __pred);
      if (__first == __last) return __first;
      do
        if (__first == --__last) return __first;
      while (!__pred(*__last));
      ::std::iter_swap(__first, __last);
      ++__first;
    }
  } else {
    __first = ::std::find_if_not(__first, __last, __pred);
    if (__first == __last) return __first;
    _It __i = __first;
    while (++__i != __last)
      if (__pred(*__i)) {
        ::std::iter_swap(__i, __first);
        ++__first;
      }
    return __first;
  }
}
template <class _In, class _Out1, class _Out2, class _Pred>
_CUDA_MAGIC_ALG_ pair<_Out1, _Out2> partition_copy(_In __first, _In __last, _Out1 __out_true,
                                                   _Out2 __out_false, _Pred __pred) {
  for (; __first != __last; ++__first)
    if (__pred(*__first)) {
      *__out_true = *__first;
      ++__out_true;
    } else {
      *__out_false = *__first;
      ++__out_false;
    }
  return pair<_Out1, _Out2>(__out_true, __out_false);
}
template <class _It, class _Pred>
_CUDA_MAGIC_ALG_ _It partition_point(_It __first, _It __last, _Pred __pred) {
  __cm_alg::__diff_t<_It> __len = __cm_alg::__distance(__first, __last);
  while (__len > 0) {
    const __cm_alg::__diff_t<_It> __half = __len / 2;
    _It __mid = __cm_alg::__next(__first, __half);
    if (__pred(*__mid)) {
      __first = ++__mid;
      __len -= __half + 1;
    } else {
      __len = __half;
    }
  }
  return __first;
}

// --- binary search (on partitioned ranges) ----------------------------------------------------------

template <class _It, class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ _It lower_bound(_It __first, _It __last, const _Tp& __value, _Comp __comp) {
  return ::std::partition_point(__first, __last, [&](const auto& __x) { return bool(__comp(__x, __value)); });
}
template <class _It, class _Tp>
_CUDA_MAGIC_ALG_ _It lower_bound(_It __first, _It __last, const _Tp& __value) {
  return ::std::lower_bound(__first, __last, __value, __cm_alg::__less());
}
template <class _It, class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ _It upper_bound(_It __first, _It __last, const _Tp& __value, _Comp __comp) {
  return ::std::partition_point(__first, __last, [&](const auto& __x) { return !__comp(__value, __x); });
}
template <class _It, class _Tp>
_CUDA_MAGIC_ALG_ _It upper_bound(_It __first, _It __last, const _Tp& __value) {
  return ::std::upper_bound(__first, __last, __value, __cm_alg::__less());
}
template <class _It, class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ pair<_It, _It> equal_range(_It __first, _It __last, const _Tp& __value, _Comp __comp) {
  return pair<_It, _It>(::std::lower_bound(__first, __last, __value, __comp),
                        ::std::upper_bound(__first, __last, __value, __comp));
}
template <class _It, class _Tp>
_CUDA_MAGIC_ALG_ pair<_It, _It> equal_range(_It __first, _It __last, const _Tp& __value) {
  return ::std::equal_range(__first, __last, __value, __cm_alg::__less());
}
template <class _It, class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ bool binary_search(_It __first, _It __last, const _Tp& __value, _Comp __comp) {
  __first = ::std::lower_bound(__first, __last, __value, __comp);
  return __first != __last && !__comp(__value, *__first);
}
template <class _It, class _Tp>
_CUDA_MAGIC_ALG_ bool binary_search(_It __first, _It __last, const _Tp& __value) {
  return ::std::binary_search(__first, __last, __value, __cm_alg::__less());
}

// --- sorted ranges -------------------------------------------------------------------------------

template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ _It is_sorted_until(_It __first, _It __last, _Comp __comp) {
  if (__first == __last) return __last;
  for (_It __next = __first; ++__next != __last; __first = __next)
    if (__comp(*__next, *__first)) return __next;
  return __last;
}
template <class _It>
_CUDA_MAGIC_ALG_ _It is_sorted_until(_It __first, _It __last) {
  return ::std::is_sorted_until(__first, __last, __cm_alg::__less());
}
template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ bool is_sorted(_It __first, _It __last, _Comp __comp) {
  return ::std::is_sorted_until(__first, __last, __comp) == __last;
}
template <class _It>
_CUDA_MAGIC_ALG_ bool is_sorted(_It __first, _It __last) {
  return ::std::is_sorted_until(__first, __last, __cm_alg::__less()) == __last;
}

// merge: stable (equal elements from the first range first).
template <class _In1, class _In2, class _Out, class _Comp>
_CUDA_MAGIC_ALG_ _Out merge(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2, _Out __out, _Comp __comp) {
  for (; __first1 != __last1 && __first2 != __last2; ++__out) {
    if (__comp(*__first2, *__first1)) {
      *__out = *__first2;
      ++__first2;
    } else {
      *__out = *__first1;
      ++__first1;
    }
  }
  return ::std::copy(__first2, __last2, ::std::copy(__first1, __last1, __out));
}
template <class _In1, class _In2, class _Out>
_CUDA_MAGIC_ALG_ _Out merge(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2, _Out __out) {
  return ::std::merge(__first1, __last1, __first2, __last2, __out, __cm_alg::__less());
}

template <class _In1, class _In2, class _Comp>
_CUDA_MAGIC_ALG_ bool includes(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2, _Comp __comp) {
  for (; __first2 != __last2; ++__first1) {
    if (__first1 == __last1 || __comp(*__first2, *__first1)) return false;
    if (!__comp(*__first1, *__first2)) ++__first2;
  }
  return true;
}
template <class _In1, class _In2>
_CUDA_MAGIC_ALG_ bool includes(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2) {
  return ::std::includes(__first1, __last1, __first2, __last2, __cm_alg::__less());
}

template <class _In1, class _In2, class _Out, class _Comp>
_CUDA_MAGIC_ALG_ _Out set_union(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2, _Out __out,
                                _Comp __comp) {
  for (; __first1 != __last1 && __first2 != __last2; ++__out) {
    if (__comp(*__first2, *__first1)) {
      *__out = *__first2;
      ++__first2;
    } else {
      if (!__comp(*__first1, *__first2)) ++__first2;
      *__out = *__first1;
      ++__first1;
    }
  }
  return ::std::copy(__first2, __last2, ::std::copy(__first1, __last1, __out));
}
template <class _In1, class _In2, class _Out>
_CUDA_MAGIC_ALG_ _Out set_union(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2, _Out __out) {
  return ::std::set_union(__first1, __last1, __first2, __last2, __out, __cm_alg::__less());
}
template <class _In1, class _In2, class _Out, class _Comp>
_CUDA_MAGIC_ALG_ _Out set_intersection(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2, _Out __out,
                                       _Comp __comp) {
  while (__first1 != __last1 && __first2 != __last2) {
    if (__comp(*__first1, *__first2)) {
      ++__first1;
    } else if (__comp(*__first2, *__first1)) {
      ++__first2;
    } else {
      *__out = *__first1;
      ++__out;
      ++__first1;
      ++__first2;
    }
  }
  return __out;
}
template <class _In1, class _In2, class _Out>
_CUDA_MAGIC_ALG_ _Out set_intersection(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2, _Out __out) {
  return ::std::set_intersection(__first1, __last1, __first2, __last2, __out, __cm_alg::__less());
}
template <class _In1, class _In2, class _Out, class _Comp>
_CUDA_MAGIC_ALG_ _Out set_difference(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2, _Out __out,
                                     _Comp __comp) {
  while (__first1 != __last1 && __first2 != __last2) {
    if (__comp(*__first1, *__first2)) {
      *__out = *__first1;
      ++__out;
      ++__first1;
    } else {
      if (!__comp(*__first2, *__first1)) ++__first1;
      ++__first2;
    }
  }
  return ::std::copy(__first1, __last1, __out);
}
template <class _In1, class _In2, class _Out>
_CUDA_MAGIC_ALG_ _Out set_difference(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2, _Out __out) {
  return ::std::set_difference(__first1, __last1, __first2, __last2, __out, __cm_alg::__less());
}
template <class _In1, class _In2, class _Out, class _Comp>
_CUDA_MAGIC_ALG_ _Out set_symmetric_difference(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2,
                                               _Out __out, _Comp __comp) {
  while (__first1 != __last1 && __first2 != __last2) {
    if (__comp(*__first1, *__first2)) {
      *__out = *__first1;
      ++__out;
      ++__first1;
    } else if (__comp(*__first2, *__first1)) {
      *__out = *__first2;
      ++__out;
      ++__first2;
    } else {
      ++__first1;
      ++__first2;
    }
  }
  return ::std::copy(__first2, __last2, ::std::copy(__first1, __last1, __out));
}
template <class _In1, class _In2, class _Out>
_CUDA_MAGIC_ALG_ _Out set_symmetric_difference(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2,
                                               _Out __out) {
  return ::std::set_symmetric_difference(__first1, __last1, __first2, __last2, __out, __cm_alg::__less());
}

// --- heaps (random access iterators; a max-heap by comp) ---------------------------------------------
namespace __cm_alg {
// Put value at hole (index) and sift it up towards top.
template <class _It, class _Dp, class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ void __sift_up(_It __first, _Dp __hole, _Dp __top, _Tp&& __value, _Comp& __comp) {
  while (__hole > __top) {
    const _Dp __parent = (__hole - 1) / 2;
    if (!__comp(__first[__parent], __value)) break;
    __first[__hole] = __mv(__first[__parent]);
    __hole = __parent;
  }
  __first[__hole] = static_cast<_Tp&&>(__value);
}
// Fill the hole at index hole of the heap [first, first + len) with value, sifting it down.
template <class _It, class _Dp, class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ void __sift_down(_It __first, _Dp __hole, _Dp __len, _Tp&& __value, _Comp& __comp) {
  for (;;) {
    _Dp __child = 2 * __hole + 1;
    if (__child >= __len) break;
    if (__child + 1 < __len && __comp(__first[__child], __first[__child + 1])) ++__child;
    if (!__comp(__value, __first[__child])) break;
    __first[__hole] = __mv(__first[__child]);
    __hole = __child;
  }
  __first[__hole] = static_cast<_Tp&&>(__value);
}
}  // namespace __cm_alg

template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ _It is_heap_until(_It __first, _It __last, _Comp __comp) {
  typedef __cm_alg::__diff_t<_It> _Dp;
  const _Dp __len = __last - __first;
  for (_Dp __child = 1; __child < __len; ++__child)
    if (__comp(__first[(__child - 1) / 2], __first[__child])) return __first + __child;
  return __last;
}
template <class _It>
_CUDA_MAGIC_ALG_ _It is_heap_until(_It __first, _It __last) {
  return ::std::is_heap_until(__first, __last, __cm_alg::__less());
}
template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ bool is_heap(_It __first, _It __last, _Comp __comp) {
  return ::std::is_heap_until(__first, __last, __comp) == __last;
}
template <class _It>
_CUDA_MAGIC_ALG_ bool is_heap(_It __first, _It __last) {
  return ::std::is_heap_until(__first, __last, __cm_alg::__less()) == __last;
}

template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ void push_heap(_It __first, _It __last, _Comp __comp) {
  typedef __cm_alg::__diff_t<_It> _Dp;
  const _Dp __len = __last - __first;
  if (__len < 2) return;
  __cm_alg::__value_t<_It> __value = __cm_alg::__mv(__first[__len - 1]);
  __cm_alg::__sift_up(__first, __len - 1, _Dp(0), __cm_alg::__mv(__value), __comp);
}
template <class _It>
_CUDA_MAGIC_ALG_ void push_heap(_It __first, _It __last) {
  ::std::push_heap(__first, __last, __cm_alg::__less());
}
template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ void pop_heap(_It __first, _It __last, _Comp __comp) {
  typedef __cm_alg::__diff_t<_It> _Dp;
  const _Dp __len = __last - __first;
  if (__len < 2) return;
  __cm_alg::__value_t<_It> __value = __cm_alg::__mv(__first[__len - 1]);
  __first[__len - 1] = __cm_alg::__mv(__first[0]);
  __cm_alg::__sift_down(__first, _Dp(0), __len - 1, __cm_alg::__mv(__value), __comp);
}
template <class _It>
_CUDA_MAGIC_ALG_ void pop_heap(_It __first, _It __last) {
  ::std::pop_heap(__first, __last, __cm_alg::__less());
}
template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ void make_heap(_It __first, _It __last, _Comp __comp) {
  typedef __cm_alg::__diff_t<_It> _Dp;
  const _Dp __len = __last - __first;
  for (_Dp __i = __len / 2; __i > 0;) {
    --__i;
    __cm_alg::__value_t<_It> __value = __cm_alg::__mv(__first[__i]);
    __cm_alg::__sift_down(__first, __i, __len, __cm_alg::__mv(__value), __comp);
  }
}
template <class _It>
_CUDA_MAGIC_ALG_ void make_heap(_It __first, _It __last) {
  ::std::make_heap(__first, __last, __cm_alg::__less());
}
template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ void sort_heap(_It __first, _It __last, _Comp __comp) {
  for (; __last - __first > 1; --__last) ::std::pop_heap(__first, __last, __comp);
}
template <class _It>
_CUDA_MAGIC_ALG_ void sort_heap(_It __first, _It __last) {
  ::std::sort_heap(__first, __last, __cm_alg::__less());
}

// partial_sort: the smallest middle - first elements, sorted, in [first, middle) (a heap of
// them, then sort_heap); the rest in an unspecified order. O(N log M).
template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ void partial_sort(_It __first, _It __middle, _It __last, _Comp __comp) {
  typedef __cm_alg::__diff_t<_It> _Dp;
  const _Dp __len = __middle - __first;
  if (__len == 0) return;
  ::std::make_heap(__first, __middle, __comp);
  for (_It __i = __middle; __i != __last; ++__i)
    if (__comp(*__i, *__first)) {
      __cm_alg::__value_t<_It> __value = __cm_alg::__mv(*__i);
      *__i = __cm_alg::__mv(*__first);
      __cm_alg::__sift_down(__first, _Dp(0), __len, __cm_alg::__mv(__value), __comp);
    }
  ::std::sort_heap(__first, __middle, __comp);
}
template <class _It>
_CUDA_MAGIC_ALG_ void partial_sort(_It __first, _It __middle, _It __last) {
  ::std::partial_sort(__first, __middle, __last, __cm_alg::__less());
}
template <class _In, class _It, class _Comp>
_CUDA_MAGIC_ALG_ _It partial_sort_copy(_In __first, _In __last, _It __d_first, _It __d_last, _Comp __comp) {
  typedef __cm_alg::__diff_t<_It> _Dp;
  _It __d = __d_first;
  for (; __first != __last && __d != __d_last; ++__first, (void)++__d) *__d = *__first;
  const _Dp __len = __d - __d_first;
  if (__len == 0) return __d;
  ::std::make_heap(__d_first, __d, __comp);
  for (; __first != __last; ++__first)
    if (__comp(*__first, *__d_first)) {
      __cm_alg::__value_t<_It> __value = *__first;
      __cm_alg::__sift_down(__d_first, _Dp(0), __len, __cm_alg::__mv(__value), __comp);
    }
  ::std::sort_heap(__d_first, __d, __comp);
  return __d;
}
template <class _In, class _It>
_CUDA_MAGIC_ALG_ _It partial_sort_copy(_In __first, _In __last, _It __d_first, _It __d_last) {
  return ::std::partial_sort_copy(__first, __last, __d_first, __d_last, __cm_alg::__less());
}

// --- minimum and maximum --------------------------------------------------------------------------

template <class _Tp>
_CUDA_MAGIC_ALG_ const _Tp& min(const _Tp& __a, const _Tp& __b) { return __b < __a ? __b : __a; }
template <class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ const _Tp& min(const _Tp& __a, const _Tp& __b, _Comp __comp) {
  return __comp(__b, __a) ? __b : __a;
}
template <class _Tp>
_CUDA_MAGIC_ALG_ const _Tp& max(const _Tp& __a, const _Tp& __b) { return __a < __b ? __b : __a; }
template <class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ const _Tp& max(const _Tp& __a, const _Tp& __b, _Comp __comp) {
  return __comp(__a, __b) ? __b : __a;
}
template <class _Tp>
_CUDA_MAGIC_ALG_ pair<const _Tp&, const _Tp&> minmax(const _Tp& __a, const _Tp& __b) {
  return __b < __a ? pair<const _Tp&, const _Tp&>(__b, __a) : pair<const _Tp&, const _Tp&>(__a, __b);
}
template <class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ pair<const _Tp&, const _Tp&> minmax(const _Tp& __a, const _Tp& __b, _Comp __comp) {
  return __comp(__b, __a) ? pair<const _Tp&, const _Tp&>(__b, __a) : pair<const _Tp&, const _Tp&>(__a, __b);
}

// min_element: the first smallest; max_element: the first largest.
template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ _It min_element(_It __first, _It __last, _Comp __comp) {
  if (__first == __last) return __last;
  _It __best = __first;
  while (++__first != __last)
    if (__comp(*__first, *__best)) __best = __first;
  return __best;
}
template <class _It>
_CUDA_MAGIC_ALG_ _It min_element(_It __first, _It __last) {
  return ::std::min_element(__first, __last, __cm_alg::__less());
}
template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ _It max_element(_It __first, _It __last, _Comp __comp) {
  if (__first == __last) return __last;
  _It __best = __first;
  while (++__first != __last)
    if (__comp(*__best, *__first)) __best = __first;
  return __best;
}
template <class _It>
_CUDA_MAGIC_ALG_ _It max_element(_It __first, _It __last) {
  return ::std::max_element(__first, __last, __cm_alg::__less());
}
// minmax_element: (the first smallest, the last largest), 3 comparisons per 2 elements.
template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ pair<_It, _It> minmax_element(_It __first, _It __last, _Comp __comp) {
  _It __lo = __first, __hi = __first;
  if (__first == __last || ++__first == __last) return pair<_It, _It>(__lo, __hi);
  while (__first != __last) {
    _It __a = __first;
    if (++__first == __last) {   // one left over
      if (__comp(*__a, *__lo)) __lo = __a;
      else if (!__comp(*__a, *__hi)) __hi = __a;
      break;
    }
    _It __b = __first;
    ++__first;
    if (__comp(*__b, *__a)) {
      if (__comp(*__b, *__lo)) __lo = __b;
      if (!__comp(*__a, *__hi)) __hi = __a;
    } else {
      if (__comp(*__a, *__lo)) __lo = __a;
      if (!__comp(*__b, *__hi)) __hi = __b;
    }
  }
  return pair<_It, _It>(__lo, __hi);
}
template <class _It>
_CUDA_MAGIC_ALG_ pair<_It, _It> minmax_element(_It __first, _It __last) {
  return ::std::minmax_element(__first, __last, __cm_alg::__less());
}

// The initializer_list overloads return values: the first smallest, the first largest,
// (the first smallest, the last largest).
template <class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ _Tp min(initializer_list<_Tp> __il, _Comp __comp) {
  return *::std::min_element(__il.begin(), __il.end(), __comp);
}
template <class _Tp>
_CUDA_MAGIC_ALG_ _Tp min(initializer_list<_Tp> __il) {
  return *::std::min_element(__il.begin(), __il.end(), __cm_alg::__less());
}
template <class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ _Tp max(initializer_list<_Tp> __il, _Comp __comp) {
  return *::std::max_element(__il.begin(), __il.end(), __comp);
}
template <class _Tp>
_CUDA_MAGIC_ALG_ _Tp max(initializer_list<_Tp> __il) {
  return *::std::max_element(__il.begin(), __il.end(), __cm_alg::__less());
}
template <class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ pair<_Tp, _Tp> minmax(initializer_list<_Tp> __il, _Comp __comp) {
  pair<const _Tp*, const _Tp*> __p = ::std::minmax_element(__il.begin(), __il.end(), __comp);
  return pair<_Tp, _Tp>(*__p.first, *__p.second);
}
template <class _Tp>
_CUDA_MAGIC_ALG_ pair<_Tp, _Tp> minmax(initializer_list<_Tp> __il) {
  return ::std::minmax(__il, __cm_alg::__less());
}

template <class _Tp, class _Comp>
_CUDA_MAGIC_ALG_ const _Tp& clamp(const _Tp& __v, const _Tp& __lo, const _Tp& __hi, _Comp __comp) {
  return __comp(__v, __lo) ? __lo : __comp(__hi, __v) ? __hi : __v;
}
template <class _Tp>
_CUDA_MAGIC_ALG_ const _Tp& clamp(const _Tp& __v, const _Tp& __lo, const _Tp& __hi) {
  return __v < __lo ? __lo : __hi < __v ? __hi : __v;
}

// --- comparisons and permutations ----------------------------------------------------------------

template <class _In1, class _In2, class _Comp>
_CUDA_MAGIC_ALG_ bool lexicographical_compare(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2,
                                              _Comp __comp) {
  for (; __first2 != __last2; ++__first1, (void)++__first2) {
    if (__first1 == __last1 || __comp(*__first1, *__first2)) return true;
    if (__comp(*__first2, *__first1)) return false;
  }
  return false;
}
template <class _In1, class _In2>
_CUDA_MAGIC_ALG_ bool lexicographical_compare(_In1 __first1, _In1 __last1, _In2 __first2, _In2 __last2) {
  return ::std::lexicographical_compare(__first1, __last1, __first2, __last2, __cm_alg::__less());
}

// is_permutation: O(N^2) comparisons at worst (the standard's bound), N when equal.
template <class _It1, class _It2, class _Pred>
_CUDA_MAGIC_ALG_ bool is_permutation(_It1 __first1, _It1 __last1, _It2 __first2, _It2 __last2, _Pred __pred) {
  for (; __first1 != __last1 && __first2 != __last2 && __pred(*__first1, *__first2);
       ++__first1, (void)++__first2) {}
  if (__cm_alg::__distance(__first1, __last1) != __cm_alg::__distance(__first2, __last2)) return false;
  for (_It1 __i = __first1; __i != __last1; ++__i) {
    bool __seen = false;   // counted already, at an earlier equal element
    for (_It1 __j = __first1; __j != __i; ++__j)
      if (__pred(*__j, *__i)) {
        __seen = true;
        break;
      }
    if (__seen) continue;
    __cm_alg::__diff_t<_It1> __in2 = 0, __in1 = 0;
    for (_It2 __j = __first2; __j != __last2; ++__j)
      if (__pred(*__i, *__j)) ++__in2;
    if (__in2 == 0) return false;
    for (_It1 __j = __i; __j != __last1; ++__j)
      if (__pred(*__i, *__j)) ++__in1;
    if (__in1 != __in2) return false;
  }
  return true;
}
template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ bool is_permutation(_It1 __first1, _It1 __last1, _It2 __first2, _It2 __last2) {
  return ::std::is_permutation(__first1, __last1, __first2, __last2, __cm_alg::__equal());
}
template <class _It1, class _It2, class _Pred>
_CUDA_MAGIC_ALG_ bool is_permutation(_It1 __first1, _It1 __last1, _It2 __first2, _Pred __pred) {
  return ::std::is_permutation(__first1, __last1, __first2,
                               __cm_alg::__next(__first2, __cm_alg::__distance(__first1, __last1)), __pred);
}
template <class _It1, class _It2>
_CUDA_MAGIC_ALG_ bool is_permutation(_It1 __first1, _It1 __last1, _It2 __first2) {
  return ::std::is_permutation(__first1, __last1, __first2, __cm_alg::__equal());
}

// next_permutation / prev_permutation (bidirectional): the next (previous) arrangement in
// lexicographic order by comp; false (and the first, resp. last, arrangement) after the last.
template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ bool next_permutation(_It __first, _It __last, _Comp __comp) {
  if (__first == __last) return false;
  _It __i = __last;
  if (__first == --__i) return false;
  for (;;) {
    _It __after = __i;
    if (__comp(*--__i, *__after)) {      // *i < *after: the suffix from after is descending
      _It __j = __last;
      while (!__comp(*__i, *--__j)) {}
      ::std::iter_swap(__i, __j);
      ::std::reverse(__after, __last);
      return true;
    }
    if (__i == __first) {
      ::std::reverse(__first, __last);
      return false;
    }
  }
}
template <class _It>
_CUDA_MAGIC_ALG_ bool next_permutation(_It __first, _It __last) {
  return ::std::next_permutation(__first, __last, __cm_alg::__less());
}
template <class _It, class _Comp>
_CUDA_MAGIC_ALG_ bool prev_permutation(_It __first, _It __last, _Comp __comp) {
  if (__first == __last) return false;
  _It __i = __last;
  if (__first == --__i) return false;
  for (;;) {
    _It __after = __i;
    if (__comp(*__after, *--__i)) {
      _It __j = __last;
      while (!__comp(*--__j, *__i)) {}
      ::std::iter_swap(__i, __j);
      ::std::reverse(__after, __last);
      return true;
    }
    if (__i == __first) {
      ::std::reverse(__first, __last);
      return false;
    }
  }
}
template <class _It>
_CUDA_MAGIC_ALG_ bool prev_permutation(_It __first, _It __last) {
  return ::std::prev_permutation(__first, __last, __cm_alg::__less());
}

}  // namespace std

#undef _CUDA_MAGIC_ALG_
