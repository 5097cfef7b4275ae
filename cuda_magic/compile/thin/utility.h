// cuda-magic's <utility> for NVRTC: std::pair and the small <utility> names, written for
// device code on top of libcu++'s <cuda/std/type_traits> (whose names are already in std).
// Meaning follows libstdc++ (g++ 12): std::pair is std's own type, not cuda::std::pair.
namespace std {

// what <cuda/std/type_traits> brings anyway (comparisons below take one pair type, as libstdc++'s)
using ::cuda::std::declval;
using ::cuda::std::move_if_noexcept;
using ::cuda::std::swap;
using ::cuda::std::integer_sequence;
using ::cuda::std::index_sequence;
using ::cuda::std::make_integer_sequence;
using ::cuda::std::make_index_sequence;
using ::cuda::std::index_sequence_for;

}  // namespace std

// std::tuple_size and std::tuple_element are libcu++'s own templates in std, so structured
// bindings and user specialisations meet ours.  CCCL 3.5's <cuda/std/type_traits> declares
// them with the cv specialisations; 3.0-3.2 do it in structured_bindings.h (light: forward
// declarations), and 3.0/3.1 declare them variadic there, without the cv specialisations.
#if __has_include(<cuda/std/__tuple_dir/structured_bindings.h>)
#include <cuda/std/__tuple_dir/structured_bindings.h>
#endif
namespace std {
#if CCCL_VERSION < 3002000
template <class _Tp, class...> using __cm_if_sized = _Tp;  // only where tuple_size<T> is complete
template <class _Tp>
struct tuple_size<__cm_if_sized<const _Tp, enable_if_t<!is_volatile_v<_Tp>>,
                                integral_constant<::size_t, sizeof(tuple_size<_Tp>)>>>
    : integral_constant<::size_t, tuple_size<_Tp>::value> {};
template <class _Tp>
struct tuple_size<__cm_if_sized<volatile _Tp, enable_if_t<!is_const_v<_Tp>>,
                                integral_constant<::size_t, sizeof(tuple_size<_Tp>)>>>
    : integral_constant<::size_t, tuple_size<_Tp>::value> {};
template <class _Tp>
struct tuple_size<__cm_if_sized<const volatile _Tp, integral_constant<::size_t, sizeof(tuple_size<_Tp>)>>>
    : integral_constant<::size_t, tuple_size<_Tp>::value> {};
template <::size_t _Ip, class _Tp>
struct tuple_element<_Ip, const _Tp> { using type = const typename tuple_element<_Ip, _Tp>::type; };
template <::size_t _Ip, class _Tp>
struct tuple_element<_Ip, volatile _Tp> { using type = volatile typename tuple_element<_Ip, _Tp>::type; };
template <::size_t _Ip, class _Tp>
struct tuple_element<_Ip, const volatile _Tp> { using type = const volatile typename tuple_element<_Ip, _Tp>::type; };
#endif
template <class _Tp> inline constexpr ::size_t tuple_size_v = tuple_size<_Tp>::value;
template <::size_t _Ip, class _Tp> using tuple_element_t = typename tuple_element<_Ip, _Tp>::type;

template <class _Tp, class _Up = _Tp>
__host__ __device__ constexpr _Tp exchange(_Tp& __obj, _Up&& __new) {
  _Tp __old = static_cast<_Tp&&>(__obj);
  __obj = static_cast<_Up&&>(__new);
  return __old;
}

template <class _Tp>
__host__ __device__ constexpr add_const_t<_Tp>& as_const(_Tp& __t) noexcept { return __t; }
template <class _Tp> void as_const(const _Tp&&) = delete;

struct piecewise_construct_t { explicit piecewise_construct_t() = default; };
inline constexpr piecewise_construct_t piecewise_construct{};
struct in_place_t { explicit in_place_t() = default; };
inline constexpr in_place_t in_place{};
template <class _Tp> struct in_place_type_t { explicit in_place_type_t() = default; };
template <class _Tp> inline constexpr in_place_type_t<_Tp> in_place_type{};
template <::size_t _Ip> struct in_place_index_t { explicit in_place_index_t() = default; };
template <::size_t _Ip> inline constexpr in_place_index_t<_Ip> in_place_index{};

template <class...> class tuple;  // <tuple>'s; pair's piecewise constructor is defined there

// T is implicitly default-constructible: copy-list-initialisable from {}
template <class _Tp> __host__ __device__ void __cm_from_braces(const _Tp&);
template <class _Tp, class = void> struct __cm_implicit_default : false_type {};
template <class _Tp>
struct __cm_implicit_default<_Tp, decltype(__cm_from_braces<_Tp>({}))> : true_type {};

template <class _Tp> struct __cm_unwrap { using type = _Tp; };
template <class _Tp> struct __cm_unwrap<::cuda::std::reference_wrapper<_Tp>> { using type = _Tp&; };
template <class _Tp> using __cm_unwrap_decay_t = typename __cm_unwrap<decay_t<_Tp>>::type;

struct __cm_nat {};

template <class _T1, class _T2>
struct pair {
  using first_type = _T1;
  using second_type = _T2;
  _T1 first;
  _T2 second;

