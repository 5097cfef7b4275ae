// Matrix transpose through a padded shared-memory tile (no bank conflicts):
// odata (width x height) = idata (height x width)^T, both row-major.
// Launch: grid (ceil(width / TILE_DIM), ceil(height / TILE_DIM)), block (TILE_DIM, BLOCK_ROWS).
#define TILE_DIM 32
#define BLOCK_ROWS 8

extern "C" __global__ void __launch_bounds__(TILE_DIM * BLOCK_ROWS)
transpose_tiled(float* __restrict__ odata, const float* __restrict__ idata, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];   // +1 column: rows fall in different banks

    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];

    __syncthreads();

    x = blockIdx.y * TILE_DIM + threadIdx.x;   // swapped block offsets
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width)
            odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

// The same tile walk without the transpose: a copy with identical memory traffic,
// the bandwidth yardstick for the transpose.
extern "C" __global__ void __launch_bounds__(TILE_DIM * BLOCK_ROWS)
copy_tiled(float* __restrict__ odata, const float* __restrict__ idata, int width, int height) {
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            odata[(y + j) * width + x] = idata[(y + j) * width + x];
}
