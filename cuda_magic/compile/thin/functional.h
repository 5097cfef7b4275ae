// cuda-magic's own <functional> for NVRTC (issue 21): the operator function objects, not_fn,
// mem_fn, bind_front, hash and unwrap_reference, written here; invoke, invoke_r,
// reference_wrapper, ref, cref and identity are libcu++'s, which <cuda/std/type_traits> brings
// anyway (std::reference_wrapper is cuda::std::reference_wrapper). Embedded after libcu++'s
// <cuda/std/type_traits> and `using ::cuda::std::X;` of its names, and after the thin <utility>,
// <tuple> and <array> (what libstdc++'s <functional> brings along); includes nothing itself.
// Meaning is libstdc++'s (g++, C++20); the C++20 names are declared in C++17 too.

#define _CUDA_MAGIC_FN_ __host__ __device__ constexpr

namespace std {

using ::cuda::std::invoke;
using ::cuda::std::invoke_r;
using ::cuda::std::reference_wrapper;
using ::cuda::std::ref;
using ::cuda::std::cref;
using ::cuda::std::identity;

// --- arithmetic, comparison, logical and bitwise function objects ----------------------------
// Each has libstdc++'s member types; the <void> specialisation (std::less<>) deduces its
// argument types, forwards them and has is_transparent.

#define _CUDA_MAGIC_BINARY_(NAME, RESULT, OP)                                                  \
  template <class _Tp = void> struct NAME {                                                    \
    typedef RESULT result_type;                                                                \
    typedef _Tp first_argument_type;                                                           \
    typedef _Tp second_argument_type;                                                          \
    _CUDA_MAGIC_FN_ RESULT operator()(const _Tp& __x, const _Tp& __y) const { return __x OP __y; } \
  };                                                                                           \
  template <> struct NAME<void> {                                                              \
    typedef void is_transparent;                                                               \
    template <class _Tp, class _Up>                                                            \
    _CUDA_MAGIC_FN_ auto operator()(_Tp&& __x, _Up&& __y) const                                \
        noexcept(noexcept(static_cast<_Tp&&>(__x) OP static_cast<_Up&&>(__y)))                 \
        -> decltype(static_cast<_Tp&&>(__x) OP static_cast<_Up&&>(__y)) {                      \
      return static_cast<_Tp&&>(__x) OP static_cast<_Up&&>(__y);                               \
    }                                                                                          \
  };

#define _CUDA_MAGIC_UNARY_(NAME, RESULT, OP)                                                   \
  template <class _Tp = void> struct NAME {                                                    \
    typedef RESULT result_type;                                                                \
    typedef _Tp argument_type;                                                                 \
    _CUDA_MAGIC_FN_ RESULT operator()(const _Tp& __x) const { return OP __x; }                 \
  };                                                                                           \
  template <> struct NAME<void> {                                                              \
    typedef void is_transparent;                                                               \
    template <class _Tp>                                                                       \
    _CUDA_MAGIC_FN_ auto operator()(_Tp&& __x) const                                           \
        noexcept(noexcept(OP static_cast<_Tp&&>(__x))) -> decltype(OP static_cast<_Tp&&>(__x)) { \
      return OP static_cast<_Tp&&>(__x);                                                       \
    }                                                                                          \
  };

_CUDA_MAGIC_BINARY_(plus, _Tp, +)
_CUDA_MAGIC_BINARY_(minus, _Tp, -)
_CUDA_MAGIC_BINARY_(multiplies, _Tp, *)
_CUDA_MAGIC_BINARY_(divides, _Tp, /)
_CUDA_MAGIC_BINARY_(modulus, _Tp, %)
_CUDA_MAGIC_UNARY_(negate, _Tp, -)
_CUDA_MAGIC_BINARY_(equal_to, bool, ==)
_CUDA_MAGIC_BINARY_(not_equal_to, bool, !=)
_CUDA_MAGIC_BINARY_(greater, bool, >)
_CUDA_MAGIC_BINARY_(less, bool, <)
_CUDA_MAGIC_BINARY_(greater_equal, bool, >=)
_CUDA_MAGIC_BINARY_(less_equal, bool, <=)
_CUDA_MAGIC_BINARY_(logical_and, bool, &&)
_CUDA_MAGIC_BINARY_(logical_or, bool, ||)
_CUDA_MAGIC_UNARY_(logical_not, bool, !)
_CUDA_MAGIC_BINARY_(bit_and, _Tp, &)
_CUDA_MAGIC_BINARY_(bit_or, _Tp, |)
_CUDA_MAGIC_BINARY_(bit_xor, _Tp, ^)
_CUDA_MAGIC_UNARY_(bit_not, _Tp, ~)

#undef _CUDA_MAGIC_BINARY_
#undef _CUDA_MAGIC_UNARY_

// --- unwrap_reference, unwrap_ref_decay (C++20) ----------------------------------------------
// Written here (libcu++ has them from CCCL 3.1 only, outside type_traits' closure); they know
// libcu++'s reference_wrapper, which std::ref returns.
template <class _Tp> struct unwrap_reference { typedef _Tp type; };
template <class _Tp> struct unwrap_reference<::cuda::std::reference_wrapper<_Tp>> { typedef _Tp& type; };
template <class _Tp> using unwrap_reference_t = typename unwrap_reference<_Tp>::type;
template <class _Tp> struct unwrap_ref_decay : unwrap_reference<::cuda::std::decay_t<_Tp>> {};
template <class _Tp> using unwrap_ref_decay_t = typename unwrap_ref_decay<_Tp>::type;

namespace __cm_fn {
// A pack of values, one base per index (what bind_front keeps its bound arguments in).
template <size_t _Ip, class _Tp> struct __leaf { _Tp __v; };
template <class _Seq, class... _Ts> struct __pack;
template <size_t... _Ip, class... _Ts>
struct __pack<::cuda::std::index_sequence<_Ip...>, _Ts...> : __leaf<_Ip, _Ts>... {
  template <class... _Us>
  _CUDA_MAGIC_FN_ explicit __pack(int, _Us&&... __us) : __leaf<_Ip, _Ts>{static_cast<_Us&&>(__us)}... {}
};
template <size_t _Ip, class _Tp> _CUDA_MAGIC_FN_ _Tp& __get(__leaf<_Ip, _Tp>& __l) { return __l.__v; }
template <size_t _Ip, class _Tp> _CUDA_MAGIC_FN_ const _Tp& __get(const __leaf<_Ip, _Tp>& __l) { return __l.__v; }
template <size_t _Ip, class _Tp> _CUDA_MAGIC_FN_ _Tp&& __get(__leaf<_Ip, _Tp>&& __l) {
  return static_cast<_Tp&&>(__l.__v);
}
template <size_t _Ip, class _Tp> _CUDA_MAGIC_FN_ const _Tp&& __get(const __leaf<_Ip, _Tp>&& __l) {
  return static_cast<const _Tp&&>(__l.__v);
}

// not_fn's result: !invoke(f, args...), with f as the call wrapper's value category.
template <class _Fp> struct __not_fn {
  _Fp __f;
#define _CUDA_MAGIC_NOT_FN_(CV, REF)                                                           \
  template <class... _As>                                                                      \
  _CUDA_MAGIC_FN_ auto operator()(_As&&... __as) CV REF                                        \
      noexcept(noexcept(!::cuda::std::invoke(static_cast<CV _Fp REF>(__f), static_cast<_As&&>(__as)...))) \
      -> decltype(!::cuda::std::invoke(static_cast<CV _Fp REF>(__f), static_cast<_As&&>(__as)...)) { \
    return !::cuda::std::invoke(static_cast<CV _Fp REF>(__f), static_cast<_As&&>(__as)...);   \
  }
  _CUDA_MAGIC_NOT_FN_(, &)
  _CUDA_MAGIC_NOT_FN_(const, &)
  _CUDA_MAGIC_NOT_FN_(, &&)
  _CUDA_MAGIC_NOT_FN_(const, &&)
#undef _CUDA_MAGIC_NOT_FN_
};

// mem_fn's result: invoke(pm, args...).
template <class _Mp> struct __mem_fn {
  _Mp __pm;
  typedef _Mp __member;
  template <class... _As>
  _CUDA_MAGIC_FN_ auto operator()(_As&&... __as) const
      noexcept(noexcept(::cuda::std::invoke(__pm, static_cast<_As&&>(__as)...)))
      -> decltype(::cuda::std::invoke(__pm, static_cast<_As&&>(__as)...)) {
    return ::cuda::std::invoke(__pm, static_cast<_As&&>(__as)...);
  }
};

// bind_front's result: invoke(f, bound..., args...), f and the bound arguments as the call
// wrapper's value category.
template <class _Fp, class... _Bs> struct __bind_front {
  typedef ::cuda::std::index_sequence_for<_Bs...> _Seq;
  _Fp __f;
  __pack<_Seq, _Bs...> __bs;
  template <class _Gp, class... _Cs>
  _CUDA_MAGIC_FN_ explicit __bind_front(int, _Gp&& __g, _Cs&&... __cs)
      : __f(static_cast<_Gp&&>(__g)), __bs(0, static_cast<_Cs&&>(__cs)...) {}
  template <class _Self, size_t... _Ip, class... _As>
  _CUDA_MAGIC_FN_ static auto __call(_Self&& __s, ::cuda::std::index_sequence<_Ip...>, _As&&... __as)
      -> decltype(::cuda::std::invoke(static_cast<_Self&&>(__s).__f,
                                      __get<_Ip>(static_cast<_Self&&>(__s).__bs)...,
                                      static_cast<_As&&>(__as)...)) {
    return ::cuda::std::invoke(static_cast<_Self&&>(__s).__f,
                               __get<_Ip>(static_cast<_Self&&>(__s).__bs)...,
                               static_cast<_As&&>(__as)...);
  }
#define _CUDA_MAGIC_BIND_(CV, REF)                                                             \
  template <class... _As>                                                                      \
  _CUDA_MAGIC_FN_ auto operator()(_As&&... __as) CV REF                                        \
      -> decltype(__call(::cuda::std::declval<CV __bind_front REF>(), _Seq(), static_cast<_As&&>(__as)...)) { \
    return __call(static_cast<CV __bind_front REF>(*this), _Seq(), static_cast<_As&&>(__as)...); \
  }
  _CUDA_MAGIC_BIND_(, &)
  _CUDA_MAGIC_BIND_(const, &)
  _CUDA_MAGIC_BIND_(, &&)
  _CUDA_MAGIC_BIND_(const, &&)
#undef _CUDA_MAGIC_BIND_
};
}  // namespace __cm_fn

template <class _Fp>
_CUDA_MAGIC_FN_ __cm_fn::__not_fn<::cuda::std::decay_t<_Fp>> not_fn(_Fp&& __f) {
  return __cm_fn::__not_fn<::cuda::std::decay_t<_Fp>>{static_cast<_Fp&&>(__f)};
}

template <class _Mp, class _Tp>
_CUDA_MAGIC_FN_ __cm_fn::__mem_fn<_Mp _Tp::*> mem_fn(_Mp _Tp::*__pm) noexcept {
  return __cm_fn::__mem_fn<_Mp _Tp::*>{__pm};
}

template <class _Fp, class... _Bs>
_CUDA_MAGIC_FN_ __cm_fn::__bind_front<::cuda::std::decay_t<_Fp>, ::cuda::std::decay_t<_Bs>...>
bind_front(_Fp&& __f, _Bs&&... __bs) {
  return __cm_fn::__bind_front<::cuda::std::decay_t<_Fp>, ::cuda::std::decay_t<_Bs>...>(
      0, static_cast<_Fp&&>(__f), static_cast<_Bs&&>(__bs)...);
}

// --- hash ------------------------------------------------------------------------------------
// As libstdc++'s: an integer, character, bool or enum hashes to its own value (cast to size_t), a
// pointer to its address, nullptr to 0; other types have no hash until the user specialises
// std::hash (not default constructible, as libstdc++'s). float/double/long double are left out
// (libstdc++ hashes their bytes with its out-of-line _Hash_bytes; under nvcc std::hash is
// host-only anyway, none of its operator() are constexpr or __device__): docs/real-code.md.
namespace __cm_fn {
template <class _Tp, bool = ::cuda::std::is_enum<_Tp>::value> struct __hash_enum {
  typedef size_t result_type;
  typedef _Tp argument_type;
  _CUDA_MAGIC_FN_ size_t operator()(_Tp __v) const noexcept {
    return static_cast<size_t>(static_cast<::cuda::std::underlying_type_t<_Tp>>(__v));
  }
};
template <class _Tp> struct __hash_enum<_Tp, false> {
  __hash_enum() = delete;
  __hash_enum(const __hash_enum&) = delete;
  __hash_enum& operator=(const __hash_enum&) = delete;
};
}  // namespace __cm_fn

template <class _Tp> struct hash : __cm_fn::__hash_enum<_Tp> {};

template <class _Tp> struct hash<_Tp*> {
  typedef size_t result_type;
  typedef _Tp* argument_type;
  __host__ __device__ size_t operator()(_Tp* __p) const noexcept { return reinterpret_cast<size_t>(__p); }
};

template <> struct hash<decltype(nullptr)> {
  typedef size_t result_type;
  typedef decltype(nullptr) argument_type;
  _CUDA_MAGIC_FN_ size_t operator()(decltype(nullptr)) const noexcept { return 0; }
};

#define _CUDA_MAGIC_HASH_(T)                                                                   \
  template <> struct hash<T> {                                                                 \
    typedef size_t result_type;                                                                \
    typedef T argument_type;                                                                   \
    _CUDA_MAGIC_FN_ size_t operator()(T __v) const noexcept { return static_cast<size_t>(__v); } \
  };
_CUDA_MAGIC_HASH_(bool)
_CUDA_MAGIC_HASH_(char)
_CUDA_MAGIC_HASH_(signed char)
_CUDA_MAGIC_HASH_(unsigned char)
_CUDA_MAGIC_HASH_(wchar_t)
_CUDA_MAGIC_HASH_(char16_t)
_CUDA_MAGIC_HASH_(char32_t)
_CUDA_MAGIC_HASH_(short)
_CUDA_MAGIC_HASH_(unsigned short)
_CUDA_MAGIC_HASH_(int)
_CUDA_MAGIC_HASH_(unsigned int)
_CUDA_MAGIC_HASH_(long)
_CUDA_MAGIC_HASH_(unsigned long)
_CUDA_MAGIC_HASH_(long long)
_CUDA_MAGIC_HASH_(unsigned long long)
#if defined(__cpp_char8_t)
_CUDA_MAGIC_HASH_(char8_t)
#endif
#undef _CUDA_MAGIC_HASH_

}  // namespace std

#undef _CUDA_MAGIC_FN_