  template <class _U1 = _T1, class _U2 = _T2,
            enable_if_t<__cm_implicit_default<_U1>::value && __cm_implicit_default<_U2>::value, int> = 0>
  __host__ __device__ constexpr pair() : first(), second() {}
  template <class _U1 = _T1, class _U2 = _T2,
            enable_if_t<is_default_constructible_v<_U1> && is_default_constructible_v<_U2>
                        && !(__cm_implicit_default<_U1>::value && __cm_implicit_default<_U2>::value), int> = 0>
  __host__ __device__ explicit constexpr pair() : first(), second() {}

  template <class _U1 = _T1, class _U2 = _T2,
            enable_if_t<is_copy_constructible_v<_U1> && is_copy_constructible_v<_U2>
                        && is_convertible_v<const _U1&, _U1> && is_convertible_v<const _U2&, _U2>, int> = 0>
  __host__ __device__ constexpr pair(const _T1& __a, const _T2& __b) : first(__a), second(__b) {}
  template <class _U1 = _T1, class _U2 = _T2,
            enable_if_t<is_copy_constructible_v<_U1> && is_copy_constructible_v<_U2>
                        && !(is_convertible_v<const _U1&, _U1> && is_convertible_v<const _U2&, _U2>), int> = 0>
  __host__ __device__ explicit constexpr pair(const _T1& __a, const _T2& __b) : first(__a), second(__b) {}

  template <class _U1, class _U2,
            enable_if_t<is_constructible_v<_T1, _U1&&> && is_constructible_v<_T2, _U2&&>
                        && is_convertible_v<_U1&&, _T1> && is_convertible_v<_U2&&, _T2>, int> = 0>
  __host__ __device__ constexpr pair(_U1&& __a, _U2&& __b)
      : first(static_cast<_U1&&>(__a)), second(static_cast<_U2&&>(__b)) {}
  template <class _U1, class _U2,
            enable_if_t<is_constructible_v<_T1, _U1&&> && is_constructible_v<_T2, _U2&&>
                        && !(is_convertible_v<_U1&&, _T1> && is_convertible_v<_U2&&, _T2>), int> = 0>
  __host__ __device__ explicit constexpr pair(_U1&& __a, _U2&& __b)
      : first(static_cast<_U1&&>(__a)), second(static_cast<_U2&&>(__b)) {}

