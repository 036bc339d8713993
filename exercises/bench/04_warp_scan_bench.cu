// A05 stretch drill 04, the bench: a block scan built on warp shuffles, at 32 and at 64 lanes.
//
// A block scan in two layers. Inside a group of W lanes, Hillis-Steele whose every
// step is a shuffle: lane l takes lane l - delta's value straight out of its
// registers, so the log2(W) steps need no shared memory and no barrier. Across the
// groups of the block, one shared-memory word per group: the last lane of every
// group publishes the group's total, one barrier, group 0 scans those totals with
// the same W-lane scan, one barrier, and every lane adds the totals of the groups
// before its own. The code is written against a lane-group type, Lanes<W>, and
// never against a literal warp size, so one source runs at both widths:
//   W = 32   the hardware warp: up() is __shfl_up_sync
//   W = 64   a LOGICAL 64-lane group made of two warps, standing in for an AMD CDNA
//            wavefront: up() passes values through shared memory and waits at a
//            barrier only those two warps use (see "What width 64 proves" below)
// Then the scan is timed against Lab 1's two shared-memory tile scans, written
// compactly here (Hillis-Steele with ping-pong buffers, Blelloch with the
// bank-conflict padding), and against a device-to-device copy measured in the same
// run.
//
// The two functions the student writes, and the kernel, live in the kernel file
// (exercises/04_warp_scan.cu, the starter; solutions/04_warp_scan.cu, the answer):
// this bench #includes the file SUBMISSION names (default: the starter,
// ../04_warp_scan.cu from here), and prints the same tables for both.
//
// Build (nvcc 11.0 or newer, for <cuda/barrier>; sm_70 or newer):
//   nvcc -std=c++17 -O3 -arch=sm_90 -lineinfo -o 04_warp_scan bench/04_warp_scan_bench.cu     H100 / H200
//   nvcc -std=c++17 -O3 -arch=sm_75 -lineinfo -o 04_warp_scan bench/04_warp_scan_bench.cu     Tesla T4
//
// Run:
//   ./04_warp_scan                 both widths: every check, then the timing at n = 2^24
//   ./04_warp_scan --width 64      the 64-lane groups only (--width 32, --width both)
//   ./04_warp_scan --n 0           checks only, nothing timed (--n N: time at N elements)
//   ./04_warp_scan --quick         checks at small sizes only, nothing timed (for compute-sanitizer)
//   ./04_warp_scan --seed 7        the same random input and random sizes again
//   ./04_warp_scan --help          every flag
//
// Observe:
//   Untouched, the starter's warp scan takes one step of log2(W). Under each width's
//   table a lane map marks every lane of the first wrong tile right (.) or wrong (x):
//   lanes 0 and 1 of group 0 are right and nothing else, and the last line sends you
//   to TODO 1. With TODO 1 done, all of group 0 is right and every later group is
//   wrong, and the last line sends you to TODO 2. With both done, every check passes
//   at W = 32 and W = 64 from the same two functions.
//   Timing: at one element per thread every kernel here reads and writes each element
//   once, so expect them all within a small factor of each other and below the copy.
//   Compare the W = 32 rows with Blelloch at 1024 threads, where its tree has 22
//   barriers to the shuffle scan's 2. The W = 64 rows time the emulation below, not a
//   wave64 GPU: read them as a price of the emulation, never as a result about AMD.
//
// What width 64 proves, and what it does not. It proves that your two functions
// compute the right scan when up() has the semantics of a 64-lane shuffle: six
// steps, deltas up to 32, lanes 32..63 reading across what is a warp boundary on
// NVIDIA, 16 group totals in a 1024-thread block, and a group 0 that is 64 lanes
// wide; so nothing in them assumes 32. It proves nothing about speed or scheduling
// on real wave64 hardware, where the 64 lanes issue together and a shuffle is one
// cross-lane instruction; here two independently scheduled warps meet at a barrier
// twice per up(). (The HIP version, 04_warp_scan_hip.cpp, runs the same functions
// on an AMD wavefront itself.)
// Why a cuda::barrier per group and not a named barrier (PTX bar.sync id, 64): a
// block has 16 hardware barriers and __syncthreads() owns id 0, so 15 are free,
// but a 1024-thread block holds 16 pairs of warps. A cuda::barrier lives in shared
// memory, as many as the block needs (an mbarrier object on sm_80 and newer, a
// software barrier in libcu++ on sm_70 and sm_75), and compute-sanitizer's
// racecheck understands it on sm_80 and newer.
//
// Exactness: float inputs are integers 1..15 and every sum is inside one tile of at
// most 1024, so at most 15360: exact in any order of addition. int32 inputs are
// non-zero integers in -2^20..2^20, tile sums within 2^30: no overflow. No input is
// zero, so a prefix that misses a term, or adds one twice, shows up. Every
// comparison is `!=`.
//
// Exit status: 0 every gated check passed; 1 a gated check failed, a CUDA call
// failed, or a launch did not finish within the watchdog's 60 s; 2 bad command
// line; 3 no usable GPU (no device, driver missing or too old, or no binary for
// this GPU's architecture).

#include <cuda_runtime.h>
#include <cuda/barrier>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoGpu = 3;
constexpr const char* kProgram = "04_warp_scan";  // error lines start with it

