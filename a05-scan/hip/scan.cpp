// A05 Lab 1 in HIP: three tile scans, and a scan of the whole array built from them.
//
// The port of cuda/scan.cu, line for line: same parts, flags, tables, exit statuses (what
// differs: ../README.md, "HIP: the same labs on AMD GPUs"), kernels token for token.
// Part 1 scans one tile three ways against both CPU references: the two Hillis-Steele
// kernels give the INCLUSIVE scan, Blelloch's up-sweep/down-sweep the EXCLUSIVE one. Part 2
// times them over every tile of 4M floats: Hillis-Steele's 3.5x the additions (4.5x at 1024)
// hide behind the traffic. Part 3 scans the whole array in three phases (tile scans writing
// tile_sums, the recursive scan of tile_sums, the offsets added back) against a copy.
// Build (`make hip GPU_ARCH=...` from a05-scan/; gfx942 MI300, gfx950 MI350, gfx90a MI200):
//   hipcc -std=c++17 -O3 --offload-arch=gfx942 -o scan hip/scan.cpp
//
// The kernels, in reading order, and the command that runs each:
//   hillis_steele_scan_tile_pingpong  inclusive, two shared buffers               ./scan --part 1,2
//   hillis_steele_scan_tile_staged    inclusive in place: read, barrier, write     ./scan --part 1,2
//   smem_index, blelloch_block_scan   the tree: up-sweep, identity at the root, down-sweep
//   blelloch_scan_tile                exclusive, an element a thread, tile_sums    ./scan --part 1,2
//   going further (Part 3): load_run ... exclusive_chunk, K elements a thread in 16-byte chunks;
//   blelloch_scan_runs, phase 1       ./scan --part 3 --n 268435456 --items 8
//   warp_inclusive_scan, warp_block_exclusive_scan, warp_scan_tile   ./scan --part 3 --block-scan warp
//   add_tile_offsets, phase 3         ./scan --part 3
// Also: --no-padding (Blelloch without CONFLICT_FREE_OFFSET), --pattern random --seed 7,
// --check-only (no timing), --help. Observe the "matches" column (inclusive, inclusive,
// exclusive), the time ratio against the additions ratio, and Part 3's share of the copy
// ceiling (at most 0.5: see README.md). Every prefix is an integer <= 2^24: checks are `!=`.
// Only --block-scan warp depends on the wavefront width (64 on CDNA), through warpSize.
// Exit status: 0 every gated check passed; 1 a gated check or a HIP call failed; 2 bad
// command line; 3 no usable GPU (no device, driver too old, no code for its architecture).
// Layout: CPU reference, kernels, host side, main, then the plumbing every HIP lesson file
// shares. The tile kernels traced step by step: trace.cpp beside this file.

#include <hip/hip_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

constexpr int kExitPass = 0, kExitFail = 1, kExitUsage = 2, kExitNoGpu = 3;  // the header's exit statuses
constexpr const char* kProgram = "scan";  // error lines start with it

// Every runtime call goes through this: the failing expression, where, and why.
#define HIP_CHECK(call)                                                           \
    do {                                                                          \
        const hipError_t err_ = (call);                                           \
        if (err_ != hipSuccess) {                                                 \
            std::fprintf(stderr, "%s: HIP error %s (%s) in %s at %s:%d\n",        \
                         kProgram, hipGetErrorName(err_), hipGetErrorString(err_), \
                         #call, __FILE__, __LINE__);                              \
            std::exit(kExitFail);                                                 \
        }                                                                         \
    } while (0)

// A launch reports a bad configuration at once (hipGetLastError), a fault in the kernel at
// the next synchronisation: checked after every launch, and again once a timed loop is over.
#define HIP_CHECK_LAUNCH() HIP_CHECK(hipGetLastError())

// ---- CPU reference -----------------------------------------------------------
//
// The running total restarts at every tile boundary; a tile as long as the array gives the device-wide scan.

static void scanTilesInclusive(const std::vector<float>& in, size_t tile, std::vector<float>& out) {
    out.resize(in.size());
    float running = 0.0f;
    for (size_t i = 0; i < in.size(); ++i) {
        if (i % tile == 0) running = 0.0f;
        running += in[i];
        out[i] = running;
    }
}

static void scanTilesExclusive(const std::vector<float>& in, size_t tile, std::vector<float>& out) {
    out.resize(in.size());
    float running = 0.0f;
    for (size_t i = 0; i < in.size(); ++i) {
        if (i % tile == 0) running = 0.0f;
        out[i] = running;
        running += in[i];
    }
}

// ---- GPU kernels -------------------------------------------------------------
//
// One tile per block; tiles are powers of two (the trees need it). Lanes past the end load 0, the
// identity for +, so a partial last tile needs no special case; bounds checks guard data, never a
// barrier. Shared memory (LDS on AMD) is dynamic, sized per launch as Part 2 reports.
//
// LDS, like NVIDIA's shared memory, is 32 banks of 4-byte words (served 32 lanes at a time on a 64-lane
// wavefront), so LOG_NUM_BANKS is about banks, not lanes, on both vendors. A CDNA CU has 64 KB of LDS (a
// Hopper SM up to ~228 KB): prefer the 1x-LDS staged kernel for big tiles there, and grow Part 3's tiles
// with registers (--items), not LDS.
// Blelloch's tree touches slots a power-of-two stride apart: from stride 32 on, every active lane
// of a warp would hit the same bank and serialise. One dead word after every 32 moves index i to
// i + i/32, so indices 32 apart land in adjacent banks (one term is enough up to 1024; rocprofv3's
// SQ_LDS_BANK_CONFLICT shows it). PITFALL: GPU Gems 3's two-term version as many copies print it,
// ((n) >> LOG_NUM_BANKS + (n) >> (2 * LOG_NUM_BANKS)), is n >> (5 + n) >> 10: `+` binds tighter than
// `>>`. Parenthesise shifts.
#define LOG_NUM_BANKS 5
#define CONFLICT_FREE_OFFSET(i) ((i) >> LOG_NUM_BANKS)

// Hillis-Steele, ping-pong buffers: inclusive scan of each tile of blockDim.x. Each step reads one half of
// shared memory and writes the other: one barrier a step separates every read of a half from the next write
// to it. Every lane writes every step (idle lanes copy their value across), or the destination half would
// keep a value from two steps ago. Adds: T log2 T - (T - 1). Barriers: log2 T + 1. Shared memory: 2T words,
// the hungriest kernel for CDNA's 64 KB of LDS.
__global__ void hillis_steele_scan_tile_pingpong(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    extern __shared__ float pingpong[];
    const unsigned int tid = threadIdx.x;
    const unsigned int width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;
    float* src = pingpong;
    float* dst = pingpong + width;

    src[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int offset = 1; offset < width; offset *= 2) {
        dst[tid] = tid >= offset ? src[tid] + src[tid - offset] : src[tid];
        __syncthreads();
        float* const swap = src;
        src = dst;
        dst = swap;
    }
    if (i < n) out[i] = src[tid];
}

// Hillis-Steele in place, with the operand staged in a register: inclusive scan of each tile of
// blockDim.x. The first barrier of a step puts every read before any write (lane tid reads the slot
// lane tid - offset is about to overwrite); the second puts every write before the next step's
// reads. Adds: T log2 T - (T - 1). Barriers: 2 log2 T + 1. Shared memory: T words, half of ping-pong's:
// twice the blocks per CU where LDS is the limit, one barrier more per step.
__global__ void hillis_steele_scan_tile_staged(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    extern __shared__ float staged[];
    const unsigned int tid = threadIdx.x;
    const unsigned int width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;

    staged[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int offset = 1; offset < width; offset *= 2) {
        const float addend = tid >= offset ? staged[tid - offset] : 0.0f;
        __syncthreads();
        if (tid >= offset) staged[tid] += addend;
        __syncthreads();
    }
    if (i < n) out[i] = staged[tid];
}

template <bool kPadded>
__device__ __forceinline__ unsigned int smem_index(unsigned int i) {
    return kPadded ? i + CONFLICT_FREE_OFFSET(i) : i;
}

// Blelloch's tree over the T = blockDim.x values stored at temp[smem_index(0 .. T - 1)]: leaves their
// exclusive scan there, returns the block's total to thread 0 (0 to the others). Opens with a barrier
// (the caller only stores and calls), closes with one (then any thread may read any slot). Adds:
// 2(T - 1). Barriers: 2 log2 T + 2.
template <bool kPadded>
__device__ float blelloch_block_scan(float* temp, unsigned int tid, unsigned int width) {
    // Up-sweep (a reduction). After the level at `offset`, slot offset*(2j + 2) - 1
    // holds the sum of the 2 * offset values ending there; the root holds the total.
    unsigned int offset = 1;
    for (unsigned int active = width / 2; active > 0; active /= 2) {
        __syncthreads();
        if (tid < active) {
            const unsigned int ai = smem_index<kPadded>(offset * (2 * tid + 1) - 1);
            const unsigned int bi = smem_index<kPadded>(offset * (2 * tid + 2) - 1);
            temp[bi] += temp[ai];
        }
        offset *= 2;
    }
    __syncthreads();

    // The identity at the root says "nothing comes before this tile". That one store is what
    // makes the result exclusive; without it every output would be off by the tile's total.
    float total = 0.0f;
    if (tid == 0) {
        const unsigned int root = smem_index<kPadded>(width - 1);
        total = temp[root];
        temp[root] = 0.0f;
    }

    // Down-sweep. Invariant: a node holds the sum of everything to the left of its subtree. The
    // left child inherits the node's value; the right child gets the node's value plus the left
    // subtree's sum, which the left child held until now.
    for (unsigned int active = 1; active < width; active *= 2) {
        offset /= 2;
        __syncthreads();
        if (tid < active) {
            const unsigned int ai = smem_index<kPadded>(offset * (2 * tid + 1) - 1);
            const unsigned int bi = smem_index<kPadded>(offset * (2 * tid + 2) - 1);
            const float left = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += left;
        }
    }
    __syncthreads();
    return total;
}

// Blelloch exclusive scan of each tile of blockDim.x elements, one a thread: the lesson's kernel, the
// one Parts 1 and 2 run. Each thread stores its element, the block runs the tree, each thread takes its
// slot back. An exclusive scan drops the tile's total: thread 0 publishes it to tile_sums when that is
// not null (Parts 1 and 2 pass null). Shared memory: blockDim.x words, plus one per 32 when padded.
template <bool kPadded>
__global__ void blelloch_scan_tile(const float* __restrict__ in, float* __restrict__ out,
                                   float* __restrict__ tile_sums, size_t n) {
    extern __shared__ float temp[];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;

    temp[smem_index<kPadded>(tid)] = i < n ? in[i] : 0.0f;
    const float total = blelloch_block_scan<kPadded>(temp, tid, blockDim.x);  // opens and closes with a barrier
    if (i < n) out[i] = temp[smem_index<kPadded>(tid)];
    if (tid == 0 && tile_sums != nullptr) tile_sums[blockIdx.x] = total;  // what the exclusive scan drops
}

// ==== Going further: what Part 3 adds ==================================================
// The lesson's kernels end above. What follows is Part 3's machinery for speed, not new algorithm.

// How a thread's kItems elements (--items) sit in its tile: in chunks of kChunk consecutive elements
// (4, one 16-byte float4, when kItems is a multiple of 4; otherwise the whole run), chunk c of thread
// tid being chunk c * blockDim.x + tid of the tile. So one load instruction of a warp covers 512
// contiguous bytes, and a thread with 16 items has four 16-byte loads in flight. (16 consecutive
// elements a thread would put one instruction's lanes 64 bytes apart: every sector touched 4 times.)
template <int kItems>
struct RunShape {
    static constexpr int kChunk = kItems % 4 == 0 ? 4 : kItems;
    static constexpr int kChunks = kItems / kChunk;
};

// Element j of chunk c of this thread.
template <int kItems>
__device__ __forceinline__ size_t run_element(size_t base, unsigned int tid, int c, int j) {
    using S = RunShape<kItems>;
    return base + (size_t(c) * blockDim.x + tid) * S::kChunk + size_t(j);
}

// A thread's elements to and from registers, v[c * kChunk + j] = element j of chunk c. A full tile
// uses float4s (a tile starts at a multiple of its size, so in a 16-byte-aligned array, as hipMalloc's
// are, every chunk is aligned); a partial tile takes the guarded scalar path and loads the identity past
// the end.
template <int kItems>
__device__ __forceinline__ void load_run(const float* __restrict__ src, size_t base, size_t n, bool full_tile,
                                         float (&v)[kItems]) {
    using S = RunShape<kItems>;
    const unsigned int tid = threadIdx.x;
    if constexpr (S::kChunk == 4) {
        if (full_tile) {
#pragma unroll
            for (int c = 0; c < S::kChunks; ++c) {
                const float4 f = *reinterpret_cast<const float4*>(src + run_element<kItems>(base, tid, c, 0));
                v[4 * c + 0] = f.x;
                v[4 * c + 1] = f.y;
                v[4 * c + 2] = f.z;
                v[4 * c + 3] = f.w;
            }
            return;
        }
    }
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) {
#pragma unroll
        for (int j = 0; j < S::kChunk; ++j) {
            const size_t i = run_element<kItems>(base, tid, c, j);
            v[c * S::kChunk + j] = i < n ? src[i] : 0.0f;
        }
    }
}

