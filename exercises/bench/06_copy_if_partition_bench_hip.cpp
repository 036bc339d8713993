// A05 stretch drill 06 in HIP, the bench: copy_if with any predicate, and partition, on ONE scan.
//
// The HIP port of 06_copy_if_partition.cu, line for line: the same flags, tables,
// checks, exit statuses and TODO; only the runtime calls (hip*), the device line of
// the output and the notes on AMD hardware differ. No kernel depends on the
// wavefront width (64 on CDNA, 32 on RDNA and NVIDIA): the block step of the scan
// goes through shared memory (LDS) with a barrier between dependent steps.
//
// Lab 2 (a05-scan/hip/compaction.cpp) kept the non-zero floats. Here the same
// pipeline takes any predicate (a functor, passed as a template parameter) and any
// element type, and a second algorithm, partition, reuses the very same scan:
//   mark      : flags[i] = pred(in[i]) ? 1 : 0
//   scan      : offsets = exclusive scan of flags; the scan also writes its grand
//               total, the kept count, to device memory (no extra pass for it)
//   copy_if   : if (flags[i]) out[offsets[i]] = in[i]                     (given)
//   partition : a kept in[i] goes where copy_if puts it; a rejected one goes to
//               out[n - 1 - (i - offsets[i])]                          (your part)
// i - offsets[i] counts the REJECTED elements before i (i elements precede it and
// offsets[i] of them were kept), so the rejected ones fill the array from the far
// end, one slot further in for each: partition needs no second scan, and its
// scatter needs only flags[i] and offsets[i], never the total.
//
// The documented order of partition, checked exactly (CUB's DevicePartition::If
// promises the same):
//   out[0 .. kept)   the kept elements, in input order     == std::copy_if(in, pred)
//   out[kept .. n)   the rejected ones, in REVERSED input order: out[n-1] is the
//                    first rejected element, out[kept] the last
//                                                 == reverse(std::copy_if(in, !pred))
//   x > 0 on   3 -1 4 -5 9 -2 6 -8   gives   3 4 9 6 | -8 -2 -5 -1
//
// The student's partition_scatter, and copy_if's scatter_kept, live in the kernel
// file (exercises/06_copy_if_partition_hip.cpp, the starter; solutions/06_copy_if_partition_hip.cpp,
// the answer): this bench #includes the file SUBMISSION names (default: the starter,
// ../06_copy_if_partition_hip.cpp from here), and prints the same tables for both.
//
// Build (your GPU's target: /opt/rocm/bin/offload-arch, or rocminfo | grep gfx):
//   hipcc -std=c++17 -O3 --offload-arch=gfx942 -o 06_copy_if_partition_hip bench/06_copy_if_partition_bench_hip.cpp    MI300 (ROCm 6.0 or newer)
//   hipcc -std=c++17 -O3 --offload-arch=gfx950 -o 06_copy_if_partition_hip bench/06_copy_if_partition_bench_hip.cpp    MI350 (ROCm 7.0 or newer)
//   hipcc -std=c++17 -O3 --offload-arch=gfx90a -o 06_copy_if_partition_hip bench/06_copy_if_partition_bench_hip.cpp    MI200 (Debian's hipcc too)
//   hipcc -std=c++17 -O3 --offload-arch=gfx1100 -o 06_copy_if_partition_hip bench/06_copy_if_partition_bench_hip.cpp   Radeon RX 7900 (RDNA3)
//   nvcc -std=c++17 -O3 -arch=sm_90 -x cu -I ../harness/hip_on_cuda -o 06_copy_if_partition_hip bench/06_copy_if_partition_bench_hip.cpp
//                                        on an NVIDIA GPU, through the project's HIP-on-CUDA header
//
// Run:
//   ./06_copy_if_partition_hip              every table, then copy_if and partition timed at 2^24
//   ./06_copy_if_partition_hip --seed 7     the same random sizes and values again (the seed is printed)
//   ./06_copy_if_partition_hip --n 1000     quicker: the --n row of each table, and the timing, at 1000
//   ./06_copy_if_partition_hip --quick      small sizes only (up to 2^16 + 3), nothing timed: for compute-sanitizer
//   ./06_copy_if_partition_hip --help       every flag
//
// What runs. Element types: int32, float (holding the same small integers) and pair,
// 8 bytes {int32 key, int32 tag}, whose tag is the element's input index, so an
// element in the wrong place can never look right. Predicates, each a functor: x > 0,
// x is even, x % 7 == 3 (C++'s %, so never true for x < 0), x >= 60 (a functor that
// carries its threshold as a member), keep everything, keep nothing. Sizes, each with
// its reason in the table: 0, 1, tile - 1, tile, tile + 1, 2^20 + 3, tile^2 + 1 (the
// scan recurses twice), three seeded random sizes, and --n. Each (type, predicate,
// size) gets four gated checks:
//   copy_if          the count read back from the device == std::copy_if's; every kept
//                    value in its slot; no slot past the count written
//   partition count  the same count, from partition's own run
//   partition front  out[0 .. kept) == std::copy_if(in, pred)
//   partition back   out[kept .. n) == reverse(std::copy_if(in, !pred))
// Every output slot, and the count, is filled with 0xA5 bytes before each run: as
// int32 that is -1515870811, as float -2.9e-16, neither ever an input value, so an
// unwritten slot shows up as "never written".
//
// Timing: copy_if and partition with x > 0 at --n (default 2^24), median of 20 after
// 2 warm-up runs, device events, against a device-to-device copy of the same array.
// GB/s counts the bytes the algorithm must move: the input read once and the output
// written (copy_if: n + kept elements; partition: 2n). Not counted: the scatter's
// second read of the input, and the flags and offsets arrays, about 28 bytes per
// element more (see timeOne).
//
// Exit status: 0 every gated check passed; 1 a gated check failed or a HIP call
// failed; 2 bad command line; 3 no usable GPU (no device, driver missing or too
// old, or no binary for this GPU's architecture).

