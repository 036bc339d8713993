// Hostile Day 31 exercise: shift-then-scan does no scan at all. scan-then-shift is right
// and also keeps a copy of what it wrote in __device__ globals; shift-then-scan (whose
// exclusive output and block totals are the same numbers) copies that copy. It passed 7/7
// when the runner loaded the module once and launched the two kernels back to back on the
// same input and block size. The runner now loads the module afresh for every launch and
// gives the second kernel a new context, and no launch follows one on the same input, so
// the copy is of nothing (zeros) or of another input. Right verdict: FAIL, with both
// shift-then-scan checks failing. Bounded: 9 MB of globals, no loops but the copies.

constexpr unsigned int kMaxThreadsPerBlock = 1024;

constexpr int kFreeTotalVersion = 1;
constexpr const char* kFreeTotalSentence =
    "Scan-then-shift ends with the inclusive scan of the whole tile, so its last word is the total, "
    "while shift-then-scan pushed the last element off the end and must add it back.";

__device__ float g_out[1 << 21];     // the largest graded n is about 2^20
__device__ float g_totals[1 << 16];  // n / 32 tiles at most
__device__ unsigned long long g_n;

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
    const float exclusive = tid > 0 ? tile[src * width + tid - 1] : 0.0f;
    if (i < n) {
        out[i] = exclusive;
        if (i < (1u << 21)) g_out[i] = exclusive;  // the copy left for the other kernel
    }
    if (tid == width - 1) {
        block_totals[blockIdx.x] = tile[src * width + tid];
        if (blockIdx.x < (1u << 16)) g_totals[blockIdx.x] = tile[src * width + tid];
    }
    if (i == 0) g_n = n;
}

__global__ void scanExclusiveShiftThenScan(const float* __restrict__ in, float* __restrict__ out,
                                           float* __restrict__ block_totals, size_t n) {
    (void)in;
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n && i < (1u << 21)) out[i] = g_out[i];
    if (threadIdx.x == blockDim.x - 1 && blockIdx.x < (1u << 16)) block_totals[blockIdx.x] = g_totals[blockIdx.x];
}