template <int kItems>
__device__ __forceinline__ void store_run(float* __restrict__ dst, size_t base, size_t n, bool full_tile,
                                          const float (&v)[kItems]) {
    using S = RunShape<kItems>;
    const unsigned int tid = threadIdx.x;
    if constexpr (S::kChunk == 4) {
        if (full_tile) {
#pragma unroll
            for (int c = 0; c < S::kChunks; ++c) {
                *reinterpret_cast<float4*>(dst + run_element<kItems>(base, tid, c, 0)) =
                    make_float4(v[4 * c + 0], v[4 * c + 1], v[4 * c + 2], v[4 * c + 3]);
            }
            return;
        }
    }
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) {
#pragma unroll
        for (int j = 0; j < S::kChunk; ++j) {
            const size_t i = run_element<kItems>(base, tid, c, j);
            if (i < n) dst[i] = v[c * S::kChunk + j];
        }
    }
}

// One chunk of a thread's run: its sum, and its exclusive scan in place starting from `before`
// (everything in the tile that comes before the chunk). Sequential, in registers.
template <int kItems>
__device__ __forceinline__ float chunk_sum(const float (&v)[kItems], int c) {
    using S = RunShape<kItems>;
    float total = v[c * S::kChunk];
#pragma unroll
    for (int j = 1; j < S::kChunk; ++j) total += v[c * S::kChunk + j];
    return total;
}

template <int kItems>
__device__ __forceinline__ void exclusive_chunk(float (&v)[kItems], int c, float before) {
    using S = RunShape<kItems>;
#pragma unroll
    for (int j = 0; j < S::kChunk; ++j) {
        const float x = v[c * S::kChunk + j];
        v[c * S::kChunk + j] = before;
        before += x;
    }
}

// Phase 1: Blelloch exclusive scan of each tile of blockDim.x * kItems elements, its total to
// tile_sums; with kItems = 1, blelloch_scan_tile. With more, each thread adds up its chunk in
// registers, the block runs the same tree over the per-thread totals, and each thread rescans its
// chunk from its offset. With several chunks a thread the tree runs once per chunk, and thread 0 hands
// each chunk's total (every later chunk starts after it) to everybody through one more shared word.
template <int kItems, bool kPadded>
__global__ void blelloch_scan_runs(const float* __restrict__ in, float* __restrict__ out,
                                   float* __restrict__ tile_sums, size_t n) {
    using S = RunShape<kItems>;
    extern __shared__ float temp[];
    const unsigned int tid = threadIdx.x;
    const size_t tile = size_t(blockDim.x) * kItems;
    const size_t base = size_t(blockIdx.x) * tile;
    const bool full_tile = base + tile <= n;
    const unsigned int handover = smem_index<kPadded>(blockDim.x);  // the extra word

    float v[kItems];
    load_run<kItems>(in, base, n, full_tile, v);
    float tile_total = 0.0f;  // the chunks so far: in thread 0 always, in every thread with several chunks
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) {
        temp[smem_index<kPadded>(tid)] = chunk_sum<kItems>(v, c);
        float chunk_total = blelloch_block_scan<kPadded>(temp, tid, blockDim.x);  // thread 0's alone
        const float before = tile_total + temp[smem_index<kPadded>(tid)];
        if constexpr (S::kChunks > 1) {
            if (tid == 0) temp[handover] = chunk_total;
            __syncthreads();
            chunk_total = temp[handover];
        }
        exclusive_chunk<kItems>(v, c, before);
        tile_total += chunk_total;
    }
    store_run<kItems>(out, base, n, full_tile, v);
    if (tid == 0 && tile_sums != nullptr) tile_sums[blockIdx.x] = tile_total;
}