// Every runtime call goes through this: the failing expression, where, and why.
#define CUDA_CHECK(call)                                                          \
    do {                                                                          \
        const cudaError_t err_ = (call);                                          \
        if (err_ != cudaSuccess) {                                                \
            std::fprintf(stderr, "%s: CUDA error %s (%s) in %s at %s:%d\n",       \
                         kProgram, cudaGetErrorName(err_), cudaGetErrorString(err_), \
                         #call, __FILE__, __LINE__);                              \
            std::exit(kExitFail);                                                 \
        }                                                                         \
    } while (0)

#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// ---- the kernel file ------------------------------------------------------------
//
// Lanes<W>, Prefix, the student's warp_inclusive_scan and block_scan, and the
// drill's kernel warp_scan_tile<W, inclusive, T>.
#ifndef SUBMISSION
#define SUBMISSION "../04_warp_scan.cu"
#endif
#include SUBMISSION

constexpr unsigned int kBlocks[] = {64, 256, 1024};
constexpr int kWidths[] = {32, 64};
constexpr size_t kDefaultTimingN = size_t(1) << 24;
constexpr size_t kMaxN = size_t(1) << 30;
constexpr size_t kManyTiles = 1000;
constexpr int kReps = 20;
constexpr int kWarmups = 2;
constexpr unsigned int kWatchdogSeconds = 60;

// What compareExact (the plumbing's, float only) and firstMismatch (any T) report.
struct Mismatch {
    size_t count = 0;
    size_t first = 0;
    double expected = 0.0;  // every value here, float or int32, is exact in a double
    double actual = 0.0;
};

// A row of the flag table parseFlags (in the plumbing block) reads: --name, a value or not, what it sets.
struct Flag { const char* name; bool takes_value; std::function<void(const std::string&)> set; };

// The host plumbing this file uses, defined in the block at its end (identical in every
// CUDA lesson file: splitmix64, clockSeed, numberFlag, choiceFlag, parseFlags, usageError,
// noGpu, fmt, num, printTable, median, gbPerSecond, openDevice, compareExact, medianMs).
static void printUsage(FILE* to);
[[maybe_unused]] static uint64_t splitmix64(uint64_t& state);
[[maybe_unused]] static uint64_t clockSeed();
[[maybe_unused]] static unsigned long long numberFlag(const std::string&, unsigned long long, unsigned long long, bool, const char*);
[[maybe_unused]] static int choiceFlag(const std::string& v, const std::vector<std::string>& names, const char* complaint);
template <typename Table> static void parseFlags(int argc, char** argv, const Table& flags);
[[noreturn]] [[maybe_unused]] static void usageError(const char* fmt, const char* what);
[[noreturn]] [[maybe_unused]] static void noGpu(const char* why, cudaError_t err);
[[maybe_unused]] static std::string fmt(const char* format, double value);
[[maybe_unused]] static std::string num(unsigned long long value);
[[maybe_unused]] static void printTable(const std::vector<std::string>& header,
                                        const std::vector<std::vector<std::string>>& rows);
[[maybe_unused]] static float median(std::vector<float> values);
[[maybe_unused]] static double gbPerSecond(double bytes, double ms);
[[maybe_unused]] static cudaDeviceProp openDevice(const void* probe);
[[maybe_unused]] static Mismatch compareExact(const std::vector<float>& expected, const std::vector<float>& actual);
template <typename Enqueue>
static float medianMs(int warmups, int reps, Enqueue&& enqueue);

// ---- input -------------------------------------------------------------------
//
// The generator is splitmix64, in the plumbing block at the end of the file: the same
// seed gives the same data with every compiler, so a failing seed reproduces anywhere.

// Integers 1..15: every tile sum (at most 1024 * 15) is exact in a float.
static std::vector<float> makeFloatInput(size_t n, uint64_t seed) {
    std::vector<float> in(n);
    uint64_t state = seed;
    for (float& v : in) v = float(1 + splitmix64(state) % 15);
    return in;
}

// Non-zero integers in -2^20..2^20, signs mixed: tile sums stay within 2^30.
static std::vector<int32_t> makeIntInput(size_t n, uint64_t seed) {
    constexpr int64_t kRange = int64_t(1) << 20;
    std::vector<int32_t> in(n);
    uint64_t state = seed ^ 0x5DEECE66Dull;  // not the float input's stream
    for (int32_t& v : in) {
        const int64_t magnitude = 1 + int64_t(splitmix64(state) % uint64_t(kRange));
        v = int32_t(splitmix64(state) & 1 ? -magnitude : magnitude);
    }
    return in;
}

// ---- CPU reference -----------------------------------------------------------
//
// The running total restarts at every tile boundary: one tile is one block.

template <class T>
static void scanTiles(const std::vector<T>& in, size_t count, size_t tile, bool inclusive, std::vector<T>& out) {
    out.assign(count, T(0));
    for (size_t start = 0; start < count; start += tile) {
        const size_t end = std::min(count, start + tile);
        T running = T(0);
        for (size_t i = start; i < end; ++i) {
            if (inclusive) running += in[i];
            out[i] = running;
            if (!inclusive) running += in[i];
        }
    }
}

// ---- GPU kernels: the Lab 1 tile scans -------------------------------------------
//
// The Lab 1 kernels the shuffle scan is timed against, compacted from
// a05-scan/cuda/scan.cu (hillis_steele_scan_tile_pingpong and blelloch_scan_tile
// with one item per thread and the padding; the full story is told there).

// Hillis-Steele, ping-pong buffers: inclusive. Each step reads one half of shared
// memory and writes the other, so one barrier a step; log2 T + 1 barriers, 2T words.
__global__ void hillis_steele_pingpong_tile(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    extern __shared__ float halves[];
    const unsigned int tid = threadIdx.x;
    const size_t i = size_t(blockIdx.x) * blockDim.x + tid;
    float* src = halves;
    float* dst = halves + blockDim.x;
    src[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int offset = 1; offset < blockDim.x; offset *= 2) {
        dst[tid] = tid >= offset ? src[tid] + src[tid - offset] : src[tid];  // idle lanes copy across
        __syncthreads();
        float* const swap = src;
        src = dst;
        dst = swap;
    }
    if (i < n) out[i] = src[tid];
}

// One dead word after every 32 moves index i to i + i/32, so the tree's
// power-of-two strides stop landing in one of the 32 banks. (The two-term GPU Gems
// spelling, unparenthesised, shifts by 5 + n: see scan.cu's PITFALL note.)
#define LOG_NUM_BANKS 5
#define CONFLICT_FREE_OFFSET(i) ((i) >> LOG_NUM_BANKS)

// Blelloch, padded: exclusive. Up-sweep to the total at the root, the identity
// over the root, down-sweep. 2 log2 T + 2 barriers, T + T/32 words.
__global__ void blelloch_padded_tile(const float* __restrict__ in, float* __restrict__ out, size_t n) {
    extern __shared__ float tree[];
    const unsigned int tid = threadIdx.x;
    const unsigned int width = blockDim.x;
    const size_t i = size_t(blockIdx.x) * width + tid;
    tree[tid + CONFLICT_FREE_OFFSET(tid)] = i < n ? in[i] : 0.0f;
    unsigned int offset = 1;
    for (unsigned int active = width / 2; active > 0; active /= 2, offset *= 2) {
        __syncthreads();
        if (tid < active) {
            const unsigned int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
            tree[b + CONFLICT_FREE_OFFSET(b)] += tree[a + CONFLICT_FREE_OFFSET(a)];
        }
    }
    __syncthreads();
    if (tid == 0) tree[width - 1 + CONFLICT_FREE_OFFSET(width - 1)] = 0.0f;  // nothing comes before the tile
    for (unsigned int active = 1; active < width; active *= 2) {
        offset /= 2;
        __syncthreads();
        if (tid < active) {
            const unsigned int a = offset * (2 * tid + 1) - 1, b = offset * (2 * tid + 2) - 1;
            const float left = tree[a + CONFLICT_FREE_OFFSET(a)];
            tree[a + CONFLICT_FREE_OFFSET(a)] = tree[b + CONFLICT_FREE_OFFSET(b)];
            tree[b + CONFLICT_FREE_OFFSET(b)] += left;
        }
    }
    __syncthreads();
    if (i < n) out[i] = tree[tid + CONFLICT_FREE_OFFSET(tid)];
}

// ---- host side: launches -------------------------------------------------------

static unsigned int tilesOf(size_t n, size_t tile) { return unsigned((n + tile - 1) / tile); }

template <class T>
static void launchWarpScan(int width, bool inclusive, unsigned int block, const T* in, T* out, size_t n) {
    if (n == 0) return;  // no zero-size launches
    const unsigned int grid = tilesOf(n, block);
    if (width == kNvidiaWarp) {
        if (inclusive) {
            warp_scan_tile<kNvidiaWarp, true, T><<<grid, block>>>(in, out, n);
        } else {
            warp_scan_tile<kNvidiaWarp, false, T><<<grid, block>>>(in, out, n);
        }
    } else {
        if (inclusive) {
            warp_scan_tile<2 * kNvidiaWarp, true, T><<<grid, block>>>(in, out, n);
        } else {
            warp_scan_tile<2 * kNvidiaWarp, false, T><<<grid, block>>>(in, out, n);
        }
    }
    CUDA_CHECK_LAUNCH();
}

enum class LdsKernel { HillisSteele, Blelloch };

static size_t ldsBytes(LdsKernel kernel, unsigned int block) {
    return kernel == LdsKernel::HillisSteele ? 2 * block * sizeof(float)
                                             : (block + CONFLICT_FREE_OFFSET(block)) * sizeof(float);
}

static void launchLds(LdsKernel kernel, unsigned int block, const float* in, float* out, size_t n) {
    if (n == 0) return;
    const unsigned int grid = tilesOf(n, block);
    if (kernel == LdsKernel::HillisSteele) {
        hillis_steele_pingpong_tile<<<grid, block, ldsBytes(kernel, block)>>>(in, out, n);
    } else {
        blelloch_padded_tile<<<grid, block, ldsBytes(kernel, block)>>>(in, out, n);
    }
    CUDA_CHECK_LAUNCH();
}

// ---- host side: options --------------------------------------------------------

struct Options {
    size_t n = kDefaultTimingN;  // timing size; 0 times nothing
    uint64_t seed = 0;
    bool seed_given = false;
    bool width[2] = {true, true};  // kWidths[0] = 32, kWidths[1] = 64
    bool quick = false;            // small check sizes, nothing timed
};

static void printUsage(FILE* to) {
    std::fprintf(to,
                 "usage: 04_warp_scan [--n N | --quick] [--seed S] [--width 32|64|both] [--help]\n"
                 "\n"
                 "  --n N          elements in the timed runs, 0..%zu (default %zu); 0 checks only.\n"
                 "                 The checks always run their own fixed list of sizes.\n"
                 "  --quick        checks at small sizes only (many tiles up to 2^16), nothing\n"
                 "                 timed: for compute-sanitizer\n"
                 "  --seed S       seed of the random input and of the random check sizes\n"
                 "                 (default: drawn from the clock, and printed)\n"
                 "  --width W      lane-group width: 32, 64 or both (default both)\n"
                 "  --help         this text\n"
                 "\n"
                 "exit status: 0 every gated check passed, 1 a gated check failed, a CUDA call failed\n"
                 "or a launch outlived the %u s watchdog, 2 bad command line, 3 no usable GPU\n",
                 kMaxN, kDefaultTimingN, kWatchdogSeconds);
}

static Options parseOptions(int argc, char** argv) {
    Options opt;
    bool n_given = false;
    const Flag flags[] = {
        {"--n", true, [&](const std::string& v) {
             opt.n = size_t(numberFlag(v, 0, kMaxN, false, "--n wants a whole number from 0 to 2^30, not '%s'"));
             n_given = true;
         }},
        {"--quick", false, [&](const std::string&) { opt.quick = true; }},
        {"--seed", true, [&](const std::string& v) {
             opt.seed = numberFlag(v, 0, UINT64_MAX, false, "--seed wants a whole number, not '%s'");
             opt.seed_given = true;
         }},
        {"--width", true, [&](const std::string& v) {
             const int width = choiceFlag(v, {"32", "64", "both"}, "--width wants 32, 64 or both, not '%s'");
             opt.width[0] = width != 1;
             opt.width[1] = width != 0;
         }},
    };
    parseFlags(argc, argv, flags);
    if (opt.quick && n_given) usageError("%s checks its own small sizes: it does not combine with --n", "--quick");
    if (opt.quick) opt.n = 0;
    return opt;
}

// ---- host side: device ---------------------------------------------------------

// openDevice (the plumbing) gives status 3 with one line for every way of having no
// usable GPU; the lane groups also need a 32-lane warp.
static cudaDeviceProp openWarpScanDevice() {
    const cudaDeviceProp prop = openDevice(reinterpret_cast<const void*>(&warp_scan_tile<32, true, float>));
    if (prop.warpSize != kNvidiaWarp) {
        std::fprintf(stderr, "04_warp_scan: this GPU reports a warp of %d lanes; the lane groups here are built on %d\n",
                     prop.warpSize, kNvidiaWarp);
        std::exit(kExitNoGpu);
    }
    return prop;
}

static const char* widthStory(int width) {
    return width == kNvidiaWarp ? "the hardware warp, up() = __shfl_up_sync"
                                : "logical: two warps, up() through shared memory and a cuda::barrier (an emulation)";
}

// ---- host side: the watchdog ---------------------------------------------------
//
// A lane group whose lanes do not all call up() never finishes its kernel. Rather
// than hang, every checked launch is waited for under alarm(): if it is not back
// within kWatchdogSeconds, the handler prints the line prepared for that launch
// and ends the process with status 1 (the driver reclaims the GPU). Only
// async-signal-safe calls in the handler: write and _exit.

static char g_watchdog_line[512];
static size_t g_watchdog_length = 0;

extern "C" void onWatchdog(int) {
    const ssize_t written = write(STDERR_FILENO, g_watchdog_line, g_watchdog_length);
    (void)written;
    _exit(kExitFail);
}

static void syncUnderWatchdog(const std::string& what) {
    std::snprintf(g_watchdog_line, sizeof g_watchdog_line,
                  "\nFAILED: %s did not finish within %u s: a lane group is waiting for a lane that never calls "
                  "up() (an up() inside an if?), or a thread never reaches a __syncthreads(); see the TODO "
                  "region's rules\n",
                  what.c_str(), kWatchdogSeconds);
    g_watchdog_length = std::strlen(g_watchdog_line);
    std::fflush(stdout);  // _exit does not flush: the tables so far must be out already
    std::signal(SIGALRM, onWatchdog);
    alarm(kWatchdogSeconds);
    CUDA_CHECK(cudaDeviceSynchronize());
    alarm(0);
}

// ---- host side: checking and printing ------------------------------------------

// The plumbing's compareExact, for any element type (it is float only).
template <class T>
static Mismatch firstMismatch(const std::vector<T>& expected, const std::vector<T>& actual) {
    Mismatch m;
    for (size_t i = 0; i < expected.size(); ++i) {
        if (actual[i] != expected[i]) {  // NaN (a float never written) counts too
            if (m.count == 0) {
                m.first = i;
                m.expected = double(expected[i]);
                m.actual = double(actual[i]);
            }
            ++m.count;
        }
    }
    return m;
}

static std::string showValue(double v) {
    char text[48];
    if (v != v) return "nan";
    if (v > -1e15 && v < 1e15 && v == double(int64_t(v))) {
        std::snprintf(text, sizeof text, "%" PRId64, int64_t(v));
    } else {
        std::snprintf(text, sizeof text, "%g", v);
    }
    return text;
}

// Gated checks: each one a comparison that must show zero mismatches.
struct Gate {
    int checks = 0;
    std::vector<std::string> failures;

    void record(const std::string& what, const Mismatch& m) {
        ++checks;
        if (m.count == 0) return;
        failures.push_back(what + ": out[" + num(m.first) + "] is " + showValue(m.actual) + ", should be " +
                           showValue(m.expected) + " (" + num(m.count) + " wrong)");
    }
};

// 0xFF bytes are a NaN as a float and -1 as an int32: an element a kernel never
// writes can not pass for a right answer left over from an earlier launch.
static void poison(void* device, size_t bytes) {
    if (bytes > 0) CUDA_CHECK(cudaMemset(device, 0xFF, bytes));
}

template <class T>
static void copyBack(std::vector<T>& host, const T* device, size_t n) {
    host.assign(n, T(0));
    if (n > 0) CUDA_CHECK(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
}

// ---- host side: the checks -------------------------------------------------------

struct Size {
    size_t n;
    std::string why;
};

// Every size and the reason it is there. The random ones come from the seed. --quick
// (compute-sanitizer) keeps every reason at smaller sizes: many tiles up to 2^16, 40 full.
static std::vector<Size> checkSizes(unsigned int tile, uint64_t seed, bool quick) {
    uint64_t state = seed ^ (uint64_t(tile) << 32);
    const int reach = quick ? 16 : 20;  // the many-tile sizes go up to 2^reach
    const size_t full_tiles = quick ? kManyTiles / 25 : kManyTiles;
    const size_t small = 2 + size_t(splitmix64(state) % (tile - 2));                     // 2 .. tile - 1
    const size_t few = tile + 2 + size_t(splitmix64(state) % (7 * size_t(tile) - 2));    // tile + 2 .. 8 tile - 1
    const size_t many = 8 * size_t(tile) + size_t(splitmix64(state) % ((size_t(1) << reach) - 8 * tile));
    const std::string power = "2^" + num(reach);
    return {{0, "empty: no launch, nothing written"},
            {1, "one element: lane 0 of group 0 alone"},
            {tile - 1, "tile - 1: the last lane loads the identity"},
            {tile, "one full tile"},
            {tile + 1, "tile + 1: the second tile holds one element"},
            {(size_t(1) << reach) + 3, power + " + 3: many tiles, the last holds 3"},
            {full_tiles * tile, num(full_tiles) + " full tiles, none partial"},
            {small, "random, under one tile"},
            {few, "random, a few tiles"},
            {many, "random, up to " + power}};
}

// Where element i sits: its tile (block), group and lane.
static std::string whereIs(size_t i, unsigned int block, int width) {
    const size_t in_tile = i % block;
    return "tile " + num(i / block) + " group " + num(in_tile / unsigned(width)) + " lane " + num(in_tile % unsigned(width));
}

// The first failing check of a width, with one tile's lanes marked right or wrong.
struct FirstFailure {
    bool found = false;
    unsigned int block = 0;
    size_t n = 0;
    std::string what;     // e.g. "float inclusive"
    bool inclusive = true;
    bool inclusive_passed = false;  // the same type's inclusive check, when `what` is exclusive
    size_t tile = 0;
    std::vector<std::string> groups;  // per group: '.' right, 'x' wrong, '-' past n
};

struct CheckBuffers {
    std::vector<float> in_f;
    std::vector<int32_t> in_i;
    float* d_in_f = nullptr;
    int32_t* d_in_i = nullptr;
    void* d_out = nullptr;  // room for the largest size, as float or int32
    bool quick = false;     // --quick: checkSizes' small list
};

template <class T>
static std::vector<std::string> laneMap(const std::vector<T>& expected, const std::vector<T>& actual, size_t tile_index,
                                        unsigned int block, int width) {
    std::vector<std::string> groups(block / unsigned(width));
    for (unsigned int t = 0; t < block; ++t) {
        const size_t i = tile_index * block + t;
        const char mark = i >= expected.size() ? '-' : actual[i] == expected[i] ? '.' : 'x';
        groups[t / unsigned(width)] += mark;
    }
    return groups;
}

// One launch of the drill's kernel at one size, checked against the CPU.
template <class T>
static Mismatch checkOne(int width, bool inclusive, unsigned int block, const std::vector<T>& reference,
                         const T* d_in, T* d_out, size_t n, const std::string& what, FirstFailure& first,
                         bool inclusive_passed) {
    poison(d_out, n * sizeof(T));
    launchWarpScan<T>(width, inclusive, block, d_in, d_out, n);
    syncUnderWatchdog("width " + num(unsigned(width)) + ", block " + num(block) + ", n " + num(n) + ", " + what);
    std::vector<T> out;
    copyBack(out, d_out, n);
    const std::vector<T> expected(reference.begin(), reference.begin() + std::ptrdiff_t(n));
    const Mismatch m = firstMismatch(expected, out);
    if (m.count > 0 && !first.found) {
        first.found = true;
        first.block = block;
        first.n = n;
        first.what = what;
        first.inclusive = inclusive;
        first.inclusive_passed = inclusive_passed;
        first.tile = m.first / block;
        first.groups = laneMap(expected, out, first.tile, block, width);
    }
    return m;
}

// A line on where the first failure points, and the TODO it points at.
static std::string diagnosis(const FirstFailure& f, std::string& todo) {
    if (!f.inclusive && f.inclusive_passed) {
        todo = "TODO 2 (block_scan's exclusive value)";
        return "the inclusive scan is right and the exclusive one is not: look at how block_scan makes the exclusive "
               "value (the lane below's inclusive value, the identity at lane 0, the groups before)";
    }
    const std::string& g0 = f.groups.front();
    const size_t bad0 = g0.find('x');
    if (bad0 == 0) {
        todo = "TODO 1 (warp_inclusive_scan)";
        return "group 0 is wrong at lane 0 already. Lane 0 has nothing below it and keeps its own value: up() hands "
               "a lane below delta its own v back, and only the lanes from delta up add what it returns";
    }
    if (bad0 != std::string::npos) {
        todo = "TODO 1 (warp_inclusive_scan)";
        std::string line = "group 0 is right in lanes 0.." + num(bad0 - 1) + " and wrong from lane " + num(bad0) +
                           ". Group 0 adds no other group's total, so these lanes are warp_inclusive_scan's work alone";
        if ((bad0 & (bad0 - 1)) == 0) {
            line += ", and that is the pattern of a scan in which each lane adds up only the last " + num(bad0) +
                    " lanes: are the steps with delta " + num(bad0) + " up to width / 2 missing?";
        }
        return line;
    }
    for (size_t g = 1; g < f.groups.size(); ++g) {
        if (f.groups[g].find('x') != std::string::npos) {
            todo = "TODO 2 (block_scan)";
            return "group 0 is right and group " + num(g) + " is not: warp_inclusive_scan works, and the totals of " +
                   "the groups before a group do not reach it (published, barrier, scanned by group 0, barrier, " +
                   "added back)";
        }
    }
    todo = "the TODO region";
    return "every lane of this tile is right in the map, yet the check failed: compare the tables above";
}

static void printLaneMap(const FirstFailure& f, int width) {
    const size_t start = f.tile * f.block;
    std::printf("Lane map of the first failing check: width %d, block %u, n %zu, %s; tile %zu (elements %zu..%zu)\n",
                width, f.block, f.n, f.what.c_str(), f.tile, start, start + f.block - 1);
    std::printf("  . right   x wrong   - past the end of the array\n");
    constexpr size_t kShown = 8;
    for (size_t g = 0; g < f.groups.size() && g < kShown; ++g) std::printf("  group %-3zu %s\n", g, f.groups[g].c_str());
    if (f.groups.size() > kShown) {
        size_t right = 0, total = 0;
        for (size_t g = kShown; g < f.groups.size(); ++g) {
            right += size_t(std::count(f.groups[g].begin(), f.groups[g].end(), '.'));
            total += f.groups[g].size();
        }
        std::printf("  groups %zu..%zu: %zu of %zu lanes right\n", kShown, f.groups.size() - 1, right, total);
    }
}

// Every block size and size at one width, float and int32, inclusive and
// exclusive. Returns the width's first failure (found = false when all passed).
static FirstFailure runChecks(int width, const std::string& story, const CheckBuffers& b, uint64_t seed, Gate& gate) {
    std::printf("Checks, width %d (%s)\n", width, story.c_str());
    FirstFailure first;
    std::vector<std::vector<std::string>> rows;
    for (unsigned int block : kBlocks) {
        std::vector<float> ref_f_incl, ref_f_excl;
        std::vector<int32_t> ref_i_incl, ref_i_excl;
        scanTiles(b.in_f, b.in_f.size(), block, true, ref_f_incl);
        scanTiles(b.in_f, b.in_f.size(), block, false, ref_f_excl);
        scanTiles(b.in_i, b.in_i.size(), block, true, ref_i_incl);
        scanTiles(b.in_i, b.in_i.size(), block, false, ref_i_excl);
        float* const out_f = static_cast<float*>(b.d_out);
        int32_t* const out_i = static_cast<int32_t*>(b.d_out);

        for (const Size& s : checkSizes(block, seed, b.quick)) {
            struct Result {
                const char* what;
                Mismatch m;
            } r[4];
            r[0] = {"float inclusive", checkOne(width, true, block, ref_f_incl, b.d_in_f, out_f, s.n, "float inclusive", first, false)};
            r[1] = {"float exclusive", checkOne(width, false, block, ref_f_excl, b.d_in_f, out_f, s.n, "float exclusive", first, r[0].m.count == 0)};
            r[2] = {"int32 inclusive", checkOne(width, true, block, ref_i_incl, b.d_in_i, out_i, s.n, "int32 inclusive", first, false)};
            r[3] = {"int32 exclusive", checkOne(width, false, block, ref_i_excl, b.d_in_i, out_i, s.n, "int32 exclusive", first, r[2].m.count == 0)};

            std::vector<std::string> row = {num(block), num(s.n), s.why};
            const Result* bad = nullptr;
            for (const Result& x : r) {
                gate.record("width " + num(unsigned(width)) + ", block " + num(block) + ", n " + num(s.n) + ", " + x.what, x.m);
                row.push_back(num(x.m.count));
                if (x.m.count > 0 && bad == nullptr) bad = &x;
            }
            if (bad) {
                row.push_back(std::string(bad->what) + " [" + num(bad->m.first) + "]");
                row.push_back(whereIs(bad->m.first, block, width));
                row.push_back(showValue(bad->m.expected));
                row.push_back(showValue(bad->m.actual));
                row.push_back("FAIL");
            } else {
                row.insert(row.end(), {"-", "-", "-", "-", "pass"});
            }
            rows.push_back(row);
        }
    }
    printTable({"block", "n", "why", "float incl", "float excl", "int32 incl", "int32 excl", "first bad", "where",
                "should be", "is", "gated"},
               rows);
    if (first.found) {
        printLaneMap(first, width);
        std::string todo;
        const std::string why = diagnosis(first, todo);
        std::printf("diagnosis: %s. See %s.\n\n", why.c_str(), todo.c_str());
    } else {
        std::printf("width %d: every check matched the CPU exactly\n\n", width);
    }
    return first;
}

// ---- host side: timing -----------------------------------------------------------
//
// The plumbing's medianMs: device events around each of kReps repetitions, after
// kWarmups untimed runs; the median is reported.

struct Timed {
    float ms = 0.0f;
    bool checked = false;  // the output of the timed runs matched the CPU
};

// Everything a width's timing table needs that does not depend on the width:
// the inputs, the copy ceiling and the Lab 1 kernels, each measured once a run.
struct TimingRun {
    size_t n = 0;
    std::vector<float> in;
    float* d_in = nullptr;
    float* d_out = nullptr;
    float copy_ms = 0.0f;
    std::vector<Timed> hillis_steele, blelloch;  // one per kBlocks entry
};

template <typename Launch>
static Timed timeAndCheck(TimingRun& t, unsigned int block, bool inclusive, const std::string& what, Gate& gate,
                          Launch&& launch) {
    Timed result;
    poison(t.d_out, t.n * sizeof(float));
    result.ms = medianMs(kWarmups, kReps, launch);
    syncUnderWatchdog(what);
    std::vector<float> reference, out;
    scanTiles(t.in, t.n, block, inclusive, reference);
    copyBack(out, t.d_out, t.n);
    const Mismatch m = compareExact(reference, out);
    gate.record(what + ", output of the timed runs", m);
    result.checked = m.count == 0;
    return result;
}

static void prepareTiming(TimingRun& t, size_t n, uint64_t seed, Gate& gate) {
    t.n = n;
    t.in = makeFloatInput(n, seed);
    CUDA_CHECK(cudaMalloc(&t.d_in, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&t.d_out, n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(t.d_in, t.in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    const size_t bytes = n * sizeof(float);
    t.copy_ms = medianMs(kWarmups, kReps, [&] { CUDA_CHECK(cudaMemcpyAsync(t.d_out, t.d_in, bytes, cudaMemcpyDeviceToDevice)); });
    CUDA_CHECK(cudaDeviceSynchronize());
    for (unsigned int block : kBlocks) {
        t.hillis_steele.push_back(timeAndCheck(t, block, true, "Hillis-Steele ping-pong, block " + num(block), gate,
                                               [&] { launchLds(LdsKernel::HillisSteele, block, t.d_in, t.d_out, n); }));
        t.blelloch.push_back(timeAndCheck(t, block, false, "Blelloch padded, block " + num(block), gate,
                                          [&] { launchLds(LdsKernel::Blelloch, block, t.d_in, t.d_out, n); }));
    }
}

static void runTiming(int width, TimingRun& t, Gate& gate) {
    const double bytes = 2.0 * double(t.n) * sizeof(float);
    const double copy_gbs = gbPerSecond(bytes, t.copy_ms);
    std::printf("Timing, width %d: %zu floats, one tile per block, median of %d runs after %d warm-ups (device events)\n",
                width, t.n, kReps, kWarmups);
    std::vector<std::vector<std::string>> rows;
    rows.push_back({"copy ceiling (D2D memcpy)", "-", "-", fmt("%.4f", t.copy_ms), fmt("%.1f", copy_gbs), "1.00", "-", "-"});
    auto row = [&](const std::string& kernel, unsigned int block, const char* kind, const Timed& x, float blelloch_ms) {
        const double gbs = gbPerSecond(bytes, x.ms);
        rows.push_back({kernel, num(block), kind, fmt("%.4f", x.ms), fmt("%.1f", gbs), fmt("%.2f", gbs / copy_gbs),
                        fmt("%.2fx", double(x.ms / blelloch_ms)), x.checked ? "pass" : "FAIL"});
    };
    const std::string shuffle = "warp-shuffle, W = " + num(unsigned(width));
    for (size_t k = 0; k < std::size(kBlocks); ++k) {
        const unsigned int block = kBlocks[k];
        const std::string at = ", block " + num(block);
        const Timed incl = timeAndCheck(t, block, true, shuffle + " inclusive" + at, gate, [&] {
            launchWarpScan<float>(width, true, block, t.d_in, t.d_out, t.n);
        });
        const Timed excl = timeAndCheck(t, block, false, shuffle + " exclusive" + at, gate, [&] {
            launchWarpScan<float>(width, false, block, t.d_in, t.d_out, t.n);
        });
        const float blelloch_ms = t.blelloch[k].ms;
        row(shuffle, block, "inclusive", incl, blelloch_ms);
        row(shuffle, block, "exclusive", excl, blelloch_ms);
        row("Hillis-Steele ping-pong (Lab 1)", block, "inclusive", t.hillis_steele[k], blelloch_ms);
        row("Blelloch padded (Lab 1)", block, "exclusive", t.blelloch[k], blelloch_ms);
    }
    printTable({"kernel", "block", "kind", "time (ms)", "GB/s", "of copy", "vs Blelloch", "checked"}, rows);
    std::printf("GB/s counts %.0f bytes: every element read once and written once. The Lab 1 rows and the copy\n"
                "were measured once in this run and are shown again in each width's table.\n\n",
                bytes);
}

// ---- main ------------------------------------------------------------------------

int main(int argc, char** argv) {
    Options opt = parseOptions(argc, argv);
    if (!opt.seed_given) opt.seed = clockSeed();  // short enough to retype

    const cudaDeviceProp prop = openWarpScanDevice();
    std::printf("GPU: %s (compute capability %d.%d), warp size %d, %d SMs, shared memory per block %zu B\n", prop.name,
                prop.major, prop.minor, prop.warpSize, prop.multiProcessorCount, prop.sharedMemPerBlock);
    std::printf("Lane groups: width 32 = %s\n", widthStory(32));
    std::printf("             width 64 = %s\n", widthStory(64));
    std::printf("Input: seed %" PRIu64 " (--seed %" PRIu64 " repeats this run); float integers 1..15, int32 non-zero "
                "integers in -2^20..2^20\n",
                opt.seed, opt.seed);
    std::printf("Checks: blocks of 64, 256 and 1024 threads, one tile per block, at each block's list of sizes below\n");
    std::printf("Timing: %s\n\n", opt.n > 0 ? ("n = " + num(opt.n) + " floats").c_str() : opt.quick ? "none (--quick)" : "none (--n 0)");

    // Check buffers: the largest check size, float and int32 inputs, one output.
    size_t largest = 0;
    for (unsigned int block : kBlocks) {
        for (const Size& s : checkSizes(block, opt.seed, opt.quick)) largest = std::max(largest, s.n);
    }
    CheckBuffers b;
    b.quick = opt.quick;
    b.in_f = makeFloatInput(largest, opt.seed);
    b.in_i = makeIntInput(largest, opt.seed);
    CUDA_CHECK(cudaMalloc(&b.d_in_f, largest * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&b.d_in_i, largest * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&b.d_out, largest * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(b.d_in_f, b.in_f.data(), largest * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b.d_in_i, b.in_i.data(), largest * sizeof(int32_t), cudaMemcpyHostToDevice));

    Gate gate;
    FirstFailure first;
    int first_width = 0;
    std::vector<int> widths;
    for (int w = 0; w < 2; ++w) {
        if (opt.width[w]) widths.push_back(kWidths[w]);
    }
    for (int width : widths) {
        const FirstFailure f = runChecks(width, widthStory(width), b, opt.seed, gate);
        if (f.found && !first.found) {
            first = f;
            first_width = width;
        }
    }
    CUDA_CHECK(cudaFree(b.d_in_f));
    CUDA_CHECK(cudaFree(b.d_in_i));
    CUDA_CHECK(cudaFree(b.d_out));

    if (opt.n > 0) {
        TimingRun t;
        prepareTiming(t, opt.n, opt.seed, gate);
        for (int width : widths) runTiming(width, t, gate);
        CUDA_CHECK(cudaFree(t.d_in));
        CUDA_CHECK(cudaFree(t.d_out));
    }

    if (!gate.failures.empty()) {
        std::printf("FAILED: %zu of %d gated checks mismatched; first: %s", gate.failures.size(), gate.checks,
                    gate.failures.front().c_str());
        if (first.found) {
            std::string todo;
            diagnosis(first, todo);
            std::printf(". The lane map under width %d's table points at %s\n", first_width, todo.c_str());
        } else {
            std::printf("\n");
        }
        return kExitFail;
    }
    std::printf("all %d gated checks passed: the warp-shuffle block scan matched the CPU exactly at width%s %s\n",
                gate.checks, widths.size() > 1 ? "s" : "", widths.size() > 1 ? "32 and 64" : num(unsigned(widths[0])).c_str());
    return kExitPass;
}

// ==== plumbing, identical in every CUDA lesson file ==================================
//
// The host helpers every lesson program needs and none teaches: the input generator,
// reading numbers off the command line, the two ways of giving up (a bad command line,
// no usable GPU), opening the device, and printing. The block is the same text in every CUDA lesson file,
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
[[noreturn]] [[maybe_unused]] static void noGpu(const char* why, cudaError_t err) {
    std::fprintf(stderr, "%s: no usable GPU: %s (%s)\n", kProgram, why, cudaGetErrorName(err));
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

// The device every program uses, or status 3 with one line for every way of having no
// usable GPU: no device, a driver too old for this runtime, or (asking for the
// attributes of `probe`, one of the program's kernels, which fails before any launch
// would) no machine code or PTX in this binary that the GPU can run.
[[maybe_unused]] static cudaDeviceProp openDevice(const void* probe) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) noGpu("no CUDA device found", cudaErrorNoDevice);
    if (err == cudaErrorInsufficientDriver) noGpu("the CUDA driver is missing or older than this program's runtime", err);
    if (err != cudaSuccess) noGpu("the CUDA runtime could not start", err);

    CUDA_CHECK(cudaSetDevice(0));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));

    cudaFuncAttributes attr{};
    const cudaError_t image = cudaFuncGetAttributes(&attr, probe);
    if (image != cudaSuccess) {
        char why[160];
        std::snprintf(why, sizeof why, "this binary has no code for sm_%d%d; rebuild with -arch=sm_%d%d", prop.major,
                      prop.minor, prop.major, prop.minor);
        noGpu(why, image);
    }
    return prop;
}

// Device memory for `count` elements of T (cudaMalloc aligns far past the 16 bytes of a vector load).
template <typename T>
static T* deviceArray(size_t count) {
    T* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
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
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int w = 0; w < warmups; ++w) enqueue();
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ms(size_t(reps), 0.0f);
    for (int r = 0; r < reps; ++r) {
        CUDA_CHECK(cudaEventRecord(start));
        enqueue();
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaEventElapsedTime(&ms[size_t(r)], start, stop));
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaDeviceSynchronize());
    return median(ms);
}

// ==== end of plumbing ================================================================