#include <hip/hip_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
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
constexpr const char* kProgram = "copy_if_partition";  // error lines start with it

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

#define HIP_CHECK_LAUNCH() HIP_CHECK(hipGetLastError())

// ---- the kernel file ------------------------------------------------------------
//
// copy_if's scatter_kept and the student's partition_scatter.
#ifndef SUBMISSION
#define SUBMISSION "../06_copy_if_partition_hip.cpp"
#endif
#include SUBMISSION

constexpr size_t kDefaultN = size_t(1) << 24;
constexpr size_t kMaxN = size_t(1) << 28;  // offsets are 32-bit; the CPU checks set the practical limit
constexpr unsigned int kScanThreads = 256;
constexpr unsigned int kScanItems = 8;                      // consecutive elements per thread in a tile
constexpr size_t kTile = size_t(kScanThreads) * kScanItems;  // 2048
constexpr unsigned int kElementwiseThreads = 256;           // mark and the scatters
constexpr int kThreshold = 60;                              // the state of the AtLeast functor
constexpr int kReps = 20;
constexpr int kWarmups = 2;
constexpr unsigned char kPoisonByte = 0xA5;

// What compareExact (in the plumbing block) reports; this program compares element
// types of its own (firstDifference below).
struct Mismatch {
    size_t count = 0;
    size_t first = 0;
    float expected = 0.0f;
    float actual = 0.0f;
};

// A row of the flag table parseFlags (in the plumbing block) reads: --name, a value or not, what it sets.
struct Flag { const char* name; bool takes_value; std::function<void(const std::string&)> set; };

// The host plumbing this file uses, defined in the block at its end (identical in every
// HIP lesson file: splitmix64, clockSeed, numberFlag, parseFlags, usageError,
// noGpu, fmt, num, printTable, median, gbPerSecond, baseArch, openDevice, compareExact, medianMs).
static void printUsage(FILE* to);
[[maybe_unused]] static uint64_t splitmix64(uint64_t& state);
[[maybe_unused]] static uint64_t clockSeed();
[[maybe_unused]] static unsigned long long numberFlag(const std::string&, unsigned long long, unsigned long long, bool, const char*);
template <typename Table> static void parseFlags(int argc, char** argv, const Table& flags);
[[noreturn]] [[maybe_unused]] static void usageError(const char* fmt, const char* what);
[[noreturn]] [[maybe_unused]] static void noGpu(const char* why, hipError_t err);
[[maybe_unused]] static std::string fmt(const char* format, double value);
[[maybe_unused]] static std::string num(unsigned long long value);
[[maybe_unused]] static void printTable(const std::vector<std::string>& header,
                                        const std::vector<std::vector<std::string>>& rows);
[[maybe_unused]] static float median(std::vector<float> values);
[[maybe_unused]] static double gbPerSecond(double bytes, double ms);
[[maybe_unused]] static std::string baseArch(const char* gcn_arch_name);
[[maybe_unused]] static hipDeviceProp_t openDevice(const void* probe);
[[maybe_unused]] static Mismatch compareExact(const std::vector<float>& expected, const std::vector<float>& actual);
template <typename Enqueue>
static float medianMs(int warmups, int reps, Enqueue&& enqueue);

// ---- element types and predicates ---------------------------------------------
//
// A predicate looks at an element's key: the value itself for int32 and float, the
// key member for a pair. Everything else (mark, the scan, both scatters) moves whole
// elements and never looks inside them.

struct alignas(8) Pair {
    int32_t key;
    int32_t tag;  // the element's input index: it rides along and proves where it came from
};

__host__ __device__ inline int keyOf(int32_t x) { return x; }
__host__ __device__ inline int keyOf(float x) { return int(x); }  // every float input holds an integer
__host__ __device__ inline int keyOf(const Pair& p) { return p.key; }

static bool operator==(const Pair& a, const Pair& b) { return a.key == b.key && a.tag == b.tag; }
static bool operator!=(const Pair& a, const Pair& b) { return !(a == b); }

struct Positive {
    template <typename T>
    __host__ __device__ bool operator()(const T& x) const { return keyOf(x) > 0; }
    std::string label() const { return "x > 0"; }
};

struct Even {
    template <typename T>
    __host__ __device__ bool operator()(const T& x) const { return keyOf(x) % 2 == 0; }
    std::string label() const { return "x is even"; }
};

struct ModSevenIsThree {
    template <typename T>
    __host__ __device__ bool operator()(const T& x) const { return keyOf(x) % 7 == 3; }
    std::string label() const { return "x % 7 == 3"; }
};

