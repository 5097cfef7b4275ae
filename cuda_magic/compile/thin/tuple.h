// cuda-magic's <tuple> for NVRTC: std::tuple and its functions, written for device code on top
// of libcu++'s <cuda/std/type_traits> and cuda-magic's <utility> (std::pair, tuple_size_v...).
// Meaning follows libstdc++ (g++ 12): std::tuple is std's own type, not cuda::std::tuple; its
// layout is libstdc++'s (the last element first, empty classes take no room).  No allocator
// constructors (device code has no allocators) and no operator<=> (the six comparisons instead).
namespace std {

template <class...> class tuple;

// --- helpers --------------------------------------------------------------------------------

template <class... _Tp> struct __cm_list {};

// type number _Ip of a pack, found by overload resolution on indexed bases (no recursion)
template <::size_t _Ip, class _Tp> struct __cm_indexed { using type = _Tp; };
template <class _Seq, class... _Tp> struct __cm_indexed_list;
template <::size_t... _Ip, class... _Tp>
struct __cm_indexed_list<index_sequence<_Ip...>, _Tp...> : __cm_indexed<_Ip, _Tp>... {};
template <::size_t _Ip, class _Tp>
__host__ __device__ __cm_indexed<_Ip, _Tp> __cm_pick(const __cm_indexed<_Ip, _Tp>*);  // declared only
template <::size_t _Ip, class... _Tp>
using __cm_type_at = typename decltype(__cm_pick<_Ip>(
    static_cast<const __cm_indexed_list<index_sequence_for<_Tp...>, _Tp...>*>(nullptr)))::type;

// per-element checks of a constructor or assignment: _Tp... from _Up... (false if the sizes differ)
template <bool, class _Tl, class _Ul> struct __cm_tuple_check {
  static constexpr bool __constructible = false, __convertible = false, __assignable = false;
};
template <class... _Tp, class... _Up> struct __cm_tuple_check<true, __cm_list<_Tp...>, __cm_list<_Up...>> {
  static constexpr bool __constructible = (is_constructible_v<_Tp, _Up> && ...);
  static constexpr bool __convertible = (is_convertible_v<_Up, _Tp> && ...);
  static constexpr bool __assignable = (is_assignable_v<_Tp&, _Up> && ...);
};
template <class _Tl, class _Ul> struct __cm_check;
template <class... _Tp, class... _Up>
struct __cm_check<__cm_list<_Tp...>, __cm_list<_Up...>>
    : __cm_tuple_check<sizeof...(_Tp) == sizeof...(_Up), __cm_list<_Tp...>, __cm_list<_Up...>> {};

// tuple<T>(U&&): not when U is tuple<T> itself (that is the copy/move constructor)
template <class _Self, class... _Up> struct __cm_not_self : true_type {};
template <class _Self, class _Up> struct __cm_not_self<_Self, _Up> : bool_constant<!is_same_v<remove_cvref_t<_Up>, _Self>> {};
// tuple<T>(const tuple<U>&): not when T is U or T is made from the tuple<U> itself
template <class _Tl, class _Ul, class _Arg> struct __cm_not_nested : true_type {};
template <class _Tp, class _Up, class _Arg>
struct __cm_not_nested<__cm_list<_Tp>, __cm_list<_Up>, _Arg>
    : bool_constant<!is_same_v<_Tp, _Up> && !is_convertible_v<_Arg, _Tp> && !is_constructible_v<_Tp, _Arg>> {};

struct __cm_elems_t {};   // construct from the elements
struct __cm_unpack_t {};  // construct from another tuple-like's elements

// --- storage: one leaf per element; an empty non-final class is a base (it takes no room) ---

template <::size_t _Ip, class _Tp, bool = is_empty_v<_Tp> && !is_final_v<_Tp>>
struct __cm_tuple_leaf {
  _Tp __value;
  __host__ __device__ constexpr __cm_tuple_leaf() : __value() {}
  template <class _Up>
  __host__ __device__ constexpr __cm_tuple_leaf(__cm_elems_t, _Up&& __u) : __value(static_cast<_Up&&>(__u)) {}
  __host__ __device__ constexpr _Tp& __get() noexcept { return __value; }
  __host__ __device__ constexpr const _Tp& __get() const noexcept { return __value; }
};
template <::size_t _Ip, class _Tp>
struct __cm_tuple_leaf<_Ip, _Tp, true> : private _Tp {
  __host__ __device__ constexpr __cm_tuple_leaf() : _Tp() {}
  template <class _Up>
  __host__ __device__ constexpr __cm_tuple_leaf(__cm_elems_t, _Up&& __u) : _Tp(static_cast<_Up&&>(__u)) {}
  __host__ __device__ constexpr _Tp& __get() noexcept { return *this; }
  __host__ __device__ constexpr const _Tp& __get() const noexcept { return *this; }
};

// libstdc++'s layout: element _Ip's leaf after the rest's (so the last element comes first)
template <::size_t _Ip, class... _Tp> struct __cm_tuple_impl {
  __host__ __device__ constexpr __cm_tuple_impl() {}
  __host__ __device__ constexpr __cm_tuple_impl(__cm_elems_t) {}
};
template <::size_t _Ip, class _Head, class... _Tail>
struct __cm_tuple_impl<_Ip, _Head, _Tail...> : __cm_tuple_impl<_Ip + 1, _Tail...>, __cm_tuple_leaf<_Ip, _Head> {
  __host__ __device__ constexpr __cm_tuple_impl() : __cm_tuple_impl<_Ip + 1, _Tail...>(), __cm_tuple_leaf<_Ip, _Head>() {}
  template <class _UHead, class... _UTail>
  __host__ __device__ constexpr __cm_tuple_impl(__cm_elems_t __e, _UHead&& __h, _UTail&&... __t)
      : __cm_tuple_impl<_Ip + 1, _Tail...>(__e, static_cast<_UTail&&>(__t)...),
        __cm_tuple_leaf<_Ip, _Head>(__e, static_cast<_UHead&&>(__h)) {}
};

// element _Ip of a tuple: its leaf base, found by deduction
template <::size_t _Ip, class _Tp, bool _Ep>
__host__ __device__ constexpr _Tp& __cm_leaf(__cm_tuple_leaf<_Ip, _Tp, _Ep>& __l) noexcept { return __l.__get(); }
template <::size_t _Ip, class _Tp, bool _Ep>
__host__ __device__ constexpr const _Tp& __cm_leaf(const __cm_tuple_leaf<_Ip, _Tp, _Ep>& __l) noexcept { return __l.__get(); }

// --- tuple_size, tuple_element, get ---------------------------------------------------------

template <class... _Tp> struct tuple_size<tuple<_Tp...>> : integral_constant<::size_t, sizeof...(_Tp)> {};
template <::size_t _Ip, class... _Tp> struct tuple_element<_Ip, tuple<_Tp...>> {
  static_assert(_Ip < sizeof...(_Tp), "tuple index must be in range");
  using type = __cm_type_at<_Ip, _Tp...>;
};

template <::size_t _Ip, class... _Tp>
__host__ __device__ constexpr tuple_element_t<_Ip, tuple<_Tp...>>& get(tuple<_Tp...>& __t) noexcept {
  return __cm_leaf<_Ip>(__t);
}
template <::size_t _Ip, class... _Tp>
__host__ __device__ constexpr const tuple_element_t<_Ip, tuple<_Tp...>>& get(const tuple<_Tp...>& __t) noexcept {
  return __cm_leaf<_Ip>(__t);
}
template <::size_t _Ip, class... _Tp>
__host__ __device__ constexpr tuple_element_t<_Ip, tuple<_Tp...>>&& get(tuple<_Tp...>&& __t) noexcept {
  return static_cast<tuple_element_t<_Ip, tuple<_Tp...>>&&>(__cm_leaf<_Ip>(__t));
}
template <::size_t _Ip, class... _Tp>
__host__ __device__ constexpr const tuple_element_t<_Ip, tuple<_Tp...>>&& get(const tuple<_Tp...>&& __t) noexcept {
  return static_cast<const tuple_element_t<_Ip, tuple<_Tp...>>&&>(__cm_leaf<_Ip>(__t));
}

// get<T>: T must occur exactly once (sizeof...(_Types) otherwise)
template <class _Tp, class... _Types>
__host__ __device__ constexpr ::size_t __cm_index_of() {
  constexpr bool __match[] = {is_same_v<_Tp, _Types>..., false};
  ::size_t __n = 0, __at = sizeof...(_Types);
  for (::size_t __i = 0; __i < sizeof...(_Types); ++__i)
    if (__match[__i]) { ++__n; __at = __i; }
  return __n == 1 ? __at : sizeof...(_Types);
}
#define _CUDA_MAGIC_GET_BY_TYPE_(CV, REF)                                                               \
  template <class _Tp, class... _Types>                                                                \
  __host__ __device__ constexpr CV _Tp REF get(CV tuple<_Types...> REF __t) noexcept {                  \
    constexpr ::size_t __i = __cm_index_of<_Tp, _Types...>();                                          \
    static_assert(__i < sizeof...(_Types), "the type T in std::get<T> must occur exactly once in the tuple"); \
    return static_cast<CV _Tp REF>(__cm_leaf<__i>(__t));                                               \
  }
_CUDA_MAGIC_GET_BY_TYPE_(, &)
_CUDA_MAGIC_GET_BY_TYPE_(const, &)
_CUDA_MAGIC_GET_BY_TYPE_(, &&)
_CUDA_MAGIC_GET_BY_TYPE_(const, &&)
#undef _CUDA_MAGIC_GET_BY_TYPE_

// --- tuple --------------------------------------------------------------------------------------

template <class... _Tp>
class tuple : public __cm_tuple_impl<0, _Tp...> {
  using _Base = __cm_tuple_impl<0, _Tp...>;
  template <class... _Up> using _Check = __cm_check<__cm_list<_Tp...>, __cm_list<_Up...>>;

