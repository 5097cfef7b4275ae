// cuda-magic's <array> for NVRTC: std::array, written for device code on top of libcu++'s
// <cuda/std/type_traits> and cuda-magic's <utility> (std::tuple_size_v, swap...).
// Meaning follows libstdc++ (g++ 12): std::array is std's own aggregate (one member, _M_elems),
// its iterators are plain pointers, array<T, 0> is an empty class whose data() is null.
// reverse_iterator is a small one of its own (std::reverse_iterator lives in <iterator>, which
// libcu++ would bring in whole): rbegin/rend/crbegin/crend work, the type is not
// std::reverse_iterator<T*>.
namespace std {

template <class _Tp, ::size_t _Nm> struct __cm_array_storage {
  using type = _Tp[_Nm];
  __host__ __device__ static constexpr _Tp* __ptr(type& __a) noexcept { return __a; }
  __host__ __device__ static constexpr const _Tp* __ptr(const type& __a) noexcept { return __a; }
};
template <class _Tp> struct __cm_array_storage<_Tp, 0> {
  struct type {};
  __host__ __device__ static constexpr _Tp* __ptr(type&) noexcept { return nullptr; }
  __host__ __device__ static constexpr const _Tp* __ptr(const type&) noexcept { return nullptr; }
};

// a reverse iterator over a pointer range: *it is *(base() - 1)
template <class _Ptr>
class __cm_reverse_iterator {
  _Ptr __cur;

 public:
  using iterator_type = _Ptr;
  using value_type = remove_cv_t<remove_pointer_t<_Ptr>>;
  using difference_type = ::ptrdiff_t;
  using pointer = _Ptr;
  using reference = remove_pointer_t<_Ptr>&;

  __host__ __device__ constexpr __cm_reverse_iterator() : __cur() {}
  __host__ __device__ explicit constexpr __cm_reverse_iterator(_Ptr __p) : __cur(__p) {}
  template <class _Up, enable_if_t<!is_same_v<_Up, _Ptr> && is_convertible_v<const _Up&, _Ptr>, int> = 0>
  __host__ __device__ constexpr __cm_reverse_iterator(const __cm_reverse_iterator<_Up>& __o) : __cur(__o.base()) {}

  __host__ __device__ constexpr _Ptr base() const { return __cur; }
  __host__ __device__ constexpr reference operator*() const { return *(__cur - 1); }
  __host__ __device__ constexpr pointer operator->() const { return __cur - 1; }
  __host__ __device__ constexpr reference operator[](difference_type __n) const { return *(__cur - 1 - __n); }
  __host__ __device__ constexpr __cm_reverse_iterator& operator++() { --__cur; return *this; }
  __host__ __device__ constexpr __cm_reverse_iterator& operator--() { ++__cur; return *this; }
  __host__ __device__ constexpr __cm_reverse_iterator operator++(int) { __cm_reverse_iterator __t = *this; --__cur; return __t; }
  __host__ __device__ constexpr __cm_reverse_iterator operator--(int) { __cm_reverse_iterator __t = *this; ++__cur; return __t; }
  __host__ __device__ constexpr __cm_reverse_iterator& operator+=(difference_type __n) { __cur -= __n; return *this; }
  __host__ __device__ constexpr __cm_reverse_iterator& operator-=(difference_type __n) { __cur += __n; return *this; }
  __host__ __device__ constexpr __cm_reverse_iterator operator+(difference_type __n) const { return __cm_reverse_iterator(__cur - __n); }
  __host__ __device__ constexpr __cm_reverse_iterator operator-(difference_type __n) const { return __cm_reverse_iterator(__cur + __n); }
  __host__ __device__ friend constexpr __cm_reverse_iterator operator+(difference_type __n, const __cm_reverse_iterator& __i) { return __i + __n; }
};
template <class _P1, class _P2>
__host__ __device__ constexpr ::ptrdiff_t operator-(const __cm_reverse_iterator<_P1>& __x, const __cm_reverse_iterator<_P2>& __y) {
  return __y.base() - __x.base();
}
#define _CUDA_MAGIC_REV_CMP_(OP, ROP)                                                                    \
  template <class _P1, class _P2>                                                                       \
  __host__ __device__ constexpr bool operator OP(const __cm_reverse_iterator<_P1>& __x, const __cm_reverse_iterator<_P2>& __y) { \
    return __x.base() ROP __y.base();                                                                   \
  }
_CUDA_MAGIC_REV_CMP_(==, ==)
_CUDA_MAGIC_REV_CMP_(!=, !=)
_CUDA_MAGIC_REV_CMP_(<, >)
_CUDA_MAGIC_REV_CMP_(>, <)
_CUDA_MAGIC_REV_CMP_(<=, >=)
_CUDA_MAGIC_REV_CMP_(>=, <=)
#undef _CUDA_MAGIC_REV_CMP_

template <class _Tp, ::size_t _Nm>
struct array {
  using value_type = _Tp;
  using pointer = value_type*;
  using const_pointer = const value_type*;
  using reference = value_type&;
  using const_reference = const value_type&;
  using iterator = value_type*;
  using const_iterator = const value_type*;
  using size_type = ::size_t;
  using difference_type = ::ptrdiff_t;
  using reverse_iterator = __cm_reverse_iterator<iterator>;
  using const_reverse_iterator = __cm_reverse_iterator<const_iterator>;