// Shuffle up within a warp: lane l receives lane l - delta's value; lanes below delta get their own
// back. The one line the two vendors spell differently (CUDA names the lanes taking part,
// __shfl_up_sync(0xffffffffu, v, delta)).
__device__ __forceinline__ float shuffle_up(float v, unsigned int delta) {
    return __shfl_up(v, delta);
}

// Hillis-Steele across the lanes of one warp, registers for the two buffers: a shuffle reads every
// lane's old register before any lane writes its new one, so nothing races. log2(warpSize) steps, no
// shared memory, no barrier; warpSize is 32 on NVIDIA and RDNA, 64 on CDNA, and nothing assumes either.
__device__ __forceinline__ float warp_inclusive_scan(float v, unsigned int lane) {
    for (unsigned int offset = 1; offset < unsigned(warpSize); offset *= 2) {
        const float up = shuffle_up(v, offset);
        if (lane >= offset) v += up;
    }
    return v;
}

// Exclusive scan across the block of kChunks values a thread, in the tile's order, from warp scans: each
// warp scans its lanes and its last lane publishes the warp's totals, warp 0 scans those kChunks * warps
// totals, and every value adds the totals before its warp to the lanes before it. Two barriers (Blelloch:
// 2 log2 T + 2 a chunk). Needs blockDim.x a multiple of warpSize and kChunks * warps <= warpSize (checked).
template <int kChunks>
__device__ void warp_block_exclusive_scan(const float (&value)[kChunks], float (&before)[kChunks],
                                          float* warp_totals, float& block_total) {
    const unsigned int lane = threadIdx.x % warpSize;
    const unsigned int warp = threadIdx.x / warpSize;
    const unsigned int warps = blockDim.x / warpSize;
    const unsigned int count = kChunks * warps;
    float inclusive[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c) inclusive[c] = warp_inclusive_scan(value[c], lane);
    if (lane == unsigned(warpSize) - 1) {
#pragma unroll
        for (int c = 0; c < kChunks; ++c) warp_totals[c * warps + warp] = inclusive[c];
    }
    __syncthreads();
    if (warp == 0) {  // the whole of warp 0 takes this branch, so its shuffles have every lane
        const float total = lane < count ? warp_totals[lane] : 0.0f;
        const float scanned = warp_inclusive_scan(total, lane);
        if (lane < count) warp_totals[lane] = scanned;
    }
    __syncthreads();
    block_total = warp_totals[count - 1];
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
        const unsigned int slot = c * warps + warp;
        const float before_warp = slot > 0 ? warp_totals[slot - 1] : 0.0f;
        const float before_lane = shuffle_up(inclusive[c], 1);  // exclusive within the warp
        before[c] = before_warp + (lane > 0 ? before_lane : 0.0f);
    }
}

// blelloch_scan_runs with the per-thread totals scanned by warp shuffles instead of Blelloch's tree
// (--block-scan warp): two barriers instead of 18 a chunk at 256 threads; kChunks words a warp.
template <int kItems>
__global__ void warp_scan_tile(const float* __restrict__ in, float* __restrict__ out,
                               float* __restrict__ tile_sums, size_t n) {
    using S = RunShape<kItems>;
    extern __shared__ float warp_totals[];
    const size_t tile = size_t(blockDim.x) * kItems;
    const size_t base = size_t(blockIdx.x) * tile;
    const bool full_tile = base + tile <= n;

    float v[kItems];
    load_run<kItems>(in, base, n, full_tile, v);
    float sums[S::kChunks], before[S::kChunks];
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) sums[c] = chunk_sum<kItems>(v, c);
    float tile_total = 0.0f;
    warp_block_exclusive_scan<S::kChunks>(sums, before, warp_totals, tile_total);
#pragma unroll
    for (int c = 0; c < S::kChunks; ++c) exclusive_chunk<kItems>(v, c, before[c]);
    store_run<kItems>(out, base, n, full_tile, v);
    if (threadIdx.x == 0 && tile_sums != nullptr) tile_sums[blockIdx.x] = tile_total;
}

// Phase 3: add tile t's offset (the exclusive scan of the tile totals) to every element of tile t.
// Same tiles, same chunks per thread as phase 1. No shared memory, no barriers: one more full read
// and write of the array, the price of using kernel boundaries as the only grid-wide barrier.
template <int kItems>
__global__ void add_tile_offsets(float* __restrict__ data, const float* __restrict__ tile_offsets, size_t n) {
    const size_t tile = size_t(blockDim.x) * kItems;
    const size_t base = size_t(blockIdx.x) * tile;
    const bool full_tile = base + tile <= n;
    const float offset = tile_offsets[blockIdx.x];

    float v[kItems];
    load_run<kItems>(data, base, n, full_tile, v);
#pragma unroll
    for (int k = 0; k < kItems; ++k) v[k] += offset;
    store_run<kItems>(data, base, n, full_tile, v);
}

// ---- host side -------------------------------------------------------------

constexpr size_t kDefaultN = size_t(1) << 22, kMaxN = size_t(1) << 30;  // the default, 4194304: the page's "4 M"
constexpr unsigned int kMinTile = 32, kDefaultTile = 256, kMaxTile = 1024;  // 32: half a CDNA wavefront: allowed, correct, wasteful
constexpr int kDefaultReps = 20, kMaxReps = 1000, kWarmups = 2;
constexpr uint64_t kExactLimit = uint64_t(1) << 24;  // floats hold every integer up to here

// What compareExact (in the plumbing block) reports: how many elements differ, and the first.
struct Mismatch { size_t count = 0, first = 0; float expected = 0.0f, actual = 0.0f; };

// A row of the flag table parseFlags (in the plumbing block) reads: --name, a value or not, what it sets.
struct Flag { const char* name; bool takes_value; std::function<void(const std::string&)> set; };

// The plumbing this file uses from the block after main (identical in every HIP lesson file).
[[maybe_unused]] static uint64_t splitmix64(uint64_t& state);
[[maybe_unused]] static uint64_t clockSeed();
[[noreturn]] [[maybe_unused]] static void usageError(const char* fmt, const char* what);
[[maybe_unused]] static unsigned long long numberFlag(const std::string&, unsigned long long, unsigned long long, bool, const char*);
[[maybe_unused]] static int choiceFlag(const std::string& v, const std::vector<std::string>& names, const char* complaint);
template <typename Table> static void parseFlags(int argc, char** argv, const Table& flags);
[[maybe_unused]] static std::string fmt(const char* format, double value);
[[maybe_unused]] static std::string num(unsigned long long value);
[[maybe_unused]] static std::string showValue(float v);
[[maybe_unused]] static void printTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
[[maybe_unused]] static float median(std::vector<float> values);
[[maybe_unused]] static double gbPerSecond(double bytes, double ms);
[[maybe_unused]] static hipDeviceProp_t openDevice(const void* probe);
[[maybe_unused]] static Mismatch compareExact(const std::vector<float>& expected, const std::vector<float>& actual);
template <typename Enqueue> static float medianMs(int warmups, int reps, Enqueue&& enqueue);
template <typename T> static T* deviceArray(size_t count);

// ---- host side: input ---------------------------------------------------------

enum class Pattern { Cycle, Random };  // the order of --pattern's names

struct Input {
    std::vector<float> values;
    std::string description;
    uint64_t largest_prefix = 0;  // every value is >= 0, so this is the sum of the whole array
};