  template <class _Tuple, ::size_t... _Ip>
  __host__ __device__ constexpr tuple(__cm_unpack_t, _Tuple&& __o, index_sequence<_Ip...>)
      : _Base(__cm_elems_t{}, get<_Ip>(static_cast<_Tuple&&>(__o))...) {}
  template <class _Tuple, ::size_t... _Ip>
  __host__ __device__ constexpr void __assign(_Tuple&& __o, index_sequence<_Ip...>) {
    ((void)(__cm_leaf<_Ip>(*this) = get<_Ip>(static_cast<_Tuple&&>(__o))), ...);
  }
  template <::size_t... _Ip>
  __host__ __device__ constexpr void __swap(tuple& __o, index_sequence<_Ip...>) {
    using ::std::swap;
    ((void)swap(__cm_leaf<_Ip>(*this), __cm_leaf<_Ip>(__o)), ...);
  }

 public:
  // tuple(): value-initialises each element; explicit when one is not copy-list-initialisable from {}
  template <bool _Dep = true, enable_if_t<_Dep && (__cm_implicit_default<_Tp>::value && ...), int> = 0>
  __host__ __device__ constexpr tuple() : _Base() {}
  template <bool _Dep = true, enable_if_t<_Dep && (is_default_constructible_v<_Tp> && ...)
                                          && !(__cm_implicit_default<_Tp>::value && ...), int> = 0>
  __host__ __device__ explicit constexpr tuple() : _Base() {}

