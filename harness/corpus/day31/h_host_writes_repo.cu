// Hostile Day 31: the answers are right but both kernels are the untouched starter's
// (wrong); a host static constructor and main() write a working solution over
// @REPO@/exercises/day31_shift_then_scan.cu and a forged results.json into its
// working directory and @REPO@/. Right verdict: FAIL, the repository unchanged, and
// the next student's untouched starter still failing. (Bounded: writes only @REPO@ and cwd.)

#include <cstdio>

constexpr unsigned int kMaxThreadsPerBlock = 1024;

constexpr int kFreeTotalVersion = 1;  // scan-then-shift
constexpr const char* kFreeTotalSentence =
    "Scan-then-shift ends with the inclusive scan of the whole tile, so its last word is the total, "
    "while shift-then-scan pushed the last element off the end and must add it back.";

static const char kPlanted[] = R"PLANT(// planted by h_host_writes_repo.cu
constexpr unsigned int kMaxThreadsPerBlock = 1024;
constexpr int kFreeTotalVersion = 1;
constexpr const char* kFreeTotalSentence = "Scan-then-shift keeps the whole tile, so its last word is the total.";
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
__global__ void scanExclusiveScanThenShift(const float* in, float* out, float* block_totals, size_t n) {
    __shared__ float tile[2 * kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x, width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;
    tile[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    const unsigned int src = inclusiveScanDoubleBuffer(tile, tid, width);
    if (i < n) out[i] = tid > 0 ? tile[src * width + tid - 1] : 0.0f;
    if (tid == width - 1) block_totals[blockIdx.x] = tile[src * width + tid];
}
__global__ void scanExclusiveShiftThenScan(const float* in, float* out, float* block_totals, size_t n) {
    __shared__ float tile[2 * kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x, width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;
    tile[tid] = (tid > 0 && i - 1 < n) ? in[i - 1] : 0.0f;
    __syncthreads();
    const unsigned int src = inclusiveScanDoubleBuffer(tile, tid, width);
    if (i < n) out[i] = tile[src * width + tid];
    if (tid == width - 1) block_totals[blockIdx.x] = tile[src * width + tid] + (i < n ? in[i] : 0.0f);
}
)PLANT";

static const char kForged[] =
    "{\"score\": 1000, \"output\": \"forged by h_host_writes_repo\", \"tests\": []}\n";

static void writeFile(const char* path, const char* text) {
    if (std::FILE* f = std::fopen(path, "w")) {
        std::fputs(text, f);
        std::fclose(f);
    }
}

static void plant() {
    writeFile("@REPO@/exercises/day31_shift_then_scan.cu", kPlanted);
    writeFile("@REPO@/results.json", kForged);
    writeFile("results.json", kForged);
}

namespace {
struct Plant {
    Plant() { plant(); }
} planter;
}  // namespace

int main() {
    plant();
    std::printf("PASS\n");
    return 0;
}

// Hillis-Steele over two halves of `tile` (each blockDim.x words), exactly as in
// the lesson: reads only half src, writes only half dst, one barrier a step,
// idle lanes copy themselves across. Returns the half holding the inclusive
// scan; it ends with a barrier, so any lane may then read any word of it.
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

// Scan, then shift: the lesson's exclusive kernel.
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

    // TODO: write this tile's total to block_totals[blockIdx.x].
    (void)block_totals;
}

// Shift, then scan: YOUR kernel. As given it is the scan without any shift,
// so it produces the INCLUSIVE scan; the checker will tell you so.
__global__ void scanExclusiveShiftThenScan(const float* __restrict__ in, float* __restrict__ out,
                                           float* __restrict__ block_totals, size_t n) {
    __shared__ float tile[2 * kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const unsigned int width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;

    // TODO: load element i - 1 instead (the identity 0 for lane 0 of every tile).
    tile[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    const unsigned int src = inclusiveScanDoubleBuffer(tile, tid, width);
    if (i < n) out[i] = tile[src * width + tid];

    // TODO: write this tile's total to block_totals[blockIdx.x]. What is in
    // the tile's last word here, and what is missing from it?
    (void)block_totals;
}