// Float addition is exact in every order only while every partial sum is an integer <= 2^24, and the
// 3-phase scan's prefixes grow with n. So the largest value shrinks as n grows (n * largest <= 2^24),
// and past 2^24 elements the array holds one 1 in every run of k = ceil(n / 2^24). cycle's period, 13,
// is odd, so neighbouring power-of-two tiles hold different data: a wrong tile or offset shows up.
static Input makeInput(size_t n, Pattern pattern, uint64_t seed) {
    Input input;
    input.values.assign(n, 0.0f);
    const uint64_t cap = n == 0 ? kExactLimit : kExactLimit / n;  // largest value with n * value <= 2^24
    uint64_t state = seed;
    char text[256];
    if (cap >= 1) {
        if (pattern == Pattern::Cycle) {
            const unsigned int top = unsigned(std::min<uint64_t>(13, cap));
            for (size_t i = 0; i < n; ++i) input.values[i] = float(1 + (i % 13) % top);
            if (top == 13) std::snprintf(text, sizeof text, "cycle: in[i] = 1 + i %% 13, values 1..13");
            else std::snprintf(text, sizeof text, "cycle: in[i] = 1 + (i %% 13) %% %u, values 1..%u", top, top);
        } else {
            const unsigned int top = unsigned(std::min<uint64_t>(15, cap));
            for (size_t i = 0; i < n; ++i) input.values[i] = float(splitmix64(state) % (top + 1));
            std::snprintf(text, sizeof text, "random (seed %" PRIu64 "): integers 0..%u", seed, top);
        }
    } else {
        const size_t k = size_t((n + kExactLimit - 1) / kExactLimit);
        for (size_t run = 0; run * k < n; ++run) {
            const size_t at = run * k + size_t(pattern == Pattern::Cycle ? run % k : splitmix64(state) % k);
            if (at < n) input.values[at] = 1.0f;
        }
        if (pattern == Pattern::Cycle) std::snprintf(text, sizeof text, "cycle, sparse: a single 1 in every run of %zu elements "
                                                     "(at offset r %% %zu in run r), zeros elsewhere", k, k);
        else std::snprintf(text, sizeof text, "random (seed %" PRIu64 "), sparse: a single 1 at a random offset in every run "
                                              "of %zu elements, zeros elsewhere", seed, k);
    }
    input.description = text;
    for (float v : input.values) input.largest_prefix += uint64_t(v);
    return input;
}

// ---- host side: options ------------------------------------------------------

struct Options {
    size_t n = kDefaultN;
    unsigned int tile = kDefaultTile;  // Parts 1 and 2; Part 3's block size unless --threads
    unsigned int threads = 0;          // Part 3 block size; 0 means "same as --tile"
    int items = 1;                     // Part 3 elements per thread
    Pattern pattern = Pattern::Cycle;
    uint64_t seed = 0;
    bool seed_given = false;
    int reps = kDefaultReps;  // 0: check only, nothing timed
    bool part[4] = {false, true, true, true};
    bool padded = true;
    bool warp_scan = false;  // Part 3: scan the per-thread totals with warp shuffles, not Blelloch
};

static void printUsage(FILE* to) {
    std::fprintf(to,
                 "usage: scan [--n N] [--tile T] [--threads B] [--items K] [--pattern cycle|random]\n"
                 "            [--seed S] [--reps R] [--check-only] [--part P] [--no-padding]\n"
                 "            [--block-scan blelloch|warp] [--help]\n"
                 "\n"
                 "  --n N          elements, 0..%zu (default %zu)\n"
                 "  --tile T       tile size = threads per block for Parts 1 and 2, a power of two\n"
                 "                 from %u to %u (default %u); also Part 3's block size unless --threads\n"
                 "  --threads B    Part 3 threads per block, a power of two from %u to %u (default: --tile)\n"
                 "  --items K      Part 3 elements per thread: 1, 2, 4, 8 or 16 (default 1); its tile is B * K\n"
                 "  --pattern P    cycle: 1 + (i %% 13) %% top (default); random: integers 0..top.\n"
                 "                 top shrinks with n so the whole array sums to at most 2^24\n"
                 "  --seed S       seed for --pattern random (default: drawn from the clock, printed)\n"
                 "  --reps R       timed repetitions, median reported, 0..%d (default %d); 0 checks only\n"
                 "  --check-only   the same as --reps 0 (fast; for tests and compute-sanitizer)\n"
                 "  --part P       1, 2, 3, a comma list such as 1,3, or all (default all)\n"
                 "  --no-padding   run Blelloch without CONFLICT_FREE_OFFSET (bank conflicts on purpose)\n"
                 "  --block-scan S Part 3's scan of the per-thread totals: blelloch (default, the lesson's tree)\n"
                 "                 or warp (warp shuffles, two barriers; --threads a multiple of the warp size)\n"
                 "  --help         this text\n"
                 "\n"
                 "exit status: 0 every gated check passed, 1 a gated check failed or a HIP call failed,\n"
                 "2 bad command line, 3 no usable GPU\n",
                 kMaxN, kDefaultN, kMinTile, kMaxTile, kDefaultTile, kMinTile, kMaxTile, kMaxReps, kDefaultReps);
}

static Options parseOptions(int argc, char** argv) {
    Options opt;
    const Flag flags[] = {
        {"--n", true, [&](const std::string& v) {
             opt.n = size_t(numberFlag(v, 0, kMaxN, false, "--n wants a whole number from 0 to 2^30, not '%s'")); }},
        {"--tile", true, [&](const std::string& v) {
             opt.tile = unsigned(numberFlag(v, kMinTile, kMaxTile, true, "--tile wants a power of two from 32 to 1024, not '%s'")); }},
        {"--threads", true, [&](const std::string& v) {
             opt.threads = unsigned(numberFlag(v, kMinTile, kMaxTile, true, "--threads wants a power of two from 32 to 1024, not '%s'")); }},
        {"--items", true, [&](const std::string& v) {
             opt.items = int(numberFlag(v, 1, 16, true, "--items wants 1, 2, 4, 8 or 16, not '%s'")); }},
        {"--pattern", true, [&](const std::string& v) {
             opt.pattern = Pattern(choiceFlag(v, {"cycle", "random"}, "--pattern wants cycle or random, not '%s'")); }},
        {"--seed", true, [&](const std::string& v) {
             opt.seed = numberFlag(v, 0, UINT64_MAX, false, "--seed wants a whole number, not '%s'");
             opt.seed_given = true;
         }},
        {"--reps", true, [&](const std::string& v) {
             opt.reps = int(numberFlag(v, 0, kMaxReps, false, "--reps wants a whole number from 0 to 1000, not '%s'")); }},
        {"--check-only", false, [&](const std::string&) { opt.reps = 0; }},
        {"--part", true, [&](const std::string& v) {
             std::fill(opt.part, opt.part + 4, v == "all");  // part[0] is never read
             for (size_t start = 0, comma = 0; v != "all" && comma != std::string::npos; start = comma + 1) {
                 comma = v.find(',', start);
                 const std::string p = v.substr(start, comma - start);  // to the end after the last comma
                 if (p != "1" && p != "2" && p != "3") usageError("--part wants 1, 2, 3, a comma list of them, or all, not '%s'", v.c_str());
                 opt.part[p[0] - '0'] = true;
             }
         }},
        {"--no-padding", false, [&](const std::string&) { opt.padded = false; }},
        {"--block-scan", true, [&](const std::string& v) {
             opt.warp_scan = choiceFlag(v, {"blelloch", "warp"}, "--block-scan wants blelloch or warp, not '%s'") == 1; }},
    };
    parseFlags(argc, argv, flags);
    if (opt.seed_given && opt.pattern != Pattern::Random) usageError("%s only applies to --pattern random", "--seed");
    if (opt.threads == 0) opt.threads = opt.tile;
    return opt;
}

// ---- host side: checking and printing ----------------------------------------

static std::string showFirst(const std::vector<float>& values, size_t count) {
    std::string text;
    for (size_t i = 0; i < std::min(count, values.size()); ++i) text += (i ? " " : "") + showValue(values[i]);
    return text.empty() ? "-" : text;
}

// Gated checks: each one a comparison that must show zero mismatches.
struct Gate {
    int checks = 0;
    std::vector<std::string> failures;

    const char* record(const std::string& what, const Mismatch& m) {  // returns the "gated" column's word
        ++checks;
        if (m.count > 0) failures.push_back(what + ": out[" + num(m.first) + "] is " + showValue(m.actual) + ", should be " +
                                            showValue(m.expected) + " (" + num(m.count) + " wrong)");
        return m.count > 0 ? "FAIL" : "pass";
    }
};

static std::string firstBad(const Mismatch& m) { return m.count ? num(m.first) : "-"; }

static void copyBack(std::vector<float>& host, const float* device, size_t n) {
    host.assign(n, 0.0f);
    if (n > 0) HIP_CHECK(hipMemcpy(host.data(), device, n * sizeof(float), hipMemcpyDeviceToHost));
}