  typename __cm_array_storage<_Tp, _Nm>::type _M_elems;

  __host__ __device__ constexpr void fill(const value_type& __v) {
    for (size_type __i = 0; __i < _Nm; ++__i) data()[__i] = __v;
  }
  __host__ __device__ constexpr void swap(array& __o) noexcept(_Nm == 0 || is_nothrow_swappable_v<_Tp>) {
    using ::std::swap;
    for (size_type __i = 0; __i < _Nm; ++__i) swap(data()[__i], __o.data()[__i]);
  }

  __host__ __device__ constexpr iterator begin() noexcept { return data(); }
  __host__ __device__ constexpr const_iterator begin() const noexcept { return data(); }
  __host__ __device__ constexpr iterator end() noexcept { return data() + _Nm; }
  __host__ __device__ constexpr const_iterator end() const noexcept { return data() + _Nm; }
  __host__ __device__ constexpr const_iterator cbegin() const noexcept { return data(); }
  __host__ __device__ constexpr const_iterator cend() const noexcept { return data() + _Nm; }
  __host__ __device__ constexpr reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  __host__ __device__ constexpr const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  __host__ __device__ constexpr reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  __host__ __device__ constexpr const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }
  __host__ __device__ constexpr const_reverse_iterator crbegin() const noexcept { return const_reverse_iterator(end()); }
  __host__ __device__ constexpr const_reverse_iterator crend() const noexcept { return const_reverse_iterator(begin()); }

  __host__ __device__ constexpr size_type size() const noexcept { return _Nm; }
  __host__ __device__ constexpr size_type max_size() const noexcept { return _Nm; }
  __host__ __device__ constexpr bool empty() const noexcept { return _Nm == 0; }

  __host__ __device__ constexpr reference operator[](size_type __n) noexcept { return data()[__n]; }
  __host__ __device__ constexpr const_reference operator[](size_type __n) const noexcept { return data()[__n]; }
  // out of range: a trap in device code (libstdc++ throws std::out_of_range), no constant
  __host__ __device__ constexpr reference at(size_type __n) {
    if (__n >= _Nm) __trap();
    return data()[__n];
  }
  __host__ __device__ constexpr const_reference at(size_type __n) const {
    if (__n >= _Nm) __trap();
    return data()[__n];
  }
  __host__ __device__ constexpr reference front() noexcept { return data()[0]; }
  __host__ __device__ constexpr const_reference front() const noexcept { return data()[0]; }
  __host__ __device__ constexpr reference back() noexcept { return data()[_Nm - 1]; }
  __host__ __device__ constexpr const_reference back() const noexcept { return data()[_Nm - 1]; }

  __host__ __device__ constexpr pointer data() noexcept { return __cm_array_storage<_Tp, _Nm>::__ptr(_M_elems); }
  __host__ __device__ constexpr const_pointer data() const noexcept { return __cm_array_storage<_Tp, _Nm>::__ptr(_M_elems); }
};

template <class _Tp, class... _Up>
array(_Tp, _Up...) -> array<enable_if_t<(is_same_v<_Tp, _Up> && ...), _Tp>, 1 + sizeof...(_Up)>;