// A functor with state: the threshold travels to the GPU inside the kernel's
// by-value argument, like any other member.
struct AtLeast {
    int threshold;
    template <typename T>
    __host__ __device__ bool operator()(const T& x) const { return keyOf(x) >= threshold; }
    std::string label() const { return "x >= " + std::to_string(threshold) + " (AtLeast, a threshold member)"; }
};

struct KeepAll {
    template <typename T>
    __host__ __device__ bool operator()(const T&) const { return true; }
    std::string label() const { return "true (keeps everything)"; }
};

struct KeepNone {
    template <typename T>
    __host__ __device__ bool operator()(const T&) const { return false; }
    std::string label() const { return "false (keeps nothing)"; }
};

constexpr int kPredicates = 6;

// Calls visit(index, predicate) for each predicate in table order; each is a
// different type, so this is how one generic piece of code runs them all.
template <typename Visit>
static void forEachPredicate(Visit&& visit) {
    visit(0, Positive{});
    visit(1, Even{});
    visit(2, ModSevenIsThree{});
    visit(3, AtLeast{kThreshold});
    visit(4, KeepAll{});
    visit(5, KeepNone{});
}

// ---- input ---------------------------------------------------------------------
//
// The generator is splitmix64, in the plumbing block at the end of the file: the same
// seed gives the same data with every compiler, so a failing seed reproduces anywhere.
static int keyAt(uint64_t seed, size_t i) {
    uint64_t state = seed ^ (uint64_t(i) * 0xD1B54A32D192ED03ull);
    return int(splitmix64(state) % 199) - 99;
}

static void makeElement(int key, size_t, int32_t& x) { x = key; }
static void makeElement(int key, size_t, float& x) { x = float(key); }
static void makeElement(int key, size_t i, Pair& x) { x = Pair{key, int32_t(i)}; }

template <typename T>
static std::vector<T> makeInput(size_t n, uint64_t seed) {
    std::vector<T> in(n);
    for (size_t i = 0; i < n; ++i) makeElement(keyAt(seed, i), i, in[i]);
    return in;
}

// ---- CPU reference -------------------------------------------------------------

template <typename T, typename Pred>
static std::vector<T> cpuCopyIf(const std::vector<T>& in, Pred pred) {
    std::vector<T> kept;
    std::copy_if(in.begin(), in.end(), std::back_inserter(kept), pred);
    return kept;
}

// The rejected elements in the documented order: reversed input order.
template <typename T, typename Pred>
static std::vector<T> cpuRejectedReversed(const std::vector<T>& in, Pred pred) {
    std::vector<T> rejected;
    std::copy_if(in.begin(), in.end(), std::back_inserter(rejected), [&](const T& x) { return !pred(x); });
    std::reverse(rejected.begin(), rejected.end());
    return rejected;
}

// ---- GPU kernels: mark and the scan -----------------------------------------------------------
//
// One element per thread in mark and the scatters; guards are on data, never on
// barriers. The scan runs on unsigned int because offsets are addresses.

template <typename T, typename Pred>
__global__ void mark(const T* __restrict__ in, unsigned int* __restrict__ flags, size_t n, Pred pred) {
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) flags[i] = pred(in[i]) ? 1u : 0u;
}

// LDS slot of tile element j. LDS has 32 banks of 4 bytes on CDNA as on NVIDIA, and
// one pad word per 32 keeps both access patterns below free of bank conflicts
// (consecutive j across 32 lanes when loading, a stride of kScanItems across 32
// lanes when each thread walks its own run).
__device__ __forceinline__ unsigned int padded(unsigned int j) { return j + j / 32; }

// Phase 1 (and the whole scan when n fits one tile): exclusive scan of each tile of
// kTile elements. The tile goes through shared memory so that global loads and
// stores are coalesced; each thread then owns kScanItems consecutive elements: it
// sums its run, the run totals are scanned across the block (Hillis-Steele, double
// buffered, one barrier a step), and each thread writes its run's prefixes. Lanes
// past n load 0, the identity. The last thread writes the tile's total to
// tile_sums[blockIdx.x] unless tile_sums is null. in may equal out: a block reads
// all of its tile before the first barrier and writes after it, and blocks own
// disjoint tiles.
__global__ void __launch_bounds__(kScanThreads) scan_tile(const unsigned int* in, unsigned int* out,
                                                          unsigned int* tile_sums, size_t n) {
    __shared__ unsigned int tile[kTile + kTile / 32];
    __shared__ unsigned int runs[2][kScanThreads];
    const unsigned int tid = threadIdx.x;
    const size_t base = size_t(blockIdx.x) * kTile;

    for (unsigned int k = 0; k < kScanItems; ++k) {
        const unsigned int j = k * kScanThreads + tid;
        tile[padded(j)] = base + j < n ? in[base + j] : 0u;
    }
    __syncthreads();

    unsigned int run = 0;
    for (unsigned int k = 0; k < kScanItems; ++k) run += tile[padded(tid * kScanItems + k)];
    runs[0][tid] = run;
    unsigned int src = 0;
    for (unsigned int d = 1; d < kScanThreads; d *= 2) {
        __syncthreads();  // step d - 1 is written everywhere before step d reads it
        const unsigned int sum = runs[src][tid] + (tid >= d ? runs[src][tid - d] : 0u);
        runs[1 - src][tid] = sum;
        src = 1 - src;
    }
    __syncthreads();
    const unsigned int inclusive = runs[src][tid];

    unsigned int running = inclusive - run;  // everything before this thread's run
    for (unsigned int k = 0; k < kScanItems; ++k) {
        const unsigned int j = padded(tid * kScanItems + k);
        const unsigned int x = tile[j];
        tile[j] = running;
        running += x;
    }
    __syncthreads();
    for (unsigned int k = 0; k < kScanItems; ++k) {
        const unsigned int j = k * kScanThreads + tid;
        if (base + j < n) out[base + j] = tile[padded(j)];
    }
    if (tid == kScanThreads - 1 && tile_sums != nullptr) tile_sums[blockIdx.x] = inclusive;
}

