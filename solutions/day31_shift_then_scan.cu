// Day 31 exercise, reference solution: exclusive scan both ways round, each
// publishing its tile's total. Graded like a submission:
//
//   python3 harness/grade.py day31 solutions/day31_shift_then_scan.cu
//
// The answer: scan-then-shift. Its tile ends holding the inclusive scan of the
// real input, so the last word already is the total. Shift-then-scan scanned
// the input with the tile's last element pushed off the end, so its last word
// is the total minus that element: one more global read and one more add.
//
// The point that outlives the exercise: when one primitive is built out of
// another, pick the order whose by-product is what you need next. Both orders
// give a correct exclusive scan; only scan-then-shift ends holding the tile's
// total, which is exactly what the next step of a large scan collects (Day 32's
// tile_sums, which phase 2 of the 3-phase scan scans). Recomputing a by-product
// you threw away costs another pass over memory you had already read.

constexpr unsigned int kMaxThreadsPerBlock = 1024;

constexpr int kFreeTotalVersion = 1;  // scan-then-shift
constexpr const char* kFreeTotalSentence =
    "Scan-then-shift: its tile finishes as the inclusive scan of the real tile, so the last word is already "
    "the block total, while shift-then-scan never added the tile's last element and must read it again.";

// Hillis-Steele over two halves of `tile`: reads half src, writes half dst, one
// barrier a step, idle lanes copy across. Returns the half holding the result.
__device__ unsigned int hillisSteeleDoubleBuffer(float* tile, unsigned int tid, unsigned int width) {
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

// Scan, then shift. The total is the inclusive scan's last word: free.
__global__ void scanExclusiveScanThenShift(const float* __restrict__ in, float* __restrict__ out,
                                           float* __restrict__ block_totals, size_t n) {
    __shared__ float tile[2 * kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const unsigned int width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;

    tile[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    const unsigned int src = hillisSteeleDoubleBuffer(tile, tid, width);
    if (i < n) out[i] = tid > 0 ? tile[src * width + tid - 1] : 0.0f;
    // Lanes past the end loaded 0, so the last lane's word is the total of a
    // partial tile as well.
    if (tid == width - 1) block_totals[blockIdx.x] = tile[src * width + tid];
}

// Shift, then scan. Lane tid loads element i - 1, which lies in the same tile
// because tid > 0; lane 0 loads the identity. The scan of the shifted tile is
// the exclusive scan of the real one, but its last word lacks the tile's last
// element, so the last lane adds that element itself.
__global__ void scanExclusiveShiftThenScan(const float* __restrict__ in, float* __restrict__ out,
                                           float* __restrict__ block_totals, size_t n) {
    __shared__ float tile[2 * kMaxThreadsPerBlock];
    const unsigned int tid = threadIdx.x;
    const unsigned int width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;

    tile[tid] = (tid > 0 && i - 1 < n) ? in[i - 1] : 0.0f;
    __syncthreads();
    const unsigned int src = hillisSteeleDoubleBuffer(tile, tid, width);
    if (i < n) out[i] = tile[src * width + tid];
    if (tid == width - 1) {
        const float last = i < n ? in[i] : 0.0f;  // the element the shift pushed off the end
        block_totals[blockIdx.x] = tile[src * width + tid] + last;
    }
}