template <class _Tp, ::size_t _Nm>
__host__ __device__ constexpr bool operator==(const array<_Tp, _Nm>& __x, const array<_Tp, _Nm>& __y) {
  for (::size_t __i = 0; __i < _Nm; ++__i)
    if (!(__x[__i] == __y[__i])) return false;
  return true;
}
template <class _Tp, ::size_t _Nm>
__host__ __device__ constexpr bool operator!=(const array<_Tp, _Nm>& __x, const array<_Tp, _Nm>& __y) { return !(__x == __y); }
template <class _Tp, ::size_t _Nm>
__host__ __device__ constexpr bool operator<(const array<_Tp, _Nm>& __x, const array<_Tp, _Nm>& __y) {
  for (::size_t __i = 0; __i < _Nm; ++__i) {
    if (__x[__i] < __y[__i]) return true;
    if (__y[__i] < __x[__i]) return false;
  }
  return false;
}
template <class _Tp, ::size_t _Nm>
__host__ __device__ constexpr bool operator>(const array<_Tp, _Nm>& __x, const array<_Tp, _Nm>& __y) { return __y < __x; }
template <class _Tp, ::size_t _Nm>
__host__ __device__ constexpr bool operator<=(const array<_Tp, _Nm>& __x, const array<_Tp, _Nm>& __y) { return !(__y < __x); }
template <class _Tp, ::size_t _Nm>
__host__ __device__ constexpr bool operator>=(const array<_Tp, _Nm>& __x, const array<_Tp, _Nm>& __y) { return !(__x < __y); }

template <class _Tp, ::size_t _Nm, enable_if_t<_Nm == 0 || is_swappable_v<_Tp>, int> = 0>
__host__ __device__ constexpr void swap(array<_Tp, _Nm>& __x, array<_Tp, _Nm>& __y) noexcept(noexcept(__x.swap(__y))) {
  __x.swap(__y);
}

template <class _Tp, ::size_t _Nm> struct tuple_size<array<_Tp, _Nm>> : integral_constant<::size_t, _Nm> {};
template <::size_t _Ip, class _Tp, ::size_t _Nm> struct tuple_element<_Ip, array<_Tp, _Nm>> {
  static_assert(_Ip < _Nm, "array index is in range");
  using type = _Tp;
};

template <::size_t _Ip, class _Tp, ::size_t _Nm>
__host__ __device__ constexpr _Tp& get(array<_Tp, _Nm>& __a) noexcept {
  static_assert(_Ip < _Nm, "array index is in range");
  return __a.data()[_Ip];
}
template <::size_t _Ip, class _Tp, ::size_t _Nm>
__host__ __device__ constexpr const _Tp& get(const array<_Tp, _Nm>& __a) noexcept {
  static_assert(_Ip < _Nm, "array index is in range");
  return __a.data()[_Ip];
}
template <::size_t _Ip, class _Tp, ::size_t _Nm>
__host__ __device__ constexpr _Tp&& get(array<_Tp, _Nm>&& __a) noexcept {
  static_assert(_Ip < _Nm, "array index is in range");
  return static_cast<_Tp&&>(__a.data()[_Ip]);
}
template <::size_t _Ip, class _Tp, ::size_t _Nm>
__host__ __device__ constexpr const _Tp&& get(const array<_Tp, _Nm>&& __a) noexcept {
  static_assert(_Ip < _Nm, "array index is in range");
  return static_cast<const _Tp&&>(__a.data()[_Ip]);
}

template <class _Tp, ::size_t _Nm, ::size_t... _Ip>
__host__ __device__ constexpr array<remove_cv_t<_Tp>, _Nm> __cm_to_array(_Tp (&__a)[_Nm], index_sequence<_Ip...>) {
  return {{__a[_Ip]...}};
}
template <class _Tp, ::size_t _Nm, ::size_t... _Ip>
__host__ __device__ constexpr array<remove_cv_t<_Tp>, _Nm> __cm_to_array_move(_Tp (&__a)[_Nm], index_sequence<_Ip...>) {
  return {{static_cast<_Tp&&>(__a[_Ip])...}};
}
template <class _Tp, ::size_t _Nm>
__host__ __device__ constexpr array<remove_cv_t<_Tp>, _Nm> to_array(_Tp (&__a)[_Nm]) {
  static_assert(!is_array_v<_Tp>, "to_array does not accept multidimensional arrays");
  static_assert(is_constructible_v<_Tp, _Tp&>, "to_array requires copy constructible elements");
  return __cm_to_array(__a, make_index_sequence<_Nm>{});
}
template <class _Tp, ::size_t _Nm>
__host__ __device__ constexpr array<remove_cv_t<_Tp>, _Nm> to_array(_Tp (&&__a)[_Nm]) {
  static_assert(!is_array_v<_Tp>, "to_array does not accept multidimensional arrays");
  static_assert(is_move_constructible_v<_Tp>, "to_array requires move constructible elements");
  return __cm_to_array_move(__a, make_index_sequence<_Nm>{});
}

}  // namespace std