// Phase 3: add tile t's offset (the scanned tile totals) to every element of tile t.
__global__ void __launch_bounds__(kScanThreads) add_tile_offsets(unsigned int* __restrict__ data,
                                                                 const unsigned int* __restrict__ tile_offsets,
                                                                 size_t n) {
    const size_t base = size_t(blockIdx.x) * kTile;
    const unsigned int offset = tile_offsets[blockIdx.x];
    for (unsigned int k = 0; k < kScanItems; ++k) {
        const size_t i = base + k * kScanThreads + threadIdx.x;
        if (i < n) data[i] += offset;
    }
}

// ---- host side: options ------------------------------------------------------

struct Options {
    size_t n = kDefaultN;
    uint64_t seed = 0;
    bool seed_given = false;
    bool quick = false;  // small sizes only, no --n row, nothing timed
};

static void printUsage(FILE* to) {
    std::fprintf(to,
                 "usage: 06_copy_if_partition[_hip] [--n N | --quick] [--seed S] [--help]\n"
                 "\n"
                 "  --n N      the last size of every table, and the size timed: 0..%zu (default %zu)\n"
                 "  --quick    small sizes only (up to 2^16 + 3; no tile^2 + 1), nothing timed:\n"
                 "             for compute-sanitizer\n"
                 "  --seed S   seed of the random sizes and values (default: drawn from the clock, printed)\n"
                 "  --help     this text\n"
                 "\n"
                 "exit status: 0 every gated check passed, 1 a gated check failed or a HIP call failed,\n"
                 "2 bad command line, 3 no usable GPU\n",
                 kMaxN, kDefaultN);
}

static Options parseOptions(int argc, char** argv) {
    Options opt;
    bool n_given = false;
    const Flag flags[] = {
        {"--n", true, [&](const std::string& v) {
             opt.n = size_t(numberFlag(v, 0, kMaxN, false, "--n wants a whole number from 0 to 2^28, not '%s'"));
             n_given = true;
         }},
        {"--quick", false, [&](const std::string&) { opt.quick = true; }},
        {"--seed", true, [&](const std::string& v) {
             opt.seed = numberFlag(v, 0, UINT64_MAX, false, "--seed wants a whole number, not '%s'");
             opt.seed_given = true;
         }},
    };
    parseFlags(argc, argv, flags);
    if (opt.quick && n_given) usageError("%s checks its own small sizes: it does not combine with --n", "--quick");
    if (opt.quick) opt.n = 0;
    return opt;
}

// ---- host side: printing -----------------------------------------------------

template <typename T>
static bool isPoison(const T& x) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &x, sizeof(T));
    for (unsigned char b : bytes) {
        if (b != kPoisonByte) return false;
    }
    return true;
}

static std::string show(int32_t x) { return isPoison(x) ? "never written" : std::to_string(x); }
static std::string show(float x) {
    if (isPoison(x)) return "never written";
    if (x > -1e15f && x < 1e15f && x == float(int64_t(x))) return std::to_string(int64_t(x));
    char text[48];
    std::snprintf(text, sizeof text, "%g", double(x));
    return text;
}
static std::string show(const Pair& x) {
    return isPoison(x) ? "never written" : "{" + std::to_string(x.key) + ", tag " + std::to_string(x.tag) + "}";
}

// ---- host side: copy_if and partition ------------------------------------------

static size_t tilesOf(size_t n, size_t per) { return (n + per - 1) / per; }

// Device memory, all allocated once, before anything runs or is timed, for the
// largest n and the largest element type. sums[l] holds the tile totals of
// recursion level l (and, scanned in place, their offsets).
struct Device {
    void* in = nullptr;
    void* out = nullptr;
    unsigned int* flags = nullptr;
    unsigned int* offsets = nullptr;
    unsigned int* count = nullptr;
    std::vector<unsigned int*> sums;
};

static Device allocate(size_t max_n) {
    Device d;
    const size_t count = std::max<size_t>(max_n, 1);
    HIP_CHECK(hipMalloc(&d.in, count * sizeof(Pair)));
    HIP_CHECK(hipMalloc(&d.out, count * sizeof(Pair)));
    HIP_CHECK(hipMalloc(&d.flags, count * sizeof(unsigned int)));
    HIP_CHECK(hipMalloc(&d.offsets, count * sizeof(unsigned int)));
    HIP_CHECK(hipMalloc(&d.count, sizeof(unsigned int)));
    for (size_t level = max_n; level > kTile; level = tilesOf(level, kTile)) {
        unsigned int* sums = nullptr;
        HIP_CHECK(hipMalloc(&sums, tilesOf(level, kTile) * sizeof(unsigned int)));
        d.sums.push_back(sums);
    }
    return d;
}