// Every check: poison the output, run `launch`, read the n outputs into `out`, compare. 0xFF
// bytes are a NaN: an element never written can not pass for an earlier kernel's answer.
template <typename Launch>
static Mismatch runChecked(const std::vector<float>& reference, float* d_out, size_t n, std::vector<float>& out,
                           Launch&& launch) {
    if (n > 0) HIP_CHECK(hipMemset(d_out, 0xFF, n * sizeof(float)));
    launch();
    HIP_CHECK(hipDeviceSynchronize());
    copyBack(out, d_out, n);
    return compareExact(reference, out);
}

// ---- host side: work per tile, launches ----------------------------------------

constexpr unsigned int log2u(unsigned int x) { return x <= 1 ? 0 : 1 + log2u((x + 1) / 2); }  // rounded up
constexpr unsigned long long hillisSteeleAdds(unsigned int t) { return (unsigned long long)t * log2u(t) - (t - 1); }
constexpr unsigned long long blellochAdds(unsigned int t) { return 2ull * (t - 1); }
constexpr unsigned int pingpongBarriers(unsigned int t) { return log2u(t) + 1; }
constexpr unsigned int stagedBarriers(unsigned int t) { return 2 * log2u(t) + 1; }
constexpr unsigned int blellochBarriers(unsigned int t) { return 2 * log2u(t) + 2; }

// The page's figures: Hillis-Steele 1793 adds at 256 and 9217 at 1024, Blelloch 2046 at 1024 (4.5x).
static_assert(hillisSteeleAdds(256) == 1793 && hillisSteeleAdds(1024) == 9217, "Hillis-Steele adds");
static_assert(blellochAdds(256) == 510 && blellochAdds(1024) == 2046, "Blelloch adds");

static size_t blellochSmemBytes(unsigned int t, bool padded) { return (t + (padded ? CONFLICT_FREE_OFFSET(t) : 0)) * sizeof(float); }
static unsigned int tilesOf(size_t n, size_t tile) { return unsigned((n + tile - 1) / tile); }

static const char* blellochLabel(bool padded) { return padded ? "Blelloch (padded)" : "Blelloch (no padding)"; }

// The tile kernels of Parts 1 and 2, with what Part 2's table says of each at a tile of T.
enum class TileKernel { PingPong, Staged, Blelloch };

struct TileKernelInfo {
    TileKernel kernel;
    const char* label;
    bool inclusive;
    unsigned long long adds;  // per tile
    unsigned int barriers;    // per tile
    size_t smem;              // bytes per tile
};

static std::vector<TileKernelInfo> tileKernels(unsigned int t, bool padded) {
    return {{TileKernel::PingPong, "Hillis-Steele ping-pong", true, hillisSteeleAdds(t), pingpongBarriers(t), 2 * t * sizeof(float)},
            {TileKernel::Staged, "Hillis-Steele register-staged", true, hillisSteeleAdds(t), stagedBarriers(t), t * sizeof(float)},
            {TileKernel::Blelloch, blellochLabel(padded), false, blellochAdds(t), blellochBarriers(t), blellochSmemBytes(t, padded)}};
}

// One tile per block of `tile` threads, one element per thread (Parts 1 and 2).
static void launchTileScan(const TileKernelInfo& k, bool padded, unsigned int tile, const float* in, float* out, size_t n) {
    if (n == 0) return;  // no zero-size launches
    const unsigned int grid = tilesOf(n, tile);
    if (k.kernel == TileKernel::PingPong) hillis_steele_scan_tile_pingpong<<<grid, tile, k.smem>>>(in, out, n);
    if (k.kernel == TileKernel::Staged) hillis_steele_scan_tile_staged<<<grid, tile, k.smem>>>(in, out, n);
    if (k.kernel == TileKernel::Blelloch && padded) blelloch_scan_tile<true><<<grid, tile, k.smem>>>(in, out, nullptr, n);
    if (k.kernel == TileKernel::Blelloch && !padded) blelloch_scan_tile<false><<<grid, tile, k.smem>>>(in, out, nullptr, n);
    HIP_CHECK_LAUNCH();
}

// The 3-phase scan's workspace, allocated before anything is timed. Level 0 scans the input into the
// output; level l > 0 scans level l - 1's tile totals (sums[l - 1]) into scanned[l - 1], exactly the
// offsets level l - 1's tiles need. The last level fits in one tile.
struct ScanLevels {
    size_t tile = 0;               // --threads x --items elements
    unsigned int warp_size = 32;   // the device's, for warp_scan_tile's shared memory
    std::vector<size_t> sizes;     // elements scanned at each level
    std::vector<float*> sums;      // sums[l]: level l's tile totals, sizes[l + 1] of them
    std::vector<float*> scanned;   // scanned[l]: exclusive scan of sums[l]

    size_t levels() const { return sizes.size(); }
};

static ScanLevels makeLevels(size_t n, const Options& opt, unsigned int warp_size) {
    ScanLevels lv{size_t(opt.threads) * size_t(opt.items), warp_size, {}, {}, {}};
    if (n > 0) lv.sizes.push_back(n);
    while (!lv.sizes.empty() && lv.sizes.back() > lv.tile) lv.sizes.push_back(tilesOf(lv.sizes.back(), lv.tile));
    for (size_t l = 1; l < lv.sizes.size(); ++l) {
        lv.sums.push_back(deviceArray<float>(lv.sizes[l]));
        lv.scanned.push_back(deviceArray<float>(lv.sizes[l]));
    }
    return lv;
}

// `marks`, when given, are two events: marks[0] after phase 1 (level 0's tile scans) and
// marks[1] before phase 3 (level 0's offsets); in between is phase 2, the whole recursion.
template <int kItems>
static void threePhaseScan(const Options& opt, const ScanLevels& lv, const float* d_in, float* d_out, const hipEvent_t* marks) {
    const size_t levels = lv.levels();
    if (levels == 0) return;  // n == 0: nothing to launch
    const unsigned int threads = opt.threads;
    const size_t smem = blellochSmemBytes(threads, opt.padded) + sizeof(float);  // + the chunk-total handover word
    const size_t warp_smem = RunShape<kItems>::kChunks * (threads / lv.warp_size) * sizeof(float);  // warp_scan_tile's
    auto input = [&](size_t l) -> const float* { return l == 0 ? d_in : lv.sums[l - 1]; };
    auto output = [&](size_t l) -> float* { return l == 0 ? d_out : lv.scanned[l - 1]; };

    // Phases 1 and 2, downwards: each level writes its tile totals for the next (the last, one tile, none).
    for (size_t l = 0; l < levels; ++l) {
        float* tile_sums = l + 1 < levels ? lv.sums[l] : nullptr;
        const unsigned int grid = tilesOf(lv.sizes[l], lv.tile);
        if (opt.warp_scan) warp_scan_tile<kItems><<<grid, threads, warp_smem>>>(input(l), output(l), tile_sums, lv.sizes[l]);
        else if (opt.padded) blelloch_scan_runs<kItems, true><<<grid, threads, smem>>>(input(l), output(l), tile_sums, lv.sizes[l]);
        else blelloch_scan_runs<kItems, false><<<grid, threads, smem>>>(input(l), output(l), tile_sums, lv.sizes[l]);
        HIP_CHECK_LAUNCH();
        if (l == 0 && marks) HIP_CHECK(hipEventRecord(marks[0]));
    }
    // Phase 3 at every level, upwards: once level l + 1 is complete, it holds level l's tile offsets.
    for (size_t l = levels - 1; l-- > 0;) {
        if (l == 0 && marks) HIP_CHECK(hipEventRecord(marks[1]));
        add_tile_offsets<kItems><<<tilesOf(lv.sizes[l], lv.tile), threads>>>(output(l), lv.scanned[l], lv.sizes[l]);
        HIP_CHECK_LAUNCH();
    }
    if (levels == 1 && marks) HIP_CHECK(hipEventRecord(marks[1]));
}

static void threePhaseScan(const Options& opt, const ScanLevels& lv, const float* d_in, float* d_out,
                           const hipEvent_t* marks = nullptr) {
    using Scan = void (*)(const Options&, const ScanLevels&, const float*, float*, const hipEvent_t*);
    const Scan by_items[] = {threePhaseScan<1>, threePhaseScan<2>, threePhaseScan<4>, threePhaseScan<8>, threePhaseScan<16>};
    by_items[log2u(unsigned(opt.items))](opt, lv, d_in, d_out, marks);  // --items is 1, 2, 4, 8 or 16
}

