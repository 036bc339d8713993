// Correct Day 31 exercise with a warp-shuffle block scan: __shfl_up_sync inside each
// warp, then one warp scans the warp totals through shared memory. Handles a partial
// last warp. Right verdict: PASS.

constexpr unsigned int kMaxThreadsPerBlock = 1024;
constexpr unsigned int kWarp = 32;

constexpr int kFreeTotalVersion = 1;
constexpr const char* kFreeTotalSentence =
    "Scan-then-shift, because its last lane ends holding the sum of every element of the tile.";

__device__ unsigned int laneMask(unsigned int warp, unsigned int width) {
    const unsigned int warps = (width + kWarp - 1) / kWarp;
    const unsigned int rest = width % kWarp;
    return (warp == warps - 1 && rest != 0) ? (1u << rest) - 1u : 0xFFFFFFFFu;
}

__device__ float warpInclusive(float v, unsigned int lane, unsigned int mask) {
    for (unsigned int offset = 1; offset < kWarp; offset *= 2) {
        const float left = __shfl_up_sync(mask, v, offset);
        if (lane >= offset) v += left;
    }
    return v;
}

// Inclusive scan over the block; `shared` holds at least kMaxThreadsPerBlock words.
__device__ float blockInclusive(float v, float* shared, unsigned int tid, unsigned int width) {
    const unsigned int lane = tid % kWarp, warp = tid / kWarp;
    const unsigned int warps = (width + kWarp - 1) / kWarp;
    v = warpInclusive(v, lane, laneMask(warp, width));
    if (lane == kWarp - 1 || tid == width - 1) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float s = lane < warps ? shared[lane] : 0.0f;
        s = warpInclusive(s, lane, laneMask(0, width));
        if (lane < warps) shared[lane] = s;
    }
    __syncthreads();
    const float before = warp > 0 ? shared[warp - 1] : 0.0f;
    __syncthreads();  // shared is reused by the caller
    return v + before;
}

__global__ void scanExclusiveScanThenShift(const float* __restrict__ in, float* __restrict__ out,
                                           float* __restrict__ block_totals, size_t n) {
    __shared__ float shared[kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;
    const float inclusive = blockInclusive(i < n ? in[i] : 0.0f, shared, tid, blockDim.x);
    shared[tid] = inclusive;
    __syncthreads();
    if (i < n) out[i] = tid > 0 ? shared[tid - 1] : 0.0f;
    if (tid == blockDim.x - 1) block_totals[blockIdx.x] = inclusive;
}

__global__ void scanExclusiveShiftThenScan(const float* __restrict__ in, float* __restrict__ out,
                                           float* __restrict__ block_totals, size_t n) {
    __shared__ float shared[kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;
    const float shifted = (tid > 0 && i - 1 < n) ? in[i - 1] : 0.0f;
    const float exclusive = blockInclusive(shifted, shared, tid, blockDim.x);
    if (i < n) out[i] = exclusive;
    if (tid == blockDim.x - 1) block_totals[blockIdx.x] = exclusive + (i < n ? in[i] : 0.0f);
}
