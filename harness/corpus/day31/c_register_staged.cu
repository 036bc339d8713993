// Correct Day 31 exercise, register-staged: one shared word per lane, the running
// value kept in a register, two barriers per step (read, then write). No
// double buffer, so a differently sized tile. Right verdict: PASS.

constexpr unsigned int kMaxThreadsPerBlock = 1024;

constexpr int kFreeTotalVersion = 1;
constexpr const char* kFreeTotalSentence =
    "Scan-then-shift: the last lane already holds the inclusive sum of the whole tile, which is the total.";

// Inclusive scan of the lanes' values; every lane gets its own prefix.
__device__ float inclusiveScanStaged(float* tile, float mine, unsigned int tid, unsigned int width) {
    tile[tid] = mine;
    __syncthreads();
    for (unsigned int offset = 1; offset < width; offset *= 2) {
        const float left = tid >= offset ? tile[tid - offset] : 0.0f;
        __syncthreads();  // everyone has read before anyone writes
        mine += left;
        tile[tid] = mine;
        __syncthreads();
    }
    return mine;
}

__global__ void scanExclusiveScanThenShift(const float* __restrict__ in, float* __restrict__ out,
                                           float* __restrict__ block_totals, size_t n) {
    __shared__ float tile[kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;
    const float inclusive = inclusiveScanStaged(tile, i < n ? in[i] : 0.0f, tid, blockDim.x);
    if (i < n) out[i] = tid > 0 ? tile[tid - 1] : 0.0f;
    if (tid == blockDim.x - 1) block_totals[blockIdx.x] = inclusive;
}

__global__ void scanExclusiveShiftThenScan(const float* __restrict__ in, float* __restrict__ out,
                                           float* __restrict__ block_totals, size_t n) {
    __shared__ float tile[kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;
    const float shifted = (tid > 0 && i - 1 < n) ? in[i - 1] : 0.0f;
    const float exclusive = inclusiveScanStaged(tile, shifted, tid, blockDim.x);
    if (i < n) out[i] = exclusive;
    if (tid == blockDim.x - 1) block_totals[blockIdx.x] = exclusive + (i < n ? in[i] : 0.0f);
}
