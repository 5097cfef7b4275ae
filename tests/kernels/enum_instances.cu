// An enum-templated sort step and a typed fill, each explicitly instantiated twice: the shape of
// ggml's and FlashInfer's kernels (an enum picks the order or the activation; int and int64_t
// instances side by side).  Each instance is bound under the name its instantiation spells.
#include <cstdint>

enum class Order { Ascending, Descending };

template <Order O>
__global__ void bitonic_step(float* keys, int j, int k) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned partner = i ^ j;
    if (partner > i) {
        bool up = ((i & k) == 0) == (O == Order::Ascending);
        float a = keys[i], b = keys[partner];
        if ((a > b) == up) { keys[i] = b; keys[partner] = a; }
    }
}

template __global__ void bitonic_step<Order::Ascending>(float*, int, int);
template __global__ void bitonic_step<Order::Descending>(float*, int, int);

template <typename T>
__global__ void fill_value(T* out, T value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

template __global__ void fill_value<int>(int*, int, int);
template __global__ void fill_value<int64_t>(int64_t*, int64_t, int);