  template <class _U1, class _U2,
            enable_if_t<is_constructible_v<_T1, const _U1&> && is_constructible_v<_T2, const _U2&>
                        && is_convertible_v<const _U1&, _T1> && is_convertible_v<const _U2&, _T2>, int> = 0>
  __host__ __device__ constexpr pair(const pair<_U1, _U2>& __p) : first(__p.first), second(__p.second) {}
  template <class _U1, class _U2,
            enable_if_t<is_constructible_v<_T1, const _U1&> && is_constructible_v<_T2, const _U2&>
                        && !(is_convertible_v<const _U1&, _T1> && is_convertible_v<const _U2&, _T2>), int> = 0>
  __host__ __device__ explicit constexpr pair(const pair<_U1, _U2>& __p) : first(__p.first), second(__p.second) {}

  template <class _U1, class _U2,
            enable_if_t<is_constructible_v<_T1, _U1&&> && is_constructible_v<_T2, _U2&&>
                        && is_convertible_v<_U1&&, _T1> && is_convertible_v<_U2&&, _T2>, int> = 0>
  __host__ __device__ constexpr pair(pair<_U1, _U2>&& __p)
      : first(static_cast<_U1&&>(__p.first)), second(static_cast<_U2&&>(__p.second)) {}
  template <class _U1, class _U2,
            enable_if_t<is_constructible_v<_T1, _U1&&> && is_constructible_v<_T2, _U2&&>
                        && !(is_convertible_v<_U1&&, _T1> && is_convertible_v<_U2&&, _T2>), int> = 0>
  __host__ __device__ explicit constexpr pair(pair<_U1, _U2>&& __p)
      : first(static_cast<_U1&&>(__p.first)), second(static_cast<_U2&&>(__p.second)) {}

  // defined in <tuple>
  template <class... _Args1, class... _Args2>
  __host__ __device__ constexpr pair(piecewise_construct_t, tuple<_Args1...> __a, tuple<_Args2...> __b);

  pair(const pair&) = default;
  pair(pair&&) = default;

  // assignment writes through reference members, as libstdc++'s does
  __host__ __device__ constexpr pair& operator=(
      conditional_t<is_copy_assignable_v<_T1> && is_copy_assignable_v<_T2>, const pair&, const __cm_nat&> __p) {
    first = __p.first;
    second = __p.second;
    return *this;
  }
  __host__ __device__ constexpr pair& operator=(
      conditional_t<is_move_assignable_v<_T1> && is_move_assignable_v<_T2>, pair&&, __cm_nat&&> __p)
      noexcept(is_nothrow_move_assignable_v<_T1> && is_nothrow_move_assignable_v<_T2>) {
    first = static_cast<_T1&&>(__p.first);
    second = static_cast<_T2&&>(__p.second);
    return *this;
  }
  template <class _U1, class _U2,
            enable_if_t<is_assignable_v<_T1&, const _U1&> && is_assignable_v<_T2&, const _U2&>, int> = 0>
  __host__ __device__ constexpr pair& operator=(const pair<_U1, _U2>& __p) {
    first = __p.first;
    second = __p.second;
    return *this;
  }
  template <class _U1, class _U2, enable_if_t<is_assignable_v<_T1&, _U1&&> && is_assignable_v<_T2&, _U2&&>, int> = 0>
  __host__ __device__ constexpr pair& operator=(pair<_U1, _U2>&& __p) {
    first = static_cast<_U1&&>(__p.first);
    second = static_cast<_U2&&>(__p.second);
    return *this;
  }