  template <bool _Dep = true, enable_if_t<_Dep && _Check<const _Tp&...>::__constructible
                                          && _Check<const _Tp&...>::__convertible, int> = 0>
  __host__ __device__ constexpr tuple(const _Tp&... __a) : _Base(__cm_elems_t{}, __a...) {}
  template <bool _Dep = true, enable_if_t<_Dep && _Check<const _Tp&...>::__constructible
                                          && !_Check<const _Tp&...>::__convertible, int> = 0>
  __host__ __device__ explicit constexpr tuple(const _Tp&... __a) : _Base(__cm_elems_t{}, __a...) {}

  template <class... _Up, enable_if_t<sizeof...(_Up) >= 1 && __cm_not_self<tuple, _Up...>::value
                                      && _Check<_Up&&...>::__constructible && _Check<_Up&&...>::__convertible, int> = 0>
  __host__ __device__ constexpr tuple(_Up&&... __u) : _Base(__cm_elems_t{}, static_cast<_Up&&>(__u)...) {}
  template <class... _Up, enable_if_t<sizeof...(_Up) >= 1 && __cm_not_self<tuple, _Up...>::value
                                      && _Check<_Up&&...>::__constructible && !_Check<_Up&&...>::__convertible, int> = 0>
  __host__ __device__ explicit constexpr tuple(_Up&&... __u) : _Base(__cm_elems_t{}, static_cast<_Up&&>(__u)...) {}