static void release(Device& d) {
    HIP_CHECK(hipFree(d.in));
    HIP_CHECK(hipFree(d.out));
    HIP_CHECK(hipFree(d.flags));
    HIP_CHECK(hipFree(d.offsets));
    HIP_CHECK(hipFree(d.count));
    for (unsigned int* p : d.sums) HIP_CHECK(hipFree(p));
}

// out = exclusive scan of in (n >= 1), and *total = the sum of in: the 3-phase scan.
// A single tile is scanned whole and its total is the grand total; otherwise the
// tile totals are scanned, recursively and in place, into the tiles' offsets.
static void exclusiveScan(const unsigned int* in, unsigned int* out, size_t n, unsigned int* total, const Device& d,
                          size_t level) {
    const size_t tiles = tilesOf(n, kTile);
    if (tiles == 1) {
        scan_tile<<<1, kScanThreads>>>(in, out, total, n);
        HIP_CHECK_LAUNCH();
        return;
    }
    unsigned int* sums = d.sums[level];
    scan_tile<<<unsigned(tiles), kScanThreads>>>(in, out, sums, n);
    HIP_CHECK_LAUNCH();
    exclusiveScan(sums, sums, tiles, total, d, level + 1);
    add_tile_offsets<<<unsigned(tiles), kScanThreads>>>(out, sums, n);
    HIP_CHECK_LAUNCH();
}

// mark, then the one scan; it leaves the kept count in d.count. n == 0 launches
// nothing and writes the count 0.
template <typename T, typename Pred>
static bool markAndScan(const T* in, size_t n, Pred pred, const Device& d) {
    if (n == 0) {
        HIP_CHECK(hipMemset(d.count, 0, sizeof(unsigned int)));
        return false;
    }
    mark<<<unsigned(tilesOf(n, kElementwiseThreads)), kElementwiseThreads>>>(in, d.flags, n, pred);
    HIP_CHECK_LAUNCH();
    exclusiveScan(d.flags, d.offsets, n, d.count, d, 0);
    return true;
}

// The two algorithms. Each only enqueues work (no allocation, no synchronisation,
// so each can be timed as it is) and leaves the kept count in device memory.
template <typename T, typename Pred>
static void copyIfGpu(const T* in, T* out, size_t n, Pred pred, const Device& d) {
    if (!markAndScan(in, n, pred, d)) return;
    scatter_kept<<<unsigned(tilesOf(n, kElementwiseThreads)), kElementwiseThreads>>>(in, d.flags, d.offsets, out, n);
    HIP_CHECK_LAUNCH();
}

template <typename T, typename Pred>
static void partitionGpu(const T* in, T* out, size_t n, Pred pred, const Device& d) {
    if (!markAndScan(in, n, pred, d)) return;
    partition_scatter<<<unsigned(tilesOf(n, kElementwiseThreads)), kElementwiseThreads>>>(in, d.flags, d.offsets, out, n);
    HIP_CHECK_LAUNCH();
}

static void poison(const Device& d, size_t bytes) {
    if (bytes > 0) HIP_CHECK(hipMemset(d.out, kPoisonByte, bytes));
    HIP_CHECK(hipMemset(d.count, kPoisonByte, sizeof(unsigned int)));
}

static unsigned int readCount(const Device& d) {
    unsigned int count = 0;
    HIP_CHECK(hipMemcpy(&count, d.count, sizeof count, hipMemcpyDeviceToHost));
    return count;
}

template <typename T>
static std::vector<T> readOut(const Device& d, size_t n) {
    std::vector<T> out(n);
    if (n > 0) HIP_CHECK(hipMemcpy(out.data(), d.out, n * sizeof(T), hipMemcpyDeviceToHost));
    return out;
}

// ---- host side: checking -----------------------------------------------------

static std::string countText(unsigned int count) {
    return count == 0xA5A5A5A5u ? "never written" : num(count);
}

// The first k in [0, want.size()) with got[from + k] != want[k], or want.size().
template <typename T>
static size_t firstDifference(const std::vector<T>& got, size_t from, const std::vector<T>& want) {
    for (size_t k = 0; k < want.size(); ++k) {
        if (got[from + k] != want[k]) return k;
    }
    return want.size();
}

template <typename T>
static std::string wrongSlot(const char* what, size_t at, const T& is, const T& should) {
    return std::string(what) + " out[" + num(at) + "] is " + show(is) + ", should be " + show(should);
}

struct Outcome {
    bool copy_if = true, count = true, front = true, back = true;
    bool back_in_input_order = false;  // the back holds the rejected ones in input order, not reversed
    std::string note;                  // the first problem in this row
    void fail(bool& check, const std::string& why) {
        check = false;
        if (note.empty()) note = why;
    }
};