  __host__ __device__ constexpr void swap(pair& __p) noexcept(is_nothrow_swappable_v<_T1> && is_nothrow_swappable_v<_T2>) {
    using ::cuda::std::swap;
    swap(first, __p.first);
    swap(second, __p.second);
  }
};

template <class _T1, class _T2> pair(_T1, _T2) -> pair<_T1, _T2>;

template <class _T1, class _T2>
__host__ __device__ constexpr pair<__cm_unwrap_decay_t<_T1>, __cm_unwrap_decay_t<_T2>> make_pair(_T1&& __a, _T2&& __b) {
  return pair<__cm_unwrap_decay_t<_T1>, __cm_unwrap_decay_t<_T2>>(static_cast<_T1&&>(__a), static_cast<_T2&&>(__b));
}

template <class _T1, class _T2>
__host__ __device__ constexpr bool operator==(const pair<_T1, _T2>& __x, const pair<_T1, _T2>& __y) {
  return __x.first == __y.first && __x.second == __y.second;
}
template <class _T1, class _T2>
__host__ __device__ constexpr bool operator!=(const pair<_T1, _T2>& __x, const pair<_T1, _T2>& __y) {
  return !(__x == __y);
}
template <class _T1, class _T2>
__host__ __device__ constexpr bool operator<(const pair<_T1, _T2>& __x, const pair<_T1, _T2>& __y) {
  return __x.first < __y.first || (!(__y.first < __x.first) && __x.second < __y.second);
}
template <class _T1, class _T2>
__host__ __device__ constexpr bool operator>(const pair<_T1, _T2>& __x, const pair<_T1, _T2>& __y) {
  return __y < __x;
}
template <class _T1, class _T2>
__host__ __device__ constexpr bool operator<=(const pair<_T1, _T2>& __x, const pair<_T1, _T2>& __y) {
  return !(__y < __x);
}
template <class _T1, class _T2>
__host__ __device__ constexpr bool operator>=(const pair<_T1, _T2>& __x, const pair<_T1, _T2>& __y) {
  return !(__x < __y);
}

template <class _T1, class _T2, enable_if_t<is_swappable_v<_T1> && is_swappable_v<_T2>, int> = 0>
__host__ __device__ constexpr void swap(pair<_T1, _T2>& __x, pair<_T1, _T2>& __y) noexcept(noexcept(__x.swap(__y))) {
  __x.swap(__y);
}

template <class _T1, class _T2> struct tuple_size<pair<_T1, _T2>> : integral_constant<::size_t, 2> {};
template <class _T1, class _T2> struct tuple_element<0, pair<_T1, _T2>> { using type = _T1; };
template <class _T1, class _T2> struct tuple_element<1, pair<_T1, _T2>> { using type = _T2; };

template <::size_t _Ip, class _T1, class _T2>
__host__ __device__ constexpr tuple_element_t<_Ip, pair<_T1, _T2>>& get(pair<_T1, _T2>& __p) noexcept {
  if constexpr (_Ip == 0) return __p.first; else return __p.second;
}
template <::size_t _Ip, class _T1, class _T2>
__host__ __device__ constexpr const tuple_element_t<_Ip, pair<_T1, _T2>>& get(const pair<_T1, _T2>& __p) noexcept {
  if constexpr (_Ip == 0) return __p.first; else return __p.second;
}
template <::size_t _Ip, class _T1, class _T2>
__host__ __device__ constexpr tuple_element_t<_Ip, pair<_T1, _T2>>&& get(pair<_T1, _T2>&& __p) noexcept {
  if constexpr (_Ip == 0) return static_cast<_T1&&>(__p.first); else return static_cast<_T2&&>(__p.second);
}
template <::size_t _Ip, class _T1, class _T2>
__host__ __device__ constexpr const tuple_element_t<_Ip, pair<_T1, _T2>>&& get(const pair<_T1, _T2>&& __p) noexcept {
  if constexpr (_Ip == 0) return static_cast<const _T1&&>(__p.first); else return static_cast<const _T2&&>(__p.second);
}
template <class _Tp, class _Up> __host__ __device__ constexpr _Tp& get(pair<_Tp, _Up>& __p) noexcept { return __p.first; }
template <class _Tp, class _Up> __host__ __device__ constexpr const _Tp& get(const pair<_Tp, _Up>& __p) noexcept { return __p.first; }
template <class _Tp, class _Up> __host__ __device__ constexpr _Tp&& get(pair<_Tp, _Up>&& __p) noexcept { return static_cast<_Tp&&>(__p.first); }
template <class _Tp, class _Up> __host__ __device__ constexpr const _Tp&& get(const pair<_Tp, _Up>&& __p) noexcept { return static_cast<const _Tp&&>(__p.first); }
template <class _Tp, class _Up> __host__ __device__ constexpr _Tp& get(pair<_Up, _Tp>& __p) noexcept { return __p.second; }
template <class _Tp, class _Up> __host__ __device__ constexpr const _Tp& get(const pair<_Up, _Tp>& __p) noexcept { return __p.second; }
template <class _Tp, class _Up> __host__ __device__ constexpr _Tp&& get(pair<_Up, _Tp>&& __p) noexcept { return static_cast<_Tp&&>(__p.second); }
template <class _Tp, class _Up> __host__ __device__ constexpr const _Tp&& get(const pair<_Up, _Tp>&& __p) noexcept { return static_cast<const _Tp&&>(__p.second); }

// C++20's safe integer comparisons (declared in C++17 too, as libcu++ does)
template <class _Tp, class _Up>
__host__ __device__ constexpr bool cmp_equal(_Tp __t, _Up __u) noexcept {
  if constexpr (is_signed_v<_Tp> == is_signed_v<_Up>) return __t == __u;
  else if constexpr (is_signed_v<_Tp>) return __t >= 0 && make_unsigned_t<_Tp>(__t) == __u;
  else return __u >= 0 && __t == make_unsigned_t<_Up>(__u);
}
template <class _Tp, class _Up>
__host__ __device__ constexpr bool cmp_less(_Tp __t, _Up __u) noexcept {
  if constexpr (is_signed_v<_Tp> == is_signed_v<_Up>) return __t < __u;
  else if constexpr (is_signed_v<_Tp>) return __t < 0 || make_unsigned_t<_Tp>(__t) < __u;
  else return __u >= 0 && __t < make_unsigned_t<_Up>(__u);
}
template <class _Tp, class _Up>
__host__ __device__ constexpr bool cmp_not_equal(_Tp __t, _Up __u) noexcept { return !cmp_equal(__t, __u); }
template <class _Tp, class _Up>
__host__ __device__ constexpr bool cmp_greater(_Tp __t, _Up __u) noexcept { return cmp_less(__u, __t); }
template <class _Tp, class _Up>
__host__ __device__ constexpr bool cmp_less_equal(_Tp __t, _Up __u) noexcept { return !cmp_less(__u, __t); }
template <class _Tp, class _Up>
__host__ __device__ constexpr bool cmp_greater_equal(_Tp __t, _Up __u) noexcept { return !cmp_less(__t, __u); }
template <class _Rp, class _Tp>
__host__ __device__ constexpr bool in_range(_Tp __t) noexcept {
  constexpr _Rp __max = _Rp(make_unsigned_t<_Rp>(~make_unsigned_t<_Rp>(0)) >> (is_signed_v<_Rp> ? 1 : 0));
  constexpr _Rp __min = is_signed_v<_Rp> ? _Rp(-__max - 1) : _Rp(0);
  return cmp_greater_equal(__t, __min) && cmp_less_equal(__t, __max);
}

template <class _Ep>
__host__ __device__ constexpr underlying_type_t<_Ep> to_underlying(_Ep __e) noexcept {
  return static_cast<underlying_type_t<_Ep>>(__e);
}

[[noreturn]] __host__ __device__ inline void unreachable() { __builtin_unreachable(); }

template <class _Tp, class _Up>
__host__ __device__ constexpr auto&& forward_like(_Up&& __x) noexcept {
  using _Vp = remove_reference_t<_Up>;
  using _Cv = conditional_t<is_const_v<remove_reference_t<_Tp>>, const _Vp, _Vp>;
  if constexpr (is_lvalue_reference_v<_Tp&&>) return static_cast<_Cv&>(__x);
  else return static_cast<_Cv&&>(__x);
}

}  // namespace std
