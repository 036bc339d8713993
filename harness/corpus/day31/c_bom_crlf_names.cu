// Correct Day 31 exercise saved with a UTF-8 byte-order mark and CRLF line endings,
// `using namespace std`, #define N 1024, and host and device helpers named like the
// checker's internals (openDevice, put, run, fail, noGpu). Right verdict: PASS.

#include <cstdio>
#include <cstdlib>

using namespace std;

#define N 1024

constexpr unsigned int kMaxThreadsPerBlock = N;

constexpr int kFreeTotalVersion = 1;
constexpr const char* kFreeTotalSentence =
    "Scan-then-shift, since the inclusive scan it finishes with already ends in the tile's total.";

__device__ float put(float* tile, unsigned int k, float v) {
    tile[k] = v;
    return v;
}
void openDevice() {}
void noGpu(const char* why) { fprintf(stderr, "%s\n", why); }
int run() { return 0; }
void fail(const char* why) {
    noGpu(why);
    abort();
}

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
    put(tile, tid, i < n ? in[i] : 0.0f);
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
    if (tid == width - 1) block_totals[blockIdx.x] = tile[src * width + tid] + (i < n ? in[i] : 0.0f);
}