  tuple(const tuple&) = default;
  tuple(tuple&&) = default;

  template <class... _Up, enable_if_t<_Check<const _Up&...>::__constructible && _Check<const _Up&...>::__convertible
                                      && __cm_not_nested<__cm_list<_Tp...>, __cm_list<_Up...>, const tuple<_Up...>&>::value, int> = 0>
  __host__ __device__ constexpr tuple(const tuple<_Up...>& __o) : tuple(__cm_unpack_t{}, __o, index_sequence_for<_Tp...>{}) {}
  template <class... _Up, enable_if_t<_Check<const _Up&...>::__constructible && !_Check<const _Up&...>::__convertible
                                      && __cm_not_nested<__cm_list<_Tp...>, __cm_list<_Up...>, const tuple<_Up...>&>::value, int> = 0>
  __host__ __device__ explicit constexpr tuple(const tuple<_Up...>& __o) : tuple(__cm_unpack_t{}, __o, index_sequence_for<_Tp...>{}) {}

  template <class... _Up, enable_if_t<_Check<_Up&&...>::__constructible && _Check<_Up&&...>::__convertible
                                      && __cm_not_nested<__cm_list<_Tp...>, __cm_list<_Up...>, tuple<_Up...>&&>::value, int> = 0>
  __host__ __device__ constexpr tuple(tuple<_Up...>&& __o)
      : tuple(__cm_unpack_t{}, static_cast<tuple<_Up...>&&>(__o), index_sequence_for<_Tp...>{}) {}
  template <class... _Up, enable_if_t<_Check<_Up&&...>::__constructible && !_Check<_Up&&...>::__convertible
                                      && __cm_not_nested<__cm_list<_Tp...>, __cm_list<_Up...>, tuple<_Up...>&&>::value, int> = 0>
  __host__ __device__ explicit constexpr tuple(tuple<_Up...>&& __o)
      : tuple(__cm_unpack_t{}, static_cast<tuple<_Up...>&&>(__o), index_sequence_for<_Tp...>{}) {}

  template <class _U1, class _U2, enable_if_t<_Check<const _U1&, const _U2&>::__constructible
                                              && _Check<const _U1&, const _U2&>::__convertible, int> = 0>
  __host__ __device__ constexpr tuple(const pair<_U1, _U2>& __p) : _Base(__cm_elems_t{}, __p.first, __p.second) {}
  template <class _U1, class _U2, enable_if_t<_Check<const _U1&, const _U2&>::__constructible
                                              && !_Check<const _U1&, const _U2&>::__convertible, int> = 0>
  __host__ __device__ explicit constexpr tuple(const pair<_U1, _U2>& __p) : _Base(__cm_elems_t{}, __p.first, __p.second) {}
  template <class _U1, class _U2, enable_if_t<_Check<_U1&&, _U2&&>::__constructible
                                              && _Check<_U1&&, _U2&&>::__convertible, int> = 0>
  __host__ __device__ constexpr tuple(pair<_U1, _U2>&& __p)
      : _Base(__cm_elems_t{}, static_cast<_U1&&>(__p.first), static_cast<_U2&&>(__p.second)) {}
  template <class _U1, class _U2, enable_if_t<_Check<_U1&&, _U2&&>::__constructible
                                              && !_Check<_U1&&, _U2&&>::__convertible, int> = 0>
  __host__ __device__ explicit constexpr tuple(pair<_U1, _U2>&& __p)
      : _Base(__cm_elems_t{}, static_cast<_U1&&>(__p.first), static_cast<_U2&&>(__p.second)) {}