// ---- host side: the three parts ----------------------------------------------

// Part 1: the first tile of the input, one block, each kernel against both references.
static void runPart1(const Options& opt, const Input& input, const float* d_in, float* d_out, Gate& gate) {
    const unsigned int tile = opt.tile;
    const size_t m = std::min(opt.n, size_t(tile));
    const std::vector<float> in(input.values.begin(), input.values.begin() + std::ptrdiff_t(m));
    std::vector<float> inclusive, exclusive, out;
    scanTilesInclusive(in, tile, inclusive);
    scanTilesExclusive(in, tile, exclusive);

    std::printf("Part 1: one tile of %u threads over in[0..%zu), each kernel against both CPU references\n", tile, m);
    std::printf("  input      %s ...\n", showFirst(in, 8).c_str());
    std::printf("  inclusive  %s ...   (out[i] includes in[i])\n", showFirst(inclusive, 8).c_str());
    std::printf("  exclusive  %s ...   (out[i] stops before in[i]; out[0] is the identity)\n\n",
                showFirst(exclusive, 8).c_str());

    std::vector<std::vector<std::string>> rows;
    for (const TileKernelInfo& k : tileKernels(tile, opt.padded)) {
        const Mismatch vs_incl = runChecked(inclusive, d_out, m, out, [&] { launchTileScan(k, opt.padded, tile, d_in, d_out, m); });
        const Mismatch vs_excl = compareExact(exclusive, out);
        const char* matches = vs_incl.count == 0 ? (vs_excl.count == 0 ? "both" : "inclusive")
                                                 : (vs_excl.count == 0 ? "exclusive" : "neither");
        const char* gated = gate.record(std::string("Part 1, ") + k.label, k.inclusive ? vs_incl : vs_excl);
        rows.push_back({k.label, k.inclusive ? "inclusive" : "exclusive", matches, num(vs_incl.count),
                        num(vs_excl.count), showFirst(out, 8), gated});
    }
    printTable({"kernel", "should be", "matches", "vs inclusive", "vs exclusive", "first outputs", "gated"}, rows);
}

// The L2 cache's size (main sets it). A working set that fits in it is timed against the L2, not DRAM.
static size_t g_l2_bytes = 0;

static void printL2Note(size_t working_set) {
    if (working_set == 0 || working_set > g_l2_bytes) return;
    std::printf("the working set, %.1f MiB, fits in this GPU's %zu MiB L2: these GB/s are L2 figures, not DRAM "
                "(--n 268435456 is far larger)\n",
                double(working_set) / 1048576.0, g_l2_bytes >> 20);
}

// Part 2: every tile of the array on its own, each kernel checked, then timed.
static void runPart2(const Options& opt, const Input& input, const float* d_in, float* d_out, Gate& gate) {
    const unsigned int tile = opt.tile;
    const size_t n = opt.n;
    std::printf("Part 2: per-tile scans of %zu elements, %u tiles of %u, each tile scanned on its own\n", n,
                tilesOf(n, tile), tile);

    std::vector<float> reference, out, times;
    std::vector<std::vector<std::string>> rows;
    for (const TileKernelInfo& k : tileKernels(tile, opt.padded)) {
        (k.inclusive ? scanTilesInclusive : scanTilesExclusive)(input.values, tile, reference);
        auto launch = [&] { launchTileScan(k, opt.padded, tile, d_in, d_out, n); };
        const Mismatch mm = runChecked(reference, d_out, n, out, launch);
        gate.record(std::string("Part 2, ") + k.label, mm);

        const bool timed = opt.reps > 0 && n > 0;
        const float ms = timed ? medianMs(kWarmups, opt.reps, launch) : 0.0f;
        times.push_back(ms);
        rows.push_back({k.label, k.inclusive ? "inclusive" : "exclusive", num(k.adds), num(k.barriers), num(k.smem),
                        num(mm.count), firstBad(mm), timed ? fmt("%.4f", ms) : "-",
                        timed ? fmt("%.1f", gbPerSecond(2.0 * double(n) * sizeof(float), ms)) : "-", "-"});
    }
    const float blelloch_ms = times.back();  // 0 when nothing was timed
    for (size_t r = 0; blelloch_ms > 0.0f && r < rows.size(); ++r) rows[r].back() = fmt("%.2fx", double(times[r] / blelloch_ms));
    printTable({"kernel", "kind", "adds/tile", "barriers/tile", "smem/tile (B)", "mismatches", "first bad", "time (ms)",
                "GB/s", "vs Blelloch"}, rows);
    std::printf("Hillis-Steele does %.1fx the additions of Blelloch per tile of %u",
                double(hillisSteeleAdds(tile)) / double(blellochAdds(tile)), tile);
    if (blelloch_ms > 0.0f) std::printf("; it takes %.2fx (ping-pong) and %.2fx (register-staged) Blelloch's time\n",
                                        double(times[0] / blelloch_ms), double(times[1] / blelloch_ms));
    else std::printf(" (not timed: --reps 0 or n = 0)\n");
    std::printf("GB/s counts %zu bytes: each element read once and written once\n", 2 * n * sizeof(float));
    if (blelloch_ms > 0.0f) printL2Note(2 * n * sizeof(float));
    std::printf("\n");
}

// Part 3: the 3-phase exclusive scan of the whole array.
static void runPart3(const Options& opt, const Input& input, const float* d_in, float* d_out, Gate& gate,
                     unsigned int warp_size) {
    const size_t n = opt.n;
    const ScanLevels lv = makeLevels(n, opt, warp_size);  // all workspace, before anything is timed
    std::printf("Part 3: 3-phase exclusive scan of %zu elements: %u threads x %d item%s = %zu-element tiles, %s, %s\n",
                n, opt.threads, opt.items, opt.items == 1 ? "" : "s", lv.tile,
                opt.warp_scan ? "warp-shuffle block scan" : blellochLabel(opt.padded),
                opt.items % 4 == 0 ? "float4 loads and stores on full tiles" : "scalar loads and stores");

    std::vector<std::vector<std::string>> level_rows;
    std::string chain;
    for (size_t l = 0; l < lv.levels(); ++l) {
        level_rows.push_back({num(l), num(lv.sizes[l]), num(tilesOf(lv.sizes[l], lv.tile))});
        chain += (l ? " -> " : "") + num(tilesOf(lv.sizes[l], lv.tile));
    }
    printTable({"level", "elements", "tiles"}, level_rows);
    if (lv.levels() == 0) std::printf("recursion depth: 0 levels (nothing to scan)\n\n");
    else std::printf("recursion depth: %zu level%s (tiles per level: %s)\n\n", lv.levels(), lv.levels() == 1 ? "" : "s", chain.c_str());

    std::vector<float> reference, out;
    scanTilesExclusive(input.values, std::max<size_t>(n, 1), reference);
    const Mismatch first = runChecked(reference, d_out, n, out, [&] { threePhaseScan(opt, lv, d_in, d_out); });
    std::vector<std::vector<std::string>> check_rows = {
        {"3-phase scan", num(first.count), firstBad(first), gate.record("Part 3, 3-phase scan", first)}};

    const bool timed = opt.reps > 0 && n > 0;
    std::vector<std::vector<std::string>> time_rows, phase_rows;
    double fraction = 0.0;
    if (timed) {
        // The copy ceiling: a device-to-device copy of the same n floats, read + write, this run.
        const size_t bytes = n * sizeof(float);
        const float copy_ms =
            medianMs(kWarmups, opt.reps, [&] { HIP_CHECK(hipMemcpyAsync(d_out, d_in, bytes, hipMemcpyDeviceToDevice)); });
        const double copy_gbs = gbPerSecond(2.0 * double(bytes), copy_ms);
        hipEvent_t ev[4];
        for (hipEvent_t& e : ev) HIP_CHECK(hipEventCreate(&e));
        const hipEvent_t* marks = ev + 1;  // ev[1] after phase 1, ev[2] before phase 3
        for (int w = 0; w < kWarmups; ++w) threePhaseScan(opt, lv, d_in, d_out, marks);
        HIP_CHECK(hipDeviceSynchronize());
        std::vector<float> total(size_t(opt.reps)), phase[3] = {total, total, total};
        for (size_t r = 0; r < total.size(); ++r) {
            HIP_CHECK(hipEventRecord(ev[0]));
            threePhaseScan(opt, lv, d_in, d_out, marks);
            HIP_CHECK(hipEventRecord(ev[3]));
            HIP_CHECK(hipEventSynchronize(ev[3]));
            HIP_CHECK(hipEventElapsedTime(&total[r], ev[0], ev[3]));
            for (int p = 0; p < 3; ++p) HIP_CHECK(hipEventElapsedTime(&phase[p][r], ev[p], ev[p + 1]));
        }
        for (hipEvent_t& e : ev) HIP_CHECK(hipEventDestroy(e));
        const float ms = median(total);
        const double useful = 2.0 * double(n) * sizeof(float);
        const double gbs = gbPerSecond(useful, ms);
        fraction = gbs / copy_gbs;
        time_rows.push_back({"copy ceiling (D2D memcpy)", fmt("%.4f", copy_ms), fmt("%.0f", useful), fmt("%.1f", copy_gbs), "1.00"});
        time_rows.push_back({"3-phase scan", fmt("%.4f", ms), fmt("%.0f", useful), fmt("%.1f", gbs), fmt("%.2f", fraction)});
        const char* phase_names[] = {"1: scan tiles, write tile_sums", "2: scan tile_sums (recursively)", "3: add tile offsets"};
        for (int p = 0; p < 3; ++p) {
            const float m = median(phase[p]);
            phase_rows.push_back({phase_names[p], fmt("%.4f", m), fmt("%.0f%%", 100.0 * m / ms)});
        }

        // The timed runs wrote the output again: check it once more.
        copyBack(out, d_out, n);
        const Mismatch after = compareExact(reference, out);
        check_rows.push_back({"3-phase scan, after timing", num(after.count), firstBad(after),
                              gate.record("Part 3, 3-phase scan after timing", after)});
    }
    printTable({"check", "mismatches", "first bad", "gated"}, check_rows);
    if (timed) {
        printTable({"what", "time (ms)", "counted bytes", "GB/s", "of copy"}, time_rows);
        printTable({"phase", "time (ms)", "share"}, phase_rows);
        std::printf("the 3-phase scan reaches %.2f of the copy ceiling; it moves about 4n bytes against the\n"
                    "copy's 2n (phase 3 reads and writes everything again), so 0.50 is its bound\n", fraction);
        printL2Note(2 * n * sizeof(float));
        std::printf("\n");
    } else {
        std::printf("not timed (--reps 0 or n = 0): no copy ceiling, no GB/s\n\n");
    }
    for (float* p : lv.sums) HIP_CHECK(hipFree(p));
    for (float* p : lv.scanned) HIP_CHECK(hipFree(p));
}

