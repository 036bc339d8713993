// Hostile Day 31: correct, except that shift-then-scan executes __trap() in lane 0
// of block 0 after its work. Right verdict: FAIL, naming the CUDA error
// ("CUDA_ERROR_..."), not a grader traceback.

constexpr unsigned int kMaxThreadsPerBlock = 1024;

constexpr int kFreeTotalVersion = 1;  // scan-then-shift
constexpr const char* kFreeTotalSentence =
    "Scan-then-shift ends with the inclusive scan of the whole tile, so its last word is the total, "
    "while shift-then-scan pushed the last element off the end and must add it back.";

// Hillis-Steele over two halves of `tile`, as in the lesson: one barrier a step.
__device__ unsigned int inclusiveScanDoubleBuffer(float* tile, unsigned int tid, unsigned int width) {
    unsigned int src = 0;
    for (unsigned int offset = 1; offset < width; offset *= 2) {
        const unsigned int dst = 1 - src;
        const float mine = tile[src * width + tid];
        tile[dst * width + tid] = tid >= offset ? mine + tile[src * width + tid - offset] : mine;
        __syncthreads();
        src = dst;
    }
    return src;
}

__global__ void scanExclusiveScanThenShift(const float* __restrict__ in, float* __restrict__ out,
                                           float* __restrict__ block_totals, size_t n) {
    __shared__ float tile[2 * kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const unsigned int width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;
    tile[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    const unsigned int src = inclusiveScanDoubleBuffer(tile, tid, width);
    if (i < n) out[i] = tid > 0 ? tile[src * width + tid - 1] : 0.0f;
    if (tid == width - 1) block_totals[blockIdx.x] = tile[src * width + tid];
}

__global__ void scanExclusiveShiftThenScan(const float* __restrict__ in, float* __restrict__ out,
                                           float* __restrict__ block_totals, size_t n) {
    __shared__ float tile[2 * kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const unsigned int width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;
    tile[tid] = (tid > 0 && i - 1 < n) ? in[i - 1] : 0.0f;
    __syncthreads();
    const unsigned int src = inclusiveScanDoubleBuffer(tile, tid, width);
    if (i < n) out[i] = tile[src * width + tid];
    if (blockIdx.x == 0 && tid == 0) __trap();
    if (tid == width - 1) block_totals[blockIdx.x] = tile[src * width + tid] + (i < n ? in[i] : 0.0f);
}