  // assignment writes through reference elements, as libstdc++'s does
  __host__ __device__ constexpr tuple& operator=(
      conditional_t<(is_copy_assignable_v<_Tp> && ...), const tuple&, const __cm_nat&> __o) {
    __assign(__o, index_sequence_for<_Tp...>{});
    return *this;
  }
  __host__ __device__ constexpr tuple& operator=(
      conditional_t<(is_move_assignable_v<_Tp> && ...), tuple&&, __cm_nat&&> __o)
      noexcept((is_nothrow_move_assignable_v<_Tp> && ...)) {
    __assign(static_cast<tuple&&>(__o), index_sequence_for<_Tp...>{});
    return *this;
  }
  template <class... _Up, enable_if_t<_Check<const _Up&...>::__assignable, int> = 0>
  __host__ __device__ constexpr tuple& operator=(const tuple<_Up...>& __o) {
    __assign(__o, index_sequence_for<_Tp...>{});
    return *this;
  }
  template <class... _Up, enable_if_t<_Check<_Up&&...>::__assignable, int> = 0>
  __host__ __device__ constexpr tuple& operator=(tuple<_Up...>&& __o) {
    __assign(static_cast<tuple<_Up...>&&>(__o), index_sequence_for<_Tp...>{});
    return *this;
  }
  template <class _U1, class _U2, enable_if_t<_Check<const _U1&, const _U2&>::__assignable, int> = 0>
  __host__ __device__ constexpr tuple& operator=(const pair<_U1, _U2>& __p) {
    __cm_leaf<0>(*this) = __p.first;
    __cm_leaf<1>(*this) = __p.second;
    return *this;
  }
  template <class _U1, class _U2, enable_if_t<_Check<_U1&&, _U2&&>::__assignable, int> = 0>
  __host__ __device__ constexpr tuple& operator=(pair<_U1, _U2>&& __p) {
    __cm_leaf<0>(*this) = static_cast<_U1&&>(__p.first);
    __cm_leaf<1>(*this) = static_cast<_U2&&>(__p.second);
    return *this;
  }