template <typename T>
static void checkCopyIf(const std::vector<T>& kept, unsigned int count, const std::vector<T>& out, Outcome& o) {
    if (count != kept.size()) {
        o.fail(o.copy_if, "copy_if count is " + countText(count) + ", std::copy_if kept " + num(kept.size()));
    }
    const size_t bad = firstDifference(out, 0, kept);
    if (bad < kept.size()) o.fail(o.copy_if, wrongSlot("copy_if", bad, out[bad], kept[bad]));
    for (size_t i = kept.size(); i < out.size(); ++i) {
        if (!isPoison(out[i])) {
            o.fail(o.copy_if, "copy_if wrote out[" + num(i) + "] = " + show(out[i]) + ", past the " + num(kept.size()) +
                                  " kept elements");
            break;
        }
    }
}

template <typename T>
static void checkPartition(const std::vector<T>& kept, const std::vector<T>& rejected_reversed, unsigned int count,
                           const std::vector<T>& out, Outcome& o) {
    if (count != kept.size()) {
        o.fail(o.count, "partition count is " + countText(count) + ", std::copy_if kept " + num(kept.size()));
    }
    const size_t front_bad = firstDifference(out, 0, kept);
    if (front_bad < kept.size()) o.fail(o.front, wrongSlot("partition", front_bad, out[front_bad], kept[front_bad]));
    const size_t back_bad = firstDifference(out, kept.size(), rejected_reversed);
    if (back_bad < rejected_reversed.size()) {
        const std::vector<T> input_order(rejected_reversed.rbegin(), rejected_reversed.rend());
        o.back_in_input_order = firstDifference(out, kept.size(), input_order) == input_order.size();
        const size_t at = kept.size() + back_bad;
        o.fail(o.back, wrongSlot("partition", at, out[at], rejected_reversed[back_bad]) +
                           (o.back_in_input_order ? " (the back is in input order; documented: reversed)" : ""));
    }
}

// ---- host side: the runs -------------------------------------------------------

struct Size {
    size_t n;
    std::string why;
};

struct Tally {
    size_t checks = 0;                                             // gated checks run
    size_t example = 0, copy_if = 0, count = 0, front = 0, back = 0;  // failures of each kind
    size_t back_in_input_order = 0;
    std::vector<std::string> failures;  // "where: what", in the order found
};

struct Table {
    std::string title;
    std::vector<std::vector<std::string>> rows;
};

static const char* passFail(bool ok) { return ok ? "pass" : "FAIL"; }

static void record(Tally& tally, const std::string& where, const Outcome& o) {
    tally.checks += 4;
    tally.copy_if += !o.copy_if;
    tally.count += !o.count;
    tally.front += !o.front;
    tally.back += !o.back;
    tally.back_in_input_order += o.back_in_input_order;
    if (!o.note.empty()) tally.failures.push_back(where + ": " + o.note);
}

// One element type: for each size, one input, uploaded once and run through every
// predicate with both algorithms. tables[p] collects predicate p's rows.
template <typename T>
static void runType(const char* type_name, const std::vector<Size>& sizes, uint64_t seed, const Device& d,
                    std::vector<Table>& tables, Tally& tally) {
    forEachPredicate([&](int, auto pred) { tables.push_back(Table{std::string(type_name) + " | " + pred.label(), {}}); });
    const size_t first_table = tables.size() - kPredicates;
    for (const Size& size : sizes) {
        const size_t n = size.n;
        const std::vector<T> h_in = makeInput<T>(n, seed);
        if (n > 0) HIP_CHECK(hipMemcpy(d.in, h_in.data(), n * sizeof(T), hipMemcpyHostToDevice));
        const T* in = static_cast<const T*>(d.in);
        T* out = static_cast<T*>(d.out);

        forEachPredicate([&](int p, auto pred) {
            const std::vector<T> kept = cpuCopyIf(h_in, pred);
            const std::vector<T> rejected_reversed = cpuRejectedReversed(h_in, pred);
            Outcome o;

            poison(d, n * sizeof(T));
            copyIfGpu(in, out, n, pred, d);
            HIP_CHECK(hipDeviceSynchronize());
            checkCopyIf(kept, readCount(d), readOut<T>(d, n), o);

            poison(d, n * sizeof(T));
            partitionGpu(in, out, n, pred, d);
            HIP_CHECK(hipDeviceSynchronize());
            checkPartition(kept, rejected_reversed, readCount(d), readOut<T>(d, n), o);

            Table& table = tables[first_table + size_t(p)];
            record(tally, table.title + ", n = " + num(n), o);
            table.rows.push_back({num(n), size.why, num(kept.size()), passFail(o.copy_if), passFail(o.count),
                                  passFail(o.front), passFail(o.back), o.note});
        });
    }
}

template <typename T>
static std::string showAll(const std::vector<T>& values, size_t bar_at) {
    std::string text;
    for (size_t i = 0; i < values.size(); ++i) {
        if (i == bar_at) text += " |";
        text += (i ? " " : "") + show(values[i]);
    }
    return text;
}

