// Kernels whose return type is an enable_if expression, as libraries write SFINAE-guarded
// entry points: `typename enable_if<...>::type` and an `enable_if_t<...>` alias.  The traits
// are the library's own (as CUTLASS's and older Thrust's are), so both compilers mangle the
// same names; tests/cell/test_signature.py covers std::enable_if under both.  The parser reads
// the signature through the return type, so the parameters keep their names.
namespace detail {
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { using type = T; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template <class T> struct is_real { static constexpr bool value = false; };
template <> struct is_real<float> { static constexpr bool value = true; };
template <> struct is_real<double> { static constexpr bool value = true; };
}  // namespace detail

template <typename T>
__global__ typename detail::enable_if<detail::is_real<T>::value, void>::type
scale_inplace(T* x, T factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= factor;
}

template <typename T>
__global__ detail::enable_if_t<!detail::is_real<T>::value>
add_offset(T* x, T offset, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += offset;
}

template __global__ void scale_inplace<float>(float*, float, int);
template __global__ void scale_inplace<double>(double*, double, int);
template __global__ void add_offset<int>(int*, int, int);
