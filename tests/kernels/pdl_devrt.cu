//| nvrtc+: [-rdc=true]
//| nvcc+: [-rdc=true]
// Programmatic dependent launch as NVIDIA's docs write it for NVRTC: the cell includes
// <cuda_device_runtime_api.h> itself and builds relocatable device code (-rdc=true), where
// NVRTC declares the device runtime API too. cuda-magic's pre-include defines nothing twice.
//
// scale_rows: y = a * x, then lets the next kernel start early.
// add_bias:   waits for the previous grid's writes, then out[i] = y[i] + bias[i % cols].
// relaunch:   dynamic parallelism in the same cell: a child grid per row (the device runtime).
#include <cuda_device_runtime_api.h>

__global__ void scale_rows(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
  cudaTriggerProgrammaticLaunchCompletion();
}

__global__ void add_bias(const float* y, const float* bias, float* out, int n, int cols) {
  cudaGridDependencySynchronize();   // no-op unless launched with programmatic serialization
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = y[i] + bias[i % cols];
}

__global__ void negate_row(float* row, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < cols) row[i] = -row[i];
}

__global__ void relaunch(float* m, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) negate_row<<<(cols + 127) / 128, 128>>>(m + (size_t)r * cols, cols);
}
