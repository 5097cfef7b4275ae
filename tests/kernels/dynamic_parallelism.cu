//| nvrtc+: [-rdc=true]
//| nvcc+: [-rdc=true]
// Dynamic parallelism (CDP2): threads of a parent grid launch child grids.
// Relocatable device code; cuda-magic links the device runtime (libcudadevrt) in.
__global__ void scale_row(float* row, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) row[i] *= a;
}

__global__ void fill_row(float* row, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) row[i] = v;
}

// One child grid per row.
__global__ void scale_rows(float* m, const float* factors, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows)
        scale_row<<<(cols + 127) / 128, 128>>>(m + (size_t)r * cols, factors[r], cols);
}

// Two child grids from one thread run in order (the same device stream): fill, then scale.
__global__ void fill_then_scale(float* m, int rows, int cols, float v, float a) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float* row = m + (size_t)r * cols;
    int blocks = (cols + 127) / 128;
    fill_row<<<blocks, 128>>>(row, v + r, cols);
    scale_row<<<blocks, 128>>>(row, a, cols);
}