  __host__ __device__ constexpr void swap(tuple& __o) noexcept((is_nothrow_swappable_v<_Tp> && ...)) {
    __swap(__o, index_sequence_for<_Tp...>{});
  }
};

template <>
class tuple<> {
 public:
  tuple() = default;
  __host__ __device__ constexpr void swap(tuple&) noexcept {}
};

template <class... _Up> tuple(_Up...) -> tuple<_Up...>;
template <class _T1, class _T2> tuple(pair<_T1, _T2>) -> tuple<_T1, _T2>;

// --- making tuples -----------------------------------------------------------------------------

template <class... _Tp>
__host__ __device__ constexpr tuple<__cm_unwrap_decay_t<_Tp>...> make_tuple(_Tp&&... __t) {
  return tuple<__cm_unwrap_decay_t<_Tp>...>(static_cast<_Tp&&>(__t)...);
}
template <class... _Tp>
__host__ __device__ constexpr tuple<_Tp&&...> forward_as_tuple(_Tp&&... __t) noexcept {
  return tuple<_Tp&&...>(static_cast<_Tp&&>(__t)...);
}
template <class... _Tp>
__host__ __device__ constexpr tuple<_Tp&...> tie(_Tp&... __t) noexcept { return tuple<_Tp&...>(__t...); }

struct __cm_ignore_t {
  template <class _Tp>
  __host__ __device__ constexpr const __cm_ignore_t& operator=(const _Tp&) const noexcept { return *this; }
};
__device__ constexpr __cm_ignore_t ignore{};  // a device variable: tie(x, ignore) binds a reference to it

// --- comparisons, swap ---------------------------------------------------------------------------

template <class _Tp, class _Up, ::size_t... _Ip>
__host__ __device__ constexpr bool __cm_tuple_eq(const _Tp& __t, const _Up& __u, index_sequence<_Ip...>) {
  return (bool(get<_Ip>(__t) == get<_Ip>(__u)) && ...);
}
template <::size_t _Ip, ::size_t _Np, class _Tp, class _Up>
__host__ __device__ constexpr bool __cm_tuple_lt(const _Tp& __t, const _Up& __u) {
  if constexpr (_Ip == _Np) {
    return false;
  } else {
    return bool(get<_Ip>(__t) < get<_Ip>(__u))
        || (!bool(get<_Ip>(__u) < get<_Ip>(__t)) && __cm_tuple_lt<_Ip + 1, _Np>(__t, __u));
  }
}
template <class... _Tp, class... _Up>
__host__ __device__ constexpr bool operator==(const tuple<_Tp...>& __t, const tuple<_Up...>& __u) {
  static_assert(sizeof...(_Tp) == sizeof...(_Up), "std::tuple objects can only be compared if they have equal sizes");
  return __cm_tuple_eq(__t, __u, index_sequence_for<_Tp...>{});
}
template <class... _Tp, class... _Up>
__host__ __device__ constexpr bool operator!=(const tuple<_Tp...>& __t, const tuple<_Up...>& __u) { return !(__t == __u); }
template <class... _Tp, class... _Up>
__host__ __device__ constexpr bool operator<(const tuple<_Tp...>& __t, const tuple<_Up...>& __u) {
  static_assert(sizeof...(_Tp) == sizeof...(_Up), "std::tuple objects can only be compared if they have equal sizes");
  return __cm_tuple_lt<0, sizeof...(_Tp)>(__t, __u);
}
template <class... _Tp, class... _Up>
__host__ __device__ constexpr bool operator>(const tuple<_Tp...>& __t, const tuple<_Up...>& __u) { return __u < __t; }
template <class... _Tp, class... _Up>
__host__ __device__ constexpr bool operator<=(const tuple<_Tp...>& __t, const tuple<_Up...>& __u) { return !(__u < __t); }
template <class... _Tp, class... _Up>
__host__ __device__ constexpr bool operator>=(const tuple<_Tp...>& __t, const tuple<_Up...>& __u) { return !(__t < __u); }

template <class... _Tp, enable_if_t<(is_swappable_v<_Tp> && ...), int> = 0>
__host__ __device__ constexpr void swap(tuple<_Tp...>& __x, tuple<_Tp...>& __y) noexcept(noexcept(__x.swap(__y))) {
  __x.swap(__y);
}

// --- apply, make_from_tuple (any tuple-like: tuple, pair, array) ---------------------------------

template <class _Fn, class _Tuple, ::size_t... _Ip>
__host__ __device__ constexpr decltype(auto) __cm_apply(_Fn&& __f, _Tuple&& __t, index_sequence<_Ip...>) {
  return ::cuda::std::invoke(static_cast<_Fn&&>(__f), get<_Ip>(static_cast<_Tuple&&>(__t))...);
}
template <class _Fn, class _Tuple>
__host__ __device__ constexpr decltype(auto) apply(_Fn&& __f, _Tuple&& __t) {
  return __cm_apply(static_cast<_Fn&&>(__f), static_cast<_Tuple&&>(__t),
                    make_index_sequence<tuple_size_v<remove_reference_t<_Tuple>>>{});
}

template <class _Tp, class _Tuple, ::size_t... _Ip>
__host__ __device__ constexpr _Tp __cm_make_from_tuple(_Tuple&& __t, index_sequence<_Ip...>) {
  return _Tp(get<_Ip>(static_cast<_Tuple&&>(__t))...);
}
template <class _Tp, class _Tuple>
__host__ __device__ constexpr _Tp make_from_tuple(_Tuple&& __t) {
  return __cm_make_from_tuple<_Tp>(static_cast<_Tuple&&>(__t),
                                   make_index_sequence<tuple_size_v<remove_reference_t<_Tuple>>>{});
}

// pair's piecewise constructor (declared in <utility>): each member made from its tuple's elements
template <class _T1, class _T2>
template <class... _Args1, class... _Args2>
__host__ __device__ constexpr pair<_T1, _T2>::pair(piecewise_construct_t, tuple<_Args1...> __a, tuple<_Args2...> __b)
    : first(make_from_tuple<_T1>(static_cast<tuple<_Args1...>&&>(__a))),
      second(make_from_tuple<_T2>(static_cast<tuple<_Args2...>&&>(__b))) {}

// --- tuple_cat (any tuple-likes): references to every element, then the result made from them ----

template <class _Tuple, class _Seq = make_index_sequence<tuple_size<_Tuple>::value>> struct __cm_cat_arg;
template <class _Tuple, ::size_t... _Ip> struct __cm_cat_arg<_Tuple, index_sequence<_Ip...>> {
  using type = tuple<tuple_element_t<_Ip, _Tuple>...>;  // the elements' types
  template <class _Arg>
  __host__ __device__ static constexpr tuple<decltype(get<_Ip>(declval<_Arg>()))...> __refs(_Arg&& __t) {
    return tuple<decltype(get<_Ip>(declval<_Arg>()))...>(get<_Ip>(static_cast<_Arg&&>(__t))...);
  }
};
template <class... _Tuples> struct __cm_cat_type { using type = tuple<>; };
template <class... _Tp> struct __cm_cat_type<tuple<_Tp...>> { using type = tuple<_Tp...>; };
template <class... _Tp, class... _Up, class... _Rest>
struct __cm_cat_type<tuple<_Tp...>, tuple<_Up...>, _Rest...> : __cm_cat_type<tuple<_Tp..., _Up...>, _Rest...> {};

template <class... _Tp, class... _Up, ::size_t... _Ip, ::size_t... _Jp>
__host__ __device__ constexpr tuple<_Tp..., _Up...> __cm_cat2(tuple<_Tp...>&& __a, tuple<_Up...>&& __b,
                                                             index_sequence<_Ip...>, index_sequence<_Jp...>) {
  return tuple<_Tp..., _Up...>(get<_Ip>(static_cast<tuple<_Tp...>&&>(__a))...,
                               get<_Jp>(static_cast<tuple<_Up...>&&>(__b))...);
}
__host__ __device__ constexpr tuple<> __cm_cat_refs() { return tuple<>(); }
template <class... _Tp>
__host__ __device__ constexpr tuple<_Tp...> __cm_cat_refs(tuple<_Tp...>&& __a) { return static_cast<tuple<_Tp...>&&>(__a); }
template <class... _Tp, class... _Up, class... _Rest>
__host__ __device__ constexpr auto __cm_cat_refs(tuple<_Tp...>&& __a, tuple<_Up...>&& __b, _Rest&&... __rest) {
  return __cm_cat_refs(__cm_cat2(static_cast<tuple<_Tp...>&&>(__a), static_cast<tuple<_Up...>&&>(__b),
                                 index_sequence_for<_Tp...>{}, index_sequence_for<_Up...>{}),
                       static_cast<_Rest&&>(__rest)...);
}
template <class _Result, class _Refs, ::size_t... _Ip>
__host__ __device__ constexpr _Result __cm_cat_make(_Refs&& __r, index_sequence<_Ip...>) {
  return _Result(get<_Ip>(static_cast<_Refs&&>(__r))...);
}
template <class... _Tuples>
__host__ __device__ constexpr typename __cm_cat_type<typename __cm_cat_arg<remove_cvref_t<_Tuples>>::type...>::type
tuple_cat(_Tuples&&... __t) {
  using _Result = typename __cm_cat_type<typename __cm_cat_arg<remove_cvref_t<_Tuples>>::type...>::type;
  return __cm_cat_make<_Result>(__cm_cat_refs(__cm_cat_arg<remove_cvref_t<_Tuples>>::__refs(static_cast<_Tuples&&>(__t))...),
                                make_index_sequence<tuple_size<_Result>::value>{});
}

}  // namespace std
