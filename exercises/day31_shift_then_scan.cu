// Day 31 exercise: the exclusive scan, built the other way round.
//
// The lesson (day31-scan/scan.cu) builds its exclusive scan as scan-then-shift:
// an inclusive Hillis-Steele scan of the tile, then every lane stores its left
// neighbour's prefix. Your job:
//
//   1. Write scanExclusiveShiftThenScan: shift the INPUT right by one as the
//      tile is loaded (lane tid loads element tid - 1 of its tile, lane 0 loads
//      the identity 0), then run the same inclusive scan and store each lane's
//      own word.
//   2. Make BOTH kernels also write their tile's total (the sum of the tile's
//      input elements) to block_totals[blockIdx.x].
//   3. Say which of the two versions hands you that total for free:
//      set kFreeTotalVersion and write the sentence in kFreeTotalSentence.
//
// There is no main here: the harness compiles this file's device code only,
// launches both kernels from its own runner at 32, 64, 256 and 1024 threads on
// the page's input and on random inputs of awkward sizes, and compares
// everything with its own CPU reference. From this folder:
//
//   make day31                                              (needs an NVIDIA GPU)
//   python3 ../harness/grade.py day31 day31_shift_then_scan.cu --seed 1
//
// Untouched, this starter compiles and runs, and the checker says what is
// wrong: the shift-then-scan output is an inclusive scan, no totals are
// written, and the question is unanswered. Rules of the game: one tile of
// blockDim.x elements per block (blockDim.x <= 1024, any value), lanes past the
// end of the array count as 0, the guard goes on the data and never on a
// __syncthreads(), and block_totals has one slot per block.

constexpr unsigned int kMaxThreadsPerBlock = 1024;

// Which version hands you the block total for free?
//   1 = scan-then-shift (scanExclusiveScanThenShift)
//   2 = shift-then-scan (scanExclusiveShiftThenScan)
constexpr int kFreeTotalVersion = 0;  // TODO: 1 or 2
// TODO: one sentence saying why.
constexpr const char* kFreeTotalSentence = "";

// Hillis-Steele over two halves of `tile` (each blockDim.x words): the lesson's
// hillisSteeleDoubleBuffer (day31-scan/scan.cu), copied unchanged. It reads only half
// src, writes only half dst, one barrier a step, and idle lanes copy themselves across.
// Returns the half holding the inclusive scan; it ends with a barrier, so any lane may
// then read any word of it.
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

// Scan, then shift: the lesson's exclusive kernel.
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
    const unsigned int src = hillisSteeleDoubleBuffer(tile, tid, width);
    if (i < n) out[i] = tile[src * width + tid];

    // TODO: write this tile's total to block_totals[blockIdx.x]. What is in
    // the tile's last word here, and what is missing from it?
    (void)block_totals;
}