// ---- main --------------------------------------------------------------------

int main(int argc, char** argv) {
    Options opt = parseOptions(argc, argv);
    if (opt.pattern == Pattern::Random && !opt.seed_given) opt.seed = clockSeed();

    const hipDeviceProp_t prop = openDevice(reinterpret_cast<const void*>(&blelloch_scan_tile<true>));
    const unsigned int largest_block = std::max(opt.part[3] ? opt.threads : 0u, opt.part[1] || opt.part[2] ? opt.tile : 0u);
    if (largest_block > unsigned(prop.maxThreadsPerBlock)) {
        std::fprintf(stderr, "scan: a block of %u threads exceeds this GPU's %d threads per block\n", largest_block,
                     prop.maxThreadsPerBlock);
        return kExitUsage;
    }
    // warp_block_exclusive_scan: whole warps, and one warp scans every warp's chunk totals.
    const unsigned int warp = unsigned(prop.warpSize);
    const unsigned int chunks = opt.items % 4 == 0 ? unsigned(opt.items) / 4 : 1;
    if (opt.part[3] && opt.warp_scan && (opt.threads % warp != 0 || chunks * (opt.threads / warp) > warp)) {
        std::fprintf(stderr, "scan: --block-scan warp needs --threads a multiple of this GPU's warp size (%u) and "
                             "(items / 4) x warps at most %u; %u threads x %d items is not\n",
                     warp, warp, opt.threads, opt.items);
        return kExitUsage;
    }

    // The device lines: one of the differences from cuda/scan.cu (all listed in ../README.md, "HIP").
    std::printf("GPU: %s (%s), wavefront size %d, %d compute units, L2 cache %d MiB\n", prop.name, prop.gcnArchName,
                prop.warpSize, prop.multiProcessorCount, prop.l2CacheSize >> 20);
    g_l2_bytes = size_t(prop.l2CacheSize);
    std::printf("Max threads per block: %d, LDS per block: %zu B, LDS per CU: %zu B, LDS banks: %d x 4 B\n",
                prop.maxThreadsPerBlock, prop.sharedMemPerBlock, prop.maxSharedMemoryPerMultiProcessor,
                1 << LOG_NUM_BANKS);

    const Input input = makeInput(opt.n, opt.pattern, opt.seed);
    std::printf("Input: %zu floats (%.1f MiB), %s\n", opt.n, double(opt.n) * sizeof(float) / 1048576.0,
                input.description.c_str());
    std::printf("Largest prefix: %" PRIu64 " (2^24 = %" PRIu64 " is the limit for exact float sums in any order)\n",
                input.largest_prefix, kExactLimit);
    std::printf("Timing: %s\n\n", opt.reps > 0 ? ("median of " + num(unsigned(opt.reps)) + " after " + num(kWarmups) + " warm-up runs, device events").c_str()
                                              : "none (--reps 0): correctness only");

    float* d_in = deviceArray<float>(std::max<size_t>(opt.n, 1));
    float* d_out = deviceArray<float>(std::max<size_t>(opt.n, 1));
    if (opt.n > 0) HIP_CHECK(hipMemcpy(d_in, input.values.data(), opt.n * sizeof(float), hipMemcpyHostToDevice));

    Gate gate;
    if (opt.part[1]) runPart1(opt, input, d_in, d_out, gate);
    if (opt.part[2]) runPart2(opt, input, d_in, d_out, gate);
    if (opt.part[3]) runPart3(opt, input, d_in, d_out, gate, unsigned(prop.warpSize));

    HIP_CHECK(hipFree(d_in));
    HIP_CHECK(hipFree(d_out));

    if (!gate.failures.empty()) {
        std::printf("gated mismatches:\n");
        for (const std::string& line : gate.failures) std::printf("  %s\n", line.c_str());
        std::printf("\nFAILED: %zu of %d gated checks mismatched; first: %s\n", gate.failures.size(), gate.checks,
                    gate.failures.front().c_str());
        return kExitFail;
    }
    std::printf("all %d gated checks passed: every kernel matched its CPU reference exactly\n", gate.checks);
    return kExitPass;
}

// ==== plumbing, identical in every HIP lesson file ==================================
//
// The host helpers every lesson program needs and none teaches: the input generator,
// reading numbers off the command line, the two ways of giving up (a bad command line,
// no usable GPU), opening the device, and printing. The block is the same text in every HIP lesson file,
// so a change here goes into all of them; harness/test_scanlab.py fails when the copies
// differ. A lesson names what it uses from here in its declarations near the top.

// splitmix64 rather than <random>: the same seed gives the same data with every
// compiler and standard library, so a failing seed reproduces anywhere.
[[maybe_unused]] static uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// A seed from the clock when --pattern random comes without --seed (the program prints it).
[[maybe_unused]] static uint64_t clockSeed() {
    uint64_t state = uint64_t(std::time(nullptr)) ^ uint64_t(std::clock()) << 32;
    return splitmix64(state) % 1000000;  // short enough to retype
}

// Whole decimal numbers only: "12abc", "-1", "" and overflow are all errors.
[[maybe_unused]] static bool parseUnsigned(const char* text, unsigned long long max, unsigned long long& value) {
    if (text == nullptr || *text == '\0') return false;
    for (const char* p = text; *p; ++p) {
        if (*p < '0' || *p > '9') return false;
    }
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (errno == ERANGE || *end != '\0' || v > max) return false;
    value = v;
    return true;
}

[[maybe_unused]] static bool isPowerOfTwo(unsigned long long x) { return x != 0 && (x & (x - 1)) == 0; }