// The documented order on a small input, shown and checked (one gated check).
static bool runExample(const Device& d, Tally& tally) {
    const std::vector<int32_t> h_in{3, -1, 4, -5, 9, -2, 6, -8};
    const size_t n = h_in.size();
    std::vector<int32_t> expected = cpuCopyIf(h_in, Positive{});
    const size_t kept = expected.size();
    const std::vector<int32_t> rejected_reversed = cpuRejectedReversed(h_in, Positive{});
    expected.insert(expected.end(), rejected_reversed.begin(), rejected_reversed.end());

    HIP_CHECK(hipMemcpy(d.in, h_in.data(), n * sizeof(int32_t), hipMemcpyHostToDevice));
    poison(d, n * sizeof(int32_t));
    partitionGpu(static_cast<const int32_t*>(d.in), static_cast<int32_t*>(d.out), n, Positive{}, d);
    HIP_CHECK(hipDeviceSynchronize());
    const unsigned int count = readCount(d);
    const std::vector<int32_t> out = readOut<int32_t>(d, n);
    const bool ok = out == expected && count == kept;

    std::printf("Partition's documented order, on a small input (int32, x > 0):\n");
    std::printf("  in         %s\n", showAll(h_in, n).c_str());
    std::printf("  expected   %s    kept in input order | rejected in REVERSED input order\n",
                showAll(expected, kept).c_str());
    std::printf("  GPU        %s    count %s: %s\n\n", showAll(out, kept).c_str(), countText(count).c_str(),
                ok ? "pass" : "FAIL");
    tally.checks += 1;
    if (!ok) {
        tally.example += 1;
        tally.failures.push_back("example (int32, x > 0, n = 8): partition gave " + showAll(out, kept) + ", expected " +
                                 showAll(expected, kept));
    }
    return ok;
}

// ---- host side: timing -------------------------------------------------------

// Counted: the input read once and the output written. Not counted: the scatter
// reads the input a second time, and the flags and offsets cost about 28 bytes per
// element: mark writes n flags (4n bytes), phases 1 and 3 of the scan each read and
// write n words (16n), the scatter reads flags and offsets (8n).
template <typename T>
static void timeOne(const char* type_name, size_t n, uint64_t seed, const std::vector<std::string>& checked_row,
                    const Device& d,
                    std::vector<std::vector<std::string>>& rows) {
    const std::vector<T> h_in = makeInput<T>(n, seed);
    const size_t kept = cpuCopyIf(h_in, Positive{}).size();
    HIP_CHECK(hipMemcpy(d.in, h_in.data(), n * sizeof(T), hipMemcpyHostToDevice));
    const T* in = static_cast<const T*>(d.in);
    T* out = static_cast<T*>(d.out);
    const double bytes = double(n) * sizeof(T);

    const float copy_ms = medianMs(kWarmups, kReps, [&] { HIP_CHECK(hipMemcpyAsync(d.out, d.in, n * sizeof(T), hipMemcpyDeviceToDevice)); });
    const float copy_if_ms = medianMs(kWarmups, kReps, [&] { copyIfGpu(in, out, n, Positive{}, d); });
    const float partition_ms = medianMs(kWarmups, kReps, [&] { partitionGpu(in, out, n, Positive{}, d); });
    HIP_CHECK(hipDeviceSynchronize());

    const double copy_gbs = gbPerSecond(2.0 * bytes, copy_ms);
    const double copy_if_bytes = double(n + kept) * sizeof(T);
    // The verdicts of this size's row in the x > 0 table: copy_if, then partition's count, front and back.
    const bool copy_if_ok = checked_row[3] == "pass";
    const bool partition_ok = checked_row[4] == "pass" && checked_row[5] == "pass" && checked_row[6] == "pass";
    rows.push_back({type_name, "copy ceiling (D2D memcpy)", "-", fmt("%.4f", copy_ms), fmt("%.0f", 2.0 * bytes),
                    fmt("%.1f", copy_gbs), "1.00"});
    rows.push_back({type_name, "copy_if, x > 0", passFail(copy_if_ok), fmt("%.4f", copy_if_ms), fmt("%.0f", copy_if_bytes),
                    fmt("%.1f", gbPerSecond(copy_if_bytes, copy_if_ms)),
                    fmt("%.2f", gbPerSecond(copy_if_bytes, copy_if_ms) / copy_gbs)});
    rows.push_back({type_name, "partition, x > 0", passFail(partition_ok), fmt("%.4f", partition_ms), fmt("%.0f", 2.0 * bytes),
                    fmt("%.1f", gbPerSecond(2.0 * bytes, partition_ms)),
                    fmt("%.2f", gbPerSecond(2.0 * bytes, partition_ms) / copy_gbs)});
}

// ---- main --------------------------------------------------------------------

int main(int argc, char** argv) {
    Options opt = parseOptions(argc, argv);
    if (!opt.seed_given) opt.seed = clockSeed();  // short enough to retype

    const hipDeviceProp_t prop = openDevice(reinterpret_cast<const void*>(&scan_tile));
    // Besides naming HIP where 06_copy_if_partition.cu names CUDA, this line is all that differs.
    std::printf("GPU: %s (%s), wavefront size %d, %d compute units, L2 cache %d MiB\n", prop.name, prop.gcnArchName,
                prop.warpSize, prop.multiProcessorCount, prop.l2CacheSize >> 20);

    // Every size says why it is there; sorted, so each table reads top to bottom. --quick
    // (compute-sanitizer) keeps the small reasons, many tiles at 2^16 + 3, and no --n row.
    uint64_t size_state = opt.seed ^ 0x51CE51CE51CE51CEull;
    const int reach = opt.quick ? 16 : 20;
    const size_t ragged = (size_t(1) << reach) + 3;
    std::vector<Size> sizes{
        {0, "empty: nothing launched, count 0"},
        {1, "one element"},
        {kTile - 1, "tile - 1: one partial tile"},
        {kTile, "tile: one full tile, no recursion"},
        {kTile + 1, "tile + 1: a carry into a one-element tile"},
        {ragged, "2^" + num(reach) + " + 3: " + num((ragged + kTile - 1) / kTile) + " tiles, the last one ragged"},
        {2 + splitmix64(size_state) % (4 * kTile - 2), "random, under 4 tiles"},
        {4 * kTile + splitmix64(size_state) % ((size_t(1) << 18) - 4 * kTile), "random, 4 tiles .. 2^18"},
    };
    const size_t beyond = (size_t(1) << 18) + splitmix64(size_state) % ((size_t(1) << 22) - (size_t(1) << 18));
    if (!opt.quick) {
        sizes.push_back({kTile * kTile + 1, "tile^2 + 1: 2049 tiles, the scan recurses twice"});
        sizes.push_back({beyond, "random, 2^18 .. 2^22"});
    }
    std::stable_sort(sizes.begin(), sizes.end(), [](const Size& a, const Size& b) { return a.n < b.n; });
    if (!opt.quick) sizes.push_back({opt.n, "--n: checked here, then timed"});
    size_t max_n = 0;
    for (const Size& s : sizes) max_n = std::max(max_n, s.n);

    std::printf("Input: keys are integers -99..99 from seed %" PRIu64 " (key i depends on the seed and i alone); "
                "int32 and float hold the key, pair = {key, tag = input index}\n", opt.seed);
    std::printf("Scan of the flags: %u threads x %u items = %zu-element tiles, 3-phase, phase 2 recursing; "
                "\"tile\" below means %zu\n", kScanThreads, kScanItems, kTile, kTile);
    std::printf("Partition's order: the kept elements first, in input order; then the rejected ones in REVERSED input "
                "order (out[n-1] is the first rejected element, out[kept] the last)\n");
    std::printf("Poison: before every run each output slot and the count hold 0xA5 bytes (int32 -1515870811, float "
                "-2.9e-16: never an input value)\n\n");

    Device d = allocate(max_n);
    Tally tally;
    runExample(d, tally);

    std::vector<Table> tables;
    runType<int32_t>("int32", sizes, opt.seed, d, tables, tally);
    runType<float>("float", sizes, opt.seed, d, tables, tally);
    runType<Pair>("pair", sizes, opt.seed, d, tables, tally);
    for (const Table& table : tables) {
        std::printf("%s\n", table.title.c_str());
        printTable({"n", "why this size", "kept", "copy_if", "partition count", "front", "back (reversed)",
                    "first problem"},
                   table.rows);
    }

    // The timed size is the last row of every table: its checks came first.
    if (opt.n > 0) {
        std::vector<std::vector<std::string>> time_rows;
        timeOne<int32_t>("int32", opt.n, opt.seed, tables[0 * kPredicates].rows.back(), d, time_rows);
        timeOne<float>("float", opt.n, opt.seed, tables[1 * kPredicates].rows.back(), d, time_rows);
        timeOne<Pair>("pair", opt.n, opt.seed, tables[2 * kPredicates].rows.back(), d, time_rows);
        std::printf("Timing at n = %zu: median of %d after %d warm-up runs, device events; GB/s counts the input read "
                    "once and the output written (not the second read of the input, nor the flags and offsets, about "
                    "28 B per element)\n",
                    opt.n, kReps, kWarmups);
        printTable({"type", "what", "checked", "time (ms)", "counted bytes", "GB/s", "of copy"}, time_rows);
    } else {
        std::printf("not timed (--n 0): no copy ceiling, no GB/s\n\n");
    }
    release(d);

    const size_t failed = tally.example + tally.copy_if + tally.count + tally.front + tally.back;
    if (failed == 0) {
        std::printf("all %zu gated checks passed: copy_if matches std::copy_if, and partition puts the kept elements "
                    "first in input order and the rejected ones after them in reversed input order, for every type, "
                    "predicate and size\n", tally.checks);
        return kExitPass;
    }
    std::printf("gated mismatches, the first %zu of %zu:\n", std::min<size_t>(10, tally.failures.size()),
                tally.failures.size());
    for (size_t i = 0; i < tally.failures.size() && i < 10; ++i) std::printf("  %s\n", tally.failures[i].c_str());
    std::printf("\nfailed checks: example %zu, copy_if %zu, partition count %zu, partition front %zu, partition back %zu\n",
                tally.example, tally.copy_if, tally.count, tally.front, tally.back);
    if (tally.back_in_input_order > 0) {
        std::printf("in %zu rows partition's back part holds the rejected elements in INPUT order; the documented "
                    "order is REVERSED input order, filled from out[n-1] downwards: see partition_scatter, between "
                    "the TODO markers\n", tally.back_in_input_order);
    }
    std::printf("FAILED: %zu of %zu gated checks; first: %s; look at partition_scatter (the TODO region) first\n",
                failed, tally.checks, tally.failures.front().c_str());
    return kExitFail;
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