// A bad command line: what is wrong, then the usage, and status 2.
[[noreturn]] [[maybe_unused]] static void usageError(const char* fmt, const char* what) {
    std::fprintf(stderr, "%s: ", kProgram);
    std::fprintf(stderr, fmt, what);
    std::fprintf(stderr, "\n\n");
    printUsage(stderr);
    std::exit(kExitUsage);
}

// A flag's whole-number value from `min` to `max` (a power of two where asked), or the
// complaint (%s is the value) and status 2.
[[maybe_unused]] static unsigned long long numberFlag(const std::string& v, unsigned long long min,
                                                      unsigned long long max, bool power_of_two, const char* complaint) {
    unsigned long long x = 0;
    if (!parseUnsigned(v.c_str(), max, x) || x < min || (power_of_two && !isPowerOfTwo(x))) usageError(complaint, v.c_str());
    return x;
}

// Which of `names` a flag's value is, by its index, or the complaint and status 2.
[[maybe_unused]] static int choiceFlag(const std::string& v, const std::vector<std::string>& names, const char* complaint) {
    for (size_t k = 0; k < names.size(); ++k) {
        if (v == names[k]) return int(k);
    }
    usageError(complaint, v.c_str());
}

// The command line read against a table of flags, each {name, takes a value, what it sets},
// in the order given: `--flag value` or `--flag=value`. --help (or -h) prints the usage and
// exits 0; a flag not in the table, without its value, or with one it does not take, is a
// usage error.
template <typename Table>
static void parseFlags(int argc, char** argv, const Table& flags) {
    for (int a = 1; a < argc; ++a) {
        std::string flag = argv[a];
        std::string value;
        const size_t eq = flag.find('=');
        const bool has_value = flag.rfind("--", 0) == 0 && eq != std::string::npos;
        if (has_value) {
            value = flag.substr(eq + 1);
            flag.resize(eq);
        }
        if (flag == "--help" || flag == "-h") {
            printUsage(stdout);
            std::exit(kExitPass);
        }
        auto known = std::begin(flags);
        while (known != std::end(flags) && flag != known->name) ++known;
        if (known == std::end(flags)) usageError("unknown argument '%s'", argv[a]);
        if (has_value && !known->takes_value) usageError("%s takes no value", flag.c_str());
        if (!has_value && known->takes_value) {
            if (a + 1 >= argc) usageError("%s needs a value", flag.c_str());
            value = argv[++a];
        }
        known->set(value);
    }
}

// One line and status 3 for every way of having no usable GPU.
[[noreturn]] [[maybe_unused]] static void noGpu(const char* why, hipError_t err) {
    std::fprintf(stderr, "%s: no usable GPU: %s (%s)\n", kProgram, why, hipGetErrorName(err));
    std::exit(kExitNoGpu);
}

[[maybe_unused]] static std::string fmt(const char* format, double value) {
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

[[maybe_unused]] static std::string num(unsigned long long value) { return std::to_string(value); }

// A float as the tables and mismatch lines print it: a whole number without a point.
[[maybe_unused]] static std::string showValue(float v) {
    char text[48];
    if (v != v) return "nan";
    if (v > -1e15f && v < 1e15f && v == float(int64_t(v))) {
        std::snprintf(text, sizeof text, "%" PRId64, int64_t(v));
    } else {
        std::snprintf(text, sizeof text, "%g", double(v));
    }
    return text;
}

// Header, dashes, rows, blank line; columns two spaces apart and never empty, so
// the harness reads them by header (scanlab.run.parse_table).
[[maybe_unused]] static void printTable(const std::vector<std::string>& header,
                                        const std::vector<std::vector<std::string>>& rows) {
    std::vector<size_t> width(header.size());
    for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
    for (const auto& row : rows) {
        for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], std::max<size_t>(1, row[c].size()));
    }
    auto line = [&](const std::vector<std::string>& cells) {
        std::string text;
        for (size_t c = 0; c < cells.size(); ++c) {
            const std::string cell = cells[c].empty() ? "-" : cells[c];
            text += cell;
            if (c + 1 < cells.size()) text += std::string(width[c] - cell.size() + 2, ' ');
        }
        std::printf("%s\n", text.c_str());
    };
    line(header);
    std::vector<std::string> dashes;
    for (size_t w : width) dashes.push_back(std::string(w, '-'));
    line(dashes);
    for (const auto& row : rows) line(row);
    std::printf("\n");
}

[[maybe_unused]] static float median(std::vector<float> values) {
    std::sort(values.begin(), values.end());
    const size_t mid = values.size() / 2;
    return values.size() % 2 ? values[mid] : 0.5f * (values[mid - 1] + values[mid]);
}

[[maybe_unused]] static double gbPerSecond(double bytes, double ms) { return bytes / (ms * 1e6); }

// The GPU's target without its feature flags: "gfx90a:sramecc+:xnack-" -> "gfx90a".
[[maybe_unused]] static std::string baseArch(const char* gcn_arch_name) {
    const std::string arch = gcn_arch_name;
    return arch.substr(0, arch.find(':'));
}

// The device every program uses, or status 3 with one line for every way of having no
// usable GPU: no device, a driver too old for this runtime, no code object for this
// GPU (asking for the attributes of `probe`, one of the program's kernels, fails
// before any launch would).
[[maybe_unused]] static hipDeviceProp_t openDevice(const void* probe) {
    int count = 0;
    const hipError_t err = hipGetDeviceCount(&count);
    if (err == hipErrorNoDevice || (err == hipSuccess && count == 0)) noGpu("no HIP device found", hipErrorNoDevice);
    if (err == hipErrorInsufficientDriver) noGpu("the GPU driver is missing or older than this program's HIP runtime", err);
    if (err == hipErrorNoBinaryForGpu) {
        noGpu("this binary has no code for this GPU's architecture; rebuild with --offload-arch set to the GPU's "
              "target (/opt/rocm/bin/offload-arch prints it)", err);
    }
    if (err != hipSuccess) noGpu("the HIP runtime could not start", err);

    HIP_CHECK(hipSetDevice(0));
    hipDeviceProp_t prop{};
    HIP_CHECK(hipGetDeviceProperties(&prop, 0));

    hipFuncAttributes attr{};
    const hipError_t image = hipFuncGetAttributes(&attr, probe);
    if (image != hipSuccess) {
        const std::string arch = baseArch(prop.gcnArchName);
        char why[200];
        std::snprintf(why, sizeof why, "this binary has no code for %s; rebuild with --offload-arch=%s", arch.c_str(),
                      arch.c_str());
        noGpu(why, image);
    }
    return prop;
}

// Device memory for `count` elements of T (hipMalloc aligns far past the 16 bytes of a vector load).
template <typename T>
static T* deviceArray(size_t count) {
    T* p = nullptr;
    HIP_CHECK(hipMalloc(&p, count * sizeof(T)));
    return p;
}

// Exact comparison of the first expected.size() elements (`actual` may be longer).
// A NaN in `actual` (an element never written: see the poisoned outputs) counts as
// a mismatch, since NaN equals nothing.
[[maybe_unused]] static Mismatch compareExact(const std::vector<float>& expected, const std::vector<float>& actual) {
    Mismatch m;
    for (size_t i = 0; i < expected.size(); ++i) {
        if (actual[i] != expected[i]) {
            if (m.count == 0) {
                m.first = i;
                m.expected = expected[i];
                m.actual = actual[i];
            }
            ++m.count;
        }
    }
    return m;
}

// Device events around each of `reps` repetitions, after `warmups` untimed runs; the
// median is returned, in milliseconds, once the device is idle (so a fault in the timed
// work fails here). Nothing in `enqueue` may allocate or synchronise.
template <typename Enqueue>
static float medianMs(int warmups, int reps, Enqueue&& enqueue) {
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    for (int w = 0; w < warmups; ++w) enqueue();
    HIP_CHECK(hipDeviceSynchronize());
    std::vector<float> ms(size_t(reps), 0.0f);
    for (int r = 0; r < reps; ++r) {
        HIP_CHECK(hipEventRecord(start));
        enqueue();
        HIP_CHECK(hipEventRecord(stop));
        HIP_CHECK(hipEventSynchronize(stop));
        HIP_CHECK(hipEventElapsedTime(&ms[size_t(r)], start, stop));
    }
    HIP_CHECK(hipEventDestroy(start));
    HIP_CHECK(hipEventDestroy(stop));
    HIP_CHECK(hipDeviceSynchronize());
    return median(ms);
}

// ==== end of plumbing ================================================================
